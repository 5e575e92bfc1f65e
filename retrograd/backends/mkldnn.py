"""torch.backends.mkldnn: oneDNN CPU kernels; retrograd's are NumPy's, so it is not available."""

enabled = True


def is_available() -> bool:
    return False
