/*
 * kernel_avx2.c - the AVX2 + FMA micro-kernel: a 6 x 16 register tile (BLIS's Haswell shape).
 *
 * Sixteen ymm registers: 12 hold the tile (6 rows x 2 vectors of 8), 2 hold the current row of
 * the B micro-panel, 1 the broadcast A value. Each step of k issues 12 FMAs against 2 vector
 * loads and 6 broadcasts. Zen 3 and Haswell-class cores retire 2 FMAs per cycle with a latency
 * of 4-5 cycles, so 12 independent accumulators keep both pipes busy, and the 8 loads of a step
 * fit the 2-3 load ports in the 6 cycles its FMAs take. On this Zen 3 it runs at 98% of the
 * FMA peak with kc = 256 and 92% with kc = 64 (C tile load and store included).
 *
 * A comes packed, or in place (rows of A, or rows of a transposed A); B packed, or in place
 * when its rows are rows of op(B): the strides are arguments (gemm_tile_fn).
 *
 * The file also holds the dot-product kernel for A B^T (dot.c): 3 rows of A against 4 rows of
 * B, 12 accumulators, 7 loads per 12 FMAs; and the row kernel (row.c): one row of C, 64
 * columns in 8 accumulators, B read in place.
 */
#include <immintrin.h>

#include "gemm_internal.h"

#define MR 6
#define NR 16

/* The k loop is written in assembly: compiled from intrinsics, GCC shuffles the
 * accumulators between registers with extra moves and loses 5-10% of the FMA rate. ymm0-ymm11
 * hold the tile (row i in ymm(2i), ymm(2i+1)), ymm13 the broadcast value of A, ymm14 and
 * ymm15 the row of B. The loop runs k in pairs of steps, then an odd last step, then writes
 * the tile to C. The same code is built for 1 to 6 rows (TILE_ROWS_R below): a tile at the
 * bottom edge of C computes and writes only the rows it has, with the same instructions per
 * element as a full tile, so it rounds the same way. */

#define LOAD_B "vmovups (%[b]), %%ymm14\n\t" "vmovups 32(%[b]), %%ymm15\n\t"
#define NEXT_B "add %[rsb], %[b]\n\t"

/* Row i of a step: broadcast its value of A (at address A) and update its two vectors. */
#define FMA_ROW(A, LO, HI)                                                                    \
    "vbroadcastss " A ", %%ymm13\n\t"                                                         \
    "vfmadd231ps %%ymm14, %%ymm13, %%ymm" LO "\n\t"                                           \
    "vfmadd231ps %%ymm15, %%ymm13, %%ymm" HI "\n\t"

/* The values of A of one step for the first R rows: adjacent at %[a] (packed A, or a row of a
 * transposed A), or in rows a, a + rsa, a + 2 rsa, r3, r3 + rsa, r3 + 2 rsa of A. */
#define COL_1 FMA_ROW("(%[a])", "0", "1")
#define COL_2 COL_1 FMA_ROW("4(%[a])", "2", "3")
#define COL_3 COL_2 FMA_ROW("8(%[a])", "4", "5")
#define COL_4 COL_3 FMA_ROW("12(%[a])", "6", "7")
#define COL_5 COL_4 FMA_ROW("16(%[a])", "8", "9")
#define COL_6 COL_5 FMA_ROW("20(%[a])", "10", "11")
#define ROW_1 FMA_ROW("(%[a])", "0", "1")
#define ROW_2 ROW_1 FMA_ROW("(%[a],%[rsa],1)", "2", "3")
#define ROW_3 ROW_2 FMA_ROW("(%[a],%[rsa],2)", "4", "5")
#define ROW_4 ROW_3 FMA_ROW("(%[r3])", "6", "7")
#define ROW_5 ROW_4 FMA_ROW("(%[r3],%[rsa],1)", "8", "9")
#define ROW_6 ROW_5 FMA_ROW("(%[r3],%[rsa],2)", "10", "11")

