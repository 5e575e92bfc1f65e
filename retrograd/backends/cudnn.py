"""torch.backends.cudnn: flags with torch's defaults; cuDNN is never available to retrograd."""

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    return False


def version() -> None:
    return None
