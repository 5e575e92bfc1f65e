"""Activation modules: thin wrappers that call `nn.functional` with their settings, and MultiheadAttention.

Each pointwise activation is declared by the functional it calls and its settings in torch's
argument order; one base class does the binding, the call and the repr for all of them.
"""

from __future__ import annotations

import warnings
from typing import Any

from ... import _creation as C
from ..._tensor import Tensor
from ...autograd import grad_mode
from ...backends import mha
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear
from .module import Module, bind_settings


class _Activation(Module):
    """A module that applies `functional.<function>` with its settings (and `inplace` when it has one)."""

    function: str
    settings: tuple[tuple[str, Any], ...] = ()  # (name, default) in torch's positional order
    has_inplace = False
    shows_inplace = True  # whether the repr says inplace=True (torch's Hardsigmoid and Hardswish have no extra_repr)
    required = 0  # how many leading settings have no default

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        settings = self.settings + ((("inplace", False),) if self.has_inplace else ())
        for name, value in bind_settings(type(self).__name__, settings, args, kwargs, self.required).items():
            setattr(self, name, value)

    def forward(self, input: Tensor) -> Tensor:
        args = [getattr(self, n) for n, _ in self.settings]
        if self.has_inplace and self.inplace:
            return getattr(F, self.function)(input, *args, True)
        return getattr(F, self.function)(input, *args)

    def extra_repr(self) -> str:
        parts = [f"{n}={getattr(self, n)!r}" for n, _ in self.settings]
        if self.has_inplace and self.inplace and self.shows_inplace:
            parts.append("inplace=True")
        return ", ".join(parts)


class ReLU(_Activation):
    function, has_inplace = "relu", True


class ReLU6(_Activation):
    function, has_inplace = "relu6", True


class LeakyReLU(_Activation):
    function, settings, has_inplace = "leaky_relu", (("negative_slope", 0.01),), True


class RReLU(_Activation):
    """Randomized leaky relu: slopes drawn in training, their mean in eval (the module's mode is rrelu's `training`)."""

    function, settings, has_inplace = "rrelu", (("lower", 1.0 / 8), ("upper", 1.0 / 3)), True

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)


class ELU(_Activation):
    function, settings, has_inplace = "elu", (("alpha", 1.0),), True


class CELU(_Activation):
    function, settings, has_inplace = "celu", (("alpha", 1.0),), True


class SELU(_Activation):
    function, has_inplace = "selu", True


class SiLU(_Activation):
    function, has_inplace = "silu", True


class Mish(_Activation):
    function, has_inplace = "mish", True


class Hardsigmoid(_Activation):
    function, has_inplace, shows_inplace = "hardsigmoid", True, False


class Hardswish(_Activation):
    function, has_inplace, shows_inplace = "hardswish", True, False


class Hardtanh(_Activation):
    function, settings, has_inplace = "hardtanh", (("min_val", -1.0), ("max_val", 1.0)), True


class Threshold(_Activation):
    function, settings, has_inplace, required = "threshold", (("threshold", None), ("value", None)), True, 2


class Softplus(_Activation):
    function, settings = "softplus", (("beta", 1.0), ("threshold", 20.0))


class Softsign(_Activation):
    function = "softsign"


class Tanhshrink(_Activation):
    function = "tanhshrink"


class Sigmoid(_Activation):
    function = "sigmoid"


class Tanh(_Activation):
    function = "tanh"


class LogSigmoid(_Activation):
    function = "logsigmoid"


class GLU(_Activation):
    function, settings = "glu", (("dim", -1),)


class Softmax(_Activation):
    function, settings = "softmax", (("dim", None),)


class LogSoftmax(_Activation):
    function, settings = "log_softmax", (("dim", None),)


class Softmin(_Activation):
    function, settings = "softmin", (("dim", None),)


class Hardshrink(_Activation):
    function, settings = "hardshrink", (("lambd", 0.5),)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    function = "softshrink"


