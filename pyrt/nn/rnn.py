"""Recurrent layers as torch.nn's: RNN (Elman, tanh or ReLU), LSTM (optionally with projections)
and GRU over whole sequences, stacked and optionally bidirectional, and the one-step cells
RNNCell, LSTMCell and GRUCell.

Everything is composed of differentiable Tensor ops, so autograd gives the gradients and the
code runs on any backend the ops do. A layer computes the input projection of every time step
at once, x @ W_ih^T + b over all L * N rows in one GEMM; only the hidden projection
h @ W_hh^T, which needs the previous step's state, runs step by step.

The recurrences, with x_t the input projection of step t (W_ih x + b_ih; PyTorch's gate
orders and formulas):

- RNN:  h' = act(x_t + W_hh h + b_hh), act tanh or ReLU
- LSTM: i, f, g, o = x_t + W_hh h + b_hh (in that order); c' = sig(f) c + sig(i) tanh(g),
  h' = sig(o) tanh(c'), and with proj_size > 0 h' = W_hr h'
- GRU:  r, z, n = x_t (in that order) and r_h, z_h, n_h = W_hh h + b_hh;
  r = sig(r + r_h), z = sig(z + z_h), n = tanh(n + r * n_h), h' = (1 - z) n + z h

Parameters are named as PyTorch's (``weight_ih_l0``, ``bias_hh_l1_reverse``, ...), so a torch
state_dict, converted to arrays, loads as it is.
"""

import math
import numbers
import warnings

import numpy as np

from pyrt import functional as F
from pyrt.autograd import is_grad_enabled
from pyrt.functional import _plain
from pyrt.lstm_cell import lstm_cell
from pyrt.nn import init
from pyrt.nn.module import Module
from pyrt.nn.parameter import Parameter
from pyrt.nn.utils.rnn import PackedSequence, pad_packed_sequence
from pyrt.rearrange import unbind
from pyrt.recurrence import gru_sequence, lstm_sequence
from pyrt.shapes import cat, chunk, index_select, split, stack, transpose, unsqueeze
from pyrt.tensor import Tensor

__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase"]

# how many blocks of hidden_size rows W_ih and W_hh stack, per mode
_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _size(value, name):
    """`value` as an int if it is a positive one, else PyTorch's TypeError or ValueError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{name} must be greater than zero")
    return int(value)


def _flag(value, name):
    if not isinstance(value, bool):
        raise TypeError(f"{name} should be of type bool, got: {type(value).__name__}")
    return value


def _mode(nonlinearity):
    """RNN's mode for `nonlinearity` ('tanh' or 'relu')."""
    if nonlinearity == "tanh":
        return "RNN_TANH"
    if nonlinearity == "relu":
        return "RNN_RELU"
    raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")


def _tensor(value, owner, name):
    if not isinstance(value, Tensor):
        raise TypeError(f"{owner}: {name} must be a pyrt Tensor, got {type(value).__name__} "
                        "(packed sequences are not supported)")
    return value


# ---- one time step -------------------------------------------------------------------------
# Each takes xw, the step's input projection [N, gates * hidden] with the biases that come
# before the nonlinearity already added, and the previous state; it returns the new state.


def _rnn_step(xw, h, weight_hh, act):
    return (act(xw + F.linear(h, weight_hh)),)


def _lstm_step(xw, h, c, weight_hh, weight_hr, weight_hh_t):
    # with W_hh^T made once per sequence (weight_hh_t, see _direction), h @ W_hh^T
    hw = F.linear(h, weight_hh) if weight_hh_t is None else F.matmul(h, weight_hh_t)
    h, c = lstm_cell(xw, hw, c)  # one pass: the gates' sum and nonlinearities, c and h
    if weight_hr is not None:  # the projection of the hidden state to proj_size features
        h = F.linear(h, weight_hr)
    return h, c


