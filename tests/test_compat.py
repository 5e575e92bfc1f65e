"""The compatibility runner's own parts (tests/compat): stand-ins that are never lenient, the scope rule, and the
strict expected-failure check. The stand-ins are checked under torch here and under retrograd in a subprocess
(torch mapped to retrograd, as the runner maps it), with wrong values, dtypes, shapes and a wrong backward."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import unittest

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
COMPAT = os.path.join(HERE, "compat")
sys.path.insert(0, COMPAT)

import scope  # noqa: E402
from standins.common_device_type import dtypes, instantiate_device_type_tests  # noqa: E402
from standins.common_utils import TestCase, gradcheck, instantiate_parametrized_tests, parametrize, subtest  # noqa: E402

sys.path.remove(COMPAT)


def _fails(fn) -> bool:
    try:
        fn()
    except AssertionError:
        return True
    return False


def check_standins() -> None:
    """Every assertion below holds with a strict assertEqual and gradcheck, whichever library `torch` is."""
    case = TestCase()
    eq = case.assertEqual
    a = torch.tensor([1.0, 2.0, 3.0])
    eq(a, torch.tensor([1.0, 2.0, 3.0]))
    eq(a, torch.tensor([1.0, 2.0, 3.0 + 1e-7]))  # within float32's rtol
    eq(torch.tensor(2.0), 2.0)
    eq([a, None, (1, "x")], [a.clone(), None, (1, "x")])
    eq(torch.tensor([float("nan")]), torch.tensor([float("nan")]))
    eq(a, a.double(), exact_dtype=False)
    wrong = [
        lambda: eq(a, torch.tensor([1.0, 2.0, 3.001])),                       # value
        lambda: eq(a, a.double()),                                            # dtype
        lambda: eq(a, a.reshape(1, 3)),                                       # shape
        lambda: eq(a.double(), a.double() * (1 + 1e-6)),                      # float64's tighter rtol
        lambda: eq(torch.tensor([1, 2]), torch.tensor([1, 3])),               # integers exactly
        lambda: eq(torch.tensor([True]), torch.tensor([False])),
        lambda: eq(a, 1.0),                                                   # many elements vs a number
        lambda: eq(torch.tensor(2.0), 2.001),
        lambda: eq(a, None),
        lambda: eq([a, a], [a]),                                              # lengths
        lambda: eq([a, (1, 2)], [a, (1, 3)]),                                 # nested
        lambda: eq({"x": a}, {"x": a + 1}),
        lambda: eq(torch.tensor([float("nan")]), torch.tensor([1.0])),
        lambda: eq(torch.tensor([1 + 1j]), torch.tensor([1 - 1j])),           # complex
        lambda: eq("abc", "abd"),
        lambda: eq(True, 1),
        lambda: case.assertNotEqual(a, a.clone()),
    ]
    lenient = [i for i, fn in enumerate(wrong) if not _fails(fn)]
    assert not lenient, f"assertEqual accepted wrong case(s) {lenient}"

    class Doubled(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, wrong):
            ctx.save_for_backward(x)
            ctx.wrong = wrong
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x * (3 if ctx.wrong else 2), None

    x = torch.tensor([0.5, -1.5, 2.0], dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda t: Doubled.apply(t, False), (x,))
    try:
        gradcheck(lambda t: Doubled.apply(t, True), (x,))
    except RuntimeError as error:
        assert "Jacobian mismatch" in str(error)
    else:
        raise AssertionError("gradcheck accepted a wrong backward")


def test_standins_are_strict_under_torch():
    check_standins()


def test_standins_are_strict_under_retrograd():
    code = ("import sys; import retrograd.run; retrograd.run.install(); "
            f"sys.path[:0] = [{COMPAT!r}, {HERE!r}]; import test_compat, torch; assert torch.__name__ == 'retrograd'; "
            "test_compat.check_standins(); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "ok", out.stderr[-3000:]


def test_parametrize_and_device_names_as_torch_names_them():
    class Parametrized(TestCase):
        @parametrize("flag", [True, False])
        @parametrize("fn", [subtest(abs, name="absolute"), max])
        def test_p(self, flag, fn):
            assert flag in (True, False) and fn in (abs, max)

    class Generic(TestCase):
        @parametrize("flag", [True])
        def test_p(self, device, flag):
            assert device == "cpu" and flag

        @dtypes(torch.float32, torch.float64)
        def test_d(self, device, dtype):
            assert device == "cpu" and dtype in (torch.float32, torch.float64)

    instantiate_parametrized_tests(Parametrized)
    namespace = {"Generic": Generic}
    instantiate_device_type_tests(Generic, namespace)
    classes = (Parametrized, namespace["GenericCPU"])
    names = {cls: sorted(unittest.TestLoader().getTestCaseNames(cls)) for cls in classes}
    assert names[Parametrized] == ["test_p_flag_False_absolute", "test_p_flag_False_fn1", "test_p_flag_True_absolute",
                                   "test_p_flag_True_fn1"]
    assert names[namespace["GenericCPU"]] == ["test_d_cpu_float32", "test_d_cpu_float64", "test_p_flag_True_cpu"]
    assert "Generic" not in namespace
    for cls in names:
        result = unittest.TestResult()
        unittest.TestLoader().loadTestsFromTestCase(cls).run(result)
        assert result.wasSuccessful() and result.testsRun == len(names[cls]), result.errors


def test_scope_is_read_from_what_a_test_touches():
    def test_on_gpu(self):
        torch.ones(2).cuda()

    def test_plain(self):
        torch.ones(2).sum()

    def test_profiled(self):
        with torch.autograd.profiler.profile():
            pass

    def test_nvtx(self):
        with torch.autograd.profiler.emit_nvtx():
            pass

    def test_engine_names(self):
        assert torch._C._current_graph_task_id() == -1 and torch._C._functions.AccumulateGrad

    def test_dispatcher(self):
        torch._C._set_dispatch_mode(None)

    assert scope.category_of(test_on_gpu) == "accelerators"
    assert scope.category_of(test_nvtx) == "external profilers"
    assert scope.category_of(test_dispatcher) == "dispatcher and tensor subclasses"
    for in_scope in (test_plain, test_profiled, test_engine_names):
        assert scope.category_of(in_scope) is None
    assert all(reason for _, reason, _ in scope.CATEGORIES)


@pytest.fixture
def compat_main():
    sys.path.insert(0, HERE)
    try:
        yield importlib.import_module("compat.__main__")
    finally:
        sys.path.remove(HERE)


def test_expected_failure_list_is_strict_both_ways(compat_main):
    def outcome(status, scope_name=None):
        return {"status": status, "scope": scope_name, "message": "boom"}

    out_of_scope = outcome("out of scope", "profiler")
    results = {"torch": {"tests": {"f::C::a": outcome("pass"), "f::C::b": outcome("pass"),
                                   "f::C::c": outcome("fail"), "f::C::d": out_of_scope}},
               "retrograd": {"tests": {"f::C::a": outcome("pass"), "f::C::b": outcome("fail"),
                                       "f::C::c": outcome("fail"), "f::C::d": out_of_scope}}}
    assert compat_main.check(results, {"f::C::b": "why"}) == []
    assert compat_main.check(results, {}) == ["fails and is not listed: f::C::b\n    boom"]
    assert compat_main.check(results, {"f::C::b": "", "f::C::a": ""}) == ["listed but passes: f::C::a"]
    assert compat_main.check(results, {"f::C::b": "", "f::C::c": ""}) == [
        "listed but not an in-scope test that passes under torch: f::C::c"]
    table = compat_main.table(results)
    assert "retrograd passes 1 of the 2 in-scope tests that pass under torch (50%)" in table
