"""torch.optim.swa_utils (AveragedModel, SWALR, update_bn, the avg_fn factories), Optimizer step and state-dict
hooks (also the global step hooks), Module state-dict hooks and torch.func.functional_call against torch."""

import importlib

import numpy as np
import pytest
import torch

import retrograd

rng = np.random.default_rng(0)


def model(lib):
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.ReLU(), lib.nn.Linear(4, 2))


def copy_into(t_mod, r_mod):
    r_mod.load_state_dict({k: retrograd.tensor(v.detach().numpy()) for k, v in t_mod.state_dict().items()})


def close(r, t, atol=1e-6):
    np.testing.assert_allclose(np.asarray(r.detach().numpy()), np.asarray(t.detach().numpy()), atol=atol, rtol=1e-5)


def averaging_kwargs(lib, kind):
    utils = lib.optim.swa_utils
    return {"swa": {}, "ema_multi": dict(multi_avg_fn=utils.get_ema_multi_avg_fn(0.9)),
            "ema": dict(avg_fn=utils.get_ema_avg_fn(0.8)), "swa_multi": dict(multi_avg_fn=utils.get_swa_multi_avg_fn()),
            "ema_buffers": dict(multi_avg_fn=utils.get_ema_multi_avg_fn(0.7), use_buffers=True)}[kind]


@pytest.mark.parametrize("kind", ["swa", "ema_multi", "ema", "swa_multi", "ema_buffers"])
def test_averaged_model_follows_torch_through_training(kind):
    torch.manual_seed(0)
    t_net, r_net = model(torch), model(retrograd)
    copy_into(t_net, r_net)
    t_avg = torch.optim.swa_utils.AveragedModel(t_net, **averaging_kwargs(torch, kind))
    r_avg = retrograd.optim.swa_utils.AveragedModel(r_net, **averaging_kwargs(retrograd, kind))
    assert list(r_avg.state_dict()) == list(t_avg.state_dict())
    t_opt = torch.optim.SGD(t_net.parameters(), lr=0.1, momentum=0.9)
    r_opt = retrograd.optim.SGD(r_net.parameters(), lr=0.1, momentum=0.9)
    t_sched = torch.optim.swa_utils.SWALR(t_opt, swa_lr=0.05, anneal_epochs=2)
    r_sched = retrograd.optim.swa_utils.SWALR(r_opt, swa_lr=0.05, anneal_epochs=2)
    for _ in range(4):
        x, y = rng.standard_normal((8, 3)).astype(np.float32), rng.integers(0, 2, 8)
        for lib, net, opt, avg, sched in ((torch, t_net, t_opt, t_avg, t_sched),
                                          (retrograd, r_net, r_opt, r_avg, r_sched)):
            opt.zero_grad()
            lib.nn.functional.cross_entropy(net(lib.tensor(x)), lib.tensor(y)).backward()
            opt.step()
            avg.update_parameters(net)
            sched.step()
        assert r_sched.get_last_lr() == pytest.approx(t_sched.get_last_lr())
        for (key, r), (_, t) in zip(r_avg.state_dict().items(), t_avg.state_dict().items(), strict=True):
            assert str(r.dtype) == str(t.dtype), key
            close(r, t)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    t_avg.eval()
    r_avg.eval()
    close(r_avg(retrograd.tensor(x)), t_avg(torch.tensor(x)))


def test_update_bn_matches_torch():
    torch.manual_seed(0)
    t_net, r_net = model(torch), model(retrograd)
    copy_into(t_net, r_net)
    batches = [rng.standard_normal((6, 3)).astype(np.float32) for _ in range(3)]
    torch.optim.swa_utils.update_bn([(torch.tensor(b), 0) for b in batches], t_net.eval())
    retrograd.optim.swa_utils.update_bn([(retrograd.tensor(b), 0) for b in batches], r_net.eval())
    assert not r_net.training and r_net[1].momentum == t_net[1].momentum == 0.1
    for (key, r), (_, t) in zip(r_net.state_dict().items(), t_net.state_dict().items(), strict=True):
        close(r, t), key


@pytest.mark.parametrize(("swa_lr", "anneal_epochs", "strategy"), [(0.01, 3, "cos"), ([0.02, 0.5], 4, "linear"),
                                                                      (0.3, 0, "cos")])
def test_swalr_schedule_and_state_dict_match_torch(swa_lr, anneal_epochs, strategy):
    lrs = []
    for lib in (torch, retrograd):
        params = [lib.zeros(1, requires_grad=True), lib.zeros(1, requires_grad=True)]
        opt = lib.optim.SGD([{"params": params[:1]}, {"params": params[1:], "lr": 0.2}], lr=1.0)
        sched = lib.optim.swa_utils.SWALR(opt, swa_lr=swa_lr, anneal_epochs=anneal_epochs, anneal_strategy=strategy)
        seen = [sched.get_last_lr()]
        for _ in range(6):
            opt.step()
            sched.step()
            seen.append(sched.get_last_lr())
        state = sched.state_dict()
        assert "anneal_func" not in state and state["_anneal_strategy"] == strategy
        lrs.append(seen)
    assert np.allclose(lrs[0], lrs[1])


