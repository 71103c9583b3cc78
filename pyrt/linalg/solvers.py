"""Determinants, inverses and linear systems with their gradients: det, slogdet, inv,
inv_ex, solve, lstsq, pinv, matrix_rank and matrix_power. All work on float64 copies and
round their results to the input's dtype once: a float32 LU factorization of an
ill-conditioned matrix would lose most of its digits."""

import numbers
from collections import namedtuple

import numpy as np

from pyrt import functional as F
from pyrt.functional import _contiguous, _make, _tensor, _xp
from pyrt.linalg._common import (
    LinAlgError,
    finite,
    host,
    matrices,
    mT,
    narrow,
    raise_info,
    tensor_array,
    type_name,
    unbroadcast,
    wide,
    zero_pivots,
)
from pyrt.linalg.products import matmul
from pyrt.reductions import _others_product

__all__ = ["det", "inv", "inv_ex", "lstsq", "matrix_power", "matrix_rank", "pinv", "slogdet",
           "solve"]

# what they return, as torch.return_types
slogdet_result = namedtuple("slogdet", ("sign", "logabsdet"))
inv_ex_result = namedtuple("inv_ex", ("inverse", "info"))
lstsq_result = namedtuple("lstsq", ("solution", "residuals", "rank", "singular_values"))


def _singular(k):
    return (f"The diagonal element {k} is zero, the inversion could not be completed because "
            f"the input matrix is singular.")


# ---- determinants ----------------------------------------------------------------------------


def det(A):
    """The determinants of square matrices. The gradient is the cofactor matrix, g det(A)
    A^-T where A is invertible; computed from the SVD A = U S Vh as
    det(U) det(Vh) U diag(prod_{j != i} s_j) Vh, which holds for singular A too."""
    a = matrices(A, "linalg.det", square=True)
    xp = _xp(a)
    a64 = wide(a)

    def backward(g):
        if a.shape[-1] == 0:
            return (xp.zeros(a.shape, a.dtype),)
        u, s, vh = xp.linalg.svd(a64)
        scale = xp.linalg.det(u) * xp.linalg.det(vh) * wide(g)
        cofactors = (u * (_others_product(s) * scale[..., None])[..., None, :]) @ vh
        return (narrow(cofactors, a.dtype),)

    return _make(narrow(xp.asarray(xp.linalg.det(a64)), a.dtype), (A,), backward)


def slogdet(A):
    """(sign, log |det|) of square matrices, sign 0 and log |det| -inf for singular ones;
    computed from an LU factorization, so huge and tiny determinants stay representable.
    The gradient of log |det A| is A^-T (the sign has none)."""
    a = matrices(A, "linalg.slogdet", square=True)
    xp = _xp(a)
    a64 = wide(a)
    sign, logabsdet = xp.linalg.slogdet(a64)

    def backward(g):
        inverse, _ = inverse_ex(a64)
        return (narrow(mT(inverse) * wide(g)[..., None, None], a.dtype),)

    # the sign is piecewise constant: a zero gradient, as PyTorch's
    return slogdet_result(_make(narrow(xp.asarray(sign), a.dtype), (A,),
                                lambda g: (xp.zeros(a.shape, a.dtype),), reads=False),
                          _make(narrow(xp.asarray(logabsdet), a.dtype), (A,), backward))


# ---- inverses --------------------------------------------------------------------------------


def inverse_ex(a64):
    """(inverses, info) of float64 square matrices: info is LAPACK getrf's per matrix (the
    1-based index of an exactly zero pivot, 0 if none), the inverses of singular matrices
    NaN. A matrix LAPACK found singular where the pivot scan finds none (the two round
    differently) is an error naming no pivot."""
    xp = _xp(a64)
    try:
        out = xp.linalg.inv(a64)
    except np.linalg.LinAlgError:
        out = None
    if out is not None and finite(out):
        return out, xp.zeros(a64.shape[:-2], np.int32)
    info = zero_pivots(a64)
    singular = xp.asarray(info != 0)[..., None, None]
    try:
        out = xp.linalg.inv(xp.where(singular, xp.eye(a64.shape[-1]), a64))
    except np.linalg.LinAlgError:
        raise LinAlgError("linalg.inv: The inversion could not be completed because the input "
                          "matrix is singular.") from None
    return xp.where(singular, np.nan, out), xp.asarray(info.astype(np.int32))