def _gru_step(xw, h, weight_hh, bias_hh):
    # b_hn is inside the reset gate's product, so b_hh stays with the hidden projection
    hw = F.linear(h, weight_hh, bias_hh)
    size = h.shape[1]
    x_rz, x_n = split(xw, [2 * size, size], 1)
    h_rz, h_n = split(hw, [2 * size, size], 1)
    r, z = chunk(F.sigmoid(x_rz + h_rz), 2, 1)
    n = F.tanh(x_n + r * h_n)
    return (n + z * (h - n),)  # (1 - z) n + z h


def _input_bias(mode, bias_ih, bias_hh):
    """The bias to add to the input projection: b_ih + b_hh where both come before the
    nonlinearity (RNN, LSTM), b_ih alone for GRU (whose b_hn is multiplied by r)."""
    if bias_ih is None or mode == "GRU":
        return bias_ih
    return bias_ih + bias_hh


def _step(mode, xw, state, weights):
    """The new state after one step of `mode`; weights = (weight_hh, bias_hh, weight_hr,
    weight_hh_t), the last W_hh^T or None."""
    weight_hh, bias_hh, weight_hr, weight_hh_t = weights
    if mode == "LSTM":
        return _lstm_step(xw, *state, weight_hh, weight_hr, weight_hh_t)
    if mode == "GRU":
        return _gru_step(xw, *state, weight_hh, bias_hh)
    return _rnn_step(xw, *state, weight_hh, F.tanh if mode == "RNN_TANH" else F.relu)


def _time_steps(xw, length):
    """xw [L * N, G] cut into its L time steps, [N, G] each. The gradient of a piece cut out
    of a tensor is a zero-filled array of the whole tensor's shape, so L pieces cut from xw
    at once would cost backward L passes over all of xw (quadratic in L). Cut in halves, and
    the halves in halves, it costs about 3 passes per level, log2(L) levels. Without a
    gradient to carry, one split copies each piece once."""
    rows = xw.shape[0] // length
    if not (xw.requires_grad and is_grad_enabled()):
        return split(xw, [rows] * length, 0)

    def halves(part, count):
        if count == 1:
            return [part]
        first = count // 2
        a, b = split(part, [first * rows, (count - first) * rows], 0)
        return halves(a, first) + halves(b, count - first)

    return halves(xw, length)


# ---- layers over sequences -----------------------------------------------------------------


