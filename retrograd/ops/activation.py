"""Rule table: activation functions (OPS.md section C) and their torch.nn.functional signatures.

Each activation torch runs as one kernel has one row with its own node (EluBackward0,
GeluBackward0, ...); tanhshrink and softsign are composites in torch too. The in-place forms
(`inplace=True`, `F.elu_`) write the result into the input (`Tensor._become`). Where torch's
in-place kernel saves its *result* instead of its input it records another node
(ThresholdBackward1, LeakyReluBackward1, EluBackward1, CeluBackward1), and so do we; the others
keep the out-of-place node, which then saves a snapshot of the input taken before the write.
An activation's backward is a row too (hardtanh_backward, elu_backward, ...), with torch's
double-backward formulas, so a gradient taken under create_graph records torch's
XxxBackwardBackward0 node; for the piecewise-linear ones its derivative in the input is
zeros_like(grad), as in torch, so a second gradient is zeros rather than None.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from .. import _dtype as D
from .. import _xp
from .._creation import _torch_rng
from .._tensor import Tensor
from ..autograd.forward_ad import transforms
from . import arrays as A
from .pointwise import _horner, _refuse_kinds, erf, refuse_unordered, sigmoid, tanh, where, zero_where
from .pointwise import relu as _relu_row
from .registry import Op, apply, defop, linear_backward_op, namespace
from .shape import cat

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946

# ============================================================================================
# Rows: threshold and the relu family
# ============================================================================================


@defop("threshold", params=("threshold", "value"), self="threshold_backward(grad, self, threshold)",
       jvp="threshold_backward(self_t, self, threshold)")
def threshold_op(xp, x, threshold, value):
    _refuse_kinds(x, "threshold_cpu", "bc")
    return xp.where(x <= threshold, xp.asarray(value, dtype=x.dtype, device=x.device), x)


# torch's threshold_ reads the input from before the write (a snapshot), under another node name
threshold_inplace = threshold_op.alias("threshold_", "ThresholdBackward1")


@defop("leaky_relu", params=("negative_slope",), self="leaky_relu_backward(grad, self, negative_slope)",
       jvp="leaky_relu_backward(self_t, self, negative_slope)")
def leaky_relu_op(xp, x, negative_slope):
    _refuse_kinds(x, "leaky_relu_cpu", "buic")
    return xp.where(x > 0, x, x * xp.asarray(negative_slope, dtype=x.dtype, device=x.device))


@defop("leaky_relu_result", node="LeakyReluBackward1", params=("negative_slope",),
       self="leaky_relu_backward(grad, result, negative_slope)",
       jvp="leaky_relu_backward(self_t, result, negative_slope)")
def leaky_relu_result(xp, x, negative_slope):
    return leaky_relu_op.forward(xp, x, negative_slope)


@defop("hardtanh", params=("min_val", "max_val"), self="hardtanh_backward(grad, self, min_val, max_val)",
       jvp="hardtanh_backward(self_t, self, min_val, max_val)")
def hardtanh_op(xp, x, min_val, max_val):
    refuse_unordered(x, "Bool inputs not supported for hardtanh")  # torch's hardtanh is a clamp
    low, high = (xp.asarray(v, dtype=x.dtype, device=x.device) for v in (min_val, max_val))
    return xp.minimum(xp.maximum(x, low), high)


# the result is min_val / max_val exactly where the input was beyond them: same rule, reading the result
@defop("hardtanh_result", node="HardtanhBackward0", params=("min_val", "max_val"),
       self="hardtanh_backward(grad, result, min_val, max_val)",
       jvp="hardtanh_backward(self_t, result, min_val, max_val)")
def hardtanh_result(xp, x, min_val, max_val):
    return hardtanh_op.forward(xp, x, min_val, max_val)


# ============================================================================================
# Rows: the activations' backwards (their own nodes, XxxBackwardBackward0, under create_graph)
# ============================================================================================


@linear_backward_op("leaky_relu_backward", ("negative_slope",))
def leaky_relu_backward(xp, g, x, negative_slope):
    """grad where x > 0, else negative_slope * grad (x: the input, or the result of the in-place form)."""
    return xp.where(x > 0, g, g * xp.asarray(negative_slope, dtype=g.dtype, device=g.device))


@linear_backward_op("hardtanh_backward", ("min_val", "max_val"))
def hardtanh_backward(xp, g, x, min_val, max_val):
    """grad strictly inside (min_val, max_val), 0 at and beyond the boundaries (grad at NaN, as torch)."""
    return zero_where(xp, (x <= min_val) | (x >= max_val), g)


@linear_backward_op("softshrink_backward", ("lambd",))
def softshrink_backward(xp, g, x, lambd):
    """grad where |x| > lambd, else 0 (softshrink's slope is 1 outside the dead zone)."""
    return _shrink_backward(xp, g, x, lambd)


@linear_backward_op("hardshrink_backward", ("lambd",))
def hardshrink_backward(xp, g, x, lambd):
    """grad where |x| > lambd, else 0: hardshrink's slope is softshrink's, under its own node."""
    return _shrink_backward(xp, g, x, lambd)


def _shrink_backward(xp, g, x, lambd):
    return zero_where(xp, (x >= -lambd) & (x <= lambd), g)


def _smooth_backward_op(name: str, params: Sequence[str] = (), grad_output: str | None = None) -> Callable:
    """Declare an activation's backward as a row of its own (torch's XxxBackwardBackward0 under create_graph):
    elementwise, so its derivative in grad_output is itself (unless `grad_output` says otherwise), and in self
    the composite `<name minus _backward>_double_backward(grad, grad_output, self, params)`; its JVP is both."""
    args = "".join(", " + p for p in params)
    double = name.replace("_backward", "_double_backward")
    return defop(name, inputs=("grad_output", "self"), params=params,
                 grad_output=grad_output or f"{name}(grad, self{args})",
                 self=f"{double}(grad, grad_output, self{args})",
                 jvp=f"{name}(grad_output_t, self{args}) + {double}(self_t, grad_output, self{args})")


# torch defines no derivative of hardsigmoid's backward: under create_graph its node is NotImplemented, which raises
@defop("hardsigmoid_backward", node="NotImplemented", inputs=("grad_output", "self"),
       grad_output="not_implemented('hardsigmoid_backward')", self="not_implemented('hardsigmoid_backward')",
       jvp="where((self > -3) & (self < 3), grad_output_t / 6, 0)")
def hardsigmoid_backward(xp, g, x):
    """grad / 6 strictly inside (-3, 3), 0 elsewhere."""
    zero = xp.zeros((), dtype=g.dtype, device=g.device)
    return A.astype(xp, xp.where((x > -3) & (x < 3), g / 6, zero), g.dtype, copy=False)


@_smooth_backward_op("elu_backward", ("alpha", "scale", "input_scale", "is_result"))
def elu_backward(xp, g, x, alpha, scale, input_scale, is_result):
    """scale on the positive side; on the other alpha scale input_scale exp(input_scale x) from the input,
    or input_scale (y + alpha scale) from the result y (the in-place forms)."""
    if is_result:
        negative = g * (input_scale * (x + alpha * scale))
    else:
        negative = g * (alpha * scale * input_scale) * xp.exp(x * input_scale)
    return A.astype(xp, xp.where(x > 0, g * scale, negative), g.dtype, copy=False)


@_smooth_backward_op("gelu_backward", ("approximate",))
def gelu_backward(xp, g, x, approximate):
    """grad times d gelu (not in place: grad may carry batch dimensions that x does not, batched grads)."""
    return A.blockwise(lambda grad, v, out: A.product(grad, _gelu_slope(xp, v, approximate), out),
                       g, x)  # Note [blockwise passes]


def _gelu_slope(xp, x, approximate):
    """d gelu: Phi(x) + x phi(x) exactly, or the derivative of torch's tanh approximation."""
    if approximate == "tanh":
        beta, kappa = math.sqrt(2 / math.pi), 0.044715
        t = xp.tanh(beta * (x + kappa * x * x * x))
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * beta * (1 + 3 * kappa * x * x)
    square = x * x
    if xp is np and x.dtype == np.float32:  # exp2: half of exp's time (Note [float32 normal cdf])
        out = np.exp2(square * np.float32(-0.5 / math.log(2)))
    else:
        out = xp.exp(square * -0.5)
    out *= 1 / math.sqrt(2 * math.pi)
    out *= x
    out += _normal_cdf(xp, x, square)
    return out


@_smooth_backward_op("softplus_backward", ("beta", "threshold"))
def softplus_backward(xp, g, x, beta, threshold):
    """grad sigmoid(beta x), and grad itself above the threshold."""
    bx = x * beta
    return A.astype(xp, xp.where(bx > threshold, g, g * sigmoid.forward(xp, bx)), g.dtype, copy=False)


@_smooth_backward_op("hardswish_backward")
def hardswish_backward(xp, g, x):
    """0 up to -3, x / 3 + 1/2 between, 1 from 3 on (torch's choice at the joins), times grad."""
    return A.astype(xp, g * xp.where(x <= -3, 0, xp.where(x < 3, x / 3 + 0.5, 1)), g.dtype, copy=False)


@_smooth_backward_op("log_sigmoid_backward")
def log_sigmoid_backward(xp, g, x):
    """grad sigmoid(-x)."""
    return g * sigmoid.forward(xp, -x)


def _halves(x, dim):
    """x's first and second halves along dim (NumPy's split; the standard slices)."""
    half, before = x.shape[dim] // 2, (slice(None),) * (dim % x.ndim)
    return x[before + (slice(0, half), ...)], x[before + (slice(half, None), ...)]


@_smooth_backward_op("glu_backward", ("dim",), grad_output="glu_jvp(grad, self, dim)")
def glu_backward(xp, g, x, dim):
    """The halves' gradients side by side: grad sigmoid(b), and grad a sigmoid'(b)."""
    a, b = _halves(x, dim)
    gate = sigmoid.forward(xp, b)
    return xp.concat([g * gate, g * a * gate * (1 - gate)], axis=dim)


@linear_backward_op("rrelu_with_noise_backward", ("noise", "lower", "upper", "training"))
def rrelu_with_noise_backward(xp, g, x, noise, lower, upper, training):
    """grad times the drawn slopes in training (unless the range is a point), else leaky_relu's at their mean."""
    if training and upper - lower > 1e-6:
        return g * noise
    return leaky_relu_backward.forward(xp, g, x, (lower + upper) / 2)


# ============================================================================================
# Rows: randomized leaky relu (noise: the slopes drawn for training, 1 on the positive side)
# ============================================================================================


@defop("rrelu_with_noise", params=("noise", "lower", "upper", "training"),
       self="rrelu_with_noise_backward(grad, self, noise, lower, upper, training)",
       jvp="rrelu_with_noise_backward(self_t, self, noise, lower, upper, training)")
def rrelu_op(xp, x, noise, lower, upper, training):
    if training:  # eval mode is leaky_relu's, which refuses for itself
        _refuse_kinds(x, "rrelu_with_noise_out_cpu", "buic")
    return x * noise if training else leaky_relu_op.forward(xp, x, (lower + upper) / 2)


@defop("rrelu_with_noise_result", node="RreluWithNoiseBackward1", params=("noise", "lower", "upper", "training"),
       self="rrelu_with_noise_backward(grad, result, noise, lower, upper, training)",
       jvp="rrelu_with_noise_backward(self_t, result, noise, lower, upper, training)")
def rrelu_result(xp, x, noise, lower, upper, training):
    return rrelu_op.forward(xp, x, noise, lower, upper, training)


# ============================================================================================
# Rows: the exponential linear units (elu, selu and celu share one kernel, as in torch)
# ============================================================================================


@defop("elu", params=("alpha", "scale", "input_scale"),
       self="elu_backward(grad, self, alpha, scale, input_scale, False)",
       jvp="elu_backward(self_t, self, alpha, scale, input_scale, False)")
def elu_op(xp, x, alpha, scale, input_scale):
    _refuse_kinds(x, "elu_cpu", "buic")
    negative = (scale * alpha) * xp.expm1(x * input_scale)
    return A.astype(xp, xp.where(x > 0, x * scale, negative), x.dtype, copy=False)


@defop("elu_result", node="EluBackward1", params=("alpha", "scale", "input_scale"),
       self="elu_backward(grad, result, alpha, scale, input_scale, True)",
       jvp="elu_backward(self_t, result, alpha, scale, input_scale, True)")
def elu_result(xp, x, alpha, scale, input_scale):
    return elu_op.forward(xp, x, alpha, scale, input_scale)


celu_op = elu_op.alias("celu", "CeluBackward0")
celu_result = elu_result.alias("celu_result", "CeluBackward1")

# ============================================================================================
# Rows: smooth activations
# ============================================================================================


@defop("gelu", params=("approximate",), self="gelu_backward(grad, self, approximate)",
       jvp="gelu_backward(self_t, self, approximate)")
def gelu_op(xp, x, approximate):
    _refuse_kinds(x, "GeluKernelImpl", "buic")
    return A.blockwise(lambda v, out: _gelu(xp, v, approximate, out), x)  # Note [blockwise passes]


def _gelu(xp, x, approximate, out):
    """x Phi(x), or torch's tanh approximation of it; the exact one into out, when given (A.blockwise)."""
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1 + xp.tanh(inner))
    return A.product(_normal_cdf(xp, x), x, out)


