"""Rule table: discrete Fourier transforms (torch.fft), forward by NumPy's numpy.fft.

Three rows do all the work, as in ATen: `fft_c2c` (complex to complex), `fft_r2c` (real to
complex, the full spectrum or its one-sided half) and `fft_c2r` (one-sided Hermitian half to
real), each over a list of dims with a normalization code (0: none, 1: 1/sqrt(n), 2: 1/n) and,
for c2c, a direction. The public functions of torch.fft are ATen's compositions of these rows
with the same graph: a resize of the input (SliceBackward0, ConstantPadNdBackward0), a cast
(ToCopyBackward0), a conjugate (ConjBackward0) where torch's wrapper makes one.

Each transform is linear, so its VJP is its adjoint: the same normalization in the other
direction (Note [FFT adjoints]); JVPs are the transform of the tangent.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import _dtype as D
from .._creation import ones, tensor
from .._tensor import Tensor, _wrap_dim
from .._warn import warn_once_at_user
from . import arrays as A
from .complex import conj, conj_physical, real, view_as_real
from .conv import pad
from .registry import accepting_out, apply, defop
from .shape import unfold_backward

# numpy.fft's `norm` for each normalization code, by direction (NumPy names the side that is scaled)
_NUMPY_NORM_FORWARD = {0: "backward", 1: "ortho", 2: "forward"}
_NUMPY_NORM_INVERSE = {0: "forward", 1: "ortho", 2: "backward"}

# Note [FFT adjoints]
# Torch's complex gradient is the conjugate Wirtinger one (complex.py), so the VJP of a linear map A
# is A^H grad. The DFT's adjoint is the DFT in the other direction, unscaled the same way: c2c's VJP
# is c2c(grad, dim, normalization, not forward). r2c reads a real input: its adjoint is the real part
# of the inverse c2c, after zero-filling the half a one-sided transform dropped. c2r reads only the
# one-sided half of a Hermitian spectrum, each bin except the first (and, for even n, the last)
# standing for itself and its mirror: its adjoint is a one-sided r2c of grad with those bins doubled.


@defop("fft_c2c", node="FftC2CBackward0", params=("dim", "normalization", "forward"),
       self="fft_c2c_op(grad, dim, normalization, not forward)",
       jvp="fft_c2c_op(self_t, dim, normalization, forward)")
def fft_c2c_op(xp, x, dim, normalization, forward):
    if not dim:
        return A.copy(xp, x)
    if forward:
        return xp.fft.fftn(x, axes=dim, norm=_NUMPY_NORM_FORWARD[normalization])
    return xp.fft.ifftn(x, axes=dim, norm=_NUMPY_NORM_INVERSE[normalization])


@defop("fft_r2c", node="FftR2CBackward0", params=("dim", "normalization", "onesided"),
       self="fft_r2c_backward(grad, dim, normalization, onesided, self_shape[dim[-1]])",
       jvp="fft_r2c_op(self_t, dim, normalization, onesided)")
def fft_r2c_op(xp, x, dim, normalization, onesided):
    norm = _NUMPY_NORM_FORWARD[normalization]
    if not onesided and not hasattr(x, "strides"):  # the standard's fftn takes complex input only
        x = A.astype(xp, x, D.of_array(x).to_complex())
    return xp.fft.rfftn(x, axes=dim, norm=norm) if onesided else xp.fft.fftn(x, axes=dim, norm=norm)


@defop("fft_c2r", node="FftC2RBackward0", params=("dim", "normalization", "last_dim_size"),
       self="fft_c2r_backward(grad, dim, normalization)",
       jvp="fft_c2r_op(self_t, dim, normalization, last_dim_size)")
def fft_c2r_op(xp, x, dim, normalization, last_dim_size):
    sizes = [x.shape[d] for d in dim[:-1]] + [last_dim_size]
    return xp.fft.irfftn(x, s=sizes, axes=dim, norm=_NUMPY_NORM_INVERSE[normalization])


def fft_r2c_backward(grad: Tensor, dim: tuple, normalization: int, onesided: bool, last_dim_size: int) -> Tensor:
    """The adjoint of r2c (Note [FFT adjoints]): the dropped half refilled with zeros, inverse c2c, real part."""
    if onesided:
        missing = last_dim_size - grad.shape[dim[-1]]
        if missing > 0:
            grad = _pad_end(grad, dim[-1], missing)
    return real(apply(fft_c2c_op, (grad,), (dim, normalization, False)))


def fft_c2r_backward(grad: Tensor, dim: tuple, normalization: int) -> Tensor:
    """The adjoint of c2r (Note [FFT adjoints]): one-sided r2c of grad, the bins with a mirror doubled."""
    half = apply(fft_r2c_op, (grad,), (dim, normalization, True))
    last = dim[-1]
    doubled = grad.shape[last] - half.shape[last]
    if doubled <= 0:
        return half
    weights = np.ones(half.shape[last])
    weights[1:1 + doubled] = 2
    shape = [1] * half.ndim
    shape[last] = -1
    return half * tensor(weights.reshape(shape), dtype=half.dtype.to_real(), device=half.device)


def _pad_end(x: Tensor, dim: int, amount: int) -> Tensor:
    """x with `amount` zeros appended along dim (ConstantPadNdBackward0), torch's pad list last dim first."""
    from .conv import constant_pad_nd_op

    pad = [0] * (2 * x.ndim)
    pad[2 * (x.ndim - 1 - dim) + 1] = amount
    return apply(constant_pad_nd_op, (x,), (tuple(pad), 0))


