"""torch.autograd.functional's API (``pyrt.autograd.functional``): vector-Jacobian and
Jacobian-vector products and whole Jacobians of a function of tensors.

pyrt differentiates in reverse mode only: every result here comes from reverse passes. vjp
is one pass; jacobian is one pass per output element, each giving a row of the Jacobian; jvp
contracts those rows with v (exact, where PyTorch uses the double-backward trick). With
create_graph=True the passes are recorded (pyrt.higher_order), so the results can be
differentiated again. hessian is the jacobian of the recorded gradient; vhp differentiates
the recorded gradient against v, and hvp is the same product (the Hessian of a function with
continuous second derivatives is symmetric, H v = v^T H).

Arguments are handled as PyTorch handles them: `inputs` (and `v`) are a tensor or a tuple
of tensors, the function may return a tensor or a tuple of them, and a result is a tuple
where the matching argument was.
"""

import numpy as np

from pyrt.autograd import _tensor_class, enable_grad, run_graph
from pyrt.higher_order import run_graph_create

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


def _as_tuple(value, arg_name, fn_name):
    """(whether `value` was a tuple, it as a tuple of tensors)."""
    Tensor = _tensor_class()
    is_tuple = isinstance(value, tuple)
    values = value if is_tuple else (value,)
    for i, el in enumerate(values):
        if not isinstance(el, Tensor):
            what = "either a Tensor or a tuple of Tensors" if is_tuple else "a Tensor"
            raise TypeError(f"The {arg_name} given to {fn_name} must be {what} but the value "
                            f"at index {i} has type {type(el).__name__}.")
    return is_tuple, values


def _tuple_postprocess(res, to_unpack):
    """Unpack `res` where the argument it stands for was not a tuple: `to_unpack` is one
    flag, or (outputs were a tuple, inputs were a tuple) for nested results."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _leaves(inputs, create_graph=False):
    """The tensors func runs on: fresh leaves sharing each input's data; with create_graph,
    an input that requires grad is passed through an op instead (its view, as PyTorch's
    view_as), so that the results stay in its graph."""
    from pyrt.functional import reshape

    with enable_grad():
        return tuple(reshape(inp, inp.shape) if create_graph and inp.requires_grad
                     else inp.detach().requires_grad_(True) for inp in inputs)


def _run(func, inputs, fn_name, strict, create_graph=False):
    """func on leaves made from `inputs`: (leaves, is_outputs_tuple, outputs)."""
    inputs = _leaves(inputs, create_graph)
    with enable_grad():
        outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                          fn_name)
    if strict:
        for i, out in enumerate(outputs):
            if not out.requires_grad:
                raise RuntimeError(f"Output {i} of the user-provided function does not require "
                                   "gradients. The outputs must be computed in a "
                                   "differentiable manner from the input when running in "
                                   "strict mode.")
    return inputs, is_outputs_tuple, outputs


def _validate_v(v, other, is_other_tuple):
    """v (a tuple of tensors) has one tensor of the size of each of `other`."""
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but "
                               f"got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.shape != el_other.shape:
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be "
                               f"{tuple(el_other.shape)} but got {tuple(el_v.shape)}.")


def _reverse(outputs, inputs, grads, retain_graph, create_graph=False):
    """The gradients (arrays, None where none) of `outputs` weighted by `grads` (arrays)
    with respect to `inputs`; outputs that do not require grad contribute nothing. With
    create_graph the pass is recorded, and the gradients are Tensors."""
    pairs = [(out, g) for out, g in zip(outputs, grads) if out.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    roots, root_grads = zip(*pairs)
    if create_graph:
        Tensor = _tensor_class()
        root_grads = tuple(g if isinstance(g, Tensor) else Tensor(g) for g in root_grads)
        results = run_graph_create(roots, root_grads, True, inputs, accumulate=False)
    else:
        results = run_graph(roots, root_grads, retain_graph, inputs, accumulate=False)
    return tuple(results.get(id(inp)) for inp in inputs)


def _outputs_after(outputs, create_graph):
    """The outputs returned beside a product: detached, or as they are with create_graph."""
    return outputs if create_graph else tuple(out.detach() for out in outputs)


def _float32(array, like):
    from pyrt.functional import _xp

    return _xp(like).asarray(array, dtype=np.float32)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), the vector-Jacobian product of v with func at inputs): one reverse
    pass. `v` is like func's output (a tensor or a tuple of them); it may be left out when
    func returns a single element. The product is zeros for an input func does not depend
    on (an error if `strict`)."""
    Tensor = _tensor_class()
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
    inputs, is_outputs_tuple, outputs = _run(func, inputs, "vjp", strict, create_graph)
    if v is not None:
        _, v = _as_tuple(v, "v", "vjp")
        _validate_v(v, outputs, is_outputs_tuple)
        grads = tuple(el if create_graph else _float32(el._data, out._data)
                      for el, out in zip(v, outputs))
    else:
        if len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function "
                               "returns a single Tensor with a single element.")
        grads = (_float32(np.ones(outputs[0].shape), outputs[0]._data),)
    result = []
    for i, (g, inp) in enumerate(zip(_reverse(outputs, inputs, grads, False, create_graph),
                                     inputs)):
        if g is None:
            if strict:
                raise RuntimeError(f"The output of the user-provided function is independent "
                                   f"of input {i}. This is not allowed in strict mode.")
            result.append(Tensor(_zeros(inp)))
        else:
            result.append(g if create_graph else Tensor(g.copy()))
    outputs = _outputs_after(outputs, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(tuple(result), is_inputs_tuple))


