"""Activation checkpointing, as torch.utils.checkpoint: ``checkpoint(function, *args)`` runs
function without keeping the intermediate values of its graph, and runs it again in the
backward pass to compute its gradients from them.

The forward pass runs function with grad mode on, over fresh leaves sharing the data of the
tensor arguments, only to learn which tensors that require grad it reads (its tensor
arguments, and the parameters and other leaves it reaches); then its graph is dropped, and
its outputs become the outputs of one node whose inputs are those tensors. That node's
backward restores the random generator to its state before the forward pass (so that
dropout draws the same masks), runs function again with grad mode on, and differentiates
the new outputs with respect to the same tensors. The gradients are those of the plain
forward pass, bit for bit where the recomputation repeats the same operations.

A tensor made by an op outside function that function reads should reach it as an
argument: read from outside (a closure), its own graph is differentiated from inside the
node, and must still be there (not freed by the backward pass) when the node runs.
"""

import warnings

from pyrt.autograd import _tensor_class, enable_grad, is_grad_enabled, run_graph
from pyrt.autograd_function import multi_output_op

__all__ = ["checkpoint", "checkpoint_sequential"]

_USE_REENTRANT_WARNING = (
    "pyrt.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
    "use_reentrant=False is recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants.")


def _no_context():
    from contextlib import nullcontext

    return nullcontext(), nullcontext()


def checkpoint(function, *args, use_reentrant=None, context_fn=None,
               determinism_check="default", debug=False, early_stop=True, **kwargs):
    """function(*args, **kwargs), computed without keeping its graph's intermediate values:
    backward() runs function again to compute its gradients. With preserve_rng_state (a
    keyword, True by default) the random generator is restored for the recomputation, so
    dropout repeats its masks. function returns a tensor or a tuple or list of values.

    use_reentrant=None warns and means True, as in PyTorch. Both variants compute the
    same gradients here, for the arguments and for the parameters function reads;
    use_reentrant=True, as PyTorch's, makes outputs that need no gradient when no tensor
    argument requires grad (with a warning), and takes no keyword arguments for function.
    context_fn (use_reentrant=False only) returns two context managers, one around the
    forward pass and one around the recomputation."""
    if use_reentrant is None:
        warnings.warn(_USE_REENTRANT_WARNING, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant and (context_fn is not None or debug):
        raise ValueError("Passing `context_fn` or `debug` is only supported when "
                         "use_reentrant=False.")
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    if not callable(function):
        raise TypeError(f"checkpoint(): function must be callable, got "
                        f"{type(function).__name__}")
    forward_context, recompute_context = (context_fn or _no_context)()
    if not is_grad_enabled():  # nothing is recorded: nothing to recompute
        with forward_context:
            return function(*args, **kwargs)
    Tensor = _tensor_class()
    wants = [isinstance(a, Tensor) and a.requires_grad for a in args]
    if use_reentrant and not any(wants):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)
        with forward_context:
            return _detached(function(*args, **kwargs))
    rng_state = _rng_state() if preserve else None
    leaves = _leaves(args, wants)
    with forward_context:
        outputs = function(*leaves, **kwargs)
    flat = _flat_outputs(outputs)
    own = [leaf for leaf, want in zip(leaves, wants) if want]
    sources = _sources([out for out in flat if _differentiable(out)], own)
    inputs = [a for a, want in zip(args, wants) if want] + sources
    if not inputs:  # function reads nothing that requires grad
        return outputs

    def backward(pack):
        """Run function again (with the random state of the forward pass) and
        differentiate its outputs with respect to the node's inputs."""
        fresh = _leaves(args, wants)
        saved = _swap_rng_state(rng_state) if preserve else None
        try:
            with enable_grad(), recompute_context:
                again = _flat_outputs(function(*fresh, **kwargs))
        finally:
            if preserve:
                _swap_rng_state(saved)
        roots, grads = [], []
        for slot, index in enumerate(_differentiable_slots(flat)):
            g = pack.grads[slot]
            recomputed = again[index]
            if g is not None and recomputed._requires_grad:
                roots.append(recomputed)
                grads.append(g)
        targets = [leaf for leaf, want in zip(fresh, wants) if want] + sources
        if not roots:
            return (None,) * len(targets)
        # retain_graph: a graph function reads from outside (see the module's docstring)
        # stays for the backward pass that goes on outside
        results = run_graph(roots, grads, True, targets, accumulate=False)
        # read-only views: arrays the node does not own (a root's gradient may come back)
        return tuple(_read_only(results.get(id(t))) for t in targets)

    results = [Tensor(flat[i]._data) for i in _differentiable_slots(flat)]
    multi_output_op("CheckpointFunctionBackward", inputs, backward, results)
    connected = dict(zip(_differentiable_slots(flat), results))
    rebuilt = [connected.get(i, _detached(out)) for i, out in enumerate(flat)]
    if isinstance(outputs, Tensor):
        return rebuilt[0]
    return type(outputs)(rebuilt)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run `functions` (a list of functions, or an nn.Sequential) one after the other on
    `input`, in `segments` parts: each part but the last is checkpointed (kwargs,
    preserve_rng_state included, go to checkpoint)."""
    if use_reentrant is None:
        warnings.warn(_USE_REENTRANT_WARNING, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    functions = list(functions)
    if isinstance(segments, bool) or not isinstance(segments, int) or segments < 1:
        raise ValueError(f"checkpoint_sequential(): segments must be a positive integer, "
                         f"got {segments!r}")

    def run_function(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x

        return forward

    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1)(input)


def _leaves(args, wants):
    """The arguments, with each tensor that requires grad replaced by a fresh leaf sharing
    its data."""
    return [a.detach().requires_grad_(True) if want else a for a, want in zip(args, wants)]


def _flat_outputs(outputs):
    Tensor = _tensor_class()
    if isinstance(outputs, Tensor):
        return [outputs]
    if isinstance(outputs, (tuple, list)):
        return list(outputs)
    raise TypeError(f"checkpoint(): function must return a Tensor or a tuple or list of "
                    f"values, got {type(outputs).__name__}")


def _differentiable(value):
    return isinstance(value, _tensor_class()) and value._requires_grad


def _differentiable_slots(flat):
    return [i for i, out in enumerate(flat) if _differentiable(out)]


def _detached(value):
    return value.detach() if _differentiable(value) else value


def _sources(outputs, own):
    """The leaves that require grad reached from `outputs` through the graph, other than
    `own` (the fresh leaves of the arguments), in the order first met."""
    own_ids = {id(t) for t in own}
    seen, found, stack = set(), [], list(outputs)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node._backward is None:
            if id(node) not in own_ids:
                found.append(node)
            continue
        stack.extend(p for p in node._parents if p._requires_grad)
    return found


def _read_only(array):
    if array is None:
        return None
    view = array.view()
    if hasattr(view.flags, "writeable") and not type(view).__module__.startswith("cupy"):
        view.flags.writeable = False
    return view


def _rng_state():
    from pyrt.random import get_rng_state

    return get_rng_state()


def _swap_rng_state(state):
    """Set the random generator to `state`; return the state it had."""
    from pyrt.random import get_rng_state, set_rng_state

    current = get_rng_state()
    set_rng_state(state)
    return current
