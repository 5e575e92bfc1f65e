"""Variational inference three ways, in the idioms of public code. Bayes by Backprop (Blundell et al. 2015, as
nitarshan/bayes-by-backprop and piEsposito/blitz write it): a `BayesianLinear` layer with `weight_mu` and
`weight_rho` parameters made with `torch.Tensor(...).uniform_`, `sigma = torch.log1p(torch.exp(rho))`, weights drawn
by the reparameterisation trick (`Normal(0, 1).sample(rho.size())` in one layer kind, `torch.randn_like` into a
registered buffer in the other), a scale-mixture prior on `torch.FloatTensor` sigmas whose log-probability is the
log of `exp(Normal.log_prob)` terms (nitarshan's), a `torch.logsumexp` over the stacked components, or a
`MixtureSameFamily`, the complexity cost `log q - log p` (or the closed-form `kl_divergence` of two Normals), an
ELBO averaged over a few Monte Carlo samples written into `torch.zeros` buffers, and the predictive mean, standard
deviation and entropy over samples. Mean-field and full-rank VI for Bayesian logistic regression as Pyro's
autoguides build it from torch.distributions: `Independent(Normal(loc, F.softplus(raw)), 1)`, a `MultivariateNormal`
whose `scale_tril` comes from `transform_to(constraints.lower_cholesky)` or `torch.tril` plus a softplus diagonal,
`LowRankMultivariateNormal` with `biject_to(constraints.positive)`, `kl_divergence` to the prior, `entropy`,
`Bernoulli(logits=...).log_prob`, marginal `cdf`/`icdf`, the stick-breaking and interval bijections with their
`log_abs_det_jacobian`, and a log-normal prior scale by `TransformedDistribution(Normal, ExpTransform())`. A small
hierarchical model whose posteriors are `Gamma`, `Beta` and `Dirichlet`, sampled by `rsample` (the implicit
gradient through gamma draws, Dirichlet's through `_dirichlet_grad`) and scored by `Poisson`, `Binomial` and
`Categorical` likelihoods with closed-form KLs, checked by posterior predictive draws (`Poisson`, `Binomial` and
`Categorical` `.sample()`). Adam throughout on small NumPy-seeded data; prints the ELBO, KL and
accuracy a few times and some distributions' repr, mean, variance and shapes. The noise comes from torch's generator
(`WEIGHTS=path` shares the initial weights, tests/programs/_draws.py the `randn_like` draws)."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights
from torch.distributions import (
    Bernoulli,
    Beta,
    Binomial,
    Categorical,
    Dirichlet,
    Gamma,
    Independent,
    LowRankMultivariateNormal,
    MixtureSameFamily,
    MultivariateNormal,
    Normal,
    Poisson,
    TransformedDistribution,
    biject_to,
    constraints,
    kl_divergence,
    transform_to,
)
from torch.distributions.transforms import ExpTransform

torch.manual_seed(0)
rng = np.random.default_rng(0)

# ------------------------------------------------------------------------------------------------------------
# Part 1: Bayes by Backprop on three Gaussian blobs
# ------------------------------------------------------------------------------------------------------------
PI = 0.5
SIGMA_1 = torch.FloatTensor([math.exp(-0)])
SIGMA_2 = torch.FloatTensor([math.exp(-6)])
CLASSES, SAMPLES, TEST_SAMPLES = 3, 3, 10
D, N, GROUPS = 4, 80, 5

centres = np.array([[0.0, 2.0], [-1.8, -1.0], [1.8, -1.0]])
labels = rng.integers(0, CLASSES, 90)
points = centres[labels] + 0.9 * rng.standard_normal((90, 2))
train_x = torch.from_numpy(points[:60]).float()
train_y = torch.from_numpy(labels[:60]).long()
test_x = torch.from_numpy(points[60:]).float()
test_y = torch.from_numpy(labels[60:]).long()
BATCH_SIZE, NUM_BATCHES = 20, 3


class Gaussian:
    """The variational posterior of one weight tensor: N(mu, log1p(exp(rho))^2)."""

    def __init__(self, mu, rho):
        super().__init__()
        self.mu = mu
        self.rho = rho
        self.normal = torch.distributions.Normal(0, 1)

    @property
    def sigma(self):
        return torch.log1p(torch.exp(self.rho))

    def sample(self):
        epsilon = self.normal.sample(self.rho.size())
        return self.mu + self.sigma * epsilon

    def log_prob(self, input):
        return (-math.log(math.sqrt(2 * math.pi))
                - torch.log(self.sigma)
                - ((input - self.mu) ** 2) / (2 * self.sigma ** 2)).sum()


class ScaleMixtureGaussian:
    """pi N(0, sigma1^2) + (1 - pi) N(0, sigma2^2), scored through the densities as the paper writes it."""

    def __init__(self, pi, sigma1, sigma2):
        super().__init__()
        self.pi = pi
        self.sigma1 = sigma1
        self.sigma2 = sigma2
        self.gaussian1 = torch.distributions.Normal(0, sigma1)
        self.gaussian2 = torch.distributions.Normal(0, sigma2)

    def log_prob(self, input):
        prob1 = torch.exp(self.gaussian1.log_prob(input))
        prob2 = torch.exp(self.gaussian2.log_prob(input))
        return (torch.log(self.pi * prob1 + (1 - self.pi) * prob2)).sum()

    def stable_log_prob(self, input):
        """The same mixture by logsumexp, which keeps its value where both densities underflow."""
        stacked = torch.stack([self.gaussian1.log_prob(input) + math.log(self.pi),
                               self.gaussian2.log_prob(input) + math.log(1 - self.pi)])
        return torch.logsumexp(stacked, dim=0).sum()


class BayesianLinear(nn.Module):
    """nitarshan's layer: a weight sample per forward pass, log prior and log posterior kept for the ELBO."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight_mu = nn.Parameter(torch.Tensor(out_features, in_features).uniform_(-0.2, 0.2))
        self.weight_rho = nn.Parameter(torch.Tensor(out_features, in_features).uniform_(-5, -4))
        self.weight = Gaussian(self.weight_mu, self.weight_rho)
        self.bias_mu = nn.Parameter(torch.Tensor(out_features).uniform_(-0.2, 0.2))
        self.bias_rho = nn.Parameter(torch.Tensor(out_features).uniform_(-5, -4))
        self.bias = Gaussian(self.bias_mu, self.bias_rho)
        self.weight_prior = ScaleMixtureGaussian(PI, SIGMA_1, SIGMA_2)
        self.bias_prior = ScaleMixtureGaussian(PI, SIGMA_1, SIGMA_2)
        self.log_prior = 0
        self.log_variational_posterior = 0

    def forward(self, input, sample=False, calculate_log_probs=False):
        if self.training or sample:
            weight = self.weight.sample()
            bias = self.bias.sample()
        else:
            weight = self.weight.mu
            bias = self.bias.mu
        if self.training or calculate_log_probs:
            self.log_prior = self.weight_prior.log_prob(weight) + self.bias_prior.log_prob(bias)
            self.log_variational_posterior = self.weight.log_prob(weight) + self.bias.log_prob(bias)
        else:
            self.log_prior, self.log_variational_posterior = 0, 0
        return F.linear(input, weight, bias)


class BayesianNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = BayesianLinear(2, 16)
        self.l2 = BayesianLinear(16, CLASSES)

    def forward(self, x, sample=False):
        x = F.relu(self.l1(x, sample))
        return F.log_softmax(self.l2(x, sample), dim=1)

    def log_prior(self):
        return self.l1.log_prior + self.l2.log_prior

    def log_variational_posterior(self):
        return self.l1.log_variational_posterior + self.l2.log_variational_posterior

    def sample_elbo(self, input, target, samples=SAMPLES):
        outputs = torch.zeros(samples, input.shape[0], CLASSES)
        log_priors = torch.zeros(samples)
        log_variational_posteriors = torch.zeros(samples)
        for i in range(samples):
            outputs[i] = self(input, sample=True)
            log_priors[i] = self.log_prior()
            log_variational_posteriors[i] = self.log_variational_posterior()
        log_prior = log_priors.mean()
        log_variational_posterior = log_variational_posteriors.mean()
        negative_log_likelihood = F.nll_loss(outputs.mean(0), target, reduction="sum")
        loss = (log_variational_posterior - log_prior) / NUM_BATCHES + negative_log_likelihood
        return loss, log_prior, log_variational_posterior, negative_log_likelihood


class BlitzLinear(nn.Module):
    """blitz's BayesianLinear: noise kept in a buffer refilled by randn_like, a closed-form KL to a Normal prior."""

    def __init__(self, in_features, out_features, prior_sigma=0.5):
        super().__init__()
        self.weight_mu = nn.Parameter(torch.Tensor(out_features, in_features).normal_(0, 0.1))
        self.weight_rho = nn.Parameter(torch.Tensor(out_features, in_features).normal_(-7, 0.1))
        self.bias_mu = nn.Parameter(torch.Tensor(out_features).normal_(0, 0.1))
        self.bias_rho = nn.Parameter(torch.Tensor(out_features).normal_(-7, 0.1))
        self.register_buffer("eps_w", torch.zeros(out_features, in_features))
        self.prior = Normal(torch.tensor(0.0), torch.tensor(prior_sigma))
        self.kl = torch.tensor(0.0)

    def forward(self, x):
        weight_sigma = torch.log1p(torch.exp(self.weight_rho))
        bias_sigma = torch.log1p(torch.exp(self.bias_rho))
        self.eps_w = torch.randn_like(self.eps_w)
        weight = self.weight_mu + weight_sigma * self.eps_w
        bias = self.bias_mu + bias_sigma * torch.randn_like(bias_sigma)
        self.kl = (kl_divergence(Normal(self.weight_mu, weight_sigma), self.prior).sum()
                   + kl_divergence(Normal(self.bias_mu, bias_sigma), self.prior).sum())
        return F.linear(x, weight, bias)


