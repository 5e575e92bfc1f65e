"""Loss modules: each calls its `nn.functional` loss with the options given at construction.

Every loss is declared by its functional and its constructor signature in torch's order; the
legacy `size_average` / `reduce` arguments fold into `reduction` as torch does, and `weight` /
`pos_weight` tensors become buffers (so they follow `.to(dtype)` and appear in state_dict).
"""

from __future__ import annotations

import warnings
from typing import Any

from ..._tensor import Tensor
from .. import functional as F
from .module import Module, bind_settings

_LEGACY = (("size_average", None), ("reduce", None), ("reduction", "mean"))
_BUFFERS = ("weight", "pos_weight")


def _legacy_reduction(size_average: bool | None, reduce: bool | None) -> str:
    """torch's translation of the deprecated size_average/reduce pair, with its warning."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' instead.",
                  stacklevel=4)
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


class L1Loss(_Loss):
    function = "l1_loss"


class MSELoss(_Loss):
    function = "mse_loss"


class CrossEntropyLoss(_Loss):
    function = "cross_entropy"
    signature = (("weight", None), ("size_average", None), ("ignore_index", -100), ("reduce", None),
                 ("reduction", "mean"), ("label_smoothing", 0.0))


class NLLLoss(_Loss):
    function = "nll_loss"
    signature = (("weight", None), ("size_average", None), ("ignore_index", -100), ("reduce", None),
                 ("reduction", "mean"))


class BCELoss(_Loss):
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


class MultiMarginLoss(_Loss):
    function = "multi_margin_loss"
    signature = (("p", 1), ("margin", 1.0), ("weight", None), *_LEGACY)


class MultiLabelMarginLoss(_Loss):
    function = "multilabel_margin_loss"


class MultiLabelSoftMarginLoss(_Loss):
    function = "multilabel_soft_margin_loss"
    signature = (("weight", None), *_LEGACY)


__all__ = [
    "L1Loss", "MSELoss", "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "HuberLoss", "SmoothL1Loss",
    "KLDivLoss", "SoftMarginLoss", "MarginRankingLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss", "PoissonNLLLoss",
    "GaussianNLLLoss", "TripletMarginLoss", "MultiMarginLoss", "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss",
]
