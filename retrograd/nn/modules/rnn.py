"""Recurrent layers: RNN, LSTM and GRU (multi-layer, bidirectional, batch_first) and their cells.

One step function per kind of cell is shared by the cell module and the full layer; the layer
projects the whole input sequence once (`F.linear` on (L, N, H_in)) and then loops over time.
Parameter names, shapes, gate order (LSTM: i, f, g, o; GRU: r, z, n) and initialisation are torch's.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from ... import _creation as C
from ... import is_autocast_enabled
from ..._dtype import float32, float64
from ..._tensor import Tensor
from ..._warn import warn_once_at_user
from ...backends import mkldnn
from ...ops.linalg import addmm
from ...ops.nn import fused_lstm_cell, lstm_layer
from ...ops.shape import cat, stack
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
_FUSED_CELL_DTYPES = (float32, float64)  # where the fused cell's ufuncs are the ops' own (Note [fused LSTM cell])


# --------------------------------------------------------------------------------------------
# One time step of each cell; `x_proj` is x W_ih^T + b_ih, computed by the caller.
# --------------------------------------------------------------------------------------------

# Note [recurrent product folded]
# A layer's loop adds each step's recurrent product h W_hh^T into that step's input projection with one addmm
# (AddmmBackward0), the projection of the whole sequence already holding b_ih + b_hh, and W_hh^T taken once:
# per step that is one recorded op where `x_proj + linear(h, W_hh, b_hh)` records three (t, addmm, add) and
# sums b_hh's gradient over the batch in each; the LSTM language model's step records 140 nodes fewer each
# way. Only the grouping of the sums differs ((x W_ih^T + b_ih + b_hh) + h W_hh^T, torch's oneDNN layer adds
# the biases together too). The cells keep torch's LSTMCell formula; GRU applies b_hh inside r * (.) and is
# not folded.


def _rnn_step(mode: str, x_proj: Tensor, state: Any, w_hh: Tensor, b_hh: Tensor | None,
              w_hr: Tensor | None = None, folded: bool = False) -> Any:
    """The next state: a tensor h, or (h, c) for LSTM. `folded`: x_proj holds b_hh and w_hh is W_hh^T (Note
    [recurrent product folded]; not for GRU)."""
    if mode == "LSTM":
        h, c = state
        gates = _recurrent_sum(x_proj, h, w_hh, b_hh, folded)
        if folded and gates.dtype in _FUSED_CELL_DTYPES:  # the layer's loop: one node a step (Note [fused LSTM cell])
            h, c = fused_lstm_cell(gates, c)
        else:  # the cell module (torch's CPU ops, so its graph is torch's), and half precision (the ops' rounding)
            i, f, g, o = gates.chunk(4, -1)
            c = F.sigmoid(f) * c + F.sigmoid(i) * F.tanh(g)
            h = F.sigmoid(o) * F.tanh(c)
        return (h if w_hr is None else F.linear(h, w_hr)), c
    if mode == "GRU":
        xr, xz, xn = x_proj.chunk(3, -1)
        hr, hz, hn = F.linear(state, w_hh, b_hh).chunk(3, -1)
        r = F.sigmoid(xr + hr)
        z = F.sigmoid(xz + hz)
        n = F.tanh(xn + r * hn)
        return (state - n) * z + n  # torch's order of the same products and sums
    pre = _recurrent_sum(x_proj, state, w_hh, b_hh, folded)
    return F.tanh(pre) if mode == "RNN_TANH" else F.relu(pre)


def _recurrent_sum(x_proj: Tensor, state: Tensor, w_hh: Tensor, b_hh: Tensor | None, folded: bool) -> Tensor:
    """x_proj + state W_hh^T + b_hh (Note [recurrent product folded] when `folded`)."""
    return addmm(x_proj, state, w_hh) if folded else x_proj + F.linear(state, w_hh, b_hh)


def _run_direction(mode: str, proj: Tensor, sizes: list[int], packed: bool, state: Any, w_hh: Tensor,
                   b_hh: Tensor | None, w_hr: Tensor | None, reverse: bool, folded: bool) -> tuple[list, Any]:
    """Run one direction of one layer over the steps: each step's output and the final state.

    `sizes[t]` sequences run at step t (all of them unless the input is packed, whose sequences are sorted by
    decreasing length): going forward a sequence that has ended keeps its last state, which is its final one;
    going backward a sequence joins with its initial state at its own last step (torch's packed semantics)."""
    lstm = mode == "LSTM"
    offsets = [0]
    for n in sizes:
        offsets.append(offsets[-1] + n)
    initial = state
    state = _rows(state, 0, sizes[-1], lstm) if reverse and packed else state
    outputs: list = [None] * len(sizes)
    steps = None if packed else proj.unbind(0)  # one node whose backward stacks the steps' gradients, as torch's
    for t in (reversed(range(len(sizes))) if reverse else range(len(sizes))):
        n = sizes[t]
        x_t = proj[offsets[t]:offsets[t + 1]] if packed else steps[t]
        running = _width(state, lstm)
        if n > running:  # backward over a packed input: sequences whose last step this is join
            joining = _rows(initial, running, n, lstm)
            state = tuple(cat(pair) for pair in zip(state, joining)) if lstm else cat((state, joining))
        if n < running:  # forward over a packed input: the ended sequences keep their state
            new = _rnn_step(mode, x_t, _rows(state, 0, n, lstm), w_hh, b_hh, w_hr, folded)
            rest = _rows(state, n, running, lstm)
            state_next = tuple(cat(pair) for pair in zip(new, rest)) if lstm else cat((new, rest))
        else:
            new = state_next = _rnn_step(mode, x_t, state, w_hh, b_hh, w_hr, folded)
        outputs[t] = new[0] if lstm else new
        state = state_next
    return outputs, state


def _rows(state: Any, start: int, stop: int, lstm: bool) -> Any:
    """Rows start:stop of a state (h, or (h, c))."""
    return (state[0][start:stop], state[1][start:stop]) if lstm else state[start:stop]


def _width(state: Any, lstm: bool) -> int:
    """How many sequences a state holds."""
    return (state[0] if lstm else state).shape[0]


def _uniform_all(module: Module, hidden_size: int) -> None:
    """Every weight and bias ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as torch."""
    bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0
    for weight in module.parameters():
        init.uniform_(weight, -bound, bound)


class RNNBase(Module):
    """The shared multi-layer recurrent layer; `mode` is RNN_TANH, RNN_RELU, LSTM or GRU."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=3)
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("hidden_size must be an integer greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than or equal to 1")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        directions = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names: list[str] = []
        for layer in range(num_layers):
            for direction in range(directions):
                layer_input = input_size if layer == 0 else real_hidden * directions
                suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
                shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name + suffix, Parameter(C.empty(*shape, device=device, dtype=dtype)))
                    self._flat_weights_names.append(name + suffix)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _uniform_all(self, self.hidden_size)

    @property
    def all_weights(self) -> list[list[Parameter]]:
        per = len(self._flat_weights_names) // (self.num_layers * (2 if self.bidirectional else 1))
        names = self._flat_weights_names
        return [[getattr(self, n) for n in names[i:i + per]] for i in range(0, len(names), per)]

    def _weights(self, layer: int, direction: int) -> tuple:
        """The layer's weights as attributes, not only as parameters: a pruned weight (torch.nn.utils.prune), one
        under weight_norm or a parametrization is a tensor its hook or property recomputes, which torch's forward
        uses (its `__setattr__` keeps `_flat_weights` up to date)."""
        suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
        return tuple(getattr(self, kind + suffix, None) for kind in ("weight_ih", "bias_ih", "weight_hh", "bias_hh",
                                                                     "weight_hr"))

    def _check_input(self, input: Tensor) -> None:
        """torch's check_input: the input's dtype is the weights' (unless autocast is on), its last size input_size."""
        weight = self.weight_ih_l0
        if input.dtype != weight.dtype and not is_autocast_enabled("cpu"):
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight.dtype}). Convert "
                             f"input: input.to({weight.dtype}), or convert model: model.to({input.dtype})")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.shape[-1]}")

    def _initial_state(self, input: Tensor, hx: Any, batch: int, batched: bool, packed: bool) -> list:
        """Per (layer, direction): the initial state (h, or (h, c) for LSTM), checked against torch's shapes
        (`packed`: the input was a PackedSequence)."""
        directions = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        shapes = [(self.num_layers * directions, batch, real_hidden)]
        if self.mode == "LSTM":
            shapes.append((self.num_layers * directions, batch, self.hidden_size))
        if hx is None:
            states = [C.zeros(*s, dtype=input.dtype, device=input.device) for s in shapes]
        else:
            lstm = self.mode == "LSTM"
            states = list(hx) if lstm else [hx]
            if not packed:  # torch checks an unpacked input's hidden state's rank first
                rank, kind = (3, "batched 3-D") if batched else (2, "unbatched 2-D")
                ranks = [s.dim() for s in states[:2]]
                if any(n != rank for n in ranks):
                    raise RuntimeError(f"For {kind} input, hx and cx should also be {rank}-D but got ({ranks[0]}-D, "
                                       f"{ranks[1]}-D) tensors" if lstm else
                                       f"For {kind} input, hx should also be {rank}-D but got {ranks[0]}-D tensor")
            if not batched:
                states = [s.unsqueeze(1) for s in states]
            for k, (s, expected) in enumerate(zip(states, shapes)):
                if tuple(s.shape) != expected:
                    raise RuntimeError(f"Expected hidden{f'[{k}]' if lstm else ''} size {expected}, got "
                                       f"{list(s.shape)}")
            if lstm and len(states) != 2:
                raise RuntimeError("lstm expects two hidden states")
        if self.mode == "LSTM":
            return [(states[0][i], states[1][i]) for i in range(shapes[0][0])]
        return [states[0][i] for i in range(shapes[0][0])]

    def forward(self, input: Any, hx: Any = None) -> tuple:
        from ..utils.rnn import PackedSequence

        packed = isinstance(input, PackedSequence)
        if packed:
            data, batch_sizes, sorted_indices, unsorted_indices = input
            sizes = [int(n) for n in batch_sizes]
            batched, batch = True, sizes[0]
            if hx is not None and sorted_indices is not None:  # the caller's order -> the packed (sorted) order
                hx = tuple(h.index_select(1, sorted_indices) for h in hx) if self.mode == "LSTM" \
                    else hx.index_select(1, sorted_indices)
            layer_input = data
        else:
            batched = input.dim() == 3
            if input.dim() not in (2, 3):
                raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D instead")
            if not batched:  # one sequence: a batch of one, along the batch dim the layout names
                input = input.unsqueeze(0 if self.batch_first else 1)
            if self.batch_first:
                input = input.transpose(0, 1)
            batch = input.shape[1]
            sizes = [batch] * input.shape[0]
            layer_input = input
        self._check_input(layer_input)
        states = self._initial_state(layer_input, hx, batch, batched, packed)
        directions = 2 if self.bidirectional else 1
        finals = []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                w_ih, b_ih, w_hh, b_hh, w_hr = self._weights(layer, direction)
                state = states[layer * directions + direction]
                if self.mode == "LSTM" and self._one_node(layer_input, packed, (w_ih, w_hh, b_ih, b_hh, *state)):
                    output, h, c = lstm_layer(layer_input, w_ih, w_hh, b_ih, b_hh, *state, direction == 1,
                                              self.num_layers, self.bidirectional, self.batch_first, self.training)
                    outputs.append(output)
                    finals.append((h, c))
                    continue
                folded = self.mode != "GRU"  # Note [recurrent product folded]
                if folded:
                    proj = F.linear(layer_input, w_ih, None if b_ih is None else b_ih + b_hh)
                    w_hh, b_hh = w_hh.t(), None
                else:
                    proj = F.linear(layer_input, w_ih, b_ih)
                steps, state = _run_direction(self.mode, proj, sizes, packed, state, w_hh, b_hh, w_hr, direction == 1,
                                              folded)
                outputs.append(cat(steps) if packed else stack(steps))
                finals.append(state)
            layer_input = outputs[0] if directions == 1 else cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        output = layer_input
        if self.mode == "LSTM":
            hidden: Any = (stack([h for h, _ in finals]), stack([c for _, c in finals]))
        else:
            hidden = stack(finals)
        if packed:
            if unsorted_indices is not None:  # back to the caller's order
                hidden = tuple(h.index_select(1, unsorted_indices) for h in hidden) if self.mode == "LSTM" \
                    else hidden.index_select(1, unsorted_indices)
            return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), hidden
        if self.batch_first:  # torch's LSTM transposes a view, its RNN and GRU in place (TransposeBackward1)
            output = output.transpose(0, 1) if self.mode == "LSTM" else output.transpose_(0, 1)
        if not batched:
            output = output.squeeze(0 if self.batch_first else 1)
            hidden = tuple(h.squeeze(1) for h in hidden) if self.mode == "LSTM" else hidden.squeeze(1)
        return output, hidden

    def _one_node(self, input: Tensor, packed: bool, tensors: tuple) -> bool:
        """Whether torch runs this LSTM layer as one oneDNN node (Note [LSTM layer] in ops/nn.py): no projections,
        an unpacked, non-empty float32 input on the CPU, its weights and state float32 there too, unless
        torch.backends.mkldnn.enabled is off. With projections torch warns once that oneDNN cannot, as here."""
        onednn = mkldnn.enabled and not packed and input.numel() > 0 and not is_autocast_enabled("cpu") and all(
            t is None or t.dtype is float32 and t.device.type == "cpu" for t in (input, *tensors))
        if onednn and self.proj_size:
            warn_once_at_user("LSTM with projections is not supported with oneDNN. Using default implementation. "
                              "(Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/native/RNN.cpp:1512.)",
                              key="LSTM projections")
        return onednn and not self.proj_size

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device: Any = None, dtype: Any = None) -> None:
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if nonlinearity not in modes:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(modes[nonlinearity], input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device=device, dtype=dtype)