/* One step of k: rank-1 update of the first R rows, then on to the next step's values. */
#define STEP_COL(R) LOAD_B COL_##R NEXT_B "add %[csa], %[a]\n\t"
#define STEP_ROW(R) LOAD_B ROW_##R NEXT_B "add $4, %[a]\n\t" "add $4, %[r3]\n\t"

#define ZERO_TILE                                                                             \
    "vxorps %%ymm0, %%ymm0, %%ymm0\n\t"                                                       \
    "vxorps %%ymm1, %%ymm1, %%ymm1\n\t"                                                       \
    "vxorps %%ymm2, %%ymm2, %%ymm2\n\t"                                                       \
    "vxorps %%ymm3, %%ymm3, %%ymm3\n\t"                                                       \
    "vxorps %%ymm4, %%ymm4, %%ymm4\n\t"                                                       \
    "vxorps %%ymm5, %%ymm5, %%ymm5\n\t"                                                       \
    "vxorps %%ymm6, %%ymm6, %%ymm6\n\t"                                                       \
    "vxorps %%ymm7, %%ymm7, %%ymm7\n\t"                                                       \
    "vxorps %%ymm8, %%ymm8, %%ymm8\n\t"                                                       \
    "vxorps %%ymm9, %%ymm9, %%ymm9\n\t"                                                       \
    "vxorps %%ymm10, %%ymm10, %%ymm10\n\t"                                                    \
    "vxorps %%ymm11, %%ymm11, %%ymm11\n\t"

/* The first R rows of the tile to C: rows 0-2 at %[c] + i ldc, rows 3-5 at %[c3] + (i-3) ldc. */
#define C_1(OP) OP("%%ymm0", "%%ymm1", "(%[c])", "32(%[c])")
#define C_2(OP) C_1(OP) OP("%%ymm2", "%%ymm3", "(%[c],%[ldc],1)", "32(%[c],%[ldc],1)")
#define C_3(OP) C_2(OP) OP("%%ymm4", "%%ymm5", "(%[c],%[ldc],2)", "32(%[c],%[ldc],2)")
#define C_4(OP) C_3(OP) OP("%%ymm6", "%%ymm7", "(%[c3])", "32(%[c3])")
#define C_5(OP) C_4(OP) OP("%%ymm8", "%%ymm9", "(%[c3],%[ldc],1)", "32(%[c3],%[ldc],1)")
#define C_6(OP) C_5(OP) OP("%%ymm10", "%%ymm11", "(%[c3],%[ldc],2)", "32(%[c3],%[ldc],2)")

/* C = acc */
#define STORE(LO, HI, M0, M1) "vmovups " LO ", " M0 "\n\t" "vmovups " HI ", " M1 "\n\t"
/* C = beta * C + acc, one rounding (beta broadcast in ymm13) */
#define UPDATE(LO, HI, M0, M1)                                                                \
    "vfmadd231ps " M0 ", %%ymm13, " LO "\n\t"                                                 \
    "vfmadd231ps " M1 ", %%ymm13, " HI "\n\t"                                                 \
    STORE(LO, HI, M0, M1)

/* The end of the kernel: write R rows to C, overwriting them when %[beta] is zero. */
#define WRITE_C(R)                                                                            \
    "vxorps %%xmm13, %%xmm13, %%xmm13\n\t"                                                    \
    "vucomiss %[beta], %%xmm13\n\t"                                                           \
    "jne 4f\n\t"                                                                              \
    "jp 4f\n\t"                                                                               \
    C_##R(STORE)                                                                              \
    "jmp 5f\n\t"                                                                              \
    "4:\n\t"                                                                                  \
    "vbroadcastss %[beta], %%ymm13\n\t"                                                       \
    C_##R(UPDATE)                                                                             \
    "5:\n\t"

#define CLOBBERS                                                                              \
    "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",   \
        "xmm11", "xmm13", "xmm14", "xmm15", "cc", "memory"

