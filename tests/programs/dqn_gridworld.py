"""Deep Q-learning on a 5x5 gridworld, in the idioms of the PyTorch DQN tutorial and common DQN repositories:
a `namedtuple('Transition', ...)` replay memory on `collections.deque(maxlen=...)` sampled with Python's
`random.sample`, epsilon-greedy action choice with an exponentially decaying epsilon (`math.exp`), greedy actions
by `policy_net(state).max(1).indices.view(1, 1)` under `torch.no_grad()` and random ones by
`torch.tensor([[random.randrange(n)]], dtype=torch.long)`, batches by `Transition(*zip(*transitions))` and
`torch.cat`, the non-final mask `torch.tensor(tuple(map(lambda s: s is not None, ...)), dtype=torch.bool)`,
`policy_net(state_batch).gather(1, action_batch)`, a masked assignment of the target net's `.max(1).values`,
`nn.SmoothL1Loss`, `optim.AdamW(..., amsgrad=True)`, `clip_grad_value_`, the soft target update through
`state_dict()` dicts and `load_state_dict`; a Double-DQN agent (argmax from the policy net, value from the
target net by `gather`) whose target net is a `copy.deepcopy`; a dueling agent in the style of the common
`dqn_agent.py` repositories (`np.vstack` batches through `torch.from_numpy`, `.max(1)[0].unsqueeze(1)`,
`(1 - dones)`, `F.mse_loss`, `optim.RMSprop`, `clip_grad_norm_`, a `.data.copy_` soft update, `np.argmax` of
`.cpu().data.numpy()`) whose full checkpoint with the optimizer's state resumes into a fresh agent; a C51 agent
as Rainbow implementations write it (log_softmax over atoms, the floor/ceil projection with boolean-product masks
and `index_add_` into `m.view(-1)`, a hard target update, batches of NumPy observations through
`torch.FloatTensor(list)` and `torch.tensor(list, dtype=...)`, with torch's warning that this is slow, and the
dtype `torch.tensor(list)` infers from them); the tutorial's `unfold` moving average; greedy evaluations, and a
`torch.save` / `torch.load(weights_only=True)` round trip of the policy into a fresh net.
The environment is plain Python and deterministic, exploration and replay draw from Python's seeded `random`;
torch's generator only initialises the nets (`WEIGHTS=path` shares them)."""

# ruff: noqa: UP004, UP008, UP032 - the tutorial's and the repositories' own spelling
import copy
import math
import os
import random
import tempfile
from collections import deque, namedtuple
from itertools import count

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from _weights import share_initial_weights

torch.manual_seed(0)
random.seed(0)


class GridWorld:
    """A 5x5 grid: start top-left, +1 at the goal bottom-right, -1 in the pit, -0.04 a step, 20 steps at most."""

    size, goal, pit, max_steps = 5, (4, 4), (2, 2), 20
    moves = ((-1, 0), (1, 0), (0, -1), (0, 1))  # up, down, left, right

    def reset(self):
        self.position, self.steps = (0, 0), 0
        return self.observation(), {}

    def observation(self):
        one_hot = [0.0] * (self.size * self.size)
        one_hot[self.position[0] * self.size + self.position[1]] = 1.0
        return one_hot

    def step(self, action):
        dr, dc = self.moves[action]
        row = min(max(self.position[0] + dr, 0), self.size - 1)
        col = min(max(self.position[1] + dc, 0), self.size - 1)
        self.position, self.steps = (row, col), self.steps + 1
        if self.position == self.goal:
            return self.observation(), 1.0, True, False, {}
        if self.position == self.pit:
            return self.observation(), -1.0, True, False, {}
        return self.observation(), -0.04, False, self.steps >= self.max_steps, {}


Transition = namedtuple("Transition", ("state", "action", "next_state", "reward"))


class ReplayMemory(object):
    def __init__(self, capacity):
        self.memory = deque([], maxlen=capacity)

    def push(self, *args):
        """Save a transition"""
        self.memory.append(Transition(*args))

    def sample(self, batch_size):
        return random.sample(self.memory, batch_size)

    def __len__(self):
        return len(self.memory)


class DQN(nn.Module):
    def __init__(self, n_observations, n_actions):
        super(DQN, self).__init__()
        self.layer1 = nn.Linear(n_observations, 32)
        self.layer2 = nn.Linear(32, 32)
        self.layer3 = nn.Linear(32, n_actions)

    def forward(self, x):
        x = F.relu(self.layer1(x))
        x = F.relu(self.layer2(x))
        return self.layer3(x)


