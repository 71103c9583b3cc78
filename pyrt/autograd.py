"""Reverse-mode automatic differentiation: grad mode and the backward pass.

A tensor made by an op while grad mode is on, from at least one input that requires grad,
remembers its inputs (``_parents``) and a closure (``_backward``) that maps the gradient of the
output to the gradients of the inputs. ``backward()`` sorts the graph topologically and runs
the closures from the output back to the leaves, summing the gradients of tensors used more
than once. Only leaves (tensors made by the user, such as parameters) keep ``.grad``.
"""

import contextlib
import threading

__all__ = ["no_grad", "enable_grad", "is_grad_enabled", "set_grad_enabled"]

class _GradMode(threading.local):
    enabled = True  # the class attribute is every thread's default: a plain attribute read


_state = _GradMode()  # grad mode is per thread, as in PyTorch


def is_grad_enabled():
    return _state.enabled


class set_grad_enabled(contextlib.ContextDecorator):
    """Turn gradient recording on or off for a block (or a decorated function)."""

    def __init__(self, mode):
        self.mode = bool(mode)
        self.prev = None

    def _recreate_cm(self):
        # a decorated function gets a fresh context per call, so recursion restores correctly
        return set_grad_enabled(self.mode)

    def __enter__(self):
        self.prev = is_grad_enabled()
        _state.enabled = self.mode

    def __exit__(self, *exc):
        _state.enabled = self.prev
        return False


class no_grad(set_grad_enabled):
    """``with pyrt.no_grad():`` ops record nothing and their results need no gradient."""

    def __init__(self):
        super().__init__(False)


class enable_grad(set_grad_enabled):
    def __init__(self):
        super().__init__(True)


def _consumer_counts(root):
    """For every tensor made by an op (not a leaf) that is reachable from `root` through
    `_parents`: how many edges of the graph lead to it (how many gradients it will receive)."""
    counts = {}
    stack = [root]
    while stack:
        for parent in stack.pop()._parents:
            if parent._backward is not None and parent.requires_grad:
                key = id(parent)
                if key in counts:
                    counts[key] += 1
                else:
                    counts[key] = 1
                    stack.append(parent)
    return counts


_Tensor = None  # pyrt.tensor.Tensor, imported on first use (pyrt.tensor imports this module)


def run_backward(root, grad):
    """Propagate `grad` (an array shaped like root) from `root` to every leaf that requires
    grad, accumulating into the leaves' ``.grad``.

    Kahn's algorithm: a tensor made by an op runs its backward closure once all of its
    consumers in the graph have passed their gradients to it, so each closure runs once, on
    the sum of the gradients of its output. A gradient travels with its tensor on the `ready`
    stack; only the gradients of tensors used more than once wait in `partial` for the rest.
    A leaf needs no waiting: each gradient that reaches it is added to its ``.grad`` at once,
    in the order they arrive, which is the order the sums would have been made in anyway."""
    global _Tensor
    if _Tensor is None:
        from pyrt.tensor import Tensor as _Tensor
    Tensor = _Tensor
    if root._backward is None:  # a leaf: its gradient is the one given
        if root.grad is None:
            root.grad = Tensor(grad.copy())
        else:
            root.grad.data += grad
        return
    pending = _consumer_counts(root)
    # entries (tensor, its gradient or None, may we keep that array?): not when it is shared
    # with another tensor's gradient, as `a + b` passes the same array to both inputs
    ready = [(root, grad, False)]
    pop, push = ready.pop, ready.append
    partial = {}
    while ready:
        node, g, owned = pop()
        parents = node._parents
        # a tensor no gradient reached (every consumer passed None) only releases its inputs
        parent_grads = (None,) * len(parents) if g is None else node._backward(g)
        for parent, pg in zip(parents, parent_grads):
            if not parent.requires_grad:
                continue
            if parent._backward is None:  # a leaf
                if pg is None:
                    continue
                if parent.grad is None:
                    parent.grad = Tensor(pg if _owned(pg, g, owned) else pg.copy())
                else:
                    parent.grad.data += pg
                continue
            key = id(parent)
            left = pending[key]
            if left == 1:  # the last gradient this tensor waits for: it is ready
                if key in partial:
                    acc, acc_owned = partial.pop(key)
                    if pg is not None:
                        acc, acc_owned = acc + pg, True
                    push((parent, acc, acc_owned))
                else:
                    push((parent, pg, _owned(pg, g, owned)))
            else:
                pending[key] = left - 1
                if pg is not None:
                    if key in partial:
                        partial[key] = (partial[key][0] + pg, True)
                    else:
                        partial[key] = (pg, _owned(pg, g, owned))
        # free the graph as we go, as PyTorch does (no retain_graph)
        node._parents = ()
        node._backward = _freed


def _owned(pg, g, g_owned):
    """Whether `pg`, a gradient a closure returned for the incoming gradient `g`, may be kept
    as a leaf's .grad and added to in place: not `g` itself, and not a view (a reshape, say)
    of a `g` that autograd does not own (a gradient the caller passed to backward())."""
    return pg is not g and (g_owned or pg is None or pg.base is None)


def reset_grads(tensors, set_to_none=True):
    """zero_grad of Module and Optimizer: drop each tensor's .grad (set_to_none) or fill it
    with zeros."""
    for tensor in tensors:
        if tensor.grad is None:
            continue
        if set_to_none:
            tensor.grad = None
        else:
            tensor.grad.zero_()


def _freed(grad):
    raise RuntimeError(
        "Trying to backward through the graph a second time: its intermediate values were "
        "freed by the first backward()"
    )
