"""A RealNVP normalizing flow fitted to a 2-D two-moons dataset, in the idioms of public flow tutorials
(RealNVP / Glow-style): affine coupling layers with alternating checkerboard and half masks kept by
`register_buffer`, a scale network ending in `torch.tanh` times a learnable `nn.Parameter` scale, ActNorm with a
data-dependent initialisation under `torch.no_grad()` on the first batch (`.data.copy_`, a buffer's `.fill_`),
`log_det = s.sum(dim=1)` accumulated across an `nn.ModuleList`, a `MultivariateNormal(torch.zeros(2),
torch.eye(2))` prior checked against `Independent(Normal(loc, scale), 1)`, the loss
`-(prior.log_prob(z) + log_det).mean()` with bits per dimension by `math.log(2)`, Adam with weight decay under
`ExponentialLR`, `clip_grad_norm_`'s returned total norm, the inverse pass for sampling from `prior.sample((n,))`,
and a `torch.logsumexp` log-likelihood estimate. The points come from NumPy's seeded generator; the shuffles and
the prior's samples from torch's (tests/programs/_draws.py shares the shuffles, `WEIGHTS=path` the initial
weights)."""

# ruff: noqa: UP031 - the notebook's own %-formatting
import math

import numpy as np
import torch
import torch.nn as nn
import torch.utils.data
from _weights import share_initial_weights
from torch.distributions import Independent, MultivariateNormal, Normal

torch.manual_seed(0)


def make_moons(n, seed, noise=0.08):
    """Two interleaved half circles, standardised (NumPy's generator, the same in both runs)."""
    rng = np.random.default_rng(seed)
    angles = rng.uniform(0.0, np.pi, n)
    upper = rng.integers(0, 2, n).astype(bool)
    x = np.where(upper, np.cos(angles), 1.0 - np.cos(angles))
    y = np.where(upper, np.sin(angles), 0.5 - np.sin(angles))
    points = np.stack([x, y], axis=1) + noise * rng.standard_normal((n, 2))
    points = (points - points.mean(0)) / points.std(0)
    return torch.from_numpy(points).float()


class ActNorm(nn.Module):
    """Per-dimension affine map whose bias and log-scale are set from the first batch it sees."""

    def __init__(self, dim):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(1, dim))
        self.logs = nn.Parameter(torch.zeros(1, dim))
        self.register_buffer("initialized", torch.tensor(0, dtype=torch.uint8))

    def initialize(self, x):
        with torch.no_grad():
            mean = x.mean(dim=0, keepdim=True)
            std = x.std(dim=0, keepdim=True)
            self.loc.data.copy_(-mean)
            self.logs.data.copy_(torch.log(1.0 / (std + 1e-6)))
            self.initialized.fill_(1)

    def forward(self, x):
        if self.initialized.item() == 0:
            self.initialize(x)
        z = (x + self.loc) * torch.exp(self.logs)
        log_det = self.logs.sum(dim=1).expand(x.shape[0])
        return z, log_det

    def inverse(self, z):
        return z * torch.exp(-self.logs) - self.loc


class AffineCoupling(nn.Module):
    """y = x*mask + (1-mask)*(x*exp(s) + t), with s and t functions of the masked half."""

    def __init__(self, mask, hidden=32):
        super().__init__()
        self.register_buffer("mask", mask)
        self.s_net = nn.Sequential(nn.Linear(2, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, hidden),
                                   nn.LeakyReLU(0.2), nn.Linear(hidden, 2))
        self.t_net = nn.Sequential(nn.Linear(2, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, hidden),
                                   nn.LeakyReLU(0.2), nn.Linear(hidden, 2))
        self.scale = nn.Parameter(torch.ones(1, 2))

    def _s_t(self, x_masked):
        s = self.scale * torch.tanh(self.s_net(x_masked)) * (1 - self.mask)
        t = self.t_net(x_masked) * (1 - self.mask)
        return s, t

    def forward(self, x):
        x_masked = x * self.mask
        s, t = self._s_t(x_masked)
        y = x_masked + (1 - self.mask) * (x * torch.exp(s) + t)
        return y, s.sum(dim=1)

    def inverse(self, y):
        y_masked = y * self.mask
        s, t = self._s_t(y_masked)
        return y_masked + (1 - self.mask) * (y - t) * torch.exp(-s)


