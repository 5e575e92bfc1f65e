"""After manual_seed(s), retrograd's draws are torch's CPU draws (Note [torch's CPU random streams]): every
sampler below runs under torch and under retrograd from the same seed and must give the same numbers,
bit for bit except where the Note says NumPy's float64 log, log1p, sin or cos may differ from glibc's by an
ulp (compared there to 4 ulps)."""

from __future__ import annotations

import platform

import numpy as np
import pytest
import torch
from test_optim import train

import retrograd

SEEDS = (0, 1, 123456789, 2**40 + 3)
SIZES = (1, 2, 3, 15, 16, 17, 31, 33, 100, 257)
F64_ULPS = 4 * np.finfo(np.float64).eps


def _numpy(value):
    if isinstance(value, (list, tuple)):
        return np.concatenate([_numpy(v).ravel() for v in value])
    return value.detach().numpy() if hasattr(value, "detach") else np.asarray(value)


def _both(seed, draw):
    """draw(lib) under torch and retrograd, each after lib.manual_seed(seed), as NumPy arrays."""
    out = []
    for lib in (torch, retrograd):
        lib.manual_seed(seed)
        out.append(_numpy(draw(lib)))
    return out


def bernoulli_number(lib, t, p=0.5):
    """t.bernoulli_(p) for a number p. torch's side takes p as a float64 tensor: the same arithmetic as its generic
    path for a number, which torch leaves for MKL's own stream on Intel CPUs (Note [torch's CPU random streams]),
    so the comparison holds on any machine."""
    return t.bernoulli_(p) if lib is retrograd else t.bernoulli_(lib.full(t.shape, p, dtype=lib.float64))


def assert_same(seed, draw, rtol=0.0, atol=0.0):
    expected, actual = _both(seed, draw)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    if rtol or atol:
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", SIZES)
def test_rand_and_randn_float32_are_torchs(seed, n):
    # torch's float32 randn of 16 or more elements is its x86 build's vectorised log/sincos: other builds round
    # the same draws differently in the last bits
    assert_same(seed, lambda lib: [lib.rand(n), lib.randn(n), lib.randn(3, n), lib.rand(n)],
                rtol=0.0 if platform.machine().lower() in ("x86_64", "amd64") else 1e-5)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", SIZES)
def test_rand_and_randn_float64_are_torchs(seed, n):
    assert_same(seed, lambda lib: lib.rand(n, dtype=lib.float64))
    assert_same(seed, lambda lib: [lib.randn(n, dtype=lib.float64), lib.randn(2, n, dtype=lib.float64)],
                rtol=F64_ULPS)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", (1, 7, 8, 9, 20))
def test_complex_draws_fill_both_parts_as_torchs(seed, n):
    """torch draws a complex tensor as its view_as_real, twice as many reals: uniform parts, normal parts of
    variance one half (an FNO's `scale * torch.rand(..., dtype=torch.cfloat)` weights)."""
    exact = platform.machine().lower() in ("x86_64", "amd64")
    assert_same(seed, lambda lib: [lib.rand(n, dtype=lib.cfloat), lib.rand(2, n, dtype=lib.cdouble), lib.rand(3),
                                   lib.rand_like(lib.zeros(n, dtype=lib.cfloat)),
                                   lib.empty(n, dtype=lib.cfloat).uniform_(-2, 3), lib.rand(2)])
    assert_same(seed, lambda lib: [lib.randn(n, dtype=lib.cfloat), lib.randn(2, n, dtype=lib.cfloat), lib.rand(3),
                                   lib.randn_like(lib.zeros(n, dtype=lib.cfloat)),
                                   lib.empty(n, dtype=lib.cfloat).normal_(0.5, 2.0), lib.randn(2)],
                rtol=0.0 if exact else 1e-5)
    assert_same(seed, lambda lib: [lib.randn(n, dtype=lib.cdouble), lib.randn(n)], rtol=F64_ULPS)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_cached_normal_carries_from_one_small_draw_to_the_next(seed):
    """Below 16 elements torch's Box-Muller keeps the second sample of a pair for the next draw."""
    assert_same(seed, lambda lib: [lib.randn(3), lib.randn(1), lib.randn(5), lib.randn(20), lib.randn(2)])