def nn_kl_divergence(model):
    return sum(module.kl for module in model.modules() if isinstance(module, BlitzLinear))


# ------------------------------------------------------------------------------------------------------------
# The guides of part 2 and the posterior of part 3; every model is made before any training, so that WEIGHTS
# shares them all
# ------------------------------------------------------------------------------------------------------------
class MeanField(nn.Module):
    """Pyro's AutoNormal: independent Normals, the scale made positive by softplus."""

    def __init__(self):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(D, dtype=torch.float64))
        self.scale_raw = nn.Parameter(torch.full((D,), -1.0, dtype=torch.float64))

    def forward(self):
        return Independent(Normal(self.loc, F.softplus(self.scale_raw)), 1)


class FullRank(nn.Module):
    """AutoMultivariateNormal: a Cholesky factor by transform_to(constraints.lower_cholesky)."""

    def __init__(self):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(D, dtype=torch.float64))
        self.scale_tril_raw = nn.Parameter(0.1 * torch.randn(D, D, dtype=torch.float64))

    def forward(self):
        scale_tril = transform_to(constraints.lower_cholesky)(self.scale_tril_raw)
        return MultivariateNormal(self.loc, scale_tril=scale_tril)


class HandTril(nn.Module):
    """The same by hand: the strict lower triangle plus a softplus diagonal."""

    def __init__(self):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(D, dtype=torch.float64))
        self.raw = nn.Parameter(0.1 * torch.randn(D, D, dtype=torch.float64))

    def forward(self):
        scale_tril = torch.tril(self.raw, diagonal=-1) + torch.diag_embed(F.softplus(self.raw.diagonal()) + 1e-4)
        return MultivariateNormal(self.loc, scale_tril=scale_tril)


class LowRank(nn.Module):
    """AutoLowRankMultivariateNormal: W W^T + diag(d), d positive by biject_to."""

    def __init__(self, rank=2):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(D, dtype=torch.float64))
        self.cov_factor = nn.Parameter(0.1 * torch.randn(D, rank, dtype=torch.float64))
        self.cov_diag_raw = nn.Parameter(torch.full((D,), -2.0, dtype=torch.float64))

    def forward(self):
        return LowRankMultivariateNormal(self.loc, self.cov_factor, biject_to(constraints.positive)(self.cov_diag_raw))


class Posterior(nn.Module):
    """Mean-field posteriors of the hierarchical model: Gamma rates, Beta coins, Dirichlet topic."""

    def __init__(self):
        super().__init__()
        self.rate_concentration = nn.Parameter(torch.zeros(GROUPS))
        self.rate_rate = nn.Parameter(torch.zeros(GROUPS))
        self.beta_a = nn.Parameter(torch.zeros(GROUPS))
        self.beta_b = nn.Parameter(torch.zeros(GROUPS))
        self.topic = nn.Parameter(torch.zeros(4))

    def forward(self):
        return (Gamma(F.softplus(self.rate_concentration) + 0.5, F.softplus(self.rate_rate)),
                Beta(F.softplus(self.beta_a) + 0.5, F.softplus(self.beta_b) + 0.5),
                Dirichlet(torch.exp(self.topic)))


