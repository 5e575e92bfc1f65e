"""On-policy and off-policy actor-critic training on tiny deterministic control tasks, in the idioms of CleanRL's
`ppo_continuous_action.py`, `ppo.py` and `sac_continuous_action.py` and of Spinning Up's PPO and SAC, run unchanged
under torch and under `python -m retrograd.run`. The environment is a vectorised 2-d point mass written in torch
(position and velocity, actions are clipped forces, reward `-(pos.pow(2).sum(1)) - 0.01 * act.pow(2).sum(1)`,
episodes truncated after a fixed horizon and reset from NumPy's seeded generator).

Part one, continuous PPO: an Agent with separate actor and critic MLPs built by `layer_init`
(`nn.init.orthogonal_(layer.weight, std)`, `nn.init.constant_(layer.bias, 0.0)`) with Tanh activations, a
state-independent `actor_logstd = nn.Parameter(torch.zeros(1, act_dim))`, `Normal(mean, std)` with `.sample()`,
`.log_prob(a).sum(1)` and `.entropy().sum(1)`; observations and rewards normalised by running mean-std statistics
(Welford's parallel update, the observations in torch, the discounted returns in NumPy); rollout buffers
preallocated by `torch.zeros` and filled by index; GAE computed backwards in a Python loop under
`torch.no_grad()`; minibatches from `np.random.permutation` of a seeded NumPy generator; the ratio
`(newlogprob - oldlogprob).exp()`, `approx_kl = ((ratio - 1) - logratio).mean()`, clip fractions, advantage
normalisation, the clipped surrogate through `torch.max`, the clipped value loss, `nn.utils.clip_grad_norm_`, and
Adam(eps=1e-5) whose learning rate is annealed through `optimizer.param_groups[0]["lr"]`.

Part two, discrete PPO: five actions (push left, right, down, up, or nothing), `Categorical(logits=...)`,
minibatches from `torch.randperm`, and `torch.distributions.kl_divergence` between the rollout's policy and the
updated one, as a penalty in the loss (differentiated) and as the early-stopping test.

Part three, SAC: a squashed-Gaussian actor (`rsample`, the manual correction
`log_prob -= torch.log(1 - a.pow(2) + 1e-6)`, checked against `TransformedDistribution(Normal, [TanhTransform()])`),
twin Q critics and their targets by `copy.deepcopy` kept frozen (`requires_grad = False`), polyak averaging under
`torch.no_grad()` by `p_targ.data.mul_(polyak); p_targ.data.add_((1 - polyak) * p.data)`, a learned temperature
`log_alpha`, and a replay buffer of preallocated tensors sampled by NumPy indices.

Part four, Spinning Up's PPO in float32 (built under `torch.set_default_dtype(torch.float32)`): a NumPy
buffer turned into tensors by `torch.as_tensor(v, dtype=torch.float32)`, `mlp(sizes, activation)` from a layer
list, `log_std = nn.Parameter(torch.as_tensor(-0.5 * np.ones(act_dim, dtype=np.float32)))`, parameter counts by
`np.prod(p.shape)`, `ac.step` returning `.numpy()` arrays, separate policy and value optimisers, the clip fraction
`torch.as_tensor(ratio.gt(1 + c) | ratio.lt(1 - c), dtype=torch.float32).mean()`, early stopping on
`kl > 1.5 * target_kl`, and the final parameter and distribution printed as they are.

Actions come from torch's generator, so tests/programs/_draws.py shares them between the runs; `WEIGHTS=path`
shares the initial weights. Prints losses, returns and approx_kl a few times per part."""

import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights
from torch.distributions import Categorical, Normal, TanhTransform, TransformedDistribution, kl_divergence

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)  # many small updates feed back into the rollouts: keep rounding small
rng = np.random.default_rng(0)

NUM_ENVS, NUM_STEPS, HORIZON, OBS_DIM, ACT_DIM = 4, 16, 12, 4, 2
DT, MAX_FORCE = 0.2, 1.0
DISCRETE_FORCES = torch.tensor([[-1.0, 0.0], [1.0, 0.0], [0.0, -1.0], [0.0, 1.0], [0.0, 0.0]])


