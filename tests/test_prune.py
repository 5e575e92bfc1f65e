"""torch.nn.utils.prune against torch 2.13: each method's mask on the same weights and seeds, what pruning leaves on
the module (parameters, buffers, the pre-hook), gradients through the mask, repeated pruning, remove, and errors."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch

import retrograd

LIBS = (torch, retrograd)


def prune_of(lib):
    return importlib.import_module(f"{lib.__name__}.nn.utils.prune")


def model(lib):
    """A conv and a linear layer with the same weights under both libraries."""
    rng = np.random.default_rng(0)
    conv, linear = lib.nn.Conv2d(3, 4, 3), lib.nn.Linear(6, 5)
    with lib.no_grad():
        for module in (conv, linear):
            for p in module.parameters():
                p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)), dtype=lib.float32))
    return conv, linear


def facts(lib, conv, linear):
    """What pruning left: parameter and buffer names and values, the pruned tensors, and a gradient through them."""
    x = lib.tensor(np.random.default_rng(1).standard_normal((2, 3, 5, 5)), dtype=lib.float32)
    y = linear(conv(x).mean(dim=(2, 3)).repeat(1, 2)[:, :6]).sum()
    y.backward()
    out = [prune_of(lib).is_pruned(conv), prune_of(lib).is_pruned(linear), round(y.item(), 4)]
    for module in (conv, linear):
        out.append(sorted((n, np.round(p.detach().numpy(), 5).tolist()) for n, p in module.named_parameters()))
        out.append(sorted((n, b.numpy().tolist()) for n, b in module.named_buffers()))
        out.append(np.round(module.weight.detach().numpy(), 5).tolist())
        out.append(sorted((n, np.round(p.grad.numpy(), 4).tolist()) for n, p in module.named_parameters()))
        out.append(len(module._forward_pre_hooks))
    return out


def run(lib, steps):
    lib.manual_seed(0)
    conv, linear = model(lib)
    prune = prune_of(lib)
    for step in steps:
        step(lib, prune, conv, linear)
    return facts(lib, conv, linear)


CASES = {
    "l1 unstructured": [lambda lib, p, c, m: p.l1_unstructured(c, "weight", amount=0.3)],
    "l1 by count and importance": [
        lambda lib, p, c, m: p.l1_unstructured(m, "weight", amount=7, importance_scores=m.weight.detach() ** 3)],
    "random unstructured": [lambda lib, p, c, m: p.random_unstructured(m, "bias", amount=0.4)],
    "ln structured": [lambda lib, p, c, m: p.ln_structured(c, "weight", amount=0.5, n=2, dim=0)],
    "ln structured, inf norm, last dim": [lambda lib, p, c, m: p.ln_structured(m, "weight", amount=2, n=float("inf"),
                                                                               dim=-1)],
    "random structured": [lambda lib, p, c, m: p.random_structured(c, "weight", amount=1, dim=1)],
    "custom mask": [lambda lib, p, c, m: p.custom_from_mask(m, "bias", mask=lib.tensor([1.0, 0, 1, 0, 1]))],
    "identity": [lambda lib, p, c, m: p.identity(c, "bias")],
    "pruned twice (a container)": [lambda lib, p, c, m: p.l1_unstructured(c, "weight", amount=0.2),
                                   lambda lib, p, c, m: p.ln_structured(c, "weight", amount=1, n=1, dim=0),
                                   lambda lib, p, c, m: p.random_unstructured(c, "weight", amount=0.1)],
    "removed": [lambda lib, p, c, m: p.l1_unstructured(m, "weight", amount=0.5),
                lambda lib, p, c, m: p.remove(m, "weight")],
    "global": [lambda lib, p, c, m: p.global_unstructured([(c, "weight"), (m, "weight"), (m, "bias")],
                                                          pruning_method=p.L1Unstructured, amount=0.25)],
    "global after a local pruning": [
        lambda lib, p, c, m: p.random_unstructured(m, "weight", amount=0.5),
        lambda lib, p, c, m: p.global_unstructured([(c, "weight"), (m, "weight")],
                                                   pruning_method=p.RandomUnstructured, amount=10)],
}


@pytest.mark.parametrize("case", CASES)
def test_pruning_matches_torch(case):
    assert run(retrograd, CASES[case]) == run(torch, CASES[case])


def test_a_pruned_models_state_dict_is_torchs():
    states = []
    for lib in LIBS:
        lib.manual_seed(0)
        conv, _ = model(lib)
        prune_of(lib).l1_unstructured(conv, "weight", amount=0.5)
        states.append({k: v.numpy().tolist() for k, v in conv.state_dict().items()})
    assert states[0] == states[1]


@pytest.mark.parametrize("call", [
    lambda lib, p, c, m: p.l1_unstructured(m, "weight", amount=1.5),
    lambda lib, p, c, m: p.l1_unstructured(m, "weight", amount=-1),
    lambda lib, p, c, m: p.l1_unstructured(m, "weight", amount="half"),
    lambda lib, p, c, m: p.l1_unstructured(m, "bias", amount=6),
    lambda lib, p, c, m: p.ln_structured(m, "bias", amount=1, n=2, dim=0),
    lambda lib, p, c, m: p.ln_structured(m, "weight", amount=1, n=2, dim=2),
    lambda lib, p, c, m: p.remove(m, "weight"),
    lambda lib, p, c, m: p.global_unstructured([(m, "weight")], pruning_method=p.LnStructured, amount=1, n=2),
    lambda lib, p, c, m: p.global_unstructured(5, pruning_method=p.L1Unstructured, amount=1),
    # torch reads the pairs more than once: a generator is spent by the first reading
    lambda lib, p, c, m: p.global_unstructured(((mod, "weight") for mod in (c, m)), pruning_method=p.L1Unstructured,
                                               amount=1),
    lambda lib, p, c, m: p.l1_unstructured(m, "weight", amount=1, importance_scores=lib.ones(3)),
    lambda lib, p, c, m: p.L1Unstructured(0.5).prune(lib.ones(4), importance_scores=lib.ones(3)),
    lambda lib, p, c, m: p.custom_from_mask(m, "weight", mask=lib.ones(3)),
    lambda lib, p, c, m: p.BasePruningMethod(),
    lambda lib, p, c, m: p.L1Unstructured(0.2).apply_mask(m),
    lambda lib, p, c, m: p.PruningContainer(p.L1Unstructured(0.1), p.L1Unstructured(0.2)),
])
def test_errors_are_torchs(call):
    raised = []
    for lib in LIBS:
        conv, linear = model(lib)
        with pytest.raises(Exception) as error:
            call(lib, prune_of(lib), conv, linear)
        message = str(error.value).replace(lib.__name__ + ".", "torch.")
        raised.append((error.type, message.split(" of module ")[0].split(" to PruningContainer")[0]))
    assert raised[0] == raised[1]


def test_a_failed_pruning_leaves_the_module_as_it_was():
    _, linear = model(retrograd)
    with pytest.raises(ValueError):
        prune_of(retrograd).l1_unstructured(linear, "bias", amount=6)
    assert sorted(n for n, _ in linear.named_parameters()) == ["bias", "weight"]
    assert not prune_of(retrograd).is_pruned(linear)


@pytest.mark.parametrize(("method", "patched"), [("random_unstructured", "rand_like"), ("random_structured", "rand")])
def test_random_pruning_draws_through_the_package_namespace(method, patched, monkeypatch):
    """torch's random methods call `torch.rand_like` / `torch.rand` at each pruning, so a program that replaces them
    (a mock, a replay of recorded draws) chooses the mask; retrograd's look theirs up the same way."""
    masks = []
    for lib in LIBS:
        draws = iter([0.9, 0.1, 0.8, 0.2, 0.7, 0.3])
        fixed = lambda *shape_or_tensor, lib=lib, draws=draws: lib.tensor(  # noqa: E731
            [next(draws) for _ in range(5)])
        monkeypatch.setattr(lib, patched, fixed)
        conv, linear = model(lib)
        if method == "random_unstructured":
            prune_of(lib).random_unstructured(linear, "bias", amount=2)
            masks.append(linear.bias_mask.tolist())
        else:
            prune_of(lib).random_structured(linear, "weight", amount=2, dim=0)
            masks.append(linear.weight_mask.tolist())
    assert masks[0] == masks[1]
    # the two largest draws (0.9, 0.8) prune entries 0 and 2; the two smallest (0.1, 0.2) prune rows 1 and 3
    kept = [0.0, 1.0, 0.0, 1.0, 1.0] if method == "random_unstructured" else [[float(row % 2 == 0)] * 6
                                                                              for row in range(5)]
    assert masks[0] == kept