/* The tile kernel for the first R rows (gemm_tile_fn with mr = R). */
#define TILE_ROWS_R(R)                                                                        \
    __attribute__((target("avx2,fma"))) static void tile_##R##x16(                            \
        int64_t kc, const float *a, int64_t rsa, int64_t csa, const float *b, int64_t rsb,    \
        float *c, int64_t ldc, float beta)                                                    \
    {                                                                                         \
        /* the C tile is needed only at the end: start fetching its rows now */               \
        for (int i = 0; i < R; i++) {                                                         \
            _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);                           \
            _mm_prefetch((const char *)(c + i * ldc + NR - 1), _MM_HINT_T0);                  \
        }                                                                                     \
        int64_t pairs = kc / 2, odd = kc % 2;                                                 \
        const int64_t rsb_bytes = rsb * (int64_t)sizeof(float);                               \
        const int64_t ldc_bytes = ldc * (int64_t)sizeof(float);                               \
        float *c3 = c + 3 * ldc; /* not read or written below 4 rows */                       \
        if (rsa == 1) {                                                                       \
            /* packed A (csa == 6), or a transposed A read in place (csa == lda) */           \
            const int64_t csa_bytes = csa * (int64_t)sizeof(float);                           \
            __asm__ volatile(ZERO_TILE                                                        \
                             "test %[n], %[n]\n\t"                                            \
                             "jz 2f\n\t"                                                      \
                             "1:\n\t"                                                         \
                             "prefetcht0 512(%[a])\n\t"                                       \
                             STEP_COL(R) STEP_COL(R)                                          \
                             "dec %[n]\n\t"                                                   \
                             "jnz 1b\n\t"                                                     \
                             "2:\n\t"                                                         \
                             "test %[odd], %[odd]\n\t"                                        \
                             "jz 3f\n\t"                                                      \
                             STEP_COL(R)                                                      \
                             "3:\n\t"                                                         \
                             WRITE_C(R)                                                       \
                             : [a] "+r"(a), [b] "+r"(b), [n] "+r"(pairs)                      \
                             : [odd] "r"(odd), [csa] "r"(csa_bytes), [rsb] "r"(rsb_bytes),    \
                               [c] "r"(c), [c3] "r"(c3), [ldc] "r"(ldc_bytes),                \
                               [beta] "m"(beta)                                               \
                             : CLOBBERS);                                                     \
        } else {                                                                              \
            /* rows of A read in place: value (i, p) at a[i*rsa + p] */                       \
            const float *r3 = a + 3 * rsa; /* not read below 4 rows */                        \
            const int64_t rsa_bytes = rsa * (int64_t)sizeof(float);                           \
            __asm__ volatile(ZERO_TILE                                                        \
                             "test %[n], %[n]\n\t"                                            \
                             "jz 2f\n\t"                                                      \
                             "1:\n\t"                                                         \
                             STEP_ROW(R) STEP_ROW(R)                                          \
                             "dec %[n]\n\t"                                                   \
                             "jnz 1b\n\t"                                                     \
                             "2:\n\t"                                                         \
                             "test %[odd], %[odd]\n\t"                                        \
                             "jz 3f\n\t"                                                      \
                             STEP_ROW(R)                                                      \
                             "3:\n\t"                                                         \
                             WRITE_C(R)                                                       \
                             : [a] "+r"(a), [r3] "+r"(r3), [b] "+r"(b), [n] "+r"(pairs)       \
                             : [odd] "r"(odd), [rsa] "r"(rsa_bytes), [rsb] "r"(rsb_bytes),    \
                               [c] "r"(c), [c3] "r"(c3), [ldc] "r"(ldc_bytes),                \
                               [beta] "m"(beta)                                               \
                             : CLOBBERS);                                                     \
        }                                                                                     \
    }

TILE_ROWS_R(1)
TILE_ROWS_R(2)
TILE_ROWS_R(3)
TILE_ROWS_R(4)
TILE_ROWS_R(5)
TILE_ROWS_R(6)

