"""Exact Gaussian-process regression, deep kernel learning and Bayesian linear regression in float64, in the idioms of
hand-written GPyTorch-style exact GP code, the "GPs from scratch" tutorials and Bayesian linear regression examples,
run unchanged under torch and under `python -m retrograd.run`: 1-d and 2-d regression data from NumPy's seeded
generator under `torch.set_default_dtype(torch.float64)`; an RBF and a Matern-5/2 kernel from `torch.cdist(x1 /
lengthscale, x2 / lengthscale).pow(2)`; hyperparameters kept as raw `nn.Parameter`s constrained by `F.softplus(raw) +
1e-6`; the exact negative log marginal likelihood from `K + noise * torch.eye(n)`, `torch.linalg.cholesky`,
`torch.cholesky_solve` and the log of the Cholesky diagonal; Adam for a few steps then `torch.optim.LBFGS` with a
closure (strong Wolfe line search); the predictive mean and variance through `torch.linalg.solve_triangular(L, Ks,
upper=False)`; deep kernel learning (a small MLP feature extractor before the RBF kernel, trained jointly with the
hyperparameters); a Bayesian linear regression posterior as `torch.distributions.MultivariateNormal(mean,
scale_tril=...)` with its `log_prob` and `rsample` under a seeded generator; `torch.linalg.slogdet` and
`torch.logdet` cross-checks of the log determinant; a GPyTorch-style `psd_safe_cholesky` that catches
`torch.linalg.LinAlgError` and retries with jitter through `torch.linalg.cholesky_ex`. Prints the losses, the learnt
hyperparameters and a few predictions; `WEIGHTS=path` shares the initial weights."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)

rng = np.random.default_rng(0)
x1d = np.sort(rng.uniform(-3.0, 3.0, 24))
y1d = np.sin(1.5 * x1d) + 0.1 * rng.normal(size=24)
X1 = torch.from_numpy(x1d).unsqueeze(-1)
Y1 = torch.from_numpy(y1d)
x2d = rng.uniform(-2.0, 2.0, (30, 2))
y2d = np.sin(x2d[:, 0]) * np.cos(x2d[:, 1]) + 0.05 * rng.normal(size=30)
X2 = torch.from_numpy(x2d)
Y2 = torch.from_numpy(y2d)


def positive(raw):
    return F.softplus(raw) + 1e-6


class ExactGP(nn.Module):
    """Zero-mean exact GP with a scaled RBF or Matern-5/2 kernel and Gaussian noise."""

    def __init__(self, kernel="rbf", feature_extractor=None):
        super().__init__()
        self.kernel = kernel
        self.feature_extractor = feature_extractor
        self.raw_lengthscale = nn.Parameter(torch.tensor(0.0))
        self.raw_outputscale = nn.Parameter(torch.tensor(0.0))
        self.raw_noise = nn.Parameter(torch.tensor(-2.0))

    @property
    def lengthscale(self):
        return positive(self.raw_lengthscale)

    @property
    def outputscale(self):
        return positive(self.raw_outputscale)

    @property
    def noise(self):
        return positive(self.raw_noise)

    def features(self, x):
        return x if self.feature_extractor is None else self.feature_extractor(x)

    def covar(self, x1, x2):
        ls = self.lengthscale
        sq = torch.cdist(x1 / ls, x2 / ls).pow(2)
        if self.kernel == "rbf":
            return self.outputscale * torch.exp(-0.5 * sq)
        r = torch.sqrt(sq.clamp_min(1e-12)) * math.sqrt(5.0)
        return self.outputscale * (1.0 + r + r.pow(2) / 3.0) * torch.exp(-r)

    def nll(self, x, y):
        z = self.features(x)
        n = y.shape[0]
        K = self.covar(z, z) + self.noise * torch.eye(n)
        L = torch.linalg.cholesky(K)
        alpha = torch.cholesky_solve(y.unsqueeze(-1), L).squeeze(-1)
        return (0.5 * y @ alpha + torch.log(torch.diagonal(L)).sum() + 0.5 * n * math.log(2 * math.pi)) / n

    @torch.no_grad()
    def predict(self, x, y, xs):
        z, zs = self.features(x), self.features(xs)
        K = self.covar(z, z) + self.noise * torch.eye(y.shape[0])
        L = torch.linalg.cholesky(K)
        Ks = self.covar(z, zs)
        alpha = torch.cholesky_solve(y.unsqueeze(-1), L).squeeze(-1)
        mean = Ks.T @ alpha
        v = torch.linalg.solve_triangular(L, Ks, upper=False)
        var = self.outputscale - v.pow(2).sum(0) + self.noise
        return mean, var


def report(tag, gp):
    print(f"{tag} lengthscale {gp.lengthscale.item():.6f} outputscale {gp.outputscale.item():.6f} "
          f"noise {gp.noise.item():.6f}")


def fit(tag, gp, x, y, adam_steps, lbfgs_steps, lr=0.05):
    opt = torch.optim.Adam(gp.parameters(), lr=lr)
    for step in range(adam_steps):
        opt.zero_grad()
        loss = gp.nll(x, y)
        loss.backward()
        opt.step()
        if step % 5 == 0:
            print(f"{tag} adam {step} nll {loss.item():.6f}")
    lbfgs = torch.optim.LBFGS(gp.parameters(), lr=1.0, max_iter=10, line_search_fn="strong_wolfe")

    def closure():
        lbfgs.zero_grad()
        loss = gp.nll(x, y)
        loss.backward()
        return loss

    for step in range(lbfgs_steps):
        loss = lbfgs.step(closure)
        print(f"{tag} lbfgs {step} nll {loss.item():.6f}")
    with torch.no_grad():
        print(f"{tag} final nll {gp.nll(x, y).item():.6f}")
    report(tag, gp)


rbf = ExactGP("rbf")
matern = ExactGP("matern")
extractor = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))
dkl = ExactGP("rbf", feature_extractor=extractor)
share_initial_weights({"extractor": extractor})

fit("rbf", rbf, X1, Y1, adam_steps=15, lbfgs_steps=2)
fit("matern", matern, X1, Y1, adam_steps=15, lbfgs_steps=2)
xs = torch.linspace(-2.5, 2.5, 5).unsqueeze(-1)
for name, gp in (("rbf", rbf), ("matern", matern)):
    mean, var = gp.predict(X1, Y1, xs)
    print(name, "mean", " ".join(f"{m:.5f}" for m in mean.tolist()))
    print(name, "var", " ".join(f"{v:.5f}" for v in var.tolist()))

# deep kernel learning on the 2-d data: the MLP and the kernel hyperparameters trained jointly
fit("dkl", dkl, X2, Y2, adam_steps=20, lbfgs_steps=0, lr=0.02)
mean, var = dkl.predict(X2[:24], Y2[:24], X2[24:])
print("dkl test rmse", f"{(mean - Y2[24:]).pow(2).mean().sqrt().item():.6f}", "mean var", f"{var.mean().item():.6f}")

# log determinant cross-checks
with torch.no_grad():
    K = rbf.covar(X1, X1) + rbf.noise * torch.eye(X1.shape[0])
    L = torch.linalg.cholesky(K)
    sign, logabsdet = torch.linalg.slogdet(K)
    print("logdet chol", f"{2 * torch.log(torch.diagonal(L)).sum().item():.6f}",
          "slogdet", f"{sign.item():.1f}", f"{logabsdet.item():.6f}", "logdet", f"{torch.logdet(K).item():.6f}")



def psd_safe_cholesky(A, jitters=(1e-4, 1e-2)):
    """GPyTorch-style: retry the factorisation with growing diagonal jitter when it fails."""
    try:
        return torch.linalg.cholesky(A), 0.0
    except torch.linalg.LinAlgError as error:
        print("cholesky failed:", type(error).__name__, str(error).split(" (")[0])
    for jitter in jitters:
        L, info = torch.linalg.cholesky_ex(A + jitter * torch.eye(A.shape[-1]))
        if info.item() == 0:
            return L, jitter
        print(f"jitter {jitter:.4f} info {info.item()}")
    raise RuntimeError("not positive-definite even with jitter")


with torch.no_grad():
    repeated = torch.cat([X1[:6], X1[:2]])  # duplicated inputs make the kernel matrix singular
    L, jitter = psd_safe_cholesky(rbf.covar(repeated, repeated) - 1e-3 * torch.eye(8))
    print(f"jitter used {jitter:.4f} logdet {2 * torch.log(torch.diagonal(L)).sum().item():.6f}")

# Bayesian linear regression with features [1, x, x^2] on the 1-d data
Phi = torch.stack([torch.ones_like(X1[:, 0]), X1[:, 0], X1[:, 0].pow(2)], dim=-1)
prior_precision, noise_var = 1.0, 0.1
A = Phi.T @ Phi / noise_var + prior_precision * torch.eye(3)
A_chol = torch.linalg.cholesky(A)
cov = torch.cholesky_inverse(A_chol)
post_mean = cov @ Phi.T @ Y1 / noise_var
posterior = torch.distributions.MultivariateNormal(post_mean, scale_tril=torch.linalg.cholesky(cov))
print("blr mean", " ".join(f"{m:.6f}" for m in post_mean.tolist()))
print("blr log_prob at mean", f"{posterior.log_prob(post_mean).item():.6f}",
      "at zero", f"{posterior.log_prob(torch.zeros(3)).item():.6f}")
print("blr entropy", f"{posterior.entropy().item():.6f}")
generator_seed = torch.manual_seed(1)
samples = posterior.rsample((4,))
print("blr samples", " ".join(f"{s:.5f}" for s in samples[:, 1].tolist()))
pred = Phi[:3] @ samples.T
print("blr sample predictions", " ".join(f"{p:.5f}" for p in pred.mean(1).tolist()))
evidence = torch.distributions.MultivariateNormal(torch.zeros(24), covariance_matrix=Phi @ Phi.T / prior_precision
                                                  + noise_var * torch.eye(24))
print("blr log evidence", f"{evidence.log_prob(Y1).item():.6f}")
