/*
 * kernel_avx512.c - the AVX-512 micro-kernel: a 14 x 32 register tile.
 *
 * Thirty-two zmm registers: 28 hold the tile (14 rows x 2 vectors of 16), 2 the current row of
 * B, 1 the broadcast A value. Each step of k issues 28 FMAs against 2 vector loads and 14
 * broadcasts: enough independent accumulators for two 512-bit FMA pipes with a latency of 4
 * cycles (Skylake-SP and later, Zen 4), and a load-to-FMA ratio (16:28) that leaves the load
 * ports idle a third of the time. It is compiled for AVX-512F with a target attribute and
 * called only after __builtin_cpu_supports("avx512f") said yes. A version for each number of
 * rows from 1 to 13 serves the bottom edge of C.
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

/* The first R rows of the tile (R constant in each instance below, so that the loops unroll
 * and the accumulators stay in registers): A's rows past R are not read and C's not written,
 * and every element goes through the same instructions whatever R is, so a tile at the bottom
 * edge of C rounds as a full one does. */
GEMM_AVX512_TARGET static inline __attribute__((always_inline)) void tile_body(
    const int R, int64_t kc, const float *a, int64_t rsa, int64_t csa, const float *b,
    int64_t rsb, float *c, int64_t ldc, float beta)
{
    v16 lo[MR], hi[MR];
#pragma GCC unroll 14
    for (int i = 0; i < R; i++) {
        lo[i] = (v16){0};
        hi[i] = (v16){0};
        __builtin_prefetch(c + i * ldc);
        __builtin_prefetch(c + i * ldc + NR - 1);
    }

    if (rsa == 1) {
        /* a packed micro-panel, or a transposed A: the values of step p are adjacent */
        for (int64_t p = 0; p < kc; p++, a += csa, b += rsb) {
            v16 b0, b1;
            LOAD16(b0, b);
            LOAD16(b1, b + 16);
#pragma GCC unroll 14
            for (int i = 0; i < R; i++) {
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
            for (int i = 0; i < R; i++) {
                lo[i] += a[i * rsa + p] * b0;
                hi[i] += a[i * rsa + p] * b1;
            }
        }
    }

#pragma GCC unroll 14
    for (int i = 0; i < R; i++) {
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

#define TILE_R(R)                                                                             \
    GEMM_AVX512_TARGET static void tile_##R##x32(int64_t kc, const float *a, int64_t rsa,     \
                                                 int64_t csa, const float *b, int64_t rsb,    \
                                                 float *c, int64_t ldc, float beta)           \
    {                                                                                         \
        tile_body(R, kc, a, rsa, csa, b, rsb, c, ldc, beta);                                  \
    }
TILE_R(1)
TILE_R(2)
TILE_R(3)
TILE_R(4)
TILE_R(5)
TILE_R(6)
TILE_R(7)
TILE_R(8)
TILE_R(9)
TILE_R(10)
TILE_R(11)
TILE_R(12)
TILE_R(13)
TILE_R(14)

/* gemm_tile_rows_fn: the instance for `rows` (1 <= rows < MR) */
static void tile_rows_14x32(int rows, int64_t kc, const float *a, int64_t rsa, int64_t csa,
                            const float *b, int64_t rsb, float *c, int64_t ldc, float beta)
{
    static const gemm_tile_fn by_rows[MR] = {
        NULL, tile_1x32, tile_2x32, tile_3x32, tile_4x32, tile_5x32, tile_6x32, tile_7x32,
        tile_8x32, tile_9x32, tile_10x32, tile_11x32, tile_12x32, tile_13x32};
    by_rows[rows](kc, a, rsa, csa, b, rsb, c, ldc, beta);
}

static const gemm_kernel avx512_kernel = {
    .name = "avx512",
    .mr = MR,
    .nr = NR,
    .tile = tile_14x32,
    .tile_rows = tile_rows_14x32,
    /* every AVX-512 CPU has AVX2, and these AVX2 kernels serve here too: */
    /* the dot kernel loads 7 vectors per 12 FMAs, its rows of A from L2, so beside this tile
     * it wins only where one side is narrow (on a Xeon: 64 x 128 x 784 ran at 99 GFLOP/s by
     * dot products and 106 packed; 32 x 128 x 784 at 99 against 78) */
    .dot = gemm_dot_avx2,
    .dot_side = 32,
    .prefetch_b = 0,
    /* the row kernel sums each element as this tile does (FMAs in k order from zero, a fused
     * beta update); the packers have AVX2 paths for this tile */
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
