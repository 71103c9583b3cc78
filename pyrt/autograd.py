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

_state = threading.local()  # grad mode is per thread, as in PyTorch


def is_grad_enabled():
    return getattr(_state, "enabled", True)


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


def _topological_order(root):
    """Tensors reachable from `root` through `_parents`, every tensor after its inputs."""
    order, visited = [], set()
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        stack.append((node, True))
        for parent in node._parents:
            if parent.requires_grad and id(parent) not in visited:
                stack.append((parent, False))
    return order


def run_backward(root, grad):
    """Propagate `grad` (an array shaped like root) from `root` to every leaf that requires
    grad, accumulating into the leaves' ``.grad``."""
    from pyrt.tensor import Tensor

    # gradient so far of each tensor, with a flag: may we keep this array (or is it shared
    # with another tensor's gradient, as `a + b` passes the same array to both inputs)?
    grads = {id(root): (grad, False)}
    for node in reversed(_topological_order(root)):
        entry = grads.pop(id(node), None)
        if entry is None:
            continue
        g, owned = entry
        if node._backward is None:  # a leaf
            if node.grad is None:
                node.grad = Tensor(g if owned else g.copy())
            else:
                node.grad.data += g
            continue
        parent_grads = node._backward(g)
        for parent, pg in zip(node._parents, parent_grads):
            if pg is None or not parent.requires_grad:
                continue
            key = id(parent)
            if key in grads:
                grads[key] = (grads[key][0] + pg, True)
            else:
                grads[key] = (pg, pg is not g)
        # free the graph as we go, as PyTorch does (no retain_graph)
        node._parents = ()
        node._backward = _freed


def _freed(grad):
    raise RuntimeError(
        "Trying to backward through the graph a second time: its intermediate values were "
        "freed by the first backward()"
    )
