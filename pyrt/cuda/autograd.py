"""What autograd needs on the device beyond the ops: the implicit gradient of backward()
and chaining a loss gradient with it, without a device-to-host copy."""

import cupy
import numpy as np

__all__ = ["implicit_gradient", "scale"]

_ONES = {}  # shape -> a ones array on the device, never written to


def implicit_gradient(shape):
    """The gradient backward() starts from when none is given: ones of `shape`, one array
    a shape kept for the life of the process (the training step allocates nothing for it)."""
    ones = _ONES.get(shape)
    if ones is None:
        ones = _ONES[shape] = cupy.ones(shape, np.float32)
    return ones


def scale(grad, g):
    """grad * g for the gradient g of a loss: grad itself when g is backward()'s implicit
    one, which is known on the host; otherwise one multiplication on the device (reading g
    with float() would wait for the device)."""
    if _ONES.get(g.shape) is g:
        return grad
    from pyrt import ops

    return ops.mul(grad, g)