/* The first `rows` rows (1..5) of a tile at the bottom edge of C. */
static void tile_rows_6x16(int rows, int64_t kc, const float *a, int64_t rsa, int64_t csa,
                           const float *b, int64_t rsb, float *c, int64_t ldc, float beta)
{
    static const gemm_tile_fn by_rows[MR] = {NULL, tile_1x16, tile_2x16, tile_3x16, tile_4x16,
                                             tile_5x16};
    by_rows[rows](kc, a, rsa, csa, b, rsb, c, ldc, beta);
}

/* ---- dot products, for A B^T read in place (dot.c) ----------------------------------- */

/* Lanes of the last partial vector of k that are loaded: mask[8 - r .. 16 - r) has r ones. */
static const int32_t tail_mask[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

/* The lanes of 4 accumulators summed, each in the same fixed tree
 * ((l0+l1) + (l2+l3)) + ((l4+l5) + (l6+l7)), into the 4 values of one vector. */
__attribute__((target("avx2,fma"))) static inline __m128 hsum4(__m256 v0, __m256 v1, __m256 v2,
                                                              __m256 v3)
{
    const __m256 s = _mm256_hadd_ps(_mm256_hadd_ps(v0, v1), _mm256_hadd_ps(v2, v3));
    return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
}

/* out[i*4 + j] = sum over p < kc of a[i][p] * b[j][p] for the first R (1..3) rows of A and
 * the first C (1..4) rows of B: R x C accumulators of 8 lanes (lane l sums p = l, l+8, ...),
 * R + C loads per R x C FMAs (7 per 12 for a whole block), then each accumulator's lanes
 * summed by hsum4. A partial last vector is loaded under a mask (zeros add nothing). Every
 * element goes through the same instructions whatever R and C are; with R and C constant
 * (dot_RxC below) the loops unroll and the accumulators stay in registers. */
__attribute__((target("avx2,fma"))) static inline __attribute__((always_inline)) void dot_body(
    const int R, const int C, int64_t kc, const float *const a[3], const float *const b[4],
    float *out)
{
    __m256 acc[3][4], x[3];
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++)
            acc[i][j] = _mm256_setzero_ps();
    int64_t p = 0;
#define DOT_STEP(LOAD)                                                                        \
    do {                                                                                      \
        for (int i = 0; i < R; i++)                                                           \
            x[i] = LOAD(a[i] + p);                                                            \
        for (int j = 0; j < C; j++) {                                                         \
            const __m256 y = LOAD(b[j] + p);                                                  \
            for (int i = 0; i < R; i++)                                                       \
                acc[i][j] = _mm256_fmadd_ps(x[i], y, acc[i][j]);                              \
        }                                                                                     \
    } while (0)
#define LOADU(ptr) _mm256_loadu_ps(ptr)
#define LOADM(ptr) _mm256_maskload_ps(ptr, mask)
    for (; p + 8 <= kc; p += 8)
        DOT_STEP(LOADU);
    if (p < kc) {
        const __m256i mask = _mm256_loadu_si256((const __m256i *)(tail_mask + 8 - (kc - p)));
        DOT_STEP(LOADM);
    }
#undef LOADU
#undef LOADM
#undef DOT_STEP
    /* missing columns repeat the last one: their sums are not used */
    for (int i = 0; i < R; i++)
        _mm_storeu_ps(out + 4 * i, hsum4(acc[i][0], acc[i][C > 1 ? 1 : 0],
                                         acc[i][C > 2 ? 2 : C - 1], acc[i][C - 1]));
}

/* gemm_dot_fn */
GEMM_DOT_VERSIONS(, gemm_dot_avx2, __attribute__((target("avx2,fma"))), dot_body)