def _normal_cdf(xp, x, square=None):
    """Phi(x) = (1 + erf(x / sqrt(2))) / 2 in x's dtype, in place on erf's result (the GELU kernels); `square`:
    x * x if the caller has it. float32: erf's tanh formula with x / sqrt(2) folded into its polynomial (Note
    [float32 normal cdf])."""
    if xp is np and x.dtype == np.float32:
        u = _horner(x * x if square is None else square, _NORMAL_CDF_TANH_P)
        u *= x
        with np.errstate(over="ignore", invalid="ignore"):  # as _erf_float32: tanh(+-inf) = +-1, NaN stays
            out = xp.tanh(u)
    else:
        out = erf.forward(xp, x * (1 / math.sqrt(2)))  # the constant rounded to x's dtype (a weak Python scalar)
    out += 1
    out *= 0.5
    return out


# Note [float32 normal cdf]
# float32 GELU and its slope take Phi(x) = (1 + tanh(x p(x^2))) / 2 in float32, the form of float32 erf (Note
# [erf, erfc, erfinv in a few NumPy passes]) with x / sqrt(2) folded in and p of degree 7, not 9: a Lawson
# (weighted minimax) fit of atanh(2 Phi(x) - 1) / x in x^2 on [0, 4.5^2], weighted by Phi's relative error on
# the positive side (and up to x = 1 on the negative side), at most 3.2e-8. Four passes of Horner fewer, no
# scaling of x, and the slope shares x * x with exp(-x^2 / 2). Against float64 (from math.erfc) on 400,000
# float32 evenly spaced in their bits over [1e-30, 20] and their negatives, in float32 ulp of the true value:
#                     [-1, -0.5)  [-0.5, 0)  [0, 1)  [1, 20)
#   GELU      ours      2.64        1.88      1.77    1.68    (erf's 9-degree form: 3.18 1.61 1.52 1.54)
#             torch     2.37        1.65      1.72    4.91
#   its slope ours      7.5e3       3.72      2.01    1.34    (erf's 9-degree form: 8.9e3 3.82 1.75 1.13)
#             torch     3.4e4       13.6      4.51    1.73
# The slope's phi(x) is exp2(x^2 * (-1 / (2 ln 2))) / sqrt(2 pi) in float32: NumPy's float32 exp2 takes half of
# exp's time, and the constant's rounding adds under an ulp of phi up to |x| = 2; re-measured on the same
# points against exp(x^2 * -0.5), the slope's largest errors go 7.7e3, 3.16, 1.58, 1.33 -> 1.6e4, 3.48, 1.44,
# 1.33 ulp (the first column is the cancellation at the slope's root, in absolute terms 6e-8 either way).
# Further left 1 + tanh cancels, as torch's 1 + erf does (1e5 to 1e7 ulp off, both; the slope's root at -0.75
# is no better). From |x| = 4.5 on, x p(x^2) stays above 9 (tanh = 1 in float32) up to float32's largest,
# where it overflows to inf.
_NORMAL_CDF_TANH_P = (0.7978847301964266, 0.036334435623928685, -3.4623632713735934e-05, -5.41660848385388e-05,
                      3.6714043737138165e-06, -9.535303318962476e-08, -4.325061091682286e-10, 4.846289214898672e-11)


