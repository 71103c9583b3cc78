/*
 * dispatch.c - choosing the GEMM micro-kernel for this CPU, once, at first use.
 *
 * The best kernel the CPU supports is taken: AVX-512, then AVX2 + FMA, then the portable one.
 * The environment variable PYRT_SGEMM_KERNEL=generic|avx2|avx512, read at the first GEMM call,
 * forces a kernel (for tests and comparisons); a kernel the CPU cannot run, or any other
 * value, is ignored and the automatic choice stands. The choice is fixed for the life of the
 * process, so every call sums in the same order.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_internal.h"

static const gemm_kernel *choose(void)
{
    const char *want = getenv("PYRT_SGEMM_KERNEL");
    if (want && strcmp(want, "generic") == 0)
        return gemm_kernel_generic();
    const gemm_kernel *k = NULL;
    if (want && strcmp(want, "avx2") == 0)
        k = gemm_kernel_avx2();
    else if (want && strcmp(want, "avx512") == 0)
        k = gemm_kernel_avx512();
    if (k)
        return k;
    if ((k = gemm_kernel_avx512()))
        return k;
    if ((k = gemm_kernel_avx2()))
        return k;
    return gemm_kernel_generic();
}

const gemm_kernel *gemm_kernel_get(void)
{
    static _Atomic(const gemm_kernel *) chosen;
    /* the kernels are constant tables, so relaxed atomics suffice; threads racing here on the
     * first call all compute the same answer */
    const gemm_kernel *k = atomic_load_explicit(&chosen, memory_order_relaxed);
    if (!k) {
        k = choose();
        atomic_store_explicit(&chosen, k, memory_order_relaxed);
    }
    return k;
}

const char *pyrt_sgemm_kernel(void)
{
    return gemm_kernel_get()->name;
}
