"""gradcheck: compare the gradients autograd computes for a function with central finite
differences, as torch.autograd.gradcheck does.

PyTorch runs gradcheck in float64, with eps=1e-6, atol=1e-5 and rtol=1e-3. pyrt computes
in float32, whose rounding (a relative 6e-8) would swamp differences over so small a step:
a central difference over a step of 2 * eps errs by about f'''·eps²/6 from truncation and
by about 6e-8·|f| / eps from rounding, balanced near eps = 1e-3, where each is around 1e-4
for values near 1. So here eps=1e-3, atol=1e-3 and rtol=1e-2: loose enough for float32's
rounding, tight enough to catch a wrong derivative (a wrong factor or sign, a missing
term). The difference quotients themselves are formed in float64, over the step the
float32 inputs actually took.
"""

import numpy as np

from pyrt.autograd import _tensor_class, enable_grad, no_grad, run_graph

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]


class GradcheckError(RuntimeError):
    """What gradcheck raises (with raise_exception) when a check fails."""


def gradcheck(func, inputs, *, eps=1e-3, atol=1e-3, rtol=1e-2, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False, masked=None):
    """Whether the gradients of func (a function of `inputs`, a tensor or a sequence of
    values, returning a tensor or a sequence of them) with respect to its inputs that
    require grad match finite differences: for every floating output and every such input,
    the Jacobian found by reverse passes (one per output element) must be allclose to the
    one found by central differences of step `eps`, within `atol` + `rtol`·|numerical|.

    Also checked: running backward twice gives gradients within `nondet_tol` of each other,
    and (`check_undefined_grad`) a custom Function's backward copes with outputs that no
    gradient reached. fast_mode checks the same full Jacobians. A failure raises
    GradcheckError (a RuntimeError) if `raise_exception`, else returns False. Forward-mode
    and batched checks need what pyrt lacks and raise NotImplementedError. gradgradcheck
    checks second derivatives the same way."""
    for name, value in (("check_forward_ad", check_forward_ad),
                        ("check_batched_grad", check_batched_grad),
                        ("check_batched_forward_grad", check_batched_forward_grad)):
        if value:
            raise NotImplementedError(f"gradcheck({name}=True): pyrt has no forward-mode or "
                                      "batched (vmap) differentiation to check")
    if masked:
        raise NotImplementedError("gradcheck(masked=True): pyrt has no sparse tensors")
    if not eps > 0:
        raise ValueError(f"gradcheck(): eps must be positive, got {eps}")
    Tensor = _tensor_class()
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    wrt = [i for i, inp in enumerate(inputs) if isinstance(inp, Tensor) and inp.requires_grad]
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of the them have requires_grad=True.")
    if not check_backward_ad:
        return True
    try:
        _check_jacobians(func, inputs, wrt, eps, atol, rtol, nondet_tol)
        if check_undefined_grad:
            _check_undefined_grad(func, inputs)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-3, atol=1e-3, rtol=1e-2,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """Whether the second derivatives of func are right: gradcheck of the function that
    maps (inputs, grad_outputs) to the gradients of func's outputs, weighted by
    grad_outputs, with respect to its inputs that require grad, computed by a recorded
    backward pass (create_graph=True). Its Jacobian, found by reverse passes through that
    recorded pass, holds the second derivatives, and gradcheck compares them with central
    differences of the first ones. `grad_outputs` (one tensor per floating output) default
    to values drawn uniformly from [-1, 1) by a generator of fixed seed, so that a check
    repeats; they are differentiated too, as in PyTorch."""
    if check_fwd_over_rev:
        raise NotImplementedError("gradgradcheck(check_fwd_over_rev=True): pyrt has no "
                                  "forward-mode differentiation to check")
    if not check_rev_over_rev:
        return True
    Tensor = _tensor_class()
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    wrt = [i for i, inp in enumerate(inputs) if isinstance(inp, Tensor) and inp.requires_grad]
    if grad_outputs is None:
        with no_grad():
            outs = _outputs(func, inputs)
        rng = np.random.default_rng(0)
        grad_outputs = tuple(
            Tensor(rng.uniform(-1, 1, o.shape).astype(np.float32)).to(o.device)
            .requires_grad_(True) for o in outs)
    else:
        grad_outputs = ((grad_outputs,) if isinstance(grad_outputs, Tensor)
                        else tuple(grad_outputs))
    n_inputs = len(inputs)

    def first_derivatives(*args):
        # gradcheck calls this on tensors that require grad (its reverse passes) and, for
        # its differences, on plain ones: those are made leaves, to differentiate once
        from pyrt.autograd import grad

        args = [a.detach().requires_grad_(True)
                if i in wrt_set and not a.requires_grad else a for i, a in enumerate(args)]
        with enable_grad():
            outs = [o for o in _outputs(func, args[:n_inputs]) if o.requires_grad]
            weights = args[n_inputs:n_inputs + len(outs)]
            grads = grad(outs, [args[i] for i in wrt], weights, create_graph=True,
                         allow_unused=True)
        return tuple(g for g in grads if g is not None)

    wrt_set = set(wrt) | {n_inputs + k for k, g in enumerate(grad_outputs)
                          if g.requires_grad}
    return gradcheck(first_derivatives, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes,
                     check_batched_grad=check_batched_grad, fast_mode=fast_mode,
                     masked=masked)


def _outputs(func, inputs):
    """func(*inputs) as a tuple of its floating tensor outputs (others are not
    differentiated)."""
    Tensor = _tensor_class()
    out = func(*inputs)
    outs = (out,) if isinstance(out, Tensor) else tuple(out)
    return tuple(o for o in outs if isinstance(o, Tensor) and o.dtype.kind == "f")


