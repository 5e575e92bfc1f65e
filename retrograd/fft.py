"""torch.fft: the discrete Fourier transforms of the op table (retrograd/ops/fft.py)."""

from .ops import FFT as _NAMES
from .ops import fft as _family

for _name in _NAMES:
    globals()[_name] = getattr(_family, _name)

__all__ = list(_NAMES)
