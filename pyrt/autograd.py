"""Reverse-mode automatic differentiation: grad mode and the backward pass.

A tensor made by an op while grad mode is on, from at least one input that requires grad,
remembers its inputs (``_parents``) and a closure (``_backward``) that maps the gradient of the
output to the gradients of the inputs. ``backward()`` sorts the graph topologically and runs
the closures from the output back to the leaves, summing the gradients of tensors used more
than once. Only leaves (tensors made by the user, such as parameters) keep ``.grad``.
"""

import contextlib
import functools
import inspect
import threading

from pyrt.runtime import carry_thread_state

__all__ = ["enable_grad", "inference_mode", "is_grad_enabled", "no_grad", "set_grad_enabled"]

_NEVER = float("inf")  # the _epoch of a tensor whose backward reads no input
_MARKS_MAX = 4096


class _Writes:
    """In-place writes, for the check PyTorch makes with version counters: `count` is the
    number of writes so far; `marks` maps the memory a write went to (the id of the array
    that owns it, so that views and detached aliases share it) to the count of its last
    write. An op whose backward reads its inputs stamps its output with `count`
    (functional._make); backward refuses to run it if one of those inputs was written since
    (a mark above the stamp). One integer per op in the forward pass, one comparison per op
    in the backward pass while nothing was written. An id reused by a new array can only
    carry an old mark (below the stamp of any op that uses the new array), and when the
    table is cleared a write goes unseen: never a false alarm."""

    __slots__ = ("count", "marks")

    def __init__(self):
        self.count = 0
        self.marks = {}


_writes = _Writes()


def _owner(array):
    """The array that owns `array`'s memory (itself, or the base its views lead to)."""
    base = array.base
    while base is not None and hasattr(base, "base"):
        array, base = base, base.base
    return array


def new_write():
    """(count, marks) for a batch of in-place writes: the caller sets
    ``marks[write_key(array)] = count`` for each array it writes (an optimizer step)."""
    w = _writes
    w.count += 1
    if len(w.marks) >= _MARKS_MAX:
        w.marks.clear()
    return w.count, w.marks


def write_key(array):
    """The key of `array`'s memory in _Writes.marks."""
    return id(array if array.base is None else _owner(array))


def mark_modified_all(arrays):
    """Record in-place writes to each of `arrays`, made together (an optimizer step)."""
    count, marks = new_write()
    for array in arrays:
        marks[write_key(array)] = count


def mark_modified(array):
    """Record an in-place write to `array` (pyrt's in-place tensor ops call this after
    writing)."""
    mark_modified_all((array,))


def _check_inputs_unchanged(node):
    """RuntimeError if an input of `node` was written in place since node was made."""
    marks, stamp = _writes.marks, node._epoch
    for i, parent in enumerate(node._parents):
        if marks.get(write_key(parent.data), 0) > stamp:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by "
                f"an inplace operation: input {i} (of shape {list(parent.data.shape)}) of an "
                "op was written after the op used it. Hint: make the in-place change after "
                "backward(), or on a copy (x = x * 2 rather than x.mul_(2))")

class _GradMode(threading.local):
    enabled = True  # the class attribute is every thread's default: a plain attribute read


_state = _GradMode()  # grad mode is per thread, as in PyTorch


def is_grad_enabled():
    return _state.enabled


def _set_mode(enabled):
    _state.enabled = enabled


# the bodies of pyrt.parallel_for/parallel_reduce run in their caller's grad mode, on workers
# too (as at::parallel_for carries it in PyTorch)
carry_thread_state(is_grad_enabled, _set_mode)


class _GradModeContext(contextlib.ContextDecorator):
    """Set grad mode to `mode` for a block (or a decorated function), restoring the previous
    mode at its end."""

    def __init__(self, mode):
        self.mode = bool(mode)
        self.prev = None

    def _recreate_cm(self):
        # a decorated function gets a fresh context per call, so recursion restores correctly
        return _GradModeContext(self.mode)

    def __call__(self, func):
        if inspect.isgeneratorfunction(func):
            return self._wrap_generator(func)
        return super().__call__(func)

    def _wrap_generator(self, func):
        """A decorated generator runs each of its steps in the mode, and its caller's code
        between the steps in the caller's (a plain wrapper would set the mode only while
        the generator object is made, before any of its code runs)."""
        mode = self.mode

        @functools.wraps(func)
        def generator(*args, **kwargs):
            gen = func(*args, **kwargs)
            try:
                with _GradModeContext(mode):
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with _GradModeContext(mode):
                            gen.close()
                        raise
                    except BaseException as exc:  # noqa: BLE001 (thrown in by the caller: pass it on)
                        with _GradModeContext(mode):
                            response = gen.throw(exc)
                    else:
                        with _GradModeContext(mode):
                            response = gen.send(request)
            except StopIteration as stop:
                return stop.value

        return generator

    def __enter__(self):
        self.prev = _state.enabled
        _state.enabled = self.mode

    def __exit__(self, *exc):
        _state.enabled = self.prev
        return False