BATCH_SIZE = 16
GAMMA = 0.9
EPS_START = 0.9
EPS_END = 0.05
EPS_DECAY = 150
TAU = 0.05
LR = 3e-3
NUM_EPISODES = 24

env = GridWorld()
n_actions = len(GridWorld.moves)
n_observations = len(env.reset()[0])


def greedy_actions(net):
    """The greedy action in every cell of the grid."""
    with torch.no_grad():
        return net(torch.eye(n_observations)).max(1).indices


def train(name, policy_net, target_net, double):
    optimizer = optim.AdamW(policy_net.parameters(), lr=LR, amsgrad=True)
    memory = ReplayMemory(400)
    steps_done = 0

    def select_action(state):
        nonlocal steps_done
        sample = random.random()
        eps_threshold = EPS_END + (EPS_START - EPS_END) * math.exp(-1. * steps_done / EPS_DECAY)
        steps_done += 1
        if sample > eps_threshold:
            with torch.no_grad():
                # t.max(1) will return the largest column value of each row; .indices is the action
                return policy_net(state).max(1).indices.view(1, 1)
        else:
            return torch.tensor([[random.randrange(n_actions)]], dtype=torch.long)

    def optimize_model():
        if len(memory) < BATCH_SIZE:
            return None
        transitions = memory.sample(BATCH_SIZE)
        # Transpose the batch: a Transition of batch-arrays from a batch-array of Transitions
        batch = Transition(*zip(*transitions))
        non_final_mask = torch.tensor(tuple(map(lambda s: s is not None, batch.next_state)), dtype=torch.bool)
        non_final_next_states = torch.cat([s for s in batch.next_state if s is not None])
        state_batch = torch.cat(batch.state)
        action_batch = torch.cat(batch.action)
        reward_batch = torch.cat(batch.reward)

        state_action_values = policy_net(state_batch).gather(1, action_batch)
        next_state_values = torch.zeros(BATCH_SIZE)
        with torch.no_grad():
            if double:
                next_actions = policy_net(non_final_next_states).argmax(1, keepdim=True)
                next_state_values[non_final_mask] = target_net(non_final_next_states).gather(1, next_actions).squeeze(1)
            else:
                next_state_values[non_final_mask] = target_net(non_final_next_states).max(1).values
        expected_state_action_values = (next_state_values * GAMMA) + reward_batch

        criterion = nn.SmoothL1Loss()
        loss = criterion(state_action_values, expected_state_action_values.unsqueeze(1))
        optimizer.zero_grad()
        loss.backward()
        # In-place gradient clipping
        torch.nn.utils.clip_grad_value_(policy_net.parameters(), 100)
        optimizer.step()
        return loss

    for i_episode in range(NUM_EPISODES):
        state, info = env.reset()
        state = torch.tensor(state, dtype=torch.float32).unsqueeze(0)
        episode_return, losses = 0.0, []
        for t in count():
            action = select_action(state)
            observation, reward, terminated, truncated, _ = env.step(action.item())
            episode_return += reward
            reward = torch.tensor([reward])
            done = terminated or truncated
            if terminated:
                next_state = None
            else:
                next_state = torch.tensor(observation, dtype=torch.float32).unsqueeze(0)
            memory.push(state, action, next_state, reward)
            state = next_state

            loss = optimize_model()
            if loss is not None:
                losses.append(loss.item())

            # Soft update of the target network's weights: θ′ ← τ θ + (1 −τ )θ′
            target_net_state_dict = target_net.state_dict()
            policy_net_state_dict = policy_net.state_dict()
            for key in policy_net_state_dict:
                target_net_state_dict[key] = policy_net_state_dict[key] * TAU + target_net_state_dict[key] * (1 - TAU)
            target_net.load_state_dict(target_net_state_dict)

            if done:
                break
        if i_episode % 4 == 3:
            mean_loss = f"{sum(losses) / len(losses):.6f}" if losses else "n/a"
            print(f"{name} episode {i_episode + 1} steps {t + 1} return {episode_return:.2f} loss {mean_loss} "
                  f"last {losses[-1] if losses else float('nan'):.6f} memory {len(memory)} steps_done {steps_done}")

    # greedy evaluation
    state, _ = env.reset()
    path, total = [env.position], 0.0
    for t in count():
        with torch.no_grad():
            action = policy_net(torch.tensor(state).unsqueeze(0)).max(1).indices.item()
        state, reward, terminated, truncated, _ = env.step(action)
        path.append(env.position)
        total += reward
        if terminated or truncated:
            break
    print(f"{name} greedy return {total:.2f} in {t + 1} steps, path {path}")
    q = policy_net(torch.eye(n_observations))
    print(f"{name} Q start {' '.join(f'{v:.6f}' for v in q[0].tolist())} mean {q.mean().item():.6f}")
    print(f"{name} greedy actions {greedy_actions(policy_net).tolist()}")


