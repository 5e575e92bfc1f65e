"""Rule table: the spatial kernels of the nn family (OPS.md section I): convolution, fold/unfold,
pooling, padding, resampling and pixel shuffles. `ops/nn.py` re-exports everything public here.

Every kernel works on the last d dims of its input (d = 1, 2 or 3), the dims before them being
batch and channels, and is built from a few array-level mechanisms shared by all rows:

- `_fill_columns` / `_scatter_windows`: every receptive field laid out as columns, one strided
  slice copied per kernel offset, and its adjoint, one strided add per kernel offset (Note [im2col]);
- `gather_dims` / `scatter_dims`: a gather of whole slices along several dims (reflection,
  replication and circular padding, nearest upsampling) and its adjoint;
- `separable_map`: one small matrix applied along each dim (linear, bilinear, bicubic and
  trilinear upsampling, adaptive average pooling), whose adjoint is the same row with the
  matrices transposed.

Note [im2col]
A convolution is a matrix product once each output position's receptive field is laid out as a
row ("im2col"): each kernel offset reads a strided slice of the zero-padded input (stride and
dilation are its steps), copied into its row of the columns, and one matmul per group does the
arithmetic. Its adjoint ("col2im") adds the rows back with one strided add per kernel offset: a
loop over the kernel's offsets, never over pixels. Three linear maps cover every convolution and all its derivatives::

    conv(x, w)      the convolution                          (N, C, *X) -> (N, F, *O)
    conv_T(g, w)    its adjoint in x: transposed convolution (N, F, *O) -> (N, C, *X)
    conv_w(g, x)    its adjoint in w: the weight gradient                -> (F, C/groups, *K)

The `convolution` row computes conv or conv_T (`transposed`), `convolution_weight` computes conv_w,
and the VJPs of each are the other two, so derivatives of every order stay within these two rows.
A transposed convolution is conv_T with torch's weight layout ``(C_in, C_out/groups, *K)``, which is
exactly the weight of the convolution it is the adjoint of. With stride 1, conv_T is itself a
convolution (by the flipped kernel, channels swapped within each group, padding widened to the
kernel's extent), so it reads windows instead of adding them back.

Note [one im2col path]
The kernels compute with the `xp` namespace they are given (Note [choosing a namespace] in _xp.py),
so one code path serves NumPy, CuPy and any array-API library: the standard's slices (with steps),
reshapes, permutations, takes and matmul. An im2col built from one slice copy per kernel offset
runs as fast on NumPy as copying an as_strided view of all windows did (the same inner loops; a
few Python steps per offset), so no strided-memory variant is kept. What stays NumPy's is chosen
in one helper each: scratch memory reused between calls (`_Scratch.array`; CuPy's pool does that
itself), matmul writing into its result (`_matmul_into`: out= on a view, where NumPy and CuPy have
views), and a scatter-add by flat index (`_sum_at`: NumPy's bincount; the standard has no scatter).
The one-im2col backward (`_conv_backward`) runs on NumPy's float arrays only, inside the forward of the
`convolution_backward` row, where nothing differentiates through it (the row's formulas do).

Note [flat rows]
Copying the windows runs one inner loop per output row, which costs more than the row itself
for small images. With stride 1, a kernel offset's window is one contiguous run of the padded input
flattened per plane, if each output row is taken as long as a padded row: the extra positions at
the end of each row read into the next row and are junk, cropped after the matmul. The copy then
runs one loop per (plane, offset), a plain slice of the flattened padded input; a spare padded
row at the end keeps the last junk positions inside the buffer. The crop is one more copy of the
output, so flat rows are used when the columns outnumber the output channels (not for a first
layer with one input channel).

Note [row-stacked columns]
On flat rows, kernel offsets that differ only in their row read the same run of the padded input shifted by
a whole number of padded rows. So a 2-d convolution needs copies for one kernel row only: columns
(C, kw, L + reach) taken for the offsets along the row, each run longer by the reach of the other kernel
rows (reach = dilation * (kh - 1) padded rows), and kernel row r's columns are the positions from r's shift
on, a view. One product by the weight laid out as (kh * F, C * kw) (each kernel row's F rows stacked) gives
every kernel row's partial sums at once, and the output is the sum of each row's block shifted by its offset
(`_stacked_product_into`). That is a third of the copies of a 3x3 kernel's im2col and a product with three
times the rows and a third of the depth, which OpenBLAS runs faster: a ResNet layer (16 channels, batch 32 at
32x32) 5.0 -> 4.1 ms forward and 9.1 -> 7.4 backward, a 64-channel one 39 -> 31 and 69 -> 63 (Intel Xeon,
one thread). The one-im2col backward takes both gradients from g's row-stacked columns: conv_T's product as
above, and the weight gradient as one product per kernel row of that row's view with x on the grid. Inputs
of fewer than 16 channels keep the full columns (8 channels: 0.88 -> 1.1 ms forward, the products too thin).
The sums are taken in another order than a full im2col's (each kernel row's, then the rows'), within
rounding of torch's.

Note [one im2col for both gradients]
With stride 1 and one group, the input's gradient conv_T(g, w) is a convolution of g (Note [im2col]),
whose columns G hold, at each input position q, g at q - k for every kernel offset k: exactly the
products the weight's gradient sums, conv_w(g, x)[f, c, k] = sum_q G[(f, flipped k), q] x[c, q]. So
when both are wanted, the `convolution_backward` row takes both from one im2col of g (`_conv_backward`,
on NumPy's float arrays): x is laid on G's grid, zeros at its junk positions (Note [flat rows]), instead of being
padded and copied once per kernel offset again. That sum meets x only where it is, never the
padding, so it is kept only where 0 * inf cannot occur (x and g finite; else the two kernels run
separately and, as torch's, make NaN where an inf meets the padding), and used only when the input has
at least half as many channels as the output (a product with a handful of columns, as in a first
layer, runs slower than the separate im2col of x). Finiteness is read from the weight's gradient
afterwards, not from two passes over x and g before: every element of x and of g enters some product of
that sum (g's columns cover all of padded g, and x's grid all of x), and inf or NaN in a product leaves the
sum non-finite, so a finite sum means finite inputs (a non-finite one, from them or from an overflow, runs
the two kernels).

Note [unwanted outputs]
A convolution's three gradients are the outputs of one `convolution_backward` node, as in torch, whose
grad_input_mask says which of them its caller wants. A row's outputs are tensors, so one nobody asked for is a
zero broadcast to its shape (no memory, never handed out: the convolution's backward returns only the wanted
ones). Under create_graph nothing differentiates it: the row keeps undefined gradients None
(`materialize_grads=False`), and its formulas skip their terms, as torch's do. When nothing records,
the node is not made and the row is the kernels alone, so a first-order backward costs what it did before the
row existed; the one-im2col kernel (Note [one im2col for both gradients]) serves both, recorded or not.

Note [batch parts]
The convolution kernels run the batch in parts whose im2col columns take about `_PART_BYTES`, in
per-thread scratch buffers that every call reuses (`_SCRATCH`: four, of at most `_SCRATCH_LIMIT`
bytes each; 1.4 MiB in all after the CNN or ResNet benchmark). Fresh memory is dear: the columns of a whole
batch are several times the input (9x for a 3x3 kernel), and the allocator hands such blocks back
to the system when they are freed, so each call would fault their pages in again (one fault per
4 KiB, more than the copy costs). A part's columns are written by the copies and read at once by the
GEMM, so they should still be in the core's cache when it runs: parts of 1 MiB, not more (on an Intel Xeon
with 2 MiB of L2 a core, 2 MiB parts made a 16-channel layer's forward on a batch of 32 at 32x32 5.4 ms and
its backward 9.0, 1 MiB parts 4.5 and 7.5, and the ResNet step of the benchmarks 91 -> 82 ms; 512 KiB parts
were no faster, and smaller ones add Python-level steps per call). For the same reason a kernel allocates
its result before its temporaries, so that they are freed on top of the heap rather than leaving a hole
below the result. On a device (CuPy) none of this holds: its memory pool keeps freed blocks, and each part
costs kernel launches, so parts there take up to `_DEVICE_PART_BYTES` (a batch of 128 CIFAR-sized
64-channel inputs in parts of one sample was 130x torch's time).
"""

from __future__ import annotations

import functools
import itertools
import math
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

import numpy as np

from .. import _dtype as D
from .._creation import _linspace_in, zeros
from .._memory_format import channels_last, channels_last_3d, keeping_channels_last, laid_out, suggest_memory_format
from .._random_streams import fma
from .._tensor import Tensor, _takes_as_int, _wrap, int_list
from .._warn import user_stacklevel, warn_once_at_user
from .._xp import namespace
from . import arrays as A
from .pointwise import _refuse_kinds
from .registry import apply, defop
from .shape import stack


class Window(NamedTuple):
    """Where a sliding kernel reads: per spatial dim its size, step, (low, high) zero padding and dilation."""

    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    dilation: tuple[int, ...]


# ============================================================================================
# Array mechanisms (forwards only; Note [im2col])
# ============================================================================================


def _out_size(spatial: Sequence[int], win: Window) -> tuple[int, ...]:
    """Number of window positions along each dim."""
    return tuple((x + lo + hi - d * (k - 1) - 1) // s + 1
                 for x, (lo, hi), d, k, s in zip(spatial, win.padding, win.dilation, win.kernel, win.stride))


def _padded(xp, x, pairs: Sequence[tuple[int, int]], fill: float, scratch: str | None = None):
    """x with (low, high) >= 0 elements of `fill` around each of its last len(pairs) dims: a filled buffer
    and one copy, cheaper than a pad function; in the scratch buffer of that name if one is given."""
    d = len(pairs)
    spatial = x.shape[x.ndim - d:]
    shape = x.shape[:x.ndim - d] + tuple(n + lo + hi for n, (lo, hi) in zip(spatial, pairs))
    out, bordered = _SCRATCH.bordered(xp, scratch, shape, x, (tuple(pairs), fill))
    if not bordered:
        out[...] = fill
    out[(Ellipsis, *(slice(lo, lo + n) for n, (lo, _) in zip(spatial, pairs)))] = x
    return out


class _Scratch(threading.local):
    """Note [batch parts]: memory that the parts of a batch reuse, call after call (one set per thread)."""

    def __init__(self) -> None:
        self.buffers: dict[str, np.ndarray] = {}
        self.borders: dict[str, tuple] = {}  # buffer name -> what its last request's border holds (`bordered`)

    def bordered(self, xp, name: str | None, shape: tuple[int, ...], like, border: tuple) -> tuple[object, bool]:
        """`array(...)` for a padded copy whose border (the padding and its value) is `border`, and whether the
        border is already there: the buffer's last request was this very one and only its interior was written
        since, as when the parts of a batch, or the steps of a training loop, pad inputs of one shape. Only NumPy's
        requests use the buffers: another library's array is fresh memory, whatever the last NumPy request was."""
        key = (shape, like.dtype, border)
        last = self.borders.get(name)  # before `array` forgets it
        out = self.array(xp, name, shape, like)
        if name is None or xp is not np or out.nbytes > _SCRATCH_LIMIT:  # memory of its own, border unwritten
            return out, False
        self.borders[name] = key
        return out, last == key

    def array(self, xp, name: str | None, shape: tuple[int, ...], like):
        """An uninitialised array of `like`'s dtype and device. For NumPy's arrays, in the buffer `name` (if one
        is named), which grows to the largest request up to `_SCRATCH_LIMIT` bytes (larger ones get memory of
        their own); other libraries have memory pools of their own (CuPy's) or nothing to gain (Note [one
        im2col path])."""
        if name is None or xp is not np:
            return xp.empty(shape, dtype=like.dtype, device=like.device)
        self.borders.pop(name, None)  # the caller may write anywhere in it
        nbytes = math.prod(shape) * like.itemsize
        if nbytes > _SCRATCH_LIMIT:
            return np.empty(shape, dtype=like.dtype)
        buf = self.buffers.get(name)
        if buf is None or buf.nbytes < nbytes:
            buf = self.buffers[name] = np.empty(nbytes, dtype=np.uint8)
        return buf[:nbytes].view(like.dtype).reshape(shape)


_SCRATCH = _Scratch()


def _offsets(win: Window) -> Iterator[tuple[int, ...]]:
    """Every kernel offset, in C order."""
    return itertools.product(*(range(k) for k in win.kernel))


def _window_slices(offset: Sequence[int], win: Window, out: Sequence[int]) -> tuple[slice, ...]:
    """Where kernel offset `offset` reads in a padded buffer at every output position: a strided slice per dim."""
    return tuple(slice(k * dl, k * dl + (o - 1) * s + 1, s)
                 for k, dl, o, s in zip(offset, win.dilation, out, win.stride))


def _window_at(buf, offset: Sequence[int], win: Window, out: Sequence[int]):
    """What kernel offset `offset` reads of a padded buffer at every output position: (*lead, *O), a strided
    slice (a view for NumPy)."""
    return buf[(Ellipsis, *_window_slices(offset, win, out))]


@functools.lru_cache(maxsize=256)
def _column_copies(win: Window, out: tuple[int, ...], grid: tuple[int, ...] | None,
                   padded: tuple[int, ...], stacked: bool = False) -> tuple[tuple[tuple, tuple], ...]:
    """im2col as one slice copy per kernel offset (Note [one im2col path]): (where in the columns, from where in
    the padded input) for each offset. Columns (*lead, *K, *O) take each offset's window; on flat rows (Note
    [flat rows], `grid` not None) columns (*lead, *K, prod(grid)) take one contiguous run of the padded input
    flattened per plane; row-stacked columns (*lead, kw, prod(grid) + reach) one longer run per offset along the
    last dim (Note [row-stacked columns]); computed once per geometry, as the calls of a training loop repeat it."""
    d = len(win.kernel)
    if grid is None:
        return tuple(((Ellipsis, *offset, *(slice(None),) * d), (Ellipsis, *_window_slices(offset, win, out)))
                     for offset in _offsets(win))
    if stacked:
        size = math.prod(grid) + _row_reach(win, grid)
        return tuple(((Ellipsis, k, slice(None)), (Ellipsis, slice(k * win.dilation[1], k * win.dilation[1] + size)))
                     for k in range(win.kernel[1]))
    pitch = [math.prod(padded[i + 1:]) for i in range(d)]
    size = math.prod(grid)
    starts = [sum(k * dl * p for k, dl, p in zip(offset, win.dilation, pitch)) for offset in _offsets(win)]
    return tuple(((Ellipsis, *offset, slice(None)), (Ellipsis, slice(start, start + size)))
                 for offset, start in zip(_offsets(win), starts))


def _row_reach(win: Window, grid: tuple[int, ...]) -> int:
    """How far, in flat positions, the last kernel row reads past the first (Note [row-stacked columns])."""
    return win.dilation[0] * (win.kernel[0] - 1) * grid[1]


def _fill_columns(xp, cols, x, win: Window, copies: tuple, grid: tuple[int, ...] | None,
                  scratch: str | None = None) -> None:
    """im2col into `cols`: the `_column_copies` of x's padded input (with a spare row for the junk of flat rows)."""
    d = len(win.kernel)
    pairs = _column_padding(win, grid)
    buf = _padded(xp, x, pairs, 0.0, scratch) if any(lo or hi for lo, hi in pairs) else x
    if grid is not None:
        buf = xp.reshape(buf, (*buf.shape[:buf.ndim - d], -1))
    for target, source in copies:
        cols[target] = buf[source]


