"""Module backward hooks, as torch.nn's: a full backward hook ``hook(module, grad_input,
grad_output)`` sees the gradients with respect to a call's positional tensor inputs and its
outputs; a backward pre-hook ``hook(module, grad_output)`` sees the output gradients first.

As in PyTorch (torch/utils/hooks.py BackwardHook), one call of a hooked module wraps its
tensor inputs, and then its tensor outputs, in an identity node of the graph
(autograd_function.multi_output_op): the forward reads views of the inputs and the caller gets
views of the outputs. The backward loop reaches the output node before anything inside the
module, so its closure runs the pre-hooks and keeps the output gradients; it reaches the input
node after everything inside the module has passed its gradient on, so that closure holds the
full input gradients and runs the hooks. Each closure returns what the hooks returned in place
of the gradients they were given. A module whose inputs need no gradient has no input node:
its hooks run from the output node, with grad_input all None.

The deprecated ``register_backward_hook`` instead wraps the closure of the op that made the
module's (first) output: its hook sees that op's input and output gradients only.
"""

import warnings

import numpy as np

from pyrt.autograd import is_grad_enabled
from pyrt.autograd_function import _FunctionOutput, multi_output_op
from pyrt.functional import _xp
from pyrt.tensor import Tensor

__all__ = ["BackwardHook", "attach_legacy_hooks"]

_NAME = "BackwardHookFunctionBackward"


def _as_tensors(grads):
    return tuple(None if g is None else Tensor(g) for g in grads)


def _as_arrays(grads, like):
    """The tensors (or None) a hook returned, as gradient arrays of the shapes in `like`."""
    arrays = []
    for g, old in zip(grads, like):
        if g is None:
            arrays.append(None)
            continue
        if not isinstance(g, Tensor):
            raise TypeError(f"expected Variable, but hook returned {type(g).__name__!r}")
        if old is not None and g._data.shape != old.shape:
            raise RuntimeError(f"hook 'hook' has changed the size of value: "
                               f"{list(old.shape)} to {list(g._data.shape)}")
        arrays.append(_xp(g._data).asarray(g._data, dtype=np.float32))
    return tuple(arrays)


def _wrapped_positions(values):
    """The positions in `values` (a tuple) of the tensors that require grad, which an
    identity node wraps; None when there are none or grad mode is off: no node then."""
    if not is_grad_enabled():
        return None
    diff = [i for i, v in enumerate(values) if isinstance(v, Tensor) and v._requires_grad]
    return diff or None


