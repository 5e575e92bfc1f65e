"""Anomaly detection: name the backward node that failed or produced NaN, and show the forward
call that created it.

While detection is on, every node records the traceback of the forward call that made it
(graph.anomaly_trace). In backward, a node whose formula raises, or (with check_nan) returns
NaN, first warns with that traceback, as torch does; NaN then raises torch's RuntimeError. When
off, nothing is recorded and the only cost is one flag check per recorded node and per node run.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

from .. import _dtype as D
from .graph import Node, anomaly


class detect_anomaly:  # noqa: N801 - torch's name
    """Context manager: anomaly detection on inside (with `check_nan` for NaN gradients).

    >>> with detect_anomaly():
    ...     x.sqrt().sum().backward()   # RuntimeError naming SqrtBackward0 if a gradient is NaN
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        self._prev: tuple = ()
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self) -> None:
        self._prev = (anomaly.enabled, anomaly.check_nan)
        anomaly.enabled, anomaly.check_nan = True, self.check_nan

    def __exit__(self, *exc: object) -> None:
        anomaly.enabled, anomaly.check_nan = self._prev


class set_detect_anomaly:  # noqa: N801
    """Turn anomaly detection on or off now; used as a context manager, restore on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._prev = (anomaly.enabled, anomaly.check_nan)
        anomaly.enabled, anomaly.check_nan = bool(mode), check_nan

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        anomaly.enabled, anomaly.check_nan = self._prev


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on."""
    return anomaly.enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection also checks backward results for NaN."""
    return anomaly.check_nan


def report(node: Node) -> None:
    """torch's warnings: the node's name and the traceback of the forward call that created it, then,
    for a node made by another node's backward (double backward), that node's, up the chain. A warning
    that is an error here (a filter turned it into one) is printed instead: the backward error wins."""
    import traceback

    record = node._trace
    if record is None:
        _warn(f"Error detected in {node.name()}. No forward pass information available. Enable detect anomaly "
              "during forward pass for more information.")
        return
    _warn(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
          + "".join(traceback.format_list(record.frames)))
    while record.parent is not None:
        parent = record.parent
        record = parent._trace
        if record is None:
            break
        _warn(f"\n\nPrevious calculation was induced by {parent.name()}. Traceback of forward call that induced the "
              "previous calculation:\n" + "".join(traceback.format_list(record.frames)))


def _warn(message: str) -> None:
    try:
        warnings.warn(message, UserWarning, stacklevel=4)
    except Warning as error:
        sys.stderr.write(f"{type(error).__name__}: {error}\n")


def check_node_outputs(node: Node, grads: list[Any]) -> None:
    """Raise torch's error for the first NaN gradient a node returned, after the forward traceback."""
    if not anomaly.check_nan:
        return
    for i, g in enumerate(grads):
        if g is None:
            continue
        data = g._physical._data if hasattr(g, "_physical") else g._data  # a batched gradient: the whole batch
        if D.kind(data) in "fc" and (data != data).any():
            report(node)
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
