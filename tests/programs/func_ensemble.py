"""Model ensembling, neural tangent kernels, Hessians, parametrizations and activation checkpointing, in the idioms of
PyTorch's torch.func tutorials ("Model ensembling", "Neural Tangent Kernels", "Jacobians, Hessians, hvp, vhp, and more")
and of public code using `torch.nn.utils.parametrizations` and `torch.utils.checkpoint`, run unchanged under torch and
under `python -m retrograd.run`. Ensembling: small MLPs stacked by `torch.func.stack_module_state`, a
`copy.deepcopy(models[0])` base model (the tutorial's `.to("meta")` left out: retrograd has no meta device) called by
`functional_call(base_model, (params, buffers), (x,))` under `vmap(fmodel, in_dims=(0, 0, None))` (one minibatch) and
`in_dims=(0, 0, 0)` (one per model), checked against the loop of models; then the ensemble trained by `vmap(grad(loss))`
over the stacked parameters with a manual SGD update `{k: p - lr * g[k] for ...}`, checked against the loop of models
trained by `backward()`; input dropout under `vmap(..., randomness="different")` and `"same"`. Empirical NTK of an MLP:
`vmap(jacrev(fnet_single, argnums=0), (None, 0))` over `dict(net.named_parameters())` detached, contracted per parameter
by `torch.einsum('Naf,Mbf->NMab', ...)` and summed, and by NTK-vector products (`vjp`, `jvp`, nested `vmap`). Hessians
of a scalar function: `hessian`, `jacfwd(jacrev(f))`, `jacrev(jacrev(f))`, an hvp as `jvp(grad(f), ...)`, and
`torch.autograd.functional.hessian` and `hvp`. A small model with `weight_norm`, `spectral_norm` and `orthogonal`
parametrizations, a forward under `parametrize.cached()`, `parametrize.is_parametrized`, its state_dict keys
(`parametrizations.weight.original0` ...), trained with Adam; per-sample gradients of a weight_norm'd and orthogonal
MLP's originals by `vmap(grad(...))` over `functional_call`, checked against the loop of `autograd.grad`; and residual
blocks run under `torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)` in training, whose gradients match
the plain run's. `WEIGHTS=path` shares the initial weights."""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as parametrize
from _weights import share_initial_weights
from torch.func import functional_call, grad, hessian, jacfwd, jacrev, jvp, stack_module_state, vjp, vmap
from torch.nn.utils.parametrizations import orthogonal, spectral_norm, weight_norm
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)


class SimpleMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 4)

    def forward(self, x):
        x = x.flatten(1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        x = F.relu(x)
        x = self.fc3(x)
        return x


class TanhNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 12)
        self.fc2 = nn.Linear(12, 12)
        self.fc3 = nn.Linear(12, 3)

    def forward(self, x):
        x = torch.tanh(self.fc1(x))
        x = torch.tanh(self.fc2(x))
        return self.fc3(x)


class ParamNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = weight_norm(nn.Linear(6, 8))
        self.mix = orthogonal(nn.Linear(8, 8))
        self.out = spectral_norm(nn.Linear(8, 2))

    def forward(self, x):
        x = F.gelu(self.inp(x))
        x = torch.tanh(self.mix(x))
        return self.out(x)


class NormedMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = weight_norm(nn.Linear(6, 10))
        self.fc2 = orthogonal(nn.Linear(10, 10))
        self.fc3 = weight_norm(nn.Linear(10, 2), dim=None)

    def forward(self, x):
        return self.fc3(torch.tanh(self.fc2(torch.tanh(self.fc1(x)))))


class ResidualBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, x):
        return x + self.fc2(F.silu(self.fc1(self.norm(x))))


class CheckpointedNet(nn.Module):
    def __init__(self, dim, use_checkpoint):
        super().__init__()
        self.use_checkpoint = use_checkpoint
        self.blocks = nn.ModuleList([ResidualBlock(dim) for _ in range(2)])
        self.head = nn.Linear(dim, 1)

    def forward(self, x):
        for block in self.blocks:
            if self.use_checkpoint and self.training:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        return self.head(x)


num_models = 4
models = [SimpleMLP() for _ in range(num_models)]
net = TanhNet()
pnet = ParamNet()
normed = NormedMLP()
plain = CheckpointedNet(10, use_checkpoint=False)
ckpt = copy.deepcopy(plain)
ckpt.use_checkpoint = True
share_initial_weights({**{f"models{i}": m for i, m in enumerate(models)}, "net": net, "pnet": pnet,
                       "normed": normed, "plain": plain})
ckpt.load_state_dict(plain.state_dict())

# ---- model ensembling -------------------------------------------------------------------------

