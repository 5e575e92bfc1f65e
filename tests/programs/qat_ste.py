"""Quantization-aware training with straight-through estimators, run unchanged under torch and under
`python -m retrograd.run`: torch.fake_quantize_per_tensor_affine (number and tensor qparams) and
fake_quantize_per_channel_affine on the weights, a custom Function with setup_context, mark_non_differentiable and
once_differentiable for the activations, a clamp Function with ctx attributes, the `w + (q - w).detach()` trick,
forward hooks and full backward hooks collecting statistics, SGD with momentum, parameters_to_vector and
vector_to_parameters. `WEIGHTS=path` shares the initial weights between the two runs (tests/programs/_draws.py
shares the draws)."""

import torch
import torch.nn.functional as F
from _weights import share_initial_weights
from torch import nn
from torch.autograd.function import once_differentiable
from torch.nn.utils import parameters_to_vector, vector_to_parameters

torch.manual_seed(0)


class RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(x, scale):
        q = torch.round(x / scale) * scale
        mask = (x.abs() <= 4 * scale)
        return q, mask

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, scale = inputs
        q, mask = output
        ctx.save_for_backward(mask)
        ctx.mark_non_differentiable(mask)
        ctx.scale = scale

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_q, grad_mask):
        (mask,) = ctx.saved_tensors
        return grad_q * mask.to(grad_q.dtype), None


class ClampSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x)
        ctx.lo, ctx.hi = lo, hi
        return x.clamp(lo, hi)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        inside = (x >= ctx.lo) & (x <= ctx.hi)
        return g * inside, None, None


class QLinear(nn.Linear):
    def __init__(self, i, o, mode):
        super().__init__(i, o)
        self.mode = mode
        self.register_buffer("act_scale", torch.tensor(0.05))

    def forward(self, x):
        w = self.weight
        if self.mode == "tensor":
            wq = torch.fake_quantize_per_tensor_affine(w, 0.02, 0, -128, 127)
        elif self.mode == "channel":
            scales = (w.detach().abs().amax(dim=1) / 127).clamp_min(1e-6)
            zps = torch.zeros(w.shape[0], dtype=torch.int32)
            wq = torch.fake_quantize_per_channel_affine(w, scales, zps, 0, -128, 127)
        else:
            q = torch.clamp(torch.round(w / 0.02), -8, 7) * 0.02
            wq = w + (q - w).detach()
        xq, mask = RoundSTE.apply(x, float(self.act_scale))
        self.last_mask_frac = mask.float().mean().item()
        return F.linear(xq, wq, self.bias)


model = nn.Sequential(QLinear(6, 16, "tensor"), nn.ReLU(), QLinear(16, 16, "channel"), nn.Tanh(),
                      QLinear(16, 3, "ste"))
share_initial_weights({"model": model})
stats = {}


def fwd_hook(name):
    def hook(mod, inp, out):
        stats.setdefault(name, []).append((out.mean().item(), out.std().item(), out.abs().max().item()))
    return hook


def bwd_hook(name):
    def hook(mod, grad_in, grad_out):
        gi = grad_in[0]
        stats.setdefault(name + ".grad", []).append(
            (grad_out[0].norm().item(), None if gi is None else gi.norm().item()))
    return hook


handles = []
for name, m in model.named_modules():
    if isinstance(m, QLinear):
        handles.append(m.register_forward_hook(fwd_hook(name)))
        handles.append(m.register_full_backward_hook(bwd_hook(name)))

X = torch.randn(64, 6)
Y = (X[:, :3].sum(1, keepdim=True) > 0).long().squeeze(1) + (X[:, 3] > 0.5).long()
opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
for step in range(12):
    opt.zero_grad()
    out = model(X)
    out = ClampSTE.apply(out, -3.0, 3.0)
    loss = F.cross_entropy(out, Y)
    loss.backward()
    opt.step()
    if step % 3 == 0:
        print(f"step {step:2d} loss {loss.item():.5f} mask0 {model[0].last_mask_frac:.4f}")
        for k in sorted(stats):
            v = stats[k][-1]
            print("  ", k, " ".join("None" if t is None else f"{t:.5f}" for t in v))
for h in handles:
    h.remove()

vec = parameters_to_vector(model.parameters())
print("nparams", vec.numel(), f"{vec.norm().item():.5f}", vec.dtype, vec.requires_grad)
vector_to_parameters(vec * 0.5, model.parameters())
print("halved", f"{parameters_to_vector(model.parameters()).norm().item():.5f}")
with torch.no_grad():
    o = model(X)
print("after", f"{F.cross_entropy(o, Y).item():.5f}", len(stats["0"]))

# direct checks of the fake-quant functions and their gradients
w = torch.randn(4, 5, requires_grad=True)
fq = torch.fake_quantize_per_tensor_affine(w, 0.1, 3, -8, 7)
fq.sum().backward()
print("fq", fq.detach().numpy().round(4).tolist())
print("fq grad", w.grad.tolist())
w.grad = None
sc = torch.tensor([0.1, 0.2, 0.05, 0.3])
zp = torch.tensor([0, 1, -2, 3], dtype=torch.int32)
fc = torch.fake_quantize_per_channel_affine(w, sc, zp, 0, -8, 7)
(fc * torch.arange(5.)).sum().backward()
print("fc", fc.detach().numpy().round(4).tolist())
print("fc grad", w.grad.tolist())
t = torch.fake_quantize_per_tensor_affine(w, torch.tensor(0.1), torch.tensor(0, dtype=torch.int32), 0, 255)
print("tensor qparams", t.sum().item().__round__(4), t.requires_grad, t.grad_fn is not None)
q, m = RoundSTE.apply(w, 0.1)
print(q.requires_grad, m.requires_grad, m.dtype)
try:
    y = RoundSTE.apply(w, 0.1)[0].sum()
    g, = torch.autograd.grad(y, w, create_graph=True)
    g.sum().backward()
except RuntimeError as e:
    print("RuntimeError", str(e)[:80])
