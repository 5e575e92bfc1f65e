"""For tests/test_programs.py: `WEIGHTS=path` makes the torch run of a program save its modules' initial weights
there and the retrograd run load them, so both start from the same numbers whatever their generators drew."""

import os

import numpy as np
import torch


def share_initial_weights(modules: dict) -> None:
    """Save (first run) or load (second run) the state of each named module in the WEIGHTS file, if one is set."""
    weights = os.environ.get("WEIGHTS")
    if not weights:
        return
    if not os.path.exists(weights):
        np.savez(weights, **{f"{name}/{key}": value.numpy() for name, module in modules.items()
                             for key, value in module.state_dict().items()})
        return
    saved = np.load(weights)
    for name, module in modules.items():
        module.load_state_dict({key.split("/", 1)[1]: torch.from_numpy(value) for key, value in saved.items()
                                if key.split("/", 1)[0] == name})