/* gemm_row_fn for V vectors of 8 columns (cols in (8V - 8, 8V]): V accumulators, each step of
 * k one broadcast of A and V FMAs with B read in place, the last vector under a mask when
 * cols is not a multiple of 8. With V = 8 the eight chains keep both FMA pipes busy through
 * the latency; the write to C is the tile's (WRITE_C): beta * C + acc fused, or acc when beta
 * is zero. With V constant (row_1 .. row_8 below) the loops unroll into registers. */
__attribute__((target("avx2,fma"))) static inline __attribute__((always_inline)) void row_body(
    const int V, int64_t kc, const float *a, const float *b, int64_t rsb, float *c, int cols,
    float beta)
{
    /* the last vector holds cols - 8 (V - 1) columns */
    const __m256i mask = _mm256_loadu_si256((const __m256i *)(tail_mask + 8 * V - cols));
    __m256 acc[8];
    for (int v = 0; v < V; v++)
        acc[v] = _mm256_setzero_ps();
    for (int64_t p = 0; p < kc; p++) {
        const __m256 x = _mm256_broadcast_ss(a + p);
        const float *bp = b + p * rsb;
        for (int v = 0; v < V - 1; v++)
            acc[v] = _mm256_fmadd_ps(x, _mm256_loadu_ps(bp + 8 * v), acc[v]);
        acc[V - 1] = _mm256_fmadd_ps(x, _mm256_maskload_ps(bp + 8 * (V - 1), mask), acc[V - 1]);
    }
    if (beta == 0.0f) {
        for (int v = 0; v < V - 1; v++)
            _mm256_storeu_ps(c + 8 * v, acc[v]);
    } else {
        const __m256 bv = _mm256_set1_ps(beta);
        for (int v = 0; v < V - 1; v++)
            _mm256_storeu_ps(c + 8 * v, _mm256_fmadd_ps(_mm256_loadu_ps(c + 8 * v), bv, acc[v]));
        acc[V - 1] = _mm256_fmadd_ps(_mm256_maskload_ps(c + 8 * (V - 1), mask), bv,
                                     acc[V - 1]);
    }
    _mm256_maskstore_ps(c + 8 * (V - 1), mask, acc[V - 1]);
}

#define ROW_V(V)                                                                              \
    __attribute__((target("avx2,fma"))) static void row_##V(                                  \
        int64_t kc, const float *a, const float *b, int64_t rsb, float *c, int cols,          \
        float beta)                                                                           \
    {                                                                                         \
        row_body(V, kc, a, b, rsb, c, cols, beta);                                            \
    }
ROW_V(1)
ROW_V(2)
ROW_V(3)
ROW_V(4)
ROW_V(5)
ROW_V(6)
ROW_V(7)
ROW_V(8)

/* gemm_row_fn: the version for the vectors `cols` spans */
void gemm_row_avx2(int64_t kc, const float *a, const float *b, int64_t rsb, float *c, int cols,
                   float beta)
{
    static const gemm_row_fn by_vectors[8] = {row_1, row_2, row_3, row_4,
                                              row_5, row_6, row_7, row_8};
    by_vectors[(cols - 1) / 8](kc, a, b, rsb, c, cols, beta);
}

/* gemm_row_sweep_fn: B read SWEEP_ROWS rows at a time across all `cols` columns, each row a
 * contiguous stream, the sums parked in a buffer in L1 between sweeps (a load and a store of
 * a vector per SWEEP_ROWS FMAs for each row of C); with several rows of C, each vector of B
 * read serves them all. Each element's sum is row_body's: one FMA per step of k, in order,
 * from zero, then the same write to C. Figures from an AMD EPYC (Zen 3), one thread:
 *   - Reading B down columns of 64 (row_body) met each row in 4 lines, a page apart from the
 *     next row's: one row times 2048 x 512 took 1.2-1.35 times torch.matmul's time, times
 *     4096 x 1024 (B from memory) 3.4-4.1 times, two rows times 4096 x 1024 2.8 times; swept,
 *     one row read 0.85-1.16 and 0.86-0.88. Sweeps of 4 rows of B read 1.0-1.08 and 1.06-1.22.
 *   - Longer pieces of B's rows read faster: one sweep across a span of 1024 columns instead
 *     of four across 256 (row.c) took one row times 4096 x 1024 from 1.63 to 1.01 times
 *     OpenBLAS's sgemv time, two rows from 0.52 to 0.40 times its sgemm's.
 *   - Three to five rows took the 6 x 16 tiles of the few-rows path, which read B down
 *     columns of 16: swept, 3 rows times 4096 x 1024 ran in 0.36 of OpenBLAS's time instead
 *     of 0.74, 4 rows times 1024 x 1024 in 0.62 instead of 1.01. Six rows fill the tile,
 *     which then ran faster than the sweep (0.56 against 0.64 times 4096 x 128). */