def _column_padding(win: Window, grid: tuple[int, ...] | None) -> tuple[tuple[int, int], ...]:
    """The (low, high) padding of the input that `_fill_columns` copies from: the window's, and on flat rows a
    spare row at the end for the last junk positions (Note [flat rows])."""
    if grid is None or len(win.kernel) == 1:
        return win.padding
    return ((win.padding[0][0], win.padding[0][1] + 1), *win.padding[1:])


def _add_windows(buf, cols, win: Window, part: slice = slice(None)) -> None:
    """col2im into a padded buffer: add (*lead, *K, *O) to the places of buf[part] (*lead, *padded X) they
    came from, one strided add per kernel offset, never per pixel."""
    d = len(win.kernel)
    out = cols.shape[cols.ndim - d:]
    for offset in _offsets(win):
        buf[(part, Ellipsis, *_window_slices(offset, win, out))] += cols[(Ellipsis, *offset, *(slice(None),) * d)]


def _unpadded(xp, buf, spatial: Sequence[int], win: Window):
    """The part of a padded buffer that is the input, an array of its own: torch's gradients and outputs are
    contiguous, and code calls `.view` on them (WGAN-GP's `gradients.view(gradients.size(0), -1)`)."""
    if not any(lo or hi for lo, hi in win.padding):
        return buf
    return A.copy(xp, buf[(Ellipsis, *(slice(lo, lo + x) for x, (lo, _) in zip(spatial, win.padding)))])


def _scatter_windows(xp, cols, spatial: Sequence[int], win: Window):
    """col2im, the adjoint of im2col: add (*lead, *K, *O) back to the places in (*lead, *X) they came from."""
    d = len(win.kernel)
    padded = tuple(x + lo + hi for x, (lo, hi) in zip(spatial, win.padding))
    buf = xp.zeros(cols.shape[:cols.ndim - 2 * d] + padded, dtype=cols.dtype, device=cols.device)
    _add_windows(buf, cols, win)
    return _unpadded(xp, buf, spatial, win)


_PART_BYTES = 1 << 20
_DEVICE_PART_BYTES = 1 << 28
_SCRATCH_LIMIT = 1 << 22


def _batch_parts(xp, n: int, sample_bytes: int) -> list[slice]:
    """Note [batch parts]: slices of the batch whose temporaries take about _PART_BYTES each on the host
    (_DEVICE_PART_BYTES in other namespaces)."""
    step = max(1, (_PART_BYTES if xp is np else _DEVICE_PART_BYTES) // max(sample_bytes, 1))
    return [slice(i, min(i + step, n)) for i in range(0, n, step)]


def _flat_grid(x, win: Window, out: Sequence[int], columns: int, channels: int) -> tuple[int, ...] | None:
    """The grid of flat rows (Note [flat rows]) if they pay for their crop: stride 1 and the columns
    outnumbering the output channels twice; None for window columns."""
    if any(s != 1 for s in win.stride) or columns < 2 * channels:
        return None
    return (out[0], *(n + lo + hi for n, (lo, hi) in zip(x.shape[3:], win.padding[1:])))


def _column_parts(xp, x, win: Window, out: Sequence[int], grid: tuple[int, ...] | None, stacked: bool = False):
    """im2col part by part (Note [batch parts]): (slice, columns (n, C*K, L)) in a scratch buffer, from flat
    rows on `grid` (L = prod(grid)) or, when grid is None, from the windows (L = prod(out)); row-stacked
    columns (n, C*kw, prod(grid) + reach) if `stacked` (Note [row-stacked columns])."""
    size = math.prod(grid) + _row_reach(win, grid) if stacked else math.prod(grid or out)
    kernel = win.kernel[1:] if stacked else win.kernel
    c = x.shape[1]
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(x.shape[2:], _column_padding(win, grid)))
    copies = _column_copies(win, out, grid, padded, stacked)
    for part in _batch_parts(xp, x.shape[0], c * math.prod(kernel) * size * D.of_array(x).itemsize):
        piece = x[part, ...]
        n = piece.shape[0]
        cols = _SCRATCH.array(xp, "cols", (n, c, *kernel, *((size,) if grid else out)), x)
        _fill_columns(xp, cols, piece, win, copies, grid, "pad")
        yield part, xp.reshape(cols, (n, -1, size))


def _matmul_into(xp, a, b, y, part: slice) -> None:
    """y[part] = a @ b, the product (*batch, M, L) taken in y's shape: NumPy's and CuPy's matmul write it in
    place (out= on a view of y), the standard's arrays take it by assignment."""
    if _numpy_like(y):
        xp.matmul(a, b, out=y[part].reshape(*b.shape[:-2], a.shape[-2], b.shape[-1]))
    else:
        y[part, ...] = xp.reshape(xp.matmul(a, b), (-1, *y.shape[1:]))


