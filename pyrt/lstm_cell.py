"""The pointwise part of an LSTM step as one differentiable op with two outputs:

    h, c = lstm_cell(gates, gates_h, c_prev)
    i, f, g, o = gates + gates_h (in PyTorch's order, [N, hidden] each)
    c = sigmoid(f) * c_prev + sigmoid(i) * tanh(g),    h = sigmoid(o) * tanh(c)

for the input and hidden projections gates and gates_h [N, 4 * hidden]. On the CPU it
is one pass of the C kernel (csrc/kernels/lstm_cell.c) each way, where the same composed of
Tensor ops is a dozen, each with its own call and graph node; elsewhere (CuPy arrays) it is
composed of the ops.

In the graph the call is one hidden node, whose inputs are gates, gates_h and c_prev, with h and c
its two outputs: each output passes its gradient on in its own slot of a pack (as the outputs
of an autograd.Function do), so the backward loop sums what reaches h and c and the kernel
runs once, with both gradients (either may be None: zeros).
"""

import numpy as np

from pyrt._pyrt_cffi import ffi, lib
from pyrt.autograd import _state as _grad_mode
from pyrt.autograd_function import multi_output_op
from pyrt.functional import _plain, _tensor, sigmoid, tanh
from pyrt.ops._checks import F32, check_rc
from pyrt.ops._memory import empty
from pyrt.shapes import chunk

__all__ = ["lstm_cell"]

_FLOATS = ffi.typeof("float[]")
_from_buffer = ffi.from_buffer
_NULL = ffi.NULL


def _pointer(a):
    return _NULL if a is None else _from_buffer(_FLOATS, a)


def _grad_array(g):
    """A gradient as the kernel reads it: None, or a C-contiguous float32 array."""
    return None if g is None else np.ascontiguousarray(g, dtype=F32)


def _composed(gates, gates_h, c_prev):
    i, f, g, o = chunk(gates if gates_h is None else gates + gates_h, 4, 1)
    c = sigmoid(i) * tanh(g)
    if c_prev is not None:
        c = sigmoid(f) * c_prev + c
    return sigmoid(o) * tanh(c), c


def lstm_cell(gates, gates_h=None, c_prev=None):
    """(h, c) of one LSTM step from the gate pre-activations gates + gates_h (the input and
    the hidden projections, [N, 4 * hidden] each; gates_h None: gates alone) and c_prev
    [N, hidden] (None: zeros), tensors."""
    gd = gates._data
    hd = None if gates_h is None else gates_h._data
    cd = None if c_prev is None else c_prev._data
    if gd.ndim != 2 or gd.shape[1] % 4:
        raise ValueError(f"lstm_cell: gates must be [N, 4 * hidden], got shape {gd.shape}")
    rows, hidden = gd.shape[0], gd.shape[1] // 4
    if hd is not None and hd.shape != gd.shape:
        raise ValueError(f"lstm_cell: gates_h must be of gates' shape {gd.shape}, got "
                         f"{hd.shape}")
    if cd is not None and cd.shape != (rows, hidden):
        raise ValueError(f"lstm_cell: c_prev must be [{rows}, {hidden}], got shape "
                         f"{cd.shape}")
    if not (_plain(gd) and (hd is None or _plain(hd)) and (cd is None or _plain(cd))):
        return _composed(gates, gates_h, c_prev)
    Tensor = _tensor()
    inputs = tuple(t for t in (gates, gates_h, c_prev) if t is not None)
    record = _grad_mode.enabled and any(t._requires_grad for t in inputs)
    h, c = empty((rows, hidden), F32), empty((rows, hidden), F32)
    act = empty((rows, 4 * hidden), F32) if record else None
    rc = lib.pyrt_lstm_cell(_from_buffer(_FLOATS, gd), _pointer(hd), _pointer(cd),
                            _from_buffer(_FLOATS, h), _from_buffer(_FLOATS, c), _pointer(act),
                            rows, hidden)
    if rc:
        check_rc(rc, "lstm_cell")
    h_out, c_out = Tensor(h), Tensor(c)
    if not record:
        return h_out, c_out

    def backward(pack):
        dh, dc = (_grad_array(g) for g in pack.grads)
        dgates = empty((rows, 4 * hidden), F32)
        want_dc = c_prev is not None and c_prev._requires_grad
        dc_prev = empty((rows, hidden), F32) if want_dc else None
        rc = lib.pyrt_lstm_cell_backward(_pointer(dh), _pointer(dc), _from_buffer(_FLOATS, act),
                                         _from_buffer(_FLOATS, c), _pointer(cd),
                                         _from_buffer(_FLOATS, dgates), _pointer(dc_prev), rows,
                                         hidden)
        if rc:
            check_rc(rc, "lstm_cell backward")
        grads = [dgates]
        if gates_h is not None:
            # the same gradient for both summands: the second a read-only view, so that the
            # backward loop never adds to it in place (as a leaf's .grad) under the first
            shared = dgates.view()
            shared.flags.writeable = False
            grads.append(shared)
        if c_prev is not None:
            grads.append(dc_prev)
        return tuple(grads)

    return multi_output_op("LstmCellBackward", inputs, backward, (h_out, c_out))
