"""torch.accelerator: the device-agnostic accelerator API, answered for a machine with none."""

from __future__ import annotations


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def current_accelerator(check_available: bool = False) -> None:
    return None
