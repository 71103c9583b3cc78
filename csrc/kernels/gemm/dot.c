/*
 * dot.c - C = alpha * A B^T + beta * C by dot products, reading A and B where they are.
 *
 * With A not transposed and B transposed, row i of A and row j of B are both contiguous over
 * k, so C[i, j] is a dot product of two contiguous rows. The packed path would first transpose
 * B into micro-panels: for the forward pass of a linear layer (X W^T, 64 x 128 x 784) that
 * copy costs about a sixth of the product, and for the weight gradient of a convolution
 * (dY col^T, 16 x 72 x 12544) as much as the product itself. Here nothing is copied: the
 * kernel (gemm_dot_fn, 3 rows of A against 4 rows of B) keeps 12 vector accumulators and sums
 * their lanes at the end; at the edges of C its versions for fewer rows or columns compute
 * only what is there (10 columns are blocks of 4, 4 and 2, not 12 sums).
 *
 * Blocking: k is cut into chunks of at most DOT_CHUNK (4 rows of B over a chunk, 16 KB, stay
 * in L1 while the kernel runs down the rows of A); a tile of C covers at most DOT_TILE_ROWS
 * rows, whose chunk of A (64 x 1024 floats, 256 KB) stays in L2 while the kernel moves across
 * the tile's rows of B. With one chunk, the sums go straight to C. With several, each chunk's
 * sums go to a buffer of its own (tasks over tiles x chunks, so that a long k is spread over
 * the threads too), and the buffers are then added in chunk order: each element is
 * beta * C + alpha * (((s_0 + s_1) + s_2) + ...), with chunks fixed by k alone, so results do
 * not depend on the thread count.
 */
#include <string.h>

#include "gemm_internal.h"

#define DOT_CHUNK 1024
#define DOT_TILE_ROWS 63              /* rows of A per tile: 21 kernel rows of 3 */
#define DOT_MAX_PARTIAL (1 << 20)     /* floats of chunk buffers at most */
#define DOT_TILE_MIN_FLOPS (1 << 18)  /* as gemm.c's TILE_MIN_FLOPS */
#define DOT_TASKS_PER_THREAD 4
#define DOT_ROW_GRAIN_FLOATS (1 << 14)

#define MA GEMM_DOT_MA
#define NB GEMM_DOT_NB

typedef struct dot_plan {
    gemm_dot_fn dot;
    int64_t m, n, k;
    float alpha, beta;
    const float *a, *b;
    int64_t lda, ldb, ldc;
    float *c;
    int64_t kd, chunks;      /* k in `chunks` chunks of kd (a multiple of 8; the last shorter) */
    float *partial;          /* chunks x m x n sums when chunks > 1 */
    int64_t tm, tn;          /* tile size in kernel blocks (MA rows of A, NB rows of B) */
    int64_t tiles_m, tiles_n;
} dot_plan;

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int64_t chunking(int64_t k, int64_t *chunks)
{
    /* balanced chunks of a multiple of 8 (whole vectors but for the last) */
    const int64_t n = ceil_div(k, DOT_CHUNK);
    const int64_t kd = ceil_div(ceil_div(k, n), 8) * 8;
    *chunks = ceil_div(k, kd);
    return kd;
}

int gemm_dot_suits(const gemm_kernel *kr, int trans_a, int trans_b, int64_t m, int64_t n,
                   int64_t k)
{
    if (!kr->dot || trans_a || !trans_b)
        return 0;
    /* with both sides large the packed path is faster (every value loaded then feeds 16 or
     * 6 FMAs, against 4 or 3 here, and packing is a small part); chunk buffers stay small */
    int64_t chunks;
    (void)chunking(k, &chunks);
    return (m <= kr->dot_side || n <= kr->dot_side)
           && (chunks == 1 || (double)chunks * (double)m * (double)n <= DOT_MAX_PARTIAL);
}

/* C[0:cols] = alpha * s[0:cols], plus beta * C[0:cols] when beta != 0. A whole block's row
 * (cols == NB) is written by straight-line code the compiler turns into vector operations,
 * which round as the scalar ones do. */
static void write_sums(float *restrict c, const float *restrict s, int64_t cols, float alpha,
                       float beta)
{
    if (cols == NB) {
        if (beta == 0.0f)
            for (int j = 0; j < NB; j++)
                c[j] = alpha * s[j];
        else
            for (int j = 0; j < NB; j++)
                c[j] = alpha * s[j] + beta * c[j];
        return;
    }
    for (int64_t j = 0; j < cols; j++)
        c[j] = beta == 0.0f ? alpha * s[j] : alpha * s[j] + beta * c[j];
}