class PointMass:
    """NUM_ENVS point masses in the plane pushed towards the origin; auto-resets after HORIZON steps."""

    def __init__(self, num_envs):
        self.num_envs = num_envs
        self.state = torch.zeros(num_envs, OBS_DIM)
        self.t = np.zeros(num_envs, dtype=np.int64)

    def _reset_rows(self, rows):
        fresh = rng.uniform(-1.0, 1.0, (len(rows), OBS_DIM)) * np.array([1.0, 1.0, 0.2, 0.2])
        self.state[torch.from_numpy(rows)] = torch.from_numpy(fresh)
        self.t[rows] = 0

    def reset(self):
        self._reset_rows(np.arange(self.num_envs))
        return self.state.clone()

    def step(self, action):
        force = torch.clamp(action, -MAX_FORCE, MAX_FORCE)
        pos, vel = self.state[:, :2], self.state[:, 2:]
        vel = 0.9 * vel + DT * force
        pos = pos + DT * vel
        self.state = torch.cat([pos, vel], dim=1)
        reward = -(pos.pow(2).sum(1)) - 0.01 * force.pow(2).sum(1)
        self.t += 1
        done = self.t >= HORIZON
        final_obs = self.state.clone()
        if done.any():
            self._reset_rows(np.flatnonzero(done))
        return self.state.clone(), reward, torch.from_numpy(done).float(), final_obs


class RunningMeanStd:
    """Running mean and variance by the parallel Welford update (Chan et al.), as gym's wrappers keep them."""

    def __init__(self, shape=(), epsilon=1e-4):
        self.mean = torch.zeros(shape)
        self.var = torch.ones(shape)
        self.count = epsilon

    def update(self, x):
        batch_mean, batch_var, batch_count = x.mean(0), x.var(0, unbiased=False), x.shape[0]
        delta = batch_mean - self.mean
        total = self.count + batch_count
        self.mean = self.mean + delta * batch_count / total
        m2 = self.var * self.count + batch_var * batch_count + delta.pow(2) * self.count * batch_count / total
        self.var = m2 / total
        self.count = total

    def normalize(self, x):
        return torch.clamp((x - self.mean) / torch.sqrt(self.var + 1e-8), -10.0, 10.0)


class ReturnScaler:
    """Scales rewards by the running std of the discounted return, kept in NumPy (gym's NormalizeReward)."""

    def __init__(self, gamma):
        self.gamma, self.returns = gamma, np.zeros(NUM_ENVS)
        self.mean, self.var, self.count = 0.0, 1.0, 1e-4

    def __call__(self, reward, done):
        self.returns = self.returns * self.gamma + reward.numpy()
        batch_mean, batch_var, n = self.returns.mean(), self.returns.var(), len(self.returns)
        delta, total = batch_mean - self.mean, self.count + n
        self.mean += delta * n / total
        self.var = (self.var * self.count + batch_var * n + delta**2 * self.count * n / total) / total
        self.count = total
        self.returns = self.returns * (1 - done.numpy())
        return reward / np.sqrt(self.var + 1e-8)


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, discrete=False):
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(OBS_DIM, 32)), nn.Tanh(),
            layer_init(nn.Linear(32, 32)), nn.Tanh(),
            layer_init(nn.Linear(32, 1), std=1.0),
        )
        out = len(DISCRETE_FORCES) if discrete else ACT_DIM
        self.actor_mean = nn.Sequential(
            layer_init(nn.Linear(OBS_DIM, 32)), nn.Tanh(),
            layer_init(nn.Linear(32, 32)), nn.Tanh(),
            layer_init(nn.Linear(32, out), std=0.01),
        )
        self.discrete = discrete
        if not discrete:
            self.actor_logstd = nn.Parameter(torch.zeros(1, ACT_DIM))

    def get_value(self, x):
        return self.critic(x)

    def distribution(self, x):
        if self.discrete:
            return Categorical(logits=self.actor_mean(x))
        action_mean = self.actor_mean(x)
        action_logstd = self.actor_logstd.expand_as(action_mean)
        return Normal(action_mean, torch.exp(action_logstd))

    def get_action_and_value(self, x, action=None):
        probs = self.distribution(x)
        if action is None:
            action = probs.sample()
        if self.discrete:
            return action, probs.log_prob(action), probs.entropy(), self.critic(x)
        return action, probs.log_prob(action).sum(1), probs.entropy().sum(1), self.critic(x)


