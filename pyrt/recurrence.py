"""One recurrent layer in one direction over a whole sequence as a single differentiable op:

    output, h_n, c_n = lstm_sequence(xw, weight_hh, h0, c0, reverse=False)
    output, h_n = gru_sequence(xw, weight_hh, bias_hh, h0, reverse=False)

with xw [L, N, G * hidden] the input projection of every step (the biases that come before the
nonlinearities included; G = 4 for the LSTM, 3 for the GRU), weight_hh [G * hidden, hidden],
and the initial states [N, hidden]. Step t (L-1 down to 0 when reverse) computes the hidden
projection h_prev W_hh^T with one GEMM (W_hh^T made once, read in place) and the rest of the
step with one pass of a fused cell kernel (csrc/kernels/lstm_cell.c, gru_cell.c), writing h
into output[t].

As one op the recurrence builds no graph per step, and its backward is what PyTorch and cuDNN
do: a loop from the last step back to the first that runs the cell's backward kernel and one
GEMM per step (the hidden projection's gradient times W_hh, for h_prev), then the weight's
gradient as ONE product over all steps, dW_hh = sum_t dgates_t^T h_prev_t = dGates^T H_prev
with the steps stacked as rows (and the bias's as one column sum), instead of a product per
step summed into an accumulator; the input projection's gradient is the stacked gate
gradients themselves. The op's outputs pass their gradients to it in slots of a pack (as an
autograd.Function's do), so the loop runs once with all of them.

CPU float32 only: nn.LSTM and nn.GRU use these where they apply and compose Tensor ops
elsewhere.
"""

import numpy as np

from pyrt._pyrt_cffi import ffi, lib
from pyrt.autograd import _NEVER, _writes
from pyrt.autograd import _state as _grad_mode
from pyrt.autograd_function import _FunctionOutput
from pyrt.functional import _tensor
from pyrt.ops._checks import F32, check_rc
from pyrt.ops._memory import empty
from pyrt.ops.elementwise import bias_grad_raw

__all__ = ["gru_sequence", "lstm_sequence"]

_FLOATS = ffi.typeof("float[]")
_from_buffer = ffi.from_buffer
_NULL = ffi.NULL
_sgemm = lib.pyrt_sgemm
_cell = lib.pyrt_lstm_cell
_cell_backward = lib.pyrt_lstm_cell_backward
_gru = lib.pyrt_gru_cell
_gru_backward = lib.pyrt_gru_cell_backward


class _SequenceNode:
    """The hidden node of one call: parents the op's inputs that require grad; its closure
    takes the pack of the outputs' gradients (output, h_n[, c_n])."""

    __slots__ = ("_backward", "_epoch", "_parents", "_requires_grad", "name", "zeros")

    def __init__(self, name, parents, backward, outputs):
        self.name = name
        self._parents = parents
        self._backward = backward
        self._requires_grad = True
        self._epoch = _writes.count  # backward reads the weights and initial states
        self.zeros = [None] * outputs


def _connect(name, inputs, backward, results):
    """The results as the outputs of one hidden node over the inputs that require grad."""
    node = _SequenceNode(name, tuple(t for t in inputs if t._requires_grad), backward,
                         len(results))
    for index, result in enumerate(results):
        result._requires_grad = True
        result._parents = (node,)
        result._backward = _FunctionOutput(node, index)
        result._epoch = _NEVER  # it only passes its gradient on
    return results


def _previous_states(out, h_init, reverse):
    """h_prev of every step [L, N, hidden], in the steps' order: h0 for the first step run,
    then the outputs."""
    h_prevs = np.empty(out.shape, F32)
    if reverse:
        h_prevs[:-1], h_prevs[-1] = out[1:], h_init
    else:
        h_prevs[1:], h_prevs[0] = out[:-1], h_init
    return h_prevs


def _check(rc, what):
    if rc:
        check_rc(rc, what)