class BackwardHook:
    """The backward hooks of one call of `module`: `hooks` (full) and `pre_hooks`, as lists
    taken when the call began. setup_input_hook wraps the call's arguments, setup_output_hook
    its result."""

    def __init__(self, module, hooks, pre_hooks):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_outputs = None  # set by the output node, consumed by the input node
        self.n_inputs = self.n_outputs = 0
        self.input_positions = None  # of the inputs that require grad; None: no input node

    def setup_input_hook(self, args):
        """The arguments, their tensors that require grad replaced by views behind the input
        node."""
        self.n_inputs = len(args)
        diff = self.input_positions = _wrapped_positions(args)
        if diff is None:
            return args
        inputs = tuple(args[i] for i in diff)
        # a tensor argument that needs no gradient gets zeros in grad_input, as in PyTorch,
        # whose identity node wraps it too
        constants = [(i, a) for i, a in enumerate(args)
                     if isinstance(a, Tensor) and not a._requires_grad]
        views = multi_output_op(_NAME, inputs, self._input_backward(diff, inputs, constants),
                                [Tensor(t._data) for t in inputs])
        args = list(args)
        for i, view in zip(diff, views):
            args[i] = view
        return tuple(args)

    def _input_backward(self, diff, inputs, constants):
        def backward(pack):
            # an input the forward did not use gets zeros, as PyTorch's identity Function
            # materializes them
            grads = [_xp(t._data).zeros(t.shape, np.float32) if g is None else g
                     for g, t in zip(pack.grads, inputs)]
            if self.grad_outputs is None:
                # the gradient reached the inputs without passing through the outputs (a
                # graph made inside the module): no hook runs
                return tuple(grads)
            grad_input = [None] * self.n_inputs
            for i, g in zip(diff, grads):
                grad_input[i] = Tensor(g)
            for i, a in constants:
                grad_input[i] = Tensor(_xp(a._data).zeros(a.shape, np.float32))
            grad_input = tuple(grad_input)
            for hook in self.hooks:
                out = hook(self.module, grad_input, self.grad_outputs)
                if out is None:
                    continue
                if not isinstance(out, tuple):
                    out = (out,)
                if len(out) != len(grad_input):
                    raise RuntimeError("Backward hook returned an invalid number of "
                                       f"grad_input, got {len(out)}, but expected "
                                       f"{len(grad_input)}")
                grad_input = out
            self.grad_outputs = None
            return _as_arrays([grad_input[i] for i in diff], grads)
        return backward

    def setup_output_hook(self, result):
        """The result, its tensors that require grad replaced by views behind the output node.
        A result that is neither a Tensor nor a tuple gets no hook, with PyTorch's warning."""
        if not isinstance(result, (Tensor, tuple)):
            warnings.warn("For backward hooks to be called, module output should be a Tensor "
                          f"or a tuple of Tensors but received {type(result)}", stacklevel=3)
        single = not isinstance(result, tuple)
        values = (result,) if single else result
        self.n_outputs = len(values)
        diff = _wrapped_positions(values)
        if diff is None:
            return result
        outputs = tuple(values[i] for i in diff)
        views = multi_output_op(_NAME, outputs, self._output_backward(diff),
                                [Tensor(t._data) for t in outputs])
        values = list(values)
        for i, view in zip(diff, views):
            values[i] = view
        return values[0] if single else tuple(values)

    def _output_backward(self, diff):
        def backward(pack):
            grads = pack.grads
            grad_output = [None] * self.n_outputs
            for i, g in zip(diff, grads):
                grad_output[i] = None if g is None else Tensor(g)
            grad_output = tuple(grad_output)
            for hook in self.pre_hooks:
                out = hook(self.module, grad_output)
                if out is None:
                    continue
                if not isinstance(out, tuple):
                    out = (out,)
                if len(out) != len(grad_output):
                    raise RuntimeError("Backward pre hook returned an invalid number of "
                                       f"grad_output, got {len(out)}, but expected "
                                       f"{len(grad_output)}")
                grad_output = out
            self.grad_outputs = grad_output
            if self.input_positions is None and self.hooks:
                self._hooks_without_inputs(grad_output)
            return _as_arrays([grad_output[i] for i in diff], grads)
        return backward

    def _hooks_without_inputs(self, grad_output):
        """No input requires grad: the hooks run now, with grad_input all None, and may return
        nothing else."""
        warnings.warn("Full backward hook is firing when gradients are computed with respect "
                      "to module outputs since no inputs require gradients. See "
                      "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                      "#torch.nn.Module.register_full_backward_hook for more details.",
                      stacklevel=2)
        grad_input = (None,) * self.n_inputs
        for hook in self.hooks:
            out = hook(self.module, grad_input, grad_output)
            if out is not None and not (isinstance(out, tuple)
                                        and all(g is None for g in out)):
                raise RuntimeError("Backward hook for Modules where no input requires gradient "
                                   "should always return None or None for all gradients.")
        self.grad_outputs = None


class _LegacyHook:
    """The closure of the op that made a module's output, with the module's deprecated
    backward hooks run on that op's gradients: hook(module, grad_input, grad_output), where
    grad_input holds the gradients the op passes to its inputs; a tuple returned replaces
    them."""

    __slots__ = ("__weakref__", "backward", "hooks", "module")

    def __init__(self, backward, hooks, module):
        self.backward, self.hooks, self.module = backward, hooks, module

    def __call__(self, g):
        grads = tuple(self.backward(g))
        grad_output = (Tensor(g),)
        for hook in self.hooks:
            out = hook(self.module, _as_tensors(grads), grad_output)
            if out is None:
                continue
            if not isinstance(out, tuple):
                out = (out,)
            if len(out) != len(grads):
                raise RuntimeError(f"hook '{getattr(hook, '__name__', hook)}' has returned an "
                                   f"incorrect number of values (got {len(out)}, but "
                                   f"expected {len(grads)})")
            grads = _as_arrays(out, grads)
        return grads

    def name(self):
        backward = self.backward
        return backward.name() if hasattr(backward, "name") else type(backward).__name__


def attach_legacy_hooks(module, hooks, result):
    """Wrap the closure of the op that made the first tensor of `result` with the deprecated
    backward hooks of `module`. An output made by a multi-output op or a Function (whose
    closure passes a pack of gradients on) gets none, with a warning."""
    tensor = result
    while not isinstance(tensor, Tensor):
        if isinstance(tensor, dict):
            tensor = next(v for v in tensor.values() if isinstance(v, Tensor))
        else:
            tensor = tensor[0]
    if tensor._backward is None:
        return
    if isinstance(tensor._backward, _FunctionOutput):
        warnings.warn("register_backward_hook: the output was made by an op with several "
                      "outputs, whose gradients the hook cannot see; use "
                      "register_full_backward_hook", stacklevel=3)
        return
    tensor._backward = _LegacyHook(tensor._backward, hooks, module)
