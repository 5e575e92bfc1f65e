"""torch.backends: the flags scripts read and set for cuDNN, CUDA matmuls, MPS, oneDNN and the MHA fast path.

retrograd computes with NumPy on the CPU, so none of these back-ends exists: `is_available()` is False
everywhere, and the flags are plain attributes with torch's defaults that a script can read and set
(setting them changes nothing here, as setting cuDNN flags changes nothing on a CPU-only torch). The one that
does is `mha`'s fast-path switch: TransformerEncoder reads it, as torch's does. `opt_einsum` answers as torch's
does where the opt_einsum package is not installed: einsum contracts its operands left to right.
"""

from . import cuda, cudnn, mha, mkldnn, mps, opt_einsum

__all__ = ["cuda", "cudnn", "mha", "mkldnn", "mps", "opt_einsum"]
