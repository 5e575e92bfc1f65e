"""torch.version: the torch API level retrograd follows, in torch's version format, and retrograd's own.

Scripts compare `torch.__version__` with torch releases (`>= "2.0"`, `< (1, 13)`); retrograd answers
with the release whose behaviour it reproduces, and names itself in the local part of the version.
"""

from __future__ import annotations

import re
from typing import Any

retrograd = "0.1.0"
cuda = None
hip = None
debug = False


class TorchVersion(str):
    """A version string that compares with strings, tuples and versions by release numbers, as torch's does."""

    @staticmethod
    def _release(version: Any) -> tuple[int, ...]:
        if isinstance(version, tuple):
            return tuple(int(part) for part in version)
        match = re.match(r"\s*v?(\d+(?:\.\d+)*)", str(version))
        if match is None:
            raise ValueError(f"cannot compare a version with {version!r}")
        return tuple(int(part) for part in match.group(1).split("."))

    def _compare(self, other: Any) -> int:
        mine, theirs = self._release(self), self._release(other)
        width = max(len(mine), len(theirs))
        mine, theirs = mine + (0,) * (width - len(mine)), theirs + (0,) * (width - len(theirs))
        return (mine > theirs) - (mine < theirs)

    def __lt__(self, other: Any) -> bool:
        return self._compare(other) < 0

    def __le__(self, other: Any) -> bool:
        return self._compare(other) <= 0

    def __gt__(self, other: Any) -> bool:
        return self._compare(other) > 0

    def __ge__(self, other: Any) -> bool:
        return self._compare(other) >= 0

    def __eq__(self, other: Any) -> bool:
        return str.__eq__(self, other) if isinstance(other, str) and "+" in other else self._compare(other) == 0

    __hash__ = str.__hash__


__version__ = TorchVersion(f"2.13.0+retrograd.{retrograd}")
