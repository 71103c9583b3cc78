/*
 * kernel_generic.c - the portable micro-kernel: a 4 x 8 tile in plain C.
 *
 * 32 accumulators fit the 16 SSE registers of baseline x86-64 as 8 vectors of 4, and the
 * compiler vectorises the j loops at -O3 on any target. It is the fallback for CPUs without
 * AVX2 and the reference the vector kernels are tested against.
 */
#include "gemm_internal.h"

#define MR 4
#define NR 8

static void tile_4x8(int64_t kc, const float *a, int64_t rsa, int64_t csa, const float *b,
                     int64_t rsb, float *c, int64_t ldc, float beta)
{
    float acc[MR][NR] = {{0.0f}};
    for (int64_t p = 0; p < kc; p++) {
        for (int i = 0; i < MR; i++) {
            const float ai = a[i * rsa];
            for (int j = 0; j < NR; j++)
                acc[i][j] += ai * b[j];
        }
        a += csa;
        b += rsb;
    }
    for (int i = 0; i < MR; i++) {
        float *ci = c + i * ldc;
        if (beta == 0.0f) {
            for (int j = 0; j < NR; j++)
                ci[j] = acc[i][j];
        } else {
            for (int j = 0; j < NR; j++)
                ci[j] = beta * ci[j] + acc[i][j];
        }
    }
}

static const gemm_kernel generic_kernel = {
    .name = "generic",
    .mr = MR,
    .nr = NR,
    .kc_max = 256,
    .tile = tile_4x8,
    .pack_a = gemm_pack_a_generic,
    .pack_b = gemm_pack_b_generic,
};

const gemm_kernel *gemm_kernel_generic(void)
{
    return &generic_kernel;
}