def _zeros(tensor):
    from pyrt.functional import _xp

    return _xp(tensor._data).zeros(tensor.shape, np.float32)


def _jacobian_blocks(outputs, inputs, strict, create_graph=False):
    """The Jacobian: blocks[i][j] of shape out_i.shape + in_j.shape, filled a row (one
    output element) at a time by a reverse pass with a one-hot gradient. Arrays; with
    create_graph, Tensors stacked from the recorded rows (differentiable)."""
    from pyrt.functional import _xp

    blocks = []
    for i, out in enumerate(outputs):
        xp = _xp(out._data)
        rows = [[] for _ in inputs]
        if out.requires_grad:
            for k in range(out.numel()):
                onehot = xp.zeros(out.numel(), np.float32)
                onehot[k] = 1
                row = _reverse((out,), inputs, (onehot.reshape(out.shape),), True,
                               create_graph)
                for j, g in enumerate(row):
                    if g is None and strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is "
                                           f"independent of input {j}. This is not allowed "
                                           "in strict mode.")
                    rows[j].append(g)
        blocks.append([_block(row, out, inp, create_graph) for row, inp in zip(rows, inputs)])
    return blocks


def _block(row, out, inp, create_graph):
    """One Jacobian block from its rows (None: zeros), of shape out.shape + inp.shape."""
    from pyrt.functional import _xp, reshape
    from pyrt.shapes import stack

    Tensor = _tensor_class()
    shape = tuple(out.shape) + tuple(inp.shape)
    xp = _xp(inp._data)
    if not create_graph:
        block = xp.zeros((out.numel(),) + tuple(inp.shape), np.float32)
        for k, g in enumerate(row):
            if g is not None:
                block[k] = g
        return block.reshape(shape)
    if not any(g is not None for g in row):
        return Tensor(xp.zeros(shape, np.float32))
    with enable_grad():
        pieces = [Tensor(_zeros(inp)) if g is None else g for g in row]
        return reshape(stack(pieces), shape)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of func at inputs: for one input and one output a tensor of shape
    output.shape + input.shape; with tuples, a tuple (per output) of tuples (per input) of
    such blocks. Computed a row at a time in reverse mode; `vectorize` and
    strategy="forward-mode" (which PyTorch allows with vectorize only) give the same values
    the same way. A block of an output that does not depend on an input is zeros (an error
    if `strict`). With create_graph the blocks are differentiable."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                         f"got {strategy!r}")
    if strategy == "forward-mode" and not vectorize:
        raise ValueError('torch.autograd.functional.jacobian: `strategy="forward-mode"` '
                         "requires `vectorize=True`.")
    Tensor = _tensor_class()
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    inputs, is_outputs_tuple, outputs = _run(func, inputs, "jacobian", strict, create_graph)
    blocks = _jacobian_blocks(outputs, inputs, strict, create_graph)
    jac = tuple(tuple(block if create_graph else Tensor(block) for block in row)
                for row in blocks)
    return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), the Jacobian-vector product of func at inputs with v): `v` is like
    the inputs, and may be left out for a single input of one element. pyrt has no forward
    mode, so the product is the exact contraction of the Jacobian, found a row at a time in
    reverse mode (one pass per output element); with create_graph, of the recorded rows."""
    Tensor = _tensor_class()
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
    if v is not None:
        _, v = _as_tuple(v, "v", "jvp")
        _validate_v(v, inputs, is_inputs_tuple)
    elif len(inputs) != 1 or inputs[0].numel() != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided "
                           "function is a single Tensor with a single element.")
    inputs, is_outputs_tuple, outputs = _run(func, inputs, "jvp", strict, create_graph)
    if v is None:
        v = (Tensor(_float32(np.ones(inputs[0].shape), inputs[0]._data)),)
    blocks = _jacobian_blocks(outputs, inputs, strict, create_graph)
    if create_graph:
        result = [_contracted(out, row, v) for out, row in zip(outputs, blocks)]
    else:
        result = []
        for out, row in zip(outputs, blocks):
            total = _zeros(out).reshape(-1)
            for block, vj in zip(row, v):
                # float64 accumulation: the sum over inputs in one rounding, as a dot product
                total = total + (block.reshape(out.numel(), -1).astype(np.float64)
                                 @ _float32(vj._data, block).reshape(-1).astype(np.float64))
            result.append(Tensor(total.astype(np.float32).reshape(out.shape)))
    outputs = _outputs_after(outputs, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(tuple(result), is_outputs_tuple))


def _contracted(out, row, v):
    """The Jacobian blocks of `out` (Tensors) contracted with the tensors v, recorded."""
    from pyrt.functional import reshape
    from pyrt.matmul import matmul

    with enable_grad():
        total = None
        for block, vj in zip(row, v):
            term = matmul(reshape(block, (out.numel(), -1)), reshape(vj, (-1,)))
            total = term if total is None else total + term
        return reshape(total, out.shape)


# ---- second derivatives ----------------------------------------------------------------------


def _single_output(func, inputs, fn_name, strict):
    """func on `inputs` (already leaves), checked to return one tensor of one element, as
    the Hessian products need: (that output, as a 0-d tensor)."""
    with enable_grad():
        out = func(*inputs)
    is_tuple, outputs = _as_tuple(out, "outputs of the user-provided function", fn_name)
    if strict and not outputs[0].requires_grad:
        raise RuntimeError("Output 0 of the user-provided function does not require "
                           "gradients. The outputs must be computed in a differentiable "
                           "manner from the input when running in strict mode.")
    if is_tuple:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if out.numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           "contain a single element")
    from pyrt.functional import reshape

    with enable_grad():
        return reshape(out, ())


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of func, a function of `inputs` returning one element: for one input a
    tensor of shape input.shape + input.shape; for a tuple, a tuple of tuples of blocks
    (i, j) of shape inputs[i].shape + inputs[j].shape. The jacobian of the gradient, which
    is recorded (create_graph) so that it can be differentiated once more."""
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                         f"got {outer_jacobian_strategy!r}")
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    def gradient(*args):
        out = _single_output(func, args, "hessian", strict)
        grads = _reverse((out,), args, (_float32(np.ones(()), out._data),), True, True)
        return tuple(Tensor(_zeros(a)) if g is None else g for g, a in zip(grads, args))

    Tensor = _tensor_class()
    res = jacobian(gradient, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), the product v^T H of v, a tensor or tuple like the inputs, with the
    Hessian of func at inputs): the recorded gradient of func differentiated against v, two
    reverse passes. func returns one element; v may be left out for one input of one
    element."""
    return _hessian_product(func, inputs, v, create_graph, strict, "vhp")


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), the product H v): vhp's, the Hessian being symmetric (PyTorch gets
    the same numbers through a double-backward trick)."""
    return _hessian_product(func, inputs, v, create_graph, strict, "hvp")


