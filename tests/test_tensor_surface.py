"""Parts of torch's tensor surface that PyTorch's own autograd tests call, scenario by scenario,
against torch: creation overloads, legacy constructors, memory formats, `out=`, in-place view ops,
`set_`/`resize_`, and the autograd conventions of the ops they use.

Each scenario is a function of the library (`torch` or `retrograd`) that returns what it observed:
values, dtypes, shapes, strides, gradients, grad_fn names, flags, versions, and the type and text of
what was raised.
"""

from __future__ import annotations

import copy
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import retrograd


def observe(value):
    """Something comparable: tensors become (dtype, shape, values rounded to 1e-9, infinities kept)."""
    if hasattr(value, "detach") and hasattr(value, "dtype"):
        arr = value.detach().numpy()
        arr = arr.astype(np.complex128 if arr.dtype.kind == "c" else np.float64)
        return ("tensor", str(value.dtype), tuple(value.shape), str(np.round(arr, 9).tolist()))
    if isinstance(value, (list, tuple)):
        return [observe(v) for v in value]
    if type(value).__name__ in ("dtype", "memory_format"):
        return str(value)
    return value


def outcome(fn) -> object:
    """fn()'s observations, or the type and message of what it raised."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return observe(fn())
    except Exception as e:  # noqa: BLE001 - the type and text are what is compared
        return ("raised", type(e).__name__, str(e))


def name(t) -> str | None:
    return None if t.grad_fn is None else t.grad_fn.name()


SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


# ---- creation -------------------------------------------------------------------------------


@scenario
def randint_overloads(L):
    """randint(high, size) is torch's overload with low = 0; randint(low, high, size) the other."""
    L.manual_seed(0)
    return [L.randint(2, [4, 2]).shape, L.randint(1, (3,)), L.randint(3, 4, (2,)), L.randint(5, (2,)).dtype]


@scenario
def legacy_tensor_types(L):
    """Calling one constructs a tensor of its dtype from sizes, data or a tensor; isinstance checks the dtype."""
    seen = [repr(L.FloatTensor), L.FloatTensor.dtype, L.BoolTensor(2, 2).shape, L.BoolTensor(2, 2).dtype,
            L.BoolTensor([True, False]), L.LongTensor([3]), L.DoubleTensor(L.Size([2])).shape, L.IntTensor().shape,
            isinstance(L.ones(2), L.FloatTensor), isinstance(L.ones(2, dtype=L.int64), L.FloatTensor),
            L.ones(2).type(L.DoubleTensor).dtype, L.ones(2).type("torch.ByteTensor").dtype,
            L.BoolTensor(5, 5).bernoulli_().dtype, L.FloatTensor(L.ones(2)),
            outcome(lambda: L.FloatTensor(L.ones(2, dtype=L.float64)))]
    return seen + [t(2).dtype for t in (L.ByteTensor, L.CharTensor, L.ShortTensor, L.HalfTensor)]


@scenario
def tensor_from_a_list_of_numpy_arrays(L):
    """Each array counts with its dtype, as NumPy scalars do (replay batches: `torch.tensor([s for s in states])`),
    and the copy warns once per process (TORCH_WARN_ONCE) at the caller's line, for every constructor, but not
    when nothing is copied; under set_warn_always once per array met (a 2-D array and each of its rows). A 0-d
    array first in a list fails as torch sizes the list (len() of an unsized object)."""
    was = L.is_warn_always_enabled()
    L.set_warn_always(True)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            made = [L.tensor([np.ones(2), np.zeros(2)]), L.tensor([np.ones(2, np.float32), np.ones(2)]),
                    L.tensor([1.0, np.ones(())]), L.tensor([[np.ones(2, np.int32)], [[1, 2]]]),
                    L.tensor([np.ones(2, np.uint16)]), L.tensor((np.ones(2, np.float32), [1.0, 2.0])),
                    L.as_tensor([np.ones(2)]), L.zeros(1, dtype=L.float16).new_tensor([np.ones(2)]),
                    L.FloatTensor([np.ones(2)]), L.tensor([np.ones(2)], dtype=L.int64), L.tensor([np.ones((2, 3))])]
            silent = len(caught)
            empty = L.tensor([np.ones(0)])
    finally:
        L.set_warn_always(was)
    messages = {(w.category.__name__, str(w.message), w.filename) for w in caught}  # with torch's C++ source line
    zero_d = [outcome(lambda: L.tensor(data)) for data in ([np.array(1.5)], [np.array(1.5), 2.0], [2.0, np.array(1.5)],
                                                            ([np.array(2)],), [np.array([1.5])])]
    return made + [empty, silent, len(caught), sorted(messages)] + zero_d


@scenario
def arrays_with_negative_strides_are_refused(L):
    """np.flip's views: every constructor that takes the array itself refuses a negative stride (a size-1 one too);
    a flipped array inside a list, an empty one and a copy are taken."""
    flipped, grid = np.arange(6.0)[::-1], np.fliplr(np.arange(6.0).reshape(2, 3))
    calls = [lambda: L.from_numpy(flipped), lambda: L.as_tensor(flipped), lambda: L.as_tensor(flipped, dtype=L.float32),
             lambda: L.tensor(flipped), lambda: L.tensor(grid, dtype=L.float32), lambda: L.asarray(grid),
             lambda: L.Tensor(flipped), lambda: L.DoubleTensor(grid), lambda: L.zeros(1).new_tensor(flipped),
             lambda: L.zeros(1).new(flipped), lambda: L.from_numpy(flipped[:1]), lambda: L.tensor([flipped]),
             lambda: L.from_numpy(np.zeros(0)[::-1]), lambda: L.from_numpy(flipped.copy()),
             lambda: L.from_numpy(np.float64(1.0)), lambda: L.from_numpy([1.0]), lambda: L.from_numpy(L.ones(1)),
             lambda: L.as_tensor(flipped.copy(), L.float32)]  # dtype and device are keywords only
    return [outcome(call) for call in calls]


