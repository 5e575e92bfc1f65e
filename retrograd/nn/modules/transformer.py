"""Transformer, its encoder and decoder stacks and their layers, as torch.nn builds them.

Each layer is self-attention (and, in the decoder, attention over the encoder's memory) and a
feed-forward block, each with a residual connection and a LayerNorm after it (`norm_first=False`,
the paper's layout) or before it (`norm_first=True`). Sub-module names, parameter names and
initialisation are torch's, so a torch state dict loads unchanged. retrograd always runs the composite
path; where torch's encoder would take its nested-tensor fast path, the result is made the same as that path's
(Note [TransformerEncoder's nested-tensor fast path]).
"""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Callable
from typing import Any

from ... import _creation as C
from ..._tensor import Tensor
from ..._warn import warn_once
from ...autograd import grad_mode
from ...backends import mha
from .. import functional as F
from .. import init
from .activation import GELU, MultiheadAttention, ReLU, _canonical_mask, _causal_mask, _nan_where_hidden
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module, _submodules_as_one_kernel
from .normalization import LayerNorm

Activation = str | Callable[[Tensor], Tensor]


def _generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
    """An (sz, sz) float mask: 0 on and below the diagonal, -inf above (position i sees positions <= i)."""
    return _causal_mask(sz, sz, dtype=dtype, device=device)


def _get_seq_len(src: Tensor, batch_first: bool) -> int:
    """The sequence length of (L, E), (L, N, E) or, batch first, (N, L, E) input."""
    if src.dim() == 2:
        return src.size(0)
    return src.size(1 if batch_first else 0)


def _detect_is_causal_mask(mask: Tensor | None, is_causal: bool | None, size: int | None) -> bool:
    """is_causal as given, or (None) whether `mask` is exactly the square subsequent mask of `size`."""
    if is_causal is not None or mask is None:
        return is_causal is True
    causal = _generate_square_subsequent_mask(size if size is not None else mask.size(-2), dtype=mask.dtype)
    return mask.size() == causal.size() and bool((mask == causal).all())


def _get_activation_fn(activation: str) -> Callable[[Tensor], Tensor]:
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


# torch's once-per-process warning on building the nested tensor of its encoder's fast path, word for word
_NESTED_PROTOTYPE = ("The PyTorch API of nested tensors is in prototype stage and will change in the near future. "
                     "We recommend specifying layout=torch.jagged when constructing a nested tensor, as this layout "
                     "receives active development, has better operator coverage, and works with torch.compile. "
                     "(Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/NestedTensorImpl.cpp:177.)")


def _why_not_sparsity_fast_path(encoder_layer: Module) -> str:
    """Why torch's encoder built on `encoder_layer` cannot use nested tensors, in torch's words ("" when it can)."""
    if not isinstance(encoder_layer, TransformerEncoderLayer):
        return "encoder_layer was not TransformerEncoderLayer"
    if encoder_layer.norm_first:
        return "encoder_layer.norm_first was True"
    return _why_not_fused(encoder_layer)


def _why_not_fused(layer: TransformerEncoderLayer) -> str:
    """Why torch's fused kernel cannot run this encoder layer, in the words of the encoder's warning ("" when it
    can): the conditions on the layer alone, which both fast paths share."""
    attn = layer.self_attn
    if not attn.batch_first:
        return "encoder_layer.self_attn.batch_first was not True(use batch_first for better inference performance)"
    if not attn._qkv_same_embed_dim:
        return "encoder_layer.self_attn._qkv_same_embed_dim was not True"
    if attn.in_proj_bias is None:
        return "encoder_layer.self_attn was passed bias=False"
    if not layer.activation_relu_or_gelu:
        return "encoder_layer.activation_relu_or_gelu was not True"
    if layer.norm1.eps != layer.norm2.eps:
        return "encoder_layer.norm1.eps was not equal to encoder_layer.norm2.eps"
    if attn.num_heads % 2 == 1:
        return "encoder_layer.self_attn.num_heads is odd"
    return ""


