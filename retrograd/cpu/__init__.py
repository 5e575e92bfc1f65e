"""torch.cpu: the CPU described as torch's device modules describe a device (always there, one of it, nothing
to wait for), and torch.cpu.amp's deprecated spellings. torch.get_device_module('cpu') answers this module."""

from __future__ import annotations

from typing import Any

from . import amp

__all__ = ["amp", "current_device", "device_count", "is_available", "is_initialized", "set_device", "synchronize"]


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def set_device(device: Any) -> None:
    """There is one CPU device: nothing to choose."""


def synchronize(device: Any = None) -> None:
    """CPU work is done when its call returns: nothing to wait for."""
