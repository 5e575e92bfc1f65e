"""`python -m retrograd demo`: the project's main job."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "demo":
        print("usage: python -m retrograd demo")
        return 2
    example = Path(__file__).resolve().parent.parent / "examples" / "one_layer_net.py"
    runpy.run_path(str(example), run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
