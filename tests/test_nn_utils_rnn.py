"""torch.nn.utils.rnn against torch: padding, packing, unpacking, PackedSequence through RNN/LSTM/GRU.

Each case runs the same calls in both libraries on the same data and compares values, lengths, batch sizes,
indices, grad_fn names, errors and the gradients that flow back through packing and the recurrent layers.
"""

import numpy as np
import pytest
import torch
from torch.nn.utils import rnn as t_rnn

import retrograd
from retrograd.nn.utils import rnn as r_rnn

rng = np.random.default_rng(0)
LENGTHS = [2, 5, 1, 3]


def sequences(lengths, features=3, dtype=np.float64):
    return [rng.standard_normal((n, features)).astype(dtype) for n in lengths]


def leaves(lib, arrays):
    return [lib.tensor(a, requires_grad=True) for a in arrays]


def same(r, t, atol=1e-6):
    assert tuple(r.shape) == tuple(t.shape)
    assert str(r.dtype) == str(t.dtype)
    np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), atol=atol, rtol=1e-5)


def same_grads(r_leaves, t_leaves, atol=1e-6):
    for r, t in zip(r_leaves, t_leaves, strict=True):
        if t.grad is None:
            assert r.grad is None
        else:
            same(r.grad, t.grad, atol)


def weighted_sum(lib, out, seed=1):
    """A loss that weighs every element differently, so misplaced gradients show."""
    weights = np.random.default_rng(seed).standard_normal(tuple(out.shape)).astype(np.float64)
    return (out * lib.tensor(weights, dtype=out.dtype)).sum()


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_matches_torch(batch_first, padding_side):
    arrays = sequences(LENGTHS)
    r_in, t_in = leaves(retrograd, arrays), leaves(torch, arrays)
    r = r_rnn.pad_sequence(r_in, batch_first=batch_first, padding_value=-1.5, padding_side=padding_side)
    t = t_rnn.pad_sequence(t_in, batch_first=batch_first, padding_value=-1.5, padding_side=padding_side)
    same(r, t)
    assert type(r.grad_fn).__name__ == type(t.grad_fn).__name__ == "CopySlices"
    weighted_sum(retrograd, r).backward()
    weighted_sum(torch, t).backward()
    same_grads(r_in, t_in)


def test_pad_sequence_keeps_integer_dtype_and_trailing_dims():
    r = r_rnn.pad_sequence([retrograd.tensor([[1, 2]]), retrograd.tensor([[3, 4], [5, 6]])], batch_first=True)
    t = t_rnn.pad_sequence([torch.tensor([[1, 2]]), torch.tensor([[3, 4], [5, 6]])], batch_first=True)
    same(r, t)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths_as", ["list", "tensor"])
def test_pack_and_pad_round_trip_matches_torch(batch_first, lengths_as):
    arrays = sequences(LENGTHS)
    results = {}
    for lib, mod in ((retrograd, r_rnn), (torch, t_rnn)):
        inputs = leaves(lib, arrays)
        padded = mod.pad_sequence(inputs, batch_first=batch_first)
        lengths = LENGTHS if lengths_as == "list" else lib.tensor(LENGTHS, dtype=lib.int32)
        packed = mod.pack_padded_sequence(padded, lengths, batch_first=batch_first, enforce_sorted=False)
        out, out_lengths = mod.pad_packed_sequence(packed, batch_first=batch_first, padding_value=7.0,
                                                   total_length=6)
        weighted_sum(lib, out).backward()
        results[lib.__name__] = packed, out, out_lengths, inputs
    (r_pack, r_out, r_len, r_in), (t_pack, t_out, t_len, t_in) = results.values()
    same(r_pack.data, t_pack.data)
    assert type(r_pack.data.grad_fn).__name__ == "PackPaddedSequenceBackward0"
    for field in ("batch_sizes", "sorted_indices", "unsorted_indices"):
        same(getattr(r_pack, field), getattr(t_pack, field))
    same(r_out, t_out)
    same(r_len, t_len)
    assert type(r_out.grad_fn).__name__ == type(t_out.grad_fn).__name__
    same_grads(r_in, t_in)


def test_pack_sequence_sorted_and_unpack_matches_torch():
    arrays = sequences(sorted(LENGTHS, reverse=True))
    r_in, t_in = leaves(retrograd, arrays), leaves(torch, arrays)
    r, t = r_rnn.pack_sequence(r_in), t_rnn.pack_sequence(t_in)
    same(r.data, t.data)
    same(r.batch_sizes, t.batch_sizes)
    assert r.sorted_indices is None and r.unsorted_indices is None
    r_parts, t_parts = r_rnn.unpack_sequence(r), t_rnn.unpack_sequence(t)
    for a, b in zip(r_parts, t_parts, strict=True):
        same(a, b)
    sum(weighted_sum(retrograd, p, i) for i, p in enumerate(r_parts)).backward()
    sum(weighted_sum(torch, p, i) for i, p in enumerate(t_parts)).backward()
    same_grads(r_in, t_in)


def test_unpad_sequence_matches_torch():
    arrays = sequences(LENGTHS)
    r_pad = r_rnn.pad_sequence([retrograd.tensor(a) for a in arrays])
    t_pad = t_rnn.pad_sequence([torch.tensor(a) for a in arrays])
    r_parts = r_rnn.unpad_sequence(r_pad, retrograd.tensor(LENGTHS))
    t_parts = t_rnn.unpad_sequence(t_pad, torch.tensor(LENGTHS))
    for a, b in zip(r_parts, t_parts, strict=True):
        same(a, b)
    same(r_pad, t_pad)  # torch transposes a time-major input in place


