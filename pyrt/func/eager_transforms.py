"""grad, grad_and_value, vjp, jacrev, jacfwd, jvp and hessian as torch.func has them:
transforms of a function of tensors (nested in tuples, lists and dicts) into the function
that computes its derivatives.

Each call runs the function once on fresh leaves made from the differentiated arguments and
differentiates it with pyrt's reverse mode: grad and vjp in one backward pass, jacrev (and
jacfwd and jvp, which PyTorch computes in forward mode; pyrt has none) in one pass per
output element. The results are the exact derivatives.

Where PyTorch would return a result that is itself differentiable (the function read
tensors that require grad outside the transform, or a differentiated argument requires grad;
grad(grad(f)) and jacfwd(jacrev(f)) are such cases), the argument enters the function
through an op that keeps it in the caller's graph and the backward pass is recorded
(create_graph, pyrt.higher_order): the result carries the terms through those tensors.
hessian is jacfwd(jacrev(f)).
"""

import functools

import numpy as np

from pyrt.autograd import _post_order, _tensor_class, enable_grad, is_grad_enabled, run_graph
from pyrt.func.pytree import flatten, spec_str, unflatten
from pyrt.func.vmap import _RandomnessRefused, _tensor_module, check_randomness
from pyrt.higher_order import run_graph_create