#define SWEEP_ROWS 8

/* park[r][v .. v + V) += sum over the sweep's rows q of x[r][q] * bq[q][v], in order of q:
 * R x V accumulators, each a chain of Q FMAs */
#define SWEEP_STEP(R, Q, V, LOAD, OFFSET)                                                     \
    do {                                                                                      \
        __m256 acc[GEMM_ROW_SWEEP_MAX_M][2];                                                  \
        for (int r_ = 0; r_ < (R); r_++)                                                      \
            for (int v_ = 0; v_ < (V); v_++)                                                  \
                acc[r_][v_] = _mm256_load_ps(park + r_ * stride + (OFFSET) + 8 * v_);         \
        for (int q_ = 0; q_ < (Q); q_++)                                                      \
            for (int v_ = 0; v_ < (V); v_++) {                                                \
                const __m256 bv_ = LOAD(bq[q_] + (OFFSET) + 8 * v_);                          \
                for (int r_ = 0; r_ < (R); r_++)                                              \
                    acc[r_][v_] = _mm256_fmadd_ps(x[r_][q_], bv_, acc[r_][v_]);               \
            }                                                                                 \
        for (int r_ = 0; r_ < (R); r_++)                                                      \
            for (int v_ = 0; v_ < (V); v_++)                                                  \
                _mm256_store_ps(park + r_ * stride + (OFFSET) + 8 * v_, acc[r_][v_]);         \
    } while (0)

/* A sweep of Q rows of B from row p, over every vector of the columns: V vectors at a time,
 * then the rest one at a time. */
#define SWEEP(R, Q)                                                                           \
    do {                                                                                      \
        __m256 x[GEMM_ROW_SWEEP_MAX_M][SWEEP_ROWS];                                           \
        const float *bq[SWEEP_ROWS];                                                          \
        for (int q = 0; q < (Q); q++) {                                                       \
            for (int r = 0; r < (R); r++)                                                     \
                x[r][q] = _mm256_broadcast_ss(a[r] + p + q);                                  \
            bq[q] = b + (p + q) * rsb;                                                        \
        }                                                                                     \
        int64_t v = 0;                                                                        \
        for (; v + V <= whole; v += V)                                                        \
            SWEEP_STEP(R, Q, V, _mm256_loadu_ps, 8 * v);                                      \
        for (; v < whole; v++)                                                                \
            SWEEP_STEP(R, Q, 1, _mm256_loadu_ps, 8 * v);                                      \
        if (whole < vectors)                                                                  \
            SWEEP_STEP(R, Q, 1, MASKED_LOAD, 8 * whole);                                      \
    } while (0)

/* One row or two: one vector at a time (R chains per step), the broadcast values of A in
 * registers. Three to five rows: two vectors at a time, 2R chains, the values of A read from
 * the stack as the FMAs' operands (up to 5 x 8 of them do not fit the registers). */