def test_packing_gradients_pass_gradcheck_twice():
    x = retrograd.randn(4, 3, 2, dtype=retrograd.float64, requires_grad=True)

    def packed(x):
        return r_rnn.pack_padded_sequence(x, [4, 2, 1]).data

    assert retrograd.autograd.gradcheck(packed, (x,))
    assert retrograd.autograd.gradgradcheck(packed, (x,))


def test_packed_sequence_fields_and_to():
    packed = r_rnn.pack_sequence([retrograd.ones(2, 1), retrograd.ones(3, 1)], enforce_sorted=False)
    assert packed._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    double = packed.to(retrograd.float64)
    assert double.data.dtype == retrograd.float64 and double.batch_sizes is packed.batch_sizes
    assert packed.to(retrograd.float32) is packed
    assert packed.double().data.dtype == retrograd.float64
    data, batch_sizes, *_ = packed
    assert batch_sizes.tolist() == [2, 2, 1]


def errors(mod, lib):
    x = lib.zeros(3, 3, 2)
    calls = [
        lambda: mod.pack_padded_sequence(x, [2, 3, 1]),
        lambda: mod.pack_padded_sequence(x, [3, 2, 0]),
        lambda: mod.pack_padded_sequence(x, [3, 2]),
        lambda: mod.pack_padded_sequence(x, lib.tensor([[3, 2, 1]])),
        lambda: mod.pad_sequence([]),
        lambda: mod.pad_sequence([x], padding_side="middle"),
        lambda: mod.pad_sequence(3),
        lambda: mod.pad_packed_sequence(mod.pack_padded_sequence(x, [3, 2, 1]), total_length=2),
    ]
    found = []
    for call in calls:
        with pytest.raises(Exception) as info:
            call()
        found.append((info.type, str(info.value)))
    return found


def test_errors_match_torch():
    assert errors(r_rnn, retrograd) == errors(t_rnn, torch)


def copy_state(t_module, r_module):
    r_module.load_state_dict({k: retrograd.tensor(v.detach().numpy()) for k, v in t_module.state_dict().items()})


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("with_hx", [False, True])
def test_recurrent_layers_take_packed_sequences(kind, bidirectional, with_hx):
    torch.manual_seed(0)
    kwargs = dict(num_layers=2, bidirectional=bidirectional, batch_first=True)
    t_mod = getattr(torch.nn, kind)(3, 4, **kwargs).double()
    r_mod = getattr(retrograd.nn, kind)(3, 4, **kwargs).double()
    copy_state(t_mod, r_mod)
    arrays = sequences(LENGTHS)
    hx_shape = (2 * (2 if bidirectional else 1), len(LENGTHS), 4)
    hx_arrays = [rng.standard_normal(hx_shape) for _ in range(2 if kind == "LSTM" else 1)]
    results = []
    for lib, mod, module in ((retrograd, r_rnn, r_mod), (torch, t_rnn, t_mod)):
        inputs = leaves(lib, arrays)
        hx = leaves(lib, hx_arrays) if with_hx else []
        padded = mod.pad_sequence(inputs, batch_first=True)
        packed = mod.pack_padded_sequence(padded, LENGTHS, batch_first=True, enforce_sorted=False)
        given = (tuple(hx) if kind == "LSTM" else hx[0]) if with_hx else None
        out, hidden = module(packed, given)
        assert isinstance(out, mod.PackedSequence)
        padded_out, _ = mod.pad_packed_sequence(out, batch_first=True)
        hidden = hidden if kind == "LSTM" else (hidden,)
        loss = weighted_sum(lib, padded_out) + sum(weighted_sum(lib, h, 2 + i) for i, h in enumerate(hidden))
        loss.backward()
        results.append((out, padded_out, hidden, inputs + hx, list(module.parameters())))
    (r_out, r_pad, r_hidden, r_leaves, r_params), (t_out, t_pad, t_hidden, t_leaves, t_params) = results
    same(r_out.data, t_out.data)
    same(r_out.batch_sizes, t_out.batch_sizes)
    same(r_out.unsorted_indices, t_out.unsorted_indices)
    same(r_pad, t_pad)
    for r, t in zip(r_hidden, t_hidden, strict=True):
        same(r, t)
    same_grads(r_leaves, t_leaves)
    same_grads(r_params, t_params)


def test_packed_float32_lstm_matches_the_padded_run_per_sequence():
    lstm = retrograd.nn.LSTM(2, 3)
    seqs = [retrograd.randn(n, 2) for n in (4, 2)]
    out, (h, _) = lstm(r_rnn.pack_sequence(seqs))
    padded, lengths = r_rnn.pad_packed_sequence(out)
    for i, seq in enumerate(seqs):
        alone, (h_alone, _) = lstm(seq.unsqueeze(1))
        np.testing.assert_allclose(padded[:lengths[i], i].detach().numpy(), alone[:, 0].detach().numpy(), atol=1e-6)
        np.testing.assert_allclose(h[0, i].detach().numpy(), h_alone[0, 0].detach().numpy(), atol=1e-6)


def test_packing_forward_mode_matches_finite_differences():
    x = retrograd.randn(4, 3, 2, dtype=retrograd.float64, requires_grad=True)
    assert retrograd.autograd.gradcheck(lambda x: r_rnn.pack_padded_sequence(x, [4, 2, 1]).data, (x,),
                                        check_forward_ad=True, check_backward_ad=False)
    y = retrograd.randn(6, 2, dtype=retrograd.float64, requires_grad=True)
    sizes = retrograd.tensor([3, 2, 1])
    assert retrograd.autograd.gradcheck(lambda y: r_rnn.pad_packed_sequence(r_rnn.PackedSequence(y, sizes))[0], (y,),
                                        check_forward_ad=True)
