/*
 * batched.c - pyrt_sgemm_batched: a batch of independent products of one shape.
 *
 * The batch is cut into spans of whole products, each span at least BATCH_MIN_FLOPS of work
 * (a steal costs about a microsecond; a span must be worth it), and the spans run as the
 * tasks of gemm_for_each: halved eagerly, so that every worker has a span at once. Each
 * product is one pyrt_sgemm call, so its elements are bitwise those of pyrt_sgemm whatever
 * the thread count; a product large enough to split splits further inside its span (the
 * scheduler nests), which is what a batch of two large products on many threads needs.
 */
#include "gemm_internal.h"

#define BATCH_MIN_FLOPS (1 << 18)

typedef struct batch_job {
    int trans_a, trans_b;
    int64_t batch, per_span, m, n, k;
    float alpha, beta;
    const float *a, *b;
    float *c;
    int64_t stride_a, lda, stride_b, ldb, stride_c, ldc;
    int rc; /* the first error of a product (only PYRT_ENOMEM can happen after the checks) */
} batch_job;

static int batch_span(void *ctx, int64_t start, int64_t stop)
{
    batch_job *j = ctx;
    int64_t last = stop * j->per_span;
    if (last > j->batch)
        last = j->batch;
    for (int64_t i = start * j->per_span; i < last; i++) {
        /* (A and B may be NULL when nothing is read from them: no offset on NULL) */
        const float *a = j->a ? j->a + i * j->stride_a : NULL;
        const float *b = j->b ? j->b + i * j->stride_b : NULL;
        const int rc = pyrt_sgemm(j->trans_a, j->trans_b, j->m, j->n, j->k, j->alpha, a, j->lda,
                                  b, j->ldb, j->beta, j->c + i * j->stride_c, j->ldc);
        if (rc != PYRT_OK) {
            /* relaxed: the value is read after the join, which orders it */
            int none = PYRT_OK;
            (void)__atomic_compare_exchange_n(&j->rc, &none, rc, 0, __ATOMIC_RELAXED,
                                              __ATOMIC_RELAXED);
        }
    }
    return 0;
}

/* The first and one-past-last addresses of `count` matrices of `rows` x `cols` floats, row
 * stride ld, `stride` floats apart. */
static void extent(const float *x, int64_t count, int64_t stride, int64_t rows, int64_t cols,
                   int64_t ld, uintptr_t *lo, uintptr_t *hi)
{
    *lo = (uintptr_t)x;
    *hi = (uintptr_t)(x + (count - 1) * stride + (rows - 1) * ld + cols);
}

int pyrt_sgemm_batched(int64_t batch, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                       float alpha, const float *a, int64_t stride_a, int64_t lda,
                       const float *b, int64_t stride_b, int64_t ldb, float beta, float *c,
                       int64_t stride_c, int64_t ldc)
{
    if (batch < 0 || m < 0 || n < 0 || k < 0 || stride_a < 0 || stride_b < 0)
        return PYRT_EINVAL;
    if (lda < (trans_a ? m : k) || lda < 1 || ldb < (trans_b ? k : n) || ldb < 1
        || ldc < n || ldc < 1)
        return PYRT_EINVAL;
    if (batch == 0 || m == 0 || n == 0)
        return PYRT_OK;
    /* the products of C must not share an element: each starts past the last one's end */
    if (batch > 1 && stride_c < (m - 1) * ldc + n)
        return PYRT_EINVAL;
    if (batch == 1)
        return pyrt_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    if (!c || (k > 0 && alpha != 0.0f && (!a || !b)))
        return PYRT_EINVAL;
    if (k > 0 && alpha != 0.0f) {
        uintptr_t c0, c1, x0, x1;
        extent(c, batch, stride_c, m, n, ldc, &c0, &c1);
        extent(a, batch, stride_a, trans_a ? k : m, trans_a ? m : k, lda, &x0, &x1);
        if (x0 < c1 && c0 < x1)
            return PYRT_EINVAL;
        extent(b, batch, stride_b, trans_b ? n : k, trans_b ? k : n, ldb, &x0, &x1);
        if (x0 < c1 && c0 < x1)
            return PYRT_EINVAL;
    }
    const double flops = 2.0 * (double)m * (double)n * (double)(k > 0 ? k : 1);
    int64_t per_span = flops >= BATCH_MIN_FLOPS ? 1 : (int64_t)(BATCH_MIN_FLOPS / flops);
    if (per_span > batch)
        per_span = batch;
    batch_job j = {
        .trans_a = trans_a, .trans_b = trans_b,
        .batch = batch, .per_span = per_span, .m = m, .n = n, .k = k,
        .alpha = alpha, .beta = beta, .a = a, .b = b, .c = c,
        .stride_a = stride_a, .lda = lda, .stride_b = stride_b, .ldb = ldb,
        .stride_c = stride_c, .ldc = ldc, .rc = PYRT_OK,
    };
    gemm_for_each((batch + per_span - 1) / per_span, batch_span, &j);
    return j.rc;
}
