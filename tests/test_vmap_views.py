"""Views and in-place writes of batched tensors under vmap, against torch 2.13: a batched tangent written
through a view lands in a view of its base's (batched) tangent (Note [tangents of views]), the new_*
factories and as_strided of a batched tensor are batched, and CopySlices' backward runs batched."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import retrograd


def batched_write_through_transposed_view(lib):
    fwAD = lib.autograd.forward_ad
    primal = lib.zeros(2, 2)
    view = lib.zeros(2, 2).transpose(0, 1)

    def jvp(tangent):
        with fwAD.dual_level():
            x = fwAD.make_dual(primal, tangent)
            view.copy_(x * 2)
            return fwAD.unpack_dual(view)[1], fwAD.unpack_dual(view._base)[1]

    view_tangent, base_tangent = lib._vmap_internals._vmap(jvp, 0, 0)(lib.arange(8.0).reshape(2, 2, 2))
    return view_tangent._base is base_tangent, view_tangent.tolist(), base_tangent.tolist()


def new_factories(lib):
    def f(g):
        made = (g.new_zeros(2, 3), g.new_ones((2,)), g.new_full((3,), 2.0), g.new_empty(size=(1,)),
                g.new_empty_strided((2, 3), (1, 2)))
        made[0].narrow(0, 0, 1).copy_(g[:3].unsqueeze(0))
        return made[:3] + (made[4].copy_(g[:6].reshape(2, 3)).as_strided((2,), (3,), 1),)

    return [t.tolist() for t in lib.vmap(f)(lib.arange(12.0).reshape(2, 6))]


def copy_of_a_plain_tensor_into_a_batched_one(lib):
    def f(g):
        scalar, row = g[0].clone(), g.clone()
        scalar.copy_(lib.zeros(()))
        row.copy_(lib.arange(3.0))
        return scalar, row

    return [t.tolist() for t in lib.vmap(f)(lib.ones(4, 3))]


INPLACE_VIEWS = {"transpose_": lambda y: y.transpose_(0, 1), "t_": lambda y: y.t_(),
                 "swapdims_": lambda y: y.swapdims_(0, 1), "squeeze_": lambda y: y.squeeze_(),
                 "squeeze_dim_": lambda y: y.squeeze_(0), "squeeze_dims_": lambda y: y.squeeze_((0, 1)),
                 "unsqueeze_": lambda y: y.unsqueeze_(0), "unsqueeze_last_": lambda y: y.unsqueeze_(-1)}


def inplace_views_of_batched_tensors(lib):
    """An in-place view op changes each example's shape: the batch (its physical tensor) becomes the view, for
    a clone made inside and for the vmapped input itself, with the batch at any dim."""
    seen = []
    for shape in ((4, 2, 3), (4, 1, 3), (4, 3, 1)):
        for fn in INPLACE_VIEWS.values():
            for in_dims in (0, 1, -1):
                x = lib.arange(24.0)[:math.prod(shape)].reshape(shape)
                if x.shape[in_dims] == 1:  # a batch of one: torch's squeeze_ rule squeezes the batch dim too
                    continue
                result, clone = lib.vmap(lambda x: (lambda y: (fn(y), y))(x.clone()), in_dims=in_dims)(x)
                seen.append((result.shape, clone.shape, result.tolist()))
            x = lib.arange(24.0)[:math.prod(shape)].reshape(shape)
            seen.append((lib.vmap(fn)(x).shape, x.shape))
    return seen


def inplace_views_under_grad(lib):
    w = lib.arange(6.0, dtype=lib.float64).reshape(3, 2)

    def f(x):
        y = x.clone()
        y.t_()
        y.unsqueeze_(0)
        y.squeeze_(0)
        return (y * w).sin().sum()

    x = lib.arange(30.0, dtype=lib.float64).reshape(5, 2, 3) / 10
    return np.round(lib.func.vmap(lib.func.grad(f))(x).numpy(), 9).tolist()


@pytest.mark.parametrize("scenario", [batched_write_through_transposed_view, new_factories,
                                      copy_of_a_plain_tensor_into_a_batched_one, inplace_views_of_batched_tensors,
                                      inplace_views_under_grad])
def test_same_as_torch(scenario):
    assert scenario(retrograd) == scenario(torch)


def test_batched_gradients_through_a_write_into_a_view():
    """gradcheck's batched check runs CopySlices' backward under vmap (copy, as_strided, copy_ back)."""
    a = retrograd.tensor(np.linspace(-1, 1, 16).reshape(4, 4))
    b = retrograd.tensor(np.linspace(0.5, 2, 8).reshape(4, 2), requires_grad=True)

    def func(root, b):
        x = root.clone()
        x.narrow(1, 2, 2).mul_(b)
        return x

    assert retrograd.autograd.gradcheck(func, (a, b), check_batched_grad=True)


def test_custom_function_returning_a_view_in_forward_mode():
    """A custom Function returning a view (its vjp writes into a view of new_zeros), checked batched."""

    class Narrow(retrograd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.size = x.size()
            return x.narrow(0, 0, 2)

        @staticmethod
        def vjp(ctx, grad):
            out = grad.new_zeros(ctx.size)
            out.narrow(0, 0, 2).copy_(grad)
            return out

        @staticmethod
        def jvp(ctx, tangent):
            return tangent.narrow(0, 0, 2)

    x = retrograd.tensor(np.linspace(-1, 1, 16).reshape(4, 4), requires_grad=True)
    assert retrograd.autograd.gradcheck(Narrow.apply, (x,), check_forward_ad=True, check_batched_grad=True,
                                        check_batched_forward_grad=False)  # torch refuses it too