@pytest.mark.parametrize("seed", SEEDS)
def test_randint_randperm_and_likes_are_torchs(seed):
    like = lambda lib: lib.zeros(4, 5)  # noqa: E731
    assert_same(seed, lambda lib: [lib.randint(-3, 10, (7, 5)), lib.randint(7, (40,)), lib.randint(0, 2**40, (9,)),
                                   lib.randint(-2**35, 5, (3,)), lib.randperm(1), lib.randperm(37),
                                   lib.randint_like(like(lib), 3, 9).long(), lib.randint_like(like(lib), 6).long()])
    assert_same(seed, lambda lib: [lib.rand_like(like(lib)), lib.randn_like(like(lib)),
                                   lib.randperm(50, dtype=lib.float32)])


@pytest.mark.parametrize("seed", SEEDS)
def test_generator_objects_and_the_generator_argument(seed):
    def draw(lib):
        g = lib.Generator().manual_seed(seed + 1)
        fresh = lib.Generator()  # torch's default seed, 67280421310721
        return [lib.randn(20, generator=g), lib.rand(5, generator=g), lib.randint(0, 9, (6,), generator=g),
                lib.randperm(9, generator=g), lib.rand(3), lib.randn(17, generator=fresh),
                lib.empty(30).normal_(generator=g), lib.empty(3).uniform_(-1, 1, generator=g)]

    assert_same(seed, draw)


def test_a_generator_names_its_device():
    """`g.device`, which code reads to make tensors beside its generator's draws."""
    def devices(lib):
        return [repr(g.device) for g in (lib.Generator(), lib.Generator(device="cpu"),
                                         lib.Generator(device=lib.device("cpu")), lib.default_generator)]

    assert devices(retrograd) == devices(torch)