@defop("silu", self="silu_backward(grad, self)", jvp="silu_backward(self_t, self)")
def silu_op(xp, x):
    _refuse_kinds(x, "silu_cpu", "bui")
    return x * sigmoid.forward(xp, x)


@defop("mish", self="grad * mish_derivative(self)", jvp="self_t * mish_derivative(self)")
def mish_op(xp, x):
    _refuse_kinds(x, "mish_cpu", "buic")
    return x * xp.tanh(_softplus(xp, x, 1.0, 20.0))


@defop("softplus", params=("beta", "threshold"), self="softplus_backward(grad, self, beta, threshold)",
       jvp="softplus_backward(self_t, self, beta, threshold)")
def softplus_op(xp, x, beta, threshold):
    _refuse_kinds(x, "softplus_cpu", "buic")
    return _softplus(xp, x, beta, threshold)


def _softplus(xp, x, beta, threshold):
    """log(1 + exp(beta x)) / beta, computed without overflow; x itself above the threshold."""
    bx = x * beta
    smooth = (xp.maximum(bx, 0) + xp.log1p(xp.exp(-xp.abs(bx)))) / beta
    return A.astype(xp, xp.where(bx > threshold, x, smooth), x.dtype, copy=False)


@defop("log_sigmoid", node="LogSigmoidBackward0", self="log_sigmoid_backward(grad, self)",
       jvp="log_sigmoid_backward(self_t, self)")