@scenario
def read_only_arrays_warn_once_where_aliased(L):
    """A read-only array (np.broadcast_to's, an image's np.asarray) warns where torch aliases it before any copy
    (not tensor() or new_tensor()), before refusing a negative stride; every time under set_warn_always (once per
    process otherwise: test_warnings_under_warn_always_leave_the_once_to_come)."""
    read_only = np.ones(3)
    read_only.flags.writeable = False
    calls = [lambda: L.from_numpy(read_only), lambda: L.as_tensor(read_only),
             lambda: L.as_tensor(read_only, dtype=L.int64), lambda: L.tensor(read_only), lambda: L.asarray(read_only),
             lambda: L.Tensor(read_only),
             lambda: L.zeros(1).new_tensor(read_only), lambda: L.zeros(1).new(read_only),
             lambda: L.from_numpy(np.broadcast_to(np.ones(1), (3,))), lambda: L.from_numpy(read_only[::-1]),
             lambda: L.frombuffer(b"\x00\x00\x80\x3f", dtype=L.float32)]
    was = L.is_warn_always_enabled()
    seen = []
    try:
        L.set_warn_always(True)
        for call in calls:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                made = outcome(call)
            seen.append((made, [(w.category.__name__, str(w.message), w.filename == __file__) for w in caught]))
    finally:
        L.set_warn_always(was)
    return seen


@scenario
def legacy_new(L):
    x = L.ones(2, dtype=L.float64, requires_grad=True)
    return [x.new(L.Size([2, 3])).shape, x.new((2, 3)), x.new([1, 2]), x.new(2, 3).dtype, x.new().shape,
            x.new(2).requires_grad, outcome(lambda: x.new(L.tensor([1, 2])))]


@scenario
def set_shares_memory(L):
    x, y = L.rand(4), L.ones(2, 3)
    seen = [x.set_(y) is x, x.shape, x._version, y._version, x.data_ptr() == y.data_ptr()]
    x.add_(1)
    seen += [y, y._version, x._version, x._base is None]
    x = L.rand(4)
    x.set_()
    seen += [x.shape, x._version, outcome(lambda: L.rand(2, requires_grad=True).set_(L.ones(3)))]
    for target, source in ((L.rand(2, requires_grad=True) * 1, L.ones(3)), (L.rand(2), L.ones(3, requires_grad=True))):
        target.set_(source)
        seen += [name(target), target.requires_grad, outcome(lambda: target.sum().backward())]
    return seen + [outcome(lambda: L.ones(2).set_(L.ones(2, dtype=L.float64)))]


@scenario
def set_and_resize_drop_the_gradient_accumulator(L):
    """A graph recorded before uses the old AccumulateGrad: self is then not part of it."""
    seen = []
    for change in (lambda x: x.set_(L.rand_like(x)), lambda x: x.resize_(3)):
        x = L.rand(2, requires_grad=True)
        out = x.clone()
        with L.no_grad():
            change(x)
        seen.append(outcome(lambda: L.autograd.grad(out.sum(), x)))
    p = L.nn.Parameter(L.ones(16, dtype=L.float64))
    for _ in range(2):
        with L.no_grad():
            p.set_(p[1:])
            p.grad = None
        L.cat((p, p)).sum().backward()
        seen += [p.shape, p.grad]
    return seen


@scenario
def resize_bumps_the_version_when_the_shape_changes(L):
    x, y = L.arange(2.0), L.randn(3)
    seen = [x.resize_((1, 2)) is x, x._version, x.resize_as_(y).shape, x._version, x[:2]]
    x.resize_((3,))
    x.resize_as_(y)
    x.resize_(2, 1)
    seen += [x._version, x, outcome(lambda: L.nn.Parameter(L.ones(3)).resize_(4))]
    with L.no_grad():
        seen.append(outcome(lambda: L.ones(3, requires_grad=True).resize_(4)))
    return seen


@scenario
def memory_formats(L):
    a = L.tensor(np.arange(120.0).reshape(2, 3, 4, 5), requires_grad=True)
    b = a.to(memory_format=L.channels_last)
    seen = [repr(L.channels_last), repr(L.contiguous_format), repr(L.preserve_format), repr(L.channels_last_3d),
            name(b), b.stride(), b, b.is_contiguous(), b.is_contiguous(memory_format=L.channels_last),
            name(a.contiguous(memory_format=L.channels_last)), name(b.contiguous()), b.contiguous().stride(),
            b.clone(memory_format=L.contiguous_format).stride(), b.clone(memory_format=L.preserve_format).stride(),
            a.to(memory_format=L.contiguous_format) is a, b.to(memory_format=L.preserve_format) is b,
            a.to(L.float64, memory_format=L.channels_last).stride(),
            L.ones(1, 2, 3, 4, 5).contiguous(memory_format=L.channels_last_3d).stride(),
            outcome(lambda: L.ones(2, 3).contiguous(memory_format=L.channels_last)),
            repr(L.legacy_contiguous_format), L.legacy_contiguous_format is L.contiguous_format,
            L.empty_like(b, memory_format=L.legacy_contiguous_format).stride()]
    b.sum().backward()
    return seen + [a.grad]


@scenario
def gradients_take_their_leaf_layout(L):
    """A dense leaf's .grad has its strides (channels_last included); a leaf with gaps gets a row-major one."""
    seen = []
    for fmt in (L.contiguous_format, L.channels_last):
        a = L.rand(2, 3, 4, 5).to(memory_format=fmt).requires_grad_()
        a.sum().backward()
        seen.append(a.grad.stride() == a.stride())
        a.grad = None
        (a * L.rand(2, 3, 4, 5)).sum().backward()
        seen.append(a.grad.stride() == a.stride())
    c = L.empty_strided((2, 2), (4, 2)).copy_(L.rand(2, 2)).requires_grad_()
    c.sum().backward()
    return seen + [c.stride(), c.grad.stride(), outcome(lambda: L.empty_strided((2, 2), (1,)))]


