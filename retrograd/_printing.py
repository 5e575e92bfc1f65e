"""Tensor printing that matches PyTorch's ``repr(tensor)`` text.

This module holds the global print options (``set_printoptions`` and
``get_printoptions``) and ``format_tensor``, which renders a NumPy array the
way torch renders a CPU tensor: element formatting (integer mode, scientific
mode, precision), summarization of large arrays with ``...``, line wrapping,
nested-bracket indentation and the trailing ``size=`` / ``dtype=`` / autograd
suffixes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

_PREFIX = "tensor("


@dataclasses.dataclass
class _PrintOptions:
    """Current print options; the defaults are torch's."""

    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


_OPTS = _PrintOptions()

_PROFILES: dict[str, dict[str, Any]] = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Set the print options, with the semantics of ``torch.set_printoptions``.

    A ``profile`` ('default', 'short' or 'full'; other names are ignored, as
    in torch) is applied first and the explicit arguments override it.
    ``sci_mode`` is always assigned, so leaving it out restores the automatic
    choice of scientific notation.
    """
    if profile is not None:
        for name, value in _PROFILES.get(profile, {}).items():
            setattr(_OPTS, name, value)
    explicit = {
        "precision": precision,
        "threshold": threshold,
        "edgeitems": edgeitems,
        "linewidth": linewidth,
    }
    for name, value in explicit.items():
        if value is not None:
            setattr(_OPTS, name, value)
    _OPTS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """Return the print options as keyword arguments for ``set_printoptions``."""
    return dataclasses.asdict(_OPTS)


class _Formatter:
    """Fixed-width formatter for the elements of one real or integral array.

    The layout (integer mode, scientific mode, column width) is decided from
    the values that will be displayed, as torch does.
    """

    def __init__(self, values: np.ndarray) -> None:
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        if not self.floating:
            for value in np.unique(values).tolist():
                self.width = max(self.width, len(str(value)))
            return
        shown = values[np.isfinite(values) & (values != 0)]
        if shown.size == 0:
            return
        self.int_mode = bool(np.all(shown == np.ceil(shown)))
        magnitudes = np.abs(shown)
        low = float(magnitudes.min())
        high = float(magnitudes.max())
        if _OPTS.sci_mode is None:
            self.sci_mode = high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4
        else:
            self.sci_mode = _OPTS.sci_mode
        for value in np.unique(shown).tolist():
            if self.sci_mode:
                length = len(f"{value:.{_OPTS.precision}e}")
            elif self.int_mode:
                length = len(f"{value:.0f}") + 1  # room for the trailing "."
            else:
                length = len(f"{value:.{_OPTS.precision}f}")
            self.width = max(self.width, length)

    def format(self, value: float) -> str:
        """Format one element, right-aligned to the common width."""
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:.{_OPTS.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            if math.isfinite(value):
                text += "."
        else:
            text = f"{value:.{_OPTS.precision}f}"
        return text.rjust(self.width)


_Formatters = tuple[_Formatter, _Formatter | None]


def _element(value: Any, formatters: _Formatters) -> str:
    """Format one element; complex values use a real and an imaginary formatter."""
    real_fmt, imag_fmt = formatters
    if imag_fmt is None:
        return real_fmt.format(value)
    imag = (imag_fmt.format(value.imag) + "j").lstrip()
    sign = "" if imag[0] in "+-" else "+"
    return real_fmt.format(value.real) + sign + imag


def _vector(a: np.ndarray, indent: int, summarize: bool, formatters: _Formatters) -> str:
    """Render a 1-d array, wrapping rows at the line width."""
    real_fmt, imag_fmt = formatters
    element_length = real_fmt.width + 2
    if imag_fmt is not None:
        element_length += imag_fmt.width + 1
    per_line = max(1, math.floor((_OPTS.linewidth - indent) / element_length))
    edge = _OPTS.edgeitems
    if summarize and not edge:
        items = ["..."]
    elif summarize and a.shape[0] > 2 * edge:
        items = [_element(v, formatters) for v in a[:edge].tolist()]
        items.append(" ...")
        items += [_element(v, formatters) for v in a[-edge:].tolist()]
    else:
        items = [_element(v, formatters) for v in a.tolist()]
    lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(a: np.ndarray, indent: int, summarize: bool, formatters: _Formatters) -> str:
    """Render an array of any rank as nested brackets."""
    if a.ndim == 0:
        return _element(a.item(), formatters)
    if a.ndim == 1:
        return _vector(a, indent, summarize, formatters)
    edge = _OPTS.edgeitems
    count = a.shape[0]
    if summarize and count > 2 * edge:
        parts = [_nested(a[i], indent + 1, summarize, formatters) for i in range(edge)]
        parts.append("...")
        parts += [_nested(a[i], indent + 1, summarize, formatters) for i in range(count - edge, count)]
    else:
        parts = [_nested(a[i], indent + 1, summarize, formatters) for i in range(count)]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _displayed(a: np.ndarray) -> np.ndarray:
    """Flat array of the elements a summarized print shows (torch's selection)."""
    edge = _OPTS.edgeitems
    if a.ndim == 0:
        return a.reshape(-1)
    if a.ndim == 1:
        # With edge == 0, a[-0:] is the whole vector, just as in torch.
        return np.concatenate((a[:edge], a[-edge:])) if a.shape[0] > 2 * edge else a
    if not edge:
        return a.reshape(-1)[:0]
    count = a.shape[0]
    rows = [*range(edge), *range(count - edge, count)] if count > 2 * edge else range(count)
    return np.concatenate([_displayed(a[i]) for i in rows])


def _body(a: np.ndarray, indent: int) -> str:
    """Render the bracketed contents of a non-empty array."""
    summarize = a.size > _OPTS.threshold
    shown = _displayed(a) if summarize else a.reshape(-1)
    formatters: _Formatters
    if a.dtype.kind == "c":
        formatters = (_Formatter(shown.real), _Formatter(shown.imag))
    else:
        formatters = (_Formatter(shown), None)
    return _nested(a, indent, summarize, formatters)


def _with_suffixes(text: str, suffixes: Sequence[str], indent: int) -> str:
    """Append ``, suffix`` items and the closing parenthesis, wrapping as torch does."""
    parts = [text]
    # torch measures the current line as its length plus two, so the first
    # suffix wraps slightly earlier than the later ones.
    line_length = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if line_length + len(suffix) + 2 > _OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            line_length = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            line_length += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def format_tensor(data: np.ndarray, *, dtype_name: str | None, extras: Sequence[str] = (), device: str | None = None
                  ) -> str:
    """Return torch's repr text for a tensor holding ``data``.

    ``dtype_name`` (e.g. ``"float64"``), when given, adds ``dtype=torch.<name>``;
    the caller decides when torch shows it. ``extras`` (e.g.
    ``"requires_grad=True"`` or ``"grad_fn=<AddBackward0>"``) follow in order; ``device`` (``"cuda:0"``), for
    a tensor off the CPU, comes first, as in torch. ``data`` is a NumPy array (a host copy for other devices).
    Example: ``'tensor([[3., 3.],\\n        [3., 3.]], grad_fn=<AddBackward0>)'``.
    """
    a = np.asarray(data)
    if a.dtype.kind == "V":  # bfloat16 (ml_dtypes' kind): printed as the float32 it widens to exactly
        a = a.astype(np.float32)
    indent = len(_PREFIX)
    suffixes = [] if device is None else [f"device='{device}'"]
    if a.size == 0:
        body = "[]"
        if a.ndim != 1:
            suffixes.append(f"size={tuple(a.shape)}")
    else:
        body = _body(a, indent)
        if not _OPTS.edgeitems:
            suffixes.append(f"size={tuple(a.shape)}")
    if dtype_name is not None:
        suffixes.append(f"dtype=torch.{dtype_name}")
    suffixes.extend(extras)
    return _with_suffixes(_PREFIX + body, suffixes, indent)


def format_without_data(shape: Sequence[int], *, dtype_name: str | None, extras: Sequence[str] = (),
                        device: str) -> str:
    """torch's repr text for a tensor with no elements to print (a meta tensor): `tensor(..., device='meta',
    size=(2, 3))`, then the dtype when not the default float's (the caller decides) and ``extras``."""
    suffixes = [f"device='{device}'", f"size={tuple(shape)}"]
    if dtype_name is not None:
        suffixes.append(f"dtype=torch.{dtype_name}")
    return _with_suffixes(_PREFIX + "...", [*suffixes, *extras], len(_PREFIX))
