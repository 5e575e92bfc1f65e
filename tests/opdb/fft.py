"""Op database rows: torch.fft.

As in complex.py, the shared checks work on real tensors: a complex input is reached from real
(..., 2) arrays through view_as_complex and a complex result is brought back through view_as_real.
grad_fn names, dtypes and errors of the transforms themselves are in tests/test_fft.py.
"""

from __future__ import annotations

import numpy as np

from . import C, OpInfo, Sample, noncontig, rand


def transform(name, complex_input, complex_output):
    """A call of torch.fft.<name>: view_as_complex on the input, view_as_real on the result, as needed."""
    def call(m, x, **kwargs):
        out = getattr(m.fft, name)(m.view_as_complex(x) if complex_input else x, **kwargs)
        return m.view_as_real(out.resolve_conj()) if complex_output else out  # torch: conj is a lazy view
    return call


def one_dim_samples(complex_input):
    extra = (2,) if complex_input else ()

    def samples(rng):
        return [Sample((rand(rng, 6, *extra),), name="1d"),
                Sample((rand(rng, 3, 5, *extra),), {"n": 7, "dim": 0}, name="padded"),
                Sample((rand(rng, 4, 6, *extra),), {"n": 3, "norm": "ortho"}, name="trimmed"),
                Sample((noncontig(rand(rng, 5, 4)) if not complex_input else rand(rng, 5, 4, 2),),
                       {"norm": "forward"}, name="norm_forward")]
    return samples


def many_dim_samples(complex_input, two=False):
    extra = (2,) if complex_input else ()

    def samples(rng):
        out = [Sample((rand(rng, 3, 4, *extra),), name="2d"),
               Sample((rand(rng, 2, 3, 5, *extra),), {"s": (4, 3)}, name="resized"),
               Sample((rand(rng, 3, 4, 5, *extra),), {"dim": (0, 2), "norm": "ortho"}, name="dims")]
        if not two:
            out.append(Sample((rand(rng, 2, 3, 4, *extra),), {"norm": "forward"}, name="all_dims"))
        return out
    return samples


def rows(name, samples, complex_input, complex_output, real_alias=False):
    suffix = "_complex" if complex_input and real_alias else ""
    return OpInfo(f"fft.{name}", samples(complex_input), call=transform(name, complex_input, complex_output),
                  aliases=(f"{name}{suffix}",) if suffix else ())


def short_time(name, complex_input, complex_output):
    """A call of torch.<name> (stft, istft): view_as_complex on the input, view_as_real on the result, as needed."""
    def call(m, x, *args, **kwargs):
        out = getattr(m, name)(m.view_as_complex(x) if complex_input else x, *args, **kwargs)
        return m.view_as_real(out) if complex_output else out
    return call


def stft_samples(rng):
    window = C(0.5 - 0.5 * np.cos(2 * np.pi * np.arange(8) / 8))
    return [Sample((rand(rng, 40), 8), {"window": window, "return_complex": True}, name="hann"),
            Sample((rand(rng, 2, 30), 8), {"hop_length": 3, "win_length": 6, "center": False, "return_complex": True},
                   name="batched_short_window"),
            Sample((rand(rng, 24), 8), {"return_complex": True, "onesided": False, "normalized": True},
                   name="two_sided")]


def istft_samples(complex_output):
    def samples(rng):
        if complex_output:
            return [Sample((rand(rng, 6, 5, 2), 6), {"onesided": False, "return_complex": True, "hop_length": 2},
                           name="two_sided")]
        return [Sample((rand(rng, 5, 6, 2), 8), {"hop_length": 2}, name="onesided"),
                Sample((rand(rng, 2, 5, 4, 2), 8), {"center": False, "length": 18}, name="length")]
    return samples


OPS = [
    OpInfo("stft", stft_samples, call=short_time("stft", False, True)),
    OpInfo("stft", lambda rng: [Sample((rand(rng, 20, 2), 6), {"pad_mode": "constant"}, name="complex")],
           call=short_time("stft", True, True), aliases=("stft_complex",)),
    OpInfo("istft", istft_samples(False), call=short_time("istft", True, False)),
    OpInfo("istft", istft_samples(True), call=short_time("istft", True, True), aliases=("istft_complex",)),
    # c2c on complex input, r2c (full or one-sided) on real input
    *(rows(n, one_dim_samples, c, True, real_alias=True) for n in ("fft", "ifft") for c in (False, True)),
    rows("rfft", one_dim_samples, False, True),
    rows("ihfft", one_dim_samples, False, True),
    rows("irfft", one_dim_samples, True, False),
    rows("hfft", one_dim_samples, True, False),
    *(rows(n, lambda c, two=n.endswith("2"): many_dim_samples(c, two), c, True, real_alias=True)
      for n in ("fft2", "ifft2", "fftn", "ifftn") for c in (False, True)),
    *(rows(n, lambda c, two=n.endswith("2"): many_dim_samples(c, two), False, True) for n in ("rfft2", "rfftn",
                                                                                           "ihfft2", "ihfftn")),
    *(rows(n, lambda c, two=n.endswith("2"): many_dim_samples(c, two), True, False) for n in ("irfft2", "irfftn",
                                                                                          "hfft2", "hfftn")),
    *(OpInfo(f"fft.{n}", lambda rng: [Sample((rand(rng, 5, 4),), name="all_dims"),
                                      Sample((rand(rng, 5, 4),), {"dim": 0}, name="dim"),
                                      Sample((rand(rng, 3, 4, 5),), {"dim": (0, 2)}, name="dims")])
      for n in ("fftshift", "ifftshift")),
    *(OpInfo(f"fft.{n}", lambda rng: [Sample((5,), name="odd"), Sample((8, 0.25), name="spacing")],
             call=lambda m, n, d=1.0, name=n: getattr(m.fft, name)(n, d, dtype=m.float64), differentiable=False)
      for n in ("fftfreq", "rfftfreq")),
]