def train_ppo(agent, name, num_updates=4, update_epochs=3, num_minibatches=4, gamma=0.99, gae_lambda=0.95,
              clip_coef=0.2, ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5, learning_rate=3e-3, target_kl=0.05,
              kl_coef=0.0):
    env = PointMass(NUM_ENVS)
    obs_rms, reward_scaler = RunningMeanStd((OBS_DIM,)), ReturnScaler(gamma)
    optimizer = torch.optim.Adam(agent.parameters(), lr=learning_rate, eps=1e-5)
    batch_size = NUM_ENVS * NUM_STEPS
    minibatch_size = batch_size // num_minibatches
    perm_rng = np.random.default_rng(1)

    act_shape = () if agent.discrete else (ACT_DIM,)
    obs = torch.zeros((NUM_STEPS, NUM_ENVS, OBS_DIM))
    actions = torch.zeros((NUM_STEPS, NUM_ENVS) + act_shape, dtype=torch.long if agent.discrete else None)
    logprobs = torch.zeros((NUM_STEPS, NUM_ENVS))
    rewards = torch.zeros((NUM_STEPS, NUM_ENVS))
    dones = torch.zeros((NUM_STEPS, NUM_ENVS))
    values = torch.zeros((NUM_STEPS, NUM_ENVS))

    raw_obs = env.reset()
    obs_rms.update(raw_obs)
    next_obs = obs_rms.normalize(raw_obs)
    next_done = torch.zeros(NUM_ENVS)
    for update in range(1, num_updates + 1):
        frac = 1.0 - (update - 1.0) / num_updates
        optimizer.param_groups[0]["lr"] = frac * learning_rate
        episode_reward = 0.0
        for step in range(0, NUM_STEPS):
            obs[step] = next_obs
            dones[step] = next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
                values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob
            force = DISCRETE_FORCES[action] if agent.discrete else action
            raw_obs, reward, next_done, _ = env.step(force)
            episode_reward += reward.sum().item()
            rewards[step] = reward_scaler(reward, next_done).view(-1)
            obs_rms.update(raw_obs)
            next_obs = obs_rms.normalize(raw_obs)

        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = 0
            for t in reversed(range(NUM_STEPS)):
                if t == NUM_STEPS - 1:
                    nextnonterminal = 1.0 - next_done
                    nextvalues = next_value
                else:
                    nextnonterminal = 1.0 - dones[t + 1]
                    nextvalues = values[t + 1]
                delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam
            returns = advantages + values

        b_obs = obs.reshape((-1, OBS_DIM))
        b_logprobs = logprobs.reshape(-1)
        b_actions = actions.reshape((-1,) + act_shape)
        b_advantages = advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        b_values = values.reshape(-1)

        clipfracs = []
        if agent.discrete:
            with torch.no_grad():
                old_dist = agent.distribution(b_obs)
        for epoch in range(update_epochs):
            if agent.discrete:
                b_inds = torch.randperm(batch_size)
            else:
                b_inds = perm_rng.permutation(batch_size)
            for start in range(0, batch_size, minibatch_size):
                mb_inds = b_inds[start:start + minibatch_size]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb_inds], b_actions[mb_inds])
                logratio = newlogprob - b_logprobs[mb_inds]
                ratio = logratio.exp()

                with torch.no_grad():
                    old_approx_kl = (-logratio).mean()
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs += [((ratio - 1.0).abs() > clip_coef).float().mean().item()]

                mb_advantages = b_advantages[mb_inds]
                mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)

                pg_loss1 = -mb_advantages * ratio
                pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()

                newvalue = newvalue.view(-1)
                v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
                v_clipped = b_values[mb_inds] + torch.clamp(newvalue - b_values[mb_inds], -clip_coef, clip_coef)
                v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
                v_loss_max = torch.max(v_loss_unclipped, v_loss_clipped)
                v_loss = 0.5 * v_loss_max.mean()

                entropy_loss = entropy.mean()
                loss = pg_loss - ent_coef * entropy_loss + v_loss * vf_coef
                if kl_coef:  # the PPO paper's adaptive-KL variant, a fixed coefficient here
                    old_mb = Categorical(logits=old_dist.logits[mb_inds])
                    kl_penalty = kl_divergence(old_mb, agent.distribution(b_obs[mb_inds])).mean()
                    loss = loss + kl_coef * kl_penalty

                optimizer.zero_grad()
                loss.backward()
                grad_norm = nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm)
                optimizer.step()

            if agent.discrete:
                with torch.no_grad():
                    kl = kl_divergence(old_dist, agent.distribution(b_obs)).mean()
                if kl > target_kl:
                    print(f"{name} update {update} early stop at epoch {epoch} kl {kl.item():.6f}")
                    break

        y_pred, y_true = b_values.numpy(), b_returns.numpy()
        var_y = np.var(y_true)
        explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y
        extra = (f"kl {kl.item():.6f}" if agent.discrete
                 else f"std {agent.actor_logstd.exp().mean().item():.6f}")
        print(f"{name} update {update} lr {optimizer.param_groups[0]['lr']:.6f} return {episode_reward:.6f} "
              f"pg_loss {pg_loss.item():.6f} v_loss {v_loss.item():.6f} entropy {entropy_loss.item():.6f}")
        print(f"  old_approx_kl {old_approx_kl.item():.6f} approx_kl {approx_kl.item():.6f} "
              f"clipfrac {np.mean(clipfracs):.6f} explained_var {explained_var:.6f} "
              f"grad_norm {grad_norm.item():.6f} {extra}")
    print(f"{name} obs mean {obs_rms.mean.tolist()[0]:.6f} var {obs_rms.var.mean().item():.6f} "
          f"return var {reward_scaler.var:.6f}")


