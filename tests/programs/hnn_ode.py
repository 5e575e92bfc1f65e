"""Hamiltonian and neural-ODE models of a pendulum, in the idioms of greydanus' Hamiltonian Neural Networks,
rtqichen's torchdiffeq-style neural ODE examples written without the library, and physics-informed code, run
unchanged under torch and under `python -m retrograd.run`: pendulum trajectories (H = 3(1 - cos q) + p^2 / 2)
simulated by a NumPy RK4 from initial states drawn by NumPy's seeded generator, with observed derivatives plus
noise, everything in float64 (`dtype=torch.float64`, `.double()`). An MLP `H(q, p)` whose dynamics are the
symplectic gradient: `torch.autograd.grad(H.sum(), x, create_graph=True)[0]` under `torch.enable_grad()` and
`torch.cat([dH[:, 1:], -dH[:, :1]], dim=1)`, trained on the derivatives with `F.mse_loss` and Adam (a double
backward), beside a baseline MLP predicting the derivatives directly. A hand-written fixed-step RK4 integrator
(`k1 = f(t, y)` ... `y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)`) over `torch.linspace` times returning
`torch.stack` of the states, driving a neural-ODE `nn.Module` with `forward(t, y)`; both models fine-tuned by
trajectory matching, backpropagating through the whole solve. `torch.no_grad()` rollouts compare the energy drift
of the two models against the true energy, and `torch.autograd.functional.jacobian` of the learned vector fields at
a point gives their trace (zero for a Hamiltonian field), checked against `torch.autograd.functional.hessian` of the
learned H times the symplectic matrix. Prints losses and energies step by step; `WEIGHTS=path`
shares the initial weights."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights

torch.manual_seed(0)
DTYPE = torch.float64
G = 3.0
HIDDEN, STEPS, LR = 32, 120, 3e-3


def true_field(x):
    """Pendulum vector field (dq/dt, dp/dt) for NumPy states of shape (..., 2)."""
    q, p = x[..., 0], x[..., 1]
    return np.stack([p, -G * np.sin(q)], axis=-1)


def true_energy(x):
    return G * (1 - np.cos(x[..., 0])) + 0.5 * x[..., 1] ** 2


def simulate(x0, dt, n):
    """NumPy RK4 trajectories from states x0 (B, 2): returns (n + 1, B, 2)."""
    xs = [x0]
    for _ in range(n):
        x = xs[-1]
        k1 = true_field(x)
        k2 = true_field(x + dt / 2 * k1)
        k3 = true_field(x + dt / 2 * k2)
        k4 = true_field(x + dt * k3)
        xs.append(x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4))
    return np.stack(xs)


rng = np.random.default_rng(0)
radius = rng.uniform(1.0, 2.5, 16)
angle = rng.uniform(0, 2 * np.pi, 16)
starts = np.stack([radius * np.cos(angle) * 0.6, radius * np.sin(angle)], axis=1)
trajectories = simulate(starts, 0.1, 20)  # (21, 16, 2)
states = trajectories.reshape(-1, 2)
derivs = true_field(states) + rng.normal(0, 0.05, states.shape)
x_train = torch.tensor(states, dtype=DTYPE)
dx_train = torch.tensor(derivs, dtype=DTYPE)
print(f"data {tuple(x_train.shape)} mean energy {true_energy(states).mean():.6f}")


class MLP(nn.Module):
    def __init__(self, out_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, HIDDEN), nn.Tanh(),
                                 nn.Linear(HIDDEN, out_dim))
        for m in self.net:
            if isinstance(m, nn.Linear):
                nn.init.orthogonal_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        return self.net(x)


class HNN(nn.Module):
    """Learns a scalar H(q, p); its dynamics are the symplectic gradient of H."""

    def __init__(self):
        super().__init__()
        self.H = MLP(1)

    def forward(self, x):
        return self.H(x)

    def time_derivative(self, x):
        with torch.enable_grad():
            if not x.requires_grad:
                x = x.detach().requires_grad_(True)
            H = self.forward(x)
            dH = torch.autograd.grad(H.sum(), x, create_graph=True)[0]
        return torch.cat([dH[:, 1:], -dH[:, :1]], dim=1)


class Baseline(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = MLP(2)

    def time_derivative(self, x):
        return self.mlp(x)


class ODEFunc(nn.Module):
    """The neural-ODE right-hand side f(t, y) around a model's time derivative."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.nfe = 0

    def forward(self, t, y):
        self.nfe += 1
        return self.model.time_derivative(y)