class InvertibleLinear(nn.Module):
    """Glow's invertible 1x1 convolution on 2-D points, LU-parameterised from a random rotation."""

    def __init__(self, dim):
        super().__init__()
        w_init = torch.linalg.qr(torch.randn(dim, dim))[0]
        P, L, U = torch.linalg.lu(w_init)
        s = torch.diag(U)
        self.register_buffer("P", P)
        self.register_buffer("sign_s", torch.sign(s))
        self.register_buffer("l_mask", torch.tril(torch.ones(dim, dim), -1))
        self.register_buffer("eye", torch.eye(dim))
        self.L = nn.Parameter(L)
        self.log_s = nn.Parameter(torch.log(torch.abs(s)))
        self.U = nn.Parameter(torch.triu(U, 1))

    def weight(self):
        L = self.L * self.l_mask + self.eye
        U = self.U * self.l_mask.T + torch.diag(self.sign_s * torch.exp(self.log_s))
        return self.P @ L @ U

    def forward(self, x):
        return x @ self.weight().T, self.log_s.sum().expand(x.shape[0])

    def inverse(self, z):
        return z @ torch.inverse(self.weight()).T


class RealNVP(nn.Module):
    def __init__(self, n_couplings=4):
        super().__init__()
        checkerboard = (torch.arange(2) % 2).float()
        half = torch.cat([torch.ones(1), torch.zeros(1)])
        layers = [ActNorm(2)]
        for i in range(n_couplings):
            layers.append(AffineCoupling(checkerboard if i % 2 == 0 else half))
            if i % 2 == 1:
                layers.append(InvertibleLinear(2))
        self.layers = nn.ModuleList(layers)

    def forward(self, x):
        log_det = torch.zeros(x.shape[0])
        for layer in self.layers:
            x, ld = layer(x)
            log_det += ld
        return x, log_det

    def inverse(self, z):
        for layer in reversed(self.layers):
            z = layer.inverse(z)
        return z


class NotebookRealNVP(nn.Module):
    """The widely copied notebook version: masks as a frozen `nn.Parameter`, s and t nets in ModuleLists,
    `x.new_zeros` and `log_det_J -= ...` in the inverse direction."""

    def __init__(self, nets, nett, mask, prior):
        super().__init__()
        self.prior = prior
        self.mask = nn.Parameter(mask, requires_grad=False)
        self.t = torch.nn.ModuleList([nett() for _ in range(len(mask))])
        self.s = torch.nn.ModuleList([nets() for _ in range(len(mask))])

    def g(self, z):
        x = z
        for i in range(len(self.t)):
            x_ = x * self.mask[i]
            s = self.s[i](x_) * (1 - self.mask[i])
            t = self.t[i](x_) * (1 - self.mask[i])
            x = x_ + (1 - self.mask[i]) * (x * torch.exp(s) + t)
        return x

    def f(self, x):
        log_det_J, z = x.new_zeros(x.shape[0]), x
        for i in reversed(range(len(self.t))):
            z_ = self.mask[i] * z
            s = self.s[i](z_) * (1 - self.mask[i])
            t = self.t[i](z_) * (1 - self.mask[i])
            z = (1 - self.mask[i]) * (z - t) * torch.exp(-s) + z_
            log_det_J -= s.sum(dim=1)
        return z, log_det_J

    def log_prob(self, x):
        z, logp = self.f(x)
        return self.prior.log_prob(z) + logp

    def sample(self, batch_size):
        z = self.prior.sample((batch_size, 1))
        return self.g(z)