def log_sigmoid_op(xp, x):
    _refuse_kinds(x, "log_sigmoid_cpu", "buic")
    return A.astype(xp, xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x))), x.dtype, copy=False)


# ============================================================================================
# Rows: piecewise-linear activations and shrinkage
# ============================================================================================


@defop("hardsigmoid", self="hardsigmoid_backward(grad, self)",
       jvp="where((self > -3) & (self < 3), self_t / 6, 0)")
def hardsigmoid_op(xp, x):
    _refuse_kinds(x, "hardsigmoid_cpu", "buic")
    return xp.minimum(xp.maximum(x + 3, 0), 6) / 6


@defop("hardswish", self="hardswish_backward(grad, self)", jvp="hardswish_backward(self_t, self)")
def hardswish_op(xp, x):
    _refuse_kinds(x, "hardswish_cpu", "buic")
    return x * xp.minimum(xp.maximum(x + 3, 0), 6) / 6


@defop("softshrink", params=("lambd",), self="softshrink_backward(grad, self, lambd)",
       jvp="softshrink_backward(self_t, self, lambd)")
def softshrink_op(xp, x, lambd):
    _refuse_kinds(x, "softshrink_check", "buic")
    lam = xp.asarray(lambd, dtype=x.dtype, device=x.device)
    return xp.where(x > lam, x - lam, xp.where(x < -lam, x + lam, xp.zeros((), dtype=x.dtype, device=x.device)))


