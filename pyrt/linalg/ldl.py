"""LDL^T factorizations of symmetric (possibly indefinite) matrices, as torch.linalg's
ldl_factor, ldl_factor_ex and ldl_solve: LAPACK sytrf's Bunch-Kaufman form, L unit lower
triangular below the diagonal of LD, D block diagonal with 1 x 1 and 2 x 2 blocks, and
sytrf's pivots (a negative pair marks a 2 x 2 block). Computed on float64 copies on the host
with SciPy's LAPACK, one matrix at a time. As in PyTorch, none of them is differentiable."""

from collections import namedtuple

import numpy as np

from pyrt.functional import _contiguous, _make, _tensor
from pyrt.linalg._common import (
    LinAlgError,
    device_of,
    host,
    lapack,
    matrices,
    narrow,
    raise_info,
    tensor_array,
    type_name,
    wide,
)

__all__ = ["ldl_factor", "ldl_factor_ex", "ldl_solve"]

ldl_factor_result = namedtuple("ldl_factor", ("LD", "pivots"))
ldl_factor_ex_result = namedtuple("ldl_factor_ex", ("LD", "pivots", "info"))


def _not_differentiable(name):
    def backward(g):
        raise RuntimeError(f"the derivative for '{name}' is not implemented")

    return backward


def _int_tensor(like, array):
    return _tensor()(_contiguous(device_of(like, np.asarray(array, dtype=np.int64))))


def _factored(A, name, hermitian):
    """(a, LD, pivots, info) of the LDL^T factorizations of A's lower triangles."""
    a = matrices(A, name, square=True)
    if not isinstance(hermitian, (bool, np.bool_)):
        raise TypeError(f"{name}(): argument 'hermitian' must be bool, not "
                        f"{type(hermitian).__name__}")
    a64 = host(wide(a))
    n = a.shape[-1]
    flat = a64.reshape((-1, n, n))
    ld = np.zeros_like(flat)
    pivots = np.tile(np.arange(1, n + 1, dtype=np.int64), (len(flat), 1))
    info = np.zeros(len(flat), np.int64)
    if flat.size:
        routine = lapack("sytrf", flat)
        for i, matrix in enumerate(flat):
            factors, pivots[i], info[i] = routine(matrix, lower=1)
            ld[i] = np.tril(factors)
    batch = a.shape[:-2]
    return (a, narrow(device_of(a, ld.reshape(a.shape)), a.dtype),
            pivots.reshape(batch + (n,)), info.reshape(batch))


def ldl_factor_ex(A, *, hermitian=False, check_errors=False):
    """(LD, pivots, info): the factorization A = P L D L^T P^T of each symmetric matrix from
    its lower triangle (hermitian changes nothing for real matrices), as LAPACK sytrf
    leaves it; info k > 0 where D's k-th diagonal entry is exactly zero (D singular)."""
    a, ld, pivots, info = _factored(A, "torch.linalg.ldl_factor_ex", hermitian)
    if check_errors:
        raise_info(info, "torch.linalg.ldl_factor_ex", lambda k: (
            f"The factorization could not be completed because the diagonal element {k} of "
            f"the block diagonal D is zero: the input matrix is singular."))
    return ldl_factor_ex_result(_make(ld, (A,), _not_differentiable("linalg_ldl_factor_ex")),
                                _int_tensor(a, pivots), _int_tensor(a, info))


def ldl_factor(A, *, hermitian=False):
    """(LD, pivots) of ldl_factor_ex, or a LinAlgError for a singular matrix (a zero
    diagonal entry of D)."""
    a, ld, pivots, info = _factored(A, "torch.linalg.ldl_factor", hermitian)
    raise_info(info, "torch.linalg.ldl_factor", lambda k: (
        f"The factorization could not be completed because the diagonal element {k} of the "
        f"block diagonal D is zero: the input matrix is singular."))
    return ldl_factor_result(_make(ld, (A,), _not_differentiable("linalg_ldl_factor_ex")),
                             _int_tensor(a, pivots))


def ldl_solve(LD, pivots, B, *, hermitian=False):
    """X with A X = B from ldl_factor's (LD, pivots) of symmetric A (LAPACK sytrs); batch
    dims broadcast."""
    name = "torch.linalg.ldl_solve"
    ld = matrices(LD, name, square=True, arg="LD")
    b = tensor_array(B, name, "B")
    piv = tensor_array(pivots, name, "pivots")
    if not isinstance(hermitian, (bool, np.bool_)):
        raise TypeError(f"{name}(): argument 'hermitian' must be bool, not "
                        f"{type(hermitian).__name__}")
    if b.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    if b.dtype != ld.dtype:
        raise RuntimeError(f"{name}: Expected LD and B to have the same dtype, but got LD "
                           f"with dtype {type_name(ld.dtype)} and B with dtype "
                           f"{type_name(b.dtype)} instead")
    if piv.dtype.kind not in "iu" or piv.shape != ld.shape[:-1]:
        raise RuntimeError(f"{name}: expected pivots of integers with shape "
                           f"{list(ld.shape[:-1])}, got {type_name(piv.dtype)} with shape "
                           f"{list(piv.shape)}")
    n = ld.shape[-1]
    if b.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for {name}: each A matrix is {n} by "
                           f"{n} but each b matrix is {b.shape[-2]} by {b.shape[-1]}")
    try:
        batch = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    except ValueError:
        raise RuntimeError(f"{name}: the batch dims of LD {list(ld.shape)} and B "
                           f"{list(b.shape)} do not broadcast") from None
    piv_host = host(piv).astype(np.int32)
    if piv_host.size and (np.abs(piv_host).min() < 1 or np.abs(piv_host).max() > n):
        raise RuntimeError(f"{name}: pivots must be between 1 and {n} in absolute value")
    lds = np.broadcast_to(host(wide(ld)), batch + (n, n)).reshape(-1, n, n)
    pivs = np.broadcast_to(piv_host, batch + (n,)).reshape(-1, n)
    bs = np.broadcast_to(host(wide(b)), batch + b.shape[-2:]).reshape((-1,) + b.shape[-2:])
    x = np.zeros(bs.shape)
    if x.size:
        routine = lapack("sytrs", lds)
        for i in range(len(lds)):
            x[i], info = routine(lds[i], pivs[i], bs[i], lower=1)
            if info < 0:
                raise LinAlgError(f"{name}: the factors are not sytrf's (LAPACK info {info})")
    out = narrow(device_of(ld, x.reshape(batch + b.shape[-2:])), ld.dtype)
    return _make(out, (LD, B), _not_differentiable("linalg_ldl_solve"))