def inverse_tensor(A, a, inverse):
    """The tensor of the inverses of A (array a): the gradient is -A^-T g A^-T."""
    return _make(narrow(inverse, a.dtype), (A,), lambda g: (
        narrow(-(mT(inverse) @ wide(g) @ mT(inverse)), a.dtype),))


def inv(A):
    """The inverses of square matrices, or PyTorch's LinAlgError naming the zero pivot of the
    first singular one; the gradient is -A^-T g A^-T."""
    a = matrices(A, "linalg.inv", square=True)
    inverse, info = inverse_ex(wide(a))
    raise_info(host(info), "linalg.inv", _singular)
    return inverse_tensor(A, a, inverse)


def inv_ex(A, *, check_errors=False):
    """(inverse, info) as torch.linalg.inv_ex: info (int32) is 0 for each invertible matrix,
    else the index of its zero pivot, and its inverse NaN; check_errors raises as inv."""
    a = matrices(A, "linalg.inv_ex", square=True)
    inverse, info = inverse_ex(wide(a))
    if check_errors:
        raise_info(host(info), "linalg.inv_ex", _singular)
    return inv_ex_result(inverse_tensor(A, a, inverse), _tensor()(info))


# ---- linear systems --------------------------------------------------------------------------


def _solved(a64, b64):
    """solve(a64, b64) for float64 operands of one batch shape, or PyTorch's LinAlgError for
    the first singular matrix."""
    xp = _xp(a64)
    try:
        out = xp.linalg.solve(a64, b64)
    except np.linalg.LinAlgError:
        out = None
    if out is None or not finite(out):
        message = "The solver failed because the input matrix is singular."
        raise_info(zero_pivots(a64), "torch.linalg.solve", lambda k: message)
        if out is None:
            raise LinAlgError(f"torch.linalg.solve: {message}")
    return out


def solve(A, B, *, left=True):
    """X with A X = B (left) or X A = B (left=False), A square. B is a batch of vectors when
    it is 1-D or when it is A's shape less its last dim, else a batch of matrices; batch dims
    broadcast. X A = B is A^T X^T = B^T. Gradients: dB = A^-T g (a second solve), and
    dA = -dB X^T."""
    a = matrices(A, "linalg.solve", square=True)
    b = tensor_array(B, "linalg.solve", "B")
    if b.dtype != a.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                           f"A of type {type_name(a.dtype)} and B of type "
                           f"{type_name(b.dtype)} instead.")
    n = a.shape[-1]
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    if b.ndim == 0:
        raise RuntimeError("linalg.solve: The input tensor B must have at least 1 dimensions.")
    # a vector is a column: with left=False, only a 1 x 1 A could take it
    rows, cols = (b.shape[-1], 1) if vector else b.shape[-2:]
    if (rows if left else cols) != n:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX' if left else 'XA'} = B ({n}x{n} and {rows}x{cols})")
    if vector and not left:
        raise RuntimeError("linalg.solve: Vector broadcasting of the left hand side is not "
                           "supported for left=False. In this case linalg.solve is equivalent "
                           "to B / A.squeeze(-1)")
    # the system A_eff X_eff = B_eff, a vector as one column
    a_eff = a if left else mT(a)
    b_eff = b[..., None] if vector else (b if left else mT(b))
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b_eff.shape[:-2])
    except ValueError:
        raise RuntimeError(f"linalg.solve: the batch dims of A {list(a.shape)} and B "
                           f"{list(b.shape)} do not broadcast") from None
    xp = _xp(a)
    a64 = xp.broadcast_to(wide(a_eff), batch + (n, n))
    x = _solved(a64, xp.broadcast_to(wide(b_eff), batch + b_eff.shape[-2:]))

    def shaped(x_eff):
        """A solution-shaped array from one of the system's."""
        return x_eff[..., 0] if vector else (x_eff if left else mT(x_eff))

    def backward(g):
        g = wide(g)
        gb = xp.linalg.solve(mT(a64), g[..., None] if vector else (g if left else mT(g)))
        ga = unbroadcast(-(gb @ mT(x)), a_eff.shape)
        return (narrow(ga if left else mT(ga), a.dtype) if A._requires_grad else None,
                narrow(shaped(unbroadcast(gb, b_eff.shape)), a.dtype)
                if B._requires_grad else None)

    return _make(narrow(shaped(x), a.dtype), (A, B), backward)


