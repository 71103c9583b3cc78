"""Reverse-mode automatic differentiation: grad mode and the backward pass.

A tensor made by an op while grad mode is on, from at least one input that requires grad,
remembers its inputs (``_parents``) and a closure (``_backward``) that maps the gradient of the
output to the gradients of the inputs. ``backward()`` sorts the graph topologically and runs
the closures from the output back to the leaves, summing the gradients of tensors used more
than once. Only leaves (tensors made by the user, such as parameters) keep ``.grad``.

``grad()``, ``backward(inputs=...)``, several outputs at once and hooks on leaves take a general
pass (run_graph) that sums each tensor's gradients before it uses them; the plain backward()
of one tensor keeps the lean loop of run_backward. Custom differentiable functions
(``Function``) live in pyrt.autograd_function.
"""

import contextlib
import functools
import inspect
import itertools
import sys
import threading
import weakref

import numpy as np

from pyrt.anomaly_mode import _anomaly, checked_call
from pyrt.runtime import carry_thread_state

__all__ = ["Function", "Variable", "backward", "detect_anomaly", "enable_grad", "functional",
           "grad", "gradcheck", "gradgradcheck", "inference_mode", "is_anomaly_check_nan_enabled",
           "is_anomaly_enabled", "is_grad_enabled", "no_grad", "set_detect_anomaly",
           "set_grad_enabled"]

_NEVER = float("inf")  # the _epoch of a tensor whose backward reads no input
_ndarray = np.ndarray
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
        if marks.get(write_key(parent._data), 0) > stamp:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by "
                f"an inplace operation: input {i} (of shape {list(parent._data.shape)}) of an "
                "op was written after the op used it. Hint: make the in-place change after "
                "backward(), or on a copy (x = x * 2 rather than x.mul_(2))")

class _GradMode(threading.local):
    enabled = True  # the class attribute is every thread's default: a plain attribute read
    inference = False  # inside inference_mode() (is_inference_mode_enabled)


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
        self.prev_inference = None

    def _recreate_cm(self):
        return inference_mode(not self.mode)

    def __enter__(self):
        super().__enter__()
        self.prev_inference = _state.inference
        _state.inference = not self.mode

    def __exit__(self, *exc):
        _state.inference = self.prev_inference
        return super().__exit__(*exc)


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


def _tensor_class():
    global _Tensor
    if _Tensor is None:
        from pyrt.tensor import Tensor as _Tensor
    return _Tensor


def run_backward(root, grad, retain_graph=False, inputs=None):
    """Propagate `grad` (an array shaped like root) from `root` to every leaf that requires
    grad, accumulating into the leaves' ``.grad``. The graph is freed on the way unless
    `retain_graph`. With `inputs` (Tensor.backward's), only those tensors' ``.grad`` gains.

    Kahn's algorithm: a tensor made by an op runs its backward closure once all of its
    consumers in the graph have passed their gradients to it, so each closure runs once, on
    the sum of the gradients of its output. A gradient travels with its tensor on the `ready`
    stack; only the gradients of tensors used more than once wait in `partial` for the rest.
    A leaf needs no waiting: each gradient that reaches it is added to its ``.grad`` at once,
    in the order they arrive, which is the order the sums would have been made in anyway."""
    # one test per backward(); anomaly mode checks each closure, in run_graph's loop
    if inputs is not None or _leaf_hooks or _post_accumulate_hooks or _anomaly.enabled:
        targets = None if inputs is None else _checked_inputs(inputs, "backward")
        run_graph((root,), (grad,), retain_graph, targets)
        return
    Tensor = _tensor_class()
    if root._backward is None:  # a leaf: its gradient is the one given
        if root._grad is None:
            root._grad = Tensor(grad.copy())
        else:
            root._grad._data += grad
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
        if g.__class__ is not _ndarray and isinstance(g, np.generic):
            g = np.asarray(g)  # (NumPy's arithmetic on 0-d arrays gives scalars)
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
                    parent._grad._data += pg
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


# ---- the general pass: several outputs, chosen inputs, leaf hooks ---------------------------


