"""Loss modules: each calls its `nn.functional` loss with the options given at construction.

Every loss is declared by its functional and its constructor signature in torch's order; the
legacy `size_average` / `reduce` arguments fold into `reduction` as torch does, and `weight` /
`pos_weight` tensors become buffers (so they follow `.to(dtype)` and appear in state_dict).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from ..._tensor import Tensor
from .. import functional as F
from .distance import PairwiseDistance
from .linear import Linear
from .module import Module, bind_settings

_LEGACY = (("size_average", None), ("reduce", None), ("reduction", "mean"))
_BUFFERS = ("weight", "pos_weight")


def _legacy_reduction(size_average: bool | None, reduce: bool | None) -> str:
    """torch's translation of the deprecated size_average/reduce pair, with its warning."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' instead.",
                  stacklevel=2)  # _Loss.__init__'s line, as torch's (Note [the deprecated size_average and reduce])
    return reduction


class _Loss(Module):
    """Calls `functional.<function>(*inputs, **options, reduction=...)`."""

    function: str
    signature: tuple[tuple[str, Any], ...] = _LEGACY

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        values = bind_settings(type(self).__name__, self.signature, args, kwargs)
        size_average, reduce = values.pop("size_average", None), values.pop("reduce", None)
        reduction = values.pop("reduction")
        if size_average is not None or reduce is not None:
            reduction = _legacy_reduction(size_average, reduce)
        self.reduction = reduction
        for name, value in values.items():
            if name in _BUFFERS:
                self.register_buffer(name, value)
            else:
                setattr(self, name, value)
        self._options = tuple(values)

    def forward(self, *inputs: Tensor) -> Tensor:
        options = {name: getattr(self, name) for name in self._options}
        return getattr(F, self.function)(*inputs, **options, reduction=self.reduction)


class _WeightedLoss(_Loss):
    """A loss with an optional per-class `weight` buffer: torch's base of the weighted losses, and of user losses
    that take (weight, size_average, reduce, reduction)."""

    signature = (("weight", None), *_LEGACY)


class L1Loss(_Loss):
    function = "l1_loss"


class MSELoss(_Loss):
    function = "mse_loss"


class CrossEntropyLoss(_WeightedLoss):
    function = "cross_entropy"
    signature = (("weight", None), ("size_average", None), ("ignore_index", -100), ("reduce", None),
                 ("reduction", "mean"), ("label_smoothing", 0.0))


class NLLLoss(_WeightedLoss):
    function = "nll_loss"
    signature = (("weight", None), ("size_average", None), ("ignore_index", -100), ("reduce", None),
                 ("reduction", "mean"))


class NLLLoss2d(NLLLoss):
    """NLLLoss under its old name for (N, C, H, W) inputs, deprecated in torch as here."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in replacement and see "
                      "https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for more details.", FutureWarning,
                      stacklevel=2)
        super().__init__(*args, **kwargs)


class BCELoss(_WeightedLoss):
    function = "binary_cross_entropy"
    signature = (("weight", None), *_LEGACY)


class BCEWithLogitsLoss(_Loss):
    function = "binary_cross_entropy_with_logits"
    signature = (("weight", None), *_LEGACY, ("pos_weight", None))


class HuberLoss(_Loss):
    function = "huber_loss"
    signature = (("reduction", "mean"), ("delta", 1.0))


class SmoothL1Loss(_Loss):
    function = "smooth_l1_loss"
    signature = (*_LEGACY, ("beta", 1.0))


class KLDivLoss(_Loss):
    function = "kl_div"
    signature = (*_LEGACY, ("log_target", False))


class SoftMarginLoss(_Loss):
    function = "soft_margin_loss"


class MarginRankingLoss(_Loss):
    function = "margin_ranking_loss"
    signature = (("margin", 0.0), *_LEGACY)


class HingeEmbeddingLoss(_Loss):
    function = "hinge_embedding_loss"
    signature = (("margin", 1.0), *_LEGACY)


class CosineEmbeddingLoss(_Loss):
    function = "cosine_embedding_loss"
    signature = (("margin", 0.0), *_LEGACY)


class PoissonNLLLoss(_Loss):
    function = "poisson_nll_loss"
    signature = (("log_input", True), ("full", False), ("size_average", None), ("eps", 1e-8), ("reduce", None),
                 ("reduction", "mean"))


class GaussianNLLLoss(_Loss):
    function = "gaussian_nll_loss"
    signature = (("full", False), ("eps", 1e-6), ("reduction", "mean"))


class TripletMarginLoss(_Loss):
    function = "triplet_margin_loss"
    signature = (("margin", 1.0), ("p", 2.0), ("eps", 1e-6), ("swap", False), *_LEGACY)


class MultiMarginLoss(_WeightedLoss):
    function = "multi_margin_loss"
    signature = (("p", 1), ("margin", 1.0), ("weight", None), *_LEGACY)


class MultiLabelMarginLoss(_Loss):
    function = "multilabel_margin_loss"


class MultiLabelSoftMarginLoss(_WeightedLoss):
    function = "multilabel_soft_margin_loss"
    signature = (("weight", None), *_LEGACY)


class CTCLoss(_Loss):
    function = "ctc_loss"
    signature = (("blank", 0), ("reduction", "mean"), ("zero_infinity", False))


class TripletMarginWithDistanceLoss(_Loss):
    """triplet_margin_with_distance_loss with a distance function (a PairwiseDistance module by default)."""

    function = "triplet_margin_with_distance_loss"

    def __init__(self, *, distance_function: Any = None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                             "instead")
        self.distance_function = PairwiseDistance() if distance_function is None else distance_function
        self.margin = margin
        self.swap = swap
        self._options = ("distance_function", "margin", "swap")


class LinearCrossEntropyLoss(_WeightedLoss):
    """cross_entropy of the logits of an inner Linear (in_features -> num_classes * prod(out_features)), whose weight
    `linear_cross_entropy` sees as (num_classes, out_features..., in_features)."""

    def __init__(self, in_features: int, num_classes: int, *, out_features: tuple[int, ...] = (), bias: bool = False,
                 device: Any = None, dtype: Any = None, reduction: str = "mean", weight: Tensor | None = None,
                 ignore_index: int | None = None, label_smoothing: float = 0.0, options: Any = None) -> None:
        if weight is not None and weight.shape != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got {label_smoothing}")
        Module.__init__(self)
        self.register_buffer("weight", weight)
        self.reduction = reduction
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.linear = Linear(in_features, math.prod(out_features, start=num_classes), bias=bias, device=device,
                             dtype=dtype)
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        linear_weight = self.linear.weight.reshape((self.num_classes, *self.out_features, self.linear.in_features))
        linear_bias = None
        if self.linear.bias is not None:
            linear_bias = self.linear.bias.reshape((self.num_classes, *self.out_features))
        return F.linear_cross_entropy(input, linear_weight, target, linear_bias=linear_bias, weight=self.weight,
                                      reduction=self.reduction, ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing, options=self.options)

    def extra_repr(self) -> str:
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, reduction={self.reduction}, "
                f"ignore_index={self.ignore_index}, label_smoothing={self.label_smoothing}, options={self.options}")


__all__ = [
    "CTCLoss", "LinearCrossEntropyLoss", "TripletMarginWithDistanceLoss", "NLLLoss2d",
    "L1Loss", "MSELoss", "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "HuberLoss", "SmoothL1Loss",
    "KLDivLoss", "SoftMarginLoss", "MarginRankingLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss", "PoissonNLLLoss",
    "GaussianNLLLoss", "TripletMarginLoss", "MultiMarginLoss", "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss",
]
