"""The saved outputs of multi-output ops against torch: each is named as torch names it (`_saved_indices`,
`_saved_L`, `_saved_result1`; derivatives.yaml's output names, result0/result1 where the schema names none), and
holds torch's value. Where a node saves something torch's does not, or the reverse, the difference is written out
per op (`missing`: torch's accessors ours lacks, `extra`: ours that torch's lacks), so any other change fails."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd

pytestmark = pytest.mark.filterwarnings("ignore:torch.triangular_solve is deprecated")
RNG = np.random.default_rng(7)
X = RNG.permutation(12).reshape(3, 4) / 4 - 1.3  # distinct values: no ties for sort, median, cummax, ...
SQUARE = np.array([[4.0, 1.0, -0.5], [0.3, 3.0, 0.7], [-0.2, 0.6, 2.5]])  # well away from singular
SPD = SQUARE @ SQUARE.T + np.eye(3)
RHS = np.array([[1.0, -2.0], [0.5, 0.25], [-1.5, 3.0]])
MODES = np.array([[1.0, 2.0, 2.0, 3.0], [0.5, 0.5, -1.0, 4.0]])  # one most frequent value per row
GRID = RNG.permutation(25).reshape(1, 1, 5, 5) / 7.0
CUBE = RNG.permutation(125).reshape(1, 1, 5, 5, 5) / 11.0


def arg(lib, array):
    return lib.tensor(array, dtype=lib.float64, requires_grad=True)


def samples(lib, d):
    return lib.tensor([[[0.3] * d]], dtype=lib.float64)  # fractional max pooling's window offsets, fixed


def case(name, fn, outputs, missing=(), extra=()):
    return pytest.param(fn, outputs, set(missing), set(extra), id=name)


CASES = [
    case("max.dim", lambda lib: lib.max(arg(lib, X), 1).values, ["indices"]),
    case("min.dim", lambda lib: lib.min(arg(lib, X), 1).values, ["indices"]),
    case("sort", lambda lib: lib.sort(arg(lib, X), 1).values, ["indices"]),
    case("sort.stable", lambda lib: lib.sort(arg(lib, X), dim=0, stable=True).values, ["indices"]),
    case("topk", lambda lib: lib.topk(arg(lib, X), 2, 1).values, ["indices"]),
    case("kthvalue", lambda lib: lib.kthvalue(arg(lib, X), 2, 1).values, ["indices"]),
    case("mode", lambda lib: lib.mode(arg(lib, MODES), 1).values, ["indices"]),
    case("median.dim", lambda lib: lib.median(arg(lib, X), 1).values, ["indices"]),
    case("nanmedian.dim", lambda lib: lib.nanmedian(arg(lib, X), 0).values, ["indices"]),
    # torch's cummaxmin_backward reads the input itself where ours reads only its shape
    case("cummax", lambda lib: lib.cummax(arg(lib, X), 1).values, ["indices"],
         missing={"_saved_self"}, extra={"_saved_self_sym_sizes"}),
    case("cummin", lambda lib: lib.cummin(arg(lib, X), 0).values, ["indices"],
         missing={"_saved_self"}, extra={"_saved_self_sym_sizes"}),
    case("aminmax", lambda lib: lib.aminmax(arg(lib, X), dim=1).min, ["min", "max"]),
    case("std_mean", lambda lib: lib.std_mean(arg(lib, X), 1)[0], ["result0"]),
    case("var_mean", lambda lib: lib.var_mean(arg(lib, X), 1)[0], []),
    case("frexp", lambda lib: lib.frexp(arg(lib, X)).mantissa, ["exponent"]),
    case("linalg.inv_ex", lambda lib: lib.linalg.inv_ex(arg(lib, SQUARE)).inverse, ["inverse"]),
    case("linalg.inv", lambda lib: lib.linalg.inv(arg(lib, SQUARE)), ["inverse"]),
    case("linalg.cholesky_ex", lambda lib: lib.linalg.cholesky_ex(arg(lib, SPD)).L, ["L"]),
    case("linalg.cholesky", lambda lib: lib.linalg.cholesky(arg(lib, SPD), upper=True), ["L"]),
    # torch's backward reuses the LU factors of its forward (_linalg_slogdet, _linalg_solve_ex); ours refactors
    case("linalg.slogdet", lambda lib: lib.linalg.slogdet(arg(lib, SQUARE)).logabsdet, ["sign"],
         missing={"_saved_LU", "_saved_pivots"}),
    case("linalg.solve_ex", lambda lib: lib.linalg.solve_ex(arg(lib, SQUARE), arg(lib, RHS)).result, ["result"],
         missing={"_saved_LU", "_saved_pivots"}, extra={"_saved_vector"}),
    case("linalg.solve", lambda lib: lib.linalg.solve(arg(lib, SQUARE), arg(lib, RHS[:, 0])), ["result"],
         missing={"_saved_LU", "_saved_pivots"}, extra={"_saved_vector"}),
    # torch's triangular_solve_backward is one call for both inputs that reads `self`; ours never needs it
    case("triangular_solve", lambda lib: lib.triangular_solve(arg(lib, RHS), arg(lib, np.triu(SQUARE))).solution,
         ["solution"], missing={"_saved_self"}),
    # torch's rows take a `pivot` flag; ours always pivots
    case("linalg.lu_factor_ex", lambda lib: lib.linalg.lu_factor_ex(arg(lib, SQUARE)).LU, ["LU", "pivots"],
         missing={"_saved_pivot"}),
    case("linalg.lu_factor", lambda lib: lib.linalg.lu_factor(arg(lib, SQUARE)).LU, ["LU", "pivots"],
         missing={"_saved_pivot"}),
    case("linalg.lu", lambda lib: lib.linalg.lu(arg(lib, SQUARE)).U, ["P", "L", "U"], missing={"_saved_pivot"}),
    case("linalg.qr", lambda lib: lib.linalg.qr(arg(lib, SQUARE)).R, ["Q", "R"]),
    # torch also saves S.size(-1) on its own; ours reads it off S
    case("linalg.svd", lambda lib: lib.linalg.svd(arg(lib, SQUARE)).S, ["U", "S", "Vh"],
         missing={"_saved_S_sym_argsize_minus_1"}),
    case("linalg.svdvals", lambda lib: lib.linalg.svdvals(arg(lib, SQUARE)), ["U", "S", "Vh"],
         missing={"_saved_S_sym_argsize_minus_1"}),
    case("linalg.eigh", lambda lib: lib.linalg.eigh(arg(lib, SPD)).eigenvalues, ["eigenvalues", "eigenvectors"]),
    case("linalg.eigvalsh", lambda lib: lib.linalg.eigvalsh(arg(lib, SPD)), ["eigenvalues", "eigenvectors"]),
    # torch keeps the input's dtype (real or complex) in a field it does not expose
    case("linalg.eig", lambda lib: lib.linalg.eig(arg(lib, np.triu(SQUARE) + 0.1)).eigenvalues,
         ["eigenvalues", "eigenvectors"], extra={"_saved_self_scalar_type"}),
    case("linalg.lstsq", lambda lib: lib.linalg.lstsq(arg(lib, SQUARE), arg(lib, RHS)).solution, ["solution"],
         extra={"_saved_vector"}),
    # ours saves the window geometry it computed (win, out) and the input's shape, torch the arguments and input
    case("max_pool2d", lambda lib: lib.nn.functional.max_pool2d(arg(lib, GRID), 2, return_indices=True)[0],
         ["result1"], missing={"_saved_ceil_mode", "_saved_dilation", "_saved_kernel_size", "_saved_padding",
                               "_saved_self", "_saved_stride"},
         extra={"_saved_out", "_saved_self_sym_sizes", "_saved_win"}),
    case("max_pool3d", lambda lib: lib.nn.functional.max_pool3d(arg(lib, CUBE), 2, 1, return_indices=True)[0],
         ["result1"], missing={"_saved_ceil_mode", "_saved_dilation", "_saved_kernel_size", "_saved_padding",
                               "_saved_self", "_saved_stride"},
         extra={"_saved_out", "_saved_self_sym_sizes", "_saved_win"}),
    case("adaptive_max_pool2d",
         lambda lib: lib.nn.functional.adaptive_max_pool2d(arg(lib, GRID), 3, return_indices=True)[0], ["result1"],
         missing={"_saved_self"}, extra={"_saved_out", "_saved_self_sym_sizes"}),
    case("fractional_max_pool2d",
         lambda lib: lib.nn.functional.fractional_max_pool2d(arg(lib, GRID), 2, output_size=3, return_indices=True,
                                                             _random_samples=samples(lib, 2))[0],
         ["result1"], missing={"_saved_kernel_size", "_saved_output_size", "_saved_self"},
         extra={"_saved_kernel", "_saved_self_sym_sizes"}),
    case("fractional_max_pool3d",
         lambda lib: lib.nn.functional.fractional_max_pool3d(arg(lib, CUBE), 2, output_size=3, return_indices=True,
                                                             _random_samples=samples(lib, 3))[0],
         ["result1"], missing={"_saved_kernel_size", "_saved_output_size", "_saved_self"},
         extra={"_saved_kernel", "_saved_self_sym_sizes"}),
    # torch's backward reads the norms (result1); ours recomputes them from v, and reads them only in its JVP
    case("_weight_norm_interface",
         lambda lib: lib._weight_norm_interface(arg(lib, X), arg(lib, np.ones((3, 1))), 0)[0], [],
         missing={"_saved_result1"}),
]


def accessors(node) -> set[str]:
    return {a for a in dir(node) if a.startswith("_saved_")}


@pytest.mark.parametrize(("fn", "outputs", "missing", "extra"), CASES)
def test_saved_accessors_are_torchs_but_for_the_differences_listed(fn, outputs, missing, extra):
    ours, theirs = fn(retrograd).grad_fn, fn(torch).grad_fn
    assert ours.name() == theirs.name()
    assert (accessors(theirs) - accessors(ours), accessors(ours) - accessors(theirs)) == (missing, extra)


def without_phase(vectors: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """`vectors` with each column turned by the unit factor that best aligns it with `reference`'s: singular and
    eigenvectors are defined only up to one (LAPACK builds may differ in the sign they pick)."""
    inner = (reference.conj() * vectors).sum(-2, keepdims=True)
    return vectors * (np.abs(inner) / inner).conj()


@pytest.mark.parametrize(("fn", "outputs", "missing", "extra"), CASES)
def test_named_saved_outputs_hold_torchs_values(fn, outputs, missing, extra):
    ours, theirs = fn(retrograd).grad_fn, fn(torch).grad_fn
    for name in outputs:
        mine, expected = getattr(ours, f"_saved_{name}"), getattr(theirs, f"_saved_{name}")
        assert f"_raw_saved_{name}" in dir(ours) and f"_raw_saved_{name}" in dir(theirs)
        assert str(mine.dtype) == str(expected.dtype), name
        mine, expected = mine.detach().numpy(), expected.detach().numpy()
        if name in ("eigenvectors", "U"):
            mine = without_phase(mine, expected)
        elif name == "Vh":
            mine = without_phase(mine.swapaxes(-1, -2), expected.swapaxes(-1, -2)).swapaxes(-1, -2)
        np.testing.assert_allclose(mine, expected, rtol=1e-10, atol=1e-12, err_msg=name)
