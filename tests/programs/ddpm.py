"""A tiny denoising diffusion model in the idioms of public DDPM code: a linear beta schedule with `cumprod`,
timesteps gathered per sample, sinusoidal time embeddings, a small U-Net-like conv net (GroupNorm, SiLU, a strided
conv down, `F.interpolate` up, a skip by `torch.cat`), the noise-prediction MSE loss, AdamW, an EMA copy updated with
`lerp_` under `no_grad`, and a few ancestral sampling steps with `randn_like`. `WEIGHTS=path` shares the initial
weights between the two runs (tests/programs/_draws.py shares the draws)."""
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights

torch.manual_seed(0)
T = 50
betas = torch.linspace(1e-4, 0.02, T)
alphas = 1.0 - betas
alpha_bars = torch.cumprod(alphas, dim=0)


def time_embedding(t, dim=16):
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
    angles = t.float()[:, None] * freqs[None, :]
    return torch.cat([angles.sin(), angles.cos()], dim=1)


class Block(nn.Module):
    def __init__(self, cin, cout, tdim=16):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.norm1 = nn.GroupNorm(4, cout)
        self.time = nn.Linear(tdim, cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.norm2 = nn.GroupNorm(4, cout)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, temb):
        h = F.silu(self.norm1(self.conv1(x)))
        h = h + self.time(temb)[:, :, None, None]
        h = F.silu(self.norm2(self.conv2(h)))
        return h + self.skip(x)


class TinyUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.down1 = Block(1, 8)
        self.pool = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.mid = Block(8, 16)
        self.up = Block(16 + 8, 8)
        self.out = nn.Conv2d(8, 1, 1)

    def forward(self, x, t):
        temb = time_embedding(t)
        h1 = self.down1(x, temb)
        h2 = self.mid(self.pool(h1), temb)
        h2 = F.interpolate(h2, scale_factor=2, mode="nearest")
        return self.out(self.up(torch.cat([h2, h1], dim=1), temb))


data = (torch.rand(64, 1, 8, 8) > 0.5).float() * 2 - 1  # binary 8x8 images in {-1, 1}
model = TinyUNet()
share_initial_weights({"model": model})
ema = copy.deepcopy(model).requires_grad_(False)
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
for step in range(40):
    x0 = data[torch.randint(0, len(data), (16,))]
    t = torch.randint(0, T, (16,))
    noise = torch.randn_like(x0)
    a = alpha_bars.gather(0, t).view(-1, 1, 1, 1)
    xt = a.sqrt() * x0 + (1 - a).sqrt() * noise
    loss = F.mse_loss(model(xt, t), noise)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        for p_ema, p in zip(ema.parameters(), model.parameters()):
            p_ema.lerp_(p, 0.1)
    if step % 8 == 0:
        print(f"step {step}: loss {loss.item():.5f}")

with torch.no_grad():
    x = torch.randn(4, 1, 8, 8)
    for i in reversed(range(T - 5, T)):
        t = torch.full((4,), i, dtype=torch.long)
        eps = ema(x, t)
        mean = (x - betas[i] / (1 - alpha_bars[i]).sqrt() * eps) / alphas[i].sqrt()
        x = mean + betas[i].sqrt() * torch.randn_like(x) if i > 0 else mean
    print("sample mean", f"{x.mean().item():.5f}", "std", f"{x.std().item():.5f}")
    print("ema weight norm", f"{sum(p.norm() ** 2 for p in ema.parameters()).sqrt().item():.5f}")