def _host(array):
    return array if isinstance(array, np.ndarray) else array.get()


def _numerical(func, inputs, wrt, eps):
    """For each output, for each input in `wrt`: the Jacobian by central differences, as a
    float64 array (output elements, input elements)."""
    Tensor = _tensor_class()
    with no_grad():
        n_outputs = [o.numel() for o in _outputs(func, inputs)]
    jac = [[np.zeros((n, inputs[j].numel())) for j in wrt] for n in n_outputs]
    for col, j in enumerate(wrt):
        base = inputs[j]._data
        for k in range(base.size):
            values = []
            for step in (eps, -eps):
                moved = base.copy()
                flat = moved.reshape(-1)
                flat[k] = flat[k] + np.float32(step)
                args = list(inputs)
                args[j] = Tensor(moved)
                with no_grad():
                    outs = _outputs(func, args)
                values.append((float(_host(flat[k:k + 1])[0]),
                               [_host(o._data).astype(np.float64).reshape(-1) for o in outs]))
            (x_plus, f_plus), (x_minus, f_minus) = values
            for i, (a, b) in enumerate(zip(f_plus, f_minus)):
                jac[i][col][:, k] = (a - b) / (x_plus - x_minus)
    return jac


def _analytical(func, inputs, wrt):
    """For each output, for each input in `wrt`: the Jacobian by reverse passes (a one-hot
    gradient per output element), as a float64 array (output elements, input elements);
    computed twice, to see that backward gives the same each time."""
    Tensor = _tensor_class()
    args = list(inputs)
    for j in wrt:
        args[j] = inputs[j].detach().requires_grad_(True)
    targets = tuple(args[j] for j in wrt)
    with enable_grad():
        outs = _outputs(func, args)
    runs = []
    for _ in range(2):
        jac = [[np.zeros((o.numel(), t.numel())) for t in targets] for o in outs]
        for i, out in enumerate(outs):
            if not out.requires_grad:
                continue
            for k in range(out.numel()):
                onehot = np.zeros(out.numel(), np.float32)
                onehot[k] = 1
                if out.device != "cpu":
                    onehot = Tensor(onehot).to(out.device)._data
                results = run_graph((out,), (onehot.reshape(out.shape),), True, targets,
                                    accumulate=False)
                for col, t in enumerate(targets):
                    g = results.get(id(t))
                    if g is not None:
                        jac[i][col][k] = _host(g).astype(np.float64).reshape(-1)
        runs.append(jac)
    return runs


def _check_jacobians(func, inputs, wrt, eps, atol, rtol, nondet_tol):
    numerical = _numerical(func, inputs, wrt, eps)
    analytical, again = _analytical(func, inputs, wrt)
    for i, (num_row, ana_row, again_row) in enumerate(zip(numerical, analytical, again)):
        for col, j in enumerate(wrt):
            num, ana = num_row[col], ana_row[col]
            if not np.allclose(ana, num, rtol=rtol, atol=atol):
                # laid out as PyTorch prints them: (input elements, output elements)
                raise GradcheckError(f"Jacobian mismatch for output {i} with respect to input "
                                     f"{j},\nnumerical:{_show(num.T)}\nanalytical:"
                                     f"{_show(ana.T)}\n")
            if np.abs(again_row[col] - ana).max(initial=0.0) > nondet_tol:
                raise GradcheckError(
                    "Backward is not reentrant, i.e., running backward with same input and "
                    "grad_output multiple times gives different values, although analytical "
                    "gradient matches numerical gradient. The tolerance for nondeterminism "
                    f"was {nondet_tol}.")


def _show(matrix):
    return "tensor(" + np.array2string(matrix.astype(np.float32), precision=4,
                                       separator=", ", prefix="tensor(") + ")"


def _check_undefined_grad(func, inputs):
    """A custom Function's backward, given no gradient for any of its outputs (None, or
    zeros unless it called set_materialize_grads(False)), must give none (None or zeros)
    for its inputs. Built-in ops never run without a gradient, so only Functions are
    checked, wherever they are in func's graph."""
    from pyrt.autograd_function import _FunctionOutput, _Pack

    args = [inp.detach().requires_grad_(True)
            if isinstance(inp, _tensor_class()) and inp.requires_grad else inp for inp in inputs]
    with enable_grad():
        outs = _outputs(func, args)
    for node in _function_nodes(outs, _FunctionOutput):
        try:
            grads = node(_Pack((None,) * len(node.zeros)))
        except Exception as exc:  # the user's backward: any failure is the finding
            raise GradcheckError(f"Backward of {node.name} fails when the gradients of its "
                                 f"outputs are undefined (None): {type(exc).__name__}: "
                                 f"{exc}") from exc
        for g in grads:
            if g is not None and np.any(_host(g) != 0):
                raise GradcheckError(f"Expected backward function {node.name} to handle "
                                     "undefined output grads: it returned a nonzero gradient "
                                     "when no gradient reached its outputs.")


def _function_nodes(outputs, output_class):
    """The hidden nodes of the Function calls in the graph of `outputs`."""
    nodes, seen, stack = [], set(), list(outputs)
    while stack:
        tensor = stack.pop()
        if id(tensor) in seen:
            continue
        seen.add(id(tensor))
        if isinstance(tensor._backward, output_class) and id(tensor._backward.node) not in seen:
            seen.add(id(tensor._backward.node))
            nodes.append(tensor._backward.node)
        stack.extend(p for p in tensor._parents if p._requires_grad)
    return nodes
