"""torch.nn.modules.batchnorm: the batch norm layers live in normalization.py; this is torch's import path for them
(`isinstance(m, _BatchNorm)` is how libraries find them)."""

from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    SyncBatchNorm,
    _BatchNorm,
    _LazyNormBase,
    _NormBase,
)

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "SyncBatchNorm", "_BatchNorm", "_LazyNormBase", "_NormBase"]