class RNNBase(Module):
    """What RNN, LSTM and GRU share: the parameters of every layer and direction, the checks
    of input and initial state, and the loop over layers, directions and time."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0):
        super().__init__()
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + str(mode))
        if (isinstance(dropout, bool) or not isinstance(dropout, numbers.Real)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             f"probability of an element being zeroed, got {dropout!r}")
        self.mode = mode
        self.bias = _flag(bias, "bias")
        self.batch_first = _flag(batch_first, "batch_first")
        self.bidirectional = _flag(bidirectional, "bidirectional")
        self.input_size = _size(input_size, "input_size")
        self.hidden_size = _size(hidden_size, "hidden_size")
        self.num_layers = _size(num_layers, "num_layers")
        if isinstance(proj_size, bool) or not isinstance(proj_size, numbers.Integral):
            raise TypeError(f"proj_size should be of type int, got: {type(proj_size).__name__}")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError(f"proj_size has to be smaller than hidden_size, got proj_size="
                             f"{proj_size} and hidden_size={hidden_size}")
        self.proj_size = int(proj_size)
        self.dropout = float(dropout)
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=3)
        gate_size = _GATES[mode] * hidden_size
        out_size = proj_size or hidden_size  # the features of h
        directions = 2 if bidirectional else 1
        # the names of each (layer, direction)'s parameters, in PyTorch's order
        self._all_weights = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else out_size * directions
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                shapes = [("weight_ih", (gate_size, layer_input)),
                          ("weight_hh", (gate_size, out_size))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name + suffix, Parameter(np.empty(shape, np.float32)))
                self._all_weights.append([name + suffix for name, _ in shapes])
        self.reset_parameters()

    def reset_parameters(self):
        """PyTorch's default: every weight and bias drawn from U(-1/sqrt(hidden_size),
        1/sqrt(hidden_size))."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    @property
    def all_weights(self):
        """The parameters of each layer and direction, as lists in PyTorch's order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self):
        """Nothing to do: each weight lives in an array of its own, as the GEMMs take it.
        Kept so that code written for PyTorch's cuDNN layout runs unchanged."""

    def extra_repr(self):
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

    # ---- checks ----------------------------------------------------------------------------

    def _state_sizes(self):
        """The feature sizes of the state: (h,) or, for LSTM, (h, c)."""
        h = self.proj_size or self.hidden_size
        return (h, self.hidden_size) if self.mode == "LSTM" else (h,)

    def _initial_states(self, hx, batched):
        """hx as a tuple of states (one, or LSTM's two), checked for their ranks (2-D when
        unbatched, 3-D when batched) and made 3-D; None stays None."""
        if hx is None:
            return None
        kind = type(self).__name__
        if self.mode == "LSTM":
            if not (isinstance(hx, (tuple, list)) and len(hx) == 2):
                raise TypeError(f"{kind}: hx must be a tuple (h_0, c_0) of two Tensors, got "
                                f"{type(hx).__name__}")
            states = (_tensor(hx[0], kind, "h_0"), _tensor(hx[1], kind, "c_0"))
            rank = 3 if batched else 2
            if any(s.ndim != rank for s in states):
                got = f"({states[0].ndim}-D, {states[1].ndim}-D)"
                raise RuntimeError(f"For {'batched 3-D' if batched else 'unbatched 2-D'} input, "
                                   f"hx and cx should also be {rank}-D but got {got} tensors")
        else:
            states = (_tensor(hx, kind, "hx"),)
            if batched and hx.ndim != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                                   f"{hx.ndim}-D tensor")
            if not batched and hx.ndim != 2:
                raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got "
                                   f"{hx.ndim}-D tensor")
        return states if batched else tuple(unsqueeze(s, 1) for s in states)

    def _check_forward_args(self, x, states):
        """x [L, N, input_size] and each state [num_layers * directions, N, size], else
        PyTorch's RuntimeError."""
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {x.shape[-1]}")
        if x.shape[0] == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        if states is None:
            return
        layers = self.num_layers * (2 if self.bidirectional else 1)
        for i, (state, size) in enumerate(zip(states, self._state_sizes())):
            expected = (layers, x.shape[1], size)
            if state.shape != expected:
                which = f"hidden[{i}] size" if self.mode == "LSTM" else "hidden size"
                raise RuntimeError(f"Expected {which} {expected}, got {list(state.shape)}")

    # ---- the recurrence --------------------------------------------------------------------

    def forward(self, input, hx=None):
        """input [L, N, input_size] ([N, L, input_size] with batch_first) or unbatched
        [L, input_size]; hx the initial state [num_layers * directions, N, size] (unbatched:
        without N), a pair (h_0, c_0) for LSTM, zeros when None. Returns (output, h_n), LSTM
        (output, (h_n, c_n)); output [L, N, directions * size] (batch_first: [N, L, ...])."""
        kind = type(self).__name__
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        _tensor(input, kind, "input")
        if input.ndim not in (2, 3):
            raise ValueError(f"{kind}: Expected input to be 2D or 3D, got {input.ndim}D "
                             "instead")
        weight = self.weight_ih_l0
        if input.dtype != weight.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({weight.dtype})")
        batched = input.ndim == 3
        states = self._initial_states(hx, batched)
        # time first, batch second: [L, N, features]
        if not batched:
            x = unsqueeze(input, 1)
        elif self.batch_first:
            x = transpose(input, 0, 1)
        else:
            x = input
        self._check_forward_args(x, states)
        length = x.shape[0]
        output, final_states = self._layers(x, states, self._direction)
        if not batched:
            output = output.reshape(length, output.shape[2])
        elif self.batch_first:
            output = transpose(output, 0, 1)
        if not batched:
            final_states = tuple(s.reshape(s.shape[0], s.shape[2]) for s in final_states)
        if self.mode == "LSTM":
            return output, final_states
        return output, final_states[0]

    def _layers(self, x, states, direction):
        """The layers over x [L, N, F] from `states` (stacked over layers and directions; zeros
        when None), each layer and direction run by direction(x, its initial states, its
        weights' names, reverse): (the last layer's output, the final states stacked as the
        initial ones)."""
        if states is None:
            layers = self.num_layers * (2 if self.bidirectional else 1)
            states = tuple(x.new_zeros((layers, x.shape[1], size))
                           for size in self._state_sizes())
        # the initial state of each layer and direction, in the order of self._all_weights
        initial = list(zip(*(unbind(s, 0) for s in states)))
        finals = []
        k = 0
        for layer in range(self.num_layers):
            outputs = []
            for reverse in ((False, True) if self.bidirectional else (False,)):
                output, final = direction(x, initial[k], self._all_weights[k], reverse)
                outputs.append(output)
                finals.append(final)
                k += 1
            x = outputs[0] if len(outputs) == 1 else cat(outputs, 2)
            if self.dropout and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, self.training)
        return x, tuple(stack(parts, 0) for parts in zip(*finals))

    def _forward_packed(self, packed, hx):
        """forward() of a PackedSequence: each sequence runs its own steps (_segments), the
        output packed as the input, h_n (and c_n) the state after each one's last step, in
        the input's order of sequences; hx is in that order too."""
        sizes = np.asarray(packed.batch_sizes.numpy(), dtype=np.int64)
        x, _ = pad_packed_sequence(PackedSequence(packed.data, packed.batch_sizes, None, None))
        states = self._initial_states(hx, True)
        if states is not None and packed.sorted_indices is not None:
            states = tuple(index_select(s, 1, packed.sorted_indices) for s in states)
        self._check_forward_args(x, states)
        x, final_states = self._layers(
            x, states, lambda *args: self._segments(*args, sizes))
        data = cat([x[t, :int(size)] for t, size in enumerate(sizes)], 0)
        output = PackedSequence(data, packed.batch_sizes, packed.sorted_indices,
                                packed.unsorted_indices)
        if packed.unsorted_indices is not None:
            final_states = tuple(index_select(s, 1, packed.unsorted_indices)
                                 for s in final_states)
        if self.mode == "LSTM":
            return output, final_states
        return output, final_states[0]

    def _segments(self, x, state, names, reverse, sizes):
        """One layer and direction over sequences sorted longest first, padded in x [L, N, F]
        (sizes[t]: how many have a step t). The steps go in runs over which the same leading
        sequences are active, each run one _direction over them: forward, a run starts from
        the states the last one left and the sequences that ended keep theirs; in reverse,
        the sequences that start in a run (their last step) start from the initial state.
        Returns (output [L, N, size], zero past each sequence's end, the final states)."""
        length, batch = x.shape[0], x.shape[1]
        starts = [0] + [t for t in range(1, length) if sizes[t] != sizes[t - 1]]
        runs = list(zip(starts, starts[1:] + [length]))
        if reverse:
            runs.reverse()
        current, pieces = None, {}
        for a, b in runs:
            active = int(sizes[a])
            if current is None:
                begin = tuple(s[:active] for s in state)
            elif reverse:  # the sequences whose last step is b - 1 join, from the initial state
                done = current[0].shape[0]
                begin = tuple(cat([c, s[done:active]], 0) if active > done else c
                              for c, s in zip(current, state))
            else:
                begin = tuple(c[:active] for c in current)
            out, final = self._direction(x[a:b, :active], begin, names, reverse)
            if active < batch:
                out = cat([out, out.new_zeros((b - a, batch - active, out.shape[2]))], 1)
            pieces[a] = out
            if reverse or current is None:
                current = final
            else:  # the sequences past `active` ended before this run: their states stay
                current = tuple(cat([f, c[active:]], 0) for f, c in zip(final, current))
        output = cat([pieces[a] for a, _ in sorted(pieces.items())], 0)
        return output, current

    def _direction(self, x, state, names, reverse):
        """One layer in one direction over x [L, N, F] from `state` (its initial states,
        [N, size] each): (output [L, N, size], the final states)."""
        params = self._parameters
        weight_ih = params[names[0]]
        if self.bias:
            bias_ih, bias_hh = params[names[2]], params[names[3]]
        else:
            bias_ih = bias_hh = None
        length, batch, features = x.shape
        weight_hh = params[names[1]]
        # the input projection of every time step: one GEMM over all L * N rows
        xw = F.linear(x.reshape(length * batch, features), weight_ih,
                      _input_bias(self.mode, bias_ih, bias_hh))
        if self.mode == "LSTM" and not self.proj_size and all(
                _plain(t._data) for t in (xw, weight_hh) + tuple(state)):
            # the whole recurrence as one op: no graph per step, one GEMM for dW_hh
            output, h_n, c_n = lstm_sequence(xw.reshape(length, batch, xw.shape[1]), weight_hh,
                                             *state, reverse=reverse)
            return output, (h_n, c_n)
        if self.mode == "GRU" and all(_plain(t._data) for t in (xw, weight_hh) + tuple(state)) \
                and (bias_hh is None or _plain(bias_hh._data)):
            output, h_n = gru_sequence(xw.reshape(length, batch, xw.shape[1]), weight_hh,
                                       bias_hh, *state, reverse=reverse)
            return output, (h_n,)
        weight_hh_t = None
        if self.mode == "LSTM" and isinstance(weight_hh._data, np.ndarray) and length > 1:
            # h W_hh^T with W_hh^T made once per sequence: the GEMM reads a row-major right
            # operand in place, which for a few rows of h is faster than reading W_hh's rows
            weight_hh_t = transpose(weight_hh, 0, 1)
        weights = (weight_hh, bias_hh, params[names[-1]] if self.proj_size else None,
                   weight_hh_t)
        steps = _time_steps(xw, length)
        outputs = [None] * length
        for t in (reversed(range(length)) if reverse else range(length)):
            state = _step(self.mode, steps[t], state, weights)
            outputs[t] = state[0]
        return stack(outputs, 0), state