__all__ = ["grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "vjp"]


# ---- arguments -------------------------------------------------------------------------------


def _check_argnums(argnums, count):
    """argnums as a tuple of non-negative positions into `count` positional arguments."""
    if isinstance(argnums, tuple):
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        for num in argnums:
            if not isinstance(num, int) or isinstance(num, bool):
                raise RuntimeError(  # noqa: TRY004 (torch's)
                    f"argnums must be int or Tuple[int, ...], got: "
                    f"{type(argnums)}")
        nums = argnums
    elif isinstance(argnums, int) and not isinstance(argnums, bool):
        nums = (argnums,)
    else:
        raise RuntimeError(  # noqa: TRY004 (torch's)
            f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    for num in nums:
        if not -count <= num < count:
            raise RuntimeError(f"Got argnum={num}, but only {count} positional inputs")
    nums = tuple(num % count for num in nums)
    if len(set(nums)) != len(nums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return nums


def _as_leaves(tree):
    """(the tensors of `tree`, its spec, the tensors the function is differentiated at):
    fresh leaves that require grad sharing their data, or, for a tensor that requires grad
    while grad mode is on, a view of it (an op), so that the results stay in its graph."""
    from pyrt.functional import reshape

    Tensor = _tensor_class()
    tensors, spec = flatten(tree)
    for tensor in tensors:
        if not isinstance(tensor, Tensor):
            raise ValueError(  # noqa: TRY004 (torch's)
                f"Thing passed to transform API must be Tensor, got "
                f"{type(tensor)}")
        if tensor._data.dtype.kind != "f":
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
    leaves = []
    for tensor in tensors:
        if tensor.requires_grad and is_grad_enabled():
            leaves.append(reshape(tensor, tensor.shape))
        else:
            leaves.append(tensor.detach().requires_grad_(True))
    return tensors, spec, leaves


def _with_leaves(args, argnums):
    """(args with the differentiated ones replaced by fresh leaves, the originals' tensors,
    per argnum (spec, leaves))."""
    args = list(args)
    originals, parts = [], []
    for num in argnums:
        tensors, spec, leaves = _as_leaves(args[num])
        args[num] = unflatten(leaves, spec)
        originals.extend(tensors)
        parts.append((spec, leaves))
    return args, originals, parts


def _split_aux(output, has_aux, where):
    if not has_aux:
        return output, None
    if not isinstance(output, tuple) or len(output) != 2:
        raise RuntimeError(f"{where}: output of function f should be a tuple: (output, aux) "
                           "if has_aux is True")
    return output


def _output_tensors(output, where):
    """(the tensors of the function's output, its spec)."""
    Tensor = _tensor_class()
    tensors, spec = flatten(output)
    for tensor in tensors:
        if not isinstance(tensor, Tensor):
            raise RuntimeError(  # noqa: TRY004 (torch's)
                f"{where}: expected f(*primals) to return only tensors, got "
                f"unsupported type {type(tensor)}")
    return tensors, spec


# ---- results ---------------------------------------------------------------------------------


def _outer_tensors(outputs, leaves, originals):
    """The tensors outside the transform that a differentiable result would depend on: the
    differentiated arguments that require grad, and the leaves requiring grad other than
    the transform's own that the outputs' graph reaches. Empty when grad mode is off."""
    if not is_grad_enabled():
        return ()
    own = {id(leaf) for leaf in leaves}
    found = {id(t): t for t in originals if t.requires_grad}
    roots = [out for out in outputs if out.requires_grad]
    if roots:
        for node in _post_order(roots):
            if node._backward is None and node._requires_grad and id(node) not in own:
                found[id(node)] = node
    return tuple(found.values())


def _result(value, outer):
    """A result tensor: a plain one of the array `value`, or, when it depends on `outer`
    tensors (as PyTorch's would), `value` itself, a recorded Tensor (_gradients with
    record)."""
    if not outer:
        return _tensor_class()(value)
    return value


def _value(tensor, outer):
    """An output of the function as a result: in the graph where it depends on `outer`."""
    return tensor if outer else _tensor_class()(tensor._data)


def _gradients(roots, root_grads, leaves, retain_graph, record=False):
    """The gradient arrays of `roots` (weighted by the arrays `root_grads`) with respect to
    `leaves`: zeros where none reaches a leaf. With `record` the pass is recorded and the
    gradients are Tensors with a graph."""
    from pyrt.functional import _xp

    Tensor = _tensor_class()
    pairs = [(root, g) for root, g in zip(roots, root_grads) if root.requires_grad]
    found = {}
    if pairs and record:
        found = run_graph_create(tuple(r for r, _ in pairs),
                                 tuple(g if isinstance(g, Tensor) else Tensor(g)
                                       for _, g in pairs),
                                 True, tuple(leaves), accumulate=False)
    elif pairs:
        found = run_graph(tuple(r for r, _ in pairs), tuple(g for _, g in pairs),
                          retain_graph, tuple(leaves), accumulate=False)
    out = []
    for leaf in leaves:
        g = found.get(id(leaf))
        zeros = _xp(leaf._data).zeros(leaf.shape, leaf._data.dtype) if g is None else None
        if record:
            out.append(Tensor(zeros) if g is None else g)
        else:
            out.append(zeros if g is None
                       else _xp(leaf._data).asarray(g, dtype=leaf._data.dtype).reshape(leaf.shape))
    return out


def _pack(per_argnum, argnums):
    """Per-argnum results: the one result for an int argnums, else a tuple."""
    return per_argnum[0] if isinstance(argnums, int) else tuple(per_argnum)


# ---- grad ------------------------------------------------------------------------------------


def grad_and_value(func, argnums=0, has_aux=False):
    """The function that returns (the gradient of func's scalar output with respect to the
    arguments at argnums, func's output): the gradient has the structure of the argument
    (a tuple of them for a tuple argnums). With has_aux, func returns (output, aux) and the
    result is (gradient, (output, aux))."""
    where = "grad_and_value(f)(*args)"

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args))
        new_args, originals, parts = _with_leaves(args, nums)
        with enable_grad():
            output, aux = _split_aux(func(*new_args, **kwargs), has_aux, where)
        Tensor = _tensor_class()
        if not isinstance(output, Tensor):
            raise RuntimeError(  # noqa: TRY004 (torch's)
                f"{where}: Expected f(*args) to return a Tensor, got "
                f"{type(output)}")
        if output.ndim != 0:
            raise RuntimeError(f"{where}: Expected f(*args) to return a scalar Tensor, got "
                               f"tensor with {output.ndim} dims. Maybe you wanted to use the "
                               "vjp or jacrev APIs instead?")
        leaves = [leaf for _, part in parts for leaf in part]
        outer = _outer_tensors((output,), leaves, originals)
        from pyrt.functional import _xp

        ones = _xp(output._data).ones((), output._data.dtype)
        arrays = iter(_gradients((output,), (ones,), leaves, retain_graph=False,
                                 record=bool(outer)))
        grads = [unflatten([_result(next(arrays), outer) for _ in part], spec)
                 for spec, part in parts]
        value = _value(output, outer)
        grads = _pack(grads, argnums)
        return (grads, (value, aux)) if has_aux else (grads, value)

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The function that returns the gradient of func's scalar output with respect to the
    arguments at argnums (with has_aux: (gradient, aux)); see grad_and_value."""
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        grads, value = inner(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return wrapper


# ---- vjp -------------------------------------------------------------------------------------


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn) (and aux with has_aux): vjp_fn(cotangents), cotangents
    structured as func's output, returns the vector-Jacobian products with respect to each
    primal, as a tuple of the primals' structures. vjp_fn may be called many times."""
    where = "vjp(f, *primals)"
    nums = tuple(range(len(primals)))
    new_args, originals, parts = _with_leaves(primals, nums)
    with enable_grad():
        output, aux = _split_aux(func(*new_args), has_aux, where)
    outputs, out_spec = _output_tensors(output, where)
    leaves = [leaf for _, part in parts for leaf in part]
    outer = _outer_tensors(outputs, leaves, originals)

    def vjp_fn(cotangents):
        Tensor = _tensor_class()
        cots, cot_spec = flatten(cotangents)
        if cot_spec != out_spec:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as "
                               f"pytree structure of outputs to the function. cotangents: "
                               f"{spec_str(cot_spec)}, primal output: {spec_str(out_spec)}")
        arrays = []
        for i, (cot, out) in enumerate(zip(cots, outputs)):
            if not isinstance(cot, Tensor):
                raise ValueError(  # noqa: TRY004 (torch's)
                    f"Thing passed to transform API must be Tensor, got "
                    f"{type(cot)}")
            if cot.shape != out.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{cot.shape} and output[{i}] has a shape of {out.shape}.")
            arrays.append(cot._data.astype(out._data.dtype, copy=False))
        cot_outer = outer + tuple(c for c in cots if c.requires_grad and is_grad_enabled())
        if cot_outer:  # recorded: differentiable with respect to the cotangents too
            arrays = [cot if cot.requires_grad else Tensor(a) for cot, a in zip(cots, arrays)]
        grads = iter(_gradients(outputs, arrays, leaves, retain_graph=True,
                                record=bool(cot_outer)))
        return tuple(unflatten([_result(next(grads), cot_outer) for _ in part], spec)
                     for spec, part in parts)

    value = unflatten([_value(out, outer) for out in outputs], out_spec)
    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