# a dueling-network agent in the style of the common "dqn_agent.py" repositories: NumPy-stacked batches, a
# (1 - dones) mask, F.mse_loss, RMSprop, clip_grad_norm_ and a soft update through the parameters' .data
class DuelingQNetwork(nn.Module):
    """A shared trunk, then the state's value plus its actions' advantages less their mean."""

    def __init__(self, state_size, action_size, seed, fc1_units=32, fc2_units=16):
        super(DuelingQNetwork, self).__init__()
        self.seed = torch.manual_seed(seed)
        self.fc1 = nn.Linear(state_size, fc1_units)
        self.value = nn.Sequential(nn.Linear(fc1_units, fc2_units), nn.ReLU(), nn.Linear(fc2_units, 1))
        self.advantage = nn.Sequential(nn.Linear(fc1_units, fc2_units), nn.ReLU(),
                                       nn.Linear(fc2_units, action_size))

    def forward(self, state):
        x = F.relu(self.fc1(state))
        value, advantage = self.value(x), self.advantage(x)
        return value + advantage - advantage.mean(dim=1, keepdim=True)


class ReplayBuffer:
    """Fixed-size buffer to store experience tuples."""

    def __init__(self, action_size, buffer_size, batch_size, seed):
        self.action_size = action_size
        self.memory = deque(maxlen=buffer_size)
        self.batch_size = batch_size
        self.experience = namedtuple("Experience", field_names=["state", "action", "reward", "next_state", "done"])
        self.seed = random.seed(seed)

    def add(self, state, action, reward, next_state, done):
        self.memory.append(self.experience(state, action, reward, next_state, done))

    def sample(self):
        experiences = random.sample(self.memory, k=self.batch_size)
        states = torch.from_numpy(np.vstack([e.state for e in experiences if e is not None])).float()
        actions = torch.from_numpy(np.vstack([e.action for e in experiences if e is not None])).long()
        rewards = torch.from_numpy(np.vstack([e.reward for e in experiences if e is not None])).float()
        next_states = torch.from_numpy(np.vstack([e.next_state for e in experiences if e is not None])).float()
        dones = torch.from_numpy(np.vstack([e.done for e in experiences if e is not None]).astype(np.uint8)).float()
        return (states, actions, rewards, next_states, dones)

    def __len__(self):
        return len(self.memory)


class Agent:
    """Interacts with and learns from the environment."""

    def __init__(self, state_size, action_size, seed):
        self.state_size, self.action_size = state_size, action_size
        self.qnetwork_local = DuelingQNetwork(state_size, action_size, seed)
        self.qnetwork_target = DuelingQNetwork(state_size, action_size, seed)
        self.optimizer = optim.RMSprop(self.qnetwork_local.parameters(), lr=1e-3)
        self.memory = ReplayBuffer(action_size, 300, BATCH_SIZE, seed)
        self.t_step = 0

    def step(self, state, action, reward, next_state, done):
        self.memory.add(state, action, reward, next_state, done)
        self.t_step = (self.t_step + 1) % 2  # learn every 2 steps
        if self.t_step == 0 and len(self.memory) > BATCH_SIZE:
            return self.learn(self.memory.sample(), GAMMA)
        return None

    def act(self, state, eps=0.):
        state = torch.from_numpy(state).float().unsqueeze(0)
        self.qnetwork_local.eval()
        with torch.no_grad():
            action_values = self.qnetwork_local(state)
        self.qnetwork_local.train()
        if random.random() > eps:
            return np.argmax(action_values.cpu().data.numpy())
        else:
            return random.choice(np.arange(self.action_size))

    def learn(self, experiences, gamma):
        states, actions, rewards, next_states, dones = experiences
        Q_targets_next = self.qnetwork_target(next_states).detach().max(1)[0].unsqueeze(1)
        Q_targets = rewards + (gamma * Q_targets_next * (1 - dones))
        Q_expected = self.qnetwork_local(states).gather(1, actions)
        loss = F.mse_loss(Q_expected, Q_targets)
        self.optimizer.zero_grad()
        loss.backward()
        total_norm = torch.nn.utils.clip_grad_norm_(self.qnetwork_local.parameters(), 1.0)
        self.optimizer.step()
        self.soft_update(self.qnetwork_local, self.qnetwork_target, TAU)
        return loss.item(), total_norm.item()

    def soft_update(self, local_model, target_model, tau):
        """θ_target = τ*θ_local + (1 - τ)*θ_target"""
        for target_param, local_param in zip(target_model.parameters(), local_model.parameters()):
            target_param.data.copy_(tau * local_param.data + (1.0 - tau) * target_param.data)


