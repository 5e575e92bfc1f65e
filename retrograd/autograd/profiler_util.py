"""torch.autograd.profiler_util: the profiler's event classes and time formatting, where torch keeps them (they
live in profiler.py here, beside the recording that makes them)."""

from .profiler import EventList, FunctionEvent, FunctionEventAvg, _format_time, _format_time_share

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "_format_time", "_format_time_share"]