# ---- Jacobians -------------------------------------------------------------------------------


def _jacobian_arrays(outputs, leaves, record=False):
    """blocks[i][j]: the Jacobian of output i with respect to leaf j, of shape
    out_i.shape + leaf_j.shape, a row (one output element) per reverse pass; with `record`,
    Tensors stacked from recorded passes."""
    from pyrt.functional import _xp, reshape
    from pyrt.shapes import stack

    Tensor = _tensor_class()
    blocks = []
    for out in outputs:
        xp = _xp(out._data)
        rows = [[] for _ in leaves]
        if out.requires_grad:
            for k in range(out.numel()):
                onehot = xp.zeros(out.numel(), out._data.dtype)
                onehot[k] = 1
                for row, g in zip(rows, _gradients((out,), (onehot.reshape(out.shape),),
                                                   leaves, retain_graph=True, record=record)):
                    row.append(g)
        per_leaf = []
        for row, leaf in zip(rows, leaves):
            shape = tuple(out.shape) + tuple(leaf.shape)
            if not row:
                zeros = xp.zeros(shape, leaf._data.dtype)
                per_leaf.append(Tensor(zeros) if record else zeros)
            elif record:
                with enable_grad():
                    per_leaf.append(reshape(stack(row), shape))
            else:
                per_leaf.append(xp.stack(row).reshape(shape))
        blocks.append(per_leaf)
    return blocks


def _run_for_jacobian(func, argnums, has_aux, args, kwargs, where, randomness=None):
    nums = _check_argnums(argnums, len(args))
    new_args, originals, parts = _with_leaves(args, nums)
    module = _tensor_module()
    saved = module._generator
    if randomness == "error":
        module._generator = _RandomnessRefused()
    try:
        with enable_grad():
            output, aux = _split_aux(func(*new_args, **kwargs), has_aux, where)
    finally:
        module._generator = saved
    outputs, out_spec = _output_tensors(output, where)
    leaves = [leaf for _, part in parts for leaf in part]
    outer = _outer_tensors(outputs, leaves, originals)
    return outputs, out_spec, parts, leaves, outer, aux


