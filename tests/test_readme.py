"""The README's op list is generated from the table and must be current."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_readme_op_list_is_generated_from_the_table() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "tools/ops_table.py", "--check"], cwd=ROOT, env=env)
    assert result.returncode == 0, "README.md's op list is stale: run `python tools/ops_table.py`"
