"""torch.nn.parallel: DataParallel (one process) and DistributedDataParallel (retrograd.distributed's,
loaded on first use so that nn never imports the distributed package)."""

from typing import Any

from .data_parallel import DataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]


def __getattr__(name: str) -> Any:
    if name == "DistributedDataParallel":
        from ...distributed.ddp import DistributedDataParallel

        return DistributedDataParallel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
