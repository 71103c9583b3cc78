/*
 * transpose.c - out[b, j, i] = x[b, i, j]: the last two axes of a batch of matrices swapped.
 *
 * Copied element by element in the output's order, each output row gathers one float from
 * each of x's rows, a cache line apiece: once a matrix outgrows L1 every float costs a line
 * fetched and mostly wasted (NumPy's copy of a 512 x 128 float32 transpose, the W_hh^T of an
 * LSTM layer, took 40 us, 6.5 GB/s; 1024 x 256, 305 us). Here the matrices go in square
 * tiles of TILE x TILE floats (16 lines read, 16 written, all in L1), each transposed 8 x 8
 * at a time in AVX2 registers (unpack and shuffle steps, as in any 8 x 8 float transpose)
 * where the CPU has AVX2, element by element otherwise and at the edges. Rows of tiles run
 * in parallel. It moves floats only, so the result does not depend on the thread count.
 */
#include <stddef.h>
#include <stdint.h>

#include "overlap.h"
#include "pyrt.h"
#include "simd_math.h"

#define TILE 32
#define GRAIN_FLOATS (1 << 15) /* floats per chunk of rows of tiles: some microseconds */

typedef struct transpose_job {
    const float *x;
    float *out;
    int64_t rows, cols, tile_rows; /* tile_rows: rows of tiles per matrix */
} transpose_job;

/* A block of `r` rows and `c` columns of x (row stride ldx) into out (row stride ldo). */
static void block_scalar(const float *x, int64_t ldx, float *out, int64_t ldo, int64_t r,
                         int64_t c)
{
    for (int64_t j = 0; j < c; j++)
        for (int64_t i = 0; i < r; i++)
            out[j * ldo + i] = x[i * ldx + j];
}

#if SIMD_HAVE_X86

/* An 8 x 8 block: rows of x in eight registers, columns out. */
SIMD_AVX2 static inline void block8_avx2(const float *x, int64_t ldx, float *out, int64_t ldo)
{
    __m256 r0 = _mm256_loadu_ps(x), r1 = _mm256_loadu_ps(x + ldx);
    __m256 r2 = _mm256_loadu_ps(x + 2 * ldx), r3 = _mm256_loadu_ps(x + 3 * ldx);
    __m256 r4 = _mm256_loadu_ps(x + 4 * ldx), r5 = _mm256_loadu_ps(x + 5 * ldx);
    __m256 r6 = _mm256_loadu_ps(x + 6 * ldx), r7 = _mm256_loadu_ps(x + 7 * ldx);
    /* pairs of rows interleaved, then pairs of pairs, then the 128-bit halves exchanged */
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    r0 = _mm256_shuffle_ps(t0, t2, 0x44);
    r1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    r2 = _mm256_shuffle_ps(t1, t3, 0x44);
    r3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    r4 = _mm256_shuffle_ps(t4, t6, 0x44);
    r5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    r6 = _mm256_shuffle_ps(t5, t7, 0x44);
    r7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(out, _mm256_permute2f128_ps(r0, r4, 0x20));
    _mm256_storeu_ps(out + ldo, _mm256_permute2f128_ps(r1, r5, 0x20));
    _mm256_storeu_ps(out + 2 * ldo, _mm256_permute2f128_ps(r2, r6, 0x20));
    _mm256_storeu_ps(out + 3 * ldo, _mm256_permute2f128_ps(r3, r7, 0x20));
    _mm256_storeu_ps(out + 4 * ldo, _mm256_permute2f128_ps(r0, r4, 0x31));
    _mm256_storeu_ps(out + 5 * ldo, _mm256_permute2f128_ps(r1, r5, 0x31));
    _mm256_storeu_ps(out + 6 * ldo, _mm256_permute2f128_ps(r2, r6, 0x31));
    _mm256_storeu_ps(out + 7 * ldo, _mm256_permute2f128_ps(r3, r7, 0x31));
}

/* A tile of r x c floats of x (at most TILE each): its whole 8 x 8 blocks in registers, along
 * the output's rows (each of its lines written whole before the next 8 rows), the rest
 * element by element. */
SIMD_AVX2 static void tile_avx2(const float *x, int64_t ldx, float *out, int64_t ldo, int64_t r,
                                int64_t c)
{
    const int64_t r8 = r / 8 * 8, c8 = c / 8 * 8;
    for (int64_t j = 0; j < c8; j += 8)
        for (int64_t i = 0; i < r8; i += 8)
            block8_avx2(x + i * ldx + j, ldx, out + j * ldo + i, ldo);
    if (c8 < c)
        block_scalar(x + c8, ldx, out + c8 * ldo, ldo, r, c - c8);
    if (r8 < r)
        block_scalar(x + r8 * ldx, ldx, out + r8, ldo, r - r8, c8);
}

#endif

static int transpose_tile_rows(void *ctx, int64_t start, int64_t stop)
{
    const transpose_job *j = ctx;
    const int64_t rows = j->rows, cols = j->cols;
#if SIMD_HAVE_X86
    const int avx2 = simd_cpu_has_avx2_fma();
#endif
    for (int64_t t = start; t < stop; t++) {
        const int64_t b = t / j->tile_rows, i0 = (t % j->tile_rows) * TILE;
        const int64_t r = rows - i0 < TILE ? rows - i0 : TILE;
        const float *x = j->x + b * rows * cols + i0 * cols;
        float *out = j->out + b * rows * cols + i0;
        for (int64_t j0 = 0; j0 < cols; j0 += TILE) {
            const int64_t c = cols - j0 < TILE ? cols - j0 : TILE;
#if SIMD_HAVE_X86
            if (avx2) {
                tile_avx2(x + j0, cols, out + j0 * rows, rows, r, c);
                continue;
            }
#endif
            block_scalar(x + j0, cols, out + j0 * rows, rows, r, c);
        }
    }
    return 0;
}

int pyrt_transpose(const float *x, float *out, int64_t batch, int64_t rows, int64_t cols)
{
    if (batch < 0 || rows < 0 || cols < 0)
        return PYRT_EINVAL;
    if (batch == 0 || rows == 0 || cols == 0)
        return PYRT_OK;
    if (!x || !out)
        return PYRT_EINVAL;
    const int64_t n = batch * rows * cols;
    if (ranges_meet(out, n, x, n))
        return PYRT_EOVERLAP;
    const int64_t tile_rows = (rows + TILE - 1) / TILE;
    const int64_t per = TILE * cols, grain = per >= GRAIN_FLOATS ? 1 : GRAIN_FLOATS / per;
    transpose_job j = {x, out, rows, cols, tile_rows};
    return pyrt_parallel_for(batch * tile_rows, grain, transpose_tile_rows, &j);
}