@defop("hardshrink", params=("lambd",), self="hardshrink_backward(grad, self, lambd)",
       jvp="hardshrink_backward(self_t, self, lambd)")
def hardshrink_op(xp, x, lambd):
    _refuse_kinds(x, "hardshrink_cpu", "buic")
    return xp.where((x >= -lambd) & (x <= lambd), xp.zeros((), dtype=x.dtype, device=x.device), x)


# ============================================================================================
# Rows: gated and parametric
# ============================================================================================


@defop("glu", params=("dim",), self="glu_backward(grad, self, dim)", jvp="glu_jvp(self_t, self, dim)")
def glu_op(xp, x, dim):
    _refuse_kinds(x, "glu_cpu", "buic")
    a, b = _halves(x, dim)
    return a * sigmoid.forward(xp, b)


@defop("prelu", node="PreluKernelBackward0", inputs=("self", "weight"),
       self="prelu_kernel_backward(grad, self, weight)[0]", weight="prelu_kernel_backward(grad, self, weight)[1]",
       jvp="where(self >= 0, self_t, prelu_channels(weight, self.ndim) * self_t + "  # torch: >= here, > above
           "prelu_channels(weight_t, self.ndim) * self)")
def prelu_op(xp, x, w):
    _refuse_kinds(x, "prelu_cpu", "iubc")  # torch's kernel is for floating types only
    w = A.reshape(xp, w, _channel_shape(w.size, x.ndim))
    return xp.where(x > 0, x, w * x)


def _channel_shape(count: int, ndim: int) -> tuple:
    """prelu's weight broadcast along dim 1 (channels) of an input with ndim dims."""
    return (count,) + (1,) * (ndim - 2) if ndim >= 2 and count > 1 else ()