def discount_cumsum(x, discount):
    """[x0 + d x1 + d^2 x2, x1 + d x2, x2] (Spinning Up does it with scipy.signal.lfilter)."""
    out = np.zeros_like(x)
    running = 0.0
    for i in reversed(range(len(x))):
        running = out[i] = x[i] + discount * running
    return out


def mlp(sizes, activation, output_activation=nn.Identity):
    layers = []
    for j in range(len(sizes) - 1):
        act = activation if j < len(sizes) - 2 else output_activation
        layers += [nn.Linear(sizes[j], sizes[j + 1]), act()]
    return nn.Sequential(*layers)


class MLPGaussianActor(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden_sizes, activation):
        super().__init__()
        log_std = -0.5 * np.ones(act_dim, dtype=np.float32)
        self.log_std = torch.nn.Parameter(torch.as_tensor(log_std))
        self.mu_net = mlp([obs_dim] + list(hidden_sizes) + [act_dim], activation)

    def _distribution(self, obs):
        mu = self.mu_net(obs)
        std = torch.exp(self.log_std)
        return Normal(mu, std)

    def forward(self, obs, act=None):
        pi = self._distribution(obs)
        logp_a = None
        if act is not None:
            logp_a = pi.log_prob(act).sum(axis=-1)
        return pi, logp_a


class MLPActorCritic(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden_sizes=(32, 32), activation=nn.Tanh):
        super().__init__()
        self.pi = MLPGaussianActor(obs_dim, act_dim, hidden_sizes, activation)
        self.v = mlp([obs_dim] + list(hidden_sizes) + [1], activation)

    def step(self, obs):
        with torch.no_grad():
            pi = self.pi._distribution(obs)
            a = pi.sample()
            logp_a = pi.log_prob(a).sum(axis=-1)
            v = torch.squeeze(self.v(obs), -1)
        return a.numpy(), v.numpy(), logp_a.numpy()


