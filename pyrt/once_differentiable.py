"""torch.autograd.function's names, as ``pyrt.autograd.function``: Function, FunctionCtx
and the ``once_differentiable`` decorator of a Function's backward."""

import functools

from pyrt.autograd import no_grad
from pyrt.autograd_function import Function, FunctionCtx

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


def once_differentiable(fn):
    """Run a Function's ``backward(ctx, *grad_outputs)`` with grad mode off, as torch's
    decorator does, so that it may use operations that record no graph. Its gradients then
    carry no graph of their own: a second differentiation through it finds none (torch
    raises there instead)."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            return fn(ctx, *args)

    return wrapper