def test_a_method_without_pruning_type_prunes_alone_but_not_after_another():
    """Neither BasePruningMethod nor PruningContainer has a PRUNING_TYPE in torch: a subclass that leaves it out
    prunes a tensor once, and pruning that tensor again fails on the missing attribute, with the earlier hook already
    taken off the module (torch's order), which retrograd's must match."""
    facts = []
    for lib in LIBS:
        prune = prune_of(lib)
        untyped = type("Untyped", (prune.BasePruningMethod,), {
            "compute_mask": lambda self, t, default_mask: default_mask * (t.abs() > 0.5)})
        _, linear = model(lib)
        untyped.apply(linear, "weight")
        first = (linear.weight_mask.tolist(), len(linear._forward_pre_hooks))
        with pytest.raises(AttributeError) as error:
            untyped.apply(linear, "weight")
        facts.append((first, str(error.value), len(linear._forward_pre_hooks),
                      sorted(n for n, _ in linear.named_parameters()), hasattr(prune.PruningContainer, "PRUNING_TYPE")))
    assert facts[0] == facts[1]


def test_the_hooks_attributes_are_torchs_in_torchs_order():
    """`vars(hook)` / `hook.__dict__`, which scripts print to see how a tensor was pruned: the same attributes,
    values and order for each method and for the container of a tensor pruned twice."""
    seen = []
    for lib in LIBS:
        prune = prune_of(lib)
        conv, linear = model(lib)
        prune.ln_structured(conv, "weight", amount=1, n=2, dim=0)
        prune.random_structured(conv, "weight", amount=1, dim=1)
        prune.l1_unstructured(linear, "bias", amount=2)
        prune.custom_from_mask(linear, "weight", mask=lib.ones(5, 6))
        hooks = [*conv._forward_pre_hooks.values(), *conv._forward_pre_hooks[next(iter(conv._forward_pre_hooks))],
                 *linear._forward_pre_hooks.values()]
        seen.append([(type(hook).__name__, [(k, v if k not in ("_pruning_methods", "mask") else len(v))
                                            for k, v in vars(hook).items()]) for hook in hooks])
    assert seen[0] == seen[1]
