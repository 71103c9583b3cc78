/*
 * gemm_internal.h - what the pieces of the single-precision GEMM share: the description of a
 * micro-kernel (its register tile and the functions built for its instruction set), the
 * packing routines, the small-matrix and dot-product paths, the workspace and the task
 * runner. gemm.c is the driver that uses them; all of them may be called from any thread.
 *
 *   gemm.c            pyrt_sgemm: path choice, blocking, packing and compute phases
 *   batched.c         pyrt_sgemm_batched: a batch of products as tasks of pyrt_sgemm calls
 *   dot.c             A B^T by dot products of rows read in place
 *   small.c           small products: register tiles on A and B in place, one thread
 *   row.c             one or two rows of C: a vector times a matrix, B in place
 *   tile.c            one register tile at an edge of C; which strides L1 holds
 *   pack.c            packing A and B into micro-panels (AVX2, and AVX-512 for B^T)
 *   kernel_avx2.c     6 x 16 tile (assembly k loop), the 3 x 4 dot and the row kernels
 *   kernel_avx512.c   8 x 48 tile (a streaming version for large B, an 8 x 32 edge in
 *                     assembly)
 *   kernel_generic.c  4 x 8 tile in plain C
 *   dispatch.c        the kernel for this CPU, PYRT_SGEMM_KERNEL
 *   workspace.c       per-thread packing buffers
 *   tasks.c           a phase's tasks on the pool
 *   tests/            a check of the AVX-512 tile that runs on any CPU
 */
#ifndef PYRT_GEMM_INTERNAL_H
#define PYRT_GEMM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "pyrt.h"

/* Packed buffers start on a cache line, so that the rows of a packed B micro-panel (NR floats,
 * a multiple of 8) are aligned for vector loads. */
#define GEMM_ALIGN 64

/* The longest block of k of any kernel (AVX2: 384): buffers on the stack are sized by it. */
#define GEMM_KC_LIMIT 384

/* The largest register tile, mr * nr, of any kernel (AVX-512: 8 x 48). */
#define GEMM_TILE_MAX (8 * 48)
/* The widest register tile, nr, of any kernel, and the tallest, mr. */
#define GEMM_NR_MAX 48
#define GEMM_MR_MAX 8

/* The register tile: C[0:mr, 0:nr] (row stride ldc) =
 *     acc                  if beta == 0 (C is not read, so NaN in it does not matter),
 *     beta * C + acc       otherwise (one rounding: a fused multiply-add where the kernel has
 *                          one; beta == 1 is then exactly C + acc),
 * where acc[i][j] = sum over p = 0, 1, ..., kc-1 of A(i, p) * B(p, j), summed in that order,
 * starting from zero, with A(i, p) = a[i*rsa + p*csa] and B(p, j) = b[p*rsb + j]. kc >= 1.
 * Either rsa == 1 (a packed micro-panel: csa == mr; or the rows of a transposed A read in
 * place: csa == lda) or csa == 1 (the rows of A read in place: rsa == lda). B's rows are
 * contiguous: a packed micro-panel (rsb == nr, aligned to GEMM_ALIGN) or a row-major B read
 * in place (rsb == ldb). The sums do not depend on which layout the values came from. */
typedef void (*gemm_tile_fn)(int64_t kc, const float *a, int64_t rsa, int64_t csa,
                             const float *b, int64_t rsb, float *c, int64_t ldc, float beta);

/* The same for the first `rows` rows only (1 <= rows < mr), at the bottom edge of C: A's other
 * rows are not read and C's other rows not touched, and each element is computed with the
 * same instructions as in a full tile. */
typedef void (*gemm_tile_rows_fn)(int rows, int64_t kc, const float *a, int64_t rsa,
                                  int64_t csa, const float *b, int64_t rsb, float *c, int64_t ldc,
                                  float beta);

/* The same for the first `rows` rows (1 <= rows <= mr) and `cols` columns (1 <= cols <= nr) of
 * the tile, at an edge of C: A's other rows are not read, and C's other rows and columns are
 * neither read nor written. */
