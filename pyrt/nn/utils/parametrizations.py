"""Parametrizations of weights, as torch.nn.utils.parametrizations: ``orthogonal``,
``weight_norm`` and ``spectral_norm``, each registered with parametrize.register_parametrization
(so ``state_dict()`` holds "parametrizations.weight.original" and the like, as PyTorch's).
"""

from enum import Enum, auto

import numpy as np

from pyrt.autograd import no_grad
from pyrt.functional import _xp
from pyrt.linalg.householder import householder_product
from pyrt.linalg.matrix_exp import matrix_exp
from pyrt.linalg.solvers import solve
from pyrt.nn.module import Module
from pyrt.nn.utils import parametrize
from pyrt.nn.utils.spectral_norm import check_power_iterations, default_dim, weight_matrix
from pyrt.nn.utils.weight_norm import _weight_norm, norm_except_dim
from pyrt.shapes import cat
from pyrt.tensor import Tensor, eye, randn
from pyrt.vector_functions import normalize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _is_orthogonal(Q):
    n, k = Q.shape[-2:]
    eps = 10.0 * n * float(np.finfo(np.float32).eps)
    xp = _xp(Q._data)
    return bool(xp.allclose((Q.mT @ Q)._data, xp.eye(k, dtype=np.float32), atol=eps))


def _make_orthogonal(A):
    """The Q of A = QR with R's diagonal made non-negative: the unique such factor of a full
    rank A (the columns of Q times the signs of R's diagonal)."""
    xp = _xp(A._data)
    q, r = xp.linalg.qr(A._data.astype(np.float64))
    signs = xp.sign(xp.diagonal(r, axis1=-2, axis2=-1))[..., None, :]
    return Tensor((q * signs).astype(np.float32))


def _geqrf(A):
    """LAPACK's geqrf of each matrix of A (on the host): the reflectors below the diagonal and
    R on and above it, and the scalars tau, as torch.geqrf."""
    from scipy.linalg import lapack

    a = np.asarray(A._data if isinstance(A._data, np.ndarray) else A._data.get(), np.float32)
    m, n = a.shape[-2:]
    flat = a.reshape(-1, m, n)
    out = np.empty_like(flat)
    taus = np.empty((flat.shape[0], min(m, n)), np.float32)
    for i, matrix in enumerate(flat):
        qr, tau, _, info = lapack.sgeqrf(matrix)
        if info:
            raise RuntimeError(f"geqrf: LAPACK's sgeqrf failed with info={info}")
        out[i], taus[i] = qr, tau
    return out.reshape(a.shape), taus.reshape(a.shape[:-2] + (min(m, n),))


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """Maps an unconstrained matrix (or batch) to an orthogonal one of the same shape (one with
    orthonormal columns, or rows if wide): the exponential or the Cayley transform of the
    skew-symmetric matrix its lower triangle makes, or the product of the Householder
    reflections its strict lower triangle holds. With use_trivialization, the result is
    multiplied by the orthogonal buffer ``base`` that right_inverse sets, so that assigning
    an orthogonal matrix (and registering) needs no inverse of the map."""

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.shape[-2:]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        # here n >= k
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = cat([X, X.new_zeros(X.shape[:-2] + (n, n - k))], dim=-1)
            A = X - X.mT  # skew-symmetric
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = matrix_exp(A)
            else:  # (I - A/2)^-1 (I + A/2)
                Id = eye(n, device=A.device)
                Q = solve(Id + A * -0.5, Id + A * 0.5)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = householder_product(A, tau)
            # the signs kept on the diagonal flip columns (PyTorch's X.diagonal().int())
            Q = Q * X.diagonal(0, -2, -1).detach().trunc().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):
        """An unconstrained tensor that forward maps to the orthogonal Q; without trivialization
        only the Householder map has one (Q's own reflectors)."""
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape "
                                 f"{self.shape}. Got a tensor of shape {Q.shape}.")
            Q_init = Q
            n, k = Q.shape[-2:]
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley "
                        "parametrizations when use_trivialization=False.")
                a, tau = _geqrf(Q)
                # the diagonal becomes the signs that forward multiplies the columns by
                diag = np.sign(np.diagonal(a, axis1=-2, axis2=-1)).copy()
                diag[tau == 0.0] *= -1
                idx = np.arange(k)
                a[..., idx, idx] = diag
                A = Tensor(a).to(Q.device)
                return A.mT if transpose else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                # complete Q's columns to a random orthogonal basis
                N = randn(*(Q.shape[:-2] + (n, n - k)), device=Q.device)
                Q = _make_orthogonal(cat([Q, N], dim=-1))
            self.base = Q
            # the original whose image is the identity, so that forward gives base
            neg_id = np.zeros(Q_init.shape, np.float32)
            idx = np.arange(min(Q_init.shape[-2:]))
            neg_id[..., idx, idx] = -1.0
            return Tensor(neg_id).to(Q_init.device)


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Constrain the matrix (or batch of matrices) ``module.<name>`` to be orthogonal (its
    columns orthonormal, or its rows if it is wide). orthogonal_map: "matrix_exp", "cayley"
    or "householder" (None: "matrix_exp" for square matrices, else "householder"). With
    use_trivialization (the default), the optimization runs in a chart around the last
    assigned value (``base``), which makes assigning any orthogonal matrix possible.
    Returns module."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):  # (PyTorch's ValueError)
        raise ValueError(  # noqa: TRY004
            f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = ("matrix_exp" if weight.shape[-2] == weight.shape[-1]
                          else "householder")
    orth_enum = getattr(_OrthMaps, orthogonal_map, None) if isinstance(
        orthogonal_map, str) else None
    if orth_enum is None:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


class _WeightNorm(Module):
    """(g, v) -> g * v / ||v||, the norm over every dimension but `dim` (all, for None)."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Parametrize ``module.<name>`` as g * v / ||v||: the magnitude g is
    "parametrizations.<name>.original0" and the direction v "original1" (PyTorch's
    weight_g and weight_v), the norm taken over every dimension but `dim` (all of them with
    dim=None). Returns module."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    """weight -> weight / sigma, sigma its largest singular value (of the matrix with `dim`
    first) estimated by power iteration on the buffers ``_u`` and ``_v``, refined
    `n_power_iterations` times per call in training mode; a vector is simply normalized."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        n_power_iterations = check_power_iterations(n_power_iterations)
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            with no_grad():
                self.register_buffer("_u", normalize(randn(h, device=weight.device), dim=0,
                                                     eps=self.eps))
                self.register_buffer("_v", normalize(randn(w, device=weight.device), dim=0,
                                                     eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        return weight_matrix(weight, self.dim)

    def _power_method(self, weight_mat, n_power_iterations):
        # u = normalize(W v), v = normalize(W^T u), in place in the buffers
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(normalize(weight_mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(normalize(weight_mat.mT.mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # copies: a backward must not see the next call's updates
        u, v = self._u.clone(), self._v.clone()
        sigma = u.vdot(weight_mat.mv(v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Parametrize ``module.<name>`` as itself divided by its spectral norm, estimated by
    power iteration (15 iterations at registration, then `n_power_iterations` per read in
    training mode); `dim` is the output dimension (None: 1 for transposed convolutions, else
    0). Returns module."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):  # (PyTorch's ValueError)
        raise ValueError(  # noqa: TRY004
            f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = default_dim(module)
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