@pytest.mark.parametrize("seed", SEEDS[:2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_in_place_samplers_are_torchs(seed, dtype):
    def make(lib, n=50):
        return lib.empty(n, dtype=getattr(lib, dtype))

    exact = lambda lib: [make(lib).uniform_(-0.3, 0.7), make(lib).uniform_(), make(lib, 7).uniform_(2, 5),  # noqa: E731
                         make(lib).random_(), make(lib).random_(5), make(lib).random_(-5, 5),
                         bernoulli_number(lib, make(lib), 0.3), make(lib).geometric_(0.3)]
    assert_same(seed, exact)
    rtol = 1e-6 if dtype == "float32" else F64_ULPS
    assert_same(seed, lambda lib: [make(lib).normal_(0.5, 0.02), make(lib, 9).normal_(-1, 3),
                                   make(lib).exponential_(1.5), make(lib).cauchy_(0.5, 2.0),
                                   make(lib).log_normal_(0.5, 0.3)], rtol=rtol)


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8", "bool", "float16"])
def test_random_fills_every_dtype_as_torch(dtype):
    assert_same(5, lambda lib: [lib.empty(30, dtype=getattr(lib, dtype)).random_(),
                                lib.empty(30, dtype=getattr(lib, dtype)).random_(0, 2)])


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_normal_and_bernoulli_with_tensor_arguments_are_torchs(seed):
    assert_same(seed, lambda lib: [lib.normal(2.0, 3.0, (20,)), lib.normal(lib.arange(20.0), 2.0),
                                   lib.normal(1.0, lib.arange(20.0)), lib.normal(lib.arange(5.0), lib.ones(5)),
                                   lib.bernoulli(lib.full((30,), 0.4)),
                                   lib.bernoulli(lib.full((30,), 0.4, dtype=lib.float64)),
                                   lib.empty(30).bernoulli_(lib.linspace(0, 1, 30))])


@pytest.mark.parametrize("seed", SEEDS)
def test_a_seeded_model_starts_from_torchs_weights(seed):
    """nn.Linear, Conv2d, Embedding, LSTM and the nn.init functions: torch's initial parameters."""
    assert_same(seed, lambda lib: [list(lib.nn.Linear(4, 3).parameters()), list(lib.nn.Linear(40, 30).parameters()),
                                   list(lib.nn.Conv2d(3, 8, 3).parameters()), lib.nn.Embedding(10, 6).weight,
                                   list(lib.nn.LSTM(5, 7).parameters())])
    init = lambda lib: lib.nn.init  # noqa: E731
    assert_same(seed, lambda lib: [init(lib).xavier_uniform_(lib.empty(7, 9)),
                                   init(lib).xavier_normal_(lib.empty(7, 9)),
                                   init(lib).kaiming_uniform_(lib.empty(7, 9)),
                                   init(lib).kaiming_normal_(lib.empty(17, 9), mode="fan_out"),
                                   init(lib).normal_(lib.empty(3, 3), 0, 0.02), init(lib).sparse_(lib.empty(7, 9), 0.3),
                                   init(lib).trunc_normal_(lib.empty(70, 9), std=0.02)])
    # trunc_normal_'s second sampler: uniform candidates, accepted through log (float32, a ulp apart at worst)
    assert_same(seed, lambda lib: init(lib).trunc_normal_(lib.empty(70, 9), mean=0, std=1, a=2, b=3), rtol=1e-6)
    assert_same(seed, lambda lib: init(lib).orthogonal_(lib.empty(7, 9)), atol=1e-5)  # LAPACK's QR rounds its way


def test_a_seeded_training_step_prints_torchs_loss():
    def losses(lib):  # the initial weights, the data and the labels are all drawn from the seeded generator
        model = lib.nn.Sequential(lib.nn.Linear(8, 16), lib.nn.Tanh(), lib.nn.Linear(16, 3))
        x, y = lib.randn(32, 8).numpy(), lib.randint(0, 3, (32,)).numpy()
        return train(lib, model, lib.optim.SGD(model.parameters(), lr=0.1), x, y, steps=3)

    expected, actual = _both(0, losses)
    np.testing.assert_allclose(actual, expected, rtol=1e-6)


@pytest.mark.parametrize("seed", SEEDS)
def test_rng_state_is_torchs_5056_bytes_and_crosses_over(seed):
    """get_rng_state gives torch's bytes (after seeding, after draws, with a cached normal); a state taken
    from torch and set in retrograd continues torch's stream, and the other way round."""
    assert_same(seed, lambda lib: lib.get_rng_state())
    assert_same(seed, lambda lib: (lib.randn(3), lib.get_rng_state())[1])
    assert_same(seed, lambda lib: (lib.rand(1000), lib.randn(1), lib.get_rng_state())[1])
    torch.manual_seed(seed)
    torch.rand(700)
    torch.randn(5)
    retrograd.set_rng_state(retrograd.from_numpy(torch.get_rng_state().numpy()))
    np.testing.assert_array_equal(retrograd.randn(7).numpy(), torch.randn(7).numpy())
    retrograd.randint(0, 5, (9,))
    torch.set_rng_state(torch.from_numpy(retrograd.get_rng_state().numpy()))
    np.testing.assert_array_equal(retrograd.rand(30).numpy(), torch.rand(30).numpy())


def test_seeds_read_back_as_torch():
    for seed in (0, 7, 2**40 + 3, -1):
        assert retrograd.manual_seed(seed).initial_seed() == torch.manual_seed(seed).initial_seed()
        assert retrograd.initial_seed() == torch.initial_seed()
    assert retrograd.Generator().initial_seed() == torch.Generator().initial_seed() == 67280421310721
    drawn = retrograd.seed()
    assert retrograd.initial_seed() == drawn and 0 <= drawn < 2**64


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rrelu_draws_torchs_slopes(dtype):
    """One float64 uniform per non-positive element, even with lower == upper (the stream moves on as torch's)."""
    data = np.random.default_rng(0).standard_normal(300).astype(dtype)
    assert_same(3, lambda lib: [lib.nn.functional.rrelu(lib.tensor(data), 0.1, 0.3, training=True),
                                lib.nn.functional.rrelu(lib.tensor(data), 0.2, 0.2, training=True), lib.rand(5)])


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_a_shuffling_data_loader_gives_torchs_batches(seed):
    """Each DataLoader iterator draws its workers' base seed, and a RandomSampler without a generator seeds a
    fresh one from the default generator, as torch's do; random_split and the samplers follow."""
    def batches(lib):
        data = lib.utils.data
        loader = data.DataLoader(data.TensorDataset(lib.arange(10)), batch_size=4, shuffle=True)
        epochs = [lib.cat([b[0] for b in loader]) for _ in range(2)]
        split = lib.tensor(data.random_split(range(10), [0.5, 0.5])[0].indices)
        with_replacement = lib.tensor(list(data.RandomSampler(range(10), replacement=True, num_samples=40)))
        return [*epochs, split, with_replacement, lib.tensor(list(data.SubsetRandomSampler([5, 6, 7]))), lib.rand(2)]

    assert_same(seed, batches)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_multinomial_is_torchs(dtype):
    """With replacement: a float64 uniform per sample searched in the cumulative sums; otherwise (and for one
    sample) the largest p / q for q ~ Exp(1). Categorical and WeightedRandomSampler draw through it."""
    probabilities = np.random.default_rng(1).random((3, 50)) ** 3

    def draw(lib):
        p = lib.tensor(probabilities, dtype=getattr(lib, dtype))
        return [lib.multinomial(p, 1), lib.multinomial(p, 1, True), lib.multinomial(p, 5), lib.multinomial(p, 20, True),
                lib.multinomial(p[0], 7, True), lib.distributions.Categorical(probs=p).sample((4,)),
                lib.tensor(list(lib.utils.data.WeightedRandomSampler([0.1, 0.5, 0.4], 9)))]

    assert_same(0, draw)


def test_multinomial_without_replacement_draws_its_noise_in_memory_order():
    """torch fills the Exp(1) noise like `empty_like(p)`, so a transposed p draws other numbers than a contiguous
    one; a row with fewer nonzero categories than samples is drawn all the same (torch's CPU kernel checks only the
    sums)."""
    probabilities = np.random.default_rng(2).random((6, 5))
    probabilities[1, 2] = 0  # drawn last by multinomial(p, 5) (torch's order of tied zeros is topk's: not tested)

    def draw(lib):
        p = lib.tensor(probabilities)
        return [lib.multinomial(p, 3), lib.multinomial(p.t().contiguous().t(), 3), lib.multinomial(p, 5),
                lib.multinomial(p, 1),
                lib.multinomial(p.t().contiguous().t(), 1), lib.multinomial(p.t().contiguous().t(), 4, True)]

    assert_same(0, draw)


@pytest.mark.parametrize("method", ["normal_", "uniform_", "bernoulli_", "random_", "exponential_"])
def test_a_strided_view_is_filled_in_memory_order(method):
    """torch's serial kernels walk a permuted view in memory order (and normal_ takes the scalar path)."""
    views = {(20, 30): lambda t: t.t(), (8, 10): lambda t: t[:, ::2], (3, 4, 5): lambda t: t.permute(2, 0, 1)}

    def fill(lib):
        bases = [lib.zeros(*shape) for shape in views]
        for base, view in zip(bases, views.values()):
            if method == "bernoulli_":
                bernoulli_number(lib, view(base))
            else:
                getattr(view(base), method)()
        return bases

    assert_same(0, fill, rtol=1e-6 if method == "exponential_" else 0.0)
    assert_same(1, lambda lib: lib.nn.init.kaiming_uniform_(lib.empty(30, 20).T))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gamma_dirichlet_and_beta_draws_are_torchs(seed, dtype):
    """_standard_gamma is ATen's sample_gamma (Marsaglia and Tsang's rejection, an alpha below 1 boosted by one
    uniform): a varying number of words per draw, after which the stream, the cached normal included, is still
    torch's. Dirichlet and Beta normalise float64 draws, as torch's _sample_dirichlet does."""
    alpha = [0.0, 1e-30, 1e-3, 0.3, 0.8, 1.0, 1.5, 2.5, 7.0, 150.0, -1.0, float("nan"), float("inf")]

    def draw(lib):
        dtype_ = getattr(lib, dtype)
        concentration = lib.tensor([[0.5, 2.0, 3.0], [4.0, 0.2, 1.0]], dtype=dtype_)
        return [lib._standard_gamma(lib.tensor(alpha, dtype=dtype_)), lib.randn(3, dtype=dtype_),
                lib._standard_gamma(lib.full((40,), 0.7, dtype=dtype_)), lib.rand(3, dtype=dtype_),
                lib.distributions.Gamma(lib.tensor([2.0, 0.5], dtype=dtype_), 3.0).sample((5,)),
                lib.distributions.Dirichlet(concentration).sample((4,)),
                lib.distributions.Beta(lib.tensor(0.8, dtype=dtype_), lib.tensor(0.8, dtype=dtype_)).sample((6,)),
                lib.distributions.Chi2(lib.tensor([3.0], dtype=dtype_)).sample((3,)), lib.randn(5, dtype=dtype_)]

    assert_same(seed, draw)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_poisson_draws_are_torchs(seed, dtype):
    """poisson is ATen's sample_poisson on each rate in turn: a product of double uniforms below rate 10, Hörmann's
    transformed rejection from it (an infinite rate gives INT64_MIN, as torch's cast); Poisson and NegativeBinomial
    sample through it, and the stream after them is still torch's."""
    rates = [0.0, 1e-3, 0.3, 2.0, 9.99, 10.0, 25.0, 1e3, 1e6, float("inf")]

    def draw(lib):
        dtype_ = getattr(lib, dtype)
        return [lib.poisson(lib.tensor(rates, dtype=dtype_)), lib.randn(3, dtype=dtype_),
                lib.poisson(lib.tensor([[3.0, 40.0], [0.5, 12.0]], dtype=dtype_).t()),
                lib.distributions.Poisson(lib.tensor([3.0, 30.0], dtype=dtype_)).sample((4,)),
                lib.distributions.NegativeBinomial(5, probs=lib.tensor([0.3, 0.6], dtype=dtype_)).sample((3,)),
                lib.rand(3, dtype=dtype_)]

    assert_same(seed, draw)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_binomial_draws_are_torchs(seed, dtype):
    """binomial is ATen's sample_binomial on each (count, prob) in turn: BTRS where count times the smaller of prob
    and 1 - prob is 10 or more, else inversion by geometric waiting times, the parameters' arithmetic in float32
    for float tensors; Binomial samples through it, and the stream after it is still torch's."""
    grid = np.random.default_rng(seed % 2**32)
    counts = np.concatenate([grid.integers(0, 60, 60), grid.integers(0, 5000, 20), grid.uniform(0, 100, 20),
                             [0, 1, 1e6, 50, 7, 2**24 + 3, 3e7]])  # fractional and beyond float32's whole numbers
    probs = np.concatenate([grid.uniform(0, 1, 100), [0.3, 1.0, 0.5, 0.0, 0.999, 0.4, 0.001]])

    def draw(lib):
        dtype_ = getattr(lib, dtype)
        return [lib.binomial(lib.tensor(counts, dtype=dtype_), lib.tensor(probs, dtype=dtype_)),
                lib.randn(3, dtype=dtype_),
                lib.distributions.Binomial(lib.tensor(20.0, dtype=dtype_),
                                           probs=lib.tensor([0.3, 0.7, 0.02], dtype=dtype_)).sample((5,)),
                lib.binomial(lib.tensor([3.0, 40.0], dtype=dtype_), lib.tensor(0.6, dtype=dtype_)),
                lib.rand(3, dtype=dtype_)]

    assert_same(seed, draw)


def test_binomial_errors_as_torch():
    for lib in (retrograd, torch):
        with pytest.raises(ValueError, match="^binomial only supports floating-point dtypes for prob, got: Long$"):
            lib.binomial(lib.tensor([3.0]), lib.tensor([1]))
        with pytest.raises(ValueError, match="^binomial only supports floating-point dtypes for count, got: Int$"):
            lib.binomial(lib.tensor([3], dtype=lib.int32), lib.tensor([0.5]))
        with pytest.raises(RuntimeError, match="^Found dtype Float but expected Half$"):
            lib.binomial(lib.tensor([3.0], dtype=lib.float16), lib.tensor([0.5]))
        with pytest.raises(NotImplementedError, match="^\"binomial_cpu\" not implemented for 'Half'$"):
            lib.binomial(*(lib.tensor([3.0], dtype=lib.float16),) * 2)


def test_poisson_errors_as_torch():
    """A negative or NaN rate raises torch's error part way, the draws of the rates before it taken."""
    def draw(lib):
        for rate in (-1.0, float("nan")):
            with pytest.raises(RuntimeError, match="^invalid Poisson rate, expected rate to be non-negative$"):
                lib.poisson(lib.tensor([4.0, 20.0, rate]))
        with pytest.raises(NotImplementedError, match="^\"poisson_cpu\" not implemented for 'Long'$"):
            lib.poisson(lib.tensor([1, 2]))
        return lib.rand(3)

    assert_same(0, draw)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cauchy_and_von_mises_draws_are_torchs(seed, dtype):
    """Cauchy (and HalfCauchy) samples by cauchy_, which takes a float64 uniform whatever the dtype; VonMises by
    torch's rejection rounds, in which a later round's accepted proposal replaces an earlier one; the stream after
    them is still torch's."""
    def draw(lib):
        D, dtype_ = lib.distributions, getattr(lib, dtype)
        loc, scale = lib.tensor([0.0, 1.0, -2.0], dtype=dtype_), lib.tensor([1.0, 2.0, 0.5], dtype=dtype_)
        return [D.Cauchy(loc, scale).rsample((4,)), D.HalfCauchy(scale).sample((2,)),
                D.VonMises(loc, lib.tensor([1.0, 2.0, 1e-6], dtype=dtype_)).sample((5,)), lib.rand(3, dtype=dtype_)]

    # tan and the float64 trigonometry of VonMises round as NumPy's libm does
    assert_same(seed, draw, rtol=1e-6 if dtype == "float32" else F64_ULPS)


@pytest.mark.parametrize("p", [0.3, 0.5])
def test_dropout_fills_its_mask_in_the_inputs_memory_order(p):
    """torch's dropout draws its mask into empty_like(input), which keeps a permuted input's layout (a broadcast dim
    stays where it is), filling it in memory order: on attention's batch-first output (a transposed view) the mask
    is torch's. torch's side draws the mask by bernoulli_ with a float64 p, the arithmetic of its generic path
    (Note [torch's CPU random streams]: on Intel CPUs torch's dropout takes MKL's stream instead)."""
    data = np.random.default_rng(0).standard_normal((4, 6, 5)).astype(np.float32)
    views = [lambda t: t.transpose(0, 1), lambda t: t.permute(2, 0, 1), lambda t: t[:, ::2],
             lambda t: t.transpose(0, 2)[::2], lambda t: t, lambda t: t[:1].expand(3, 6, 5),
             lambda t: t[:, :1].transpose(0, 2).expand(5, 6, 4)]

    def draw(lib):
        inputs = [view(lib.tensor(data)) for view in views]
        if lib is retrograd:
            return [lib.nn.functional.dropout(x, p) for x in inputs] + [lib.rand(3)]
        noises = [lib.empty_like(x).bernoulli_(lib.full(x.shape, 1 - p, dtype=lib.float64)).div_(1 - p)
                  for x in inputs]
        return [x * noise for x, noise in zip(inputs, noises)] + [lib.rand(3)]

    assert_same(0, draw)


@pytest.mark.parametrize("factory, dtype", [(factory, dtype) for factory in ("rand_like", "randn_like", "zeros_like",
                                                                          "full_like", "randint_like")
                                             for dtype in ("float32", "float64", "complex64")
                                             if (factory, dtype) != ("randint_like", "complex64")])  # none in torch
@pytest.mark.parametrize("layout", ["transposed", "permuted", "channels_last", "sliced", "expanded"])
def test_like_factories_keep_the_input_layout_and_torchs_draws(factory, layout, dtype):
    """The _like factories lay their tensor out as torch's empty_like does (preserve_format: a transposed or
    permuted dense input's strides, row-major otherwise), and draw into it in memory order, a normal draw into a
    non-contiguous tensor by the scalar sampler as torch's normal_ does; the draws after them stay torch's."""
    def run(lib):
        lib.manual_seed(3)
        base = lib.ones(2, 3, 4, 5, dtype=getattr(lib, dtype))
        x = {"transposed": base[0, 0].t(), "permuted": base.permute(3, 1, 0, 2),
             "channels_last": base.contiguous(memory_format=lib.channels_last), "sliced": base[:, :, ::2],
             "expanded": base[:1].expand(3, 3, 4, 5)}[layout]
        extra = {"randint_like": (7,), "full_like": (2.5,)}.get(factory, ())
        y = getattr(lib, factory)(x, *extra)
        return y.stride(), y.is_leaf, y.detach().numpy().copy(), lib.rand(3).numpy()

    ours, theirs = run(retrograd), run(torch)
    assert ours[:2] == theirs[:2]
    # normals take NumPy's float64 log, sin and cos, which may differ from glibc's by an ulp (the Note)
    rtol = (F64_ULPS if dtype == "float64" else 1e-6) if factory == "randn_like" else 0.0
    np.testing.assert_allclose(ours[2], theirs[2], rtol=rtol, atol=0)
    np.testing.assert_array_equal(ours[3], theirs[3])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sample_dirichlet_is_torchs(dtype):
    """torch._sample_dirichlet (torchvision's RandomMixup draws its mixing weight with it): torch's samples, the
    draws after it in step, no derivative (backward raises torch's error), and torch's refusal of other dtypes."""
    def run(lib):
        lib.manual_seed(7)
        alpha = lib.tensor([[0.2, 0.2, 1.5], [3.0, 0.5, 0.9]], dtype=getattr(lib, dtype), requires_grad=True)
        sample = lib._sample_dirichlet(alpha)
        with pytest.raises(RuntimeError) as refused:
            sample.sum().backward()
        with pytest.raises(NotImplementedError) as wrong_dtype:
            lib._sample_dirichlet(lib.ones(2, dtype=lib.int64))
        return sample.detach().numpy(), lib.rand(3).numpy(), str(refused.value), str(wrong_dtype.value)

    ours, theirs = run(retrograd), run(torch)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6 if dtype == "float32" else F64_ULPS)
    np.testing.assert_array_equal(ours[1], theirs[1])
    assert ours[2:] == theirs[2:]


@pytest.mark.parametrize("draw", [
    lambda lib: lib.randn(20000, dtype=lib.float64),  # blocks of 16: log(1 - u)
    lambda lib: lib.randn(200, 100, dtype=lib.float64).T.normal_(),  # strided: the scalar transform, log1p
    lambda lib: lib.empty(20000, dtype=lib.float64).exponential_(1.5),
    lambda lib: lib.empty(20000, dtype=lib.float64).log_normal_(0.5, 1.2),
    lambda lib: lib.empty(20000, dtype=lib.float64).cauchy_(),
    lambda lib: lib.empty(20000, dtype=lib.float64).geometric_(0.3),
], ids=["randn", "strided normal_", "exponential_", "log_normal_", "cauchy_", "geometric_"])
def test_float64_draws_are_torchs_bits_on_any_host(draw):
    """float64 samplers transform uniforms with the C library's log, log1p, exp and tan, as torch's do, not with
    NumPy's AVX-512 loops, which put a few percent of these draws an ulp away (Note [float64 draws through the C
    library])."""
    assert_same(7, draw)


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_gumbel_softmax_draws_torchs_noise(seed):
    """gumbel_softmax's noise is -log of exponential_ draws into empty_like(logits), as torch's: the same samples
    (soft and hard) from a seed, and the stream after them still torch's."""
    def draw(lib):
        logits = lib.randn(4, 7, dtype=lib.float64)
        soft = lib.nn.functional.gumbel_softmax(logits, tau=0.7)
        hard = lib.nn.functional.gumbel_softmax(logits.float().t(), tau=0.5, hard=True, dim=0)
        return [soft, hard, lib.rand(3)]

    assert_same(seed, draw, rtol=F64_ULPS * 8)