def _layer_wants_grad(layer: TransformerEncoderLayer, src: Tensor) -> bool:
    """Whether autograd would record through the layer for `src` (grad on, and src or a weight requiring it): torch's
    fast paths run only where it would not."""
    attn = layer.self_attn
    tensors = (src, attn.in_proj_weight, attn.in_proj_bias, attn.out_proj.weight, attn.out_proj.bias,
               layer.norm1.weight, layer.norm1.bias, layer.norm2.weight, layer.norm2.bias,
               layer.linear1.weight, layer.linear1.bias, layer.linear2.weight, layer.linear2.bias)
    return grad_mode.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def _get_clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block (linear1, activation, linear2), each added back and normalised.

    >>> layer = TransformerEncoderLayer(d_model=512, nhead=8)
    >>> layer(retrograd.rand(10, 32, 512)).shape
    torch.Size([10, 32, 512])
    """

    __constants__ = ["norm_first"]

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Activation = F.relu, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        # torch's fast-path code: 1 for relu, 2 for gelu, 0 for anything else (kept for scripts that read it)
        if activation is F.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        if not hasattr(self, "activation"):  # pickled before torch 1.9 stored it
            self.activation = F.relu

    def forward(self, src: Tensor, src_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool = False) -> Tensor:
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask", src_mask, "src_mask",
                                               src.dtype)
        src_mask = _canonical_mask(src_mask, "src_mask", None, "", src.dtype)
        fused = self._takes_fast_path(src)
        # torch's fused kernel calls no submodule, so their (global) hooks do not run
        with _submodules_as_one_kernel() if fused else contextlib.nullcontext():
            x = src
            if self.norm_first:
                x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
                x = x + self._ff_block(self.norm2(x))
            else:
                x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
                x = self.norm2(x + self._ff_block(x))
        if fused:  # Note [MultiheadAttention's fast path and hidden rows]
            x = _nan_where_hidden(x, src_key_padding_mask, src_mask, self.self_attn.num_heads)
        return x

    def _takes_fast_path(self, src: Tensor) -> bool:
        """Whether torch's forward would run its fused encoder-layer kernel for this input."""
        if not (mha.get_fastpath_enabled() and src.dim() == 3 and not self.training) or _why_not_fused(self):
            return False
        if any(getattr(m, "_forward_hooks", None) or getattr(m, "_forward_pre_hooks", None) for m in self.modules()):
            return False
        return not _layer_wants_grad(self, src)

    def _sa_block(self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
                  is_causal: bool = False) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(Module):
    """Self-attention over the target, attention over the encoder's memory, then a feed-forward block.

    >>> layer = TransformerDecoderLayer(d_model=512, nhead=8)
    >>> layer(retrograd.rand(20, 32, 512), retrograd.rand(10, 32, 512)).shape
    torch.Size([20, 32, 512])
    """

    __constants__ = ["norm_first"]

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Activation = F.relu, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias,
                                            **factory)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first,
                                                 bias=bias, **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _get_activation_fn(activation) if isinstance(activation, str) else activation

    def __setstate__(self, state: dict) -> None:
        state.setdefault("activation", F.relu)  # pickled before torch 1.9 stored it
        super().__setstate__(state)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool = False, memory_is_causal: bool = False) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
                  is_causal: bool = False) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal,
                           need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x: Tensor, mem: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
                   is_causal: bool = False) -> Tensor:
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """`num_layers` deep copies of `encoder_layer` applied in turn, then `norm` if given.

    `enable_nested_tensor` and `mask_check` choose torch's nested-tensor fast path: its warning when the layer
    rules it out, and its zeros at padded positions (Note [TransformerEncoder's nested-tensor fast path]).
    """

    __constants__ = ["norm"]

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why_not_sparsity_fast_path = _why_not_sparsity_fast_path(encoder_layer)
        if enable_nested_tensor and why_not_sparsity_fast_path:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False because "
                          f"{why_not_sparsity_fast_path}", stacklevel=2)
            self.use_nested_tensor = False

    def forward(self, src: Tensor, mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask", mask, "mask", src.dtype)
        mask = _canonical_mask(mask, "mask", None, "", src.dtype)
        seq_len = _get_seq_len(src, self.layers[0].self_attn.batch_first)
        is_causal = _detect_is_causal_mask(mask, is_causal, seq_len)
        dropped = self._nested_tensor_dropped(src, mask, src_key_padding_mask)
        if dropped is not None:
            warn_once(_NESTED_PROTOTYPE, stacklevel=1)
            src_key_padding_mask = _canonical_mask(dropped, "src_key_padding_mask", None, "", src.dtype)
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask)
        if dropped is not None:
            output = output.masked_fill(dropped.unsqueeze(-1), 0.0)
        return output if self.norm is None else self.norm(output)

    # Note [TransformerEncoder's nested-tensor fast path]
    # In eval mode, with a key padding mask and no attention mask, batched input, and no grad wanted of the input
    # or the first layer's weights, torch's encoder packs the batch into a nested tensor of each row's first
    # `length` positions (length = the row's unpadded count), runs the layers on that unmasked, and pads the result
    # back with zeros: the padded positions come out 0 (then `norm`), where training mode gives them values. With
    # `mask_check` it does so only for right-padded rows; without, it takes the first `length` positions whatever
    # the mask says. retrograd runs the same layers with those positions as the padding and zeroes them after.

    def _nested_tensor_dropped(self, src: Tensor, mask: Tensor | None,
                               src_key_padding_mask: Tensor | None) -> Tensor | None:
        """The (N, L) positions torch's nested-tensor fast path drops, or None where it would not run."""
        layer = self.layers[0]
        if not (mha.get_fastpath_enabled() and getattr(self, "use_nested_tensor", False) and not layer.training
                and src.dim() == 3 and src_key_padding_mask is not None and mask is None):
            return None
        if _layer_wants_grad(layer, src):
            return None
        kept = src_key_padding_mask == 0  # the additive mask: 0 where kept, -inf where padded
        dropped = C.arange(src.size(1)) >= kept.sum(1, keepdim=True)
        if getattr(self, "mask_check", True) and not bool((dropped == kept.logical_not()).all()):
            return None
        return dropped