# ---- pseudo-inverses, ranks, least squares ---------------------------------------------------


def _tolerance(s_max, atol, rtol, dtype, m, n):
    """The singular values above which pinv and matrix_rank count: max(atol, rtol * s_max)
    per matrix. As in PyTorch, rtol defaults to eps * max(m, n) (eps of the input's dtype),
    and to 0 where an atol above 0 is given."""
    xp = _xp(s_max)

    def value(t, name):
        if t is None:
            return None
        if isinstance(t, _tensor()):
            return wide(t._data)
        if isinstance(t, bool) or not isinstance(t, numbers.Real):
            raise TypeError(f"argument '{name}' must be a float or a Tensor, got "
                            f"{type(t).__name__}")
        return xp.asarray(float(t))

    at, rt = value(atol, "atol"), value(rtol, "rtol")
    default = np.finfo(dtype).eps * max(m, n)
    if rt is None:
        rt = default if at is None else xp.where(at > 0, 0.0, default)
    if at is None:
        at = 0.0
    return xp.maximum(at, rt * s_max)


def _spectrum(a64, hermitian):
    """(U, S, Vh) of the SVD of float64 matrices; for symmetric ones (hermitian) from their
    eigendecomposition A = V diag(w) V^T, as S = |w| with the signs of w moved into U."""
    xp = _xp(a64)
    if not hermitian:
        return xp.linalg.svd(a64, full_matrices=False)
    w, v = xp.linalg.eigh(a64)
    return v * xp.where(w < 0, -1.0, 1.0)[..., None, :], xp.abs(w), mT(v)