class BatchNormFlow(nn.Module):
    """pytorch-flows' batch normalisation as a flow layer: batch statistics in training, running ones in eval."""

    def __init__(self, num_inputs, momentum=0.0, eps=1e-5):
        super().__init__()
        self.log_gamma = nn.Parameter(torch.zeros(num_inputs))
        self.beta = nn.Parameter(torch.zeros(num_inputs))
        self.momentum = momentum
        self.eps = eps
        self.register_buffer("running_mean", torch.zeros(num_inputs))
        self.register_buffer("running_var", torch.ones(num_inputs))

    def forward(self, inputs, mode="direct"):
        if mode == "direct":
            if self.training:
                self.batch_mean = inputs.mean(0)
                self.batch_var = (inputs - self.batch_mean).pow(2).mean(0) + self.eps
                self.running_mean.mul_(self.momentum)
                self.running_var.mul_(self.momentum)
                self.running_mean.add_(self.batch_mean.data * (1 - self.momentum))
                self.running_var.add_(self.batch_var.data * (1 - self.momentum))
                mean, var = self.batch_mean, self.batch_var
            else:
                mean, var = self.running_mean, self.running_var
            x_hat = (inputs - mean) / var.sqrt()
            y = torch.exp(self.log_gamma) * x_hat + self.beta
            return y, (self.log_gamma - 0.5 * torch.log(var)).sum(-1, keepdim=True)
        mean, var = (self.batch_mean, self.batch_var) if self.training else (self.running_mean, self.running_var)
        x_hat = (inputs - self.beta) / torch.exp(self.log_gamma)
        y = x_hat * var.sqrt() + mean
        return y, (-self.log_gamma + 0.5 * torch.log(var)).sum(-1, keepdim=True)


class CouplingLayer(nn.Module):
    """pytorch-flows' coupling: Tanh scale net, ReLU translate net, `keepdim=True` log-determinants."""

    def __init__(self, num_inputs, num_hidden, mask):
        super().__init__()
        self.mask = mask
        self.scale_net = nn.Sequential(nn.Linear(num_inputs, num_hidden), nn.Tanh(),
                                       nn.Linear(num_hidden, num_hidden), nn.Tanh(),
                                       nn.Linear(num_hidden, num_inputs))
        self.translate_net = nn.Sequential(nn.Linear(num_inputs, num_hidden), nn.ReLU(),
                                           nn.Linear(num_hidden, num_hidden), nn.ReLU(),
                                           nn.Linear(num_hidden, num_inputs))

    def forward(self, inputs, mode="direct"):
        mask = self.mask
        masked_inputs = inputs * mask
        log_s = self.scale_net(masked_inputs) * (1 - mask)
        t = self.translate_net(masked_inputs) * (1 - mask)
        if mode == "direct":
            return inputs * torch.exp(log_s) + t, log_s.sum(-1, keepdim=True)
        return (inputs - t) * torch.exp(-log_s), -log_s.sum(-1, keepdim=True)


class FlowSequential(nn.Sequential):
    """A sequence of flow layers whose log-determinants add up, pytorch-flows style."""

    def forward(self, inputs, mode="direct", logdets=None):
        if logdets is None:
            logdets = torch.zeros(inputs.size(0), 1, device=inputs.device)
        modules = self._modules.values() if mode == "direct" else reversed(self._modules.values())
        for module in modules:
            inputs, logdet = module(inputs, mode)
            logdets += logdet
        return inputs, logdets

    def log_probs(self, inputs):
        u, log_jacob = self(inputs)
        log_probs = (-0.5 * u.pow(2) - 0.5 * math.log(2 * math.pi)).sum(-1, keepdim=True)
        return (log_probs + log_jacob).sum(-1, keepdim=True)


train_x, test_x = make_moons(512, 0), make_moons(256, 1)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(train_x), batch_size=64, shuffle=True)
flow = RealNVP()
prior = MultivariateNormal(torch.zeros(2), torch.eye(2))
nets = lambda: nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(), nn.Linear(32, 32), nn.LeakyReLU(),  # noqa: E731
                             nn.Linear(32, 2), nn.Tanh())
nett = lambda: nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(), nn.Linear(32, 32), nn.LeakyReLU(),  # noqa: E731
                             nn.Linear(32, 2))
masks = torch.from_numpy(np.array([[0, 1], [1, 0]] * 2).astype(np.float32))
notebook = NotebookRealNVP(nets, nett, masks, prior)
mask = torch.arange(0, 2) % 2
bn_modules = [BatchNormFlow(2)]  # once, in front: a batch norm after a coupling makes the coupling's biases
for _ in range(3):  # directions the loss ignores, whose rounding-noise gradients Adam blows up to +-lr steps
    bn_modules.append(CouplingLayer(2, 32, mask))
    mask = 1 - mask
bn_flow = FlowSequential(*bn_modules)
for module in bn_flow.modules():
    if isinstance(module, nn.Linear):
        nn.init.orthogonal_(module.weight)
        if hasattr(module, "bias") and module.bias is not None:
            module.bias.data.fill_(0)