typedef void (*gemm_tile_part_fn)(int rows, int cols, int64_t kc, const float *a, int64_t rsa,
                                  int64_t csa, const float *b, int64_t rsb, float *c,
                                  int64_t ldc, float beta);

/* Pack rows [i0, i0 + rows) and columns [p0, p0 + kc) of op(A), times alpha, into
 * ceil(rows / mr) consecutive micro-panels of mr * kc floats, each kc groups of mr values
 * (dst[p*mr + i]); the rows of the last panel past `rows` are zero. */
typedef void (*gemm_pack_a_fn)(const float *a, int64_t lda, int trans, int64_t i0, int64_t rows,
                               int64_t p0, int64_t kc, float alpha, int mr, float *dst);

/* Pack rows [p0, p0 + kc) and columns [j0, j0 + cols) of op(B) into ceil(cols / nr)
 * consecutive micro-panels of kc * nr floats, each kc groups of nr values (dst[p*nr + j]);
 * the columns of the last panel past `cols` are zero. */
typedef void (*gemm_pack_b_fn)(const float *b, int64_t ldb, int trans, int64_t p0, int64_t kc,
                               int64_t j0, int64_t cols, int nr, float *dst);

/* Dot products for C = A B^T with both operands read in place along k (dot.c):
 * out[i*GEMM_DOT_NB + j] = sum over p < kc of a[i][p] * b[j][p] for the first `rows` rows of
 * A (1 <= rows <= GEMM_DOT_MA) and the first `cols` rows of B (1 <= cols <= GEMM_DOT_NB), each
 * row contiguous over p; the other pointers are not read and the other outputs are undefined.
 * The order of the sum is fixed by kc alone (and is not the order of gemm_tile_fn's); an
 * element gets the same value whatever rows and cols are. */
#define GEMM_DOT_MA 3
#define GEMM_DOT_NB 4
typedef void (*gemm_dot_fn)(int rows, int cols, int64_t kc, const float *const a[GEMM_DOT_MA],
                            const float *const b[GEMM_DOT_NB], float *out);

/* Defines the gemm_dot_fn NAME (STORAGE: `static` or nothing) from BODY(R, C, kc, a, b, out),
 * an always-inline function with the block's rows R and columns C as its first arguments:
 * one instance per shape, compiled with ATTRS (the target attribute), R and C constant in
 * each so that its loops unroll and its accumulators stay in registers; NAME calls the
 * instance for `rows` x `cols`. */
