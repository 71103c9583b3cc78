/*
 * kernel_avx512.c - the AVX-512 micro-kernel: a 14 x 32 register tile.
 *
 * Thirty-two zmm registers: 28 hold the tile (14 rows x 2 vectors of 16), 2 the current row of
 * B, 1 the broadcast A value. Each step of k issues 28 FMAs against 2 vector loads and 14
 * broadcasts: enough independent accumulators for two 512-bit FMA pipes with a latency of 4
 * cycles (Skylake-SP and later, Zen 4), and a load-to-FMA ratio (16:28) that leaves the load
 * ports idle a third of the time. It is compiled for AVX-512F with a target attribute and
 * called only after __builtin_cpu_supports("avx512f") said yes; A B^T products take the
 * packed path with it (no dot-product kernel here).
 *
 * The tile is written with GCC's generic vectors (16 floats, one zmm register under the
 * target attribute; a * b + c becomes one FMA, as -std=gnu11 contracts) in arrays indexed by
 * constants inside fully unrolled loops, which GCC keeps in registers. Written so, the same
 * source also compiles for any CPU: tests/avx512_logic.c builds it with GEMM_AVX512_TARGET
 * empty and checks the tile against a plain reference on machines without AVX-512.
 */
#include <string.h>

#include "gemm_internal.h"

#ifndef GEMM_AVX512_TARGET
#define GEMM_AVX512_TARGET __attribute__((target("avx512f")))
#endif

#define MR 14
#define NR 32

typedef float v16 __attribute__((vector_size(64)));

/* Unaligned loads and stores of 16 floats (one vmovups). */
#define LOAD16(v, ptr) memcpy(&(v), (ptr), sizeof(v16))
#define STORE16(ptr, v) memcpy((ptr), &(v), sizeof(v16))

GEMM_AVX512_TARGET static void tile_14x32(int64_t kc, const float *a, int64_t rsa, int64_t csa,
                                          const float *b, int64_t rsb, float *c, int64_t ldc,
                                          float beta)
{
    v16 lo[MR], hi[MR];
#pragma GCC unroll 14
    for (int i = 0; i < MR; i++) {
        lo[i] = (v16){0};
        hi[i] = (v16){0};
        __builtin_prefetch(c + i * ldc);
        __builtin_prefetch(c + i * ldc + NR - 1);
    }

    if (rsa == 1) {
        /* a packed micro-panel, or a transposed A: the 14 values of step p are adjacent */
        for (int64_t p = 0; p < kc; p++, a += csa, b += rsb) {
            v16 b0, b1;
            LOAD16(b0, b);
            LOAD16(b1, b + 16);
#pragma GCC unroll 14
            for (int i = 0; i < MR; i++) {
                lo[i] += a[i] * b0;
                hi[i] += a[i] * b1;
            }
        }
    } else {
        /* rows of A read in place: value (i, p) at a[i*rsa + p] */
        for (int64_t p = 0; p < kc; p++, b += rsb) {
            v16 b0, b1;
            LOAD16(b0, b);
            LOAD16(b1, b + 16);
#pragma GCC unroll 14
            for (int i = 0; i < MR; i++) {
                lo[i] += a[i * rsa + p] * b0;
                hi[i] += a[i * rsa + p] * b1;
            }
        }
    }

#pragma GCC unroll 14
    for (int i = 0; i < MR; i++) {
        float *ci = c + i * ldc;
        if (beta != 0.0f) {
            /* C = beta * C + acc, one rounding, as the AVX2 kernel does */
            v16 c0, c1;
            LOAD16(c0, ci);
            LOAD16(c1, ci + 16);
            lo[i] = beta * c0 + lo[i];
            hi[i] = beta * c1 + hi[i];
        }
        STORE16(ci, lo[i]);
        STORE16(ci + 16, hi[i]);
    }
}

static const gemm_kernel avx512_kernel = {
    .name = "avx512",
    .mr = MR,
    .nr = NR,
    .tile = tile_14x32,
    /* the AVX2 row kernel sums each element as this tile does (FMAs in k order from zero, a
     * fused beta update); the AVX2 packers handle any tile (their AVX2 paths are for 6 x 16;
     * other tiles take the portable loops); every AVX-512 CPU has AVX2 */
    .row = gemm_row_avx2,
    .pack_a = gemm_pack_a_avx2,
    .pack_b = gemm_pack_b_avx2,
};

const gemm_kernel *gemm_kernel_avx512(void)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx2")
        || !__builtin_cpu_supports("fma"))
        return NULL;
    return &avx512_kernel;
}
