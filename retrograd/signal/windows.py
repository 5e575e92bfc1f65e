# ruff: noqa: N803 - torch names the window length M (callable as M=)
"""torch.signal.windows: the window functions, built as torch builds them from public ops (a linspace of sample
positions through exp, sin, cos or i0), so `requires_grad=True` records the same graph. `sym=False` gives the
periodic window (the symmetric window of M + 1 points less its last). Only float32 and float64 are accepted."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import retrograd
from retrograd import Tensor

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming", "hamming",
           "hann", "kaiser", "nuttall"]


def _checked(name: str, M: int, dtype: Any, layout: Any) -> Any:
    """The window's dtype (the default one unless given), after torch's checks of M, dtype and layout."""
    dtype = dtype or retrograd.get_default_dtype()
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not retrograd.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (retrograd.float32, retrograd.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _trivial(M: int, dtype: Any, device: Any, requires_grad: bool) -> Tensor | None:
    """The window of 0 or 1 points (empty, or [1.]); None for a longer one."""
    if M > 1:
        return None
    return retrograd.ones(M, dtype=dtype, device=device, requires_grad=requires_grad)


def _positions(M: int, start: float | Tensor, step: float | Tensor, **factory: Any) -> Tensor:
    """M sample positions start, start + step, ... (torch's linspace, so the graph starts where torch's does)."""
    return retrograd.linspace(start, start + (M - 1) * step, M, **factory)


def _period(M: int, sym: bool) -> int:
    """The length the window's formula divides by: M - 1 for a symmetric window, M for a periodic one."""
    return M - 1 if sym else M


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True, dtype: Any = None,
                layout: Any = retrograd.strided, device: Any = None, requires_grad: bool = False) -> Tensor:
    """exp(-abs(n - center) / tau), the Poisson window; center defaults to the window's middle."""
    dtype = _checked("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return retrograd.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = _positions(M, -center / tau, 1 / tau, dtype=dtype, device=device, requires_grad=requires_grad)
    return retrograd.exp(-retrograd.abs(k))


def cosine(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = retrograd.strided, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """sin(pi (n + 0.5) / M), the sine window (SciPy's definition)."""
    dtype = _checked("cosine", M, dtype, layout)
    if M == 0:
        return retrograd.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    return retrograd.sin(_positions(M, 0.5 * step, step, dtype=dtype, device=device, requires_grad=requires_grad))


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype: Any = None, layout: Any = retrograd.strided,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """exp(-(n / (2 std))^2) about the window's middle."""
    dtype = _checked("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return retrograd.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    step = 1 / (std * math.sqrt(2))
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    k = _positions(M, start * step, step, dtype=dtype, device=device, requires_grad=requires_grad)
    return retrograd.exp(-(k ** 2))


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype: Any = None, layout: Any = retrograd.strided,
           device: Any = None, requires_grad: bool = False) -> Tensor:
    """I0(beta sqrt(1 - (2n / N - 1)^2)) / I0(beta), N the window's period."""
    dtype = _checked("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    beta = retrograd.tensor(beta, dtype=dtype, device=device)  # in the window's dtype: no NaN at the ends
    step = 2.0 * beta / _period(M, sym)
    end = retrograd.minimum(beta, -beta + (M - 1) * step)
    k = retrograd.linspace(-beta, end, M, dtype=dtype, device=device, requires_grad=requires_grad)
    return retrograd.i0(retrograd.sqrt(beta * beta - retrograd.pow(k, 2))) / retrograd.i0(beta)


def bartlett(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = retrograd.strided, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """1 - abs(2n / N - 1), the triangular window."""
    dtype = _checked("bartlett", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    k = _positions(M, -1, 2 / _period(M, sym), dtype=dtype, device=device, requires_grad=requires_grad)
    return 1 - retrograd.abs(k)


def general_cosine(M: int, *, a: Iterable, sym: bool = True, dtype: Any = None, layout: Any = retrograd.strided,
                   device: Any = None, requires_grad: bool = False) -> Tensor:
    """sum_i (-1)^i a_i cos(2 pi i n / N): the family of Hann, Hamming, Blackman and Nuttall."""
    dtype = _checked("general_cosine", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    k = _positions(M, 0, 2 * math.pi / _period(M, sym), dtype=dtype, device=device, requires_grad=requires_grad)
    a_i = retrograd.tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=dtype, device=device,
                           requires_grad=requires_grad)
    i = retrograd.arange(a_i.shape[0], dtype=dtype, device=device, requires_grad=requires_grad)
    return (a_i.unsqueeze(-1) * retrograd.cos(i.unsqueeze(-1) * k)).sum(0)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, dtype: Any = None,
                    layout: Any = retrograd.strided, device: Any = None, requires_grad: bool = False) -> Tensor:
    """alpha - (1 - alpha) cos(2 pi n / N)."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = retrograd.strided, device: Any = None,
            requires_grad: bool = False) -> Tensor:
    """The general Hamming window with alpha = 0.54."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = retrograd.strided, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """The general Hamming window with alpha = 0.5 (sin^2 of the position)."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = retrograd.strided, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)."""
    dtype = _checked("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = retrograd.strided, device: Any = None,
            requires_grad: bool = False) -> Tensor:
    """The minimum 4-term Blackman-Harris window of Nuttall (1981)."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)