data = torch.randn(24, 4, 4)
targets = torch.randint(4, (24,))
minibatches = data[:num_models * 6].reshape(num_models, 6, 4, 4)
minibatch_targets = targets[:num_models * 6].reshape(num_models, 6)

predictions_diff_minibatch_loop = [model(mb) for model, mb in zip(models, minibatches)]
predictions2 = [model(data) for model in models]

params, buffers = stack_module_state(models)
print("stacked", sorted((k, tuple(v.shape)) for k, v in params.items()), "buffers", len(buffers))
base_model = copy.deepcopy(models[0])  # the tutorial's .to("meta"): retrograd has no meta device


def fmodel(params, buffers, x):
    return functional_call(base_model, (params, buffers), (x,))


predictions1_vmap = vmap(fmodel, in_dims=(0, 0, 0))(params, buffers, minibatches)
assert torch.allclose(predictions1_vmap, torch.stack(predictions_diff_minibatch_loop), atol=1e-5)
predictions2_vmap = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, data)
assert torch.allclose(predictions2_vmap, torch.stack(predictions2), atol=1e-5)
print("different minibatches", tuple(predictions1_vmap.shape), f"{predictions1_vmap.sum().item():.5f}")
print("same minibatch", tuple(predictions2_vmap.shape), f"{predictions2_vmap.pow(2).sum().item():.5f}")


def ensemble_loss(params, buffers, x, y):
    return F.cross_entropy(fmodel(params, buffers, x), y)


ensemble_grad = vmap(grad(ensemble_loss), in_dims=(0, 0, 0, 0))
ensemble_losses = vmap(ensemble_loss, in_dims=(0, 0, 0, 0))
lr = 0.1
for step in range(8):
    grads = ensemble_grad(params, buffers, minibatches, minibatch_targets)
    params = {k: p - lr * grads[k] for k, p in params.items()}
    losses = ensemble_losses(params, buffers, minibatches, minibatch_targets)
    print(f"ensemble step {step}", " ".join(f"{loss:.6f}" for loss in losses.tolist()))

# the loop of models, trained the same way one by one, lands on the same parameters
for i, model in enumerate(models):
    for _ in range(8):
        loss = F.cross_entropy(model(minibatches[i]), minibatch_targets[i])
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
    assert torch.allclose(model.fc3.weight, params["fc3.weight"][i], atol=1e-5)
print("ensemble matches loop", f"{params['fc1.weight'].abs().sum().item():.5f}")


def fmodel_dropout(params, buffers, x):
    return fmodel(params, buffers, F.dropout(x, 0.25))


# input dropout inside vmap: one mask per model ('different') or one mask for all ('same')
for randomness in ("different", "same"):
    out = vmap(fmodel_dropout, in_dims=(0, 0, None), randomness=randomness)(params, buffers, data)
    print(f"dropout {randomness}", tuple(out.shape), f"{out.pow(2).sum().item():.5f}")

# ---- neural tangent kernels -------------------------------------------------------------------

x_train = torch.randn(5, 5)
x_test = torch.randn(3, 5)
params = {k: v.detach() for k, v in net.named_parameters()}


def fnet_single(params, x):
    return functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)


def empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2):
    jac1 = vmap(jacrev(fnet_single, argnums=0), (None, 0))(params, x1)
    jac1 = [j.flatten(2) for j in jac1.values()]
    jac2 = vmap(jacrev(fnet_single, argnums=0), (None, 0))(params, x2)
    jac2 = [j.flatten(2) for j in jac2.values()]
    result = torch.stack([torch.einsum('Naf,Mbf->NMab', j1, j2) for j1, j2 in zip(jac1, jac2)])
    return result.sum(0)


def empirical_ntk_ntk_vps(func, params, x1, x2):
    def get_ntk(x1, x2):
        def func_x1(params):
            return func(params, x1)

        def func_x2(params):
            return func(params, x2)

        output, vjp_fn = vjp(func_x1, params)

        def get_ntk_slice(vec):
            vjps = vjp_fn(vec)
            _, jvps = jvp(func_x2, (params,), vjps)
            return jvps

        basis = torch.eye(output.numel(), dtype=output.dtype).view(output.numel(), -1)
        return vmap(get_ntk_slice)(basis)

    return vmap(vmap(get_ntk, (None, 0)), (0, None))(x1, x2)


ntk = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test)
ntk_vps = empirical_ntk_ntk_vps(fnet_single, params, x_train, x_test)
assert torch.allclose(ntk, ntk_vps, atol=1e-4)
print("ntk", tuple(ntk.shape), f"{ntk.sum().item():.5f}", "vps", f"{ntk_vps.sum().item():.5f}")
for n, m in [(0, 0), (1, 2), (4, 1)]:
    print(f"ntk[{n},{m}] diag", " ".join(f"{v:.5f}" for v in ntk[n, m].diagonal().tolist()),
          f"off {ntk[n, m, 0, 1].item():.5f}")