# torch's double backward of prelu: grads[0] and grads[1] are the incoming gradients of the two outputs (zeros
# where one has none, which are torch's values for an undefined one); torch reads self >= 0 here, > 0 above
@defop("prelu_kernel_backward", inputs=("grad_output", "self", "weight"), outputs=2,
       grad_output="where(self >= 0, grads[0], grads[0] * prelu_channels(weight, self.ndim) "
                   "+ prelu_channels(grads[1], self.ndim) * self)",
       self="where(self >= 0, 0, grad_output * prelu_channels(grads[1], self.ndim))",
       weight="prelu_channel_sum(where(self >= 0, 0, grad_output * grads[0]), weight_shape)",
       jvp="(where(self >= 0, grad_output_t, grad_output_t * prelu_channels(weight, self.ndim) "
           "+ grad_output * prelu_channels(weight_t, self.ndim)), "
           "prelu_channel_sum(where(self >= 0, 0, grad_output * self_t + grad_output_t * self), weight.shape))")
def prelu_kernel_backward(xp, g, x, w):
    """prelu's gradients in one row (PreluKernelBackwardBackward0 under create_graph): grad where x > 0, else
    weight * grad; and per channel, the sum of x * grad over the non-positive inputs."""
    positive = x > 0
    grad_x = xp.where(positive, g, A.reshape(xp, w, _channel_shape(w.size, x.ndim)) * g)
    return grad_x, prelu_channel_sum(xp.where(positive, xp.zeros((), dtype=g.dtype, device=g.device), x * g), w.shape)


# ============================================================================================
# Public functions: torch.nn.functional's signatures
# ============================================================================================


