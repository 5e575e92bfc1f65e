"""torch.backends.opt_einsum: torch orders einsum's pairwise contractions by the opt_einsum package where it is
installed; retrograd's einsum contracts left to right, as torch's does without it, so it is not available."""

enabled = False
strategy = None


def is_available() -> bool:
    return False


def get_opt_einsum() -> None:
    """The opt_einsum module torch would use: none here."""
    return None