def train_spinup_ppo(ac, epochs=3, steps_per_epoch=24, gamma=0.99, lam=0.97, clip_ratio=0.2, train_pi_iters=8,
                     train_v_iters=8, target_kl=0.01):
    """Spinning Up's PPO in float32: a NumPy buffer, `torch.as_tensor`, separate pi and v optimisers, early
    stopping on `kl > 1.5 * target_kl`."""
    env = PointMass(1)
    var_counts = tuple(sum([np.prod(p.shape) for p in module.parameters()]) for module in [ac.pi, ac.v])
    print(f"spinup number of parameters: pi {var_counts[0]}, v {var_counts[1]}")
    pi_optimizer = torch.optim.Adam(ac.pi.parameters(), lr=3e-3)
    vf_optimizer = torch.optim.Adam(ac.v.parameters(), lr=1e-2)
    obs_buf = np.zeros((steps_per_epoch, OBS_DIM), dtype=np.float32)
    act_buf = np.zeros((steps_per_epoch, ACT_DIM), dtype=np.float32)
    rew_buf, val_buf, logp_buf = (np.zeros(steps_per_epoch, dtype=np.float32) for _ in range(3))
    o = env.reset()[0].numpy().astype(np.float32)
    for epoch in range(epochs):
        adv_buf, ret_buf, path_start, ep_rets, ep_ret = np.zeros_like(rew_buf), np.zeros_like(rew_buf), 0, [], 0.0
        for t in range(steps_per_epoch):
            a, v, logp = ac.step(torch.as_tensor(o, dtype=torch.float32))
            next_o, r, d, _ = env.step(torch.as_tensor(a).unsqueeze(0))
            obs_buf[t], act_buf[t], rew_buf[t], val_buf[t], logp_buf[t] = o, a, r.item(), v, logp
            ep_ret += r.item()
            o = next_o[0].numpy().astype(np.float32)
            if d.item() or t == steps_per_epoch - 1:
                last_val = 0.0 if d.item() else ac.step(torch.as_tensor(o, dtype=torch.float32))[1]
                path = slice(path_start, t + 1)
                rews, vals = np.append(rew_buf[path], last_val), np.append(val_buf[path], last_val)
                deltas = rews[:-1] + gamma * vals[1:] - vals[:-1]
                adv_buf[path] = discount_cumsum(deltas, gamma * lam)
                ret_buf[path] = discount_cumsum(rews, gamma)[:-1]
                path_start = t + 1
                if d.item():
                    ep_rets.append(ep_ret)
                    ep_ret = 0.0
        adv_buf = (adv_buf - adv_buf.mean()) / adv_buf.std()
        data = dict(obs=obs_buf, act=act_buf, ret=ret_buf, adv=adv_buf, logp=logp_buf)
        data = {k: torch.as_tensor(v, dtype=torch.float32) for k, v in data.items()}

        def compute_loss_pi(data):
            obs, act, adv, logp_old = data["obs"], data["act"], data["adv"], data["logp"]
            pi, logp = ac.pi(obs, act)
            ratio = torch.exp(logp - logp_old)
            clip_adv = torch.clamp(ratio, 1 - clip_ratio, 1 + clip_ratio) * adv
            loss_pi = -(torch.min(ratio * adv, clip_adv)).mean()
            approx_kl = (logp_old - logp).mean().item()
            ent = pi.entropy().mean().item()
            clipped = ratio.gt(1 + clip_ratio) | ratio.lt(1 - clip_ratio)
            clipfrac = torch.as_tensor(clipped, dtype=torch.float32).mean().item()
            return loss_pi, dict(kl=approx_kl, ent=ent, cf=clipfrac)

        def compute_loss_v(data):
            return ((torch.squeeze(ac.v(data["obs"]), -1) - data["ret"]) ** 2).mean()

        pi_l_old, pi_info_old = compute_loss_pi(data)
        pi_l_old = pi_l_old.item()
        v_l_old = compute_loss_v(data).item()
        for i in range(train_pi_iters):
            pi_optimizer.zero_grad()
            loss_pi, pi_info = compute_loss_pi(data)
            if pi_info["kl"] > 1.5 * target_kl:
                print(f"spinup early stopping at step {i} due to reaching max kl")
                break
            loss_pi.backward()
            pi_optimizer.step()
        for i in range(train_v_iters):
            vf_optimizer.zero_grad()
            loss_v = compute_loss_v(data)
            loss_v.backward()
            vf_optimizer.step()
        print(f"spinup epoch {epoch} LossV {v_l_old:.6f} KL {pi_info['kl']:.6f} "
              f"Entropy {pi_info_old['ent']:.6f} ClipFrac {pi_info['cf']:.6f} "
              f"DeltaLossPi {loss_pi.item() - pi_l_old:.6f} EpRet {np.mean(ep_rets) if ep_rets else 0.0:.6f}")
    print("spinup log_std", ac.pi.log_std, ac.pi._distribution(data["obs"][:2]))