net = BayesianNetwork()
blitz = nn.Sequential(BlitzLinear(2, 16), nn.ReLU(), BlitzLinear(16, CLASSES))
guides = {"mean_field": MeanField(), "full_rank": FullRank(), "hand_tril": HandTril(), "low_rank": LowRank()}
posterior = Posterior()
share_initial_weights({"bbb": net, "blitz": blitz, **guides, "posterior": posterior})

w = net.l1.weight.sample()
mixture = net.l1.weight_prior
print(f"mixture log_prob {mixture.log_prob(w).item():.5f} by logsumexp {mixture.stable_log_prob(w).item():.5f}")
print(f"prior {mixture.gaussian2} batch_shape {tuple(mixture.gaussian2.batch_shape)} "
      f"stddev {mixture.gaussian2.stddev.item():.6f}")

# the same prior as a MixtureSameFamily, scored on the last dim of the unsqueezed weights
spike_slab = MixtureSameFamily(Categorical(probs=torch.tensor([PI, 1 - PI])),
                               Normal(torch.zeros(2), torch.cat([SIGMA_1, SIGMA_2])))
print(f"MixtureSameFamily log_prob {spike_slab.log_prob(w).sum().item():.5f} "
      f"batch_shape {spike_slab.batch_shape} event_shape {spike_slab.event_shape} "
      f"variance {spike_slab.variance.item():.6f} of {net.l1.weight.normal}")

optimizer = torch.optim.Adam(net.parameters(), lr=0.05)
for epoch in range(6):
    net.train()
    for batch in range(NUM_BATCHES):
        data = train_x[batch * BATCH_SIZE:(batch + 1) * BATCH_SIZE]
        target = train_y[batch * BATCH_SIZE:(batch + 1) * BATCH_SIZE]
        net.zero_grad()
        loss, log_prior, log_variational_posterior, nll = net.sample_elbo(data, target)
        loss.backward()
        optimizer.step()
    if epoch % 2 == 1:
        print(f"bbb epoch {epoch} loss {loss.item():.4f} log_prior {log_prior.item():.4f} "
              f"log_q {log_variational_posterior.item():.4f} nll {nll.item():.4f}")

net.eval()
with torch.no_grad():
    outputs = torch.stack([net(test_x, sample=True).exp() for _ in range(TEST_SAMPLES)])
    mean_probs = outputs.mean(0)
    std_probs = outputs.std(0)
    ensemble = mean_probs.argmax(1).eq(test_y).float().mean()
    posterior_mean = net(test_x).argmax(1).eq(test_y).float().mean()
    entropy = -(mean_probs * mean_probs.clamp_min(1e-12).log()).sum(1)
print(f"bbb ensemble acc {ensemble.item():.4f} mean-weights acc {posterior_mean.item():.4f} "
      f"predictive std {std_probs.mean().item():.6f} entropy {entropy.mean().item():.6f}")
print(f"bbb sigma range {net.l1.weight.sigma.min().item():.6f} {net.l1.weight.sigma.max().item():.6f}")

criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(blitz.parameters(), lr=0.05)
for step in range(12):
    loss = 0
    for _ in range(SAMPLES):
        loss = loss + criterion(blitz(train_x), train_y) + nn_kl_divergence(blitz) / len(train_x)
    loss = loss / SAMPLES
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 4 == 3:
        print(f"blitz step {step} elbo loss {loss.item():.5f} kl {nn_kl_divergence(blitz).item():.4f}")
with torch.no_grad():
    preds = torch.stack([blitz(test_x).softmax(-1) for _ in range(TEST_SAMPLES)])
    mean, std = preds.mean(0), preds.std(0)
    ci_upper, ci_lower = mean + 2 * std, mean - 2 * std
    accuracy = (mean.argmax(-1) == test_y).float().mean()
print(f"blitz acc {accuracy.item():.4f} std {std.mean().item():.6f} "
      f"inside ci {((ci_lower <= mean) & (mean <= ci_upper)).float().mean().item():.4f}")

# ------------------------------------------------------------------------------------------------------------
# Part 2: Bayesian logistic regression, mean-field / full-rank / low-rank guides
# ------------------------------------------------------------------------------------------------------------
true_w = np.array([1.5, -2.0, 0.5, 0.0])
features = rng.standard_normal((N, D))
flips = rng.random(N) < 1 / (1 + np.exp(-(features @ true_w)))
X = torch.from_numpy(features)
y = torch.from_numpy(flips.astype(np.float64))
prior = Independent(Normal(torch.zeros(D, dtype=torch.float64), torch.ones(D, dtype=torch.float64)), 1)
mvn_prior = MultivariateNormal(torch.zeros(D, dtype=torch.float64), covariance_matrix=torch.eye(D, dtype=torch.float64))
print(f"prior {prior} batch_shape {tuple(prior.batch_shape)} event_shape {tuple(prior.event_shape)}")