class LSTM(RNNBase):
    """Long short-term memory; forward returns (output, (h_n, c_n))."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device=device, dtype=dtype)


class GRU(RNNBase):
    """Gated recurrent unit; forward returns (output, h_n)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)


class RNNCellBase(Module):
    """What every recurrent cell holds: weight_ih (num_chunks * hidden_size, input_size), weight_hh, bias_ih and
    bias_hh, initialised uniform in +-1/sqrt(hidden_size); custom cells subclass it and define forward."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        gate_size = num_chunks * hidden_size
        self.weight_ih = Parameter(C.empty(gate_size, input_size, device=device, dtype=dtype))
        self.weight_hh = Parameter(C.empty(gate_size, hidden_size, device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(C.empty(gate_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(C.empty(gate_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _uniform_all(self, self.hidden_size)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class _Cell(RNNCellBase):
    """The built-in cells: one step of the recurrence their `mode` names, on a batch or one unbatched sample."""

    mode: str

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, _GATES[self.mode], device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Any = None) -> Any:
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        lstm = self.mode == "LSTM"
        for k, h in enumerate(() if hx is None else hx if lstm else (hx,)):
            if h.dim() not in (1, 2):
                raise ValueError(f"{type(self).__name__}: Expected {f'hx[{k}]' if lstm else 'hidden'} to be 1D or 2D, "
                                 f"got {h.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = C.zeros(input.shape[0], self.hidden_size, dtype=input.dtype, device=input.device)
            hx = (zeros, zeros) if lstm else zeros
        elif not batched:
            hx = tuple(h.unsqueeze(0) for h in hx) if lstm else hx.unsqueeze(0)
        self._check_step(input, hx if lstm else (hx,))
        out = _rnn_step(self.mode, F.linear(input, self.weight_ih, self.bias_ih), hx, self.weight_hh, self.bias_hh)
        if not batched:
            out = tuple(o.squeeze(0) for o in out) if lstm else out.squeeze(0)
        return out

    def _check_step(self, input: Tensor, states: tuple) -> None:
        """torch's checks of one step's sizes: the input's features, then each state's batch and features."""
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected {self.input_size}")
        for k, h in enumerate(states):
            if h.shape[0] != input.shape[0]:
                raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{k} batch size "
                                   f"{h.shape[0]}")
            if h.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {h.shape[1]}, expected "
                                   f"{self.hidden_size}")


class RNNCell(_Cell):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device: Any = None, dtype: Any = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(input_size, hidden_size, bias, device, dtype)
        self.nonlinearity = nonlinearity


class LSTMCell(_Cell):
    """One LSTM step; forward returns (h', c')."""

    mode = "LSTM"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, device, dtype)


class GRUCell(_Cell):
    """One GRU step."""

    mode = "GRU"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, device, dtype)


__all__ = [
    "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
]
