"""nn.DataParallel as on a CPU-only torch: there are no devices to split the batch over, so the wrapper
runs its module in this process (`.module` and the `module.` prefix of state dicts are torch's)."""

from __future__ import annotations

from typing import Any

from ..modules.module import Module


class DataParallel(Module):
    """Run `module` on the whole batch in this process (torch does the same without GPUs)."""

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0) -> None:
        super().__init__()
        if device_ids:
            raise ValueError(f"DataParallel: retrograd has no devices to place replicas on (device_ids={device_ids})")
        self.module, self.device_ids, self.output_device, self.dim = module, [], output_device, dim

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)
