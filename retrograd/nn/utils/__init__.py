"""torch.nn.utils: gradient clipping, flattening parameters into one vector, packed sequences (rnn),
parametrizations (parametrize, parametrizations), conv/linear + batch norm fusion and the legacy weight_norm /
spectral_norm hooks."""

from . import fusion, parametrizations, parametrize, rnn, stateless
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "fuse_conv_bn_eval",
           "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights", "fusion", "get_total_norm",
           "parameters_to_vector", "parametrizations", "parametrize", "remove_spectral_norm", "remove_weight_norm",
           "rnn", "spectral_norm", "stateless", "vector_to_parameters", "weight_norm"]
