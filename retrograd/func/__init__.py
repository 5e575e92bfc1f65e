"""torch.func: composable function transforms (grad, vjp, jvp, jacrev, jacfwd, hessian, vmap)."""

from ..autograd.batched import vmap

__all__ = ["vmap"]
