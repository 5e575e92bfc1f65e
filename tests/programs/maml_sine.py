"""MAML on sine regression in the idioms of public model-agnostic meta-learning code, run unchanged under torch and
under `python -m retrograd.run`: the network kept as an `nn.ParameterList` and run functionally with `F.linear(x, w,
b)` on whatever weights it is handed, the inner step `torch.autograd.grad(loss, params, create_graph=True)` and
`[w - inner_lr * g for w, g in zip(params, grads)]` (second order: the outer loss backpropagates through it), the
first-order variant under `--first-order` (`create_graph=False` and the grads detached), a meta-batch of tasks whose
query losses are averaged before one Adam step, and `torch.stack(...).mean()`. Prints the meta-training loss each
step and the loss before and after adaptation on a held-out task; `WEIGHTS=path` shares the initial weights."""

import argparse
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights

parser = argparse.ArgumentParser()
parser.add_argument("--first-order", action="store_true")
parser.add_argument("--inner-steps", type=int, default=2)
args = parser.parse_args()
torch.manual_seed(0)


class SineNet(nn.Module):
    def __init__(self, hidden=40):
        super().__init__()
        self.params = nn.ParameterList()
        for fan_in, fan_out in [(1, hidden), (hidden, hidden), (hidden, 1)]:
            w = nn.Parameter(torch.empty(fan_out, fan_in))
            nn.init.kaiming_uniform_(w, a=math.sqrt(5))
            b = nn.Parameter(torch.zeros(fan_out))
            self.params.extend([w, b])

    def forward(self, x, params=None):
        params = list(self.params) if params is None else params
        for i in range(0, len(params) - 2, 2):
            x = F.relu(F.linear(x, params[i], params[i + 1]))
        return F.linear(x, params[-2], params[-1])


def sample_task(rng):
    amplitude, phase = rng.uniform(0.1, 5.0), rng.uniform(0, np.pi)

    def draw(k):
        x = rng.uniform(-5.0, 5.0, (k, 1)).astype(np.float32)
        return torch.from_numpy(x), torch.from_numpy(amplitude * np.sin(x - phase).astype(np.float32))
    return draw


def adapt(model, x, y, inner_lr, steps, first_order):
    params = list(model.params)
    for _ in range(steps):
        loss = F.mse_loss(model(x, params), y)
        grads = torch.autograd.grad(loss, params, create_graph=not first_order)
        if first_order:
            grads = [g.detach() for g in grads]
        params = [w - inner_lr * g for w, g in zip(params, grads)]
    return params


model = SineNet()
share_initial_weights({"model": model})
meta_opt = torch.optim.Adam(model.parameters(), lr=1e-3)
rng = np.random.default_rng(0)
inner_lr, meta_batch, k_shot = 0.01, 4, 10
for step in range(8):
    meta_opt.zero_grad()
    query_losses = []
    for _ in range(meta_batch):
        draw = sample_task(rng)
        (x_s, y_s), (x_q, y_q) = draw(k_shot), draw(k_shot)
        fast = adapt(model, x_s, y_s, inner_lr, args.inner_steps, args.first_order)
        query_losses.append(F.mse_loss(model(x_q, fast), y_q))
    meta_loss = torch.stack(query_losses).mean()
    meta_loss.backward()
    grad_norm = torch.sqrt(sum((p.grad ** 2).sum() for p in model.parameters()))
    meta_opt.step()
    print(f"step {step} meta loss {meta_loss.item():.6f} grad norm {grad_norm.item():.6f} "
          f"{type(meta_loss.grad_fn).__name__}")

draw = sample_task(np.random.default_rng(123))
(x_s, y_s), (x_q, y_q) = draw(k_shot), draw(50)
with torch.no_grad():
    before = F.mse_loss(model(x_q), y_q).item()
fast = adapt(model, x_s, y_s, inner_lr, 5, first_order=True)
after = F.mse_loss(model(x_q, fast), y_q).item()
print(f"held-out task loss before {before:.6f} after 5 steps {after:.6f}")
