"""torch's warn-once policy: some warnings appear once per process, or every time after
`set_warn_always(True)` (torch's TORCH_WARN_ONCE)."""

from __future__ import annotations

import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep

_policy = {"always": False}
_warned: set[str] = set()


def set_warn_always(b: bool, /) -> None:
    """True: warnings that torch gives once per process are given every time."""
    _policy["always"] = bool(b)


def is_warn_always_enabled() -> bool:
    return _policy["always"]


def warn_once(message: str, category: type[Warning] = UserWarning, stacklevel: int = 2, key: str | None = None) -> None:
    """warnings.warn the first time this message (or this `key`: one TORCH_WARN_ONCE whose words vary) comes in this
    process, or every time under warn-always; `stacklevel` counts from the caller, as warnings.warn's does. A warning
    given under warn-always does not count as the once: TORCH_WARN_ONCE's static flag is set only on its own branch,
    so it warns again once after."""
    if _policy["always"]:
        warnings.warn(message, category, stacklevel=stacklevel + 1)
    elif (key or message) not in _warned:
        _warned.add(key or message)
        warnings.warn(message, category, stacklevel=stacklevel + 1)


def user_stacklevel() -> int:
    """The `stacklevel` for a warnings.warn in the calling function that names the first frame outside retrograd,
    the user's line where torch's warnings point, however many of retrograd's wrappers lie between (a fixed count
    that named a wrapper's line also made the default filter show one warning for all its callers)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def warn_once_at_user(message: str, category: type[Warning] = UserWarning, key: str | None = None) -> None:
    """warn_once, attributed to the innermost frame outside retrograd, where torch's C++ warnings point (the
    Python line that called into torch), however deep inside retrograd the warning is raised."""
    warn_once(message, category, stacklevel=user_stacklevel(), key=key)
