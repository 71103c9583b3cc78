"""Linear algebra as torch.linalg: norms, determinants, inverses and linear systems
(general, triangular, from LU or LDL^T factors, of tensors), factorizations (Cholesky, LU,
LDL^T, QR, symmetric eigendecomposition, SVD), the matrix exponential and products of
batched matrices, differentiable where PyTorch's are, batched over the dims before the last
two, with PyTorch's errors. Real matrices only: eig and eigvals, whose results are complex,
raise a TypeError. The `_ex` forms' info and the pivots are int64 (pyrt has no int32)."""

from pyrt.linalg._common import LinAlgError
from pyrt.linalg.decompositions import (
    cholesky,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    qr,
    svd,
    svdvals,
)
from pyrt.linalg.ex_forms import cholesky_ex, solve_ex
from pyrt.linalg.householder import householder_product
from pyrt.linalg.ldl import ldl_factor, ldl_factor_ex, ldl_solve
from pyrt.linalg.lu import lu, lu_factor, lu_factor_ex, lu_solve
from pyrt.linalg.matrix_exp import matrix_exp
from pyrt.linalg.norms import cond, matrix_norm, norm, vector_norm
from pyrt.linalg.products import cross, diagonal, matmul, multi_dot, vander, vecdot
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
from pyrt.linalg.tensor_systems import tensorinv, tensorsolve
from pyrt.linalg.triangular import solve_triangular

__all__ = [
    "LinAlgError",
    "cholesky",
    "cholesky_ex",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "householder_product",
    "inv",
    "inv_ex",
    "ldl_factor",
    "ldl_factor_ex",
    "ldl_solve",
    "lstsq",
    "lu",
    "lu_factor",
    "lu_factor_ex",
    "lu_solve",
    "matmul",
    "matrix_exp",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_ex",
    "solve_triangular",
    "svd",
    "svdvals",
    "tensorinv",
    "tensorsolve",
    "vander",
    "vecdot",
    "vector_norm",
]
