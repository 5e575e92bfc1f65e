"""torch's warn-once policy: some warnings appear once per process, or every time after
`set_warn_always(True)` (torch's TORCH_WARN_ONCE)."""

from __future__ import annotations

import os
import sys
import warnings

_policy = {"always": False}
_warned: set[str] = set()


def set_warn_always(b: bool, /) -> None:
    """True: warnings that torch gives once per process are given every time."""
    _policy["always"] = bool(b)


def is_warn_always_enabled() -> bool:
    return _policy["always"]


def warn_once(message: str, category: type[Warning] = UserWarning, stacklevel: int = 2) -> None:
    """warnings.warn the first time this message comes in this process, or every time under warn-always;
    `stacklevel` counts from the caller, as warnings.warn's does."""
    if _policy["always"] or message not in _warned:
        _warned.add(message)
        warnings.warn(message, category, stacklevel=stacklevel + 1)


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_once_at_user(message: str, category: type[Warning] = UserWarning) -> None:
    """warn_once, attributed to the innermost frame outside retrograd, where torch's C++ warnings point (the
    Python line that called into torch), however deep inside retrograd the warning is raised."""
    frame, stacklevel = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, stacklevel = frame.f_back, stacklevel + 1
    warn_once(message, category, stacklevel=stacklevel)