/* One tile of C (kernel blocks [bi0, bi1) x [bj0, bj1)) over one chunk of k. */
static void dot_task(const dot_plan *p, int64_t bi0, int64_t bi1, int64_t bj0, int64_t bj1,
                     int64_t chunk)
{
    const int64_t p0 = chunk * p->kd, kc = min64(p->kd, p->k - p0);
    float s[MA * NB];
    for (int64_t bj = bj0; bj < bj1; bj++) {
        /* the last blocks of rows of A and of B may be partial: the kernel's version for
         * fewer rows reads and sums only those there are */
        const int64_t j0 = bj * NB, nj = min64(NB, p->n - j0);
        const float *brow[NB];
        for (int64_t j = 0; j < nj; j++)
            brow[j] = p->b + (j0 + j) * p->ldb + p0;
        for (int64_t bi = bi0; bi < bi1; bi++) {
            const int64_t i0 = bi * MA, ni = min64(MA, p->m - i0);
            const float *arow[MA];
            for (int64_t i = 0; i < ni; i++)
                arow[i] = p->a + (i0 + i) * p->lda + p0;
            p->dot((int)ni, (int)nj, kc, arow, brow, s);
            for (int64_t i = 0; i < ni; i++) {
                if (p->chunks > 1)
                    memcpy(p->partial + (chunk * p->m + i0 + i) * p->n + j0, s + i * NB,
                           sizeof(float) * (size_t)nj);
                else
                    write_sums(p->c + (i0 + i) * p->ldc + j0, s + i * NB, nj, p->alpha,
                               p->beta);
            }
        }
    }
}

static int dot_range(void *ctx, int64_t start, int64_t stop)
{
    const dot_plan *p = ctx;
    const int64_t ntiles = p->tiles_m * p->tiles_n;
    for (int64_t t = start; t < stop; t++) {
        const int64_t chunk = t / ntiles, tile = t % ntiles;
        const int64_t ti = tile % p->tiles_m, tj = tile / p->tiles_m;
        const int64_t pm = ceil_div(p->m, MA), pn = ceil_div(p->n, NB);
        dot_task(p, ti * p->tm, min64((ti + 1) * p->tm, pm), tj * p->tn,
                 min64((tj + 1) * p->tn, pn), chunk);
    }
    return 0;
}

/* C = beta * C + alpha * (s_0 + s_1 + ...), chunk sums added in order. */
static int combine_range(void *ctx, int64_t start, int64_t stop)
{
    const dot_plan *p = ctx;
    for (int64_t i = start; i < stop; i++) {
        float *crow = p->c + i * p->ldc;
        for (int64_t j = 0; j < p->n; j++) {
            float sum = p->partial[i * p->n + j];
            for (int64_t ch = 1; ch < p->chunks; ch++)
                sum += p->partial[(ch * p->m + i) * p->n + j];
            crow[j] = p->beta == 0.0f ? p->alpha * sum : p->alpha * sum + p->beta * crow[j];
        }
    }
    return 0;
}

/* Tiles of at most DOT_TILE_ROWS rows; with several threads, split further (the dimension
 * with more blocks per tile first) towards DOT_TASKS_PER_THREAD tasks per thread. */
static void plan_tiles(dot_plan *p, int threads)
{
    const int64_t pm = ceil_div(p->m, MA), pn = ceil_div(p->n, NB);
    p->tiles_m = ceil_div(pm, DOT_TILE_ROWS / MA);
    gemm_plan_grid(pm, pn, &p->tiles_m, &p->tiles_n, &p->tm, &p->tn,
                   2.0 * (double)p->m * (double)p->n * (double)p->k, p->chunks, threads,
                   DOT_TASKS_PER_THREAD, DOT_TILE_MIN_FLOPS);
}

int gemm_dot(const gemm_kernel *kr, int64_t m, int64_t n, int64_t k, float alpha,
             const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
             int64_t ldc)
{
    dot_plan p = {
        .dot = kr->dot,
        .m = m, .n = n, .k = k,
        .alpha = alpha, .beta = beta,
        .a = a, .b = b, .c = c,
        .lda = lda, .ldb = ldb, .ldc = ldc,
    };
    p.kd = chunking(k, &p.chunks);
    int owned = 0;
    if (p.chunks > 1) {
        p.partial = gemm_ws_acquire((size_t)(p.chunks * m * n), &owned);
        if (!p.partial)
            return PYRT_ENOMEM;
    }
    plan_tiles(&p, pyrt_max_concurrency());
    gemm_for_each(p.tiles_m * p.tiles_n * p.chunks, dot_range, &p);
    if (p.chunks > 1) {
        (void)pyrt_parallel_for(m, n >= DOT_ROW_GRAIN_FLOATS ? 1 : DOT_ROW_GRAIN_FLOATS / n,
                                combine_range, &p);
        gemm_ws_release(p.partial, owned);
    }
    return PYRT_OK;
}