# ============================================================================================
# torch.fft's argument handling (ATen's SpectralOps.cpp)
# ============================================================================================

_NONE, _BY_ROOT_N, _BY_N = 0, 1, 2


def _normalization(norm: str | None, forward: bool) -> int:
    """The normalization code of torch's `norm` argument for a transform in the given direction."""
    if norm is None or norm == "backward":
        return _NONE if forward else _BY_N
    if norm == "forward":
        return _BY_N if forward else _NONE
    if norm == "ortho":
        return _BY_ROOT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _promote(x: Tensor, require_complex: bool = False) -> Tensor:
    """Integers to the default float dtype, and to complex if required (ToCopyBackward0 when it changes)."""
    dtype = x.dtype
    if not dtype.is_complex:
        if not dtype.is_floating_point:
            dtype = D.get_default_dtype()
        if dtype not in (D.float32, D.float64):
            raise RuntimeError(f"Unsupported dtype {D.scalar_type_name(dtype)}")
        if require_complex:
            dtype = dtype.to_complex()
    if dtype is x.dtype:
        return x
    from .shape import cast

    return cast(x, dtype)


def _resize(x: Tensor, dims: Sequence[int], sizes: Sequence[int]) -> Tensor:
    """Trim (a slice) or zero-pad (one constant_pad_nd) each transformed dim to its requested size."""
    from .conv import constant_pad_nd_op
    from .shape import narrow

    pad = [0] * (2 * x.ndim)
    for d, n in zip(dims, sizes):
        have = x.shape[d]
        if have < n:
            pad[2 * (x.ndim - 1 - d) + 1] = n - have
        elif have > n:
            x = narrow(x, d, 0, n)
    return apply(constant_pad_nd_op, (x,), (tuple(pad), 0)) if any(pad) else x


def _check_points(n: int) -> None:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _wrap(dim: int, ndim: int) -> int:
    """A dim wrapped as torch's maybe_wrap_dim with wrap_scalar=False (no dim -1 of a 0-d tensor)."""
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return _wrap_dim(dim, ndim)


def _shape_and_dims(x: Tensor, s: Sequence[int] | None, dim: Sequence[int] | int | None) -> tuple[list, list]:
    """torch's canonicalize_fft_shape_and_dim_args: the transformed dims and their sizes."""
    ndim = x.ndim
    dims: list[int] | None = None
    if dim is not None:
        dims = [_wrap(d, ndim) for d in ((dim,) if isinstance(dim, int) else dim)]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = list(s)
        if dims is not None and len(dims) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {ndim} dimensions.")
        if dims is None:
            dims = list(range(ndim - len(s), ndim))
        shape = [x.shape[d] if n == -1 else n for d, n in zip(dims, s)]
    elif dims is None:
        dims, shape = list(range(ndim)), list(x.shape)
    else:
        shape = [x.shape[d] for d in dims]
    for n in shape:
        _check_points(n)
    return shape, dims


def _c2r_shape_and_dims(name: str, x: Tensor, s: Sequence[int] | None, dim: Sequence[int] | int | None
                        ) -> tuple[list, list, int]:
    """As _shape_and_dims for a Hermitian input: the last dim's input size is last_dim_size // 2 + 1."""
    shape, dims = _shape_and_dims(x, s, dim)
    if not shape:
        raise RuntimeError(f"{name} must transform at least one axis")
    last_dim_size = 2 * (x.shape[dims[-1]] - 1) if s is None or list(s)[-1] == -1 else shape[-1]
    _check_points(last_dim_size)
    shape[-1] = last_dim_size // 2 + 1
    return shape, dims, last_dim_size


