/*
 * small.c - the micro-kernel's register tiles computed straight from A and B where they lie,
 * for products too small for packing or threads to pay, and for products of a few rows.
 *
 * Up to SMALL_MAX_MNK multiply-adds (the gradients of a 128-10 layer at batch 64, 64 x 128 x 10
 * and 10 x 128 x 64, are 82 k) the arithmetic takes two or three microseconds: too little to
 * share with a second thread (the packed path would not split it either), and little enough
 * that the packed path's workspace, plan, packing and phases weigh as much (on 10 x 128 x 64 it
 * ran 1.8 times the instructions this path does). Here C is computed column panel after
 * column panel (nr columns of op(B)), each running down the row panels (mr rows of op(A)) with
 * the kernel of the packed path:
 *   - op(B)'s panel is read in place when B is not transposed, the panel is whole and its k
 *     rows stay in L1 at their stride (gemm_l1_holds), or at most two row panels use it
 *     (a second pass reloading a few lines from L2 costs less than a copy). Otherwise (B
 *     transposed, the right edge of C, crowded rows) it is packed into a buffer on the stack,
 *     once per column panel, where it stays in L1 for every row panel.
 *   - op(A)'s panel is read in place (rows of A, or rows of a transposed A) when alpha == 1
 *     and, at the bottom edge, the kernel has a version for fewer rows (or for part of a
 *     tile); otherwise it is packed (alpha folded in, edge rows zero) for each tile. The A
 *     panels of all the row panels, m x k floats, stay in L1 or L2 from one column panel to
 *     the next.
 *   - tiles whose columns stick out go through a buffer (gemm_micro_tile).
 * k is at most GEMM_SMALL_MAX_K, one block of k of the packed path, so each element of C is
 * beta * C + (sum over p = 0, 1, ..., k-1 of alpha A(i, p) B(p, j)), summed in that order by
 * the same kernel: bitwise what the packed path computes for the same shape. Nothing depends
 * on the thread count.
 *
 * A few rows (m <= mr, one row panel) times B not transposed take the same loop whatever the
 * size (gemm_few_rows): packing B pays for itself only when several row panels reuse the
 * packed copy, and with one it is all cost, a product that is nearly all B reading B three
 * times (4 x 2048 x 512: 340 us packed, 171 us with B in place, on one thread of a Sapphire
 * Rapids Xeon). There k runs in the packed path's blocks (gemm_kc), each block's sums added
 * to C through the tile's beta = 1 after the first, and spans of columns go to the pool as
 * tasks; the sums do not depend on how the columns are spread, so neither do the results.
 */
#include "gemm_internal.h"

#define SMALL_MAX_MNK (1 << 17)
#define FEW_ROWS_TASKS_PER_THREAD 4 /* spans of columns, for balance */

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

int gemm_small_suits(int64_t m, int64_t n, int64_t k)
{
    return k <= GEMM_SMALL_MAX_K && (double)m * (double)n * (double)k <= SMALL_MAX_MNK;
}

int gemm_few_rows_suits(const gemm_kernel *kr, int trans_b, int64_t m)
{
    return !trans_b && m <= kr->mr;
}

typedef struct small_job {
    const gemm_kernel *kr;
    int trans_a, trans_b;
    int64_t m, n, k, kc; /* k in blocks of kc, the last shorter */
    float alpha, beta;
    const float *a, *b;
    int64_t lda, ldb, ldc;
    float *c;
    int64_t span; /* columns per task (gemm_few_rows), a multiple of nr */
} small_job;