@scenario
def channels_last_models(L):
    """The channels_last idiom of segmentation and detection code: `model.to(memory_format=torch.channels_last)`
    lays out the 4-d weights only (a 5-d one refuses), a convolution answers channels_last when its input's or its
    weight's strides suggest it (2-d: every dtype; 3-d: float32 only), size-1 dims with torch's strides; clone()
    preserves a layout by default; Tensor.to(memory_format=) copies unless the strides already read as asked;
    group norm, pooling, padding, upsampling and pixel (un)shuffle keep a channels_last input's layout."""
    F, cl, cl3 = L.nn.functional, L.channels_last, L.channels_last_3d
    model = L.nn.Sequential(L.nn.Conv2d(3, 4, 3, padding=1), L.nn.GroupNorm(2, 4), L.nn.Linear(4, 2))
    weight = model[0].weight
    model.to(memory_format=cl)
    x = L.rand(2, 3, 5, 6).contiguous(memory_format=cl).requires_grad_()
    y = model[0](x)
    y.sum().backward()
    seen = [model[0].weight is weight, model[0].weight.stride(), model[0].bias.stride(), model[2].weight.stride(),
            y.stride(), y.grad_fn.name(), x.grad.stride(), model[0].weight.grad.stride(),
            outcome(lambda: L.nn.Conv3d(1, 1, 1).to(memory_format=cl)),
            L.nn.Conv3d(1, 2, 1).to(L.float64, memory_format=cl3).weight.stride()]
    rows = L.rand(2, 3, 5, 6)
    for dtype in (L.float32, L.float64):
        r, w = rows.to(dtype), L.rand(4, 3, 2, 2, dtype=dtype)
        seen += [F.conv2d(r, w.contiguous(memory_format=cl)).stride(),
                 F.conv2d(r.contiguous(memory_format=cl), w, dilation=2).stride(),
                 F.conv_transpose2d(r.contiguous(memory_format=cl), w.transpose(0, 1), stride=2).stride(),
                 F.conv2d(r.contiguous(memory_format=cl), L.rand(4, 3, 5, 6, dtype=dtype)).stride(),
                 F.conv3d(L.rand(2, 3, 2, 3, 4, dtype=dtype).contiguous(memory_format=cl3),
                          L.rand(2, 3, 1, 2, 2, dtype=dtype)).stride()]
    seen.append(F.conv2d(L.rand(2, 1, 4, 4).contiguous(memory_format=cl), L.rand(3, 1, 3, 3)).stride())
    seen += [v.clone().stride() for v in (rows.contiguous(memory_format=cl), rows.transpose(1, 3), L.rand(1, 3).t(),
                                          L.rand(1, 4).expand(3, 4), rows.contiguous(memory_format=cl)[:, :, ::2])]
    cl_rows = rows.contiguous(memory_format=cl)
    seen += [L.rand(2, 6, 1, 1).to(memory_format=cl).stride(), cl_rows.to(memory_format=cl) is cl_rows,
             L.rand(3, 4).t().to(memory_format=L.contiguous_format).stride(), cl_rows.contiguous().stride()]
    # the decoder's ops keep a channels_last activation channels_last (their kernels allocate in its format)
    seen += [F.group_norm(cl_rows, 3).stride(), F.avg_pool2d(cl_rows, 2).stride(),
             F.adaptive_avg_pool2d(cl_rows, 3).stride(), F.pad(cl_rows, [1, 1, 1, 1]).stride(),
             F.pad(cl_rows, [1, 1, 1, 1], mode="reflect").stride(),
             F.interpolate(cl_rows, scale_factor=2, mode="bilinear", align_corners=False).stride(),
             F.interpolate(cl_rows, scale_factor=2, mode="nearest").stride(), F.layer_norm(cl_rows, (6,)).stride()]
    shuffled = L.rand(2, 8, 3, 3).contiguous(memory_format=cl).requires_grad_()
    seen += [F.pixel_shuffle(shuffled, 2).stride(), F.pixel_unshuffle(cl_rows[:, :, :4], 2).stride(),
             L.autograd.grad(F.pixel_shuffle(shuffled, 2), shuffled, L.rand(2, 2, 6, 6))[0].stride()]
    return seen


@scenario
def global_pool_of_channels_last(L):
    """MobileNet's squeeze-and-excitation pools a channels_last activation to 1x1: torch takes the mean and restrides
    it in place (as_strided_, AsStridedBackward1, version 1) for a channels_last input only; the gradient is the
    mean's."""
    F = L.nn.functional
    rows = L.rand(2, 3, 4, 5, requires_grad=True)
    seen = []
    for x in (rows.contiguous(memory_format=L.channels_last), rows,
              L.rand(2, 3, 2, 4, 5).contiguous(memory_format=L.channels_last_3d)):
        y = F.adaptive_avg_pool2d(x, 1) if x.dim() == 4 else F.adaptive_avg_pool3d(x, (1, 1, 1))
        seen += [y.grad_fn.name() if y.grad_fn else None, y.stride(), y._version]
    y = L.nn.AdaptiveAvgPool2d((1, 1))(rows.contiguous(memory_format=L.channels_last))
    (y * L.arange(3.0).view(1, 3, 1, 1)).sum().backward()
    with L.no_grad():
        quiet = F.adaptive_avg_pool2d(rows.contiguous(memory_format=L.channels_last), 1)
    return seen + [y.grad_fn.next_functions[0][0].name(), rows.grad, quiet.stride(), quiet._version]