def pass_plan(roots, targets):
    """What a pass from `roots` to `targets` (ids; every leaf when None) visits: the ids of
    the tensors from which a target is reached (useful) and of those whose backward runs, and
    each tensor's count of gradients still to come (pending)."""
    order = _post_order(roots)
    useful, running = _useful(order, targets)
    pending = {}
    for node in order:
        if id(node) in running:
            for parent in node._parents:
                if parent._requires_grad and id(parent) in useful:
                    pending[id(parent)] = pending.get(id(parent), 0) + 1
    for root in roots:  # a root reached from another root waits for that one's gradient too
        pending[id(root)] = pending.get(id(root), 0) + 1
    return useful, running, pending


def run_graph(roots, grads, retain_graph=False, inputs=None, accumulate=True):
    """Propagate the gradients `grads` (arrays, or None for none) of the tensors `roots` to
    `inputs` (tensors made by ops or leaves; every leaf that requires grad when None). Each
    input's gradient is added to its ``.grad`` if `accumulate`; the result maps id(input) to
    its gradient array (absent when none reached it). The graph is freed on the way unless
    `retain_graph`.

    Kahn's algorithm as in run_backward, but on the part of the graph that leads to an input
    (a tensor from which no input can be reached is not differentiated), and every tensor,
    leaves included, waits for all of its gradients: a hook, and an input's result, see the
    sum once."""
    targets = None if inputs is None else {id(t) for t in inputs}
    if accumulate and inputs is not None:
        # as in PyTorch, a tensor made by an op that backward(inputs=) accumulates into
        # retains its gradient from then on (retain_grad())
        for tensor in inputs:
            if tensor._backward is not None:
                _Hooked.of(tensor).retain = True
    useful, running, pending = pass_plan(roots, targets)
    partial, ready, results = {}, [], {}
    for root, g in zip(roots, grads):
        _arrive(root, g, pending, partial, ready)
    anomaly = _anomaly.enabled
    while ready:
        node, g = ready.pop()
        if g.__class__ is not _ndarray and isinstance(g, np.generic):
            g = np.asarray(g)  # (NumPy's arithmetic on 0-d arrays gives scalars)
        backward = node._backward
        if backward is None:  # a leaf
            if g is not None and (targets is None or id(node) in targets):
                _deliver(node, _run_leaf_hooks(node, g), results, accumulate)
                if accumulate:
                    _run_post_accumulate_hooks(node)
            continue
        runs = id(node) in running
        # grad() takes the gradient of a tensor made by an op (retain_grad stores it for
        # backward) before its hooks if its closure runs on (it leads to another input),
        # after them otherwise: PyTorch's rule
        target = (not accumulate and g is not None and targets is not None
                  and id(node) in targets)
        if target and runs:
            _deliver(node, g, results, accumulate)
            target = False
        if isinstance(backward, _Hooked):  # its hooks see (and may replace) the whole gradient
            if g is not None:
                g = backward.run_hooks(g)
            backward = backward.backward
        if target:
            _deliver(node, g, results, accumulate)
        if not runs:
            continue
        parents = node._parents
        if anomaly:
            parent_grads = checked_call(node, backward, g)
        else:
            if node._epoch < _writes.count:
                _check_inputs_unchanged(node)
            parent_grads = (None,) * len(parents) if g is None else backward(g)
        for parent, pg in zip(parents, parent_grads):
            if parent._requires_grad and id(parent) in useful:
                _arrive(parent, pg, pending, partial, ready)
        if not retain_graph:
            node._parents = ()
            node._backward = _freed
    return results


def _post_order(roots):
    """The tensors reachable from `roots` through inputs that require grad, each after all
    of its inputs (iterative depth-first search: graphs can be deeper than the recursion
    limit)."""
    order, seen = [], set()
    for root in roots:
        if id(root) in seen:
            continue
        seen.add(id(root))
        stack = [(root, iter(root._parents))]
        while stack:
            node, parents = stack[-1]
            for parent in parents:
                if parent._requires_grad and id(parent) not in seen:
                    seen.add(id(parent))
                    stack.append((parent, iter(parent._parents)))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