class set_grad_enabled(_GradModeContext):
    """Turn gradient recording on or off. As in PyTorch, the mode applies as soon as this is
    called (``pyrt.set_grad_enabled(False)`` on a line of its own switches it off for good);
    used as a context manager or decorator, the mode before the call comes back at the end."""

    def __init__(self, mode):
        super().__init__(mode)
        self.prev = _state.enabled
        _state.enabled = self.mode

    def __call__(self, func):
        # decorating applies no mode: undo what __init__ applied (each call of the decorated
        # function applies it through _recreate_cm)
        _state.enabled = self.prev
        return super().__call__(func)

    def __enter__(self):
        # the previous mode was taken by __init__, before it applied this one
        _state.enabled = self.mode


class no_grad(_GradModeContext):
    """``with pyrt.no_grad():`` ops record nothing and their results need no gradient."""

    def __init__(self):
        super().__init__(False)


class enable_grad(_GradModeContext):
    def __init__(self):
        super().__init__(True)


class inference_mode(_GradModeContext):
    """``with pyrt.inference_mode():`` is ``no_grad``: pyrt keeps no bookkeeping beyond the
    graph that inference mode could also skip. ``inference_mode(False)`` records as usual.
    As a decorator it may go without parentheses, as torch's may."""

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, bool):  # @pyrt.inference_mode
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        if not isinstance(mode, bool):
            raise TypeError(f"inference_mode(): mode must be a bool, got {type(mode).__name__}")
        super().__init__(not mode)


def _consumer_counts(root):
    """For every tensor made by an op (not a leaf) that is reachable from `root` through
    `_parents`: how many edges of the graph lead to it (how many gradients it will receive)."""
    counts = {}
    stack = [root]
    while stack:
        for parent in stack.pop()._parents:
            if parent._backward is not None and parent._requires_grad:
                key = id(parent)
                if key in counts:
                    counts[key] += 1
                else:
                    counts[key] = 1
                    stack.append(parent)
    return counts


_Tensor = None  # pyrt.tensor.Tensor, imported on first use (pyrt.tensor imports this module)


def run_backward(root, grad, retain_graph=False):
    """Propagate `grad` (an array shaped like root) from `root` to every leaf that requires
    grad, accumulating into the leaves' ``.grad``. The graph is freed on the way unless
    `retain_graph`.

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
        if root._grad is None:
            root._grad = Tensor(grad.copy())
        else:
            root._grad.data += grad
        return
    # a retained graph runs its closures again: an array they return may be one they keep
    # (a loss's saved gradient), so a leaf's .grad, which later backwards add to, is a copy
    owned_by_leaf = _never if retain_graph else _owned
    pending = _consumer_counts(root)
    # entries (tensor, its gradient or None, may we keep that array?): not when it is shared
    # with another tensor's gradient, as `a + b` passes the same array to both inputs
    ready = [(root, grad, False)]
    pop, push = ready.pop, ready.append
    partial = {}
    writes = _writes.count  # closures write no tensor in place: it stays put meanwhile
    while ready:
        node, g, owned = pop()
        parents = node._parents
        if node._epoch < writes:  # something was written in place since its forward
            _check_inputs_unchanged(node)
        # a tensor no gradient reached (every consumer passed None) only releases its inputs
        parent_grads = (None,) * len(parents) if g is None else node._backward(g)
        for parent, pg in zip(parents, parent_grads):
            if not parent._requires_grad:
                continue
            if parent._backward is None:  # a leaf
                if pg is None:
                    continue
                if parent._grad is None:
                    parent._grad = Tensor(pg if owned_by_leaf(pg, g, owned) else pg.copy())
                else:
                    parent._grad.data += pg
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
        if not retain_graph:  # free the graph as we go, as PyTorch does
            node._parents = ()
            node._backward = _freed


def _owned(pg, g, g_owned):
    """Whether `pg`, a gradient a closure returned for the incoming gradient `g`, may be kept
    as a leaf's .grad and added to in place: not `g` itself, not a read-only array (a
    broadcast view), and not a view (a reshape, say) of a `g` that autograd does not own (a
    gradient the caller passed to backward()). CuPy arrays have no writeable flag, and their
    broadcast views are writable: a view of one is never kept."""
    return pg is not g and (pg is None or pg.base is None
                            or (g_owned and getattr(pg.flags, "writeable", False)))


def _never(pg, g, g_owned):
    return False


def reset_grads(tensors, set_to_none=True):
    """zero_grad of Module and Optimizer: drop each tensor's .grad (set_to_none) or fill it
    with zeros."""
    for tensor in tensors:
        if tensor._grad is None:
            continue
        if set_to_none:
            tensor._grad = None
        else:
            tensor._grad.zero_()


def _freed(grad):
    raise RuntimeError(
        "Trying to backward through the graph a second time: its intermediate values were "
        "freed by the first backward()"
    )
