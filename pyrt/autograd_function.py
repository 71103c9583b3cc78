"""Custom differentiable functions, as torch.autograd.Function: a subclass defines
``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)`` as static methods and is called
as ``MyFn.apply(*args)``.

In the graph, a call is one hidden node (_FunctionNode) whose inputs are the tensor
arguments that require grad and whose closure calls the user's backward; each output tensor
is a node with that one input, whose closure puts its gradient in its own slot of a _Pack.
The backward loop sums what reaches the hidden node like any gradient (packs add slot by
slot), so the user's backward runs once, with one gradient per output, and the loop needs
no test of its own for it.
"""

import sys
import warnings

import numpy as np

from pyrt.anomaly_mode import _anomaly, record
from pyrt.autograd import (
    _NEVER,
    _freed,
    _tensor_class,
    _writes,
    is_grad_enabled,
    no_grad,
    write_key,
)

__all__ = ["Function", "FunctionCtx", "multi_output_op"]


class FunctionCtx:
    """The `ctx` that forward() and backward() of a Function share. Besides the methods
    here it takes any attribute (``ctx.scale = 2``)."""

    def __init__(self):
        self._saved = ()  # ((tensor or None, count of in-place writes then), ...), or _freed
        self._non_differentiable = set()
        self._materialize_grads = True
        self.needs_input_grad = ()

    def save_for_backward(self, *tensors):
        """Keep `tensors` (or None) for backward(), which reads them as ``saved_tensors``:
        one written in place between now and then makes that read an error."""
        Tensor = _tensor_class()
        for i, tensor in enumerate(tensors):
            if tensor is not None and not isinstance(tensor, Tensor):
                raise TypeError(f"save_for_backward(): argument {i} must be a Tensor or None, "
                                f"got {type(tensor).__name__}")
        self._saved = tuple((tensor, _writes.count) for tensor in tensors)

    @property
    def saved_tensors(self):
        """The tensors save_for_backward() kept, checked as PyTorch checks them with version
        counters: an in-place write to one since (a mark above the count taken when it was
        saved, autograd._Writes) is an error, as is a read after backward() freed them."""
        if self._saved is _freed:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Saved intermediate values of "
                "the graph are freed when you call .backward() or autograd.grad(). Specify "
                "retain_graph=True if you need to backward through the graph a second time or "
                "if you need to access saved tensors after calling backward.")
        marks = _writes.marks
        for i, (tensor, count) in enumerate(self._saved):
            if tensor is not None and marks.get(write_key(tensor._data), 0) > count:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified "
                    f"by an inplace operation: saved tensor {i} (of shape "
                    f"{list(tensor.shape)}) of {type(self).__name__} was written after "
                    "save_for_backward() saved it. Hint: make the in-place change after "
                    "backward(), or on a copy")
        return tuple(tensor for tensor, _ in self._saved)

    def mark_non_differentiable(self, *tensors):
        """Outputs of forward() that get no gradient: they do not require grad, and
        backward() receives zeros (or None, see set_materialize_grads) for them."""
        self._non_differentiable.update(id(tensor) for tensor in tensors)

    def set_materialize_grads(self, value):
        """Whether backward() receives zeros for an output no gradient reached (the
        default), or None."""
        self._materialize_grads = bool(value)

    def mark_dirty(self, *tensors):
        raise NotImplementedError("mark_dirty(): pyrt does not support in-place operations on "
                                  "tensors that take part in autograd: return a new tensor "
                                  "from forward() instead of modifying an input")


class Function:
    """A differentiable function with a hand-written backward. Subclass it with static
    methods ``forward(ctx, *args, **kwargs)``, which computes the outputs (a tensor, or a
    tuple whose tensors get gradients) with grad mode off, and ``backward(ctx,
    *grad_outputs)``, which maps one gradient per output to one per positional argument of
    forward (None for a non-tensor argument or one that needs none); call
    ``MyFn.apply(*args)``. A subclass may instead define ``forward(*args)`` and
    ``setup_context(ctx, inputs, output)``."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # the class of its ctx, named as PyTorch names it (MyFnBackward)
        cls._ctx_class = type(f"{cls.__name__}Backward", (FunctionCtx,), {})

    def __init__(self, *args, **kwargs):
        warnings.warn(f"{type(self)} should not be instantiated. Methods on autograd "
                      "functions are all static, so you should invoke them on the class "
                      "itself.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is not "
                           "supported: define forward and backward as static methods and call "
                           f"{type(self).__name__}.apply(*args)")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement the backward method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward on `args` and, if grad mode is on and a tensor argument requires
        grad, connect its tensor outputs to them through backward."""
        if cls is Function:
            raise RuntimeError("apply(): call it on a subclass of Function that defines "
                               "forward and backward")
        Tensor = _tensor_class()
        record = is_grad_enabled() and any(
            isinstance(a, Tensor) and a._requires_grad for a in args)
        ctx = cls._ctx_class()
        ctx.needs_input_grad = tuple(
            record and isinstance(a, Tensor) and a._requires_grad for a in args)
        with no_grad():
            if cls.setup_context is Function.setup_context:
                outputs = cls.forward(ctx, *args, **kwargs)
            else:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
        if not record:
            return outputs
        return _connect(cls, ctx, args, outputs)