@scenario
def clone_keeps_strides_of_size_one_dims(L):
    """clone() (preserve_format), a dtype cast and deepcopy of a Parameter keep a dense tensor's strides exactly, a
    size-1 dim's included: a depthwise conv weight (C, 1, k, k) in channels_last stays (9, 1, 3, 1) (through
    `model.to(torch.float64, memory_format=torch.channels_last)` too), a transposed column too."""
    weight = L.nn.Conv2d(4, 4, 3, groups=4).to(memory_format=L.channels_last).weight
    tensors = [weight, L.ones(2, 1, 4).transpose(0, 2), L.ones(3, 1).t(), L.ones(1, 3, 1, 1).permute(2, 3, 0, 1)]
    casts = [weight.double(), weight.to(L.float16), L.ones(3, 1).t().double(), weight.to(L.bfloat16),
             L.nn.Conv2d(4, 4, 3, groups=4).to(L.float64, memory_format=L.channels_last).weight]
    return [(t.stride(), t.clone().stride(), t.clone().is_contiguous()) for t in tensors] + [
        copy.deepcopy(weight).stride()] + [(str(t.dtype), t.stride()) for t in casts]


@scenario
def deepcopy_keeps_layouts(L):
    """copy.deepcopy (AveragedModel's copy of a channels_last model): a tensor's copy keeps its strides and storage
    offset over a copied storage, a Parameter's copy is a preserve_format clone without the grad."""
    seen = []
    for t in (L.arange(10.0)[::2], L.arange(12.0).view(3, 4)[1:], L.arange(6.0).view(2, 3).t(),
              L.rand(2, 3, 4, 5).contiguous(memory_format=L.channels_last)):
        c = copy.deepcopy(t)
        seen += [c.stride(), c.storage_offset(), c.untyped_storage().nbytes(), c.equal(t)]
    weight = L.nn.Parameter(L.rand(4, 3, 2, 2).contiguous(memory_format=L.channels_last))
    weight.grad = L.ones(4, 3, 2, 2)
    sliced = L.nn.Parameter(L.arange(10.0)[::2], requires_grad=False)
    copies = copy.deepcopy([weight, sliced, weight])
    source = L.arange(4.0)
    copy.deepcopy(source).add_(1)
    return seen + [(type(c).__name__, c.stride(), c.storage_offset(), c.grad, c.requires_grad) for c in copies] + [
        copies[0] is copies[2], source]


@scenario
def strides_of_empty_tensors(L):
    """A tensor without elements has torch's row-major strides, a size 0 counted as 1 (NumPy's fresh empty arrays
    have zero strides), made by a factory, an op, a reshape or a slice."""
    tensors = [L.empty(0, 3), L.zeros(2, 0, 4), L.ones(2, 3, 0), L.empty(0), L.tensor([]), L.empty(0, 1, 0, 2),
               L.zeros(0, 3).reshape(3, 0), L.ones(5, 3)[1:1], L.zeros(4, 5)[:, 5:], L.zeros(0, 3) + 1,
               L.empty_permuted((2, 0, 4), (1, 2, 0))]
    return [(t.stride(), t.stride(-1), t.is_contiguous()) for t in tensors]


@scenario
def clones_of_empty_tensors(L):
    """clone() of empty tensors, transposed, permuted or sliced among them, is an empty tensor of the same shape
    (their layout is not compared: torch keeps whatever strides the empty input had)."""
    tensors = [L.zeros(0, 1), L.zeros(0, 3).t(), L.zeros(2, 0, 1), L.zeros(2, 3, 0, 4).permute(0, 2, 3, 1),
               L.zeros(0, 4)[:, ::2], L.zeros(0, 2, dtype=L.complex64).conj()]
    return [(t.clone(), t.clone().is_contiguous(), t.abs().abs()) for t in tensors]


@scenario
def standard_basis_blocks(L):
    """autograd.functional's identity blocks, one per tensor, in its dtype (torch's tests call it)."""
    inputs = (L.ones(2, 3, dtype=L.float64), L.ones(()), L.ones(0), L.ones(2))
    return list(L.autograd.functional._construct_standard_basis_for(inputs, tuple(t.numel() for t in inputs)))


# ---- autograd conventions of ops --------------------------------------------------------------


@scenario
def pow_at_a_zero_base(L):
    """d(0 ** e)/de is 0 where e >= 0 and log(0) * inf = -inf where e < 0, for tensor and number bases."""
    grads = []
    for base in (L.zeros(3), 0):
        e = L.tensor([-1.0, 0.0, 1.0], requires_grad=True)
        (base ** e).sum().backward()
        grads.append(e.grad)
    e = L.tensor([-1.0 + 1j, 0.0, 1.0], requires_grad=True)
    (0 ** e).sum().abs().backward()  # the gradient at the NaN sum is NaN: grad multiplies the masked derivative
    return grads + [e.grad]


@scenario
def integer_and_boolean_outputs_do_not_require_grad(L):
    x = L.tensor([0.5, -1.0, 2.0, -0.0], requires_grad=True)
    outs = [L.searchsorted(L.sort(x).values, L.tensor(0.7, requires_grad=True)),
            L.bucketize(x, L.linspace(-1, 1, 5, requires_grad=True)), L.isin(x, L.tensor([2, 3])), L.signbit(x)]
    return [(o.dtype, o.requires_grad, o) for o in outs]


