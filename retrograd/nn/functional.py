"""torch.nn.functional: the network functions of the op table (each family lists its own in FUNCTIONAL)."""

from __future__ import annotations

import math as _math

from .._tensor import Tensor as _Tensor
from ..ops import FUNCTIONAL as _NAMES
from ..ops import _modules
from ..ops.activation import relu as _relu
from ..ops.conv import avg_pool1d as _avg_pool1d
from ..ops.conv import avg_pool2d as _avg_pool2d
from ..ops.conv import avg_pool3d as _avg_pool3d
from ..ops.conv import max_pool1d as _max_pool1d
from ..ops.conv import max_pool2d as _max_pool2d
from ..ops.conv import max_pool3d as _max_pool3d
from ..ops.nn import dropout, linear, scaled_dot_product_attention, softmax  # what multi_head_attention_forward calls
from . import grad  # torch.nn.functional.grad is torch.nn.grad

for _module in _modules:
    for _name in getattr(_module, "FUNCTIONAL", ()):
        globals()[_name] = getattr(_module, _name)



def multi_head_attention_forward(
        query: _Tensor, key: _Tensor, value: _Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight: _Tensor | None, in_proj_bias: _Tensor | None, bias_k: _Tensor | None,
        bias_v: _Tensor | None, add_zero_attn: bool, dropout_p: float, out_proj_weight: _Tensor,
        out_proj_bias: _Tensor | None, training: bool = True, key_padding_mask: _Tensor | None = None,
        need_weights: bool = True, attn_mask: _Tensor | None = None, use_separate_proj_weight: bool = False,
        q_proj_weight: _Tensor | None = None, k_proj_weight: _Tensor | None = None,
        v_proj_weight: _Tensor | None = None, static_k: _Tensor | None = None, static_v: _Tensor | None = None,
        average_attn_weights: bool = True, is_causal: bool = False) -> tuple[_Tensor, _Tensor | None]:
    """nn.MultiheadAttention's computation with its weights given: (L, N, E) inputs (or unbatched (L, E)) ->
    (output, attention weights averaged over heads, or per head, or None). As torch composes it: one projection for
    self-attention, the key padding mask merged into attn_mask, the weights by baddbmm and softmax when they are
    asked for, else scaled_dot_product_attention (its fused row, with a lone causal hint passed on)."""
    from .. import cat, zeros
    from .modules.activation import _canonical_mask, _pad_last

    batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:  # (L, E): a batch of one
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", attn_mask, "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:  # the hint alone goes to the fused attention
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype)
        is_causal = is_causal and key_padding_mask is None
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight and key.shape[:2] != value.shape[:2]:
        raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match value's {value.shape[:2]}")
    if not use_separate_proj_weight and key.shape != value.shape:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    if use_separate_proj_weight:
        bq, bk, bv = (None,) * 3 if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = linear(query, q_proj_weight, bq), linear(key, k_proj_weight, bk), linear(value, v_proj_weight, bv)
    else:
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    if attn_mask is not None:
        _check_attn_mask_shape(attn_mask, (tgt_len, src_len), (bsz * num_heads, tgt_len, src_len))
        if attn_mask.dim() == 2:
            attn_mask = attn_mask.unsqueeze(0)
    if bias_k is not None and bias_v is not None:
        k, v = cat([k, bias_k.repeat(1, bsz, 1)]), cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None else static_k
    v = v.view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None else static_v
    if add_zero_attn:
        k = cat([k, zeros(bsz * num_heads, 1, head_dim, dtype=k.dtype)], 1)
        v = cat([v, zeros(bsz * num_heads, 1, head_dim, dtype=v.dtype)], 1)
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    src_len = k.shape[1]
    if key_padding_mask is not None:  # merged into attn_mask, per head
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got {key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, "
                                 f"but got {key_padding_mask.shape[1]}")
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1).reshape(
            bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask
    if not training:
        dropout_p = 0.0
    if need_weights:
        q_scaled = q * _math.sqrt(1.0 / head_dim)
        scores = q_scaled.bmm(k.transpose(-2, -1)) if attn_mask is None else \
            attn_mask.baddbmm(q_scaled, k.transpose(-2, -1))
        weights = softmax(scores, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = weights.bmm(v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    else:
        if attn_mask is not None:
            attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 and attn_mask.dim() == 3 else \
                attn_mask.view(bsz, num_heads, -1, src_len)
        q, k, v = (t.view(bsz, num_heads, -1, head_dim) for t in (q, k, v))
        out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
        out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, embed_dim)
    if not batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = weights.view(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        weights = weights.mean(1)
    return out, (weights if batched else weights.squeeze(0))


def _mha_shape_check(query: _Tensor, key: _Tensor, value: _Tensor, key_padding_mask: _Tensor | None,
                     attn_mask: _Tensor | None, num_heads: int) -> bool:
    """Whether multi-head attention's inputs are batched (3-D query) or not (2-D), after torch's checks of the
    dimensions of the query, key, value and masks, in its order and words (AssertionError, as torch raises)."""
    if query.dim() not in (2, 3):
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query "
                             "tensor")
    batched = query.dim() == 3
    kind, padding_dim = ("batched (3-D)", 2) if batched else ("unbatched (2-D)", 1)
    if key.dim() != query.dim() or value.dim() != query.dim():
        raise AssertionError(f"For {kind} `query`, expected `key` and `value` to be {query.dim()}-D but found "
                             f"{key.dim()}-D and {value.dim()}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.dim() != padding_dim:
        raise AssertionError(f"For {kind} `query`, expected `key_padding_mask` to be `None` or {padding_dim}-D but "
                             f"found {key_padding_mask.dim()}-D tensor instead")
    if attn_mask is not None and attn_mask.dim() not in (2, 3):
        raise AssertionError(f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                             f"{attn_mask.dim()}-D tensor instead")
    if not batched and attn_mask is not None and attn_mask.dim() == 3:
        expected_shape = (num_heads, query.shape[0], key.shape[0])
        if attn_mask.shape != expected_shape:
            raise AssertionError(f"Expected `attn_mask` shape to be {expected_shape} but got {attn_mask.shape}")
    return batched


def _check_attn_mask_shape(attn_mask: _Tensor, correct_2d_size: tuple[int, int],
                           correct_3d_size: tuple[int, int, int]) -> None:
    """Raise torch's RuntimeError when an attention mask is not (L, S) or (N * heads, L, S)."""
    if attn_mask.dim() == 2 and attn_mask.shape != correct_2d_size:
        raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be {correct_2d_size}.")
    if attn_mask.dim() == 3 and attn_mask.shape != correct_3d_size:
        raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be {correct_3d_size}.")
    if attn_mask.dim() not in (2, 3):
        raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")


def _in_projection_packed(q: _Tensor, k: _Tensor, v: _Tensor, w: _Tensor,
                          b: _Tensor | None) -> tuple[_Tensor, _Tensor, _Tensor]:
    """The query, key and value projections by the packed weight: one product for self-attention (q, k and v one
    tensor), two when key is value, as torch makes them (its graph, its rows laid out (3, E) then split)."""
    e = q.shape[-1]
    if k is v:
        if q is k:
            proj = linear(q, w, b).unflatten(-1, (3, e)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
            return proj[0], proj[1], proj[2]
        w_q, w_kv = w.split([e, 2 * e])
        b_q, b_kv = (None, None) if b is None else b.split([e, 2 * e])
        kv = linear(k, w_kv, b_kv).unflatten(-1, (2, e)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
        return linear(q, w_q, b_q), kv[0], kv[1]
    bq, bk, bv = (None,) * 3 if b is None else b.chunk(3)
    w_q, w_k, w_v = w.chunk(3)
    return linear(q, w_q, bq), linear(k, w_k, bk), linear(v, w_v, bv)


def _lp_pool(avg_pool: object, max_pool: object, n: int, input: _Tensor, norm_type: float, kernel_size: object,
             stride: object, ceil_mode: bool) -> _Tensor:
    """The p-norm over sliding windows, composed from average pooling as torch composes it (max pooling of |x| for
    p = +-inf); a window whose sum of x^p is 0 gets a zero gradient."""
    if norm_type == float("inf"):
        return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -float("inf"):
        return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    window = _math.prod(kernel_size) if isinstance(kernel_size, (tuple, list)) else kernel_size**n
    return (out.sign() * _relu(out.abs())).mul(window).pow(1.0 / norm_type)


def lp_pool1d(input: _Tensor, norm_type: float, kernel_size: object, stride: object = None,
              ceil_mode: bool = False) -> _Tensor:
    """Power-average pooling of (N, C, L) inputs: (sum over each window of x^p) ^ (1/p)."""
    return _lp_pool(_avg_pool1d, _max_pool1d, 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: _Tensor, norm_type: float, kernel_size: object, stride: object = None,
              ceil_mode: bool = False) -> _Tensor:
    """Power-average pooling of (N, C, H, W) inputs: (sum over each window of x^p) ^ (1/p)."""
    return _lp_pool(_avg_pool2d, _max_pool2d, 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: _Tensor, norm_type: float, kernel_size: object, stride: object = None,
              ceil_mode: bool = False) -> _Tensor:
    """Power-average pooling of (N, C, D, H, W) inputs: (sum over each window of x^p) ^ (1/p)."""
    return _lp_pool(_avg_pool3d, _max_pool3d, 3, input, norm_type, kernel_size, stride, ceil_mode)


__all__ = [*_NAMES, "grad", "lp_pool1d", "lp_pool2d", "lp_pool3d", "multi_head_attention_forward"]