def _connect(cls, ctx, args, outputs):
    """Make the outputs of forward() tensors of the graph: each differentiable one (a
    floating tensor not marked non-differentiable) gets the hidden node as its input."""
    Tensor = _tensor_class()
    single = not isinstance(outputs, tuple)
    outs = [outputs] if single else list(outputs)
    node = _FunctionNode(cls, ctx, args, len(outs))
    if _anomaly.enabled:  # the forward stack, for anomaly detection's messages
        record(node, node.name, sys._getframe(2))
    taken = {id(a) for a in args if isinstance(a, Tensor)}
    for i, out in enumerate(outs):
        if not isinstance(out, Tensor):
            continue
        node.zeros[i] = (out.shape, out.dtype, _xp(out._data))
        if id(out) in ctx._non_differentiable or out._data.dtype.kind != "f":
            continue
        if id(out) in taken or out._requires_grad:
            # an input returned as it is (or a tensor with a graph of its own): the output
            # is a new tensor sharing its data, as PyTorch makes a view of it
            out = outs[i] = Tensor(out._data)
        taken.add(id(out))
        out._requires_grad = True
        out._parents = (node,)
        out._backward = _FunctionOutput(node, i)
        out._epoch = _NEVER  # it only passes its gradient on
        if _anomaly.enabled:
            record(out._backward, node.name, sys._getframe(2))
    _detach_saved_outputs(ctx, outs)
    return outs[0] if single else tuple(outs)


def _detach_saved_outputs(ctx, outs):
    """A saved output is kept as a tensor sharing its data outside the graph: the output
    itself would hold its own closure through the ctx (a cycle)."""
    if ctx._saved is _freed or not ctx._saved:
        return
    Tensor = _tensor_class()
    ids = {id(out) for out in outs if isinstance(out, Tensor) and out._backward is not None}
    ctx._saved = tuple((Tensor(t._data) if id(t) in ids else t, count)
                       for t, count in ctx._saved)


def _xp(array):
    from pyrt.functional import _xp

    return _xp(array)


class _Pack:
    """The gradients of the outputs of one Function call, a slot per output (None: none
    yet). Packs add slot by slot, so that the backward loop sums them as it sums arrays."""

    __slots__ = ("grads",)
    base = None  # for autograd._owned: a pack is the loop's own

    def __init__(self, grads):
        self.grads = grads

    def __add__(self, other):
        return _Pack(tuple(a if b is None else b if a is None else a + b
                           for a, b in zip(self.grads, other.grads)))


class _FunctionOutput:
    """The backward closure of an output of a Function call: its gradient in its slot of a
    pack for the hidden node. name() is the Function's, as PyTorch names its grad_fn."""

    __slots__ = ("__weakref__", "index", "node")

    def __init__(self, node, index):
        self.node, self.index = node, index

    def __call__(self, g):
        grads = [None] * len(self.node.zeros)
        grads[self.index] = g
        return (_Pack(tuple(grads)),)

    def name(self):
        return self.node.name

    def __repr__(self):
        return f"<{self.node.name} object (output {self.index})>"