@scenario
def unique_values_require_grad_without_a_derivative(L):
    """torch declares the values of unique differentiable and their backward not implemented."""
    x = L.tensor([[3.0, 1.0], [3.0, 1.0], [2.0, 2.0]], requires_grad=True)
    calls = [lambda: L.unique(x, return_inverse=True, return_counts=True), lambda: L.unique(x, dim=0),
             lambda: L.unique_consecutive(x, return_counts=True), lambda: L.unique_consecutive(x, dim=1),
             lambda: L._unique(x, return_inverse=True), lambda: L._unique2(x, return_counts=True),
             lambda: L._VF.unique_dim(x, 1)]
    seen = []
    for call in calls:
        out = call()
        values = out[0] if isinstance(out, tuple) else out
        seen += [out, name(values), [o.requires_grad for o in (out if isinstance(out, tuple) else (out,))],
                 outcome(lambda: values.sum().backward())]
    return seen


@scenario
def numpy_of_a_tensor_that_requires_grad(L):
    """Refused while grad mode is on, allowed under no_grad."""
    x = L.ones(2, requires_grad=True)
    with L.no_grad():
        allowed = x.numpy().tolist()
    return [outcome(x.numpy), allowed]


@scenario
def unsafe_split_pieces_are_not_tracked_views(L):
    """Written in place, an unsafe_split piece records no CopySlices and bumps only its own version."""
    seen = []
    for split in (lambda t: t.unsafe_split(1), lambda t: t.unsafe_split_with_sizes((1, 1, 1)),
                  lambda t: L.unsafe_chunk(t, 3)):
        a = L.tensor(np.arange(9.0).reshape(3, 3), requires_grad=True)
        b = a + a
        s1, s2, _ = split(b)
        s1.mul_(s2)
        s1.sum().backward()
        seen += [name(s2), s1._base is None, name(s1), name(b), s1._version, b._version, a.grad]
    return seen


@scenario
def instance_norm_checks_its_input(L):
    x = L.ones(1, 1, 1, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        L.nn.InstanceNorm2d(2)(x)
    return [[str(w.message) for w in caught], repr(L.nn.InstanceNorm2d(2)),
            outcome(lambda: L.nn.InstanceNorm2d(2, affine=True)(x)), outcome(lambda: L.nn.InstanceNorm1d(1)(x))]


# ---- out= ----------------------------------------------------------------------------------


@scenario
def out_receives_the_result(L):
    """Written, cast and resized (with torch's warning when it held elements), bumped once, returned."""
    seen = []
    for out in (L.zeros(2, 2), L.zeros(3), L.zeros(4, dtype=L.float64), L.zeros(0)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            returned = L.mul(L.ones(2, 2), 2, out=out)
        # torch's C++ warnings end with where they were raised, " (Triggered internally at ...)"; with a cast
        # it warns twice (its kernel resizes a temporary too): the distinct messages are compared
        seen += [returned is out, out, out._version, sorted({str(w.message).split(" (Triggered")[0] for w in caught})]
    values, indices = L.zeros(2), L.zeros(2, dtype=L.int64)
    pair = L.max(L.tensor([[1.0, 3.0], [4.0, 2.0]]), 1, out=(values, indices))
    seen += [pair.values is values, pair.indices is indices, values, indices]
    seen += [L.exp(L.zeros(2), out=L.ones(2)), L.cat([L.ones(1), L.zeros(1)], out=L.empty(2)),
             L.add(L.ones(2), 1, alpha=2, out=L.empty(2))]
    return seen + [outcome(lambda: L.mul(L.ones(2), 2.5, out=L.zeros(2, dtype=L.int64)))]


@scenario
def out_refuses_what_autograd_would_need(L):
    a, b = L.ones(2, 2, requires_grad=True), L.ones(2, 2)
    seen = [outcome(lambda: L.mul(a, b, out=L.zeros(2, 2))), outcome(lambda: L.exp(a, out=L.zeros(2, 2))),
            outcome(lambda: L.sum(a, 0, out=L.zeros(2))),
            outcome(lambda: L.mul(b, b, out=L.zeros(2, 2).requires_grad_())),
            outcome(lambda: L.cat([a, b], out=L.zeros(4, 2)))]
    with L.no_grad():
        x = L.zeros(2, 2)
        L.mul(a, 3, out=x)
    fw = L.autograd.forward_ad
    with fw.dual_level():
        dual, plain = fw.make_dual(L.ones(2), L.ones(2)), L.ones(2)
        seen += [outcome(lambda: L.add(plain, plain, out=dual)), outcome(lambda: L.add(dual, plain, out=plain))]
    return seen + [x, x.requires_grad]


@scenario
def prod_double_backward_with_two_zeros_in_one_place(L):
    """The gradient is right; differentiating it again raises torch's delayed error."""
    seen = []
    for fn in (L.scatter_reduce, L.index_reduce):
        x = L.tensor([1.0], dtype=L.float64, requires_grad=True)
        src = L.tensor([0.0, 0.0], dtype=L.float64, requires_grad=True)
        out = fn(x, 0, L.tensor([0, 0]), src, "prod")
        (g,) = L.autograd.grad(out.sum(), src, create_graph=True)
        seen += [g, outcome(lambda: L.autograd.grad(g.sum(), src))]
    return seen + [outcome(lambda: L.index_reduce(L.ones(2), 0, L.tensor([0]), L.ones(1), "sum"))]


@scenario
def membership_compares_elements(L):
    """`x in tensor` asks whether any element equals x (a number, or a tensor broadcast against it), a 0-d tensor
    included; anything else is refused with torch's RuntimeError."""
    grid = L.tensor([[1, 2], [3, 4]])
    return [outcome(lambda: element in grid)
            for element in (3, 5, 3.0, True, L.tensor([3, 4]), L.tensor([3, 5]), np.float64(2), "a", [1], None)] + [
        3 in L.tensor(3), float("nan") in L.tensor([float("nan")]), 1 in L.ones(0)]


@scenario
def scatter_and_index_reduce_on_integers_and_bools(L):
    """An integer mean floor-divides, include_self=False starts amax/amin from the dtype's least/greatest value
    (False/True for bool, not a cast infinity), integer sums wrap before the mean; bool means and complex
    index_reduce refuse by torch's kernel names."""
    index, seen = L.tensor([0, 0, 1, 1]), []
    for dtype, values in ((L.int64, [1, 2, -3, -4]), (L.int8, [1, 2, -3, -4]), (L.uint8, [1, 2, 7, 250]),
                          (L.bool, [True, False, False, False])):
        src = L.tensor(values, dtype=dtype)
        for reduce in ("sum", "prod", "mean", "amax", "amin"):
            for include_self in (True, False):
                start = L.tensor([5, 0, 0]).to(dtype)
                seen.append(outcome(lambda: start.scatter_reduce(0, index, src, reduce, include_self=include_self)))
                if reduce != "sum":
                    seen.append(outcome(lambda: start.index_reduce(0, index, src, reduce, include_self=include_self)))
    complex_ones = L.ones(2, dtype=L.complex64)
    for include_self in (True, False):
        seen.append(outcome(lambda: complex_ones.index_reduce(0, index[:2], complex_ones, "amax",
                                                              include_self=include_self)))
    return seen


@scenario
def igamma_is_differentiable_in_other_only(L):
    a = L.tensor([0.5, 2.0, 30.0], dtype=L.float64, requires_grad=True)
    x = L.tensor([1.0, 2.0, 29.9], dtype=L.float64, requires_grad=True)
    seen = []
    for fn in (L.igamma, L.igammac):
        out = fn(a, x)
        seen += [name(out), outcome(lambda: out.sum().backward()), x.grad]
        fn(a.detach(), x).sum().backward()
        seen.append(x.grad)
        x.grad = None
    fw = L.autograd.forward_ad
    with fw.dual_level():
        dual = fw.make_dual(L.ones(3), L.ones(3))
        refused = outcome(lambda: L.igamma(dual, dual))
    return seen + [refused[:2], refused[2].splitlines()[0]]  # torch adds a line asking for an issue


# ---- torch.testing ---------------------------------------------------------------------------


@scenario
def assert_close_messages(L):
    pairs = [(1.0, 1.1, {}), (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0], dtype=L.float64), {}),
             (L.ones(2), L.ones(3), {}), ([L.ones(2)], [L.zeros(2)], {}), (L.tensor([1, 2]), L.tensor([1, 3]), {}),
             (L.tensor(float("nan")), L.tensor(float("nan")), {}), ({"a": L.ones(1)}, {"a": L.zeros(1)}, {}),
             (L.tensor([True]), L.tensor([False]), {}), (1, 2, {}),
             (L.tensor(float("nan")), L.tensor(float("nan")), {"equal_nan": True}),
             (L.tensor([1.0, 2.0]), L.tensor([1.05, 2.0]), {"rtol": 0.1, "atol": 0}),
             (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0 + 1e-6]), {}), (L.ones(2), L.ones(2), {"rtol": 0.1})]
    return [outcome(lambda: L.testing.assert_close(a, b, **k)) for a, b, k in pairs]