def log_likelihood(weights):
    logits = weights @ X.T
    return Bernoulli(logits=logits).log_prob(y.expand_as(logits)).sum(-1)


for name, guide in guides.items():
    optimizer = torch.optim.Adam(guide.parameters(), lr=0.05)
    for step in range(30):
        q = guide()
        weights = q.rsample((8,))
        kl = kl_divergence(q, prior if name == "mean_field" else mvn_prior)
        elbo = log_likelihood(weights).mean() - kl
        optimizer.zero_grad()
        (-elbo).backward()
        optimizer.step()
        if step % 10 == 9:
            print(f"{name} step {step} elbo {elbo.item():.6f} kl {kl.item():.6f} entropy {q.entropy().item():.6f}")
    with torch.no_grad():
        q = guide()
        probs = torch.sigmoid(q.sample((200,)) @ X.T).mean(0)
        accuracy = ((probs > 0.5).double() == y).double().mean()
        # the ELBO by the entropy form: E log p(y|w) + E log p(w) + H[q]
        w = q.sample((50,))
        elbo_entropy = (log_likelihood(w) + prior.log_prob(w)).mean() + q.entropy()
    print(f"{name} acc {accuracy.item():.4f} mean {q.mean.detach().numpy().round(4).tolist()} "
          f"variance {q.variance.sum().item():.6f} elbo by entropy {elbo_entropy.item():.4f}")
print(f"guide {guides['low_rank']()} event_shape {tuple(guides['low_rank']().event_shape)}")
with torch.no_grad():
    full, low = guides["full_rank"](), guides["low_rank"]()
    print(f"full_rank {full} stddev {full.stddev.numpy().round(4).tolist()} "
          f"lower_cholesky {constraints.lower_cholesky.check(full.scale_tril).item()} "
          f"precision trace {full.precision_matrix.diagonal().sum().item():.6f}")
    print(f"low_rank covariance logdet {torch.logdet(low.covariance_matrix).item():.6f} "
          f"log_prob at mean {low.log_prob(low.mean).item():.6f} batch_shape {low.batch_shape}")
    marginal = Normal(full.mean, full.stddev)
    print(f"P(w > 0) {(1 - marginal.cdf(torch.zeros(D, dtype=torch.float64))).numpy().round(4).tolist()} "
          f"95% upper {marginal.icdf(torch.tensor(0.975, dtype=torch.float64)).numpy().round(4).tolist()}")
    to_simplex, to_interval = biject_to(constraints.simplex), transform_to(constraints.interval(-1.0, 2.0))
    unconstrained = full.mean
    on_simplex = to_simplex(unconstrained[:3])
    print(f"{to_simplex} {on_simplex.numpy().round(4).tolist()} back "
          f"{to_simplex.inv(on_simplex).numpy().round(4).tolist()} "
          f"log|det J| {to_simplex.log_abs_det_jacobian(unconstrained[:3], on_simplex).item():.6f}")
    print(f"interval {to_interval(unconstrained).numpy().round(4).tolist()} log|det J| "
          f"{to_interval.log_abs_det_jacobian(unconstrained, to_interval(unconstrained)).sum().item():.6f}")

# a log-normal prior scale on the weights, q(log tau) Normal: TransformedDistribution(Normal, ExpTransform())
tau_loc = nn.Parameter(torch.tensor(0.0, dtype=torch.float64))
tau_raw = nn.Parameter(torch.tensor(-1.0, dtype=torch.float64))
guide = guides["mean_field"]
tau_prior = TransformedDistribution(Normal(torch.tensor(0.0, dtype=torch.float64),
                                           torch.tensor(1.0, dtype=torch.float64)), [ExpTransform()])