def lstm_sequence(xw, weight_hh, h0, c0, reverse=False):
    """(output [L, N, hidden], h_n, c_n [N, hidden]) of one LSTM layer and direction; the
    arguments are CPU float32 tensors with C-contiguous data."""
    x, w, h_init, c_init = xw.data, weight_hh.data, h0.data, c0.data
    length, batch, gates = x.shape
    hidden = gates // 4
    Tensor = _tensor()
    inputs = (xw, weight_hh, h0, c0)
    record = _grad_mode.enabled and any(t._requires_grad for t in inputs)
    wt = np.ascontiguousarray(w.T)  # W_hh^T [hidden, 4 * hidden]: read in place by the GEMM
    out, cells = empty((length, batch, hidden), F32), empty((length, batch, hidden), F32)
    acts = empty((length, batch, gates), F32) if record else None
    hw = empty((batch, gates), F32)
    p_x, p_out, p_cells = (_from_buffer(_FLOATS, a) for a in (x, out, cells))
    p_acts = _NULL if acts is None else _from_buffer(_FLOATS, acts)
    p_wt, p_hw = _from_buffer(_FLOATS, wt), _from_buffer(_FLOATS, hw)
    p_h0, p_c0 = _from_buffer(_FLOATS, h_init), _from_buffer(_FLOATS, c_init)
    step_h, step_g = batch * hidden, batch * gates  # floats per step
    order = range(length - 1, -1, -1) if reverse else range(length)
    h_prev, c_prev = p_h0, p_c0
    for t in order:
        _check(_sgemm(0, 0, batch, gates, hidden, 1.0, h_prev, hidden or 1, p_wt, gates, 0.0,
                      p_hw, gates), "lstm")
        _check(_cell(p_x + t * step_g, p_hw, c_prev, p_out + t * step_h, p_cells + t * step_h,
                     _NULL if acts is None else p_acts + t * step_g, batch, hidden), "lstm")
        h_prev, c_prev = p_out + t * step_h, p_cells + t * step_h
    last = order[-1] if length else None
    h_n = out[last].copy() if length else h_init.copy()
    c_n = cells[last].copy() if length else c_init.copy()
    results = (Tensor(out), Tensor(h_n), Tensor(c_n))
    if not record:
        return results

    def backward(pack):
        d_out, d_hn, d_cn = (None if g is None else np.ascontiguousarray(g, dtype=F32)
                             for g in pack.grads)
        dgates = empty((length, batch, gates), F32)
        dh = empty((batch, hidden), F32)
        dh_next = np.zeros((batch, hidden), F32) if d_hn is None else d_hn.copy()
        dc = [empty((batch, hidden), F32), empty((batch, hidden), F32)]
        dc_next = d_cn  # None: zeros
        p_w, p_dg = _from_buffer(_FLOATS, w), _from_buffer(_FLOATS, dgates)
        p_dh = _from_buffer(_FLOATS, dh)
        for n, t in enumerate(reversed(order)):
            # dh: the step's output gradient plus what the next step passed back
            if d_out is not None:
                np.add(d_out[t], dh_next, out=dh)
            else:
                dh[...] = dh_next
            first = n == length - 1  # the step that read h0 and c0
            prev = (order[len(order) - n - 2]) if not first else None
            p_cp = p_c0 if first else p_cells + prev * step_h
            dc_prev = dc[n % 2]
            _check(_cell_backward(p_dh, _NULL if dc_next is None else _from_buffer(_FLOATS,
                                                                                  dc_next),
                                  p_acts + t * step_g, p_cells + t * step_h, p_cp,
                                  p_dg + t * step_g, _from_buffer(_FLOATS, dc_prev), batch,
                                  hidden), "lstm backward")
            # dh_prev = dgates W_hh: [N, 4H] @ [4H, H]
            _check(_sgemm(0, 0, batch, hidden, gates, 1.0, p_dg + t * step_g, gates, p_w,
                          hidden or 1, 0.0, _from_buffer(_FLOATS, dh_next), hidden or 1),
                   "lstm backward")
            dc_next = dc_prev
        grads = []
        if xw._requires_grad:
            grads.append(dgates)
        if weight_hh._requires_grad:
            # dW_hh = sum over steps of dgates_t^T h_prev_t: the steps' h_prev stacked as rows
            h_prevs = _previous_states(out, h_init, reverse)
            dw = empty((gates, hidden), F32)
            _check(_sgemm(1, 0, gates, hidden, length * batch, 1.0, p_dg, gates,
                          _from_buffer(_FLOATS, h_prevs), hidden or 1, 0.0,
                          _from_buffer(_FLOATS, dw), hidden or 1), "lstm backward")
            grads.append(dw)
        if h0._requires_grad:
            grads.append(dh_next)
        if c0._requires_grad:
            grads.append(np.zeros((batch, hidden), F32) if dc_next is None else dc_next.copy())
        return tuple(grads)

    return _connect("LstmSequenceBackward", inputs, backward, results)


