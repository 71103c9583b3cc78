"""torch.backends' switches and queries: cudnn, cuda (matmul), cpu, mps, mkldnn, mkl and
openmp, under torch's names and defaults.

pyrt has none of these libraries (no cuDNN, no cuBLAS TF32 mode, no MPS, no oneDNN, MKL or
OpenMP: its own work-stealing pool runs its float32 kernels), so each switch is accepted with
torch's type check and remembered, and changes nothing, but for
``cuda.matmul.allow_tf32``, which is pyrt.set_float32_matmul_precision's record under
another name as in torch. The queries say what pyrt has: cudnn.is_available() is False,
cpu.get_cpu_capability() names the instruction set of pyrt's GEMM kernel.
"""

from pyrt.backends import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp"]