def _conv(xp, x, w, win: Window, groups: int):
    """conv(x, w): (N, C, *X) with (F, C/groups, *K) -> (N, F, *O), one matmul per part and group."""
    n, f = x.shape[0], w.shape[0]
    out = _out_size(x.shape[2:], win)
    wg = xp.reshape(w, (groups, f // groups, -1))
    grid = _flat_grid(x, win, out, wg.shape[2] * groups, f)
    y = xp.empty((n, f, *out), dtype=xp.result_type(x.dtype, w.dtype), device=x.device)
    if _row_stacked(x, w, win, groups, grid):
        stacked = _stacked_weight(w)
        for part, cols in _column_parts(xp, x, win, out, grid, stacked=True):
            _stacked_product_into(y, part, stacked, cols, grid, win)
        return y
    for part, cols in _column_parts(xp, x, win, out, grid):
        _product_into(xp, y, part, wg, xp.reshape(cols, (cols.shape[0], groups, wg.shape[2], cols.shape[-1])), grid)
    return y


def _row_stacked(x, w, win: Window, groups: int, grid: tuple[int, ...] | None) -> bool:
    """Whether conv(x, w) runs on row-stacked columns (Note [row-stacked columns]): flat rows of a 2-d convolution
    of NumPy's float32 or float64 arrays, one group, a kernel of several rows, and inputs of 16 channels or more (a
    first layer's few channels make products too thin)."""
    return grid is not None and len(win.kernel) == 2 and groups == 1 and win.kernel[0] > 1 and x.shape[1] >= 16 \
        and type(x) is type(w) is np.ndarray and x.dtype == w.dtype and x.dtype in (np.float32, np.float64)


def _stacked_weight(w):
    """w (F, C, kh, kw) as the (kh*F, C*kw) matrix of row-stacked columns: one kernel row's block of F rows each
    (Note [row-stacked columns])."""
    f, c, kh, kw = w.shape
    return np.ascontiguousarray(w.transpose(2, 0, 1, 3)).reshape(kh * f, c * kw)


def _kernel_row(cols, row: int, win: Window, grid: tuple[int, ...]):
    """Kernel row `row`'s im2col columns within row-stacked ones (n, X, prod(grid) + reach): the flat positions
    shifted by that row's offset, a view (Note [row-stacked columns])."""
    start = row * win.dilation[0] * grid[1]
    return cols[..., start:start + math.prod(grid)]


def _stacked_product_into(y, part: slice, stacked, cols, grid: tuple[int, ...], win: Window) -> None:
    """y[part] = conv from row-stacked columns (Note [row-stacked columns]): one product by the stacked weight,
    then each kernel row's block of it, shifted by that row's offset and cropped from the grid, summed into y."""
    n, f, out = cols.shape[0], y.shape[1], y.shape[2:]
    prod = _SCRATCH.array(np, "prod", (n, stacked.shape[0], cols.shape[-1]), y)
    np.matmul(stacked, cols, out=prod)
    target = y[part]
    for row in range(win.kernel[0]):
        block = _kernel_row(prod[:, row * f:(row + 1) * f], row, win, grid).reshape(n, f, *grid)[..., :out[1]]
        if row:
            target += block
        else:
            target[...] = block


def _product_into(xp, y, part: slice, wg, cols, grid: tuple[int, ...] | None) -> None:
    """y[part] = wg @ cols ((G, F/G, CK/G) by (n, G, CK/G, L)) into y (N, F, *O), cropped from the grid of flat
    rows if there is one."""
    if grid is None:
        _matmul_into(xp, wg, cols, y, part)
        return
    n, f, out = cols.shape[0], y.shape[1], y.shape[2:]
    prod = _SCRATCH.array(xp, "prod", (n, f, *grid), y)
    _matmul_into(xp, wg, cols, prod, slice(None))
    y[part, ...] = prod[(Ellipsis, *(slice(0, o) for o in out[1:]))]


def _as_convolution(xp, w, spatial: Sequence[int], out: Sequence[int], win: Window, groups: int):
    """conv_T(., w) with stride 1 as a convolution: (the flipped kernel, channels swapped within each group; its
    window, each side's padding widened by the kernel's extent less the original padding), or None when a
    stride or a negative padding rules it out."""
    if any(s != 1 for s in win.stride):
        return None
    reach = [dl * (k - 1) for dl, k in zip(win.dilation, win.kernel)]
    pads = tuple((r - lo, x - o + lo) for r, (lo, _), x, o in zip(reach, win.padding, spatial, out))
    if any(lo < 0 or hi < 0 for lo, hi in pads):
        return None
    f, c, d = w.shape[0], w.shape[1] * groups, len(win.kernel)
    swapped = xp.permute_dims(xp.reshape(w, (groups, f // groups, c // groups, *win.kernel)),
                              (0, 2, 1, *range(3, 3 + d)))
    flipped = xp.reshape(xp.flip(swapped, axis=tuple(range(3, 3 + d))), (c, f // groups, *win.kernel))
    return flipped, Window(win.kernel, win.stride, pads, win.dilation)


def _conv_transpose(xp, g, w, spatial: Sequence[int], win: Window, groups: int):
    """conv_T(g, w): the adjoint of conv(., w), producing an input of spatial size `spatial`. With stride 1
    it is a convolution of g by the flipped kernel, channels swapped within each group."""
    n, f = g.shape[:2]
    c = w.shape[1] * groups
    as_conv = _as_convolution(xp, w, spatial, g.shape[2:], win, groups)
    if as_conv is not None:
        return _conv(xp, g, *as_conv, groups)
    wt = xp.matrix_transpose(xp.reshape(w, (groups, f // groups, -1)))  # (G, C/G*K, F/G)
    padded = tuple(x + lo + hi for x, (lo, hi) in zip(spatial, win.padding))
    buf = xp.zeros((n, c, *padded), dtype=xp.result_type(g.dtype, w.dtype), device=g.device)
    p = math.prod(g.shape[2:])
    for part in _batch_parts(xp, n, c * math.prod(win.kernel) * p * D.of_array(g).itemsize):
        cols = xp.matmul(wt, xp.reshape(g[part, ...], (-1, groups, f // groups, p)))  # (n, G, C/G*K, P)
        _add_windows(buf, xp.reshape(cols, (-1, c, *win.kernel, *g.shape[2:])), win, part)
    return _unpadded(xp, buf, spatial, win)


def _conv_backward(g, x, w, win: Window):
    """(conv_T(g, w), conv_w(g, x)) from one im2col of g, for NumPy's arrays, one group and stride 1 (Note [one
    im2col for both gradients]); None where that does not apply."""
    spatial = x.shape[2:]
    as_conv = _as_convolution(np, w, spatial, g.shape[2:], win, 1)
    if as_conv is None:
        return None
    flipped, window = as_conv
    f, c, kernel = w.shape[0], w.shape[1], win.kernel
    grid = _flat_grid(g, window, spatial, f * math.prod(kernel), c)
    size = math.prod(grid or spatial)
    stacked = _row_stacked(g, flipped, window, 1, grid)
    wg = _stacked_weight(flipped) if stacked else flipped.reshape(1, c, -1)
    dx = np.empty(x.shape, dtype=g.dtype)
    total = np.zeros((f * math.prod(kernel), c), dtype=g.dtype)  # rows: (F, flipped K)
    by_row = total.reshape(f, kernel[0], -1, c) if stacked else None  # (F, flipped kernel row, rest of K, C)
    with np.errstate(invalid="ignore", over="ignore"):  # a non-finite sum is not kept: no warning for it
        for part, cols in _column_parts(np, g, window, spatial, grid, stacked):
            rows = x[part] if grid is None else _on_grid(np, x[part], grid)
            rows = rows.reshape(len(cols), c, size).transpose(0, 2, 1)
            if stacked:
                _stacked_product_into(dx, part, wg, cols, grid, window)
                for row in range(kernel[0]):
                    by_row[:, row] += np.matmul(_kernel_row(cols, row, window, grid), rows).sum(0).reshape(f, -1, c)
            else:
                _product_into(np, dx, part, wg, cols[:, None], grid)
                total += np.matmul(cols, rows).sum(0)
    if not np.isfinite(total).all():  # where 0 * inf differs: the two-pass way
        return None
    dw = total.reshape(f, *kernel, c)[(slice(None), *(slice(None, None, -1),) * len(kernel))]
    return dx, np.moveaxis(dw, -1, 1).copy()


def _on_grid(xp, values, grid: tuple[int, ...]):
    """values (n, C, *O) laid on the grid of flat rows (Note [flat rows]) in a scratch buffer, zeros at the junk
    positions: only the junk is cleared, the rest is written once."""
    rows = _SCRATCH.array(xp, "rows", (*values.shape[:2], *grid), values)
    spatial = values.shape[2:]
    for i in range(1, len(grid)):
        rows[(Ellipsis, slice(spatial[i], None), *(slice(None),) * (len(grid) - 1 - i))] = 0
    rows[(Ellipsis, slice(None), *(slice(0, o) for o in spatial[1:]))] = values
    return rows


def _conv_weight(xp, g, x, win: Window, groups: int):
    """conv_w(g, x): the adjoint of conv(x, .), a weight of shape (F, C/groups, *K). On flat rows, g is
    laid on the same grid with zeros at the junk positions, unless x holds a non-finite value (0 * inf)."""
    n, f = g.shape[:2]
    out = g.shape[2:]
    ck = x.shape[1] // groups * math.prod(win.kernel)
    grid = _flat_grid(x, win, out, ck * groups, f)
    if grid is not None and not xp.isfinite(xp.sum(x)):
        grid = None
    # transposed: faster BLAS
    total = xp.zeros((groups, ck, f // groups), dtype=xp.result_type(g.dtype, x.dtype), device=g.device)
    for part, cols in _column_parts(xp, x, win, out, grid):
        m, size = cols.shape[0], cols.shape[-1]
        rows = g[part, ...] if grid is None else _on_grid(xp, g[part, ...], grid)
        rows = xp.reshape(rows, (m, groups, f // groups, size))
        total += xp.sum(xp.matmul(xp.reshape(cols, (m, groups, ck, size)), xp.matrix_transpose(rows)), axis=0)
    return xp.reshape(xp.matrix_transpose(total), (f, x.shape[1] // groups, *win.kernel))


def _transposed_size(spatial: Sequence[int], win: Window, output_padding: Sequence[int]) -> tuple[int, ...]:
    """Spatial size of conv_T's result: the input size of the convolution it is the adjoint of."""
    return tuple((o - 1) * s - lo - hi + dl * (k - 1) + 1 + op for o, s, (lo, hi), dl, k, op
                 in zip(spatial, win.stride, win.padding, win.dilation, win.kernel, output_padding))


# ============================================================================================
# Rows: convolution
# ============================================================================================


@defop("convolution", node="ConvolutionBackward0", inputs=("input", "weight", "bias"),
       params=("win", "groups", "transposed", "output_padding"),
       input="convolution_backward_op(grad, conj(input), conj(weight), win, groups, transposed, output_padding, "
             "grad_input_mask)[0]",
       weight="convolution_backward_op(grad, conj(input), conj(weight), win, groups, transposed, output_padding, "
             "grad_input_mask)[1]",
       bias="convolution_backward_op(grad, conj(input), conj(weight), win, groups, transposed, output_padding, "
             "grad_input_mask)[2]",
       jvp="conv_jvp(input_t, weight_t, bias_t, input, weight, win, groups, transposed, output_padding)")
def convolution_op(xp, x, w, b, win, groups, transposed, output_padding):
    y = _conv_transpose(xp, x, w, _transposed_size(x.shape[2:], win, output_padding), win, groups) if transposed \
        else _conv(xp, x, w, win, groups)
    if b is not None:
        y += xp.reshape(b, (-1, *(1,) * (y.ndim - 2)))
    return _in_backend_format(y, x, w)


def _in_backend_format(y, x, w):
    """y laid out as torch's CPU convolution backends lay out their results (ConvUtils.h's
    `_determine_backend_memory_format`): channels_last when the input's or the weight's strides suggest it (a
    `model.to(memory_format=torch.channels_last)`, an input made `.contiguous(memory_format=torch.channels_last)`),
    for the 2-d convolutions of every dtype (thnn's and mkldnn's rule), for the 3-d ones only where mkldnn runs them
    (float32 and complex64; Slow3d's results are row-major); else y as computed, row-major."""
    if not hasattr(y, "strides") or y.ndim not in (4, 5):
        return y
    fmt = channels_last if y.ndim == 4 else channels_last_3d
    if y.ndim == 5 and y.dtype not in (np.float32, np.complex64):
        return y
    if fmt not in (suggest_memory_format(x), suggest_memory_format(w)):
        return y
    return laid_out(y, fmt)  # a copy even when y already passes for channels_last: torch's strides of size-1 dims


# torch's convolution_backward: the three gradients of a convolution as the outputs of one node (grad_input_mask
# says which are wanted; Note [unwanted outputs]); its formulas are torch's _convolution_double_backward, with
# grads = (ggI, ggW, ggb), None where undefined: each gradient is bilinear, so its derivative in one operand is the
# adjoint map of the other (Note [im2col]), conj() of the fixed operand for complex numbers
@defop("convolution_backward", node="ConvolutionBackwardBackward0", inputs=("grad_output", "input", "weight"),
       params=("win", "groups", "transposed", "output_padding", "output_mask"), outputs=3, materialize_grads=False,
       grad_output="conv_double_grad_output(grads, conj(input), conj(weight), grad_output_shape, win, groups, "
                   "transposed, output_padding)",
       input="None if grads[1] is None else "
             "conv_input_grad(conj(grad_output), grads[1], input_shape, win, groups, transposed)",
       weight="None if grads[0] is None else conv_weight_grad(conj(grad_output), grads[0], win, groups, transposed)",
       jvp="conv_backward_jvp(grad_output_t, input_t, weight_t, grad_output, input, weight, win, groups, transposed)")
def convolution_backward_op(xp, g, x, w, win, groups, transposed, output_padding, output_mask):
    """(d/d input, d/d weight, d/d bias) of conv(x, w) + b, or of conv_T(x, w) + b (`transposed`), for the
    gradient g; an output output_mask does not ask for is a zero placeholder (Note [unwanted outputs])."""
    both = None
    if output_mask[0] and output_mask[1] and not transposed and groups == 1 and 2 * x.shape[1] >= g.shape[1] \
            and type(g) is type(x) is type(w) is np.ndarray and g.dtype == x.dtype == w.dtype \
            and g.dtype in (np.float32, np.float64):
        both = _conv_backward(g, x, w, win)  # Note [one im2col for both gradients]
    if both is not None:
        dx, dw = both
    else:
        dx = dw = None
        if output_mask[0]:
            dx = _conv(xp, g, w, win, groups)[(Ellipsis, *(slice(0, s) for s in x.shape[2:]))] if transposed \
                else _conv_transpose(xp, g, w, x.shape[2:], win, groups)
        if output_mask[1]:
            dw = _conv_weight(xp, x, g, win, groups) if transposed else _conv_weight(xp, g, x, win, groups)
    channels = w.shape[1] * groups if transposed else w.shape[0]
    db = xp.sum(g, axis=(0, *range(2, g.ndim))) if output_mask[2] else None
    dx, dw = (None if d is None else _in_backend_format(d, x, w) for d in (dx, dw))  # as torch's backends give them
    return tuple(_unwanted(xp, shape, g) if out is None else out
                 for out, shape in ((dx, x.shape), (dw, w.shape), (db, (channels,))))


def _unwanted(xp, shape: tuple, like):
    """The placeholder of a gradient nobody asked for: a zero broadcast to its shape, no memory (Note [unwanted
    outputs])."""
    return xp.broadcast_to(xp.zeros((), dtype=like.dtype, device=like.device), shape)


@defop("convolution_weight", node="ConvolutionBackwardBackward0", inputs=("grad_output", "input"),
       params=("win", "groups"),
       grad_output="conv_to(conj(input), grad, win, groups, grad_output_shape)",
       input="conv_input_grad(conj(grad_output), grad, input_shape, win, groups, False)",
       jvp="convolution_weight(grad_output_t, input, win, groups) + convolution_weight(grad_output, input_t, win, "
           "groups)")
def convolution_weight(xp, g, x, win, groups):
    return _conv_weight(xp, g, x, win, groups)


# ============================================================================================
# Rows: unfold / fold (im2col / col2im), pooling
# ============================================================================================


@defop("im2col", node="Im2ColBackward0", params=("win",), self="col2im_op(grad, self_shape[-2:], win)",
       jvp="im2col_op(self_t, win)")
def im2col_op(xp, x, win):
    """(*batch, C, *X) -> (*batch, C * prod(kernel), L): each window as a column."""
    d = len(win.kernel)
    out = _out_size(x.shape[x.ndim - d:], win)
    cols = xp.empty((*x.shape[:x.ndim - d], *win.kernel, *out), dtype=x.dtype, device=x.device)
    _fill_columns(xp, cols, x, win, _column_copies(win, out, None, ()), None)
    rows = x.shape[x.ndim - d - 1] * math.prod(win.kernel)  # named, not -1: a batch may be empty
    return xp.reshape(cols, (*x.shape[:x.ndim - d - 1], rows, math.prod(out)))


@defop("col2im", node="Col2ImBackward0", params=("output_size", "win"), self="im2col_op(grad, win)",
       jvp="col2im_op(self_t, output_size, win)")
def col2im_op(xp, cols, output_size, win):
    """The adjoint of im2col: add each column back to its window of an (*batch, C, *output_size) result."""
    channels = cols.shape[-2] // math.prod(win.kernel)  # named, not -1: a batch may be empty
    cols = xp.reshape(cols, (*cols.shape[:-2], channels, *win.kernel, *_out_size(output_size, win)))
    return _scatter_windows(xp, cols, output_size, win)


def _max_pool_forward(xp, x, win, out):
    """Largest value of each window and its flat index in the input plane, as torch picks it: the first
    of tied maxima, the last NaN, and never a padding position (an all -inf window points at its first
    real element)."""
    d = len(win.kernel)
    buf = x if not any(lo or hi for lo, hi in win.padding) else \
        _padded(xp, x, win.padding, -np.inf if D.kind(x) == "f" else np.iinfo(x.dtype).min)
    planes = [_window_at(buf, offset, win, out) for offset in _offsets(win)]  # one strided view per offset
    best = xp.maximum(planes[0], planes[1]) if len(planes) > 1 else A.copy(xp, planes[0])
    for plane in planes[2:]:  # NaN propagates, as torch's max pooling does
        best = _maximum_into(xp, best, plane)
    # the first maximum's offset = how many leading planes miss the maximum (cheaper than a where per plane),
    # counted in the smallest integer type that holds it
    missed = planes[0] != best
    arg = xp.astype(missed, D.native(xp, np.min_scalar_type(len(planes) - 1)))
    for plane in planes[1:-1]:
        missed &= plane != best
        arg += missed if _numpy_like(arg) else xp.astype(missed, arg.dtype)  # the standard adds one dtype
    if D.kind(x) == "f" and math.isnan(xp.sum(best)):  # a NaN sums to NaN: one pass, no mask
        for k, plane in enumerate(planes):
            arg = xp.where(plane != plane, k, arg)
    spatial = x.shape[x.ndim - d:]
    starts = [xp.reshape(xp.arange(o, device=x.device) * s - lo, (-1,) + (1,) * (d - 1 - i))
              for i, (o, s, (lo, _)) in enumerate(zip(out, win.stride, win.padding))]
    if not any(lo for lo, _ in win.padding):  # no window reaches outside: flat = window start + offset's flat
        row = [math.prod(spatial[i + 1:]) for i in range(d)]  # flat step of each spatial dim
        offsets = sum(i * dl * r for i, dl, r in zip(np.indices(win.kernel).reshape(d, -1), win.dilation, row))
        flat = xp.reshape(xp.take(xp.asarray(offsets, device=x.device), xp.reshape(arg, (-1,))), arg.shape)
        flat += sum(start * r for start, r in zip(starts, row))
        return best, flat
    flat, arg = 0, xp.astype(arg, xp.int64)
    for i, (size, start, dilation) in enumerate(zip(spatial, starts, win.dilation)):
        offset = (arg // math.prod(win.kernel[i + 1:])) % win.kernel[i]
        flat = flat * size + xp.clip(start + offset * dilation, 0, size - 1)
    return best, flat


def _numpy_like(array) -> bool:
    """Whether an array has NumPy's API beyond the standard (NumPy's and CuPy's): views, out= and casting
    between dtypes in place."""
    return hasattr(array, "strides")


def _maximum_into(xp, best, other):
    """maximum(best, other), written over `best` where the namespace writes in place (Note [batch parts])."""
    if _numpy_like(best):
        return xp.maximum(best, other, out=best)
    return xp.maximum(best, other)


@defop("max_pool2d_with_indices", node="MaxPool2DWithIndicesBackward0", params=("win", "out"),
       outputs=("result0", "result1"), differentiable_outputs=(0,),
       self="max_pool_backward_op(grads[0], result1._data, self_shape, len(out), windows_overlap(win))",
       jvp="(pick_op(self_t, result1._data, len(out), False), None)")
def max_pool_op(xp, x, win, out):
    return _max_pool_forward(xp, x, win, out)


max_pool3d_op = max_pool_op.alias("max_pool3d_with_indices", "MaxPool3DWithIndicesBackward0")


@defop("adaptive_max_pool2d", node="AdaptiveMaxPool2DBackward0", params=("out",), outputs=("result0", "result1"),
       differentiable_outputs=(0,),
       self="max_pool_backward_op(grads[0], result1._data, self_shape, len(out), True)",
       jvp="(pick_op(self_t, result1._data, len(out), True), None)")
def adaptive_max_pool_op(xp, x, out):
    d = len(out)
    lead, spatial = x.shape[:x.ndim - d], x.shape[x.ndim - d:]
    coords = []  # per dim: (O, L) input coordinates, the shorter windows padded by repeating their last element
    for size, o in zip(spatial, out):
        start = (np.arange(o) * size) // o
        end = -((-(np.arange(o) + 1) * size) // o)
        length = int((end - start).max())
        coords.append(xp.asarray(np.minimum(start[:, None] + np.arange(length), end[:, None] - 1).reshape(-1),
                                 device=x.device))
    lengths = [c.shape[0] // o for c, o in zip(coords, out)]
    cols = x
    for i, c in enumerate(coords):  # each dim's windows gathered: (*lead, O0*L0, O1*L1, ...)
        cols = xp.take(cols, c, axis=len(lead) + i)
    cols = xp.reshape(cols, (*lead, *itertools.chain(*zip(out, lengths))))
    n = len(lead)
    cols = xp.permute_dims(cols, (*range(n), *range(n, n + 2 * d, 2), *range(n + 1, n + 2 * d, 2)))
    cols = xp.reshape(cols, (*lead, *out, math.prod(lengths)))
    arg = xp.argmax(cols, axis=-1)
    values = xp.take_along_axis(cols, xp.expand_dims(arg, axis=-1), axis=-1)[..., 0]
    flat = 0
    for i, (c, length, size) in enumerate(zip(coords, lengths, spatial)):
        k = (arg // math.prod(lengths[i + 1:])) % length  # the maximum's offset in this dim's window
        rows = xp.reshape(xp.arange(out[i], device=x.device) * length, (-1,) + (1,) * (d - 1 - i))
        place = rows + k
        flat = flat * size + xp.reshape(xp.take(c, xp.reshape(place, (-1,))), place.shape)
    return values, xp.astype(flat, xp.int64)


adaptive_max_pool3d_op = adaptive_max_pool_op.alias("adaptive_max_pool3d", "AdaptiveMaxPool3DBackward0")


@defop("max_pool_backward", node="MaxPool2DWithIndicesBackwardBackward0", inputs=("grad_output",),
       params=("indices", "input_shape", "d", "repeats"), grad_output="pick_op(grad, indices, d, repeats)",
       jvp="max_pool_backward_op(grad_output_t, indices, input_shape, d, repeats)")
def max_pool_backward_op(xp, g, indices, input_shape, d, repeats):
    """Each output's gradient added to the input element it picked (`indices`: flat within each input plane);
    `repeats`: whether windows overlap, so that one element may be picked more than once."""
    planes = math.prod(input_shape[:len(input_shape) - d])
    size = math.prod(input_shape[len(input_shape) - d:])
    if repeats or not _numpy_like(g):  # the standard has no writes at index arrays
        flat = xp.reshape(xp.reshape(indices, (planes, -1)) + xp.arange(planes, device=g.device)[:, None] * size, (-1,))
        total = _sum_at(xp, flat, xp.reshape(g, (-1,)), planes * size)
    else:  # the result before the index temporary, which is then freed on top of the heap (Note [batch parts])
        total = xp.zeros(planes * size, dtype=g.dtype, device=g.device)
        total[(indices.reshape(planes, -1) + (xp.arange(planes) * size)[:, None]).reshape(-1)] = g.reshape(-1)
    return xp.reshape(total, input_shape)


def _sum_at(xp, flat, values, length: int):
    """The sum of `values` at each of `length` places by their flat index (a gather's adjoint): NumPy's (and
    CuPy's) bincount; the standard has no scatter, so there the values are sorted by place and each place adds
    its run of them, one gather per element of the longest run."""
    if _numpy_like(values):
        return xp.bincount(flat, weights=values, minlength=length).astype(values.dtype, copy=False)
    order = xp.argsort(flat, stable=True)
    places = xp.arange(length, device=flat.device)
    flat = xp.take(flat, order)
    first = xp.searchsorted(flat, places, side="left")
    count = xp.searchsorted(flat, places, side="right") - first
    padded = xp.concat([xp.take(values, order), xp.zeros(1, dtype=values.dtype, device=values.device)])
    total = xp.zeros(length, dtype=values.dtype, device=values.device)
    for j in range(int(xp.max(count)) if length else 0):  # the zero at the end where a run is shorter
        total += xp.take(padded, xp.where(count > j, first + j, flat.shape[0]))
    return total


# aten::max_pool2d_with_indices_backward called directly takes the pooled input too, which it reads nothing of:
# its gradient is zeros, and it makes the result require grad when the input does (torch's formula)
@defop("max_pool2d_with_indices_backward", node="MaxPool2DWithIndicesBackwardBackward0", inputs=("grad_output", "self"),
       params=("indices", "input_shape", "d", "repeats"), grad_output="pick_op(grad, indices, d, repeats)",
       self="zeros_like(grad)", jvp="max_pool_backward_op(grad_output_t, indices, input_shape, d, repeats)")
def max_pool_input_backward_op(xp, g, x, indices, input_shape, d, repeats):
    return max_pool_backward_op.forward(xp, g, indices, input_shape, d, repeats)


@defop("pick", node="GatherBackward0", params=("indices", "d", "repeats"),
       self="max_pool_backward_op(grad, indices, self_shape, d, repeats)", jvp="pick_op(self_t, indices, d, repeats)")
def pick_op(xp, x, indices, d, repeats):
    """The adjoint of max_pool_backward: each input plane's element at `indices`."""
    planes = math.prod(x.shape[:x.ndim - d])
    picked = xp.take_along_axis(xp.reshape(x, (planes, -1)), xp.reshape(indices, (planes, -1)), axis=1)
    return xp.reshape(picked, indices.shape)


@defop("avg_pool2d", node="AvgPool2DBackward0", params=("win", "out", "divisor"),
       self="avg_pool_backward_op(grad, self_shape, win, divisor)", jvp="avg_pool_op(self_t, win, out, divisor)")
def avg_pool_op(xp, x, win, out, divisor):
    buf = _padded(xp, x, win.padding, 0.0) if any(lo or hi for lo, hi in win.padding) else x
    offsets = _offsets(win)
    sums = A.copy(xp, _window_at(buf, next(offsets), win, out))
    for offset in offsets:
        sums += _window_at(buf, offset, win, out)
    return A.astype(xp, sums / _on_device(xp, divisor, x), x.dtype, copy=False)


avg_pool3d_op = avg_pool_op.alias("avg_pool3d", "AvgPool3DBackward0")


@defop("avg_pool_backward", node="AvgPool2DBackwardBackward0", inputs=("grad_output",),
       params=("input_shape", "win", "divisor"),
       grad_output="avg_pool_op(grad, win, grad_output_shape[len(grad_output_shape) - len(win.kernel):], divisor)",
       jvp="avg_pool_backward_op(grad_output_t, input_shape, win, divisor)")
def avg_pool_backward_op(xp, g, input_shape, win, divisor):
    d = len(win.kernel)
    share = A.astype(xp, g / _on_device(xp, divisor, g), g.dtype, copy=False)
    lead, out = share.shape[:share.ndim - d], share.shape[share.ndim - d:]
    cols = xp.broadcast_to(xp.reshape(share, (*lead, *(1,) * d, *out)), (*lead, *win.kernel, *out))
    return _scatter_windows(xp, cols, input_shape[len(input_shape) - d:], win)


def _on_device(xp, value, like):
    """A host (NumPy) array parameter on `like`'s device; a number as it is (a weak scalar in promotion)."""
    return xp.asarray(value, device=like.device) if isinstance(value, np.ndarray) else value


# ============================================================================================
# Rows: gathers and separable maps (padding, resampling), pixel shuffles
# ============================================================================================


@defop("gather_dims", node="ReflectionPad2DBackward0", params=("indices",),
       self="scatter_dims_op(grad, self_shape, indices)", jvp="gather_dims_op(self_t, indices)")
def gather_dims_op(xp, x, indices):
    """Along each of the last len(indices) dims, take the slices at `indices[i]` (an index array per dim)."""
    d = len(indices)
    for i, index in enumerate(indices):
        if index is not None:
            x = xp.take(x, xp.asarray(index, device=x.device), axis=x.ndim - d + i)
    return x


@defop("scatter_dims", node="ReflectionPad2DBackwardBackward0", inputs=("grad_output",),
       params=("input_shape", "indices"), grad_output="gather_dims_op(grad, indices)",
       jvp="scatter_dims_op(grad_output_t, input_shape, indices)")
def scatter_dims_op(xp, g, input_shape, indices):
    """The adjoint of `gather_dims`: add each slice back to the one it was taken from."""
    d = len(indices)
    for i in reversed(range(d)):
        if indices[i] is None:
            continue
        axis = g.ndim - d + i
        size = input_shape[len(input_shape) - d + i]
        zero = xp.zeros((*g.shape[:axis], 1, *g.shape[axis + 1:]), dtype=g.dtype, device=g.device)
        padded = xp.concat([g, zero], axis=axis)  # a zero slice at the end, for places with fewer sources
        sources = _sources(indices[i], size)
        out = xp.take(padded, xp.asarray(sources[0], device=g.device), axis=axis) if len(sources) else \
            xp.zeros((*g.shape[:axis], size, *g.shape[axis + 1:]), dtype=g.dtype, device=g.device)
        for source in sources[1:]:
            out += xp.take(padded, xp.asarray(source, device=g.device), axis=axis)
        g = out
    return g


def _sources(index: np.ndarray, size: int) -> np.ndarray:
    """The gathers whose sum is the adjoint of take(., index) along a dim of `size`: row j holds, for each place,
    the position of its j-th source in index (in order), or len(index) (a zero slice) where it has fewer."""
    counts = np.bincount(index, minlength=size)
    order = np.argsort(index, kind="stable")
    rank = np.arange(len(index)) - (np.cumsum(counts) - counts)[index[order]]
    sources = np.full((counts.max(initial=0), size), len(index))
    sources[rank, index[order]] = order
    return sources


GATHER_NODES = {f"{kind}{d}d": gather_dims_op.alias(f"{kind}{d}d", f"{node}{d}DBackward0")
                for kind, node in (("reflection_pad", "ReflectionPad"), ("replication_pad", "ReplicationPad"),
                                   ("upsample_nearest", "UpsampleNearest"),
                                   ("upsample_nearest_exact", "UpsampleNearestExact"))
                for d in (1, 2, 3)}
GATHER_NODES["circular_pad"] = gather_dims_op.alias("circular_pad", "CopySlices")


@defop("separable_map", node="UpsampleBilinear2DBackward0", params=("matrices",),
       self="separable_map_op(grad, transposed_matrices(matrices))", jvp="separable_map_op(self_t, matrices)")
def separable_map_op(xp, x, matrices):
    """Apply matrices[i] (O_i, X_i) along the i-th of the last len(matrices) dims."""
    d = len(matrices)
    if x.dtype == np.uint8:
        return _resampled_like_pil(xp, x, matrices)
    for i, m in enumerate(matrices):
        axis = x.ndim - d + i
        x = xp.moveaxis(xp.tensordot(x, xp.asarray(m, dtype=x.dtype, device=x.device), axes=([axis], [1])), -1, axis)
    return x


# Note [uint8 resampling]
# torch resizes a uint8 image (torchvision's Resize of a tensor) the way PIL does, in fixed point: each dim's weights
# rounded to integers at the most fractional bits that keep the largest under 2**15, the last dim resampled first,
# each pass rounded half up and saturated to 0..255 before the next. Floating-point weights with one rounding at the
# end differ from it by one in about a tenth of the pixels.
def _resampled_like_pil(xp, x, matrices):
    """uint8 resampling by fixed-point weights, the last dim first (Note [uint8 resampling])."""
    for i in reversed(range(len(matrices))):
        weights, bits = _fixed_point(matrices[i])
        axis = x.ndim - len(matrices) + i
        summed = xp.tensordot(x.astype(xp.int64), xp.asarray(weights, device=x.device), axes=([axis], [1]))
        x = xp.moveaxis(xp.clip((summed + (1 << (bits - 1))) >> bits, 0, 255).astype(xp.uint8), -1, axis)
    return x.copy()  # row-major, as torch's


def _fixed_point(weights: np.ndarray) -> tuple[np.ndarray, int]:
    """The weights as integers of `bits` fractional bits, the most (up to 22) that keep each under 2**15 (Note
    [uint8 resampling]); rounded half away from zero."""
    largest = float(np.abs(weights).max())
    bits = 0
    while bits < 22 and int(0.5 + largest * (1 << (bits + 1))) < 1 << 15:
        bits += 1
    scaled = weights * (1 << bits)
    return np.trunc(scaled + np.where(scaled < 0, -0.5, 0.5)).astype(np.int64), bits


SEPARABLE_NODES = {name: separable_map_op.alias(name, node) for name, node in (
    ("upsample_linear1d", "UpsampleLinear1DBackward0"), ("upsample_bilinear2d", "UpsampleBilinear2DBackward0"),
    ("upsample_bicubic2d", "UpsampleBicubic2DBackward0"), ("upsample_trilinear3d", "UpsampleTrilinear3DBackward0"),
    ("upsample_bilinear2d_aa", "UpsampleBilinear2DAaBackward0"),
    ("upsample_bicubic2d_aa", "UpsampleBicubic2DAaBackward0"),
    ("upsample_lanczos2d_aa", "UpsampleLanczos2DAaBackward0"),
    ("adaptive_avg_pool2d", "AdaptiveAvgPool2DBackward0"), ("adaptive_avg_pool3d", "AdaptiveAvgPool3DBackward0"))}


# the kernels that allocate their result in the input's suggested memory format (a channels_last input stays so)
for _name in ("upsample_bilinear2d", "upsample_bicubic2d", "upsample_bilinear2d_aa", "upsample_bicubic2d_aa",
              "upsample_lanczos2d_aa", "adaptive_avg_pool2d"):
    SEPARABLE_NODES[_name].forward = keeping_channels_last(SEPARABLE_NODES[_name].forward)
for _name in ("reflection_pad2d", "replication_pad2d", "upsample_nearest2d", "upsample_nearest_exact2d"):
    GATHER_NODES[_name].forward = keeping_channels_last(GATHER_NODES[_name].forward)


@defop("constant_pad_nd", node="ConstantPadNdBackward0", params=("pad", "value"),
       self="constant_pad_nd_op(grad, tuple(-p for p in pad), 0)", jvp="constant_pad_nd_op(self_t, pad, 0)")
def constant_pad_nd_op(xp, x, pad, value):
    """torch's pad list: (last dim low, last dim high, dim -2 low, ...); negative entries crop."""
    d = len(pad) // 2
    pairs = [(pad[2 * (d - 1 - i)], pad[2 * (d - 1 - i) + 1]) for i in range(d)]
    crop = tuple(slice(max(-lo, 0), x.shape[x.ndim - d + i] - max(-hi, 0)) for i, (lo, hi) in enumerate(pairs))
    return _padded(xp, x[(Ellipsis, *crop)], [(max(lo, 0), max(hi, 0)) for lo, hi in pairs], value)


constant_pad_nd_op.forward = keeping_channels_last(constant_pad_nd_op.forward)
avg_pool_op.forward = keeping_channels_last(avg_pool_op.forward)


@defop("pixel_shuffle", params=("factor",), self="pixel_unshuffle_op(grad, factor)",
       jvp="pixel_shuffle_op(self_t, factor)")
def pixel_shuffle_op(xp, x, r):
    *lead, c, h, w = x.shape
    x = xp.reshape(x, (*lead, c // (r * r), r, r, h, w))
    n = len(lead)
    x = xp.permute_dims(x, (*range(n), n, n + 3, n + 1, n + 4, n + 2))
    return xp.reshape(x, (*lead, c // (r * r), h * r, w * r))


@defop("pixel_unshuffle", params=("factor",), self="pixel_shuffle_op(grad, factor)",
       jvp="pixel_unshuffle_op(self_t, factor)")
def pixel_unshuffle_op(xp, x, r):
    *lead, c, h, w = x.shape
    x = xp.reshape(x, (*lead, c, h // r, r, w // r, r))
    n = len(lead)
    x = xp.permute_dims(x, (*range(n), n, n + 2, n + 4, n + 1, n + 3))
    return xp.reshape(x, (*lead, c * r * r, h // r, w // r))


pixel_shuffle_op.forward = keeping_channels_last(pixel_shuffle_op.forward)
pixel_unshuffle_op.forward = keeping_channels_last(pixel_unshuffle_op.forward)


# ============================================================================================
# Rows: affine grids and grid sampling
# ============================================================================================


@defop("affine_grid_generator", inputs=("theta",), params=("size", "align_corners"),
       theta="matmul(grad.reshape(grad.shape[0], -1, grad.shape[-1]).mT, "
             "constant_like(affine_base(size, align_corners, grad.dtype), grad).flatten(0, -2))",
       jvp="affine_grid_generator_op(theta_t, size, align_corners)")
def affine_grid_generator_op(xp, theta, size, align_corners):
    """Each point of the base grid (*size, k), homogeneous coordinates, mapped by each theta (N, k-1, k): the k
    products summed in order, each rounded, as torch's bmm of k-long rows does (a matmul may sum otherwise). The
    node saves the size and align_corners, as torch's: the base grid is made again for the backward."""
    base = affine_base(size, align_corners, D.of_array(theta))
    k = base.shape[-1]
    flat = xp.asarray(base.reshape(1, -1, k), device=theta.device)
    points = flat[..., :1] * theta[:, None, :, 0]
    for c in range(1, k):
        points = points + flat[..., c:c + 1] * theta[:, None, :, c]
    return xp.reshape(points, (theta.shape[0], *base.shape[:-1], theta.shape[1]))


@defop("grid_sampler_2d", node="GridSampler2DBackward0", inputs=("input", "grid"),
       params=("mode", "padding_mode", "align_corners"),
       input="grid_sample_input_grad(grad, input, grid, mode, padding_mode, align_corners)",
       grid="grid_sample_grid_grad(grad, input, grid, mode, padding_mode, align_corners)",
       jvp="grid_sample_jvp(input_t, grid_t, input, grid, mode, padding_mode, align_corners)")
def grid_sampler_op(xp, x, grid, mode, padding_mode, align_corners):
    n, c = x.shape[:2]
    out = xp.zeros((n, c, math.prod(grid.shape[1:-1])), dtype=x.dtype, device=x.device)
    flat_x = xp.reshape(x, (n, c, -1))
    fused = grid.shape[-1] == 2 and mode == "bilinear"  # Note [grid_sample's fused multiply-adds]
    for corner in _grid_corners(xp, grid, x.shape[2:], mode, padding_mode, align_corners):
        picked = xp.take_along_axis(flat_x, corner.index[:, None, :], axis=2)
        weight = (xp.astype(corner.inside, x.dtype) * corner.weight)[:, None, :]
        out = fma(picked, weight, out, xp) if fused else out + picked * weight
    return xp.reshape(out, (n, c, *grid.shape[1:-1]))


grid_sampler_3d_op = grid_sampler_op.alias("grid_sampler_3d", "GridSampler3DBackward0")


class _Corner(NamedTuple):
    """One of the input points a grid sample reads: flat index (N, P), whether it is inside the input, its
    interpolation weight, and the weight's slopes along each grid component (x first; None for nearest)."""

    index: object
    inside: object
    weight: object
    slopes: tuple | None


def _reflect(xp, coord, low2: int, high2: int):
    """torch's reflect_coordinates: fold coord into [low2/2, high2/2]; also d(result)/d(coord) (+-1)."""
    if low2 == high2:
        return xp.zeros_like(coord), xp.zeros_like(coord)
    low, span = low2 / 2, (high2 - low2) / 2
    shifted = coord - low
    sign = xp.where(shifted < 0, -1.0, xp.ones_like(shifted))
    shifted = xp.abs(shifted)
    extra = xp.remainder(shifted, span)  # C's fmod: shifted >= 0
    odd = xp.remainder(xp.floor(shifted / span), 2) == 1
    return xp.where(odd, span - extra + low, extra + low), xp.where(odd, -sign, sign)


# Note [grid_sample's fused multiply-adds]
# torch's CPU grid_sample of images (4-d input) is the vectorized kernel of native/cpu/GridSamplerKernel.cpp,
# which the compiler builds with fused multiply-adds on AVX2 and AVX-512: the unnormalised coordinate
# (grid + 1) * (size / 2) - 0.5 (without align_corners) rounds once, and bilinear's sum
# nw_val * nw + ne_val * ne + sw_val * sw + se_val * se is a chain of fmas from the first product. Rounded twice,
# a coordinate that should land on a pixel centre lands an ulp to one side of it, and floor() picks the other
# pair of neighbours: the values agree but the slopes (the grid's gradient) differ, and a spatial transformer
# starting at the identity sits on exactly those centres. Volumes (5-d input) take the scalar kernel of
# native/GridSampler.cpp, built without fma: ((grid + 1) * size - 1) / 2, the weights (low + 1 - x) or (x - low)
# multiplied x * y * z, summed as written. Bicubic's coefficients and sums, also fused there, are left rounded as
# written.
def _source(xp, coord, size: int, padding_mode: str, align_corners: bool, fused: bool):
    """torch's grid_sampler_compute_source_index: the input coordinate a grid value points at, and its
    derivative with respect to the grid value; `fused` for the image kernel's rounding (Note [grid_sample's
    fused multiply-adds])."""
    scale = (size - 1) / 2 if align_corners else size / 2
    if align_corners:
        coord = (coord + 1) * (size - 1) / 2
    elif fused:
        coord = fma(coord + 1, size / 2, -0.5, xp)
    else:
        coord = ((coord + 1) * size - 1) / 2
    slope = xp.full(coord.shape, scale, dtype=coord.dtype, device=coord.device)
    if padding_mode == "reflection":
        coord, sign = _reflect(xp, coord, 0, 2 * (size - 1)) if align_corners else \
            _reflect(xp, coord, -1, 2 * size - 1)
        slope = slope * sign
    if padding_mode in ("border", "reflection"):
        inside = (coord > 0) & (coord < size - 1)
        coord, slope = xp.clip(coord, 0, size - 1), xp.where(inside, slope, 0.0)
    return coord, slope


_GRID_CUBIC_A = -0.75  # torch's bicubic convolution constant


def _grid_cubic_weights(t):
    """The bicubic weights of the taps at -1, 0, 1, 2 for the fraction t, and their derivatives in t (arrays or
    tensors alike)."""
    a = _GRID_CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def near_slope(x):
        return (3 * (a + 2) * x - 2 * (a + 3)) * x

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    def far_slope(x):
        return (3 * a * x - 10 * a) * x + 8 * a

    return ([far(t + 1), near(t), near(1 - t), far(2 - t)],
            [far_slope(t + 1), near_slope(t), -near_slope(1 - t), -far_slope(2 - t)])


def _tap_coordinate(xp, coord, size: int, padding_mode: str, align_corners: bool):
    """A bicubic tap's integer coordinate after padding (torch's compute_coordinates on it, then truncation)."""
    if padding_mode == "reflection":
        coord = _reflect(xp, coord, 0, 2 * (size - 1))[0] if align_corners else \
            _reflect(xp, coord, -1, 2 * size - 1)[0]
    if padding_mode in ("border", "reflection"):
        coord = xp.clip(coord, 0, size - 1)
    return xp.astype(coord, xp.int64)


def _grid_corners(xp, grid, spatial, mode: str, padding_mode: str, align_corners: bool, as_tensors: bool = False):
    """The input points each grid position reads, with weights: 2^d for (bi/tri)linear, one for nearest, 16 for
    bicubic. With `as_tensors`, `grid` is a Tensor and weights and slopes are differentiable functions of it."""
    d = len(spatial)
    values = grid._data if as_tensors else grid
    n = values.shape[0]
    options = []  # per spatial dim (input order): [(integer coordinate, weight factor, factor's slope)]
    for k, size in enumerate(spatial):
        v = xp.reshape(values[..., d - 1 - k], (n, -1))  # the grid's components run x (the last dimension) first
        # the bicubic taps are padded one by one, the source coordinate is not
        coord, slope = _source(xp, v, size, "zeros" if mode == "bicubic" else padding_mode, align_corners, d == 2)
        exact = coord
        if as_tensors:  # the coordinate as a function of the grid (its slope is piecewise constant)
            exact = (grid[..., d - 1 - k].reshape(n, -1) * constant_like(slope, grid)
                     + constant_like(coord - v * slope, grid))
            slope = constant_like(slope, grid)
        if mode == "nearest":
            options.append([(xp.astype(xp.round(coord), xp.int64), 1.0, None)])
            continue
        low = xp.floor(coord)
        fraction = exact - (constant_like(low, grid) if as_tensors else low)
        if mode == "bicubic":
            weights, slopes = _grid_cubic_weights(fraction)
            options.append([(_tap_coordinate(xp, low + j - 1, size, padding_mode, align_corners), w, s * slope)
                            for j, (w, s) in enumerate(zip(weights, slopes))])
        else:  # the low neighbour's weight: 1 - fraction in the image kernel, (low + 1) - coordinate in the volume one
            below = 1 - fraction if d == 2 else (constant_like(low + 1, grid) if as_tensors else low + 1) - exact
            options.append([(xp.astype(low, xp.int64), below, -slope),
                            (xp.astype(low, xp.int64) + 1, fraction, slope)])
    corners = []
    for choice in itertools.product(*options):
        index, inside = _flat_index(xp, [c for c, _, _ in choice], spatial)
        factors = [f for _, f, _ in choice]
        ordered = factors if d == 2 else factors[::-1]  # torch multiplies y * x for images, x * y * z for volumes
        weight = math.prod(ordered[1:], start=ordered[0])
        slopes = None
        if mode != "nearest":  # d weight / d component (d - 1 - k): the k-th factor's slope times the others
            per_dim = [math.prod([f for j, f in enumerate(factors) if j != k], start=choice[k][2]) for k in range(d)]
            slopes = tuple(reversed(per_dim))
        if mode == "nearest" and as_tensors:
            weight = constant_like(xp.ones(index.shape, dtype=values.dtype, device=values.device), grid)
        corners.append(_Corner(index, inside, weight, slopes))
    return corners


def _flat_index(xp, coords: list, spatial: Sequence[int]) -> tuple:
    """The flat index into the input of integer coordinates (one array per dim), 0 where any is outside; and
    whether all are inside."""
    inside, index = True, 0
    for c, size in zip(coords, spatial):
        inside = inside & (c >= 0) & (c < size)
        index = index * size + xp.clip(c, 0, size - 1)
    return xp.where(inside, index, 0), inside


# ============================================================================================
# Formula helpers
# ============================================================================================


def conv_backward_jvp(grad_output_t: Tensor, input_t: Tensor, weight_t: Tensor, grad_output: Tensor,
                      input: Tensor, weight: Tensor, win: Window, groups: int, transposed: bool) -> tuple:
    """Forward mode of convolution_backward, bilinear in (grad_output, input) and in (grad_output, weight)."""
    shape = input.shape
    return (conv_input_grad(grad_output_t, weight, shape, win, groups, transposed)
            + conv_input_grad(grad_output, weight_t, shape, win, groups, transposed),
            conv_weight_grad(grad_output_t, input, win, groups, transposed)
            + conv_weight_grad(grad_output, input_t, win, groups, transposed),
            grad_output_t.sum([0, *range(2, grad_output_t.ndim)]))


def conv_double_grad_output(grads: tuple, input: Tensor, weight: Tensor, shape: tuple, win: Window, groups: int,
                            transposed: bool, output_padding: tuple | None) -> Tensor | None:
    """d/d grad_output of convolution_backward: conv(ggI, weight) + conv(input, ggW) + ggb, each term only where its
    gradient is defined (conv_T for a transposed convolution)."""
    ggi, ggw, ggb = grads
    if ggi is None and ggw is None:
        return None if ggb is None else ggb.reshape(-1, *(1,) * (len(shape) - 2)).expand(shape)
    out = convolution_op(*((ggi, weight) if ggi is not None else (input, ggw)), ggb, win, groups, transposed,
                         output_padding)
    if ggi is not None and ggw is not None:
        out = out + convolution_op(input, ggw, None, win, groups, transposed, output_padding)
    return out


def conv_input_grad(grad: Tensor, weight: Tensor, input_shape: tuple, win: Window, groups: int,
                    transposed: bool) -> Tensor:
    """d/d input: conv_T of the gradient for a convolution, conv for a transposed one."""
    if transposed:
        return conv_to(grad, weight, win, groups, input_shape)
    size = _transposed_size(grad.shape[2:], win, (0,) * len(win.kernel))
    return convolution_op(grad, weight, None, win, groups, True, tuple(x - s for x, s in zip(input_shape[2:], size)))


def conv_to(input: Tensor, weight: Tensor, win: Window, groups: int, shape: Sequence[int]) -> Tensor:
    """conv(input, weight) as the adjoint of a transposed convolution whose input had `shape`: an
    output_padding gives the convolution positions past that input, which are cropped."""
    out = convolution_op(input, weight, None, win, groups, False, None)
    if tuple(out.shape[2:]) == tuple(shape[2:]):
        return out
    return out[(Ellipsis, *(slice(0, x) for x in shape[2:]))]


def conv_weight_grad(grad: Tensor, input: Tensor, win: Window, groups: int, transposed: bool) -> Tensor:
    """d/d weight: conv_w(grad, input), or conv_w(input, grad) for a transposed convolution."""
    return convolution_weight(input, grad, win, groups) if transposed else convolution_weight(grad, input, win, groups)


def conv_jvp(input_t: Tensor, weight_t: Tensor, bias_t: Tensor | None, input: Tensor, weight: Tensor, win: Window,
             groups: int, transposed: bool, output_padding: tuple | None) -> Tensor:
    """Forward mode of the bilinear convolution: conv(dx, w) + conv(x, dw) + db."""
    out = (convolution_op(input_t, weight, None, win, groups, transposed, output_padding)
           + convolution_op(input, weight_t, None, win, groups, transposed, output_padding))
    if isinstance(bias_t, Tensor):
        out = out + bias_t.reshape(-1, *(1,) * (out.ndim - 2))
    return out


def constant_like(array: np.ndarray, like: Tensor) -> Tensor:
    """A constant tensor (no grad) in `like`'s dtype."""
    xp = namespace(like._data)
    return _wrap(xp.asarray(array, dtype=like._data.dtype, device=like._data.device))


def _corner_values(input: Tensor, corner: _Corner) -> Tensor:
    """input at a corner's points, (N, C, P), zero outside."""
    n, c = input.shape[:2]
    index = constant_like(corner.index, input).long().unsqueeze(1).expand(n, c, corner.index.shape[1])
    return input.reshape(n, c, -1).gather(2, index) * constant_like(corner.inside, input).unsqueeze(1)


def grid_sample_input_grad(grad: Tensor, input: Tensor, grid: Tensor, mode: str, padding_mode: str,
                           align_corners: bool) -> Tensor:
    """Each output's gradient spread back to the points it read, by their weights."""
    n, c = input.shape[:2]
    g = grad.reshape(n, c, -1)
    total = zeros((n, c, math.prod(input.shape[2:])), dtype=grad.dtype, device=grad.device)
    for corner in _grid_corners(namespace(grid._data), grid, input.shape[2:], mode, padding_mode, align_corners, True):
        index = constant_like(corner.index, input).long().unsqueeze(1).expand(n, c, corner.index.shape[1])
        share = g * (corner.weight * constant_like(corner.inside, grid)).unsqueeze(1)
        total = total.scatter_add(2, index, share)
    return total.reshape(input.shape)


def grid_sample_grid_grad(grad: Tensor, input: Tensor, grid: Tensor, mode: str, padding_mode: str,
                          align_corners: bool) -> Tensor:
    """d out / d grid: the corner values times the weights' slopes, summed over channels."""
    if mode == "nearest":  # piecewise constant in the grid
        return grid * 0
    g = grad.reshape(*grad.shape[:2], -1)
    components = [0] * grid.shape[-1]
    for corner in _grid_corners(namespace(grid._data), grid, input.shape[2:], mode, padding_mode, align_corners, True):
        read = (g * _corner_values(input, corner)).sum(1)
        components = [total + read * slope for total, slope in zip(components, corner.slopes)]
    return stack(components, -1).reshape(grid.shape)


def grid_sample_jvp(input_t: Tensor, grid_t: Tensor, input: Tensor, grid: Tensor, mode: str, padding_mode: str,
                    align_corners: bool) -> Tensor:
    n, c = input.shape[:2]
    out = 0
    tangents = [grid_t[..., k].reshape(n, -1) for k in range(grid.shape[-1])]
    for corner in _grid_corners(namespace(grid._data), grid, input.shape[2:], mode, padding_mode, align_corners, True):
        out = out + _corner_values(input_t, corner) * corner.weight.unsqueeze(1)
        if corner.slopes is not None:
            moved = sum(slope * t for slope, t in zip(corner.slopes, tangents))
            out = out + _corner_values(input, corner) * moved.unsqueeze(1)
    return out.reshape(n, c, *grid.shape[1:-1])


def windows_overlap(win: Window) -> bool:
    """Whether neighbouring windows share input elements (a stride shorter than the kernel's extent)."""
    return any(s < dl * (k - 1) + 1 for s, dl, k in zip(win.stride, win.dilation, win.kernel))


def transposed_matrices(matrices: tuple) -> tuple:
    return tuple(m.T for m in matrices)


# ============================================================================================
# Public functions: argument handling in torch's words
# ============================================================================================


def _ntuple(value: int | Sequence[int], d: int, name: str, op: str = "convolution") -> tuple[int, ...]:
    """An int or a sequence of d ints, as d ints."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * d
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * d
    if len(value) != d:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {d} values to match the "
                           f"{op} dimensions, but got {name}={list(value)}")
    return value


def _batched(input: Tensor, d: int, name: str) -> tuple[Tensor, bool]:
    """Inputs without a batch dim get one (removed again from the result, as torch does)."""
    nd = input._data.ndim
    if nd not in (d + 1, d + 2):
        raise RuntimeError(f"Expected {d + 1}D (unbatched) or {d + 2}D (batched) input to {name}, but got input of "
                           f"size: {list(input.shape)}")
    return (input, False) if nd == d + 2 else (input.unsqueeze(0), True)


def _shape_str(shape: Sequence[int]) -> str:
    return " x ".join(str(n) for n in shape)


def _conv_padding(padding: str | int | Sequence[int], d: int, stride: tuple, dilation: tuple,
                  kernel: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """torch's padding argument ('valid', 'same', ints) as (low, high) pairs; 'same' puts an odd extra at the end."""
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * d
        if padding != "same":
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        totals = [dl * (k - 1) for dl, k in zip(dilation, kernel)]
        if any(t % 2 for t in totals):
            warn_once_at_user("Using padding='same' with even kernel lengths and odd dilation may require a "
                              "zero-padded copy of the input be created (Triggered internally at "
                              "/__w/pytorch/pytorch/aten/src/ATen/native/Convolution.cpp:1101.)")
        return tuple((t // 2, t - t // 2) for t in totals)
    pads = _ntuple(padding, d, "padding")
    if any(p < 0 for p in pads):
        raise RuntimeError("negative padding is not supported")
    return tuple((p, p) for p in pads)


def _convolution(d: int, name: str, input: Tensor, weight: Tensor, bias: Tensor | None, stride: object,
                 padding: object, dilation: object, groups: int, transposed: bool = False,
                 output_padding: object = 0) -> Tensor:
    """Checks and geometry shared by conv{1,2,3}d and conv_transpose{1,2,3}d."""
    input, unbatched = _batched(input, d, name)
    w = weight._data
    if w.ndim != d + 2:
        raise RuntimeError(f"expected stride to be a single integer value or a list of {w.ndim - 2} values to match "
                           f"the convolution dimensions, but got stride={list(_ntuple(stride, d, 'stride'))}")
    stride_t = _ntuple(stride, d, "stride")
    dilation_t = _ntuple(dilation, d, "dilation")
    if any(s <= 0 for s in stride_t):
        raise RuntimeError("non-positive stride is not supported")
    if any(dl <= 0 for dl in dilation_t):  # torch's 1-d convolutions run as 2-d ones of height 1
        raise RuntimeError(f"dilation should be greater than zero, but got {[1] * (d == 1) + list(dilation_t)}")
    kernel = w.shape[2:]
    if 0 in kernel:
        raise RuntimeError("kernel size should be greater than zero, but got" + (
            f": {' x '.join(map(str, kernel))} (TxHxW)" if d == 3 else " "
            f"kernel_height: {kernel[0] if d == 2 else 1} kernel_width: {kernel[-1]}"))
    pads = _conv_padding(padding, d, stride_t, dilation_t, kernel)
    channels = input._data.shape[1]
    if transposed:
        if channels != w.shape[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
                               f"{list(input.shape)} to have {w.shape[0]} channels, but got {channels} channels "
                               "instead")
        out_channels = w.shape[1] * groups
    else:
        if channels != w.shape[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                               f"{list(input.shape)} to have {w.shape[1] * groups} channels, but got {channels} "
                               "channels instead")
        out_channels = w.shape[0]
        padded = tuple(x + lo + hi for x, (lo, hi) in zip(input._data.shape[2:], pads))
        extent = tuple(dl * (k - 1) + 1 for dl, k in zip(dilation_t, kernel))
        if any(p < e for p, e in zip(padded, extent)):
            raise RuntimeError(f"Calculated padded input size per channel: ({_shape_str(padded)}). Kernel size: "
                               f"({_shape_str(extent)}). Kernel size can't be greater than actual input size")
    if bias is not None and (bias._data.ndim != 1 or bias._data.shape[0] != out_channels):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
                           f"{out_channels} elements, but got bias of size {list(bias.shape)} instead")
    win = Window(tuple(kernel), stride_t, pads, dilation_t)
    extra = None
    if transposed:
        extra = _ntuple(output_padding, d, "output_padding")
        if any(op >= s and op >= dl for op, s, dl in zip(extra, stride_t, dilation_t)):
            # torch runs a 1-d transposed convolution as a 2-d one of height 1, and reports it so
            shown = [(0, *extra), (1, *stride_t), (1, *dilation_t)] if d == 1 else [extra, stride_t, dilation_t]
            names = ("depth", "height", "width") if d == 3 else ("height", "width")
            raise RuntimeError("output padding must be smaller than either stride or dilation, but got " + " ".join(
                f"{what}_{n}: {v}" for what, values in zip(("output_padding", "stride", "dilation"), shown)
                for n, v in zip(names, values)))
        size = _transposed_size(input._data.shape[2:], win, extra)
        if min(size, default=1) <= 0:  # shown as torch shows it, a 1-d one as 2-d of height 1
            lead = (1,) * (d == 1)
            raise RuntimeError(f"Given input size per channel: ({_shape_str(lead + input._data.shape[2:])}). "
                               f"Calculated output size per channel: ({_shape_str(lead + size)}). Output size is "
                               "too small")
    _check_dtypes(input, weight, bias, win, groups, transposed)
    out = apply(convolution_op, (input, weight, bias), (win, groups, transposed, extra))
    return out.squeeze(0) if unbatched else out


# Note [convolution dtypes]
# torch convolves operands of one dtype only, and its refusal of a weight or bias of another dtype (a model
# moved to double given float input) is worded by the backend it picked: a non-transposed convolution first
# checks its bias in C++ type names ("Input type (float) and bias type (double)"); oneDNN (bfloat16 input,
# and float32 input by _uses_onednn's size rule) names the legacy tensor types; the native kernels say
# "expected scalar type Float but found Double" of the weight and let a transposed convolution's bias of
# another dtype through. The size rule also asks for several threads when a 1x1 kernel, unstrided and
# undilated, meets a batch under 16; torch's default on any machine of more than one core is taken, so that
# part always holds. For half-precision inputs torch's choice depends on the CPU (oneDNN only where it has kernels
# for the dtype: AVX-512 for bfloat16, AVX512-FP16 or AMX-FP16 for float16); retrograd words them as on the
# common host, with bfloat16 kernels and no float16 ones, whatever machine it runs on.


def _check_dtypes(input: Tensor, weight: Tensor, bias: Tensor | None, win: Window, groups: int,
                  transposed: bool) -> None:
    """torch's refusal of a weight or bias whose dtype is not the input's (Note [convolution dtypes])."""
    it, wt, bt = input.dtype, weight.dtype, None if bias is None else bias.dtype
    if wt is it and bt in (None, it) or transposed and it in (D.uint16, D.uint32, D.uint64):
        return  # the transposed kernels refuse the wide unsigned types first (ops/unsigned.py)
    if not transposed and bt not in (None, it):
        raise RuntimeError(f"Input type ({D.CPP_TYPE_NAMES[it.name]}) and bias type ({D.CPP_TYPE_NAMES[bt.name]}) "
                           "should be the same")
    if _uses_onednn(input, weight, win, groups):
        for name, dt in (("weight", wt), ("bias", bt)):
            if dt not in (None, it):
                raise RuntimeError(f"Input type ({D.aten_type_name(it)}) and {name} type ({D.aten_type_name(dt)}) "
                                   f"should be the same or input should be a MKLDNN tensor and {name} is a dense "
                                   "tensor")
    elif wt is not it:
        raise RuntimeError(f"expected scalar type {D.scalar_type_name(it)} but found {D.scalar_type_name(wt)}")


def _uses_onednn(input: Tensor, weight: Tensor, win: Window, groups: int) -> bool:
    """Whether torch's CPU convolution picks oneDNN: always for bfloat16, for float32 by its size rule on the
    operands seen as 2-d (a 1-d convolution has height 1)."""
    if input.dtype is D.bfloat16:
        return True
    if input.dtype is not D.float32:
        return False
    shape, kernel = input._data.shape, weight._data.shape[2:]
    if len(kernel) == 1:
        shape, kernel = (*shape[:2], 1, shape[2]), (1, *kernel)
    return groups > 1 or (kernel[-1] > 3 and kernel[-2] > 3) or shape[0] > 1 or math.prod(shape[:4]) > 20480


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | Sequence[int] = 1,
           padding: str | int | Sequence[int] = 0, dilation: int | Sequence[int] = 1, groups: int = 1) -> Tensor:
    """1-d convolution (cross-correlation) of (N, C, L) with (F, C/groups, K) weights."""
    return _convolution(1, "conv1d", input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | Sequence[int] = 1,
           padding: str | int | Sequence[int] = 0, dilation: int | Sequence[int] = 1, groups: int = 1) -> Tensor:
    """2-d convolution of (N, C, H, W) with (F, C/groups, kH, kW) weights (one im2col matmul per group).

    >>> conv2d(randn(2, 3, 5, 5), randn(4, 3, 3, 3), padding="same").shape
    torch.Size([2, 4, 5, 5])
    """
    return _convolution(2, "conv2d", input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | Sequence[int] = 1,
           padding: str | int | Sequence[int] = 0, dilation: int | Sequence[int] = 1, groups: int = 1) -> Tensor:
    """3-d convolution of (N, C, D, H, W) with (F, C/groups, kD, kH, kW) weights."""
    return _convolution(3, "conv3d", input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | Sequence[int] = 1,
                     padding: int | Sequence[int] = 0, output_padding: int | Sequence[int] = 0, groups: int = 1,
                     dilation: int | Sequence[int] = 1) -> Tensor:
    """The adjoint of conv1d in its input ("deconvolution"); weight (C_in, C_out/groups, K)."""
    return _convolution(1, "conv_transpose1d", input, weight, bias, stride, padding, dilation, groups, True,
                        output_padding)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | Sequence[int] = 1,
                     padding: int | Sequence[int] = 0, output_padding: int | Sequence[int] = 0, groups: int = 1,
                     dilation: int | Sequence[int] = 1) -> Tensor:
    """The adjoint of conv2d in its input ("deconvolution"); weight (C_in, C_out/groups, kH, kW)."""
    return _convolution(2, "conv_transpose2d", input, weight, bias, stride, padding, dilation, groups, True,
                        output_padding)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | Sequence[int] = 1,
                     padding: int | Sequence[int] = 0, output_padding: int | Sequence[int] = 0, groups: int = 1,
                     dilation: int | Sequence[int] = 1) -> Tensor:
    """The adjoint of conv3d in its input; weight (C_in, C_out/groups, kD, kH, kW)."""
    return _convolution(3, "conv_transpose3d", input, weight, bias, stride, padding, dilation, groups, True,
                        output_padding)


def _fold_window(kernel_size: object, dilation: object, padding: object, stride: object) -> Window:
    pads = _ntuple(padding, 2, "padding", "im2col")
    return Window(_ntuple(kernel_size, 2, "kernel_size", "im2col"), _ntuple(stride, 2, "stride", "im2col"),
                  tuple((p, p) for p in pads), _ntuple(dilation, 2, "dilation", "im2col"))


def unfold(input: Tensor, kernel_size: int | Sequence[int], dilation: int | Sequence[int] = 1,
           padding: int | Sequence[int] = 0, stride: int | Sequence[int] = 1) -> Tensor:
    """im2col: (N, C, H, W) -> (N, C*kH*kW, L), every sliding block as a column."""
    if input._data.ndim not in (3, 4):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    return apply(im2col_op, (input,), (_fold_window(kernel_size, dilation, padding, stride),))


def fold(input: Tensor, output_size: int | Sequence[int], kernel_size: int | Sequence[int],
         dilation: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
         stride: int | Sequence[int] = 1) -> Tensor:
    """col2im: ``(N, C*kH*kW, L) -> (N, C, *output_size)``, summing overlapping blocks (the adjoint of unfold)."""
    win = _fold_window(kernel_size, dilation, padding, stride)
    size = _ntuple(output_size, 2, "output_size", "col2im")
    blocks = _out_size(size, win)
    if input._data.ndim not in (2, 3) or input._data.shape[-1] != math.prod(blocks):
        raise RuntimeError(
            f"Given output_size=({', '.join(map(str, size))}), kernel_size=({', '.join(map(str, win.kernel))}), "
            f"dilation=({', '.join(map(str, win.dilation))}), padding=({', '.join(str(p) for p, _ in win.padding)}), "
            f"stride=({', '.join(map(str, win.stride))}), expected size of input's dimension {input._data.ndim - 1} "
            f"to match the calculated number of sliding blocks {' * '.join(map(str, blocks))} = "
            f"{math.prod(blocks)}, but got input.size({input._data.ndim - 1})={input._data.shape[-1]}.")
    return apply(col2im_op, (input,), (size, win))


def _pool_window(input: Tensor, d: int, kernel_size: object, stride: object, padding: object, dilation: object,
                 ceil_mode: bool) -> tuple[Window, tuple[int, ...]]:
    """torch's pooling geometry: output sizes (ceil_mode lets the last window hang over) and checks."""
    kernel = _ntuple(kernel_size, d, "kernel_size", "pooling")
    stride_t = kernel if stride is None or stride == [] or stride == () else _ntuple(stride, d, "stride", "pooling")
    pads = _ntuple(padding, d, "padding", "pooling")
    dil = _ntuple(dilation, d, "dilation", "pooling")
    if 0 in stride_t:
        raise RuntimeError("stride should not be zero")
    if any(dl <= 0 for dl in dil):
        raise RuntimeError("dilation should be greater than zero, but got " + " ".join(
            f"dilation{axis}: {dl}" for axis, dl in zip("THW"[3 - d:], dil)))
    for p, k, dl in zip(pads, kernel, dil):
        if p > (dl * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={dl}")
    spatial = input._data.shape[-d:]
    out = [_pooled_size(x, k, s, p, dl, ceil_mode) for x, k, s, p, dl in zip(spatial, kernel, stride_t, pads, dil)]
    if any(o <= 0 for o in out):
        lead = input._data.shape[-d - 1] if input._data.ndim > d else 1
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (lead, *spatial)))}). Calculated output size: "
                           f"({'x'.join(map(str, (lead, *out)))}). Output size is too small")
    # the high padding reaches as far as the last window (further than p under ceil_mode)
    his = tuple(max((o - 1) * s + dl * (k - 1) + 1 - x - p, 0)
                for o, s, dl, k, x, p in zip(out, stride_t, dil, kernel, spatial, pads))
    return Window(kernel, stride_t, tuple(zip(pads, his)), dil), tuple(out)


def _check_pool_input(input: Tensor, d: int, name: str) -> None:
    """torch's messages for a pooling input with the wrong number of dims."""
    nd = input._data.ndim
    if nd in (d + 1, d + 2):
        return
    if name == "max_pool1d":
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                           f"input, but got:{list(input.shape)}")
    if name == "avg_pool1d":
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {nd}-dimensional tensor for argument #1 'self' "
                           "(while checking arguments for avg_pool1d)")
    raise RuntimeError(f"non-empty {d + 1}D or {d + 2}D (batch mode) tensor expected for input")


def _max_pool(input: Tensor, d: int, kernel_size: object, stride: object, padding: object, dilation: object,
              ceil_mode: bool, return_indices: bool) -> Tensor | tuple[Tensor, Tensor]:
    win, out = _pool_window(input, d, kernel_size, stride, padding, dilation, ceil_mode)
    _refuse_pool_dtype(input, f"max_pool{d}d", "bc")
    values, indices = apply(max_pool_op if d == 2 else max_pool3d_op, (input,), (win, out))
    return (values, indices) if return_indices else values


def _refuse_pool_dtype(input: Tensor, kernel: str, kinds: str, int64: bool = True, halves: bool = False) -> None:
    """torch's refusal of a dtype its pooling kernel has no loop for: these `kinds`, the integer types but int64
    when `int64` is False (the average pools keep a loop for it), float16 and bfloat16 when `halves`."""
    dtype, kind = input.dtype, D.kind(input._data)
    if kind in kinds or not int64 and kind in "iu" and dtype is not D.int64 or \
            halves and dtype in (D.float16, D.bfloat16):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{D.scalar_type_name(dtype)}\'')


def _as_2d(value: object, pad: int, name: str) -> tuple[int, int] | None:
    """A 1-d kernel argument as torch's 1-d pools pass it to their 2-d version (height 1)."""
    return None if value is None else (pad, *_ntuple(value, 1, name, "pooling"))


def _on_2d(fn: object, input: Tensor, *args: object) -> Tensor | tuple:
    """A 1-d kernel run as torch runs it: its 2-d version on an inserted height-1 dim (SqueezeBackward1)."""
    out = fn(input.unsqueeze(-2), *args)
    return tuple(o.squeeze(-2) for o in out) if isinstance(out, tuple) else out.squeeze(-2)


def max_pool1d(input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
               padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Largest value of each window of (N, C, L); the gradient goes to the argmax."""
    _check_pool_input(input, 1, "max_pool1d")
    _check_max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)
    return _on_2d(_max_pool, input, 2, _as_2d(kernel_size, 1, "kernel_size"), _as_2d(stride, 1, "stride"),
                  _as_2d(padding, 0, "padding"), _as_2d(dilation, 1, "dilation"), ceil_mode, return_indices)


def _pooled_size(x: int, k: int, s: int, p: int, dl: int, ceil_mode: bool) -> int:
    """A pool's output size along one dim, torch's formula: ceil_mode lets the last window hang over, unless it
    would start in the padding."""
    out = (x + 2 * p - dl * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    return out - 1 if ceil_mode and (out - 1) * s >= x + p else out


def _check_max_pool1d(input: Tensor, kernel_size: object, stride: object, padding: object, dilation: object,
                      ceil_mode: bool) -> None:
    """max_pool1d's own checks, in its words, before it runs as a 2-d pool."""
    (k,) = _ntuple(kernel_size, 1, "kernel_size", "pooling")
    (s,) = (k,) if stride is None or stride == [] or stride == () else _ntuple(stride, 1, "stride", "pooling")
    (p,), (dl,) = _ntuple(padding, 1, "padding", "pooling"), _ntuple(dilation, 1, "dilation", "pooling")
    for name, value in (("kernel_size", k), ("stride", s), ("dilation", dl)):
        if value <= 0:
            raise RuntimeError(f"max_pool1d() {name} must be greater than zero, but got {value}")
    if p < 0 or p > k // 2:
        return  # the 2-d pool's own refusal follows
    out = _pooled_size(input._data.shape[-1], k, s, p, dl, ceil_mode)
    if out <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")


def max_pool2d(input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
               padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Largest value of each window of (N, C, H, W) (NaN wins, the first on ties); the gradient goes to it.

    >>> max_pool2d(x, 2, return_indices=True)   # (values, flat indices into each H*W plane)
    """
    _check_pool_input(input, 2, "max_pool2d")
    return _max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
               padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Largest value of each window of (N, C, D, H, W); the gradient goes to the argmax."""
    _check_pool_input(input, 3, "max_pool3d")
    return _max_pool(input, 3, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool1d_with_indices(input: Tensor, kernel_size: int | Sequence[int], stride: object = None,
                            padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1,
                            ceil_mode: bool = False, return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """max_pool1d with the index of each maximum."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Tensor, kernel_size: int | Sequence[int], stride: object = None,
                            padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1,
                            ceil_mode: bool = False, return_indices: bool = False) -> tuple[Tensor, Tensor]:
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input: Tensor, kernel_size: int | Sequence[int], stride: object = None,
                            padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1,
                            ceil_mode: bool = False, return_indices: bool = False) -> tuple[Tensor, Tensor]:
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _avg_pool(input: Tensor, d: int, kernel_size: object, stride: object, padding: object, ceil_mode: bool,
              count_include_pad: bool, divisor_override: int | None) -> Tensor:
    win, out = _pool_window(input, d, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None:
        if divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
        divisor = float(divisor_override)
    else:  # per dim, how many positions of each window count (torch's pool_size); the product over dims
        divisor = np.ones((), dtype=np.float64)
        for i, (x, (p, _), k, s, o) in enumerate(zip(input._data.shape[-d:], win.padding, win.kernel, win.stride,
                                                       out)):
            start = np.arange(o) * s - p
            end = np.minimum(start + k, x + p)
            counts = end - start if count_include_pad else np.minimum(end, x) - np.maximum(start, 0)
            divisor = divisor * counts.reshape((-1,) + (1,) * (d - 1 - i))
    _refuse_pool_dtype(input, "avg_pool2d" if d == 2 else "avg_pool3d_out_frame", "bc", int64=False,
                       halves=d == 3)
    return apply(avg_pool_op if d == 2 else avg_pool3d_op, (input,), (win, out, divisor))


def avg_pool1d(input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
               padding: int | Sequence[int] = 0, ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """Mean of each window of (N, C, L)."""
    _check_pool_input(input, 1, "avg_pool1d")
    return _on_2d(_avg_pool, input, 2, _as_2d(kernel_size, 1, "kernel_size"), _as_2d(stride, 1, "stride"),
                  _as_2d(padding, 0, "padding"), ceil_mode, count_include_pad, None)


def avg_pool2d(input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
               padding: int | Sequence[int] = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean of each window of (N, C, H, W); count_include_pad decides whether zero padding counts."""
    _check_pool_input(input, 2, "avg_pool2d")
    return _avg_pool(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool3d(input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
               padding: int | Sequence[int] = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean of each window of (N, C, D, H, W)."""
    _check_pool_input(input, 3, "avg_pool3d")
    return _avg_pool(input, 3, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def _adaptive_size(input: Tensor, d: int, output_size: object, name: str) -> tuple[int, ...]:
    """output_size as d ints; None entries keep the input's size."""
    if input._data.ndim not in (d + 1, d + 2):
        got = "but got:" if "max" in name else "but got"
        raise RuntimeError(f"{name}(): Expected {d + 1}D or {d + 2}D tensor, {got} {list(input.shape)}")
    sizes = (output_size,) * d if output_size is None or isinstance(output_size, (int, np.integer)) \
        else tuple(output_size)
    if len(sizes) != d:
        raise RuntimeError(f"{name}: output_size must be {d}")
    out = tuple(x if o is None else int(o) for o, x in zip(sizes, input._data.shape[-d:]))
    if name == "adaptive_avg_pool1d":  # torch checks the rest as the 2-d pool it runs
        return out
    shape = input._data.shape
    if min(out) < 0 and name != "adaptive_max_pool1d":  # that one's is the 2-d pool's, which it runs
        if "max" in name:
            raise RuntimeError(f"Trying to create tensor with negative dimension {min(out)}: "
                               f"{list(shape[:-d]) + list(out)}")
        shown = ", ".join(map(str, out[:2])) + "".join(f",{o}" for o in out[2:])  # torch's own spacing
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 but received "
                           f"{{{shown}}}")
    for dim in range(len(shape) - d - 1, len(shape)):  # the channels and spatial dims
        if not shape[dim]:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
                               f"input has sizes {list(shape)} with dimension {dim} being empty")
    return out


def _averaging_matrix(size: int, out: int) -> np.ndarray:
    """(out, size): row i averages the adaptive window floor(i*size/out) .. ceil((i+1)*size/out)."""
    start = (np.arange(out) * size) // out
    end = -((-(np.arange(out) + 1) * size) // out)
    cols = np.arange(size)
    inside = (cols >= start[:, None]) & (cols < end[:, None])
    return inside / (end - start)[:, None]


def _adaptive_avg_pool(input: Tensor, d: int, output_size: object) -> Tensor:
    out = _adaptive_size(input, d, output_size, f"adaptive_avg_pool{d}d")
    if all(o == 1 for o in out):  # torch takes the mean (MeanBackward1)
        mean = input.mean(tuple(range(-d, 0)), keepdim=True)
        if d > 1 and suggest_memory_format(input._data) in (channels_last, channels_last_3d):
            # torch then restrides it in place as channels_last (its node becomes AsStridedBackward1)
            channels = mean.shape[1]
            mean.as_strided_(mean.shape, (channels, 1) + (channels,) * d)
        return mean
    _refuse_pool_dtype(input, "adaptive_avg_pool2d" if d == 2 else "adaptive_avg_pool3d_cpu", "biuc")
    matrices = tuple(_averaging_matrix(x, o) for x, o in zip(input._data.shape[-d:], out))
    return apply(SEPARABLE_NODES[f"adaptive_avg_pool{d}d"], (input,), (matrices,))


def adaptive_avg_pool1d(input: Tensor, output_size: int | Sequence[int]) -> Tensor:
    """Average over windows chosen so that (N, C, L) becomes (N, C, output_size)."""
    _adaptive_size(input, 1, output_size, "adaptive_avg_pool1d")
    return _on_2d(_adaptive_avg_pool, input, 2, (1, *_ntuple(output_size, 1, "output_size", "pooling")))


def adaptive_avg_pool2d(input: Tensor, output_size: int | Sequence[int | None]) -> Tensor:
    """Average over windows chosen so that ``(N, C, H, W)`` becomes ``(N, C, *output_size)``."""
    return _adaptive_avg_pool(input, 2, output_size)


def adaptive_avg_pool3d(input: Tensor, output_size: int | Sequence[int | None]) -> Tensor:
    """Average over windows chosen so that ``(N, C, D, H, W)`` becomes ``(N, C, *output_size)``."""
    return _adaptive_avg_pool(input, 3, output_size)


def _adaptive_max_pool(input: Tensor, d: int, output_size: object, return_indices: bool) -> Tensor | tuple:
    out = _adaptive_size(input, d, output_size, f"adaptive_max_pool{d}d")
    _refuse_pool_dtype(input, "adaptive_max_pool2d" if d == 2 else "adaptive_max_pool3d_cpu", "biuc")
    values, indices = apply(adaptive_max_pool_op if d == 2 else adaptive_max_pool3d_op, (input,), (out,))
    return (values, indices) if return_indices else values


def adaptive_max_pool1d(input: Tensor, output_size: int | Sequence[int],
                        return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Largest value of adaptive windows of (N, C, L)."""
    _adaptive_size(input, 1, output_size, "adaptive_max_pool1d")
    return _on_2d(_adaptive_max_pool, input, 2, (1, *_ntuple(output_size, 1, "output_size", "pooling")),
                  return_indices)


def adaptive_max_pool2d(input: Tensor, output_size: int | Sequence[int | None],
                        return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Largest value of adaptive windows of (N, C, H, W); the gradient goes to the argmax."""
    return _adaptive_max_pool(input, 2, output_size, return_indices)


def adaptive_max_pool3d(input: Tensor, output_size: int | Sequence[int | None],
                        return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Largest value of adaptive windows of (N, C, D, H, W)."""
    return _adaptive_max_pool(input, 3, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: int | Sequence[int],
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: int | Sequence[int | None],
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: int | Sequence[int | None],
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    return adaptive_max_pool3d(input, output_size, True)


# ---- padding --------------------------------------------------------------------------------

def _source_index(size: int, lo: int, hi: int, mode: str) -> np.ndarray:
    """For each padded position along one dim, the input position it copies."""
    src = np.arange(-lo, size + hi)
    if mode == "reflect":
        src = np.abs(src)
        return np.where(src >= size, 2 * (size - 1) - src, src)
    if mode == "replicate":
        return np.clip(src, 0, size - 1)
    return src % size  # circular


_PAD_NAMES = {"reflect": "reflection_pad", "replicate": "replication_pad"}


def constant_pad_nd(input: Tensor, pad: Sequence[int], value: float = 0) -> Tensor:
    """torch.constant_pad_nd: the last len(pad)//2 dims padded with `value` (pad = (last_low, last_high, ...);
    negative amounts crop)."""
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    if len(pad) > 2 * input._data.ndim:
        raise RuntimeError(f"Length of pad should be no more than twice the number of dimensions of the input. Pad "
                           f"length is {len(pad)}while the input has {input._data.ndim}dimensions.")
    for k in range(len(pad) // 2):
        if input._data.shape[-1 - k] + pad[2 * k] + pad[2 * k + 1] < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
    return apply(constant_pad_nd_op, (input,), (pad, value))


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last len(pad)//2 dims: pad = (last_low, last_high, second_last_low, ...); negative crops.

    Modes: 'constant' (value), 'reflect' (mirror without the edge), 'replicate' (repeat the edge),
    'circular' (wrap around).
    """
    pad = int_list(pad, "pad", "pad", 2)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    d = len(pad) // 2
    nd = input._data.ndim
    if d > nd:
        raise RuntimeError("Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {nd}")
    if mode == "constant":
        sizes = input._data.shape[::-1]
        if any(n + min(lo, 0) + min(hi, 0) < 0 for n, lo, hi in zip(sizes, pad[::2], pad[1::2])):  # torch narrows
            # by the negative pads before it pads by the others
            raise RuntimeError("narrow(): length must be non-negative.")
        return apply(constant_pad_nd_op, (input,), (tuple(pad), 0 if value is None else value))
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if d not in (1, 2, 3) or nd not in (d + 1, d + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {nd}D input tensor.\nSupported combinations for "
            "non-constant padding:\n  - 2D or 3D input: padding size = 2 (pads last dimension)\n  - 3D or 4D input: "
            "padding size = 4 (pads last 2 dimensions)\n  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    shape = input._data.shape
    if mode != "circular" and 0 in (shape[1:] if nd == d + 2 else shape):  # only a batch may be empty
        raise RuntimeError(f"Expected {d + 1}D or {d + 2}D (batch mode) tensor with possibly 0 batch size and other "
                           f"non-zero dimensions for input, but got: {list(shape)}")
    sizes = shape[-d:]
    pairs = [(pad[2 * (d - 1 - i)], pad[2 * (d - 1 - i) + 1]) for i in range(d)]
    for i, (x, (lo, hi)) in reversed(list(enumerate(zip(sizes, pairs)))):  # the last dim first, as torch
        if mode == "reflect" and (lo >= x or hi >= x):
            raise RuntimeError(f"Argument #{4 + 2 * (d - 1 - i)}: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({lo}, {hi}) at dimension {nd - d + i} of input "
                               f"{list(input.shape)}")
        if mode == "circular" and (lo > x or hi > x):
            raise RuntimeError("Padding value causes wrapping around more than once.")
    indices = tuple(_source_index(x, lo, hi, mode) for x, (lo, hi) in zip(sizes, pairs))
    if mode == "circular":  # torch's circular pad is copies of slices, for every dtype
        return apply(GATHER_NODES["circular_pad"], (input,), (indices,))
    kernel = f"{_PAD_NAMES[mode]}{d}d"
    if input.dtype is D.bool_:  # torch's reflection and replication kernels have no boolean version
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    return apply(GATHER_NODES[kernel], (input,), (indices,))


# ---- resampling -----------------------------------------------------------------------------

_LINEAR_MODES = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def _nearest_index(size: int, out: int, scale: float | None, exact: bool) -> np.ndarray:
    """torch's nearest source index, in float32 arithmetic as its kernel computes it."""
    dst = np.arange(out)
    if not exact and out == size:
        return dst
    if not exact and out == 2 * size:
        return dst >> 1
    step = np.float32(1.0 / scale if scale is not None and scale > 0 else np.float32(size) / np.float32(out))
    src = (dst + 0.5).astype(np.float32) * step if exact else dst.astype(np.float32) * step
    return np.minimum(np.floor(src).astype(np.int64), size - 1)


def _cubic_weights(t: np.ndarray) -> list[np.ndarray]:
    """Keys' cubic convolution weights (A = -0.75) of the 4 taps around a fractional offset t."""
    a = -0.75

    def near(x: np.ndarray) -> np.ndarray:
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: np.ndarray) -> np.ndarray:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _interpolation_matrix(size: int, out: int, scale: float | None, align_corners: bool, cubic: bool,
                          dtype: np.dtype) -> np.ndarray:
    """(out, size): the linear (or cubic) interpolation weights of each output position, torch's way."""
    ft = dtype.type
    if align_corners:
        step = ft(size - 1) / ft(out - 1) if out > 1 else ft(0)
        src = np.arange(out, dtype=dtype) * step
    else:
        step = ft(1.0 / scale) if scale is not None and scale > 0 else ft(size) / ft(out)
        src = step * (np.arange(out, dtype=dtype) + ft(0.5)) - ft(0.5)
        if not cubic:
            src = np.maximum(src, ft(0))
    m = np.zeros((out, size), dtype=dtype)
    rows = np.arange(out)
    base = np.floor(src).astype(np.int64)
    if cubic:
        t = src - base
        for tap, w in enumerate(_cubic_weights(t)):
            np.add.at(m, (rows, np.clip(base - 1 + tap, 0, size - 1)), w)
        return m
    base = np.minimum(base, size - 1)
    frac = np.clip(src - base, 0, 1)
    np.add.at(m, (rows, base), 1 - frac)
    np.add.at(m, (rows, base + (base < size - 1)), frac)
    return m


def _triangle(x: np.ndarray) -> np.ndarray:
    return np.maximum(1 - np.abs(x), 0.0)


def _keys_cubic(x: np.ndarray, a: float = -0.5) -> np.ndarray:
    x = np.abs(x)
    return np.where(x < 1, ((a + 2) * x - (a + 3)) * x * x + 1, np.where(x < 2, (((x - 5) * x + 8) * x - 4) * a, 0.0))


def _lanczos3(x: np.ndarray) -> np.ndarray:
    return np.where(np.abs(x) < 3, np.sinc(x) * np.sinc(x / 3), 0.0)


# the antialiasing filters by mode: (half-width, kernel), PIL's BILINEAR, BICUBIC and LANCZOS
_AA_FILTERS = {"bilinear": (1.0, _triangle), "bicubic": (2.0, _keys_cubic), "lanczos": (3.0, _lanczos3)}


def _antialiased_matrix(size: int, out: int, scale: float | None, align_corners: bool, mode: str,
                        dtype: np.dtype) -> np.ndarray:
    """(out, size): antialiased resampling weights (torch's and PIL's): the mode's filter stretched by the scale when
    downsampling, so that every source pixel under it counts, normalised per row."""
    if align_corners:
        step = (size - 1) / (out - 1) if out > 1 else 0.0
    else:
        step = 1.0 / scale if scale is not None and scale > 0 else size / out
    stretch = max(step, 1.0)
    half_width, kernel = _AA_FILTERS[mode]
    support = half_width * stretch
    m = np.zeros((out, size))
    for i in range(out):
        center = step * (i + 0.5)
        lo, hi = max(int(center - support + 0.5), 0), min(int(center + support + 0.5), size)
        w = kernel((np.arange(lo, hi) - center + 0.5) / stretch)
        m[i, lo:hi] = w / w.sum() if w.sum() != 0 else w
    return m.astype(dtype)


def interpolate(input: Tensor, size: int | Sequence[int] | None = None,
                scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims: 'nearest', 'nearest-exact', 'linear', 'bilinear', 'bicubic', 'trilinear', 'area',
    or 'lanczos' (antialiased only, PIL's LANCZOS)."""
    d = input._data.ndim - 2
    if mode in ("nearest", "area", "nearest-exact") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    spatial = input._data.shape[2:]
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != d:
                raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {list(spatial)} and output size of {size}. Please "
                                 "provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                                 "...,oK) format.")
            if not all(_takes_as_int(n) for n in size):
                raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, int, "
                                f"int], but got size with types {[type(n) for n in size]}")
        out = _ntuple(size, d, "size", "interpolate")
        scales: tuple = (None,) * d
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)) and len(scale_factor) != d:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {list(spatial)} and scale_factor of shape {scale_factor}. "
                             "Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, "
                             "s2, ...,sK) format.")
        scales = tuple(float(s) for s in (scale_factor if isinstance(scale_factor, (list, tuple))
                                          else (scale_factor,) * d))
        out = tuple(math.floor(x * s) for x, s in zip(spatial, scales))
        if recompute_scale_factor:
            scales = (None,) * d
    else:
        raise ValueError("either size or scale_factor should be defined")
    if antialias and (mode not in _AA_FILTERS or input._data.ndim != 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a "
                         "4-D tensor as input")
    if mode == "lanczos" and d == 2:
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    _check_resampled_dtype(input, mode, antialias)
    _check_resampled_rank(input, mode, antialias)
    if mode != "area" and min(out, default=1) <= 0:  # the upsampling kernels' check
        labels = "DHW"[3 - d:]
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ("
                           f"{', '.join(f'{a}: {n}' for a, n in zip(labels, spatial))}){' and' if d == 1 else ''} "
                           f"output ({', '.join(f'{a}: {n}' for a, n in zip(labels, out))})")
    if mode == "area":
        return _adaptive_avg_pool(input, d, out) if d > 1 else adaptive_avg_pool1d(input, out)
    if mode in ("nearest", "nearest-exact"):
        exact = mode == "nearest-exact"
        indices = tuple(_nearest_index(x, o, s, exact) for x, o, s in zip(spatial, out, scales))
        name = f"upsample_nearest{'_exact' if exact else ''}{d}d"
        return apply(GATHER_NODES[name], (input,), (indices,))
    if mode not in _LINEAR_MODES and not antialias:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input._data.ndim}D) "
                                  f"for the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area "
                                  f"| nearest-exact (got {mode})")
    dtype = input.dtype.np if input.dtype.is_floating_point else np.dtype(np.float64)  # uint8: Note [uint8 resampling]
    if antialias:
        matrices = tuple(_antialiased_matrix(x, o, s, bool(align_corners), mode, dtype)
                         for x, o, s in zip(spatial, out, scales))
    else:
        matrices = tuple(_interpolation_matrix(x, o, s, bool(align_corners), mode == "bicubic", dtype)
                         for x, o, s in zip(spatial, out, scales))
    name = {"linear": "upsample_linear1d", "bilinear": "upsample_bilinear2d", "bicubic": "upsample_bicubic2d",
            "trilinear": "upsample_trilinear3d", "lanczos": "upsample_lanczos2d"}[mode] + ("_aa" if antialias else "")
    return apply(SEPARABLE_NODES[name], (input,), (matrices,))


def _check_resampled_rank(input: Tensor, mode: str, antialias: bool) -> None:
    """torch's refusals of an input whose rank the mode has no kernel for: a specific one for the linear family's
    neighbours (a 3-d input to bilinear), else its generic one (any rank but 3 to 5, bicubic on 5-d)."""
    ndim = input._data.ndim
    wanted = _LINEAR_MODES.get(mode)
    if antialias or 3 <= ndim <= 5 and wanted in (None, ndim - 2):
        return
    if 3 <= ndim <= 5 and mode != "bicubic":
        raise NotImplementedError(f"Got {ndim}D input, but {mode} mode needs {wanted + 2}D input")
    raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {ndim}D) for the modes: "
                              f"nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact "
                              f"(got {mode})")


def _check_resampled_dtype(input: Tensor, mode: str, antialias: bool) -> None:
    """Refuse, in torch's words, the integer and bool dtypes its CPU kernels do not resample: every one but uint8,
    which the nearest modes copy and the 2-d filters resample in fixed point (Note [uint8 resampling])."""
    dtype, d = input.dtype, input._data.ndim - 2
    if dtype.is_floating_point or dtype.is_complex:
        return
    if mode == "area":
        kernel = "adaptive_avg_pool2d" if d < 3 else "adaptive_avg_pool3d"
        if d == 2 and suggest_memory_format(input._data) is channels_last:
            kernel += "_channels_last"
    elif mode in ("linear", "trilinear"):
        kernel = "compute_indices_weights_linear"
    elif dtype == D.uint8:
        return
    elif mode.startswith("nearest"):
        kernel = "upsample_nearest2d_channels_last" if d == 2 else "compute_indices_weights_nearest"
    elif antialias:
        kernel = "compute_index_ranges_weights"
    else:
        kernel = "compute_indices_weights_cubic" if mode == "bicubic" else "upsample_bilinear2d_channels_last"
    raise NotImplementedError(f"\"{kernel}\" not implemented for '{D.scalar_type_name(dtype)}'")


def _warn_deprecated(name: str) -> None:
    """The upsample functions' deprecation, warned on every call at the caller's line, as torch's."""
    warnings.warn(f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` instead.", UserWarning,
                  stacklevel=user_stacklevel())


def upsample(input: Tensor, size: int | Sequence[int] | None = None,
             scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated spelling of interpolate."""
    _warn_deprecated("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: int | Sequence[int] | None = None,
                     scale_factor: float | Sequence[float] | None = None) -> Tensor:
    """Deprecated spelling of interpolate(..., mode='nearest')."""
    _warn_deprecated("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: int | Sequence[int] | None = None,
                      scale_factor: float | Sequence[float] | None = None) -> Tensor:
    """Deprecated spelling of interpolate(..., mode='bilinear', align_corners=True)."""
    _warn_deprecated("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r)."""
    _check_shuffle_rank(input, "pixel_shuffle")
    c = input._data.shape[-3]
    r = upscale_factor
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    return apply(pixel_shuffle_op, (input,), (r,))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W), the inverse of pixel_shuffle."""
    _check_shuffle_rank(input, "pixel_unshuffle")
    h, w = input._data.shape[-2:]
    r = downscale_factor
    for name, n in (("height", h), ("width", w)):
        if n % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                               f"input.size({-2 if name == 'height' else -1})={n} is not divisible by {r}")
    return apply(pixel_unshuffle_op, (input,), (r,))


def _check_shuffle_rank(input: Tensor, name: str) -> None:
    if input._data.ndim < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got input with "
                           f"{input._data.ndim} dimension(s)")


def _align_corners_default(align_corners: bool | None) -> bool:
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                      "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                      "grid_sample for details.", UserWarning, stacklevel=3)
        return False
    return align_corners


def _grid_steps(n: int, align_corners: bool, np_dtype: np.dtype) -> np.ndarray:
    """n positions spanning [-1, 1] (pixel corners with align_corners, pixel centres without), rounded as torch
    rounds them: its linspace in the grid's dtype, then times n - 1 and over n, each in that dtype."""
    if np_dtype not in (np.float32, np.float64):  # half precision: computed in float64, rounded once
        return _grid_steps(n, align_corners, np.dtype(np.float64)).astype(np_dtype)
    if n <= 1:
        return np.zeros(n, dtype=np_dtype)
    steps = _linspace_in(-1.0, 1.0, n, np_dtype)
    return steps if align_corners else steps * np_dtype.type(n - 1) / np_dtype.type(n)


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None) -> Tensor:
    """The sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps theta (N, 2, 3) (or (N, 3, 4))."""
    align_corners = _align_corners_default(align_corners)
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    given, size = size, [int(n) for n in size]
    d = len(size) - 2
    if d not in (2, 3):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if theta.ndim != 3 or tuple(theta.shape[-2:]) != (d, d + 1):
        raise ValueError(f"Expected a batch of {d}D affine matrices of shape Nx{d}x{d + 1} for size {given}. Got "
                         f"{theta.shape}.")
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.", UserWarning, stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return apply(affine_grid_generator_op, (theta,), (tuple(size), align_corners))


def affine_base(size: Sequence[int], align_corners: bool, dtype: D.dtype) -> np.ndarray:
    """affine_grid's base grid for the (N, C, (D,) H, W) `size` in `dtype`: each point's homogeneous coordinates (x
    first, then y (then z), then 1) in [-1, 1], rounded as torch rounds them (_grid_steps)."""
    axes = [_grid_steps(n, align_corners, np.dtype(dtype.np)) for n in size[2:]]  # (D,) H, W
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.stack([*reversed(mesh), np.ones_like(mesh[0])], axis=-1)


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Sample input (N, C, H, W) or (N, C, D, H, W) at the points grid (N, out..., 2 or 3) in [-1, 1], x first
    ('bilinear' (trilinear for volumes), 'nearest', or 'bicubic' for images; padding 'zeros', 'border' or
    'reflection')."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    return grid_sampler(input, grid, _GRID_MODES.index(mode), _GRID_PADDINGS.index(padding_mode),
                        _align_corners_default(align_corners))


_GRID_MODES, _GRID_PADDINGS = ("bilinear", "nearest", "bicubic"), ("zeros", "border", "reflection")


def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:
    """torch.grid_sampler, grid_sample's kernel (GridSampler2DBackward0 / 3D): modes by number, in _GRID_MODES'
    and _GRID_PADDINGS' order; the input's rank picks 2-d or 3-d."""
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, input.ndim - 2)


def _grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int, align_corners: bool,
                  rank: int) -> Tensor:
    """grid_sampler of inputs of `rank` spatial dims, with torch's checks in torch's order."""
    mode, padding_mode = _GRID_MODES[interpolation_mode], _GRID_PADDINGS[padding_mode]
    d = input.ndim - 2
    if grid.shape[-1] != d:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {d} in last dimension, but got grid with "
                           f"sizes {list(grid.shape)}")
    if input.ndim not in (4, 5) or grid.ndim != input.ndim or d != rank:
        expected = f"{rank + 2}D" if rank in (2, 3) else "4D or 5D"
        raise RuntimeError(f"grid_sampler(): expected {expected} input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if mode == "bicubic" and d != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    _refuse_kinds(input._data, "grid_sampler_2d_cpu_kernel_impl" if d == 2 else "grid_sampler3d_cpu", "buic")
    if grid.dtype is not input.dtype:
        raise RuntimeError(f"expected scalar type {D.scalar_type_name(input.dtype)} but found "
                           f"{D.scalar_type_name(grid.dtype)}")
    return apply(grid_sampler_op if d == 2 else grid_sampler_3d_op, (input, grid), (mode, padding_mode, align_corners))


def _grid_sampler_of_rank(rank: int) -> Callable[..., Tensor]:
    """torch.grid_sampler_2d / 3d: grid_sampler for inputs of one rank (rank + 2 dims)."""

    def sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                align_corners: bool) -> Tensor:
        return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, rank)

    sampler.__name__ = sampler.__qualname__ = f"grid_sampler_{rank}d"
    sampler.__doc__ = f"torch.grid_sampler_{rank}d: grid_sampler of {rank + 2}-d inputs and grids."
    return sampler


grid_sampler_2d, grid_sampler_3d = _grid_sampler_of_rank(2), _grid_sampler_of_rank(3)


PUBLIC = ["adaptive_avg_pool1d", "avg_pool1d", "constant_pad_nd", "conv1d", "conv2d", "conv3d", "grid_sampler",
          "grid_sampler_2d", "grid_sampler_3d",
          "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "max_pool1d", "max_pool2d", "max_pool3d",
          "max_pool1d_with_indices", "pixel_shuffle", "pixel_unshuffle"]
FUNCTIONAL_ONLY = ["adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
                   "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
                   "adaptive_max_pool3d_with_indices", "affine_grid", "avg_pool2d", "avg_pool3d", "fold",
                   "grid_sample", "interpolate",
                   "max_pool2d_with_indices", "max_pool3d_with_indices", "pad", "unfold", "upsample",
                   "upsample_bilinear", "upsample_nearest"]
