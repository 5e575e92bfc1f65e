"""The MLP training step written by hand in NumPy: the floor that workload 3 compares retrograd to.

Forward, backward and SGD of the same network (784-512-256-10, ReLU, cross-entropy with mean
reduction, float32, weights laid out (out, in) as torch's Linear) with no graph and no wrapper
objects: what the step costs when only the arithmetic is paid for. Written as a careful user
would (in-place where it is natural, like the SGD update, which allocates nothing, as torch's
`add_(grad, alpha=-lr)` does not), not tuned beyond that.
"""

from __future__ import annotations

import numpy as np


def mlp_step(params: list[np.ndarray], x: np.ndarray, target: np.ndarray, lr: float) -> float:
    """One SGD step of the MLP on a batch; updates `params` in place and returns the loss."""
    w1, b1, w2, b2, w3, b3 = params
    batch = x.shape[0]
    rows = np.arange(batch)
    # forward
    h1 = x @ w1.T
    h1 += b1
    a1 = np.maximum(h1, 0)
    h2 = a1 @ w2.T
    h2 += b2
    a2 = np.maximum(h2, 0)
    z = a2 @ w3.T
    z += b3
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    total = e.sum(axis=1, keepdims=True)
    loss = float(np.mean(np.log(total[:, 0]) - z[rows, target]))
    # backward: d loss / d logits = (softmax - onehot) / batch
    g = e / total
    g[rows, target] -= 1
    g /= batch
    grads = [None] * 6
    grads[4], grads[5] = g.T @ a2, g.sum(axis=0)
    g = g @ w3
    g *= h2 > 0
    grads[2], grads[3] = g.T @ a1, g.sum(axis=0)
    g = g @ w2
    g *= h1 > 0
    grads[0], grads[1] = g.T @ x, g.sum(axis=0)
    # SGD
    for p, gp in zip(params, grads):
        gp *= lr
        p -= gp
    return loss
