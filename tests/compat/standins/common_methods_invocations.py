"""The one helper of torch's op database that the autograd tests import."""

import torch


def mask_not_all_zeros(shape):
    """A random boolean mask with at least one True, as torch's helper draws it."""
    while True:
        mask = torch.randn(shape).gt(0)
        if mask.sum() > 0:
            return mask