__attribute__((target("avx2,fma"))) static inline __attribute__((always_inline)) void
sweep_body(const int R, int64_t kc, const float *const *a, const float *b, int64_t rsb,
           float *c, int64_t ldc, int64_t cols, float beta)
{
    _Alignas(32) float park[GEMM_ROW_SWEEP_FLOATS];
    const int V = R <= 2 ? 1 : 2;
    const int64_t whole = cols / 8, vectors = (cols + 7) / 8, stride = 8 * vectors;
    /* the last vector's columns, when cols is not a multiple of 8 (its other lanes stay 0) */
    const __m256i mask = _mm256_loadu_si256((const __m256i *)(tail_mask + 8 * vectors - cols));
#define MASKED_LOAD(ptr) _mm256_maskload_ps((ptr), mask)
    for (int64_t i = 0; i < R * stride; i += 8)
        _mm256_store_ps(park + i, _mm256_setzero_ps());
    int64_t p = 0;
    for (; p + SWEEP_ROWS <= kc; p += SWEEP_ROWS)
        SWEEP(R, SWEEP_ROWS);
    for (; p < kc; p++) /* the last rows of the block, one at a time */
        SWEEP(R, 1);
#undef MASKED_LOAD
    /* the write to C, as row_body's */
    const __m256 bv = _mm256_set1_ps(beta);
    for (int r = 0; r < R; r++) {
        float *cr = c + r * ldc;
        const float *pr = park + r * stride;
        for (int64_t v = 0; v < whole; v++) {
            const __m256 acc = _mm256_load_ps(pr + 8 * v);
            _mm256_storeu_ps(cr + 8 * v,
                             beta == 0.0f ? acc
                                          : _mm256_fmadd_ps(_mm256_loadu_ps(cr + 8 * v), bv, acc));
        }
        if (whole < vectors) {
            __m256 acc = _mm256_load_ps(pr + 8 * whole);
            if (beta != 0.0f)
                acc = _mm256_fmadd_ps(_mm256_maskload_ps(cr + 8 * whole, mask), bv, acc);
            _mm256_maskstore_ps(cr + 8 * whole, mask, acc);
        }
    }
}

#define SWEEP_R(R)                                                                            \
    __attribute__((target("avx2,fma"))) static void sweep_##R(                                \
        int64_t kc, const float *const *a, const float *b, int64_t rsb, float *c, int64_t ldc, \
        int64_t cols, float beta)                                                             \
    {                                                                                         \
        sweep_body(R, kc, a, b, rsb, c, ldc, cols, beta);                                     \
    }
SWEEP_R(1)
SWEEP_R(2)
SWEEP_R(3)
SWEEP_R(4)
SWEEP_R(5)

void gemm_row_sweep_avx2(int64_t kc, int rows, const float *const *a, const float *b,
                         int64_t rsb, float *c, int64_t ldc, int64_t cols, float beta)
{
    typedef void (*sweep_fn)(int64_t, const float *const *, const float *, int64_t, float *,
                             int64_t, int64_t, float);
    static const sweep_fn by_rows[GEMM_ROW_SWEEP_MAX_M] = {sweep_1, sweep_2, sweep_3,
                                                           sweep_4, sweep_5};
    by_rows[rows - 1](kc, a, b, rsb, c, ldc, cols, beta);
}

static const gemm_kernel avx2_kernel = {
    .name = "avx2",
    .mr = MR,
    .nr = NR,
    .kc_max = 384,
    .tile = tile_6x16,
    .tile_rows = tile_rows_6x16,
    .dot = gemm_dot_avx2,
    .dot_side = 64,
    .prefetch_b = 1,
    .row = gemm_row_avx2,
    .row_sweep = gemm_row_sweep_avx2,
    /* two rows too: through the 6 x 16 tile with B in place (small.c, gemm_few_rows) they ran
     * 1.4 times as long (2 x 2048 x 512) */
    .row_max_m = 2,
    .sweep_max_m = 5,
    .pack_a = gemm_pack_a_avx2,
    .pack_b = gemm_pack_b_avx2,
};

const gemm_kernel *gemm_kernel_avx2(void)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return NULL;
    return &avx2_kernel;
}
