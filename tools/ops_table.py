"""Regenerate the README's list of supported ops from the op table itself.

    python tools/ops_table.py          # rewrite the block between the markers in README.md
    python tools/ops_table.py --check  # exit 1 if README.md is out of date (the tests run this)
"""

from __future__ import annotations

import sys
from pathlib import Path

import retrograd
from retrograd import ops

BEGIN, END = "<!-- ops:begin -->", "<!-- ops:end -->"
README = Path(__file__).resolve().parent.parent / "README.md"
TITLES = {"pointwise": "Pointwise", "activation": "Activations", "complex": "Complex", "reduction": "Reductions",
          "selection": "Selection and sorting", "shape": "Shape and views", "indexing": "Indexing",
          "linalg": "Linear algebra", "nn": "Neural-network kernels and losses",
          "nn_extra": "Less common network kernels and losses", "conv": "Convolution and pooling",
          "random": "Random sampling", "fft": "Fourier transforms", "special": "Special functions",
          "numeric": "Integers and float representation", "statistics": "Statistics and histograms"}
SUBMODULES = ("LINALG", "FFT", "SPECIAL")  # each family's lists of names in torch.linalg, torch.fft, torch.special


def block() -> str:
    """One line per family: the public names it defines (retrograd.X, nn.functional.X, linalg.X)."""
    lines = [BEGIN, "", f"{len(ops.OPS)} rows in the rule table; public names by family "
             "(`F.` = `retrograd.nn.functional`, `linalg.` = `retrograd.linalg`, `fft.` = `retrograd.fft`, "
             "`special.` = `retrograd.special`):", ""]
    for module in ops._modules:
        family = module.__name__.rsplit(".", 1)[-1]
        names = sorted(set(getattr(module, "__all__", ())))
        names += [f"F.{n}" for n in sorted(set(getattr(module, "FUNCTIONAL", ()))) if n not in names]
        for submodule in SUBMODULES:
            names += [f"{submodule.lower()}.{n}" for n in sorted(set(getattr(module, submodule, ())))]
        if names:
            lines.append(f"- **{TITLES.get(family, family)}**: " + ", ".join(f"`{n}`" for n in names))
    lines += ["", END]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    text = README.read_text()
    start, stop = text.index(BEGIN), text.index(END) + len(END)
    new = text[:start] + block() + text[stop:]
    if "--check" in argv:
        return 0 if new == text else 1
    README.write_text(new)
    return 0


if __name__ == "__main__":
    assert retrograd  # the package import registers every row
    sys.exit(main(sys.argv[1:]))