def rk4_odeint(func, y0, t):
    """Fixed-step RK4 over the times t; returns the states stacked to (len(t), *y0.shape)."""
    ys = [y0]
    y = y0
    for t0, t1 in zip(t[:-1], t[1:]):
        dt = t1 - t0
        k1 = func(t0, y)
        k2 = func(t0 + dt / 2, y + dt / 2 * k1)
        k3 = func(t0 + dt / 2, y + dt / 2 * k2)
        k4 = func(t1, y + dt * k3)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        ys.append(y)
    return torch.stack(ys)


hnn = HNN().double()
baseline = Baseline().double()
share_initial_weights({"hnn": hnn, "baseline": baseline})
print("parameters", sum(p.numel() for p in hnn.parameters()), sum(p.numel() for p in baseline.parameters()))

# 1. derivative matching (the HNN's loss backpropagates through a gradient: a double backward)
models = {"hnn": hnn, "baseline": baseline}
optimizers = {name: torch.optim.Adam(m.parameters(), lr=LR) for name, m in models.items()}
for step in range(STEPS + 1):
    losses = []
    for name, model in models.items():
        optimizers[name].zero_grad()
        loss = F.mse_loss(model.time_derivative(x_train), dx_train)
        loss.backward()
        optimizers[name].step()
        losses.append(loss.item())
    if step % 20 == 0:
        print(f"step {step:3d} hnn loss {losses[0]:.6f} baseline loss {losses[1]:.6f}")

# 2. trajectory matching through the whole RK4 solve
t = torch.linspace(0, 1.0, 11, dtype=DTYPE)
y0 = torch.tensor(trajectories[0], dtype=DTYPE)
target = torch.tensor(trajectories[:11], dtype=DTYPE)
for name, model in models.items():
    func = ODEFunc(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(6):
        optimizer.zero_grad()
        pred = rk4_odeint(func, y0, t)
        loss = F.mse_loss(pred, target)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        optimizer.step()
        if step % 2 == 0:
            print(f"{name} ode step {step} loss {loss.item():.6f} grad norm {grad_norm.item():.6f}")
    print(f"{name} function evaluations {func.nfe} pred shape {tuple(pred.shape)}")

# 3. long rollouts without a graph: energy drift
x0 = torch.tensor([[1.0, 0.5], [-0.5, 1.5]], dtype=DTYPE)
t_long = torch.linspace(0, 8.0, 81, dtype=DTYPE)
truth = simulate(x0.numpy(), 0.1, 80)
e0 = true_energy(truth[0])
for name, model in models.items():
    with torch.no_grad():
        path = rk4_odeint(ODEFunc(model), x0, t_long).detach()
    energy = true_energy(path.numpy())
    for i in (0, 20, 40, 80):
        print(f"{name} t={t_long[i].item():.6f} energy {energy[i, 0]:.6f} {energy[i, 1]:.6f}")
    drift = np.abs(energy[-1] - e0).mean()
    error = ((path - torch.tensor(truth)) ** 2).mean().item()
    print(f"{name} energy drift {drift:.6f} trajectory mse {error:.6f} requires_grad {path.requires_grad}")

# 4. the learned vector field's Jacobian at a point
point = torch.tensor([0.3, -0.7], dtype=DTYPE)
for name, model in models.items():
    J = torch.autograd.functional.jacobian(lambda x: model.time_derivative(x.unsqueeze(0)).squeeze(0), point)
    print(f"{name} jacobian {J.shape} " + " ".join(f"{v:.6f}" for v in J.flatten().tolist())
          + f" trace {torch.trace(J).item():.6f}")
# the HNN's Jacobian is the symplectic matrix times the Hessian of H: [[H_pq, H_pp], [-H_qq, -H_qp]]
hessian = torch.autograd.functional.hessian(lambda x: hnn(x.unsqueeze(0)).sum(), point)
symplectic = torch.tensor([[0.0, 1.0], [-1.0, 0.0]], dtype=DTYPE)
J = torch.autograd.functional.jacobian(lambda x: hnn.time_derivative(x.unsqueeze(0)).squeeze(0), point)
print("hessian " + " ".join(f"{v:.6f}" for v in hessian.flatten().tolist())
      + f" matches symplectic jacobian {torch.allclose(symplectic @ hessian, J)}")
print(f"learned H at point {hnn(point.unsqueeze(0)).item():.6f} true {true_energy(point.numpy()):.6f}")