def _jacobian(func, argnums, has_aux, args, kwargs, where, randomness=None):
    outputs, out_spec, parts, leaves, outer, aux = _run_for_jacobian(
        func, argnums, has_aux, args, kwargs, where, randomness)
    per_output = []
    for row in _jacobian_arrays(outputs, leaves, record=bool(outer)):
        blocks = iter(row)
        per_arg = [unflatten([_result(next(blocks), outer) for _ in part], spec)
                   for spec, part in parts]
        per_output.append(_pack(per_arg, argnums))
    jac = unflatten(per_output, out_spec)
    if has_aux:
        return jac, aux
    return jac


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The function that returns the Jacobian of func with respect to the arguments at
    argnums: for each output tensor (in func's output structure), its Jacobian with respect
    to each argument tensor (in the argument's structure; a tuple over a tuple argnums),
    of shape output.shape + input.shape. One reverse pass per output element. With
    has_aux: (jacobian, aux)."""
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return _jacobian(func, argnums, has_aux, args, kwargs, "jacrev(f, ...)(*args)")

    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """jacrev's Jacobian: PyTorch computes it in forward mode, one pass per input element;
    pyrt has no forward mode and computes it in reverse mode, one pass per output element
    (the same values). randomness as vmap's: "error" refuses random draws in func."""
    check_randomness(randomness)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return _jacobian(func, argnums, has_aux, args, kwargs, "jacfwd(f, ...)(*args)",
                         randomness)

    return wrapper


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), the Jacobian-vector product with tangents) (and aux with has_aux):
    tangents are structured as primals. PyTorch computes it in forward mode; here it is the
    exact contraction of the Jacobian, found a row at a time in reverse mode."""
    from pyrt.functional import _xp

    where = "jvp(f, primals, tangents)"
    if strict:
        raise RuntimeError("jvp(f, primals, tangents): strict is not implemented (as in "
                           "PyTorch)")
    if not isinstance(primals, tuple):
        raise RuntimeError(  # noqa: TRY004 (torch's)
            f"{where}: Expected primals to be a tuple. E.g. it should be valid "
            "to call f(*primals).")
    if not isinstance(tangents, tuple) or flatten(tangents)[1] != flatten(primals)[1]:
        raise RuntimeError(f"{where}: Expected primals and tangents to have the same python "
                           "structure. For example, if primals is a tuple of 3 tensors, "
                           "tangents also must be. Got primals with structure "
                           f"{spec_str(flatten(primals)[1])} and tangents with structure "
                           f"{spec_str(flatten(tangents)[1])}")
    outputs, out_spec, _, leaves, outer, aux = _run_for_jacobian(
        func, tuple(range(len(primals))), has_aux, primals, {}, where)
    flat_tangents = flatten(tangents)[0]
    for leaf, tangent in zip(leaves, flat_tangents):
        if not isinstance(tangent, _tensor_class()) or tangent.shape != leaf.shape:
            raise RuntimeError(f"{where}: Expected primals and tangents to have the same "
                               f"shape, got {leaf.shape} and "
                               f"{getattr(tangent, 'shape', type(tangent))}")
    products = []
    for out, row in zip(outputs, _jacobian_arrays(outputs, leaves, record=bool(outer))):
        if outer:  # recorded: the contraction too
            products.append(_contracted(out, row, flat_tangents))
            continue
        xp = _xp(out._data)
        total = xp.zeros(out.numel(), np.float64)
        for block, tangent in zip(row, flat_tangents):
            total += (block.reshape(out.numel(), -1).astype(np.float64)
                      @ xp.asarray(tangent._data, np.float64).reshape(-1))
        products.append(_result(total.astype(out._data.dtype).reshape(out.shape), outer))
    values = unflatten([_value(out, outer) for out in outputs], out_spec)
    products = unflatten(products, out_spec)
    return (values, products, aux) if has_aux else (values, products)


def _contracted(out, row, tangents):
    """The Jacobian blocks of `out` (recorded Tensors) contracted with the tangents."""
    from pyrt.functional import reshape
    from pyrt.matmul import matmul

    with enable_grad():
        total = None
        for block, tangent in zip(row, tangents):
            term = matmul(reshape(block, (out.numel(), -1)), reshape(tangent, (-1,)))
            total = term if total is None else total + term
        return reshape(total, out.shape)


def hessian(func, argnums=0):
    """The function that returns the Hessian of func with respect to the arguments at
    argnums: jacfwd(jacrev(func, argnums), argnums), as in torch.func; the inner Jacobian is
    recorded (its arguments enter in the graph), and the outer one differentiates it."""
    return jacfwd(jacrev(func, argnums), argnums)
