"""Linear algebra as torch.linalg: norms, determinants, inverses and linear systems,
factorizations (Cholesky, QR, symmetric eigendecomposition, SVD) and products of batched
matrices, each differentiable, batched over the dims before the last two where PyTorch
batches, with PyTorch's errors. Real matrices only: complex results (eig, eigvals of
non-symmetric matrices) are not provided."""

from pyrt.linalg._common import LinAlgError
from pyrt.linalg.decompositions import cholesky, eigh, eigvalsh, qr, svd, svdvals
from pyrt.linalg.norms import cond, matrix_norm, norm, vector_norm
from pyrt.linalg.products import cross, diagonal, matmul, multi_dot, vecdot
from pyrt.linalg.solvers import (
    det,
    inv,
    inv_ex,
    lstsq,
    matrix_power,
    matrix_rank,
    pinv,
    slogdet,
    solve,
)

__all__ = [
    "LinAlgError",
    "cholesky",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eigh",
    "eigvalsh",
    "inv",
    "inv_ex",
    "lstsq",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "vecdot",
    "vector_norm",
]