/* Columns [j0, j1) of C, all rows, over every block of k. */
static void small_columns(const small_job *s, int64_t j0, int64_t j1)
{
    const gemm_kernel *kr = s->kr;
    const int mr = kr->mr, nr = kr->nr;
    const int64_t m = s->m, k = s->k, lda = s->lda, ldb = s->ldb, ldc = s->ldc;
    /* A(i, p) at a[i*rsa + p*csa] */
    const int64_t rsa = s->trans_a ? 1 : lda, csa = s->trans_a ? lda : 1;
    /* rows of op(A) below a_end and columns of op(B) below b_end are read in place */
    const int a_direct = s->alpha == 1.0f && (!s->trans_a || gemm_l1_holds(lda, s->kc));
    const int64_t a_end = !a_direct ? 0 : kr->tile_rows || kr->tile_part ? m : m / mr * mr;
    const int b_direct = !s->trans_b && (gemm_l1_holds(ldb, s->kc) || m <= 2 * mr);
    /* the partial last panel too, where the kernel's version for part of a tile reads just
     * its whole vectors of part_cols columns and they end at the matrix's last column: its
     * kc x cols copy would cost more than the tile's arithmetic (8 x 128 x 512 on the AVX-512
     * kernel, a recurrent layer's step: 11.7 us with the copy, 90 GFLOP/s; 9.6 us, 109 GFLOP/s,
     * without) */
    const int edge_direct = kr->tile_part && s->n % kr->part_cols == 0;
    const int64_t b_end = !b_direct ? 0 : edge_direct ? s->n : s->n / nr * nr;
    /* one block of k (gemm_few_rows: the packed path's blocks) of a packed panel of each */
    float bpanel[GEMM_KC_LIMIT * GEMM_NR_MAX] __attribute__((aligned(GEMM_ALIGN)));
    float apanel[GEMM_KC_LIMIT * GEMM_MR_MAX] __attribute__((aligned(GEMM_ALIGN)));
    /* block of k outermost: a block's rows of B (at most kc pages of B, for any span of
     * columns) stay in the TLB and the caches while its column panels go by; a column panel
     * taken down the whole of a long k first missed the TLB on every row of B (a new page
     * each, when a row of B is a page or longer) */
    for (int64_t p0 = 0; p0 < k; p0 += s->kc) {
        const int64_t kc = min64(s->kc, k - p0);
        const float beta = p0 == 0 ? s->beta : 1.0f;
        for (int64_t j = j0; j < j1; j += nr) {
            const int64_t cols = min64(nr, j1 - j);
            const float *bj = s->b + p0 * ldb + j;
            int64_t rsb = ldb;
            if (j >= b_end) {
                kr->pack_b(s->b, ldb, s->trans_b, p0, kc, j, cols, nr, bpanel);
                bj = bpanel;
                rsb = nr;
            }
            for (int64_t i = 0; i < m; i += mr) {
                const int64_t rows = min64(mr, m - i);
                float *cij = s->c + i * ldc + j;
                if (i < a_end) {
                    gemm_micro_tile(kr, kc, s->a + i * rsa + p0 * csa, rsa, csa, bj, rsb, cij,
                                    ldc, rows, cols, beta);
                } else {
                    kr->pack_a(s->a, lda, s->trans_a, i, rows, p0, kc, s->alpha, mr, apanel);
                    gemm_micro_tile(kr, kc, apanel, 1, mr, bj, rsb, cij, ldc, rows, cols, beta);
                }
            }
        }
    }
}

void gemm_small(const gemm_kernel *kr, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                float *c, int64_t ldc)
{
    const small_job s = {
        .kr = kr, .trans_a = trans_a, .trans_b = trans_b,
        .m = m, .n = n, .k = k, .kc = k,
        .alpha = alpha, .beta = beta,
        .a = a, .b = b, .lda = lda, .ldb = ldb, .ldc = ldc, .c = c,
    };
    small_columns(&s, 0, n);
}

static int few_rows_range(void *ctx, int64_t start, int64_t stop)
{
    const small_job *s = ctx;
    small_columns(s, start * s->span, min64(stop * s->span, s->n));
    return 0;
}

void gemm_few_rows(const gemm_kernel *kr, int trans_a, int64_t m, int64_t n, int64_t k,
                   float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                   float beta, float *c, int64_t ldc)
{
    const int64_t span = gemm_column_span(m, n, k, kr->nr, FEW_ROWS_TASKS_PER_THREAD);
    const small_job s = {
        .kr = kr, .trans_a = trans_a, .trans_b = 0,
        .m = m, .n = n, .k = k, .kc = gemm_kc(kr, k),
        .alpha = alpha, .beta = beta,
        .a = a, .b = b, .lda = lda, .ldb = ldb, .ldc = ldc, .c = c,
        .span = span,
    };
    gemm_for_each((n + span - 1) / span, few_rows_range, (void *)&s);
}