@scenario
def make_tensor_properties(L):
    """Shapes, dtypes, ranges and layouts, and the values: drawn as torch's from the seeded global generator."""
    L.manual_seed(0)
    make = L.testing.make_tensor
    floats, ints = make((2, 3), dtype=L.float32, device="cpu"), make(4, 5, dtype=L.int64, device="cpu", low=0, high=3)
    flags = make((2, 3), dtype=L.float64, device="cpu", noncontiguous=True, requires_grad=True)
    return [floats.shape, floats.dtype, bool((floats >= -9).all() and (floats < 9).all()), ints.shape,
            bool((ints >= 0).all() and (ints < 3).all()), make((3,), dtype=L.bool, device="cpu").dtype,
            make((2,), dtype=L.complex64, device="cpu").dtype, flags.stride(), flags.is_contiguous(),
            flags.requires_grad, bool((make((50,), dtype=L.int64, device="cpu", exclude_zero=True) != 0).all()),
            make((2, 3, 4, 5), dtype=L.float32, device="cpu", memory_format=L.channels_last).stride(),
            outcome(lambda: make((2,), dtype=L.float32, device="cpu", low=3, high=1)),
            *(make((2, 3), dtype=dtype, device="cpu").tolist() for dtype in (L.float16, L.complex64, L.uint8, L.bool)),
            make((3,), dtype=L.float32, device="cpu", low=-1e39, high=1e39).tolist(),  # drawn at half scale
            outcome(lambda: make((2,), dtype=L.uint8, device="cpu", low=300, high=400)),
            outcome(lambda: make((2,), dtype=L.int64, device="cpu", requires_grad=True)), L.rand(2).tolist()]


@scenario
def view_as_another_dtype(L):
    """view(dtype) reinterprets the bits (a smaller element splits the last dim, a larger one merges it), shares
    memory and the version counter without being an autograd view, is not differentiable, and refuses with
    torch's reasons."""
    x = L.tensor([[1.0, -2.0], [3.5, 0.25]])
    seen = [x.view(L.int32), x.view(L.int16), x.view(L.uint8), x.view(L.float64), x[:1].view(L.int64),
            x.view(L.complex64), L.tensor([1 + 2j]).view(L.float32), x.view(L.float16), x.t().view(L.int32),
            L.tensor(1.0).view(L.int32), L.tensor([1, 2]).view(L.float64), x.view(dtype=L.int32)]
    refused = [outcome(lambda: L.ones(3).view(L.float64)), outcome(lambda: L.tensor(1.0).view(L.int16)),
               outcome(lambda: x.t().view(L.int16)), outcome(lambda: L.ones(2, 4).t().view(L.float64)),
               outcome(lambda: L.arange(8.0).view(2, 4)[:, 1:3].view(L.float64)),
               outcome(lambda: L.ones(4, 4)[:, :2].view(2, 4)[:, 1:3].view(L.float64))]
    y = x.clone()
    v = y.view(L.int32)
    v.add_(1)
    leaf = L.ones(2, requires_grad=True)
    flags = [v._is_view(), v._base is None, y._version, y.tolist(), leaf.view(L.float32).requires_grad,
             leaf.view(L.complex64).requires_grad]
    return seen, refused, flags