class RNN(RNNBase):
    """An Elman RNN, h_t = act(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh) with act tanh or ReLU
    (`nonlinearity`), over num_layers stacked layers (each one's output the next one's input,
    through dropout while training), each optionally bidirectional."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False):
        super().__init__(_mode(nonlinearity), input_size, hidden_size, num_layers, bias,
                         batch_first, dropout, bidirectional)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """A long short-term memory layer (gates i, f, g, o) over num_layers stacked layers, each
    optionally bidirectional; with proj_size > 0, h is projected to proj_size features by
    weight_hr. forward takes and returns the state as a pair (h, c)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size)


class GRU(RNNBase):
    """A gated recurrent unit layer (gates r, z, n) over num_layers stacked layers, each
    optionally bidirectional."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional)


# ---- cells: one time step ------------------------------------------------------------------


class RNNCellBase(Module):
    """What the cells share: weight_ih [gates * hidden_size, input_size], weight_hh
    [gates * hidden_size, hidden_size], bias_ih and bias_hh [gates * hidden_size], and the
    checks of input and state."""
    mode = None  # the recurrence the cell steps, set by each cell

    def __init__(self, input_size, hidden_size, bias, num_chunks):
        super().__init__()
        self.input_size = _size(input_size, "input_size")
        self.hidden_size = _size(hidden_size, "hidden_size")
        self.bias = _flag(bias, "bias")
        gate_size = num_chunks * hidden_size
        self.weight_ih = Parameter(np.empty((gate_size, input_size), np.float32))
        self.weight_hh = Parameter(np.empty((gate_size, hidden_size), np.float32))
        if bias:
            self.bias_ih = Parameter(np.empty((gate_size,), np.float32))
            self.bias_hh = Parameter(np.empty((gate_size,), np.float32))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        """PyTorch's default: every weight and bias drawn from U(-1/sqrt(hidden_size),
        1/sqrt(hidden_size))."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _cell(self, input, hx, names):
        """One step from input [N, input_size] (unbatched: [input_size]) and the states in
        hx (None: zeros), named `names` in errors; returns the new states, shaped as the
        input is batched."""
        kind = type(self).__name__
        _tensor(input, kind, "input")
        if input.ndim not in (1, 2):
            raise ValueError(f"{kind}: Expected input to be 1D or 2D, got {input.ndim}D "
                             "instead")
        batched = input.ndim == 2
        x = input if batched else unsqueeze(input, 0)
        if x.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {x.shape[1]} expected "
                               f"{self.input_size}")
        if hx is None:
            zeros = x.new_zeros((x.shape[0], self.hidden_size))
            states = (zeros,) * len(names)
        else:
            states = []
            for i, (state, name) in enumerate(zip(hx, names)):
                _tensor(state, kind, name)
                if state.ndim not in (1, 2):
                    raise ValueError(f"{kind}: Expected {name} to be 1D or 2D, got "
                                     f"{state.ndim}D instead")
                if state.ndim != input.ndim:
                    raise RuntimeError(f"For {input.ndim}-D input, {name} should also be "
                                       f"{input.ndim}-D but got {state.ndim}-D tensor")
                state = state if batched else unsqueeze(state, 0)
                if state.shape[0] != x.shape[0]:
                    raise RuntimeError(f"Input batch size {x.shape[0]} doesn't match hidden{i} "
                                       f"batch size {state.shape[0]}")
                if state.shape[1] != self.hidden_size:
                    raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got "
                                       f"{state.shape[1]}, expected {self.hidden_size}")
                states.append(state)
        xw = F.linear(x, self.weight_ih, _input_bias(self.mode, self.bias_ih, self.bias_hh))
        new = _step(self.mode, xw, tuple(states), (self.weight_hh, self.bias_hh, None, None))
        return new if batched else tuple(s.reshape(s.shape[1]) for s in new)


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: h' = act(W_ih x + b_ih + W_hh h + b_hh), act tanh or ReLU."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh"):
        mode = _mode(nonlinearity)
        super().__init__(input_size, hidden_size, bias, num_chunks=1)
        self.mode = mode
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        """h' [N, hidden_size] from input [N, input_size] and hx [N, hidden_size] (zeros when
        None); unbatched without N."""
        return self._cell(input, None if hx is None else (hx,), ("hidden",))[0]


class LSTMCell(RNNCellBase):
    """One step of an LSTM (gates i, f, g, o): the pair (h', c') from input and (h, c)."""
    mode = "LSTM"

    def __init__(self, input_size, hidden_size, bias=True):
        super().__init__(input_size, hidden_size, bias, num_chunks=4)

    def forward(self, input, hx=None):
        """(h', c'), each [N, hidden_size], from input [N, input_size] and hx = (h, c) (zeros
        when None); unbatched without N."""
        if hx is not None and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise TypeError(f"LSTMCell: hx must be a tuple (h, c) of two Tensors, got "
                            f"{type(hx).__name__}")
        return self._cell(input, hx, ("hx[0]", "hx[1]"))


class GRUCell(RNNCellBase):
    """One step of a GRU (gates r, z, n): h' from input and h."""
    mode = "GRU"

    def __init__(self, input_size, hidden_size, bias=True):
        super().__init__(input_size, hidden_size, bias, num_chunks=3)

    def forward(self, input, hx=None):
        """h' [N, hidden_size] from input [N, input_size] and hx [N, hidden_size] (zeros when
        None); unbatched without N."""
        return self._cell(input, None if hx is None else (hx,), ("hidden",))[0]
