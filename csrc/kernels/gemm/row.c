/*
 * row.c - C = alpha * op(A) B + beta * C for one or two rows of C, a vector times a matrix
 * (the kernel's row_max_m says how many rows), and for a few more across more than
 * GEMM_ROW_NB columns (its sweep_max_m; other products of a few rows go to small.c's
 * few-rows path).
 *
 * With m = 1 the tile path keeps two accumulators (one row of the 6 x 16 tile) and each step of
 * k waits for the last: the FMA latency leaves three quarters of the FMA rate unused, and
 * packing B, which is read once, doubles the memory traffic of a product that is nearly all B.
 * Here B is read in place, by one of two kernels:
 *   - gemm_row_fn holds GEMM_ROW_NB columns of a row in eight vector accumulators, enough
 *     independent chains to hide the latency, and runs down a block of k of B (two rows read
 *     B twice, the second time from cache). It serves spans of at most GEMM_ROW_NB columns.
 *   - gemm_row_sweep_fn reads a few rows of B at a time across up to GEMM_ROW_SWEEP_NB
 *     columns, each a contiguous stream, for all the rows of C at once, the partial sums
 *     parked in L1. Down columns of 64, every row of B was met in 4 lines a page from the
 *     next row's, and a B from memory ran at a quarter of torch's speed; the tiles of the
 *     few-rows path, which read B down columns of 16, ran 3 to 5 rows at up to twice the
 *     sweep's time (kernel_avx2.c gives the figures).
 *
 * Sums: k is cut into the blocks of the packed path (gemm_kc), and each element of C is
 * beta * C + acc_0, then + acc_1, ... over the blocks in order, acc_q summed in increasing k
 * from zero by FMAs, with alpha * A(i, p) rounded first as packing rounds it: the values the
 * packed path gives wherever it does not split k into groups. Spans of columns go to the pool
 * as tasks (gemm_column_span: a few per thread for the register kernel, one for a sweep, none
 * too small to share); they change nothing in any sum, so results do not depend on the thread
 * count.
 */
#include "gemm_internal.h"


typedef struct row_job {
    const gemm_kernel *kr;
    int trans_a;
    int64_t m, n, k, kc;
    float alpha, beta;
    const float *a, *b;
    int64_t lda, ldb, ldc;
    float *c;
    int64_t span; /* columns per task, a multiple of GEMM_ROW_NB */
    int sweep;    /* the kernel's row_sweep, in pieces of up to GEMM_ROW_SWEEP_NB columns */
} row_job;

static int64_t min64(int64_t x, int64_t y)
{
    return x < y ? x : y;
}

int gemm_row_suits(const gemm_kernel *kr, int trans_b, int64_t m)
{
    return kr->row && !trans_b && m <= kr->row_max_m;
}

/* Tasks per thread: the register kernel's spans, a few for balance; a sweep's, one, as it
 * reads each row of B in pieces as long as the span. With n = 1024 on two threads, spans of
 * 256 columns instead of 512 took 1.25-1.3 times as long (one row times 4096 x 1024, four rows
 * times 2048 x 1024, on the Zen 3); and on one thread one span of 1024 columns instead of four
 * of 256 ran one row times 4096 x 1024 in 0.62 of the time (from 1.63 of OpenBLAS's sgemv to
 * 1.01). */
#define ROW_TASKS_PER_THREAD 4
#define SWEEP_TASKS_PER_THREAD 1

int gemm_sweep_suits(const gemm_kernel *kr, int trans_b, int64_t m, int64_t n)
{
    return kr->row_sweep && !trans_b && m <= kr->sweep_max_m && n > GEMM_ROW_NB;
}

/* Rows [i0, i1) of C, columns [j0, j0 + cols) (cols <= GEMM_ROW_NB, or gemm_sweep_cols for
 * a sweep), over all blocks of k: the register kernel a row at a time, a sweep all the rows
 * at once. */
static void row_block(const row_job *r, int64_t i0, int64_t i1, int64_t j0, int64_t cols)
{
    float scaled[GEMM_ROW_SWEEP_MAX_M][GEMM_KC_LIMIT];
    for (int64_t p0 = 0; p0 < r->k; p0 += r->kc) {
        const int64_t kc = min64(r->kc, r->k - p0);
        const float *a[GEMM_ROW_SWEEP_MAX_M];
        for (int64_t i = i0; i < i1; i++) {
            if (r->alpha == 1.0f && !r->trans_a) {
                a[i - i0] = r->a + i * r->lda + p0;
            } else {
                /* A(i, p) times alpha, as packing would hold it */
                float *s = scaled[i - i0];
                for (int64_t p = 0; p < kc; p++)
                    s[p] = r->alpha * (r->trans_a ? r->a[(p0 + p) * r->lda + i]
                                                  : r->a[i * r->lda + p0 + p]);
                a[i - i0] = s;
            }
        }
        const float *b = r->b + p0 * r->ldb + j0;
        float *c = r->c + i0 * r->ldc + j0;
        const float beta = p0 == 0 ? r->beta : 1.0f;
        if (r->sweep)
            r->kr->row_sweep(kc, (int)(i1 - i0), a, b, r->ldb, c, r->ldc, cols, beta);
        else
            for (int64_t i = i0; i < i1; i++)
                r->kr->row(kc, a[i - i0], b, r->ldb, c + (i - i0) * r->ldc, (int)cols, beta);
    }
}

static int row_range(void *ctx, int64_t start, int64_t stop)
{
    const row_job *r = ctx;
    const int64_t piece = r->sweep ? gemm_sweep_cols((int)r->m) : GEMM_ROW_NB;
    for (int64_t t = start; t < stop; t++) {
        const int64_t j1 = min64((t + 1) * r->span, r->n);
        for (int64_t j = t * r->span; j < j1; j += piece) {
            const int64_t cols = min64(piece, j1 - j);
            if (r->sweep) {
                row_block(r, 0, r->m, j, cols);
            } else {
                for (int64_t i = 0; i < r->m; i++)
                    row_block(r, i, i + 1, j, cols);
            }
        }
    }
    return 0;
}

void gemm_row(const gemm_kernel *kr, int trans_a, int64_t m, int64_t n, int64_t k, float alpha,
              const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
              int64_t ldc)
{
    /* more rows than the register kernel takes come through gemm_sweep_suits; one or two
     * sweep where the spans are wider than the register kernel's columns */
    const int sweep = m > kr->row_max_m
                      || (kr->row_sweep
                          && gemm_column_span(m, n, k, GEMM_ROW_NB, ROW_TASKS_PER_THREAD)
                                 > GEMM_ROW_NB);
    const int64_t span = gemm_column_span(m, n, k, GEMM_ROW_NB,
                                          sweep ? SWEEP_TASKS_PER_THREAD : ROW_TASKS_PER_THREAD);
    row_job r = {
        .kr = kr, .trans_a = trans_a,
        .m = m, .n = n, .k = k, .kc = gemm_kc(kr, k),
        .alpha = alpha, .beta = beta,
        .a = a, .b = b,
        .lda = lda, .ldb = ldb, .ldc = ldc,
        .c = c,
        .span = span,
        .sweep = sweep,
    };
    gemm_for_each((n + span - 1) / span, row_range, &r);
}