optimizer = torch.optim.Adam([tau_loc, tau_raw, *guide.parameters()], lr=0.03)
for step in range(20):
    q_tau = TransformedDistribution(Normal(tau_loc, biject_to(constraints.positive)(tau_raw)), ExpTransform())
    tau = q_tau.rsample((8,))
    q = guide()
    weights = q.rsample((8,))
    log_p = (log_likelihood(weights) + Normal(0.0, tau.unsqueeze(-1)).log_prob(weights).sum(-1)
             + tau_prior.log_prob(tau))
    log_q = q.log_prob(weights) + q_tau.log_prob(tau)
    elbo = (log_p - log_q).mean()
    optimizer.zero_grad()
    (-elbo).backward()
    optimizer.step()
    if step % 5 == 4:
        print(f"hierarchical scale step {step} elbo {elbo.item():.6f} tau {tau.mean().item():.6f}")
print(f"q_tau {q_tau} support {q_tau.support} has_rsample {q_tau.has_rsample}")

# ------------------------------------------------------------------------------------------------------------
# Part 3: a small hierarchical model with Gamma, Beta and Dirichlet posteriors (rsample through gamma draws)
# ------------------------------------------------------------------------------------------------------------
rates = rng.gamma(3.0, 1.0, GROUPS)
counts = torch.from_numpy(rng.poisson(rates[:, None], (GROUPS, 6)).astype(np.float32))
trials = torch.full((GROUPS,), 10.0)
successes = torch.from_numpy(rng.binomial(10, rng.beta(2.0, 3.0, GROUPS)).astype(np.float32))
words = torch.from_numpy(rng.choice(4, size=40, p=[0.4, 0.3, 0.2, 0.1]))


rate_prior, coin_prior, topic_prior = Gamma(torch.tensor(2.0), torch.tensor(1.0)), Beta(2.0, 2.0), \
    Dirichlet(torch.ones(4))
optimizer = torch.optim.Adam(posterior.parameters(), lr=0.1)
for step in range(24):
    q_rate, q_coin, q_topic = posterior()
    lam, theta, phi = q_rate.rsample((4,)), q_coin.rsample((4,)), q_topic.rsample((4,))
    expected_log_lik = (Poisson(lam.unsqueeze(-1)).log_prob(counts).sum((-1, -2))
                        + Binomial(trials, probs=theta).log_prob(successes).sum(-1)
                        + Categorical(probs=phi.unsqueeze(-2)).log_prob(words).sum(-1)).mean()
    kl = (kl_divergence(q_rate, rate_prior).sum() + kl_divergence(q_coin, coin_prior).sum()
          + kl_divergence(q_topic, topic_prior))
    elbo = expected_log_lik - kl
    optimizer.zero_grad()
    (-elbo).backward()
    optimizer.step()
    if step % 6 == 5:
        print(f"hierarchical step {step} elbo {elbo.item():.4f} kl {kl.item():.4f}")
q_rate, q_coin, q_topic = posterior()
print(f"q_rate {q_rate} mean {q_rate.mean.detach().double().numpy().round(3).tolist()} "
      f"variance {q_rate.variance.sum().item():.5f} batch_shape {tuple(q_rate.batch_shape)}")
print(f"q_coin mean {q_coin.mean.detach().double().numpy().round(3).tolist()} "
      f"entropy {q_coin.entropy().sum().item():.5f}")
print(f"q_topic {q_topic} mean {q_topic.mean.detach().double().numpy().round(3).tolist()} "
      f"event_shape {tuple(q_topic.event_shape)} entropy {q_topic.entropy().item():.5f}")
print(f"data rates {counts.mean(1).double().numpy().round(3).tolist()} word freq "
      f"{torch.bincount(words, minlength=4).div(40).double().numpy().round(3).tolist()}")
# posterior predictive checks: replicated data drawn through the fitted posteriors
with torch.no_grad():
    replicated_counts = Poisson(q_rate.sample((200,)).unsqueeze(-1).expand(200, GROUPS, 6)).sample()
    replicated_successes = Binomial(trials, probs=q_coin.sample((200,))).sample()
    replicated_words = Categorical(probs=q_topic.sample((200,))).sample((40,))
    tail_probability = (replicated_counts.mean(-1) >= counts.mean(-1)).float().mean(0)
print(f"predictive counts mean {replicated_counts.mean().item():.4f} std {replicated_counts.std().item():.4f} "
      f"P(T_rep >= T_obs) {tail_probability.double().numpy().round(3).tolist()}")
word_freq = torch.bincount(replicated_words.flatten(), minlength=4).div(replicated_words.numel())
print(f"predictive successes {replicated_successes.mean(0).double().numpy().round(3).tolist()} observed "
      f"{successes.double().numpy().tolist()} word freq {word_freq.double().numpy().round(4).tolist()}")