@scenario
def size_arithmetic(L):
    """A Size sliced, concatenated with a tuple on either side or repeated stays a Size; its items must be ints."""
    size = L.Size([2, 3])
    made = [lambda: size + (4,), lambda: (4,) + size, lambda: size + size, lambda: size[1:], lambda: size[::-1],
            lambda: size * 2, lambda: 2 * size, lambda: size * 0, lambda: size[0], lambda: L.Size(L.tensor([1, 2])),
            lambda: L.Size([True, np.int64(3)]), lambda: L.Size(5), lambda: L.Size([1.5]), lambda: L.Size(["a"]),
            lambda: size + [4], lambda: size + 1, lambda: size * 1.5, lambda: size.__reduce__()[1]]
    return [outcome(lambda: (type(v := fn()).__name__, repr(v))) for fn in made]


@scenario
def range_indexes_like_a_list(L):
    """A range in a key is an integer index (makemore's `logprobs[range(n), Yb]`), read, written and differentiated."""
    x = L.arange(12.0).reshape(3, 4).requires_grad_()
    picked = x[range(3), L.tensor([0, 2, 1])]
    picked.sum().backward()
    y = L.zeros(3, 4)
    y[range(3), [1, 1, 0]] = -1.0
    return [picked, name(picked), x.grad, y, x[range(1, 3)], x[range(0)].shape, x[1, range(2)]]


@scenario
def numpy_keyword_names(L):
    """axis= and keepdims= for dim= and keepdim=, where torch's argument parser takes them: methods and functions
    parsed in C++, in-place ones too; not torch's Python ones (norm, split, unique, nn.functional), not twice."""
    x = L.arange(12.0, dtype=L.float64).reshape(3, 4).requires_grad_()
    taken = [x.sum(1, keepdims=True), L.sum(x, axis=0), x.mean(axis=0, keepdims=True), x.max(axis=1, keepdims=True),
             L.cat([x, x], axis=1).shape, x.softmax(axis=1), L.argmax(x, axis=0), x.std(axis=1, keepdims=True),
             x.detach().clone().cumsum_(axis=1), x.gather(axis=1, index=L.tensor([[0], [2], [1]])),
             L.logsumexp(x, axis=1, keepdims=True), x.unsqueeze(axis=0).shape]
    taken[0].sum().backward()
    refused = [outcome(call) for call in (lambda: x.sum(dim=1, axis=0), lambda: x.sum(0, keepdim=True, keepdims=True),
                                          lambda: x.norm(2, axis=1), lambda: x.split(1, axis=0),
                                          lambda: L.nn.functional.softmax(x, axis=1), lambda: x.unique(axis=0))]
    return taken + [name(taken[0]), x.grad] + [r[:2] for r in refused]


@scenario
def concatenate_keywords(L):
    """torch.concatenate, NumPy's name for cat, still names its dim `dim` (efficient-kan passes `dim=0`), and takes
    `axis` as every parsed function does; both at once, or NumPy's name beside a positional dim or keepdim, are
    refused in torch's words."""
    x = L.arange(6.0).reshape(2, 3).requires_grad_()
    joined = [L.concatenate([x, x], dim=1), L.concatenate([x, x], axis=0), L.concatenate([x, x]),
              L.concat([x, x], axis=1), x.mean(0, keepdims=True)]
    refused = [outcome(call) for call in (lambda: L.concatenate([x, x], dim=0, axis=0),
                                          lambda: L.cat([x, x], 0, axis=0), lambda: L.sum(x, 0, axis=0),
                                          lambda: x.sum(0, True, keepdims=True))]
    return joined + [name(joined[0])] + refused


@scenario
def attributes_set_by_scripts(L):
    """A script's own attributes on tensors and parameters (Mamba's `A_log._no_weight_decay = True`, a weight-decay
    filter reading them back): kept by pickle, by deepcopy of a tensor but not of a Parameter, and by a module's
    dtype change; not by clones or views, as torch's."""
    import copy
    import pickle
    tensor, module = L.ones(2), L.nn.Linear(2, 2)
    tensor.tag = "x"
    module.weight._no_weight_decay = True
    decayed = [name for name, p in module.named_parameters() if not getattr(p, "_no_weight_decay", False)]
    kept = [tensor.tag, tensor.__dict__, L.ones(1).__dict__, vars(module.weight), copy.deepcopy(tensor).tag,
            pickle.loads(pickle.dumps(tensor)).tag, pickle.loads(pickle.dumps(module.weight))._no_weight_decay,
            module.double().weight._no_weight_decay, "tag" in dir(tensor), decayed]
    lost = [outcome(call) for call in (lambda: copy.deepcopy(module.weight)._no_weight_decay,
                                       lambda: tensor.clone().tag, lambda: tensor.view(2).tag, lambda: tensor.other)]
    return kept + lost


@scenario
def split_keywords(L):
    """Tensor.split names its sizes `split_size` (torch/_tensor.py; mamba-minimal passes them by keyword) and
    torch.split `split_size_or_sections`; each refuses the other's name in torch's words."""
    x = L.arange(6.0).requires_grad_()
    pieces = x.split(split_size=[2, 4], dim=-1) + x.split(split_size=4) + L.split(x, split_size_or_sections=3)
    refused = [outcome(lambda: x.split(split_size_or_sections=2)), outcome(lambda: L.split(x, split_size=2))]
    return list(pieces) + [name(piece) for piece in pieces] + refused