class _FunctionNode:
    """The hidden node of a Function call: its inputs are the tensor arguments that require
    grad; its closure calls the user's backward on a pack of output gradients. When the
    backward loop frees it (assigns _freed to _backward), the saved tensors go too."""

    __slots__ = ("__weakref__", "_epoch", "_parents", "_requires_grad", "ctx", "function",
                 "name", "positions", "tensor_args", "zeros")

    def __init__(self, function, ctx, args, n_outputs):
        Tensor = _tensor_class()
        self.function, self.ctx, self.name = function, ctx, type(ctx).__name__
        self.tensor_args = tuple(isinstance(a, Tensor) for a in args)
        # the positions in args of the node's inputs
        self.positions = tuple(i for i, a in enumerate(args)
                               if isinstance(a, Tensor) and a._requires_grad)
        self._parents = tuple(args[i] for i in self.positions)
        for a in args:  # read by a recorded op (functional._make)
            if isinstance(a, Tensor):
                a._used = True
        self._requires_grad = True
        self._epoch = _NEVER  # saved_tensors makes the in-place check itself
        self.zeros = [None] * n_outputs  # (shape, dtype, array module) of each tensor output

    @property
    def _backward(self):
        return _freed if self.ctx._saved is _freed else self

    @_backward.setter
    def _backward(self, value):
        if value is _freed:
            self.ctx._saved = _freed

    def __call__(self, pack):
        Tensor = _tensor_class()
        grads = []
        for g, zeros in zip(pack.grads, self.zeros):
            if g is None and zeros is not None and self.ctx._materialize_grads:
                shape, dtype, xp = zeros
                g = xp.zeros(shape, dtype)
            grads.append(None if g is None else Tensor(g))
        with no_grad():
            result = self.function.backward(self.ctx, *grads)
        return self._input_gradients(result if isinstance(result, tuple) else (result,))

    def _input_gradients(self, result):
        """The gradients backward() returned, checked, for the node's inputs."""
        n = len(self.tensor_args)
        if len(result) > n and all(g is None for g in result[n:]):
            result = result[:n]  # extra Nones are allowed, as in PyTorch
        if len(result) != n:
            raise RuntimeError(f"function {self.name} returned an incorrect number of "
                               f"gradients (expected {n}, got {len(result)})")
        Tensor = _tensor_class()
        for i, g in enumerate(result):
            if g is None:
                continue
            if not isinstance(g, Tensor):
                raise TypeError(f"function {self.name} returned a {type(g).__name__} as "
                                f"gradient {i}: expected a Tensor or None")
            if not self.tensor_args[i]:
                raise RuntimeError(f"function {self.name} returned a gradient different than "
                                   f"None at position {i + 1}, but the corresponding forward "
                                   "input was not a Tensor")
        return tuple(None if result[i] is None else self._input_gradient(i, result[i], parent)
                     for i, parent in zip(self.positions, self._parents))

    def _input_gradient(self, i, g, parent):
        """The gradient `g` (a Tensor) for argument i as float32 data of the argument's shape:
        one shaped as the argument broadcasts to is summed back to it, as in PyTorch. It is
        returned as a read-only view (autograd._owned): backward may have returned an array
        it keeps (a saved tensor's), which a leaf's .grad must not become."""
        if g.device != parent.device:
            raise RuntimeError(f"function {self.name} returned a gradient on {g.device} at "
                               f"index {i}, but the input is on {parent.device}")
        data = g._data
        if data.shape != parent.shape:
            try:
                expandable = np.broadcast_shapes(parent.shape, data.shape) == data.shape
            except ValueError:
                expandable = False
            if not expandable:
                raise RuntimeError(f"Function {self.name} returned an invalid gradient at "
                                   f"index {i} - got {list(data.shape)} but expected shape "
                                   f"compatible with {list(parent.shape)}")
            from pyrt.functional import _unbroadcast

            data = _unbroadcast(data, parent.shape)
        data = _xp(data).asarray(data, dtype=np.float32, order="C").view()
        if isinstance(data, np.ndarray):
            data.flags.writeable = False
        return data


class _OpNode:
    """The hidden node of a built-in op with several outputs (multi_output_op): its parents
    are the op's inputs, its closure takes the pack of the outputs' gradients. Unlike a
    Function's, it checks its inputs for in-place writes as any op does."""

    __slots__ = ("_backward", "_epoch", "_parents", "_requires_grad", "name", "zeros")

    def __init__(self, name, parents, backward, outputs):
        self.name = name
        self._parents = parents
        self._backward = backward
        self._requires_grad = True
        self._epoch = _writes.count  # backward may read the inputs: a later write is an error
        self.zeros = [None] * outputs


def multi_output_op(name, inputs, backward, results):
    """Connect `results`, the tensors an op made from `inputs`, to one hidden node named
    `name` whose closure `backward(pack)` takes the pack of the results' gradients (each
    None where none reached it) and returns one gradient per input, in order (None for an
    input that does not require grad). Returns the results."""
    node = _OpNode(name, tuple(inputs), backward, len(results))
    if _anomaly.enabled:  # the forward stack, for anomaly detection's messages
        record(backward, name, sys._getframe(1))
    for tensor in inputs:  # read by a recorded op (functional._make)
        tensor._used = True
    for index, result in enumerate(results):
        result._requires_grad = True
        result._parents = (node,)
        result._backward = _FunctionOutput(node, index)
        result._epoch = _NEVER  # it only passes its gradient on
    return results