# a distributional (C51) agent as Rainbow implementations write it: a softmax over atoms per action, the
# target distribution projected onto the support with floor/ceil, boolean-product masks and index_add_
ATOMS, V_MIN, V_MAX = 11, -1.5, 1.5


class CategoricalDQN(nn.Module):
    def __init__(self, n_observations, n_actions, atoms=ATOMS):
        super().__init__()
        self.n_actions, self.atoms = n_actions, atoms
        self.fc = nn.Sequential(nn.Linear(n_observations, 32), nn.ReLU(), nn.Linear(32, n_actions * atoms))

    def forward(self, x, log=False):
        q = self.fc(x).view(-1, self.n_actions, self.atoms)
        return F.log_softmax(q, dim=2) if log else F.softmax(q, dim=2)


# all nets are built before training: the dueling agent seeds torch's and Python's generators
policy_net = DQN(n_observations, n_actions)
target_net = DQN(n_observations, n_actions)
double_policy = DQN(n_observations, n_actions)
agent = Agent(state_size=n_observations, action_size=n_actions, seed=0)
online = CategoricalDQN(n_observations, n_actions)
share_initial_weights({"policy": policy_net, "double": double_policy, "local": agent.qnetwork_local,
                       "target": agent.qnetwork_target, "c51": online})

# the tutorial's agent: a target net built fresh and loaded from the policy's state dict
target_net.load_state_dict(policy_net.state_dict())
train("dqn", policy_net, target_net, double=False)

# Double DQN with a deep-copied target net
double_target = copy.deepcopy(double_policy)
print("deepcopy shares storage:", double_target.layer1.weight.data_ptr() == double_policy.layer1.weight.data_ptr())
train("double", double_policy, double_target, double=True)

# the dueling agent
scores_window, eps = deque(maxlen=4), 1.0
for i_episode in range(1, 17):
    state, score, learned = np.array(env.reset()[0], dtype=np.float32), 0.0, []
    for t in range(GridWorld.max_steps):
        action = agent.act(state, eps)
        next_state, reward, done, truncated, _ = env.step(action)
        next_state = np.array(next_state, dtype=np.float32)
        out = agent.step(state, action, reward, next_state, done)
        if out is not None:
            learned.append(out)
        state, score = next_state, score + reward
        if done or truncated:
            break
    scores_window.append(score)
    eps = max(0.05, 0.8 * eps)
    if i_episode % 4 == 0:
        loss, norm = learned[-1] if learned else (float("nan"), float("nan"))
        print("Episode {}\tAverage Score: {:.2f}\tloss {:.6f} grad norm {:.6f} eps {:.4f}".format(
            i_episode, np.mean(scores_window), loss, norm, eps))
print("dueling greedy actions", greedy_actions(agent.qnetwork_local).tolist(), agent.qnetwork_local.training)

# a full checkpoint, resumed into a fresh agent that takes the same next step as the original
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "checkpoint.pth")
    torch.save({"episode": i_episode, "model_state_dict": agent.qnetwork_local.state_dict(),
                "target_state_dict": agent.qnetwork_target.state_dict(),
                "optimizer_state_dict": agent.optimizer.state_dict(), "eps": eps}, path)
    checkpoint = torch.load(path, weights_only=True)
    resumed = Agent(state_size=n_observations, action_size=n_actions, seed=1)
    resumed.qnetwork_local.load_state_dict(checkpoint["model_state_dict"])
    resumed.qnetwork_target.load_state_dict(checkpoint["target_state_dict"])
    resumed.optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
    print("checkpoint", checkpoint["episode"], f"{checkpoint['eps']:.4f}", sorted(checkpoint["optimizer_state_dict"]),
          sorted(checkpoint["optimizer_state_dict"]["state"][0]), checkpoint["optimizer_state_dict"]["param_groups"])
    experiences = agent.memory.sample()
    (loss, norm), (resumed_loss, resumed_norm) = agent.learn(experiences, GAMMA), resumed.learn(experiences, GAMMA)
    print(f"next step loss {loss:.6f} norm {norm:.6f} resumed {resumed_loss:.6f} {resumed_norm:.6f}",
          torch.equal(greedy_actions(agent.qnetwork_local), greedy_actions(resumed.qnetwork_local)))