@scenario
def format_specs(L):
    """f-strings of tensors (a training loop's f"{loss:.4f}"): a plain 0-d tensor formats as its number, one that
    requires grad too; a Parameter, a tensor with dims or a meta tensor formats as an object, its str() for an
    empty spec and TypeError for any other."""
    x = L.tensor(2.5, requires_grad=True)
    weight = L.nn.Parameter(L.tensor(1.5))
    shown = [f"{x:.3f}", f"{x * 2:>8.2f}", f"{L.tensor(3):03d}", f"{L.ones(2)}", format(weight, ""),
             f"{L.ones((), device='meta')}"]
    refused = [outcome(call) for call in (lambda: f"{weight:.2f}", lambda: f"{L.ones(2):.2f}",
                                          lambda: f"{L.ones(2):>40}", lambda: f"{L.ones((), device='meta'):.2f}")]
    return shown + refused


@scenario
def where_condition_not_a_tensor(L):
    """torch.where's condition is a Tensor in every overload: a list, a bool or a NumPy array is refused by the
    argument parser (TypeError, its first line compared), not read as an array."""
    x = L.ones(2)
    refused = [outcome(call) for call in (lambda: L.where([True, False], x, L.zeros(2)), lambda: L.where(True, x, 0.0),
                                          lambda: L.where((True, False), 1.0, x),
                                          lambda: L.where(np.array([True, False]), x, L.zeros(2)))]
    return [(kind, what, text.splitlines()[0]) for kind, what, text in refused]


@scenario
def where_gradients(L):
    """torch.where's gradient flows to input where the condition holds and to other elsewhere, in reverse and in
    forward mode (the rule reads the condition the kernel kept as an array)."""
    a = L.tensor([1.0, -2.0, 3.0], requires_grad=True)
    b = L.tensor([4.0, 5.0, -6.0], requires_grad=True)
    out = L.where(a > 0, a, b)
    (out * L.tensor([1.0, 10.0, 100.0])).sum().backward()
    with L.autograd.forward_ad.dual_level():
        dual = L.autograd.forward_ad.make_dual(L.ones(3), L.tensor([1.0, 2.0, 3.0]))
        tangent = L.autograd.forward_ad.unpack_dual(L.where(L.tensor([True, False, True]), dual, 0.0)).tangent
    return [out.grad_fn.name(), a.grad.tolist(), b.grad.tolist(), tangent.tolist()]


def test_grad_of_a_non_leaf_warns_as_torch():
    """Reading .grad of a non-leaf (a script's `print(hidden.grad)`) warns with torch's text, its C++ suffix
    included, and gives None."""
    seen = []
    for lib in (retrograd, torch):
        hidden = lib.ones(2, requires_grad=True) * 2
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            grad = hidden.grad
        seen.append((grad, [(w.category.__name__, str(w.message)) for w in caught]))
    assert seen[0] == seen[1]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_same_as_torch(name: str) -> None:
    ours = outcome(lambda: SCENARIOS[name](retrograd))
    theirs = outcome(lambda: SCENARIOS[name](torch))
    assert ours == theirs


@pytest.mark.parametrize("call", ["tensor_of_a_tensor", "softmax", "log_softmax", "softmin", "Softmax"])
def test_deprecation_warnings_are_torchs_and_name_the_callers_line(call):
    """torch.tensor(a_tensor) and a softmax without dim warn as torch does, from the line that called them."""
    def warned(L):
        x = L.ones(2, 3)
        calls = {"tensor_of_a_tensor": lambda: L.tensor(x), "softmax": lambda: L.nn.functional.softmax(x),
                 "log_softmax": lambda: L.nn.functional.log_softmax(x), "softmin": lambda: L.nn.functional.softmin(x),
                 "Softmax": lambda: L.nn.Softmax()(x)}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            calls[call]()
        return [(w.category.__name__, str(w.message), w.filename == __file__ or call == "Softmax") for w in caught]

    assert warned(retrograd) == warned(torch)


@pytest.mark.parametrize("call", ["var", "Tensor.var", "std", "Tensor.std", "var_mean", "std_mean"])
def test_degrees_of_freedom_warnings_name_the_callers_line(call):
    """var/std over one element warn from the user's line as torch's do, whether called as a function (through
    retrograd's NumPy-keyword wrapper) or a method; naming a wrapper's line instead also made Python's default
    filter show one warning for every caller."""
    def warned(L):
        x = L.ones(1)
        fn = getattr(L.Tensor, call.split(".")[1]) if "." in call else getattr(L, call)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn(x)
        return [(w.category.__name__, str(w.message).split(" (Triggered internally")[0], w.filename == __file__)
                for w in caught]

    assert warned(retrograd) == warned(torch)


WARN_ONCE_AFTER_ALWAYS = """
import warnings, numpy as np, {lib} as torch
warnings.simplefilter("always")
read_only = np.ones(3)
read_only.flags.writeable = False
torch.set_warn_always(True)
with warnings.catch_warnings(record=True) as always:
    torch.from_numpy(read_only), torch.from_numpy(read_only)
torch.set_warn_always(False)
with warnings.catch_warnings(record=True) as after:
    torch.from_numpy(read_only), torch.as_tensor(read_only), torch.Tensor(read_only)
print(len(always), len(after))
"""


def test_warnings_under_warn_always_leave_the_once_to_come():
    """TORCH_WARN_ONCE sets its flag only when it warns as the once: after set_warn_always(False) the warning still
    comes, once (a fresh process each, the flag being per process)."""
    counts = [subprocess.run([sys.executable, "-c", WARN_ONCE_AFTER_ALWAYS.format(lib=lib)], capture_output=True,
                             text=True, check=True).stdout for lib in ("torch", "retrograd")]
    assert counts[1] == counts[0] == "2 1\n"
