"""Batch normalisation on Tensors (torch.nn.functional.batch_norm), its gradient beside it.

In training the batch's own statistics normalise it, and the running statistics (buffers,
when given) move towards them in place; otherwise the running statistics are used. The
gradient flows to the input (through the batch statistics too, when they are the batch's own),
the weight and the bias.
"""

from pyrt import ops
from pyrt.autograd import mark_modified
from pyrt.functional import _make
from pyrt.spatial import _check_tensors

__all__ = ["batch_norm"]


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """``(input - mean) / sqrt(var + eps) * weight + bias`` per channel (dim 1) of input
    [n, c, ...]; see the module's doc for which statistics."""
    _check_tensors("batch_norm", input=input, running_mean=running_mean,
                   running_var=running_var, weight=weight, bias=bias)
    running = [None if t is None else t._data for t in (running_mean, running_var)]
    w = None if weight is None else weight._data
    y, mean, invstd = ops.batch_norm(input._data, *running, w,
                                     None if bias is None else bias._data, training=training,
                                     momentum=momentum, eps=eps)
    if training:
        for array in running:
            if array is not None:
                mark_modified(array)
    parents = tuple(t for t in (input, weight, bias) if t is not None)

    def backward(g):
        dx, dw, db = ops.batch_norm_backward(
            g, input._data, w, mean, invstd, training=training,
            needs_input_grad=input._requires_grad,
            needs_weight_grad=weight is not None and weight._requires_grad,
            needs_bias_grad=bias is not None and bias._requires_grad)
        return (dx,) + ((dw,) if weight is not None else ()) + ((db,) if bias is not None else ())

    return _make(y, parents, backward)