def _refuse_non_tensor(name: str, input: object) -> None:
    """torch's TypeError for an input that is not a tensor, in the words of its argument parser for `name`."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")


def _inplace(name: str, input: Tensor, op: Op, params: tuple = ()) -> Tensor:
    """Run an activation row and write its result into `input` (torch's `inplace=True`, which calls `name`_)."""
    _refuse_non_tensor(f"{name}_", input)
    input._check_inplace()
    return input._become(apply(op, (input,), params))


def _activation(name: str, out_of_place: Op, in_place: Op, input: Tensor, params: tuple, inplace: bool) -> Tensor:
    return _inplace(name, input, in_place, params) if inplace else apply(out_of_place, (input,), params)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """value where input <= threshold, else input."""
    return _activation("threshold", threshold_op, threshold_inplace, input, (threshold, value), inplace)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place threshold (ThresholdBackward1)."""
    return _inplace("threshold", input, threshold_inplace, (threshold, value))


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(input, 0) (torch.relu's row, with F.relu's `inplace`)."""
    return relu_(input) if inplace else apply(_relu_row, (input,))


def relu_(input: Tensor) -> Tensor:
    """In-place relu."""
    return _inplace("relu", input, _relu_row)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(input, 0), 6): torch runs it as hardtanh(input, 0, 6)."""
    _refuse_non_tensor("relu6_" if inplace else "relu6", input)
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """input clamped to [min_val, max_val]; unlike clamp, no gradient at the boundaries."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _activation("hardtanh", hardtanh_op, hardtanh_result, input, (min_val, max_val), inplace)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, inplace=True)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """input where positive, else negative_slope * input."""
    return _activation("leaky_relu", leaky_relu_op, leaky_relu_result, input, (negative_slope,), inplace)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, inplace=True)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """leaky_relu with a slope per negative element drawn from U(lower, upper) in training, their mean otherwise.

    Draws come from retrograd's default generator as torch's do: one float64 uniform between the bounds
    (rounded to the input's compute dtype) per non-positive element, in order, even when lower == upper, so
    a seed gives torch's slopes; not under vmap."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    _refuse_non_tensor("rrelu_" if inplace else "rrelu", input)
    x = input._data
    noise = None
    if training:
        if transforms.vmap:  # torch has no batching rule for it (nor its loop fallback, whatever the randomness)
            raise RuntimeError("vmap: we do not yet support aten::rrelu. Please file an issue")
        xp = namespace(x)
        negative = _xp.transfer(x <= 0, "cpu", None)
        dtype = D.of_array(x).np
        slopes = np.ones(x.shape, dtype)
        bounds = [float(np.dtype(dtype if dtype == np.float64 else np.float32).type(b)) for b in (lower, upper)]
        slopes[negative] = _torch_rng(None).uniform((int(negative.sum()),), np.float64, *bounds, fused=False)
        noise = xp.asarray(slopes, device=x.device)
    return _activation("rrelu", rrelu_op, rrelu_result, input, (noise, lower, upper, training), inplace)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    """In-place rrelu (RreluWithNoiseBackward1)."""
    return rrelu(input, lower, upper, training, inplace=True)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """input where positive, else alpha * (exp(input) - 1)."""
    return _activation("elu", elu_op, elu_result, input, (alpha, 1.0, 1.0), inplace)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, inplace=True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(input, alpha) with the self-normalising constants (EluBackward0 in torch)."""
    return _activation("selu", elu_op, elu_result, input, (_SELU_ALPHA, _SELU_SCALE, 1.0), inplace)


def selu_(input: Tensor) -> Tensor:
    """selu in place."""
    return selu(input, inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """input where positive, else alpha * (exp(input / alpha) - 1)."""
    return _activation("celu", celu_op, celu_result, input, (alpha, 1.0, 1.0 / alpha), inplace)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """celu in place."""
    return celu(input, alpha, inplace=True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x), exactly (erf) or with torch's tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return apply(gelu_op, (input,), (approximate,))


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x)."""
    return _activation("silu", silu_op, silu_op, input, (), inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    return _activation("mish", mish_op, mish_op, input, (), inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6."""
    return _activation("hardsigmoid", hardsigmoid_op, hardsigmoid_op, input, (), inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6."""
    return _activation("hardswish", hardswish_op, hardswish_op, input, (), inplace)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, and x where beta x > threshold."""
    return apply(softplus_op, (input,), (beta, threshold))


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)), without overflow."""
    return apply(log_sigmoid_op, (input,))


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    if lambd < 0:
        largest = np.finfo(input._data.dtype).max if input.dtype.is_floating_point else np.finfo(np.float32).max
        raise RuntimeError(f"lambda must be in range [0, {largest:g}] for input dtype "
                           f"{D.scalar_type_name(input.dtype)}, but found {lambd:g}")
    return apply(softshrink_op, (input,), (lambd,))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where ``|x| > lambd``, else 0."""
    return apply(hardshrink_op, (input,), (lambd,))


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x) (a composite in torch: SubBackward0)."""
    return input - tanh(input)


def softsign(input: Tensor) -> Tensor:
    """``x / (1 + |x|)`` (a composite in torch: DivBackward0)."""
    return input / (input.abs() + 1)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b) where a, b are the two halves of input along dim."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim + input.ndim if dim < 0 else dim
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {input.shape[d]}")
    return apply(glu_op, (input,), (d,))


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """input where positive, else weight * input, weight per channel (dim 1) or shared."""
    if not isinstance(weight, Tensor):
        raise TypeError(f"prelu(): argument 'weight' (position 2) must be Tensor, not {type(weight).__name__}")
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {D.scalar_type_name(input.dtype)} and "
                           f"{D.scalar_type_name(weight.dtype)}")
    count = weight.numel()
    channels = input.shape[1] if input.ndim >= 2 else 1
    if count != 1 and count != channels:
        raise RuntimeError("Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                           f"{count} and channel size = {channels}.")
    return apply(prelu_op, (input, weight))


# ============================================================================================
# Formula helpers
# ============================================================================================


def elu_double_backward(grad: Tensor, grad_output: Tensor, x: Tensor, alpha: float, scale: float,
                        input_scale: float, is_result: bool) -> Tensor:
    """elu_backward's derivative in x (the input, or the result): nonzero on the negative side only."""
    if is_result:
        return grad * grad_output * input_scale * (x < 0)
    return elu_backward(grad * grad_output * input_scale, x, alpha, scale, input_scale, False) * (x < 0)


def gelu_double_backward(grad: Tensor, grad_output: Tensor, x: Tensor, approximate: str) -> Tensor:
    """gelu's second derivative times grad and grad_output: phi(x) (2 - x^2) exactly, or that of the tanh form."""
    if approximate == "tanh":
        beta, kappa = math.sqrt(2 / math.pi), 0.044715
        u = beta * (x + kappa * x * x * x)
        t, sech = tanh(u), 1 / u.cosh()  # sech, not 1 - t^2, where t^2 is near 1 (torch's rounding in float32)
        du = beta * (1 + 3 * kappa * x * x)
        half_x, dt = 0.5 * x, 1 - t * t  # gelu' = (1 + t) / 2 + half_x dt du: differentiate each factor
        return grad * grad_output * (dt * du + half_x * du * (2 * sech) * (-sech * t) * du
                                     + half_x * dt * (6 * kappa * beta * x))
    pdf = (-0.5 * x * x).exp() * (1 / math.sqrt(2 * math.pi))
    return grad * grad_output * pdf * (2 - x * x)


def silu_backward(grad: Tensor, x: Tensor) -> Tensor:
    """grad * s * (1 + x (1 - s)) with s = sigmoid(x), in torch's order (its double-backward graph)."""
    s = sigmoid(x)
    return grad * s * (1 + x * (1 - s))


def mish_derivative(x: Tensor) -> Tensor:
    t = tanh(softplus(x))
    return t + x * sigmoid(x) * (1 - t * t)


def softplus_double_backward(grad: Tensor, grad_output: Tensor, x: Tensor, beta: float, threshold: float) -> Tensor:
    """beta sigmoid'(beta x) times grad and grad_output below the threshold, 0 above (softplus is x there)."""
    s = sigmoid(x * beta)
    return grad * grad_output * s * (1 - s) * (x * beta < threshold) * beta


def hardswish_double_backward(grad: Tensor, grad_output: Tensor, x: Tensor) -> Tensor:
    """1/3 times grad and grad_output strictly inside (-3, 3), 0 elsewhere."""
    return where((x > -3) & (x < 3), grad * grad_output / 3, 0)


def log_sigmoid_double_backward(grad: Tensor, grad_output: Tensor, x: Tensor) -> Tensor:
    """d/dx sigmoid(-x) = sigmoid(x) (sigmoid(x) - 1), times grad and grad_output."""
    s = sigmoid(x)
    return grad * grad_output * s * (s - 1)


def glu_double_backward(grad: Tensor, grad_output: Tensor, x: Tensor, dim: int) -> Tensor:
    """glu_backward's derivative in x applied to grad (the Hessian of <grad_output, glu(x)>, symmetric)."""
    grad_a, grad_b = grad.chunk(2, dim)
    a, b = x.chunk(2, dim)
    gate = sigmoid(b)
    slope = gate * (1 - gate) * grad_output
    return _cat([grad_b * slope, grad_a * slope + grad_b * a * slope * (1 - 2 * gate)], dim)


def glu_jvp(x_t: Tensor, x: Tensor, dim: int) -> Tensor:
    """glu's JVP, which is also glu_backward's derivative in grad_output (glu_double_backward_grad_output)."""
    a, b = x.chunk(2, dim)
    a_t, b_t = x_t.chunk(2, dim)
    gate = sigmoid(b)
    return a_t * gate + a * gate * (1 - gate) * b_t


def prelu_channels(weight: Tensor, ndim: int) -> Tensor:
    """The weight shaped to broadcast along the channel dim of an ndim input."""
    return weight.reshape(_channel_shape(weight.numel(), ndim))


def prelu_channel_sum(t: Tensor | np.ndarray, weight_shape: tuple) -> Tensor | np.ndarray:
    """t summed to prelu's weight: per channel (dim 1), or over all for one weight (a Tensor or an array)."""
    dims = None if len(weight_shape) == 0 or weight_shape[0] == 1 or t.ndim < 2 else \
        tuple(d for d in range(t.ndim) if d != 1)
    if isinstance(t, Tensor):
        return (t.sum() if dims is None else t.sum(dims)).reshape(weight_shape)
    xp = namespace(t)
    return A.reshape(xp, A.reduce(xp, "sum", t, dims), weight_shape)


def _cat(tensors: list, dim: int) -> Tensor:
    return cat(tensors, dim)


__all__ = ["celu", "celu_", "hardshrink", "prelu", "relu_", "rrelu", "rrelu_", "selu", "selu_", "threshold",
           "threshold_"]
FUNCTIONAL = [
    "celu", "celu_", "elu", "elu_", "gelu", "glu", "hardshrink", "hardsigmoid", "hardswish", "hardtanh", "hardtanh_",
    "leaky_relu", "leaky_relu_", "logsigmoid", "mish", "prelu", "relu", "relu6", "relu_", "rrelu", "rrelu_", "selu",
    "selu_", "silu", "softplus", "softshrink", "softsign", "tanhshrink", "threshold", "threshold_",
]
METHODS = ["hardshrink", "prelu"]
