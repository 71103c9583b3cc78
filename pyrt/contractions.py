"""Tensor contractions and the products built like them, as PyTorch's: einsum (NumPy's, with
each operand's gradient an einsum of the output's gradient and the other operands),
tensordot (an einsum), kron, trace, cross, cdist, block_diag and cartesian_prod (from
pyrt's differentiable ops, which give their gradients)."""

import string
import warnings

import numpy as np

from pyrt.functional import _contiguous, _make, _tensor, _xp, dim_index, norm
from pyrt.functional import reshape as _reshape
from pyrt.pointwise import broadcast_shape
from pyrt.rearrange import broadcast_tensors, diag, meshgrid, unbind
from pyrt.shapes import cat, stack, unsqueeze

__all__ = ["block_diag", "cartesian_prod", "cdist", "cross", "einsum", "kron", "tensordot",
           "trace"]

_DTYPE_NAMES = {np.dtype(np.float32): "Float", np.dtype(np.int64): "Long",
                np.dtype(np.bool_): "Bool", np.dtype(np.float64): "Double"}


def _operand_list(operands, name):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    for t in operands:
        if not isinstance(t, _tensor()):
            raise TypeError(f"{name}(): expected Tensors, got {type(t).__name__}")
    return operands


def _parse(equation, operands):
    """(each operand's subscripts, the output's) with "..." written out as letters of its
    own (right-aligned, as ellipsis dims broadcast) and the implicit output made explicit:
    the ellipsis dims, then the letters that appear once, in alphabetical order."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' must be str, got "
                        f"{type(equation).__name__}")
    equation = equation.replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    terms = inputs.split(",")
    if len(terms) > len(operands):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the "
                           "equation")
    if len(terms) < len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation")
    for term in terms + [output]:
        if any(c not in string.ascii_letters for c in term.replace("...", "")):
            raise RuntimeError(f"einsum(): invalid subscript given in the equation: {term!r}; "
                               f"subscripts are letters and '...'")
    free = [c for c in string.ascii_letters if c not in equation]
    spans = []
    for i, (term, t) in enumerate(zip(terms, operands)):
        letters = len(term.replace("...", ""))
        if ("..." in term and letters > t.ndim) or ("..." not in term and letters != t.ndim):
            given = "" if "..." in term else " and no ellipsis was given"
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({letters}) "
                               f"does not match the number of dimensions ({t.ndim}) for "
                               f"operand {i}{given}")
        spans.append(t.ndim - letters if "..." in term else 0)
    ellipsis = "".join(free[:max(spans, default=0)])
    subs = [term.replace("...", ellipsis[len(ellipsis) - n:]) for term, n in zip(terms, spans)]
    if arrow:
        out = output.replace("...", ellipsis)
        for c in out:
            if out.count(c) > 1:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in "
                                   f"the output")
            if c not in "".join(subs):
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the "
                                   f"equation for any input operand")
    else:
        joined = "".join(terms)
        out = ellipsis + "".join(sorted(c for c in set(joined) if c != "." and
                                        joined.count(c) == 1))
    return subs, out


def einsum(equation, *operands):
    """The sum over the repeated subscripts of the products of the operands' elements, as
    torch.einsum ('...' and the implicit output included; dims of size 1 broadcast). The
    gradient of each operand is the einsum of the output's gradient with the other
    operands, onto that operand's subscripts: spread along its repeated subscripts (a
    diagonal), copied along the ones only it has, summed over the dims it broadcast."""
    operands = _operand_list(operands, "einsum")
    subs, out_sub = _parse(equation, operands)
    dtype = operands[0].dtype if operands else None
    for t in operands:
        if t.dtype != dtype:
            raise RuntimeError(f"expected scalar type {_DTYPE_NAMES.get(dtype, dtype)} but "
                               f"found {_DTYPE_NAMES.get(t.dtype, t.dtype)}")
    # each subscript's size: the one size other than 1 among its dims (1 broadcasts)
    sizes = {}
    for i, (sub, t) in enumerate(zip(subs, operands)):
        for c, n in zip(sub, t.shape):
            if sub.count(c) > 1 and n != t.shape[sub.index(c)]:
                raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {i} but "
                                   f"the sizes don't match, {t.shape[sub.index(c)]} != {n}")
            if sizes.get(c, 1) != 1 and n not in (1, sizes[c]):
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {i} "
                                   f"which does not broadcast with previously seen size "
                                   f"{sizes[c]}")
            if n != 1 or c not in sizes:
                sizes[c] = n
    xp = _xp(operands[0]._data)
    arrays = [xp.broadcast_to(t._data, tuple(sizes[c] for c in sub))
              for sub, t in zip(subs, operands)]
    spec = ",".join(subs) + "->" + out_sub
    out = _contiguous(xp.asarray(xp.einsum(spec, *arrays), dtype=dtype))

    def backward(g):
        return tuple(_einsum_grad(xp, g, out_sub, subs, arrays, k, sizes, t.shape)
                     if t._requires_grad else None for k, t in enumerate(operands))

    return _make(out, operands, backward)


def _einsum_grad(xp, g, out_sub, subs, arrays, k, sizes, shape):
    """The gradient of operand k of an einsum (see einsum)."""
    sub = subs[k]
    letters = "".join(dict.fromkeys(sub))  # its distinct subscripts, in order
    others = [(s, a) for i, (s, a) in enumerate(zip(subs, arrays)) if i != k]
    seen = set(out_sub).union(*(set(s) for s, _ in others))
    reached = "".join(c for c in letters if c in seen)
    spec = ",".join([out_sub] + [s for s, _ in others]) + "->" + reached
    part = xp.einsum(spec, g, *(a for _, a in others))
    # the subscripts nothing else has: the gradient is the same all along them
    part = part.reshape(tuple(sizes[c] if c in reached else 1 for c in letters))
    part = xp.broadcast_to(part, tuple(sizes[c] for c in letters))
    if len(letters) < len(sub):  # repeated subscripts: onto the diagonal, zeros elsewhere
        full = xp.zeros(tuple(sizes[c] for c in sub), np.float32)
        # each dim indexed by the coordinate of its subscript: repeats share one coordinate
        grid = [xp.arange(n).reshape((1,) * d + (-1,) + (1,) * (part.ndim - d - 1))
                for d, n in enumerate(part.shape)]
        full[tuple(grid[letters.index(c)] for c in sub)] = part
        part = full
    # summed back over the dims this operand broadcast from size 1
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and part.shape[i] != 1)
    if axes:
        part = part.sum(axis=axes, keepdims=True)
    return _contiguous(xp.asarray(part, dtype=np.float32).reshape(shape))


def tensordot(a, b, dims=2):
    """The sum of products over the last `dims` dims of a and the first of b, or over the
    dims listed in dims = ([a's], [b's]), as torch.tensordot: an einsum."""
    for t, arg in ((a, "a"), (b, "b")):
        if not isinstance(t, _tensor()):
            raise TypeError(f"tensordot(): argument '{arg}' must be Tensor, not "
                            f"{type(t).__name__}")
    if isinstance(dims, _tensor()):
        dims = dims.tolist()
    if isinstance(dims, (tuple, list)):
        if len(dims) != 2:
            raise RuntimeError("tensordot expects dims to be an int or a pair of lists of dims")
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
        if len(da) != len(db):
            raise RuntimeError("both dimension lists should have same length")
    elif isinstance(dims, int) and not isinstance(dims, bool):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        raise TypeError(f"tensordot(): argument 'dims' must be an int or a pair of lists, got "
                        f"{type(dims).__name__}")
    if a.dtype != b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    da = [dim_index(d, a.ndim) for d in da]
    db = [dim_index(d, b.ndim) for d in db]
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[i]} in dim {i} and second has size {b.shape[j]} in "
                               f"dim {j}")
    letters = iter(string.ascii_letters)
    sa = [next(letters) for _ in range(a.ndim)]
    sb = [next(letters) for _ in range(b.ndim)]
    for i, j in zip(da, db):
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in da] + [c for j, c in enumerate(sb)
                                                          if j not in db]
    return einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", a, b)


def kron(input, other):
    """The Kronecker product: out[i * m + k] = input[i] * other[k] along every dim (the
    fewer dims padded with leading 1s), as torch.kron; a broadcast product, so dtypes
    promote as in arithmetic, with its gradients."""
    for t, arg in ((input, "input"), (other, "other")):
        if not isinstance(t, _tensor()):
            raise TypeError(f"kron(): argument '{arg}' must be Tensor, not {type(t).__name__}")
    rank = max(input.ndim, other.ndim)
    sa = (1,) * (rank - input.ndim) + input.shape
    sb = (1,) * (rank - other.ndim) + other.shape
    # input's dims interleaved with 1s, other's with 1s the other way: the product pairs
    # every element of one with every element of the other, in Kronecker order
    left = _reshape(input, tuple(n for m in sa for n in (m, 1)))
    right = _reshape(other, tuple(n for m in sb for n in (1, m)))
    return _reshape(left * right, tuple(m * n for m, n in zip(sa, sb)))


def trace(input):
    """The sum of a matrix's main diagonal; int64 for integers, as in PyTorch."""
    if not isinstance(input, _tensor()):
        raise TypeError(f"trace(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    if input.dtype == np.bool_:
        raise NotImplementedError('"trace" not implemented for \'Bool\'')
    return diag(input).sum()


def cross(input, other, dim=None):
    """The cross product of 3-vectors along dim, input and other broadcast together, as
    torch.cross: without dim (deprecated, with PyTorch's warning), the first dim of size 3."""
    for t, arg in ((input, "input"), (other, "other")):
        if not isinstance(t, _tensor()):
            raise TypeError(f"cross(): argument '{arg}' must be Tensor, not {type(t).__name__}")
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if input.dtype != other.dtype:
        raise RuntimeError(f"expected scalar type {_DTYPE_NAMES.get(input.dtype, input.dtype)} "
                           f"but found {_DTYPE_NAMES.get(other.dtype, other.dtype)}")
    a, b = broadcast_tensors(input, other)
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease "
                      "either pass the dim explicitly or simply use torch.linalg.cross.",
                      UserWarning, stacklevel=3)
        threes = [d for d, n in enumerate(a.shape) if n == 3]
        if not threes:
            raise RuntimeError("no dimension of size 3 in input")
        dim = threes[0]
    at = dim_index(dim, a.ndim)
    if input.shape[at] != 3 or other.shape[at] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{input.shape[at]} and {other.shape[at]}")
    a0, a1, a2 = unbind(a, at)
    b0, b1, b2 = unbind(b, at)
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], at)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each row of x1 (..., P, M) and each row of x2 (..., R,
    M): (..., P, R), the batch dims broadcast, as torch.cdist. Computed from the
    differences directly (no Gram-matrix shortcut, so no cancellation), with norm's
    gradients (0 where a distance is 0)."""
    for t, arg in ((x1, "x1"), (x2, "x2")):
        if not isinstance(t, _tensor()):
            raise TypeError(f"cdist(): argument '{arg}' must be Tensor, not {type(t).__name__}")
        if t.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {arg.upper()} got: "
                               f"{t.ndim}D")
        if t.dtype.kind != "f":
            raise RuntimeError(f"cdist only supports floating-point dtypes, {arg.upper()} got: "
                               f"{_DTYPE_NAMES.get(t.dtype, t.dtype)}")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not p >= 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                            "donot_use_mm_for_euclid_dist"):
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    broadcast_shape(x1.shape[:-2], x2.shape[:-2])
    # (..., P, 1, M) - (..., 1, R, M): every pair's difference
    diff = unsqueeze(x1, -2) - unsqueeze(x2, -3)
    return norm(diff, float(p), -1)


def block_diag(*tensors):
    """The tensors (0-D as 1x1, 1-D as one row) placed along the diagonal of a matrix of
    zeros, as torch.block_diag; dtypes promote as in arithmetic. Gradients go back to each
    block."""
    tensors = _operand_list(tensors, "block_diag")
    Tensor = _tensor()
    blocks = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.ndim} dimensions")
        blocks.append(_reshape(t, (1, -1) if t.ndim < 2 else t.shape))
    kinds = {t.dtype.kind for t in blocks}
    dtype = np.dtype(np.float32) if "f" in kinds else np.dtype(np.int64) if kinds - {"b"} \
        else np.dtype(np.bool_)
    if not blocks:
        return Tensor(np.zeros((1, 0), np.float32))
    xp = _xp(blocks[0]._data)
    blocks = [b if b.dtype == dtype else Tensor(b._data.astype(dtype)) for b in blocks]
    width = sum(b.shape[1] for b in blocks)
    rows, before = [], 0
    for b in blocks:
        n, m = b.shape
        left = Tensor(xp.zeros((n, before), dtype))
        right = Tensor(xp.zeros((n, width - before - m), dtype))
        rows.append(cat([left, b, right], 1))
        before += m
    return cat(rows, 0)


def cartesian_prod(*tensors):
    """Every combination of one element of each 1-D tensor, as rows of an (N, k) tensor in
    order (a 1-D tensor given alone is itself), as torch.cartesian_prod."""
    tensors = _operand_list(tensors, "cartesian_prod")
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([_reshape(g, (-1,)) for g in grids], 1)
