"""Matrix product on float32 CuPy arrays through cuBLAS (transposes handed over as flags,
without copies; alpha and beta to cuBLAS too), with pyrt.ops.matmul's arguments and checks;
during a CUDA-graph capture through pyrt's own kernel (pyrt/cuda/ops/gemm.py)."""

import cupy

from pyrt.cuda.ops._checks import check_f32, out_f32
from pyrt.cuda.ops.gemm import matmul as product
from pyrt.ops.linalg import check_matrix, mismatch

__all__ = ["matmul"]


def matmul(a, b, *, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, out=None):
    """``alpha * op(a) @ op(b)``, plus ``beta * out`` when `out` is given and beta != 0;
    op(x) is x, or x.T when the matching ``trans_*`` flag is set. `out` must not share
    memory with a or b."""
    a = check_matrix(check_f32(a, "a"), "a")
    b = check_matrix(check_f32(b, "b"), "b")
    opa = a.T if trans_a else a
    opb = b.T if trans_b else b
    (m, k), (kb, n) = opa.shape, opb.shape
    if k != kb:
        raise mismatch(a.shape, b.shape, trans_a, trans_b, (m, k), (kb, n))
    if out is None:
        return product(opa, opb, alpha=alpha)
    res = out_f32(out, (m, n))
    for x, name in ((a, "a"), (b, "b")):
        if cupy.may_share_memory(res, x):
            raise ValueError(f"out overlaps {name}: the product cannot be written over its "
                             "input")
    return product(opa, opb, out=res, alpha=alpha, beta=beta)