class SquashedGaussianActor(nn.Module):
    LOG_STD_MIN, LOG_STD_MAX = -5, 2

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(OBS_DIM, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
        self.mu_layer = nn.Linear(32, ACT_DIM)
        self.log_std_layer = nn.Linear(32, ACT_DIM)

    def forward(self, obs, deterministic=False, with_logprob=True):
        net_out = self.net(obs)
        mu = self.mu_layer(net_out)
        log_std = torch.tanh(self.log_std_layer(net_out))
        log_std = self.LOG_STD_MIN + 0.5 * (self.LOG_STD_MAX - self.LOG_STD_MIN) * (log_std + 1)
        std = torch.exp(log_std)
        pi_distribution = Normal(mu, std)
        pi_action = mu if deterministic else pi_distribution.rsample()
        logp_pi = None
        if with_logprob:
            # Spinning Up's numerically stable form of log(1 - tanh(u)^2), and CleanRL's plain one
            logp_pi = pi_distribution.log_prob(pi_action).sum(axis=-1)
            logp_pi -= (2 * (np.log(2) - pi_action - F.softplus(-2 * pi_action))).sum(axis=1)
        action = torch.tanh(pi_action)
        return action, logp_pi, pi_action, pi_distribution


class QFunction(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Sequential(nn.Linear(OBS_DIM + ACT_DIM, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                               nn.Linear(32, 1))

    def forward(self, obs, act):
        q = self.q(torch.cat([obs, act], dim=-1))
        return torch.squeeze(q, -1)


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.pi = SquashedGaussianActor()
        self.q1 = QFunction()
        self.q2 = QFunction()


def train_sac(ac, steps=48, batch_size=16, gamma=0.99, polyak=0.9, lr=3e-3, start_steps=16):
    env = PointMass(NUM_ENVS)
    ac_targ = copy.deepcopy(ac)
    for p in ac_targ.parameters():
        p.requires_grad = False
    q_params = list(ac.q1.parameters()) + list(ac.q2.parameters())
    pi_optimizer = torch.optim.Adam(ac.pi.parameters(), lr=lr)
    q_optimizer = torch.optim.Adam(q_params, lr=lr)
    log_alpha = torch.zeros(1, requires_grad=True)
    a_optimizer = torch.optim.Adam([log_alpha], lr=lr)
    target_entropy = -float(ACT_DIM)

    size = steps * NUM_ENVS
    obs_buf = torch.zeros((size, OBS_DIM))
    obs2_buf = torch.zeros((size, OBS_DIM))
    act_buf = torch.zeros((size, ACT_DIM))
    rew_buf = torch.zeros(size)
    done_buf = torch.zeros(size)
    ptr = 0

    o = env.reset()
    for t in range(steps):
        if t < start_steps:
            a = torch.from_numpy(rng.uniform(-1.0, 1.0, (NUM_ENVS, ACT_DIM)))
        else:
            with torch.no_grad():
                a, _, _, _ = ac.pi(o)
        o2, r, d, final_o = env.step(a)
        rows = slice(ptr, ptr + NUM_ENVS)
        obs_buf[rows], obs2_buf[rows], act_buf[rows], rew_buf[rows] = o, final_o, a, r
        done_buf[rows] = 0.0  # truncation, not termination: bootstrap through the horizon
        ptr += NUM_ENVS
        o = o2
        if t < start_steps:
            continue

        idxs = rng.integers(0, ptr, size=batch_size)
        o_b, a_b, r_b, o2_b, d_b = obs_buf[idxs], act_buf[idxs], rew_buf[idxs], obs2_buf[idxs], done_buf[idxs]
        alpha = log_alpha.exp().detach()

        q1 = ac.q1(o_b, a_b)
        q2 = ac.q2(o_b, a_b)
        with torch.no_grad():
            a2, logp_a2, _, _ = ac.pi(o2_b)
            q_pi_targ = torch.min(ac_targ.q1(o2_b, a2), ac_targ.q2(o2_b, a2))
            backup = r_b + gamma * (1 - d_b) * (q_pi_targ - alpha * logp_a2)
        loss_q = ((q1 - backup) ** 2).mean() + ((q2 - backup) ** 2).mean()
        q_optimizer.zero_grad()
        loss_q.backward()
        q_optimizer.step()

        for p in q_params:
            p.requires_grad = False
        pi, logp_pi, pre_tanh, dist = ac.pi(o_b)
        q_pi = torch.min(ac.q1(o_b, pi), ac.q2(o_b, pi))
        loss_pi = (alpha * logp_pi - q_pi).mean()
        pi_optimizer.zero_grad()
        loss_pi.backward()
        pi_optimizer.step()
        for p in q_params:
            p.requires_grad = True

        alpha_loss = (-log_alpha.exp() * (logp_pi.detach() + target_entropy)).mean()
        a_optimizer.zero_grad()
        alpha_loss.backward()
        a_optimizer.step()

        with torch.no_grad():
            for p, p_targ in zip(ac.parameters(), ac_targ.parameters()):
                p_targ.data.mul_(polyak)
                p_targ.data.add_((1 - polyak) * p.data)

        if t % 8 == 0 or t == steps - 1:
            with torch.no_grad():
                # CleanRL's plain correction and the TanhTransform distribution give the same log-probabilities
                log_prob = dist.log_prob(pre_tanh)
                log_prob -= torch.log(1 - pi.pow(2) + 1e-6)
                squashed = TransformedDistribution(dist, [TanhTransform(cache_size=1)])
                exact = squashed.log_prob(torch.tanh(pre_tanh)).sum(1)
                gap = (log_prob.sum(1) - logp_pi).abs().max()
                targ_gap = sum((p - p_targ).abs().sum() for p, p_targ in zip(ac.parameters(),
                                                                              ac_targ.parameters()))
            print(f"sac step {t} loss_q {loss_q.item():.6f} loss_pi {loss_pi.item():.6f} "
                  f"alpha {log_alpha.exp().item():.6f} q1 {q1.mean().item():.6f} reward {r.mean().item():.6f}")
            print(f"  logp {logp_pi.mean().item():.6f} transformed {exact.mean().item():.6f} "
                  f"manual_gap {gap.item():.6f} target_gap {targ_gap.item():.6f}")


continuous_agent, discrete_agent, actor_critic = Agent(), Agent(discrete=True), ActorCritic()
torch.set_default_dtype(torch.float32)
spinup_ac = MLPActorCritic(OBS_DIM, ACT_DIM)
torch.set_default_dtype(torch.float64)
share_initial_weights({"ppo": continuous_agent, "ppo_discrete": discrete_agent, "sac": actor_critic,
                       "spinup": spinup_ac})
train_ppo(continuous_agent, "ppo")
train_ppo(discrete_agent, "ppo_discrete", ent_coef=0.01, kl_coef=0.5)
train_sac(actor_critic)
train_spinup_ppo(spinup_ac)