class TransformerDecoder(Module):
    """`num_layers` deep copies of `decoder_layer`, each attending to the same `memory`, then `norm` if given."""

    __constants__ = ["norm"]

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        seq_len = _get_seq_len(tgt, self.layers[0].self_attn.batch_first)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                           memory_is_causal=memory_is_causal)
        return output if self.norm is None else self.norm(output)


class Transformer(Module):
    """An encoder-decoder transformer ("Attention Is All You Need"); every weight matrix is xavier-uniform.

    forward(src, tgt) -> the decoder's output for `tgt`, attending to the encoding of `src`.

    >>> model = Transformer(nhead=16, num_encoder_layers=12)
    >>> model(retrograd.rand(10, 32, 512), retrograd.rand(20, 32, 512)).shape
    torch.Size([20, 32, 512])
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1, activation: Activation = F.relu,
                 custom_encoder: Any | None = None, custom_decoder: Any | None = None, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first,
                      bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(TransformerEncoderLayer(*layer_args, **factory), num_encoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(TransformerDecoderLayer(*layer_args, **factory), num_decoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        batch_dim = 0 if self.batch_first else 1
        if src.dim() == 3 and src.size(batch_dim) != tgt.size(batch_dim):
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.size(-1) != self.d_model or tgt.size(-1) != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
        """The causal mask for a sequence of `sz`: -inf above the diagonal, 0 elsewhere (float32 by default)."""
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)


__all__ = [
    "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer", "TransformerDecoderLayer",
]
