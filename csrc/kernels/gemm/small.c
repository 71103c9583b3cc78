/*
 * small.c - products too small for packing or threads to pay: the micro-kernel's register
 * tiles computed straight from A and B where they lie, on the calling thread.
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
 *     tile); otherwise it is packed (alpha folded in, edge rows zero) for each tile. The A panels of all the row panels,
 *     m x k floats, stay in L1 or L2 from one column panel to the next.
 *   - tiles whose columns stick out go through a buffer (gemm_micro_tile).
 * k is at most GEMM_SMALL_MAX_K, one block of k of the packed path, so each element of C is
 * beta * C + (sum over p = 0, 1, ..., k-1 of alpha A(i, p) B(p, j)), summed in that order by
 * the same kernel: bitwise what the packed path computes for the same shape. Nothing depends
 * on the thread count.
 */
#include "gemm_internal.h"

#define SMALL_MAX_MNK (1 << 17)

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

int gemm_small_suits(int64_t m, int64_t n, int64_t k)
{
    return k <= GEMM_SMALL_MAX_K && (double)m * (double)n * (double)k <= SMALL_MAX_MNK;
}

void gemm_small(const gemm_kernel *kr, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                float *c, int64_t ldc)
{
    const int mr = kr->mr, nr = kr->nr;
    /* A(i, p) at a[i*rsa + p*csa] */
    const int64_t rsa = trans_a ? 1 : lda, csa = trans_a ? lda : 1;
    /* rows of op(A) below a_end and columns of op(B) below b_end are read in place */
    const int a_direct = alpha == 1.0f && (!trans_a || gemm_l1_holds(lda, k));
    const int64_t a_end = !a_direct ? 0 : kr->tile_rows || kr->tile_part ? m : m / mr * mr;
    const int b_direct = !trans_b && (gemm_l1_holds(ldb, k) || m <= 2 * mr);
    const int64_t b_end = b_direct ? n / nr * nr : 0;
    float bpanel[GEMM_SMALL_MAX_K * GEMM_NR_MAX] __attribute__((aligned(GEMM_ALIGN)));
    float apanel[GEMM_SMALL_MAX_K * GEMM_MR_MAX] __attribute__((aligned(GEMM_ALIGN)));
    for (int64_t j = 0; j < n; j += nr) {
        const int64_t cols = min64(nr, n - j);
        const float *bj = b + j;
        int64_t rsb = ldb;
        if (j >= b_end) {
            kr->pack_b(b, ldb, trans_b, 0, k, j, cols, nr, bpanel);
            bj = bpanel;
            rsb = nr;
        }
        for (int64_t i = 0; i < m; i += mr) {
            const int64_t rows = min64(mr, m - i);
            float *cij = c + i * ldc + j;
            if (i < a_end) {
                gemm_micro_tile(kr, k, a + i * rsa, rsa, csa, bj, rsb, cij, ldc, rows, cols,
                                beta);
            } else {
                kr->pack_a(a, lda, trans_a, i, rows, 0, k, alpha, mr, apanel);
                gemm_micro_tile(kr, k, apanel, 1, mr, bj, rsb, cij, ldc, rows, cols, beta);
            }
        }
    }
}