def _hessian_product(func, inputs, v, create_graph, strict, fn_name):
    Tensor = _tensor_class()
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        _validate_v(v, inputs, is_inputs_tuple)
    elif len(inputs) != 1 or inputs[0].numel() != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided "
                           "function is a single Tensor with a single element.")
    inputs = _leaves(inputs, create_graph)
    out = _single_output(func, inputs, fn_name, strict)
    grads = _reverse((out,), inputs, (_float32(np.ones(()), out._data),), True, True)
    if v is None:
        v = (Tensor(_float32(np.ones(inputs[0].shape), inputs[0]._data)),)
    used = [(g, vj) for g, vj in zip(grads, v) if g is not None and g.requires_grad]
    if strict and len(used) != len(inputs):
        raise RuntimeError("The jacobian of the user-provided function is independent of "
                           "input 0. This is not allowed in strict mode.")
    products = (None,) * len(inputs)
    if used:
        roots, weights = zip(*used)
        weights = tuple(w if create_graph else _float32(w._data, w._data) for w in weights)
        products = _reverse(roots, inputs, weights, create_graph, create_graph)
    result = []
    for p, inp in zip(products, inputs):
        if p is None:
            result.append(Tensor(_zeros(inp)))
        else:
            result.append(p if create_graph else Tensor(p.copy()))
    outputs = _outputs_after((out,), create_graph)
    return outputs[0], _tuple_postprocess(tuple(result), is_inputs_tuple)