class GELU(Module):
    """Gaussian error linear unit; approximate='tanh' uses the tanh formula."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softmax2d(Module):
    """Softmax over the channel dimension of (C, H, W) or (N, C, H, W) inputs."""

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3)


class PReLU(Module):
    """LeakyReLU with a learnt slope (one, or one per channel)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(C.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


# --------------------------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------------------------

class MultiheadAttention(Module):
    """Attention over `num_heads` heads of size embed_dim // num_heads, as torch.nn.MultiheadAttention.

    forward(query, key, value) -> (output, weights averaged over heads or None)
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: Any = None, dtype: Any = None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(C.empty(3 * embed_dim, embed_dim, device=device, dtype=dtype))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(C.empty(embed_dim, embed_dim, device=device, dtype=dtype))
            self.k_proj_weight = Parameter(C.empty(embed_dim, self.kdim, device=device, dtype=dtype))
            self.v_proj_weight = Parameter(C.empty(embed_dim, self.vdim, device=device, dtype=dtype))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(C.empty(3 * embed_dim, device=device, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        if add_bias_kv:
            self.bias_k = Parameter(C.empty(1, 1, embed_dim, device=device, dtype=dtype))
            self.bias_v = Parameter(C.empty(1, 1, embed_dim, device=device, dtype=dtype))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None = None,
                need_weights: bool = True, attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        native = self._takes_fast_path(query, key, value, key_padding_mask, attn_mask)
        transposed = self.batch_first and query.dim() == 3
        if transposed:  # as torch, one tensor stays one tensor (self-attention's single projection)
            if key is not value:
                query, key, value = (x.transpose(0, 1) for x in (query, key, value))
            elif query is key:
                query = key = value = query.transpose(0, 1)
            else:
                query, key = query.transpose(0, 1), key.transpose(0, 1)
                value = key
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias, self.bias_k,
            self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights or native,
            attn_mask=attn_mask, use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        out = out.transpose(0, 1) if transposed else out
        return out, weights if need_weights else None

    # Note [MultiheadAttention's fast path and hidden rows]
    # In eval mode, without grad, for batch-first self-attention (one tensor as query, key and value) with an even
    # head count and packed biased projections, torch runs its native kernel instead of the composite path. On the
    # CPU that kernel always computes the weights (scores, masked softmax, their product with v), need_weights or
    # not, so its output is the composite path's with need_weights=True: need_weights=False gives the same bits as
    # True there (off the fast path the composite runs scaled_dot_product_attention instead, a rounding apart), and
    # a query whose keys the masks hide entirely (a sequence that is all padding) gets NaN where
    # scaled_dot_product_attention gives it zero attention. retrograd runs the composite path with the weights
    # wherever torch would run its kernel. (Float masks keep torch off its kernel here; TransformerEncoderLayer's
    # fused path takes them, and gives NaN too.)

    def _takes_fast_path(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None,
                         attn_mask: Tensor | None) -> bool:
        """Whether torch's forward would run its native attention kernel for these inputs."""
        if any(m is not None and m.is_floating_point() for m in (key_padding_mask, attn_mask)):
            return False
        if not (mha.get_fastpath_enabled() and query.dim() == 3 and query is key and key is value
                and not self.training and self.batch_first and self.num_heads % 2 == 0
                and self._qkv_same_embed_dim and self.bias_k is None and self.bias_v is None
                and not self.add_zero_attn and self.in_proj_bias is not None
                and query.dtype == self.in_proj_weight.dtype == self.in_proj_bias.dtype):
            return False
        tensors = (query, self.in_proj_weight, self.in_proj_bias, self.out_proj.weight, self.out_proj.bias)
        return not (grad_mode.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors))


def _nan_where_hidden(out: Tensor, key_padding_mask: Tensor | None, attn_mask: Tensor | None, heads: int) -> Tensor:
    """Batch-first `out` (N, L, E) with NaN in the rows of queries that the masks (True or -inf) leave no key to
    attend to in some head, as torch's fused attention gives (Note [MultiheadAttention's fast path and hidden
    rows])."""
    def hidden(mask: Tensor) -> Tensor:
        return mask if mask.dtype.name == "bool" else mask == float("-inf")

    if key_padding_mask is None and attn_mask is None:
        return out
    batch, length = out.shape[:2]
    merged = None if key_padding_mask is None else hidden(key_padding_mask)[:, None, None, :]
    if attn_mask is not None:
        per_head = attn_mask if attn_mask.dim() == 2 else attn_mask.view(batch, heads, *attn_mask.shape[-2:])
        merged = hidden(per_head) if merged is None else merged | hidden(per_head)
    rows = merged.all(-1).any(1) if merged.dim() == 4 else merged.all(-1).unsqueeze(0)
    return out.masked_fill(rows.expand(batch, length).unsqueeze(-1), float("nan"))


def _causal_mask(rows: int, cols: int, dtype: Any = None, device: Any = None) -> Tensor:
    """The additive mask that lets query i see keys 0..i only (-inf above the diagonal, 0 elsewhere)."""
    return C.full((rows, cols), float("-inf"), dtype=dtype, device=device).triu(diagonal=1)


def _pad_last(mask: Tensor | None) -> Tensor | None:
    """A mask one column wider (the extra bias/zero key is never masked)."""
    from ... import cat, zeros

    if mask is None:
        return None
    return cat([mask, zeros(*mask.shape[:-1], 1, dtype=mask.dtype)], -1)


def _canonical_mask(mask: Tensor | None, mask_name: str, other: Tensor | None, other_name: str,
                    target_type: Any) -> Tensor | None:
    """A boolean mask (True = hidden) as the additive float mask of `target_type` that torch makes of it.

    Float masks pass unchanged; other dtypes are refused, and a mask whose dtype differs from the
    mask it goes with (`other`) draws torch's deprecation warning.
    """
    if mask is None:
        return None
    if mask.dtype.name != "bool" and not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if other is not None and mask.dtype != other.dtype:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for both "
                      "instead.", stacklevel=2)
    if mask.is_floating_point():
        return mask
    return C.zeros_like(mask, dtype=target_type).masked_fill_(mask, float("-inf"))


__all__ = [
    "ReLU", "ReLU6", "LeakyReLU", "RReLU", "ELU", "CELU", "SELU", "SiLU", "Mish", "Hardsigmoid", "Hardswish",
    "Hardtanh", "Threshold", "Softplus", "Softsign", "Tanhshrink", "Sigmoid", "Tanh", "LogSigmoid", "GLU", "Softmax",
    "LogSoftmax", "Softmin", "Hardshrink", "Softshrink", "GELU", "Softmax2d", "PReLU", "MultiheadAttention",
]
