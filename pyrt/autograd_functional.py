"""torch.autograd.functional's API (``pyrt.autograd.functional``): vector-Jacobian and
Jacobian-vector products and whole Jacobians of a function of tensors.

pyrt differentiates in reverse mode only, and does not record the backward pass
(create_graph=True): so every result here comes from reverse passes. vjp is one pass;
jacobian is one pass per output element, each giving a row of the Jacobian; jvp contracts
those rows with v (exact, where PyTorch uses the double-backward trick, which needs
create_graph). Hessians (hessian, hvp, vhp) need second derivatives and raise
NotImplementedError.

Arguments are handled as PyTorch handles them: `inputs` (and `v`) are a tensor or a tuple
of tensors, the function may return a tensor or a tuple of them, and a result is a tuple
where the matching argument was.
"""

import numpy as np

from pyrt.autograd import _tensor_class, enable_grad, run_graph

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


def _check_create_graph(create_graph, fn_name):
    if create_graph:
        raise NotImplementedError(f"{fn_name}(create_graph=True): pyrt does not record the "
                                  "backward pass, so higher-order gradients are not supported")


def _leaves(inputs, need_graph=True):
    """Fresh leaves sharing each input's data, requiring grad if `need_graph`."""
    return tuple(inp.detach().requires_grad_(need_graph) for inp in inputs)


def _run(func, inputs, fn_name, strict):
    """func on leaves made from `inputs`: (leaves, is_outputs_tuple, outputs)."""
    inputs = _leaves(inputs)
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


def _reverse(outputs, inputs, grads, retain_graph):
    """The gradients (arrays, None where none) of `outputs` weighted by `grads` (arrays)
    with respect to `inputs`; outputs that do not require grad contribute nothing."""
    pairs = [(out, g) for out, g in zip(outputs, grads) if out.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    roots, root_grads = zip(*pairs)
    results = run_graph(roots, root_grads, retain_graph, inputs, accumulate=False)
    return tuple(results.get(id(inp)) for inp in inputs)


def _float32(array, like):
    from pyrt.functional import _xp

    return _xp(like).asarray(array, dtype=np.float32)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), the vector-Jacobian product of v with func at inputs): one reverse
    pass. `v` is like func's output (a tensor or a tuple of them); it may be left out when
    func returns a single element. The product is zeros for an input func does not depend
    on (an error if `strict`)."""
    _check_create_graph(create_graph, "vjp")
    Tensor = _tensor_class()
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
    inputs, is_outputs_tuple, outputs = _run(func, inputs, "vjp", strict)
    if v is not None:
        _, v = _as_tuple(v, "v", "vjp")
        _validate_v(v, outputs, is_outputs_tuple)
        grads = tuple(_float32(el._data, out._data) for el, out in zip(v, outputs))
    else:
        if len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function "
                               "returns a single Tensor with a single element.")
        grads = (_float32(np.ones(outputs[0].shape), outputs[0]._data),)
    result = []
    for i, (g, inp) in enumerate(zip(_reverse(outputs, inputs, grads, False), inputs)):
        if g is None:
            if strict:
                raise RuntimeError(f"The output of the user-provided function is independent "
                                   f"of input {i}. This is not allowed in strict mode.")
            result.append(Tensor(_zeros(inp)))
        else:
            result.append(Tensor(g.copy()))
    outputs = tuple(out.detach() for out in outputs)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(tuple(result), is_inputs_tuple))


def _zeros(tensor):
    from pyrt.functional import _xp

    return _xp(tensor._data).zeros(tensor.shape, np.float32)


def _jacobian_blocks(outputs, inputs, strict):
    """The Jacobian as arrays: blocks[i][j] of shape out_i.shape + in_j.shape, filled a row
    (one output element) at a time by a reverse pass with a one-hot gradient."""
    from pyrt.functional import _xp

    blocks = []
    for i, out in enumerate(outputs):
        xp = _xp(out._data)
        row_blocks = [xp.zeros((out.numel(),) + tuple(inp.shape), np.float32) for inp in inputs]
        if out.requires_grad:
            for k in range(out.numel()):
                onehot = xp.zeros(out.numel(), np.float32)
                onehot[k] = 1
                row = _reverse((out,), inputs, (onehot.reshape(out.shape),), True)
                for j, g in enumerate(row):
                    if g is None:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is "
                                               f"independent of input {j}. This is not "
                                               "allowed in strict mode.")
                        continue
                    row_blocks[j][k] = g
        blocks.append([block.reshape(tuple(out.shape) + tuple(inp.shape))
                       for block, inp in zip(row_blocks, inputs)])
    return blocks


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of func at inputs: for one input and one output a tensor of shape
    output.shape + input.shape; with tuples, a tuple (per output) of tuples (per input) of
    such blocks. Computed a row at a time in reverse mode; `vectorize` and
    strategy="forward-mode" (which PyTorch allows with vectorize only) give the same values
    the same way. A block of an output that does not depend on an input is zeros (an error
    if `strict`)."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                         f"got {strategy!r}")
    if strategy == "forward-mode" and not vectorize:
        raise ValueError('torch.autograd.functional.jacobian: `strategy="forward-mode"` '
                         "requires `vectorize=True`.")
    _check_create_graph(create_graph, "jacobian")
    Tensor = _tensor_class()
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    inputs, is_outputs_tuple, outputs = _run(func, inputs, "jacobian", strict)
    blocks = _jacobian_blocks(outputs, inputs, strict)
    jac = tuple(tuple(Tensor(block) for block in row) for row in blocks)
    return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), the Jacobian-vector product of func at inputs with v): `v` is like
    the inputs, and may be left out for a single input of one element. pyrt has no forward
    mode and no double backward, so the product is the exact contraction of the Jacobian,
    found a row at a time in reverse mode (one pass per output element)."""
    _check_create_graph(create_graph, "jvp")
    Tensor = _tensor_class()
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
    if v is not None:
        _, v = _as_tuple(v, "v", "jvp")
        _validate_v(v, inputs, is_inputs_tuple)
    elif len(inputs) != 1 or inputs[0].numel() != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided "
                           "function is a single Tensor with a single element.")
    inputs, is_outputs_tuple, outputs = _run(func, inputs, "jvp", strict)
    v_arrays = ([_float32(el._data, inp._data) for el, inp in zip(v, inputs)] if v is not None
                else [_float32(np.ones(inputs[0].shape), inputs[0]._data)])
    blocks = _jacobian_blocks(outputs, inputs, strict)
    result = []
    for out, row in zip(outputs, blocks):
        total = _zeros(out).reshape(-1)
        for block, vj in zip(row, v_arrays):
            # float64 accumulation: the sum over inputs in one rounding, as a dot product
            total = total + (block.reshape(out.numel(), -1).astype(np.float64)
                             @ vj.reshape(-1).astype(np.float64))
        result.append(Tensor(total.astype(np.float32).reshape(out.shape)))
    outputs = tuple(out.detach() for out in outputs)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(tuple(result), is_outputs_tuple))


def _no_second_order(name):
    raise NotImplementedError(f"{name}(): needs second derivatives, and pyrt does not record "
                              "the backward pass (create_graph=True), so higher-order "
                              "gradients are not supported; jacobian() of a function that "
                              "returns a gradient computed another way is the alternative")


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """Not supported: see _no_second_order."""
    _no_second_order("hessian")


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """Not supported: see _no_second_order."""
    _no_second_order("hvp")


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """Not supported: see _no_second_order."""
    _no_second_order("vhp")
