"""torch.backends.cpu: the instruction set pyrt's CPU kernels use."""

__all__ = ["get_cpu_capability"]

# the names torch gives the instruction sets, by the name pyrt's GEMM kernel reports
_CAPABILITIES = {"avx512": "AVX512", "avx2": "AVX2", "generic": "DEFAULT"}


def get_cpu_capability():
    """The instruction set pyrt's float32 GEMM micro-kernel runs on this CPU: "AVX512",
    "AVX2" or "DEFAULT" (portable C), as torch names its own."""
    from pyrt.ops import sgemm_kernel

    return _CAPABILITIES.get(sgemm_kernel(), "DEFAULT")