def test_swa_errors_match_torch():
    for lib in (torch, retrograd):
        utils = lib.optim.swa_utils
        opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=1.0)
        with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided. Please provide a value in \[0,1\]"):
            utils.get_ema_avg_fn(1.5)
        with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', instead got step"):
            utils.SWALR(opt, 0.1, anneal_strategy="step")
        with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0, got -1"):
            utils.SWALR(opt, 0.1, anneal_epochs=-1)
        with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn should be provided"):
            utils.AveragedModel(lib.nn.Linear(1, 1), avg_fn=utils.get_swa_avg_fn(),
                                multi_avg_fn=utils.get_swa_multi_avg_fn())


# ---- optimizer hooks ------------------------------------------------------------------------


def hook_trace(lib):
    calls = []
    param = lib.ones(2, requires_grad=True)
    opt = lib.optim.Adam([param], lr=0.1)
    optimizer_module = importlib.import_module(f"{lib.__name__}.optim.optimizer")
    handles = [
        optimizer_module.register_optimizer_step_pre_hook(lambda o, a, k: calls.append(("global pre", len(a)))),
        optimizer_module.register_optimizer_step_post_hook(lambda o, a, k: calls.append(("global post", len(a)))),
    ]
    opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", o is opt)))
    post = opt.register_step_post_hook(lambda o, a, k: calls.append(("post", param.tolist())))
    opt.register_state_dict_pre_hook(lambda o: calls.append("sd pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    opt.register_load_state_dict_pre_hook(lambda o, sd: calls.append(("load pre", sorted(sd))))
    opt.register_load_state_dict_post_hook(lambda o: calls.append("load post"), prepend=True)
    param.grad = lib.ones(2)
    opt.step()
    post.remove()
    opt.step()
    for handle in handles:
        handle.remove()
    opt.step()
    state = opt.state_dict()
    calls.append(sorted(state))
    opt.load_state_dict(state)
    return calls


def test_optimizer_hooks_match_torch():
    assert hook_trace(retrograd) == hook_trace(torch)


def test_step_pre_hook_can_replace_the_arguments():
    for lib in (torch, retrograd):
        param = lib.ones(1, requires_grad=True)
        opt = lib.optim.LBFGS([param])

        def closure():
            opt.zero_grad()
            loss = (param - 3).pow(2).sum()
            loss.backward()
            return loss

        opt.register_step_pre_hook(lambda o, args, kwargs: ((args[0],), {"closure": closure}))
        opt.step(None)
        assert abs(param.item() - 3) < 1e-4
        opt.register_step_pre_hook(lambda o, args, kwargs: "wrong")
        with pytest.raises(RuntimeError, match="must return None or a tuple of \\(new_args, new_kwargs\\)"):
            opt.step(closure)


# ---- module state-dict hooks ----------------------------------------------------------------


def module_hook_trace(lib):
    calls = []
    net = lib.nn.Sequential(lib.nn.Linear(2, 2))
    net[0].register_state_dict_pre_hook(lambda m, prefix, keep_vars: calls.append(("pre", prefix, keep_vars)))
    net.register_state_dict_post_hook(lambda m, sd, prefix, meta: calls.append(("post", sorted(sd))))

    def rename(module, state_dict, prefix, meta, strict, missing, unexpected, errors):
        if prefix + "w" in state_dict:
            state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")
        calls.append(("load pre", prefix, strict))

    net[0].register_load_state_dict_pre_hook(rename)
    def forgive(module, keys):
        calls.append(("load post", list(keys.missing_keys)))
        keys.missing_keys.clear()

    net.register_load_state_dict_post_hook(forgive)
    state = net.state_dict()
    state["0.w"] = state.pop("0.weight")
    del state["0.bias"]
    result = net.load_state_dict(state)
    calls.append(repr(result))
    return calls


def test_module_state_dict_hooks_match_torch():
    assert module_hook_trace(retrograd) == module_hook_trace(torch)


# ---- functional_call ------------------------------------------------------------------------


def test_functional_call_is_also_in_nn_utils_stateless_with_torch_warning():
    outs, messages = [], []
    for lib in (torch, retrograd):
        net = lib.nn.Linear(3, 2)
        with pytest.warns(FutureWarning) as record:
            out = lib.nn.utils.stateless.functional_call(net, {"weight": lib.zeros(2, 3), "bias": lib.ones(2)},
                                                         lib.ones(1, 3))
        outs.append(out)
        messages.append(str(record[0].message))
        assert net.weight.abs().sum().item() > 0  # its own weight is back
    close(outs[1], outs[0])
    assert messages[0] == messages[1]


def test_star_import_binds_swa_utils_as_torchs():
    """`from torch.optim import *` binds the swa_utils submodule, which torch lists in its __all__ (retrograd lacks
    only swap_in_optimizer_params_and_state, a tracing tool)."""
    assert "swa_utils" in retrograd.optim.__all__
    assert set(retrograd.optim.__all__) <= set(torch.optim.__all__)
    namespace = {}
    exec("from retrograd.optim import *", namespace)
    assert namespace["swa_utils"].AveragedModel is retrograd.optim.swa_utils.AveragedModel
