"""torch.backends.mha: the switch for torch's fused MultiheadAttention / TransformerEncoder inference path.

TransformerEncoder reads it: with it off, an eval-mode encoder keeps its outputs at padded positions (the nested
tensor path that zeroes them is torch's fast path)."""

_is_fastpath_enabled: bool = True


def get_fastpath_enabled() -> bool:
    """Whether the fast path may run (it still runs only when all its conditions on the inputs hold)."""
    return _is_fastpath_enabled


def set_fastpath_enabled(value: bool) -> None:
    global _is_fastpath_enabled
    _is_fastpath_enabled = value
