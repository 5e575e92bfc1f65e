"""OpInfo's samples in the dtypes an entry does not list for the CPU (bool, int32, int64, float16, bfloat16,
complex64): torch refuses most of them by its kernel's name, some it computes through a composite. retrograd must
raise the same error or compute the same tensors, on each of the first samples, with the input alone and then every
argument made that dtype. Entries that still differ are listed in unsupported_dtypes_status.txt, strict both ways;
`python tests/test_unsupported_dtypes.py` rewrites it from a fresh sweep and prints the counts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from dtype_sweep import first_mismatch
from test_op_db import ENTRIES, sweep_dtype

STATUS_FILE = Path(__file__).with_name("unsupported_dtypes_status.txt")
DTYPES = (torch.bool, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.complex64)


def unsupported(name: str) -> list[torch.dtype]:
    """The dtypes of DTYPES that entry `name` does not list for the CPU."""
    supported = ENTRIES[name].supported_dtypes("cpu")
    return [d for d in DTYPES if d not in supported]


def mismatch(name: str) -> str | None:
    """The first disagreement of entry `name` over its unsupported dtypes, or None."""
    base = sweep_dtype(ENTRIES[name])
    for dtype in unsupported(name):
        found = first_mismatch(name, base, lambda t, d=dtype: t.to(d) if t.dtype == base else t, f"{dtype} ")
        if found:
            return found
    return None


def read_status() -> set[str]:
    return {line.split()[0] for line in STATUS_FILE.read_text().splitlines() if line.strip() and line[0] != "#"}


SWEPT = sorted(name for name in ENTRIES if unsupported(name))
STATUS = read_status()


def test_status_file_names_only_swept_entries():
    assert not STATUS - set(SWEPT)


@pytest.mark.parametrize("name", SWEPT)
def test_unsupported_dtypes_raise_or_compute_as_torch(name):
    found = mismatch(name)
    if name in STATUS:
        assert found is not None, f"{name} now matches torch: take it out of {STATUS_FILE.name}"
        pytest.xfail(f"listed in {STATUS_FILE.name}")
    assert found is None, found


def main() -> None:
    """Sweep every entry and rewrite the status file with the ones that differ and their first difference."""
    lines = []
    for name in SWEPT:
        found = mismatch(name)
        if found:
            kind = "computes" if "retrograd computes" in found else "raises"
            lines.append(f"{name:<48} {kind:<9} {found[:200]}")
    header = ("# OpInfo entries whose samples in dtypes they do not support differ from torch, one a line (written by "
              "`python tests/test_unsupported_dtypes.py`):\n#   entry   computes (retrograd computes where torch "
              "raises) | raises (another error, or torch computes)   the first difference\n")
    STATUS_FILE.write_text(header + "\n".join(lines) + "\n")
    print(f"{len(SWEPT)} entries swept, {len(SWEPT) - len(lines)} as torch, {len(lines)} differ "
          f"({sum(' computes ' in line for line in lines)} compute where torch raises)")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    main()
