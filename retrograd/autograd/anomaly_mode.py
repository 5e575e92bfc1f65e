"""Anomaly detection: name the backward node that produced NaN and show where it was created."""

from __future__ import annotations

import warnings
from typing import Any

from .graph import Node, anomaly


class detect_anomaly:  # noqa: N801 - torch's name
    """While active, every node records its forward traceback and backward checks for NaN."""

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
    """Turn anomaly detection on or off now; as a context manager, restore on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._prev = (anomaly.enabled, anomaly.check_nan)
        anomaly.enabled, anomaly.check_nan = bool(mode), check_nan

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        anomaly.enabled, anomaly.check_nan = self._prev


def is_anomaly_enabled() -> bool:
    return anomaly.enabled


def is_anomaly_check_nan_enabled() -> bool:
    return anomaly.check_nan


def check_node_outputs(node: Node, grads: list[Any]) -> None:
    """Raise torch's error for the first NaN gradient a node returned, after the forward traceback."""
    if not anomaly.check_nan:
        return
    for i, g in enumerate(grads):
        if g is not None and g._data.dtype.kind in "fc" and (g._data != g._data).any():
            trace = "".join(node._trace or ())
            warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n{trace}",
                          UserWarning, stacklevel=2)
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