# the C51 agent
support = torch.linspace(V_MIN, V_MAX, ATOMS)
delta_z = (V_MAX - V_MIN) / (ATOMS - 1)
c51_target = copy.deepcopy(online)
c51_optimizer = optim.Adam(online.parameters(), lr=2e-3, eps=1.5e-4)
c51_memory = deque(maxlen=300)
for episode in range(12):
    state, _ = env.reset()
    episode_return, losses = 0.0, []
    for t in count():
        eps = max(0.1, 1.0 - episode / 8)
        if random.random() < eps:
            action = random.randrange(n_actions)
        else:
            with torch.no_grad():
                action = (online(torch.tensor([state])) * support).sum(2).argmax(1).item()
        next_state, reward, terminated, truncated, _ = env.step(action)
        c51_memory.append((np.array(state), action, reward, np.array(next_state), float(not terminated)))
        state, episode_return = next_state, episode_return + reward
        if len(c51_memory) >= BATCH_SIZE:
            states, actions, returns, next_states, nonterminals = zip(*random.sample(c51_memory, BATCH_SIZE))
            states, next_states = torch.FloatTensor(states), torch.tensor(next_states, dtype=torch.float32)
            actions, returns = torch.tensor(actions), torch.tensor(returns)
            nonterminals = torch.tensor(nonterminals).unsqueeze(1)
            log_p = online(states, log=True)
            log_p_a = log_p[range(BATCH_SIZE), actions]
            with torch.no_grad():
                pns = online(next_states)
                argmax_indices_ns = (pns * support.expand_as(pns)).sum(2).argmax(1)  # Double-Q choice
                pns = c51_target(next_states)
                pns_a = pns[range(BATCH_SIZE), argmax_indices_ns]
                Tz = returns.unsqueeze(1) + nonterminals * GAMMA * support.unsqueeze(0)
                Tz = Tz.clamp(min=V_MIN, max=V_MAX)
                b = (Tz - V_MIN) / delta_z
                l, u = b.floor().to(torch.int64), b.ceil().to(torch.int64)
                l[(u > 0) * (l == u)] -= 1
                u[(l < (ATOMS - 1)) * (l == u)] += 1
                m = states.new_zeros(BATCH_SIZE, ATOMS)
                offset = torch.linspace(0, ((BATCH_SIZE - 1) * ATOMS), BATCH_SIZE).unsqueeze(1).expand(
                    BATCH_SIZE, ATOMS).to(actions)
                m.view(-1).index_add_(0, (l + offset).view(-1), (pns_a * (u.float() - b)).view(-1))
                m.view(-1).index_add_(0, (u + offset).view(-1), (pns_a * (b - l.float())).view(-1))
            loss = -torch.sum(m * log_p_a, 1)
            c51_optimizer.zero_grad()
            loss.mean().backward()
            nn.utils.clip_grad_norm_(online.parameters(), 10.0)
            c51_optimizer.step()
            losses.append(loss.mean().item())
        if (t + 1) % 8 == 0:
            c51_target.load_state_dict(online.state_dict())  # a hard target update
        if terminated or truncated:
            break
    if episode % 3 == 2:
        print(f"c51 episode {episode + 1} return {episode_return:.2f} loss {sum(losses) / max(len(losses), 1):.6f} "
              f"mass {m.sum(1).mean().item():.6f}")
with torch.no_grad():
    q = (online(torch.eye(n_observations)) * support).sum(2)
print("observations stacked by torch.tensor:", torch.tensor([s for s, *_ in list(c51_memory)[:4]]).dtype)
print("c51 Q start", " ".join(f"{v:.6f}" for v in q[0].tolist()), "greedy", q.argmax(1).tolist())

# the tutorial's plot_durations: a moving average of episode lengths by unfold
durations_t = torch.tensor([20, 20, 15, 20, 10, 8, 10, 9], dtype=torch.float)
means = durations_t.unfold(0, 4, 1).mean(1).view(-1)
means = torch.cat((torch.zeros(3), means))
print("moving average", " ".join(f"{v:.2f}" for v in means.tolist()))

# save the policy and reload it into a fresh net
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "policy.pt")
    torch.save(policy_net.state_dict(), path)
    state_dict = torch.load(path, weights_only=True)
    fresh = DQN(n_observations, n_actions)
    print("load:", fresh.load_state_dict(state_dict))
    print("keys:", list(state_dict), type(state_dict).__name__)
    print("reloaded greedy actions match:", torch.equal(greedy_actions(fresh), greedy_actions(policy_net)))
    difference = fresh(torch.eye(n_observations)) - policy_net(torch.eye(n_observations))
    print(f"reloaded max diff {difference.abs().max().item():.6f}")