share_initial_weights({"flow": flow, "notebook": notebook, "bn_flow": bn_flow})
diagonal = Independent(Normal(torch.zeros(2), torch.ones(2)), 1)
optimizer = torch.optim.Adam(flow.parameters(), lr=3e-3, weight_decay=1e-5)
scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.95)


def nll(x):
    z, log_det = flow(x)
    return -(prior.log_prob(z) + log_det).mean()


step = 0
for epoch in range(12):
    for (batch,) in loader:
        loss = nll(batch)
        optimizer.zero_grad()
        loss.backward()
        total_norm = torch.nn.utils.clip_grad_norm_(flow.parameters(), max_norm=10.0)
        optimizer.step()
        if step == 0:
            act = flow.layers[0]
            print("actnorm init loc {:.5f} {:.5f} logs {:.5f} {:.5f}".format(*act.loc.view(-1).tolist(),
                                                                            *act.logs.view(-1).tolist()))
        if step % 12 == 0:
            print(f"step {step:3d} loss {loss.item():.5f} bpd {loss.item() / (2 * math.log(2)):.5f} "
                  f"grad_norm {total_norm.item():.5f} lr {scheduler.get_last_lr()[0]:.6f}")
        step += 1
    scheduler.step()
print("scheduler state", sorted(scheduler.state_dict()))  # what a checkpoint of the schedule holds

nb_optimizer = torch.optim.Adam([p for p in notebook.parameters() if p.requires_grad == True], lr=1e-3)  # noqa: E712
for t in range(61):
    noisy_moons = train_x[torch.randint(0, len(train_x), (100,))]
    loss = -notebook.log_prob(noisy_moons).mean()
    nb_optimizer.zero_grad()
    loss.backward(retain_graph=True)
    nb_optimizer.step()
    if t % 20 == 0:
        print("iter %s:" % t, "loss = %.3f" % loss)
with torch.no_grad():
    x = notebook.sample(500).detach().numpy()
    print("notebook samples", x.shape, "mean %.4f %.4f" % tuple(x[:, 0, :].mean(0)))

bn_optimizer = torch.optim.Adam(bn_flow.parameters(), lr=1e-3, weight_decay=1e-6)
for epoch in range(3):
    bn_flow.train()
    train_loss = 0
    for batch_idx, (data,) in enumerate(loader):
        bn_optimizer.zero_grad()
        loss = -bn_flow.log_probs(data).mean()
        train_loss += loss.item()
        loss.backward()
        bn_optimizer.step()
    for module in bn_flow.modules():
        if isinstance(module, BatchNormFlow):
            module.momentum = 0
    with torch.no_grad():
        bn_flow(loader.dataset.tensors[0].to(data.device))
    for module in bn_flow.modules():
        if isinstance(module, BatchNormFlow):
            module.momentum = 1
    bn_flow.eval()
    with torch.no_grad():
        test_loss = -bn_flow.log_probs(test_x).mean().item()
    print(f"bn flow epoch {epoch} train {train_loss / (batch_idx + 1):.5f} test {test_loss:.5f}")
with torch.no_grad():
    u = torch.randn(200, 2)
    x, _ = bn_flow(u, mode="inverse")
    back, _ = bn_flow(x)
    print(f"bn flow samples mean {x.mean().item():.4f} round trip {(back - u).abs().max().item() < 1e-3}")

flow.eval()
with torch.no_grad():
    z, log_det = flow(test_x)
    log_px = prior.log_prob(z) + log_det
    print(f"prior check {(prior.log_prob(z) - diagonal.log_prob(z)).abs().max().item():.6f}")
    print(f"test nll {-log_px.mean().item():.5f} bpd {-log_px.mean().item() / (2 * math.log(2)):.5f}")
    # the log of the average likelihood over the test set, stably
    avg_ll = torch.logsumexp(log_px, dim=0) - math.log(len(test_x))
    print(f"log mean likelihood {avg_ll.item():.5f}")
    print(f"inverse ok {torch.allclose(flow.inverse(z), test_x, atol=1e-4)}")
    samples = flow.inverse(prior.sample((1000,)))
    mean, std = samples.mean(dim=0), samples.std(dim=0)
    print("samples mean {:.4f} {:.4f} std {:.4f} {:.4f}".format(*mean.tolist(), *std.tolist()))
