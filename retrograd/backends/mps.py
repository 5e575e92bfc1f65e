"""torch.backends.mps: Apple's Metal back-end, never built into retrograd."""


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False