#define GEMM_DOT_VERSIONS(STORAGE, NAME, ATTRS, BODY)                                         \
    GEMM_DOT_ROWS(NAME, ATTRS, BODY, 1)                                                       \
    GEMM_DOT_ROWS(NAME, ATTRS, BODY, 2)                                                       \
    GEMM_DOT_ROWS(NAME, ATTRS, BODY, 3)                                                       \
    STORAGE void NAME(int rows, int cols, int64_t kc, const float *const a[GEMM_DOT_MA],      \
                      const float *const b[GEMM_DOT_NB], float *out)                          \
    {                                                                                         \
        typedef void (*shape_fn)(int64_t, const float *const *, const float *const *,         \
                                 float *);                                                    \
        static const shape_fn by_shape[GEMM_DOT_MA][GEMM_DOT_NB] = {                          \
            {NAME##_1x1, NAME##_1x2, NAME##_1x3, NAME##_1x4},                                 \
            {NAME##_2x1, NAME##_2x2, NAME##_2x3, NAME##_2x4},                                 \
            {NAME##_3x1, NAME##_3x2, NAME##_3x3, NAME##_3x4}};                                \
        by_shape[rows - 1][cols - 1](kc, a, b, out);                                          \
    }
#define GEMM_DOT_ROWS(NAME, ATTRS, BODY, R)                                                   \
    GEMM_DOT_SHAPE(NAME, ATTRS, BODY, R, 1)                                                   \
    GEMM_DOT_SHAPE(NAME, ATTRS, BODY, R, 2)                                                   \
    GEMM_DOT_SHAPE(NAME, ATTRS, BODY, R, 3)                                                   \
    GEMM_DOT_SHAPE(NAME, ATTRS, BODY, R, 4)
#define GEMM_DOT_SHAPE(NAME, ATTRS, BODY, R, C)                                               \
    ATTRS static void NAME##_##R##x##C(int64_t kc, const float *const *a,                     \
                                       const float *const *b, float *out)                     \
    {                                                                                         \
        BODY(R, C, kc, a, b, out);                                                            \
    }

/* One row of C times B not transposed (row.c): c[j] for j < cols (1 <= cols <= GEMM_ROW_NB)
 * = acc_j if beta == 0 (c not read), else beta * c[j] + acc_j in one rounding, where
 * acc_j = sum over p < kc of a[p] * b[p*rsb + j], each step one fused multiply-add, in that
 * order, from zero: what a tile of gemm_tile_fn computes for the element. */
#define GEMM_ROW_NB 64
typedef void (*gemm_row_fn)(int64_t kc, const float *a, const float *b, int64_t rsb, float *c,
                            int cols, float beta);
/* The same for `rows` rows of C (1 <= rows <= GEMM_ROW_SWEEP_MAX_M), row r from a[r] into
 * c + r * ldc, and 1 <= cols <= gemm_sweep_cols(rows), the same sums: B read a few rows at a
 * time across all the columns, the sums parked in L1 between (row.c): at most
 * GEMM_ROW_SWEEP_FLOATS of them, and GEMM_ROW_SWEEP_NB columns. */
#define GEMM_ROW_SWEEP_NB 1024
#define GEMM_ROW_SWEEP_MAX_M 5
#define GEMM_ROW_SWEEP_FLOATS 2048
static inline int64_t gemm_sweep_cols(int rows)
{
    const int64_t cols = GEMM_ROW_SWEEP_FLOATS / rows / 16 * 16;
    return cols < GEMM_ROW_SWEEP_NB ? cols : GEMM_ROW_SWEEP_NB;
}
typedef void (*gemm_row_sweep_fn)(int64_t kc, int rows, const float *const *a, const float *b,
                                  int64_t rsb, float *c, int64_t ldc, int64_t cols, float beta);

typedef struct gemm_kernel {
    const char *name; /* what pyrt_sgemm_kernel() reports: "avx512", "avx2" or "generic" */
    int mr, nr;       /* register tile */
    int kc_max;       /* k runs in blocks of at most this many steps (gemm_kc; gemm.c says
                       * why), at most GEMM_KC_LIMIT */
    gemm_tile_fn tile;
    gemm_tile_fn tile_stream;    /* the same sums, fetching B's rows ahead, for products whose
                                  * B streams from beyond L2 (gemm.c); NULL: tile */
    gemm_tile_part_fn tile_part; /* any edge tile; NULL: tile_rows and buffers serve */
    gemm_tile_rows_fn tile_rows; /* NULL: edge tiles go through a buffer */
    int part_cols;    /* tile_part computes whole vectors of this many columns */
    gemm_dot_fn dot;  /* NULL: A B^T takes the packed path */
    int dot_side;     /* A B^T with m or n at most this takes the dot path (dot.c) */
    int prefetch_b;   /* the packed path prefetches each next packed B micro-panel (gemm.c) */
    gemm_row_fn row;  /* NULL: products of one or two rows take the other paths */
    gemm_row_sweep_fn row_sweep; /* NULL: one row takes `row` too */
    int row_max_m;    /* products of up to this many rows (1 or 2) take the row kernel */
    int sweep_max_m;  /* ... and of up to this many (at least row_max_m, at most
                       * GEMM_ROW_SWEEP_MAX_M) across more than GEMM_ROW_NB columns, the
                       * sweep */
    gemm_pack_a_fn pack_a;
    gemm_pack_b_fn pack_b;
} gemm_kernel;

/* A B^T by dot products (dot.c): whether it suits the product, and the product itself
 * (pyrt_sgemm's arguments, already checked; alpha != 0, k >= 1). Returns PYRT_OK or
 * PYRT_ENOMEM. */
int gemm_dot_suits(const gemm_kernel *kr, int trans_a, int trans_b, int64_t m, int64_t n,
                   int64_t k);
int gemm_dot(const gemm_kernel *kr, int64_t m, int64_t n, int64_t k, float alpha,
             const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
             int64_t ldc);

/* Products of one or two rows with B not transposed, a vector (or two) times a matrix
 * (row.c): whether the path suits them; whether a few more rows (up to the kernel's
 * sweep_max_m) suit its sweep; and the product (pyrt_sgemm's arguments, already checked;
 * alpha != 0, k >= 1). k is cut into the blocks of the packed path (gemm_kc). */
int gemm_row_suits(const gemm_kernel *kr, int trans_b, int64_t m);
int gemm_sweep_suits(const gemm_kernel *kr, int trans_b, int64_t m, int64_t n);
void gemm_row(const gemm_kernel *kr, int trans_a, int64_t m, int64_t n, int64_t k, float alpha,
              const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
              int64_t ldc);

/* The blocks of k of the packed path: as few as the kernel's kc_max allows, all of length
 * gemm_kc(kr, k) but the last. */
static inline int64_t gemm_kc(const gemm_kernel *kr, int64_t k)
{
    const int64_t blocks = (k + kr->kc_max - 1) / kr->kc_max;
    return (k + blocks - 1) / blocks;
}

/* Products too small for packing or threads to pay (small.c): whether the product suits the
 * path (the shape alone decides), and the product itself (pyrt_sgemm's arguments, already
 * checked; alpha != 0, k >= 1). k is at most GEMM_SMALL_MAX_K, no more than one block of k of
 * the packed path with any kernel. */
#define GEMM_SMALL_MAX_K 256
int gemm_small_suits(int64_t m, int64_t n, int64_t k);
void gemm_small(const gemm_kernel *kr, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                float *c, int64_t ldc);

/* Products of at most mr rows with B not transposed (small.c): the small path's tiles at any
 * size, k in the packed path's blocks, spans of columns spread over the pool. Whether the
 * path suits the product, and the product (as gemm_small). */
int gemm_few_rows_suits(const gemm_kernel *kr, int trans_b, int64_t m);
void gemm_few_rows(const gemm_kernel *kr, int trans_a, int64_t m, int64_t n, int64_t k,
                   float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                   float beta, float *c, int64_t ldc);

/* One register tile of C at c (row stride ldc) of which the first `rows` x `cols` lie inside C:
 * the kernel's tile (gemm_tile_fn's arguments) straight into C where it fits, its version for
 * part of a tile or for fewer rows at the edges, and gemm_edge_tile (tile.c) where columns
 * stick out or rows do and the kernel has no version for that. A's rows past `rows` are read
 * only by a kernel without a version for fewer rows; B's kc x nr values are read unless the
 * kernel has a version for part of a tile. */
void gemm_edge_tile(const gemm_kernel *kr, int64_t kc, const float *a, int64_t rsa, int64_t csa,
                    const float *b, int64_t rsb, float *c, int64_t ldc, int64_t rows,
                    int64_t cols, float beta);

static inline void gemm_micro_tile(const gemm_kernel *kr, int64_t kc, const float *a,
                                   int64_t rsa, int64_t csa, const float *b, int64_t rsb,
                                   float *c, int64_t ldc, int64_t rows, int64_t cols, float beta)
{
    if (cols == kr->nr && rows == kr->mr)
        kr->tile(kc, a, rsa, csa, b, rsb, c, ldc, beta);
    else if (kr->tile_part)
        kr->tile_part((int)rows, (int)cols, kc, a, rsa, csa, b, rsb, c, ldc, beta);
    else if (cols == kr->nr && kr->tile_rows)
        kr->tile_rows((int)rows, kc, a, rsa, csa, b, rsb, c, ldc, beta);
    else
        gemm_edge_tile(kr, kc, a, rsa, csa, b, rsb, c, ldc, rows, cols, beta);
}

/* Whether `rows` rows `ld` floats apart (a micro-panel read in place, one row per step of k)
 * stay in L1 together (tile.c). */
int gemm_l1_holds(int64_t ld, int64_t rows);

/* A workspace of n floats aligned to GEMM_ALIGN for one call (workspace.c): the calling
 * thread's cached buffer, or a fresh one if that is in use; *owned tells gemm_ws_release
 * which. NULL when out of memory. */
float *gemm_ws_acquire(size_t n, int *owned);
void gemm_ws_release(float *buf, int owned);

/* Call fn on ranges covering [0, n) (single indices when several threads run) on the pool,
 * splitting eagerly (tasks.c), for a few costly tasks: a phase's, and the row blocks of a
 * recurrent layer (recurrence.c). fn's return value is ignored. */
void gemm_for_each(int64_t n, pyrt_range_fn fn, void *ctx);

/* Columns per task for a product of m rows that splits C into spans of columns (row.c,
 * small.c): n over about tasks_per_thread tasks per thread (one task on one thread), none
 * under SPAN_MIN_FLOPS of work, rounded up to whole `unit`s of the kernel's columns
 * (tasks.c). */
int64_t gemm_column_span(int64_t m, int64_t n, int64_t k, int64_t unit, int tasks_per_thread);

/* A grid of C tiles for one parallel phase: pm x pn blocks of micro-panels, starting from
 * *tiles_m x 1 tiles (what the cache allows), split further while threads > 1, the dimension
 * with more blocks per tile first, towards tasks_per_thread tasks per thread over `groups`
 * independent groups, but no tile under min_flops of the phase's `flops`. Out: the blocks per
 * tile (*tm, *tn) and the tile counts (*tiles_m, *tiles_n). */
void gemm_plan_grid(int64_t pm, int64_t pn, int64_t *tiles_m, int64_t *tiles_n, int64_t *tm,
                    int64_t *tn, double flops, int64_t groups, int threads, int tasks_per_thread,
                    double min_flops);

/* The kernel GEMM uses in this process (chosen at first use; dispatch.c). Any thread. */
const gemm_kernel *gemm_kernel_get(void);

/* Each returns its kernel, or NULL when this CPU lacks the instructions it needs. */
const gemm_kernel *gemm_kernel_generic(void);
const gemm_kernel *gemm_kernel_avx2(void);
const gemm_kernel *gemm_kernel_avx512(void);

/* Packing (pack.c): portable loops for any tile, and versions that use AVX2 for the tiles of
 * the AVX2 (6 x 16) and AVX-512 (8 x 48) kernels and fall back to the portable loops for
 * other tiles. */
void gemm_pack_a_generic(const float *a, int64_t lda, int trans, int64_t i0, int64_t rows,
                         int64_t p0, int64_t kc, float alpha, int mr, float *dst);
void gemm_pack_b_generic(const float *b, int64_t ldb, int trans, int64_t p0, int64_t kc,
                         int64_t j0, int64_t cols, int nr, float *dst);
void gemm_pack_a_avx2(const float *a, int64_t lda, int trans, int64_t i0, int64_t rows,
                      int64_t p0, int64_t kc, float alpha, int mr, float *dst);
void gemm_pack_b_avx2(const float *b, int64_t ldb, int trans, int64_t p0, int64_t kc,
                      int64_t j0, int64_t cols, int nr, float *dst);
/* The AVX-512 kernel's: B transposed by 16 x 16 register transposes, else as the AVX2 one.
 * Call only where the CPU has AVX-512F. */
void gemm_pack_b_avx512(const float *b, int64_t ldb, int trans, int64_t p0, int64_t kc,
                        int64_t j0, int64_t cols, int nr, float *dst);

/* The AVX2 row and dot-product kernels (kernel_avx2.c), which the AVX-512 kernel uses too. */
void gemm_row_sweep_avx2(int64_t kc, int rows, const float *const *a, const float *b,
                         int64_t rsb, float *c, int64_t ldc, int64_t cols, float beta);
void gemm_row_avx2(int64_t kc, const float *a, const float *b, int64_t rsb, float *c, int cols,
                   float beta);
void gemm_dot_avx2(int rows, int cols, int64_t kc, const float *const a[GEMM_DOT_MA],
                   const float *const b[GEMM_DOT_NB], float *out);

#endif
