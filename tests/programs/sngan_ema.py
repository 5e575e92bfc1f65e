"""An SN-GAN on a 2-d mixture, run unchanged under torch and under `python -m retrograd.run`: a discriminator with
the legacy and the parametrization spectral_norm, a weight_norm generator (parametrizations and legacy), the hinge
loss, Adam with betas=(0.0, 0.9), LambdaLR with a function and with a list, an EMA of the generator through
AveragedModel and get_ema_multi_avg_fn, a state_dict round trip, remove_parametrizations, and SWA with SWALR and
update_bn on a conv net with BatchNorm. `WEIGHTS=path` shares the initial weights between the two runs
(tests/programs/_draws.py shares the draws)."""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

torch.manual_seed(0)
centers = torch.tensor([[2.0, 0.0], [-2.0, 0.0], [0.0, 2.0], [0.0, -2.0]])


def real_batch(n):
    idx = torch.randint(0, 4, (n,))
    return centers[idx] + 0.1 * torch.randn(n, 2)


class Gen(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.utils.parametrizations.weight_norm(nn.Linear(4, 32))
        self.fc2 = nn.utils.parametrizations.weight_norm(nn.Linear(32, 32), dim=None)
        self.out = nn.Linear(32, 2)

    def forward(self, z):
        return self.out(F.leaky_relu(self.fc2(F.leaky_relu(self.fc1(z), 0.2)), 0.2))


class Disc(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.utils.spectral_norm(nn.Linear(2, 32))
        self.l2 = nn.utils.parametrizations.spectral_norm(nn.Linear(32, 32))
        self.l3 = nn.utils.parametrizations.spectral_norm(nn.Linear(32, 1), n_power_iterations=2)

    def forward(self, x):
        return self.l3(F.leaky_relu(self.l2(F.leaky_relu(self.l1(x), 0.1)), 0.1))


G, D = Gen(), Disc()
share_initial_weights({"G": G, "D": D})
print("G params", [n for n, _ in G.named_parameters()])
print("D params", [n for n, _ in D.named_parameters()])
print("D buffers", [n for n, _ in D.named_buffers()])
print("D state keys", list(D.state_dict().keys()))
ema = AveragedModel(G, multi_avg_fn=get_ema_multi_avg_fn(0.9))
optG = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.0, 0.9))
optD = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.0, 0.9))
warm = lambda step: min(1.0, (step + 1) / 5)  # noqa: E731 - the idiom of training scripts
schedG = torch.optim.lr_scheduler.LambdaLR(optG, lr_lambda=warm)
schedD = torch.optim.lr_scheduler.LambdaLR(optD, lr_lambda=[warm])
fixed_z = torch.randn(8, 4)

for step in range(30):
    x = real_batch(64)
    z = torch.randn(64, 4)
    fake = G(z).detach()
    d_loss = F.relu(1.0 - D(x)).mean() + F.relu(1.0 + D(fake)).mean()
    optD.zero_grad()
    d_loss.backward()
    optD.step()
    schedD.step()

    z = torch.randn(64, 4)
    g_loss = -D(G(z)).mean()
    optG.zero_grad()
    g_loss.backward()
    optG.step()
    schedG.step()
    ema.update_parameters(G)
    if step % 5 == 0 or step == 29:
        with torch.no_grad():
            sigma = torch.linalg.matrix_norm(D.l2.weight, ord=2).item()
            sample = ema(fixed_z)
        print(f"step {step}: d {d_loss.item():.5f} g {g_loss.item():.5f} lr {schedG.get_last_lr()[0]:.6f} "
              f"sigma {sigma:.5f} ema mean {sample.mean().item():.5f} n_averaged {ema.n_averaged.item()}")

print("u shape", tuple(D.l1.weight_u.shape), "orig", tuple(D.l1.weight_orig.shape))
print("g norm", [f"{v:.5f}" for v in G.fc2.parametrizations.weight.original0.flatten()[:3].tolist()])
print("orig0", G.fc1.parametrizations.weight.original0.shape)
D.eval()
with torch.no_grad():
    print("eval D", [f"{v:.5f}" for v in D(centers).flatten().tolist()])
sd = D.state_dict()
D2 = Disc()
D2.load_state_dict(sd)
D2.eval()
with torch.no_grad():
    print("reloaded D", [f"{v:.5f}" for v in D2(centers).flatten().tolist()])
print("ema sd keys", list(ema.state_dict().keys())[:4])
Gc = copy.deepcopy(ema.module)
print("deepcopy ok", type(Gc).__name__, f"{Gc(fixed_z).sum().item():.5f}")
print(schedG.state_dict()["last_epoch"], schedD.get_last_lr())
nn.utils.parametrize.remove_parametrizations(G.fc2, "weight", leave_parametrized=True)
nn.utils.parametrize.remove_parametrizations(G.fc1, "weight")
print("after remove", [n for n, _ in G.named_parameters()])
W = nn.utils.weight_norm(nn.Linear(3, 5))
print("old wn", tuple(W.weight_g.shape), f"{W(torch.ones(1, 3)).sum().item():.5f}")
nn.utils.remove_weight_norm(W)
print("old wn removed", [n for n, _ in W.named_parameters()])
# conv spectral norm, ConvTranspose dim, SWA with BN buffers
torch.manual_seed(3)
conv = nn.utils.parametrizations.spectral_norm(nn.Conv2d(3, 4, 3, padding=1))
convT = nn.utils.spectral_norm(nn.ConvTranspose2d(4, 3, 4, stride=2, padding=1))
print("convT u", tuple(convT.weight_u.shape), "conv u", tuple(conv.parametrizations.weight[0]._u.shape))
net = nn.Sequential(conv, nn.BatchNorm2d(4), nn.ReLU(), convT)
swa = AveragedModel(net, use_buffers=True)
opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, nesterov=True)
swa_sched = torch.optim.swa_utils.SWALR(opt, swa_lr=0.01, anneal_epochs=3, anneal_strategy="cos")
img = torch.randn(4, 3, 6, 6)
for it in range(6):
    out = net(img)
    loss = F.mse_loss(out, torch.zeros_like(out))
    opt.zero_grad()
    loss.backward()
    opt.step()
    swa_sched.step()
    swa.update_parameters(net)
    print(f"swa it {it}: loss {loss.item():.6f} lr {opt.param_groups[0]['lr']:.6f}")
loader = [(torch.randn(4, 3, 6, 6),) for _ in range(3)]
torch.optim.swa_utils.update_bn(loader, swa)
print("bn mean", [f"{v:.5f}" for v in swa.module[1].running_mean.tolist()], swa.module[1].momentum)
with torch.no_grad():
    print("swa out", f"{swa(img).abs().mean().item():.6f}")