def _useful(order, targets):
    """(useful, running): the ids of the tensors of `order` that are targets (leaves when
    `targets` is None) or lead to one, and of those among them whose backward closure must
    run (they lead to a target through an input). A freed closure runs, to raise."""
    useful, running = set(), set()
    for node in order:  # inputs first: a tensor's inputs are decided before it
        key = id(node)
        if node._backward is _freed or any(
                id(parent) in useful for parent in node._parents if parent._requires_grad):
            running.add(key)
            useful.add(key)
        elif node._backward is None if targets is None else key in targets:
            useful.add(key)
    return useful, running


def _arrive(node, g, pending, partial, ready):
    """One of the gradients `node` waits for arrives: summed with the others (None is
    none); with the last, node is ready."""
    key = id(node)
    if g is not None:
        partial[key] = g if key not in partial else partial[key] + g
    left = pending[key] - 1
    if left:
        pending[key] = left
    else:
        del pending[key]
        ready.append((node, partial.pop(key, None)))


def _deliver(tensor, g, results, accumulate):
    """An input's whole gradient: added to its .grad, or kept for grad()."""
    if not accumulate:
        results[id(tensor)] = g
    else:
        if tensor._grad is None:
            tensor._grad = _tensor_class()(g.copy())  # g may be shared: the .grad is its own
        else:
            tensor._grad._data += g


def _checked_inputs(inputs, name):
    """`inputs` of grad() or backward(): a tuple of tensors that require grad."""
    Tensor = _tensor_class()
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    if not inputs:
        raise RuntimeError(f"`inputs` argument to `{name}()` cannot be empty.")
    for i, tensor in enumerate(inputs):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"{name}(): inputs[{i}] must be a Tensor, got "
                            f"{type(tensor).__name__}")
        if not tensor._requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors does not require grad: "
                               f"inputs[{i}] of {name}()")
    return inputs


def _roots_and_gradients(outputs, grad_outputs, name):
    """The tensors to differentiate and their gradients as arrays, checked as PyTorch checks
    them: a missing gradient is ones, for an output of one element only."""
    Tensor = _tensor_class()
    outputs = _tensors(outputs, "outputs", name)
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        grad_outputs = (grad_outputs,) * len(outputs) if grad_outputs is None else (grad_outputs,)
    else:
        grad_outputs = tuple(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grad_outputs)} gradients")
    grads = tuple(_output_gradient(output, gradient, i)
                  for i, (output, gradient) in enumerate(zip(outputs, grad_outputs)))
    for i, output in enumerate(outputs):
        if not output._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not "
                               "have a grad_fn")
    return outputs, grads


def _tensors(tensors, argument, name):
    """A Tensor or a sequence of them, as a tuple."""
    Tensor = _tensor_class()
    if isinstance(tensors, Tensor):
        return (tensors,)
    if not isinstance(tensors, (tuple, list)) or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError(f"{name}(): {argument} must be a Tensor or a sequence of Tensors, got "
                        f"{type(tensors).__name__}")
    return tuple(tensors)


def _output_gradient(output, gradient, i):
    """The gradient of `output` (the i-th) as a float32 array on its device."""
    from pyrt.functional import _xp

    xp = _xp(output._data)
    if gradient is None:
        if output._data.size != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        return xp.ones(output.shape, np.float32)
    if not isinstance(gradient, _tensor_class()):
        raise TypeError(f"gradients can be either Tensors or None, but got "
                        f"{type(gradient).__name__}")
    if gradient.shape != output.shape:
        raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                           f"{list(gradient.shape)} and output[{i}] has a shape of "
                           f"{list(output.shape)}.")
    if gradient.device != output.device:
        raise RuntimeError(f"grad_output[{i}] is on {gradient.device} but output[{i}] is on "
                           f"{output.device}")
    return xp.asarray(gradient._data, dtype=np.float32, order="C")


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=None, materialize_grads=False):
    """The gradients of `outputs` (a tensor or a sequence of them, weighted by
    `grad_outputs`) with respect to `inputs` (leaves or tensors made by ops), as a tuple of
    tensors; no ``.grad`` is touched. An input the outputs do not depend on is an error
    unless `allow_unused` (its gradient is then None, or zeros with `materialize_grads`).
    The graph is freed unless `retain_graph` (which defaults to `create_graph`). With
    `create_graph` the backward pass is recorded (pyrt.higher_order): the gradients have a
    graph of their own, to be differentiated again."""
    if allow_unused is None:
        allow_unused = materialize_grads
    elif materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    roots, grads = _roots_and_gradients(outputs, grad_outputs, "grad")
    inputs = _checked_inputs(inputs, "grad")
    retain = create_graph if retain_graph is None else bool(retain_graph)
    if create_graph:
        from pyrt.higher_order import run_graph_create

        results = run_graph_create(roots, _gradient_tensors(grads, grad_outputs), retain,
                                   inputs, accumulate=False)
    else:
        results = run_graph(roots, grads, retain, inputs, accumulate=False)
    Tensor = _tensor_class()
    out = []
    for i, tensor in enumerate(inputs):
        g = results.get(id(tensor))
        if g is not None:
            # its own array: g may be shared, or the caller's (a recorded one is a new tensor)
            out.append(g if create_graph else Tensor(g.copy()))
        elif not allow_unused:
            raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have "
                               "been used in the graph. Set allow_unused=True if this is the "
                               "desired behavior.")
        else:
            out.append(Tensor(_zeros_like(tensor._data)) if materialize_grads else None)
    return tuple(out)


