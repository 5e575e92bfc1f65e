"""Dtype lists the tests parametrise over."""

import torch


def floating_types_and(*extra):
    return (torch.float32, torch.float64, *extra)


def floating_and_complex_types_and(*extra):
    return (torch.float32, torch.float64, torch.complex64, torch.complex128, *extra)
