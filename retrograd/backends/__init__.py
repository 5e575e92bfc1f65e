"""torch.backends: the flags scripts read and set for cuDNN, CUDA matmuls, MPS and oneDNN.

retrograd computes with NumPy on the CPU, so none of these back-ends exists: `is_available()` is False
everywhere, and the flags are plain attributes with torch's defaults that a script can read and set
(setting them changes nothing here, as setting cuDNN flags changes nothing on a CPU-only torch).
"""

from . import cuda, cudnn, mkldnn, mps

__all__ = ["cuda", "cudnn", "mkldnn", "mps"]
