"""Products of Householder reflections, as torch.linalg.householder_product (LAPACK's orgqr):
the orthogonal factor of a QR factorization kept as reflectors (geqrf's form)."""

from pyrt import functional as F
from pyrt.linalg._common import matrices, tensor_array
from pyrt.linalg.products import matmul
from pyrt.tensor import eye

__all__ = ["householder_product"]


def householder_product(A, tau):
    """The first n columns of H_1 H_2 ... H_k, H_i = I - tau_i v_i v_i^T, for A m x n
    (m >= n) and tau of k <= n scalars per matrix: v_i is 0 above row i, 1 at row i and
    A's column i below it. Applied right to left to the first n columns of the identity,
    one rank-one update per reflector, from pyrt's differentiable ops (which carry the
    gradients with respect to A and tau)."""
    name = "torch.linalg.householder_product"
    a = tensor_array(A, name, "input")
    t = tensor_array(tau, name, "tau")
    if a.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    matrices(A, name, arg="input")
    m, n = a.shape[-2:]
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to "
                           f"input.shape[-1]")
    if t.ndim < 1 or t.shape[-1] > n:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           f"tau.shape[-1]")
    if t.shape[:-1] != a.shape[:-2]:
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(t.shape[:-1])}")
    if t.dtype != a.dtype:
        raise RuntimeError(f"{name}: tau dtype must be the same as input dtype")
    # the reflectors' vectors: A's strict lower triangle with ones on the diagonal
    v = A.tril(-1) + eye(m, n)
    q = A * 0 + eye(m, n)  # the identity's first n columns, in A's batch shape and graph
    for i in reversed(range(t.shape[-1])):
        vi = v[..., :, i:i + 1]  # m x 1
        # H_i Q = Q - tau_i v_i (v_i^T Q)
        q = q - F.reshape(tau[..., i], t.shape[:-1] + (1, 1)) * matmul(vi, matmul(vi.mT, q))
    return q
