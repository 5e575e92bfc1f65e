"""Anomaly detection against torch: the warning with the forward traceback, the NaN error naming
the node, failures inside backward, check_nan, and the mode switches."""

from __future__ import annotations

import os
import warnings

import pytest
import torch

import retrograd


def run(lib, fn):
    """(exception type and text or 'ok', the anomaly-related warnings) of fn(lib)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn(lib)
            result = ("ok",)
        except Exception as e:  # noqa: BLE001 - compared with torch's
            result = (type(e).__name__, str(e))
    return result, [str(w.message) for w in caught if "Anomaly" in str(w.message) or "Error detected" in str(w.message)]


def sqrt_of_negative(lib):
    x = lib.tensor([-1.0, 4.0], requires_grad=True)
    with lib.autograd.detect_anomaly():
        y = x.sqrt()  # the forward call the warning must show
        y.sum().backward()


def test_nan_names_the_node_after_the_forward_traceback():
    ours, theirs = run(retrograd, sqrt_of_negative), run(torch, sqrt_of_negative)
    assert ours[0] == theirs[0] == ("RuntimeError", "Function 'SqrtBackward0' returned nan values in its 0th output.")
    assert ours[1][0] == theirs[1][0]  # "Anomaly Detection has been enabled. ..."
    warning = ours[1][1]
    assert warning.startswith("Error detected in SqrtBackward0. Traceback of forward call that caused the error:\n")
    assert "y = x.sqrt()  # the forward call the warning must show" in warning
    package = os.path.dirname(retrograd.__file__) + os.sep
    assert package not in warning  # only the caller's frames, as torch shows, whatever the clone's folder is named


def documentation_example(lib):
    """torch.autograd.detect_anomaly's docstring: an error raised inside a custom backward."""

    class MyFunc(lib.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.clone()

        @staticmethod
        def backward(ctx, g):
            raise RuntimeError("Some error in backward")

    def run_fn(a):
        out = MyFunc.apply(a)
        return out.sum()

    with lib.autograd.detect_anomaly():
        inp = lib.rand(10, 10, requires_grad=True)
        out = run_fn(inp)
        out.backward()


def test_error_in_backward_shows_where_the_node_was_created():
    ours, theirs = run(retrograd, documentation_example), run(torch, documentation_example)
    assert ours[0] == theirs[0] == ("RuntimeError", "Some error in backward")
    assert ours[1][1].startswith("Error detected in MyFuncBackward. Traceback of forward call that caused the error:")
    assert "out = MyFunc.apply(a)" in ours[1][1] and "out = run_fn(inp)" in ours[1][1]


def test_without_anomaly_mode_the_error_is_plain():
    def plain(lib):
        x = lib.tensor([-1.0, 4.0], requires_grad=True)
        x.sqrt().sum().backward()
        return x.grad

    ours, theirs = run(retrograd, plain), run(torch, plain)
    assert ours == theirs == (("ok",), [])


def test_check_nan_false_lets_nan_through():
    def scenario(lib):
        x = lib.tensor([-1.0, 4.0], requires_grad=True)
        with lib.autograd.detect_anomaly(check_nan=False):
            x.sqrt().sum().backward()
        assert bool(x.grad.isnan()[0])

    ours, theirs = run(retrograd, scenario), run(torch, scenario)
    assert ours[0] == theirs[0] == ("ok",)


def test_mode_switches():
    def scenario(lib):
        states = [lib.is_anomaly_enabled()]
        with lib.autograd.set_detect_anomaly(True, check_nan=False):
            states += [lib.is_anomaly_enabled(),
                       lib.is_anomaly_check_nan_enabled()]
        states.append(lib.is_anomaly_enabled())
        lib.autograd.set_detect_anomaly(True)
        states.append(lib.is_anomaly_enabled())
        lib.autograd.set_detect_anomaly(False)
        states.append(lib.is_anomaly_enabled())
        return states

    assert scenario(retrograd) == scenario(torch) == [False, True, False, False, True, False]


def test_off_records_nothing():
    x = retrograd.tensor([1.0, 2.0], requires_grad=True)
    assert x.exp().grad_fn._trace is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with retrograd.autograd.detect_anomaly():
            assert x.exp().grad_fn._trace


def test_nan_in_a_batched_backward_is_reported():
    x = retrograd.tensor([-1.0, 4.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with retrograd.autograd.detect_anomaly(), pytest.raises(RuntimeError, match="SqrtBackward0"):
            retrograd.autograd.grad(x.sqrt(), x, retrograd.eye(2), is_grads_batched=True)