def gru_sequence(xw, weight_hh, bias_hh, h0, reverse=False):
    """(output [L, N, hidden], h_n [N, hidden]) of one GRU layer and direction; the
    arguments are CPU float32 tensors with C-contiguous data (bias_hh may be None)."""
    x, w, h_init = xw.data, weight_hh.data, h0.data
    b = None if bias_hh is None else bias_hh.data
    length, batch, gates = x.shape
    hidden = gates // 3
    Tensor = _tensor()
    inputs = tuple(t for t in (xw, weight_hh, bias_hh, h0) if t is not None)
    record = _grad_mode.enabled and any(t._requires_grad for t in inputs)
    wt = np.ascontiguousarray(w.T)  # W_hh^T [hidden, 3 * hidden]
    out = empty((length, batch, hidden), F32)
    acts = empty((length, batch, 4 * hidden), F32)  # r, z, n and h_n of every step
    hw = empty((batch, gates), F32)
    p_x, p_out, p_acts = (_from_buffer(_FLOATS, a) for a in (x, out, acts))
    p_wt, p_hw = _from_buffer(_FLOATS, wt), _from_buffer(_FLOATS, hw)
    p_b = _NULL if b is None else _from_buffer(_FLOATS, b)
    step_h, step_g, step_a = batch * hidden, batch * gates, batch * 4 * hidden
    order = range(length - 1, -1, -1) if reverse else range(length)
    h_prev = _from_buffer(_FLOATS, h_init)
    for t in order:
        _check(_sgemm(0, 0, batch, gates, hidden, 1.0, h_prev, hidden or 1, p_wt, gates, 0.0,
                      p_hw, gates), "gru")
        _check(_gru(p_x + t * step_g, p_hw, p_b, h_prev, p_out + t * step_h,
                    p_acts + t * step_a, batch, hidden), "gru")
        h_prev = p_out + t * step_h
    h_n = out[order[-1]].copy() if length else h_init.copy()
    results = (Tensor(out), Tensor(h_n))
    if not record:
        return results

    def backward(pack):
        d_out, d_hn = (None if g is None else np.ascontiguousarray(g, dtype=F32)
                       for g in pack.grads)
        dgx = empty((length, batch, gates), F32)
        dgh = empty((length, batch, gates), F32)
        dh = empty((batch, hidden), F32)
        dh_next = np.zeros((batch, hidden), F32) if d_hn is None else d_hn.copy()
        h_prevs = _previous_states(out, h_init, reverse)
        p_w, p_dh, p_dn = (_from_buffer(_FLOATS, a) for a in (w, dh, dh_next))
        p_dgx, p_dgh, p_hp = (_from_buffer(_FLOATS, a) for a in (dgx, dgh, h_prevs))
        for t in reversed(order):
            if d_out is not None:
                np.add(d_out[t], dh_next, out=dh)
            else:
                dh[...] = dh_next
            # dh_prev = dh z (into dh_next), then += dgates_h W_hh: [N, 3H] @ [3H, H]
            _check(_gru_backward(p_dh, p_acts + t * step_a, p_hp + t * step_h,
                                 p_dgx + t * step_g, p_dgh + t * step_g, p_dn, batch, hidden),
                   "gru backward")
            _check(_sgemm(0, 0, batch, hidden, gates, 1.0, p_dgh + t * step_g, gates, p_w,
                          hidden or 1, 1.0, p_dn, hidden or 1), "gru backward")
        grads = []
        if xw._requires_grad:
            grads.append(dgx)
        if weight_hh._requires_grad:
            # dW_hh = sum over steps of dgates_h^T h_prev: one product over all steps
            dw = empty((gates, hidden), F32)
            _check(_sgemm(1, 0, gates, hidden, length * batch, 1.0, p_dgh, gates, p_hp,
                          hidden or 1, 0.0, _from_buffer(_FLOATS, dw), hidden or 1),
                   "gru backward")
            grads.append(dw)
        if bias_hh is not None and bias_hh._requires_grad:
            grads.append(bias_grad_raw(dgh))
        if h0._requires_grad:
            grads.append(dh_next)
        return tuple(grads)

    return _connect("GruSequenceBackward", inputs, backward, results)
