"""A state dict's `_metadata` (each module's `_version`) and torch's `_load_from_state_dict` signature: what a module
overrides to convert checkpoints of its older versions, as real programs do when they rename a layer."""

import io
from collections import OrderedDict

import numpy as np
import pytest
import torch

import retrograd

LIBS = (torch, retrograd)


def _migrating_block(lib):
    """A module at version 2 whose version-1 checkpoints named its layer `fc` (the idiom of torch's own modules)."""

    class Block(lib.nn.Module):
        _version = 2

        def __init__(self):
            super().__init__()
            self.proj = lib.nn.Linear(2, 2)

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                  error_msgs):
            self.seen = local_metadata.get("version")
            if self.seen is None or self.seen < 2:
                for key in list(state_dict):
                    if key.startswith(prefix + "fc."):
                        state_dict[prefix + "proj." + key[len(prefix + "fc."):]] = state_dict.pop(key)
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                          error_msgs)

    return lib.nn.Sequential(Block(), lib.nn.BatchNorm1d(2))


def test_a_module_converts_an_old_checkpoint_by_its_version():
    results = []
    for lib in LIBS:
        net = _migrating_block(lib)
        old = {"0.fc.weight": lib.full((2, 2), 3.0), "0.fc.bias": lib.zeros(2), **{
            k: v for k, v in net.state_dict().items() if k.startswith("1.")}}
        loaded = net.load_state_dict(old)
        from_old = (str(loaded), net[0].seen, net[0].proj.weight.sum().item())
        current = net.state_dict()
        loaded = net.load_state_dict(current)
        results.append((from_old, str(loaded), net[0].seen, dict(current._metadata)))
    assert results[0] == results[1]
    assert results[1][3] == {"": {"version": 1}, "0": {"version": 2}, "0.proj": {"version": 1}, "1": {"version": 2}}


def test_metadata_survives_save_and_load_in_both_libraries():
    """A checkpoint written by either library carries its metadata to the other's load."""
    for saver in LIBS:
        net = saver.nn.Sequential(saver.nn.utils.spectral_norm(saver.nn.Linear(3, 2)), saver.nn.BatchNorm1d(2))
        buffer = io.BytesIO()
        saver.save(net.state_dict(), buffer)
        for loader in LIBS:
            buffer.seek(0)
            loaded = loader.load(buffer)
            assert dict(loaded._metadata) == {"": {"version": 1}, "1": {"version": 2},
                                              "0": {"version": 1, "spectral_norm": {"weight.version": 1}}}


@pytest.mark.parametrize("with_metadata", [True, False])
def test_batch_norm_adds_its_counter_only_to_checkpoints_older_than_version_2(with_metadata):
    """torch's BatchNorm fills in num_batches_tracked for a checkpoint without a version (a plain dict) or of
    version 1; from version 2 a missing counter is a missing key."""
    outcomes = []
    for lib in LIBS:
        norm = lib.nn.BatchNorm1d(3)
        state = norm.state_dict() if with_metadata else dict(norm.state_dict())
        del state["num_batches_tracked"]
        try:
            outcomes.append(str(norm.load_state_dict(state)))
        except RuntimeError as error:
            outcomes.append(str(error))
    assert outcomes[0] == outcomes[1]
    assert ("Missing key" in outcomes[1]) == with_metadata


def test_assign_reaches_load_from_state_dict_through_the_metadata():
    for lib in LIBS:
        seen = []

        class Probe(lib.nn.Linear):
            def _load_from_state_dict(self, state_dict, prefix, local_metadata, *rest):
                seen.append(local_metadata.get("assign_to_params_buffers"))
                super()._load_from_state_dict(state_dict, prefix, local_metadata, *rest)

        probe = Probe(2, 2)
        probe.load_state_dict({"weight": lib.ones(2, 2), "bias": lib.zeros(2)}, assign=True)
        assert seen == [True] and probe.weight.sum().item() == 4.0


def _version_0_checkpoint():
    """A legacy spectral_norm checkpoint of version 0, made with torch: the normalised weight kept, no weight_v."""
    torch.manual_seed(0)
    layer = torch.nn.utils.spectral_norm(torch.nn.Linear(3, 4))
    for _ in range(3):
        layer(torch.randn(2, 3))
    state = layer.state_dict()
    entries = {k: v.numpy() for k, v in state.items() if k != "weight_v"}
    entries["weight"] = layer.weight.detach().numpy().copy()
    return entries, {k: dict(v) for k, v in state._metadata.items()}


@pytest.mark.parametrize("drop", [None, "weight_u"])
def test_legacy_spectral_norm_converts_a_version_0_checkpoint_as_torch(drop):
    """torch solves for the weight_v that reproduces the saved normalised weight; with a key absent it reports the
    keys it needed as missing."""
    entries, metadata = _version_0_checkpoint()
    metadata[""]["spectral_norm"] = {"weight.version": 0}
    results = []
    for lib in LIBS:
        state = OrderedDict((k, lib.tensor(v)) for k, v in entries.items() if k != drop)
        state._metadata = metadata
        layer = lib.nn.utils.spectral_norm(lib.nn.Linear(3, 4))
        loaded = str(layer.load_state_dict(state, strict=False))
        results.append((loaded, layer.weight_v.detach().numpy() if drop is None else None))
    assert results[0][0] == results[1][0]
    if drop is None:
        assert results[1][0] == "<All keys matched successfully>"
        np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5, atol=1e-6)


def test_remove_spectral_norm_also_drops_its_load_hook():
    """A deliberate difference (README, Limits): torch's remove_spectral_norm misses its load pre-hook (wrapped, so
    not found), which then refuses the plain layer's own state dict; retrograd removes it."""
    outcomes = []
    for lib in LIBS:
        layer = lib.nn.utils.remove_spectral_norm(lib.nn.utils.spectral_norm(lib.nn.Linear(3, 4)))
        try:
            outcomes.append(str(layer.load_state_dict(layer.state_dict())))
        except RuntimeError as error:
            outcomes.append(str(error))
    assert 'Missing key(s) in state_dict: "weight_orig", "weight_u"' in outcomes[0]
    assert outcomes[1] == "<All keys matched successfully>"
