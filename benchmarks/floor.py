"""The MLP training step written by hand in NumPy: the floor that workload 3 compares retrograd to.

Forward, backward and SGD of the same network (784-512-256-10, ReLU, cross-entropy with mean
reduction, float32, weights laid out (out, in) as torch's Linear) with no graph and no wrapper
objects: what the step costs when only the arithmetic is paid for. Written as a careful user
would (in-place where it is natural, like the SGD update, which allocates nothing, as torch's
`add_(grad, alpha=-lr)` does not), not tuned beyond that.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def _unmarked(phase: str) -> None:
    """The phase marker of an ordinary step: nothing to record."""


def mlp_step(params: list[np.ndarray], x: np.ndarray, target: np.ndarray, lr: float,
             mark: Callable[[str], None] = _unmarked) -> float:
    """One SGD step of the MLP on a batch; updates `params` in place and returns the loss.

    `mark(phase)` is called as each phase ends (`python -m benchmarks.gap` times them); the names
    are those of GAP_PHASES."""
    w1, b1, w2, b2, w3, b3 = params
    batch = x.shape[0]
    rows = np.arange(batch)
    # forward
    h1 = x @ w1.T
    h1 += b1
    mark("forward: linear 1")
    a1 = np.maximum(h1, 0)
    mark("forward: relu 1")
    h2 = a1 @ w2.T
    h2 += b2
    mark("forward: linear 2")
    a2 = np.maximum(h2, 0)
    mark("forward: relu 2")
    z = a2 @ w3.T
    z += b3
    mark("forward: linear 3")
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    total = e.sum(axis=1, keepdims=True)
    loss = float(np.mean(np.log(total[:, 0]) - z[rows, target]))
    mark("forward: cross-entropy")
    # backward: d loss / d logits = (softmax - onehot) / batch
    g = e / total
    g[rows, target] -= 1
    g /= batch
    mark("backward: cross-entropy")
    grads = [None] * 6
    grads[4], grads[5] = g.T @ a2, g.sum(axis=0)
    g = g @ w3
    mark("backward: linear 3")
    g *= h2 > 0
    mark("backward: relu 2")
    grads[2], grads[3] = g.T @ a1, g.sum(axis=0)
    g = g @ w2
    mark("backward: linear 2")
    g *= h1 > 0
    mark("backward: relu 1")
    grads[0], grads[1] = g.T @ x, g.sum(axis=0)
    mark("backward: linear 1")
    # SGD
    for p, gp in zip(params, grads):
        gp *= lr
        p -= gp
    mark("SGD")
    return loss


GAP_PHASES = ("forward: linear 1", "forward: relu 1", "forward: linear 2", "forward: relu 2", "forward: linear 3",
              "forward: cross-entropy", "backward: cross-entropy", "backward: linear 3", "backward: relu 2",
              "backward: linear 2", "backward: relu 1", "backward: linear 1", "SGD")