def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """The Moore-Penrose pseudo-inverse, V diag(1/s) U^T over the singular values s above the
    tolerance (see _tolerance); hermitian=True takes A as symmetric (its lower triangle) and
    uses its eigendecomposition. The gradient is PyTorch's (pinv_backward), the derivative
    of the pseudo-inverse where the rank does not change."""
    a = tensor_array(A, "linalg.pinv")
    if a.ndim < 2 or a.dtype.kind != "f":
        raise RuntimeError(f"linalg.pinv({type_name(a.dtype)}{{{list(a.shape)}}}): expected a "
                           f"tensor with 2 or more dimensions of float, double, cfloat or "
                           f"cdouble types")
    xp = _xp(a)
    a64 = wide(a)
    m, n = a.shape[-2:]
    u, s, vh = _spectrum(a64, hermitian)
    s_max = s.max(axis=-1, keepdims=True) if s.shape[-1] else xp.zeros(s.shape[:-1] + (1,))
    keep = s > _tolerance(s_max, atol, rtol, a.dtype, m, n)
    p = (mT(vh) * xp.where(keep, 1 / xp.where(keep, s, 1.0), 0.0)[..., None, :]) @ mT(u)

    def backward(g):
        g = wide(g)
        ph, gh = mT(p), mT(g)
        # the products are ordered to keep their operands at the smaller of m and n
        if m <= n:
            k = gh @ p
            kph = k @ ph
            grad = -mT(p @ k) + kph - (a64 @ p) @ kph + (ph @ p) @ (gh - k @ a64)
        else:
            k = p @ gh
            phk = ph @ k
            grad = -mT(k @ p) + (gh - a64 @ k) @ p @ ph + phk - phk @ p @ a64
        return (narrow(grad, a.dtype),)

    return _make(narrow(p, a.dtype), (A,), backward)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):
    """The number of singular values above the tolerance of pinv (int64)."""
    a = matrices(A, "torch.linalg.matrix_rank", arg="input")
    xp = _xp(a)
    m, n = a.shape[-2:]
    a64 = wide(a)
    s = xp.abs(xp.linalg.eigvalsh(a64)) if hermitian else xp.linalg.svd(a64, compute_uv=False)
    s_max = s.max(axis=-1, keepdims=True) if s.shape[-1] else xp.zeros(s.shape[:-1] + (1,))
    tol = _tolerance(s_max, atol, rtol, a.dtype, m, n)
    return _tensor()(_contiguous(xp.asarray((s > tol).sum(axis=-1), dtype=np.int64)))


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solutions X minimizing |A X - B| (the minimum-norm one where A is
    rank-deficient), as pinv(A) @ B with singular values below rcond * s_max taken as zero
    (rcond defaults to eps * max(m, n); the "gels" driver assumes full rank and drops only
    exact zeros), gradients through pinv and the product. As PyTorch's drivers: residuals,
    the squared norms of the columns of A X - B, where m > n, every matrix has rank n and
    the driver is not "gelsy" (else empty); rank, except for "gels"; singular_values for
    "gelsd" and "gelss". Those three carry no gradient."""
    a = matrices(A, "torch.linalg.lstsq", arg="input")
    b = tensor_array(B, "torch.linalg.lstsq", "other")
    if driver is None:
        driver = "gelsy"
    if driver not in _DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, "
                           "gelsy, gelsd, gelss)")
    if b.dtype != a.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same "
                           f"dtype, but got input's dtype {type_name(a.dtype)} and other's "
                           f"dtype {type_name(b.dtype)}")
    if not 0 <= a.ndim - b.ndim <= 1:
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to "
                           "other.dim() and (input.dim() - other.dim()) <= 1")
    vector = b.ndim == a.ndim - 1  # a batch of vectors: columns
    m, n = a.shape[-2:]
    if b.shape[-1 if vector else -2] != m:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size("
                           f"{-1 if vector else -2})")
    xp = _xp(a)
    rc = np.finfo(a.dtype).eps * max(m, n) if rcond is None or rcond < 0 else float(rcond)
    solution = matmul(pinv(A, rtol=0.0 if driver == "gels" else rc),
                      F.reshape(B, b.shape + (1,)) if vector else B)
    a64 = wide(a)
    s = xp.linalg.svd(a64, compute_uv=False)
    s_max = s.max(axis=-1, keepdims=True) if s.shape[-1] else xp.zeros(s.shape[:-1] + (1,))
    rank = (s > rc * s_max).sum(axis=-1).astype(np.int64)
    empty = xp.zeros((0,), a.dtype)
    residuals = empty
    if driver != "gelsy" and m > n and bool((rank == n).all()):
        misfit = a64 @ wide(solution._data) - wide(b[..., None] if vector else b)
        residuals = narrow((misfit * misfit).sum(axis=-2), a.dtype)  # a vector's keeps k = 1
    if vector:
        solution = F.reshape(solution, solution.shape[:-1])
    Tensor = _tensor()
    return lstsq_result(
        solution, Tensor(residuals),
        Tensor(xp.zeros((0,), np.int64) if driver == "gels" else _contiguous(rank)),
        Tensor(narrow(s, a.dtype) if driver in ("gelsd", "gelss") else empty))


# ---- powers ----------------------------------------------------------------------------------


def matrix_power(A, n):
    """A^n for square matrices and an int n: the identity for n = 0, inv(A)^|n| for n < 0;
    by repeated squaring (log2 |n| products), gradients through the products (and inv).
    Integer matrices give exact int64 powers for n >= 0."""
    a = matrices(A, "linalg.matrix_power", square=True, integers=True)
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not "
                        f"{type(n).__name__}")
    n = int(n)
    xp = _xp(a)
    if n == 0:
        eye = _contiguous(xp.broadcast_to(xp.eye(a.shape[-1], dtype=a.dtype), a.shape))
        return _make(eye, (A,), lambda g: (xp.zeros(a.shape, a.dtype),), reads=False)
    power = inv(A) if n < 0 else A
    n = abs(n)
    result = None
    while True:
        if n & 1:
            result = power if result is None else matmul(result, power)
        n >>= 1
        if not n:
            break
        power = matmul(power, power)
    return result.clone() if result is A else result