def _gradient_tensors(arrays, grad_outputs):
    """The gradients of a recorded pass as Tensors: each one the caller gave (float32, so
    that the pass is differentiable with respect to it too), else the checked array."""
    Tensor = _tensor_class()
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        grad_outputs = (grad_outputs,) * len(arrays)
    out = []
    for array, given in zip(arrays, grad_outputs):
        same = isinstance(given, Tensor) and given._data.dtype == np.float32 and (
            given._data.flags.c_contiguous)
        out.append(given if same else Tensor(array))
    return tuple(out)


def _zeros_like(array):
    from pyrt.functional import _xp

    return _xp(array).zeros(array.shape, np.float32)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradients of `tensors` (a tensor or a sequence of them, weighted by
    `grad_tensors`) into the ``.grad`` of every leaf that requires grad, or of `inputs`
    only. The graph is freed unless `retain_graph` (which defaults to `create_graph`). With
    `create_graph` the pass is recorded: each ``.grad`` gains a gradient with a graph of its
    own (pyrt.higher_order)."""
    roots, grads = _roots_and_gradients(tensors, grad_tensors, "backward")
    targets = None if inputs is None else _checked_inputs(inputs, "backward")
    retain = create_graph if retain_graph is None else bool(retain_graph)
    if create_graph:
        from pyrt.higher_order import run_graph_create

        run_graph_create(roots, _gradient_tensors(grads, grad_tensors), retain, targets)
    elif targets is None and len(roots) == 1:
        run_backward(roots[0], grads[0], retain)
    else:
        run_graph(roots, grads, retain, targets)


# ---- hooks -----------------------------------------------------------------------------------


class _Hooked:
    """The backward closure of a tensor made by an op that has hooks or a retained gradient:
    runs the hooks on the gradient the tensor receives (each may replace it), stores it in
    the tensor's .grad if retained, then runs the closure it wraps. Installed only on such
    tensors, so that the backward loop has no extra test. It holds the tensor weakly (no
    cycle through the tensor's own closure)."""

    __slots__ = ("backward", "hooks", "retain", "tensor")

    def __init__(self, tensor):
        self.backward = tensor._backward
        self.hooks = {}  # handle id -> hook, in the order they were registered
        self.retain = False
        self.tensor = weakref.ref(tensor)

    @classmethod
    def of(cls, tensor):
        """The tensor's _Hooked closure, installed on first use."""
        if not isinstance(tensor._backward, cls):
            tensor._backward = cls(tensor)
        return tensor._backward

    def run_hooks(self, g):
        """The gradient after the hooks, stored in .grad if retained."""
        g = _apply_hooks(self.hooks, g)
        tensor = self.tensor()
        if self.retain and tensor is not None:
            if tensor._grad is None:
                tensor._grad = _tensor_class()(g.copy())
            else:
                tensor._grad._data += g
        return g

    def __call__(self, g):
        return self.backward(self.run_hooks(g))


def _apply_hooks(hooks, g):
    """Run each hook on the gradient `g` in turn; one that returns a tensor (or an array)
    replaces it, of the same shape."""
    if not hooks:
        return g
    from pyrt.functional import _xp

    Tensor = _tensor_class()
    for hook in tuple(hooks.values()):  # a hook may remove itself
        replaced = hook(Tensor(g))
        if replaced is not None:
            new = _xp(g).asarray(replaced._data if isinstance(replaced, Tensor) else replaced,
                                 dtype=np.float32)
            if new.shape != g.shape:
                raise RuntimeError(f"hook '{getattr(hook, '__name__', hook)}' has changed the "
                                   f"size of value: {list(g.shape)} to {list(new.shape)}")
            g = new
    return g


# leaves with hooks: id(leaf) -> (a weak reference to it, its hooks by handle id). While it is
# empty, backward() takes run_backward's loop, which has no place for them
_leaf_hooks = {}


# leaves with post-accumulate-grad hooks, kept as _leaf_hooks: each runs as hook(leaf) once
# the leaf's .grad has gained its gradient (Tensor.register_post_accumulate_grad_hook)
_post_accumulate_hooks = {}


def register_leaf_hook(leaf, hook):
    """Run hook(grad) on the gradient of `leaf` before it is added to ``.grad`` (a tensor it
    returns replaces it). Returns the handle."""
    return _register(_leaf_hooks, leaf, hook)


def register_post_accumulate_hook(leaf, hook):
    """Run hook(leaf) after the gradient of `leaf` has been added to its ``.grad`` in a
    backward pass (not in grad(), which accumulates nothing). Returns the handle."""
    return _register(_post_accumulate_hooks, leaf, hook)


def _register(table, leaf, hook):
    key = id(leaf)
    entry = table.get(key)
    if entry is None or entry[0]() is not leaf:
        hooks = {}
        ref = weakref.ref(leaf, lambda _, key=key, hooks=hooks: _drop_leaf_hooks(key, hooks,
                                                                                 table))
        entry = table[key] = (ref, hooks)
    return _HookHandle(entry[1], hook, key, table)


def _drop_leaf_hooks(key, hooks, table=_leaf_hooks):
    """Forget a leaf's hooks (all removed, or the leaf is gone), unless its id now names
    another leaf."""
    entry = table.get(key)
    if entry is not None and entry[1] is hooks:
        del table[key]


def _run_leaf_hooks(leaf, g):
    entry = _leaf_hooks.get(id(leaf))
    if entry is None or entry[0]() is not leaf:
        return g
    return _apply_hooks(entry[1], g)


def _run_post_accumulate_hooks(leaf):
    entry = _post_accumulate_hooks.get(id(leaf))
    if entry is not None and entry[0]() is leaf:
        for hook in tuple(entry[1].values()):  # a hook may remove itself
            hook(leaf)


class _HookHandle:
    """What register_hook returns: remove() takes the hook off (again: nothing happens)."""

    _ids = itertools.count()

    def __init__(self, hooks, hook, leaf_key=None, table=_leaf_hooks):
        self.id = next(self._ids)
        self._hooks, self._leaf_key, self._table = hooks, leaf_key, table
        hooks[self.id] = hook

    def remove(self):
        self._hooks.pop(self.id, None)
        if not self._hooks and self._leaf_key is not None:
            _drop_leaf_hooks(self._leaf_key, self._hooks, self._table)


# (these build on this module)
from pyrt import autograd_functional as functional  # noqa: E402
from pyrt.anomaly_mode import (  # noqa: E402
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from pyrt.autograd_function import Function  # noqa: E402
from pyrt.autograd_variable import Variable  # noqa: E402
from pyrt.gradcheck import gradcheck, gradgradcheck  # noqa: E402

# ``import pyrt.autograd.functional`` finds the module, as torch.autograd.functional
sys.modules[__name__ + ".functional"] = functional

# torch.autograd's submodules that ported code imports from, importable as theirs
from pyrt import autograd_variable as variable  # noqa: E402
from pyrt import grad_mode  # noqa: E402
from pyrt import once_differentiable as function  # noqa: E402

for _name, _module in (("function", function), ("grad_mode", grad_mode), ("variable", variable)):
    sys.modules[f"{__name__}.{_name}"] = _module
