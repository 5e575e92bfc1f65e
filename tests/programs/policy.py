"""Policy-gradient and variational idioms with torch.distributions, run unchanged under torch and under
`python -m retrograd.run`: a Categorical policy trained by REINFORCE (`log_prob` of sampled actions times
advantages, an `entropy` bonus), a Gaussian policy with a PPO-style ratio of `Normal.log_prob`s and
`kl_divergence` against the old policy, and a small VAE-style objective (`Independent(Normal)` posterior,
`rsample`, `Bernoulli(logits=...)` likelihood, `kl_divergence` to the prior), with Adam. Actions and noise come
from `torch.rand`/`torch.randn_like`, which tests/programs/_draws.py shares between the runs; `WEIGHTS=path`
shares the initial weights."""

import os

import numpy as np
import torch
from torch import nn
from torch.distributions import Bernoulli, Categorical, Independent, Normal, kl_divergence

torch.manual_seed(0)
states = torch.linspace(-1.0, 1.0, 24).reshape(8, 3)
targets = (states.sum(-1, keepdim=True) > 0).float().expand(8, 3)

policy = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 4))
gaussian = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 4))
encoder, decoder = nn.Linear(3, 4), nn.Linear(2, 3)
modules = nn.ModuleDict({"policy": policy, "gaussian": gaussian, "encoder": encoder, "decoder": decoder})
weights = os.environ.get("WEIGHTS")
if weights and os.path.exists(weights):
    modules.load_state_dict({k: torch.from_numpy(v) for k, v in np.load(weights).items()})
elif weights:
    np.savez(weights, **{k: v.numpy() for k, v in modules.state_dict().items()})
optimizer = torch.optim.Adam(modules.parameters(), lr=0.01)
old_policy = None

for step in range(6):
    # REINFORCE with a Categorical policy: actions by inverse-cdf sampling from the policy's probabilities
    dist = Categorical(logits=policy(states))
    u = torch.rand(8, 1)
    actions = (dist.probs.detach().cumsum(-1) < u).sum(-1).clamp(max=3)
    advantages = (actions.float() - 1.5) * states[:, 0]
    reinforce = -(dist.log_prob(actions) * advantages).mean() - 0.01 * dist.entropy().mean()

    # a Gaussian policy: PPO's clipped ratio against the previous step's policy, with a KL penalty
    mean, log_std = gaussian(states).chunk(2, dim=-1)
    new = Normal(mean, log_std.exp())
    old = old_policy or Normal(mean.detach(), log_std.exp().detach())
    taken = old.loc + old.scale * torch.randn_like(old.loc)
    ratio = (new.log_prob(taken) - old.log_prob(taken)).exp()
    ppo = -torch.min(ratio * states[:, :2], ratio.clamp(0.8, 1.2) * states[:, :2]).mean()
    ppo = ppo + 0.1 * kl_divergence(old, new).mean()

    # a VAE-style objective: posterior, reparameterised sample, Bernoulli likelihood, KL to the prior
    loc, pre_scale = encoder(states).chunk(2, dim=-1)
    posterior = Independent(Normal(loc, nn.functional.softplus(pre_scale) + 1e-3), 1)
    prior = Independent(Normal(torch.zeros_like(loc), torch.ones_like(loc)), 1)
    z = posterior.mean + posterior.stddev * torch.randn_like(loc)
    likelihood = Independent(Bernoulli(logits=decoder(z)), 1)
    elbo = (likelihood.log_prob(targets) - kl_divergence(posterior, prior)).mean()

    loss = reinforce + ppo - elbo
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    old_policy = Normal(new.loc.detach(), new.scale.detach())
    print(f"step {step} reinforce {reinforce.item():.6f} ppo {ppo.item():.6f} elbo {elbo.item():.6f} "
          f"entropy {new.entropy().mean().item():.6f}")