# ---- Hessians and Hessian-vector products -----------------------------------------------------

A = torch.randn(4, 4)
b = torch.randn(4)


def f(x):
    return (x.sin() * (A @ x)).sum() + torch.log1p(x.pow(2)).sum() + (b * x).sum() ** 2


x = torch.randn(4)
h1 = hessian(f)(x)
h2 = jacfwd(jacrev(f))(x)
h3 = jacrev(jacrev(f))(x)
h4 = torch.autograd.functional.hessian(f, x)
assert torch.allclose(h1, h2, atol=1e-5) and torch.allclose(h1, h3, atol=1e-5) and torch.allclose(h1, h4, atol=1e-5)
print("hessian", tuple(h1.shape), " ".join(f"{v:.5f}" for v in h1.diagonal().tolist()),
      f"sym {(h1 - h1.T).abs().max().item() < 1e-5}")


def hvp(f, primals, tangents):
    return jvp(grad(f), primals, tangents)[1]


v = torch.randn(4)
hv = hvp(f, (x,), (v,))
assert torch.allclose(hv, h1 @ v, atol=1e-5)
_, hv_autograd = torch.autograd.functional.hvp(f, x, v)
assert torch.allclose(hv, hv_autograd, atol=1e-5)
print("hvp", " ".join(f"{val:.5f}" for val in hv.tolist()))

# ---- parametrizations -------------------------------------------------------------------------

print("parametrized", parametrize.is_parametrized(pnet.inp), parametrize.is_parametrized(pnet.inp, "bias"),
      parametrize.is_parametrized(pnet.mix, "weight"), parametrize.is_parametrized(nn.Linear(2, 2)))
print("state_dict", list(pnet.state_dict().keys()))
xp = torch.randn(16, 6)
yp = torch.randn(16, 2)
with parametrize.cached():
    out_cached = pnet(xp)
out_plain = pnet(xp)
assert torch.allclose(out_cached, out_plain, atol=1e-6)
w = pnet.mix.weight
print("orthogonal", f"{(w @ w.T - torch.eye(8)).abs().max().item() < 1e-5}",
      "weight_norm", f"{pnet.inp.parametrizations.weight.original0.norm().item():.5f}")
optimizer = torch.optim.Adam(pnet.parameters(), lr=1e-2)
for step in range(6):
    optimizer.zero_grad()
    loss = F.mse_loss(pnet(xp), yp)
    loss.backward()
    optimizer.step()
    print(f"param step {step} loss {loss.item():.6f}")
w = pnet.mix.weight
print("still orthogonal", f"{(w @ w.T - torch.eye(8)).abs().max().item() < 1e-5}")

# per-sample gradients of the parametrization's originals, by vmap(grad) and by the loop of autograd.grad
normed_params = {k: v.detach() for k, v in normed.named_parameters()}
normed_buffers = {k: v.detach() for k, v in normed.named_buffers()}
print("normed params", list(normed_params), "buffers", list(normed_buffers))


def sample_loss(params, buffers, x, y):
    return F.mse_loss(functional_call(normed, (params, buffers), (x.unsqueeze(0),)), y.unsqueeze(0))


per_sample = vmap(grad(sample_loss), in_dims=(None, None, 0, 0))(normed_params, normed_buffers, xp, yp)
for i in range(len(xp)):
    loop_grads = torch.autograd.grad(F.mse_loss(normed(xp[i:i + 1]), yp[i:i + 1]), list(normed.parameters()))
    for g_loop, g_vmap in zip(loop_grads, per_sample.values()):
        assert torch.allclose(g_loop, g_vmap[i], atol=1e-5)
for name, g in per_sample.items():
    norms = g.reshape(len(g), -1).norm(dim=1)[:4].tolist()
    print(f"per-sample {name} {tuple(g.shape)} norms", " ".join(f"{v:.5f}" for v in norms))

# ---- activation checkpointing -----------------------------------------------------------------

xc = torch.randn(12, 10)
yc = torch.randn(12, 1)
opt_plain = torch.optim.SGD(plain.parameters(), lr=0.05)
opt_ckpt = torch.optim.SGD(ckpt.parameters(), lr=0.05)
for step in range(4):
    losses = []
    for model, opt in ((plain, opt_plain), (ckpt, opt_ckpt)):
        model.train()
        opt.zero_grad()
        loss = F.mse_loss(model(xc), yc)
        loss.backward()
        losses.append(loss)
    for p, q in zip(plain.parameters(), ckpt.parameters()):
        assert torch.allclose(p.grad, q.grad, atol=1e-6)
    opt_plain.step()
    opt_ckpt.step()
    print(f"checkpoint step {step} loss {losses[0].item():.6f} {losses[1].item():.6f}")