def _one_dim(x: Tensor, n: int | None, dim: int) -> tuple[Tensor, int]:
    """The input of a 1-D transform resized to n points along dim, and the wrapped dim."""
    d = _wrap(dim, x.ndim)
    if n is not None:
        _check_points(n)
        x = _resize(x, [d], [n])
    _check_points(x.shape[d])
    return x, d


def _c2c(x: Tensor, n: int | None, dim: int, norm: str | None, forward: bool) -> Tensor:
    x, d = _one_dim(x, n, dim)
    return apply(fft_c2c_op, (x,), ((d,), _normalization(norm, forward), forward))


def _r2c(name: str, x: Tensor, n: int | None, dim: int, norm: str | None, forward: bool, onesided: bool) -> Tensor:
    if x.is_complex():
        raise RuntimeError(f"{name} expects a real input tensor, but got {D.scalar_type_name(x.dtype)}")
    x, d = _one_dim(_promote(x), n, dim)
    out = apply(fft_r2c_op, (x,), ((d,), _normalization(norm, forward), onesided))
    return out if forward else conj(out)


def _c2r(x: Tensor, n: int | None, dim: int, norm: str | None, forward: bool) -> Tensor:
    x = _promote(x, require_complex=True)
    d = _wrap(dim, x.ndim)
    if n is None:
        n = 2 * (x.shape[d] - 1)
        _check_points(n)
    else:
        _check_points(n)
        x = _resize(x, [d], [n // 2 + 1])
    if forward:
        x = conj(x)
    return apply(fft_c2r_op, (x,), ((d,), _normalization(norm, forward), n))


# ============================================================================================
# Public functions
# ============================================================================================


def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The 1-D discrete Fourier transform; a real input gives the full complex spectrum."""
    if input.is_complex():
        return _c2c(input, n, dim, norm, True)
    return _r2c("fft", input, n, dim, norm, True, False)


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The 1-D inverse discrete Fourier transform."""
    if input.is_complex():
        return _c2c(input, n, dim, norm, False)
    return _r2c("ifft", input, n, dim, norm, False, False)


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The 1-D transform of a real input: the n // 2 + 1 non-negative frequencies."""
    return _r2c("rfft", input, n, dim, norm, True, True)


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of rfft: a real signal of n points (default 2 * (m - 1)) from one-sided frequencies."""
    return _c2r(input, n, dim, norm, False)


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The transform of a Hermitian-symmetric signal given by its one-sided half: a real spectrum."""
    return _c2r(input, n, dim, norm, True)


def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of hfft: the one-sided half of the inverse transform of a real input."""
    return _r2c("ihfft", input, n, dim, norm, False, True)


def _c2c_n(x: Tensor, s: Sequence[int] | None, dim: Sequence[int] | None, norm: str | None,
           forward: bool) -> Tensor:
    shape, dims = _shape_and_dims(x, s, dim)
    x = _resize(_promote(x, require_complex=True), dims, shape)
    return apply(fft_c2c_op, (x,), (tuple(dims), _normalization(norm, forward), forward))


def fftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
         norm: str | None = None) -> Tensor:
    """The N-D discrete Fourier transform over dim (all dims by default)."""
    return _c2c_n(input, s, dim, norm, True)


def ifftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
          norm: str | None = None) -> Tensor:
    """The N-D inverse discrete Fourier transform."""
    return _c2c_n(input, s, dim, norm, False)


def rfftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
          norm: str | None = None) -> Tensor:
    """The N-D transform of a real input, one-sided in the last transformed dim."""
    if input.is_complex():
        raise RuntimeError(f"rfftn expects a real-valued input tensor, but got {D.scalar_type_name(input.dtype)}")
    shape, dims = _shape_and_dims(input, s, dim)
    if not shape:
        raise RuntimeError("rfftn must transform at least one axis")
    x = _resize(_promote(input), dims, shape)
    return apply(fft_r2c_op, (x,), (tuple(dims), _normalization(norm, True), True))


def irfftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
           norm: str | None = None) -> Tensor:
    """The inverse of rfftn: a real signal from a one-sided spectrum."""
    shape, dims, last_dim_size = _c2r_shape_and_dims("irfftn", input, s, dim)
    x = _resize(_promote(input, require_complex=True), dims, shape)
    return apply(fft_c2r_op, (x,), (tuple(dims), _normalization(norm, False), last_dim_size))


def hfftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
          norm: str | None = None) -> Tensor:
    """The N-D transform of a Hermitian-symmetric signal given by its one-sided half: a real result."""
    shape, dims, last_dim_size = _c2r_shape_and_dims("hfftn", input, s, dim)
    x = _resize(_promote(input, require_complex=True), dims, shape)
    normalization = _normalization(norm, True)
    if len(dims) > 1:
        x = apply(fft_c2c_op, (x,), (tuple(dims[:-1]), normalization, True))
    return apply(fft_c2r_op, (conj(x),), ((dims[-1],), normalization, last_dim_size))


def ihfftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
           norm: str | None = None) -> Tensor:
    """The inverse of hfftn: one-sided in the last transformed dim."""
    if not input.dtype.is_floating_point and input.dtype.category >= 2:
        raise RuntimeError(f"Only supports floating-point dtypes, but found: {D.scalar_type_name(input.dtype)}")
    shape, dims = _shape_and_dims(input, s, dim)
    if not shape:
        raise RuntimeError("ihfftn must transform at least one axis")
    x = _resize(_promote(input), dims, shape)
    normalization = _normalization(norm, False)
    half = apply(fft_r2c_op, (x,), ((dims[-1],), normalization, True))
    if len(dims) == 1:
        return conj(half)
    return apply(fft_c2c_op, (conj_physical(half),), (tuple(dims[:-1]), normalization, False))


def _two_dims(fn, doc: str):
    def two_dim(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
                norm: str | None = None) -> Tensor:
        return fn(input, s, dim, norm)

    two_dim.__name__ = two_dim.__qualname__ = fn.__name__[:-1] + "2"
    two_dim.__doc__ = doc
    return two_dim


fft2 = _two_dims(fftn, "The 2-D discrete Fourier transform over dim (the last two by default).")
ifft2 = _two_dims(ifftn, "The 2-D inverse discrete Fourier transform.")
rfft2 = _two_dims(rfftn, "The 2-D transform of a real input, one-sided in the last dim.")
irfft2 = _two_dims(irfftn, "The inverse of rfft2.")
hfft2 = _two_dims(hfftn, "The 2-D transform of a one-sided Hermitian signal: a real result.")
ihfft2 = _two_dims(ihfftn, "The inverse of hfft2.")


def _shift(input: Tensor, dim: int | Sequence[int] | None, inverse: bool) -> Tensor:
    from .shape import roll

    dims = list(range(input.ndim)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    dims = [_wrap_dim(d, input.ndim) for d in dims]
    return roll(input, [(input.shape[d] + inverse) // 2 for d in dims], dims)


def fftshift(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """Roll the zero frequency to the centre of each dim (a roll: RollBackward0)."""
    return _shift(input, dim, False)


def ifftshift(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """The inverse of fftshift."""
    return _shift(input, dim, True)


def _frequencies(name: str, values: np.ndarray, n: int, d: float, dtype: D.dtype | None,
                 requires_grad: bool, device: object = None) -> Tensor:
    """`values` / (n d) in dtype, rounded as torch's arange in the dtype times the scalar 1 / (n d)."""
    dtype = dtype or D.get_default_dtype()
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"{name} requires a floating point or complex dtype")
    if dtype.is_complex:
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{D.scalar_type_name(dtype)}'")
    out = values.astype(dtype.np) * dtype.np.type(1.0 / (n * d))
    return tensor(out, requires_grad=requires_grad, device=device)


def fftfreq(n: int, d: float = 1.0, *, dtype: D.dtype | None = None, layout: object = None, device: object = None,
            requires_grad: bool = False) -> Tensor:
    """The sample frequencies of an n-point transform: [0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d n)."""
    values = np.concatenate([np.arange((n + 1) // 2), np.arange(-(n // 2), 0)])
    return _frequencies("fftfreq", values, n, d, dtype, requires_grad, device)


def rfftfreq(n: int, d: float = 1.0, *, dtype: D.dtype | None = None, layout: object = None, device: object = None,
             requires_grad: bool = False) -> Tensor:
    """The sample frequencies of rfft's n // 2 + 1 outputs: [0, 1, ..., n // 2] / (d n)."""
    return _frequencies("rfftfreq", np.arange(n // 2 + 1), n, d, dtype, requires_grad, device)


FFT = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2", "fftn",
       "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftshift", "ifftshift", "fftfreq", "rfftfreq"]
for _name in FFT[:18]:
    globals()[_name] = accepting_out(globals()[_name], "fft_" + _name)
del _name


# ============================================================================================
# Short-time Fourier transform: torch.stft, torch.istft
# ============================================================================================


def _tensor_repr(t: Tensor | None) -> str:
    return "None" if t is None else f"{D.tensor_type_name(t.dtype)}{{{list(t.shape)}}}"


def _flag(value: bool | None) -> str:
    return "None" if value is None else str(int(value))


def _centred_window(window: Tensor | None, win_length: int, n_fft: int, dtype: D.dtype, device: object) -> Tensor:
    """The window (ones of dtype on device when not given) padded with zeros to n_fft, centred as torch pads it."""
    if window is None:
        window = ones(win_length, dtype=dtype, device=device)
    left = (n_fft - win_length) // 2
    return window if win_length == n_fft else pad(window, [left, n_fft - win_length - left])


def stft(input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
         window: Tensor | None = None, center: bool = True, pad_mode: str = "reflect", normalized: bool = False,
         onesided: bool | None = None, return_complex: bool | None = None,
         align_to_window: bool | None = None) -> Tensor:
    """The short-time Fourier transform: the FFT of each windowed frame of n_fft samples, hop_length apart (the
    signal padded by n_fft // 2 at both ends when center): (n_fft // 2 + 1 or n_fft bins, frames)."""
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if center:
        original_ndim = input.ndim
        extended = [1] * (3 - input.ndim) + list(input.shape)
        input = pad(input.view(extended), [n_fft // 2, n_fft // 2], pad_mode)
        input = input.view(input.shape[-original_ndim:])
    if window is None:  # torch's C++ stft warns once per process, after the padding and before its checks
        warn_once_at_user("A window was not provided. A rectangular window will be applied,which is known to cause "
                          "spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
                          "recommended to reduce spectral leakage.To suppress this warning and use a rectangular "
                          "window, explicitly set `window=torch.ones(n_fft, device=<device>)`. (Triggered internally "
                          "at /__w/pytorch/pytorch/aten/src/ATen/native/SpectralOps.cpp:835.)")
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    prefix = (f"stft({D.tensor_type_name(input.dtype)}{list(input.shape)}, n_fft={n_fft}, hop_length={hop_length}, "
              f"win_length={win_length}, window={_tensor_repr(window)}, normalized={_flag(normalized)}, "
              f"onesided={_flag(onesided)}, return_complex={_flag(return_complex)}, "
              f"align_to_window={_flag(align_to_window)}) : ")
    complex_given = input.is_complex() or (window is not None and window.is_complex())
    if return_complex is None and not complex_given:
        raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                           "require that return_complex=True in a future PyTorch release.")
    if input.ndim not in (1, 2):
        raise RuntimeError(prefix + "expected a 1D or 2D tensor")
    signal = input.unsqueeze(0) if input.ndim == 1 else input
    length = signal.shape[1]
    if not 0 < n_fft <= length:
        raise RuntimeError(prefix + f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop_length <= 0:
        raise RuntimeError(prefix + f"expected hop_length > 0, but got hop_length={hop_length}")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(prefix + f"expected 0 < win_length <= n_fft, but got win_length={win_length}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win_length):
        raise RuntimeError(prefix + f"expected a 1D window tensor of size equal to win_length={win_length}, but got "
                                    f"window with size {list(window.shape)}")
    if align_to_window and win_length < n_fft:  # frames start where their window does, not n_fft apart from it
        left = (n_fft - win_length) // 2
        signal = pad(signal, [left, n_fft - win_length - left])
    frames = signal.unfold(1, n_fft, hop_length)  # (batch, frames, n_fft)
    if window is not None or win_length < n_fft:  # no window: a rectangular one of win_length samples
        frames = frames * _centred_window(window, win_length, n_fft, signal.dtype, signal.device)
    complex_input = frames.is_complex()
    onesided = not complex_input if onesided is None else onesided
    normalization = 1 if normalized else 0
    if complex_input:
        out = apply(fft_c2c_op, (frames,), ((2,), normalization, True))
    else:
        out = apply(fft_r2c_op, (frames,), ((2,), normalization, onesided))
    out.transpose_(1, 2)  # in place, as torch (TransposeBackward1, SqueezeBackward4)
    if input.ndim == 1:
        out.squeeze_(0)
    return out if (complex_given if return_complex is None else return_complex) else view_as_real(out)


def istft(input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
          window: Tensor | None = None, center: bool = True, normalized: bool = False, onesided: bool | None = None,
          length: int | None = None, return_complex: bool = False) -> Tensor:
    """The inverse of stft: each frame's inverse FFT, windowed, overlapped and added, divided by the summed
    squared window (torch.istft)."""
    if window is None:
        warn_once_at_user("A window was not provided. A rectangular window will be applied.Please provide the same "
                          "window used by stft to make the inversion lossless.To suppress this warning and use a "
                          "rectangular window, explicitly set `window=torch.ones(n_fft, device=<device>)`. (Triggered "
                          "internally at /__w/pytorch/pytorch/aten/src/ATen/native/SpectralOps.cpp:1035.)")
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    # torch's checks name the call: the input as its C++ type, CPUComplexFloatType[9, 5]
    prefix = (f"istft({input.device.type.upper()}{D.scalar_type_name(input.dtype)}Type{list(input.shape)}, "
              f"n_fft={n_fft}, hop_length={hop_length}, win_length={win_length}, window={_tensor_repr(window)}, "
              f"center={_flag(center)}, normalized={_flag(normalized)}, onesided={_flag(onesided)}, "
              f"length={length}, return_complex={_flag(return_complex)}) : ")
    if input.numel() == 0:
        raise RuntimeError(prefix + "input tensor cannot be empty.")
    _wrap_dim(-3, input.ndim + 1)  # torch reads the frequency size off view_as_real(input) before the next check
    if input.ndim not in (2, 3):  # torch counts the dimensions of view_as_real(input)
        raise RuntimeError(prefix + f"expected a tensor with 3 or 4 dimensions, but got {input.ndim + 1}")
    bins, n_frames = input.shape[-2:]
    half = bins != n_fft if onesided is None else onesided  # a one-sided spectrum
    if half and n_fft // 2 + 1 != bins:
        raise RuntimeError(prefix + "expected the frequency dimension (3rd to the last) of the input tensor to match "
                           f"n_fft / 2 + 1 when onesided=True, but got {bins}")
    if not half and n_fft != bins:
        raise RuntimeError(prefix + "expected the frequency dimension (3rd to the last) of the input tensor to match "
                           f"n_fft when onesided=False, but got {bins}")
    if not 0 < hop_length <= win_length:
        raise RuntimeError(prefix + "expected 0 < hop_length <= win_length")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(prefix + "expected 0 < win_length <= n_fft")
    if window is not None and (window.ndim != 1 or window.shape[0] != win_length):
        raise RuntimeError(prefix + "Invalid window shape. window has to be 1D and length of `win_length`")
    padded = _centred_window(window, win_length, n_fft, input.dtype.to_real(), input.device)
    spectrum = (input.unsqueeze(0) if input.ndim == 2 else input).transpose(1, 2)  # (channel, frames, bins)
    normalization = 1 if normalized else 2
    if return_complex:
        if half:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = apply(fft_c2c_op, (spectrum,), ((2,), normalization, False))
    else:
        if padded.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not half:
            spectrum = spectrum.narrow(-1, 0, n_fft // 2 + 1)
        frames = apply(fft_c2r_op, (spectrum,), ((2,), normalization, n_fft))
    expected = n_fft + hop_length * (n_frames - 1)
    signal = unfold_backward(frames * padded.view(1, 1, n_fft), (frames.shape[0], expected), 1, n_fft, hop_length)
    envelope = unfold_backward(padded.pow(2).expand(1, n_frames, n_fft), (1, expected), 1, n_fft, hop_length)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else -(n_fft // 2) if center else expected
    signal, envelope = signal[:, start:end], envelope[:, start:end]
    if bool((envelope.abs().min() < 1e-11)._data):
        raise RuntimeError(f"istft(CPU{D.scalar_type_name(input.dtype)}Type{list(input.shape)}, n_fft={n_fft}, "
                           f"hop_length={hop_length}, win_length={win_length}, window={_tensor_repr(window)}, "
                           f"center={_flag(center)}, normalized={_flag(normalized)}, onesided={_flag(onesided)}, "
                           f"length={length}, return_complex={_flag(return_complex)}) window overlap add min: 1\n"
                           "[ CPUBoolType{} ]")
    signal = signal / envelope
    if input.ndim == 2:
        signal = signal.squeeze(0)
    if end > expected:
        signal = pad(signal, [0, end - expected])
    return signal


__all__ = ["istft", "stft"]
METHODS = ["istft", "stft"]
