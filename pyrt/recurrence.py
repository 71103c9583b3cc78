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
gradients themselves. The step loops run in C (csrc/kernels/recurrence.c), so that a step
costs its two calls and no Python, and in blocks of the batch's rows, each a recurrence of
its own, in parallel. The op's outputs pass their gradients to it in slots of a
pack (as an autograd.Function's do), so the loop runs once with all of them.

CPU float32 only: nn.LSTM and nn.GRU use these where they apply and compose Tensor ops
elsewhere.
"""

import numpy as np

from pyrt._pyrt_cffi import ffi, lib
from pyrt.autograd import _state as _grad_mode
from pyrt.autograd_function import multi_output_op
from pyrt.functional import _tensor
from pyrt.ops._checks import F32, check_rc
from pyrt.ops._memory import empty
from pyrt.ops.elementwise import bias_grad_raw
from pyrt.ops.layout import swap_last_axes

__all__ = ["gru_sequence", "lstm_sequence"]

_FLOATS = ffi.typeof("float[]")
_from_buffer = ffi.from_buffer
_NULL = ffi.NULL
_sgemm = lib.pyrt_sgemm


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


def _pointer(a):
    return _NULL if a is None else _from_buffer(_FLOATS, a)


def _gradients(pack):
    """The outputs' gradients of a pack as C-contiguous float32 arrays (None: none)."""
    return [None if g is None else np.ascontiguousarray(g, dtype=F32) for g in pack.grads]


def _last(out, reverse):
    """The final state: the output of the step run last."""
    return out[0 if reverse else -1].copy()


def _weight_gradient(dgates, h_prevs):
    """dW_hh = sum over steps of dgates_t^T h_prev_t: one product over all steps' rows."""
    gates, hidden = dgates.shape[-1], h_prevs.shape[-1]
    rows = dgates.size // gates if gates else 0
    dw = empty((gates, hidden), F32)
    _check(_sgemm(1, 0, gates, hidden, rows, 1.0, _from_buffer(_FLOATS, dgates), gates or 1,
                  _from_buffer(_FLOATS, h_prevs), hidden or 1, 0.0, _from_buffer(_FLOATS, dw),
                  hidden or 1), "recurrence backward")
    return dw


def lstm_sequence(xw, weight_hh, h0, c0, reverse=False):
    """(output [L, N, hidden], h_n, c_n [N, hidden]) of one LSTM layer and direction; the
    arguments are CPU float32 tensors with C-contiguous data, L >= 1."""
    x, w, h_init, c_init = xw._data, weight_hh._data, h0._data, c0._data
    length, batch, gates = x.shape
    hidden = gates // 4
    Tensor = _tensor()
    inputs = (xw, weight_hh, h0, c0)
    record = _grad_mode.enabled and any(t._requires_grad for t in inputs)
    wt = swap_last_axes(w)  # W_hh^T [hidden, 4 * hidden]: read in place by the GEMM
    out, cells = empty((length, batch, hidden), F32), empty((length, batch, hidden), F32)
    acts = empty((length, batch, gates), F32) if record else None
    _check(lib.pyrt_lstm_forward(length, batch, hidden, reverse, _pointer(x), _pointer(wt),
                                 _pointer(h_init), _pointer(c_init), _pointer(out),
                                 _pointer(cells), _pointer(acts)), "lstm")
    results = (Tensor(out), Tensor(_last(out, reverse)), Tensor(_last(cells, reverse)))
    if not record:
        return results

    def backward(pack):
        d_out, d_hn, d_cn = _gradients(pack)
        dgates = empty((length, batch, gates), F32)
        # in: the final states' gradients; out: the initial states'
        dh = np.zeros((batch, hidden), F32) if d_hn is None else d_hn.copy()
        dc = np.zeros((batch, hidden), F32) if d_cn is None else d_cn.copy()
        _check(lib.pyrt_lstm_backward(length, batch, hidden, reverse, _pointer(d_out),
                                      _pointer(w), _pointer(c_init), _pointer(cells),
                                      _pointer(acts), _pointer(dgates), _pointer(dh),
                                      _pointer(dc)), "lstm backward")
        dw = (_weight_gradient(dgates, _previous_states(out, h_init, reverse))
              if weight_hh._requires_grad else None)
        return dgates, dw, dh, dc

    return multi_output_op("LstmSequenceBackward", inputs, backward, results)


def gru_sequence(xw, weight_hh, bias_hh, h0, reverse=False):
    """(output [L, N, hidden], h_n [N, hidden]) of one GRU layer and direction; the
    arguments are CPU float32 tensors with C-contiguous data (bias_hh may be None), L >= 1."""
    x, w, h_init = xw._data, weight_hh._data, h0._data
    b = None if bias_hh is None else bias_hh._data
    length, batch, gates = x.shape
    hidden = gates // 3
    Tensor = _tensor()
    inputs = tuple(t for t in (xw, weight_hh, bias_hh, h0) if t is not None)
    record = _grad_mode.enabled and any(t._requires_grad for t in inputs)
    wt = swap_last_axes(w)  # W_hh^T [hidden, 3 * hidden]
    out = empty((length, batch, hidden), F32)
    acts = empty((length, batch, 4 * hidden), F32)  # r, z, n and h_n of every step
    _check(lib.pyrt_gru_forward(length, batch, hidden, reverse, _pointer(x), _pointer(wt),
                                _pointer(b), _pointer(h_init), _pointer(out), _pointer(acts)),
           "gru")
    results = (Tensor(out), Tensor(_last(out, reverse)))
    if not record:
        return results

    def backward(pack):
        d_out, d_hn = _gradients(pack)
        dgx = empty((length, batch, gates), F32)
        dgh = empty((length, batch, gates), F32)
        dh = np.zeros((batch, hidden), F32) if d_hn is None else d_hn.copy()
        _check(lib.pyrt_gru_backward(length, batch, hidden, reverse, _pointer(d_out),
                                     _pointer(w), _pointer(h_init), _pointer(out),
                                     _pointer(acts), _pointer(dgx), _pointer(dgh),
                                     _pointer(dh)), "gru backward")
        dw = (_weight_gradient(dgh, _previous_states(out, h_init, reverse))
              if weight_hh._requires_grad else None)
        grads = [dgx, dw, dh]
        if bias_hh is not None:  # (inputs holds it between weight_hh and h0)
            grads.insert(2, bias_grad_raw(dgh) if bias_hh._requires_grad else None)
        return tuple(grads)

    return multi_output_op("GruSequenceBackward", inputs, backward, results)
