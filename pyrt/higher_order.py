"""The backward pass recorded as a graph of its own (create_graph=True), for gradients of
gradients: WGAN-GP's gradient penalty, MAML's inner steps, Hessians, gradgradcheck.

run_graph_create walks the graph as autograd.run_graph does (Kahn's algorithm over the part
that leads to an input, every tensor waiting for all of its gradients), but the gradients are
Tensors, and each node's gradients come from the differentiable formula that
pyrt.double_backward has for its closure, computed with grad mode on: every gradient it
returns has a graph back to the inputs (and to the gradients given), which a later backward
differentiates. The ordinary pass (run_backward, run_graph) is untouched and pays nothing for
this one.

Custom Functions take part as in PyTorch: their backward runs with grad mode on, on Tensor
gradients, so that what it computes with differentiable ops is differentiable in turn.
"""

from pyrt.autograd import (
    _arrive,
    _check_inputs_unchanged,
    _freed,
    _Hooked,
    _leaf_hooks,
    _post_accumulate_hooks,
    _run_post_accumulate_hooks,
    _tensor_class,
    _writes,
    enable_grad,
    pass_plan,
)

__all__ = ["gradients", "run_graph_create"]


def run_graph_create(roots, grads, retain_graph=True, inputs=None, accumulate=True):
    """Propagate the gradients `grads` (Tensors, or None for none) of the tensors `roots` to
    `inputs` (every leaf that requires grad when None), recording the pass. Each input's
    gradient is added to its ``.grad`` (out of place, keeping its graph) if `accumulate`;
    the result maps id(input) to its gradient Tensor. The forward graph is freed on the way
    unless `retain_graph` (PyTorch's default with create_graph is to keep it)."""
    from pyrt.double_backward import formula_for

    targets = None if inputs is None else {id(t) for t in inputs}
    if accumulate and inputs is not None:
        for tensor in inputs:  # as run_graph: a non-leaf input retains its gradient
            if tensor._backward is not None:
                _Hooked.of(tensor).retain = True
    useful, running, pending = pass_plan(roots, targets)
    partial, ready, results = {}, [], {}
    with enable_grad():  # the pass is recorded whatever the caller's grad mode
        for root, g in zip(roots, grads):
            _arrive(root, g, pending, partial, ready)  # (sums with Tensor +: recorded)
        while ready:
            node, g = ready.pop()
            backward = node._backward
            if backward is None:  # a leaf
                if g is not None and (targets is None or id(node) in targets):
                    entry = _leaf_hooks.get(id(node))
                    if entry is not None and entry[0]() is node:
                        g = _run_hooks(entry[1], g)
                    _deliver(node, g, results, accumulate)
                    if accumulate and _post_accumulate_hooks:
                        _run_post_accumulate_hooks(node)
                continue
            runs = id(node) in running
            target = (not accumulate and g is not None and targets is not None
                      and id(node) in targets)
            if target and runs:  # (PyTorch's rule, as run_graph)
                _deliver(node, g, results, accumulate)
                target = False
            if isinstance(backward, _Hooked):
                if g is not None:
                    g = _run_hooks(backward.hooks, g)
                    tensor = backward.tensor()
                    if backward.retain and tensor is not None:
                        tensor._grad = g if tensor._grad is None else tensor._grad + g
                backward = backward.backward
            if target:
                _deliver(node, g, results, accumulate)
            if not runs:
                continue
            parents = node._parents
            if backward is _freed:
                _freed(g)
            if node._epoch < _writes.count:
                _check_inputs_unchanged(node)
            if g is None:
                parent_grads = (None,) * len(parents)
            else:
                parent_grads = _node_gradients(node, backward, g, formula_for)
            for parent, pg in zip(parents, parent_grads):
                if parent._requires_grad and id(parent) in useful:
                    _arrive(parent, pg, pending, partial, ready)
            if not retain_graph:
                node._parents = ()
                node._backward = _freed
    return results


def _node_gradients(node, backward, g, formula_for):
    """The gradient Tensors of node's inputs, for the gradient g of node: by the formula of
    its closure, or through a custom Function's backward."""
    from pyrt.autograd_function import _FunctionNode, _FunctionOutput, _OpNode, _Pack

    if isinstance(backward, _FunctionOutput):  # an output of a Function: its slot of a pack
        slots = [None] * len(backward.node.zeros)
        slots[backward.index] = g
        return (_Pack(tuple(slots)),)
    if isinstance(node, _FunctionNode):
        return _function_gradients(node, g)
    if isinstance(node, _OpNode):
        from pyrt.double_backward import _refuse

        _refuse(node.name)
    return formula_for(backward)(node, g)


def _function_gradients(node, pack):
    """A custom Function's backward on Tensor gradients, with grad mode on (PyTorch runs it
    so under create_graph): its result, checked as the ordinary pass checks it, summed to
    each input's shape."""
    from pyrt.double_backward import sum_to

    Tensor = _tensor_class()
    grads = []
    for g, zeros in zip(pack.grads, node.zeros):
        if g is None and zeros is not None and node.ctx._materialize_grads:
            shape, dtype, xp = zeros
            g = Tensor(xp.zeros(shape, dtype))
        grads.append(g)
    result = node.function.backward(node.ctx, *grads)
    result = result if isinstance(result, tuple) else (result,)
    node._input_gradients(result)  # the ordinary checks: count, types, shapes, devices
    return tuple(None if result[i] is None else sum_to(result[i], parent.shape)
                 for i, parent in zip(node.positions, node._parents))


def _run_hooks(hooks, g):
    """Each hook on the gradient Tensor g in turn; one that returns a tensor replaces it."""
    for hook in tuple(hooks.values()):
        replaced = hook(g)
        if replaced is not None:
            if replaced.shape != g.shape:
                raise RuntimeError(f"hook '{getattr(hook, '__name__', hook)}' has changed the "
                                   f"size of value: {list(g.shape)} to {list(replaced.shape)}")
            g = replaced
    return g


def _deliver(tensor, g, results, accumulate):
    """An input's whole gradient: kept for grad(), or added to its .grad out of place, so
    that .grad keeps the gradient's graph (PyTorch's accumulation under create_graph)."""
    if not accumulate:
        results[id(tensor)] = g
    elif tensor._grad is None:
        # .grad must not be a tensor the caller holds (a gradient passed on unchanged)
        tensor._grad = g if g._backward is not None else _own_copy(g)
    else:
        tensor._grad = tensor._grad + g


def _own_copy(g):
    """A new tensor equal to g, in g's graph if it has one."""
    if g._requires_grad:
        return g * 1.0
    return _tensor_class()(g._data.copy())


def gradients(outputs, grad_outputs, inputs):
    """The recorded gradients of `outputs` (a tensor or a tuple; weighted by the Tensors
    `grad_outputs`) with respect to `inputs`, a tuple with None where none reaches an input
    (the graph is kept): for formulas that differentiate a recomputation."""
    Tensor = _tensor_class()
    if isinstance(outputs, Tensor):
        outputs, grad_outputs = (outputs,), (grad_outputs,)
    wanted = tuple(t for t in inputs if t._requires_grad)
    results = run_graph_create(tuple(outputs), tuple(grad_outputs), True, wanted,
                               accumulate=False)
    return tuple(results.get(id(t)) for t in inputs)

