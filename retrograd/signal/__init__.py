"""torch.signal: window functions for spectral analysis and filter design (`retrograd.signal.windows`), loaded
lazily with the package (Note [lazy submodules] in retrograd/__init__.py)."""

from . import windows

__all__ = ["windows"]
