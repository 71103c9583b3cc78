/*
 * kernels_gemm.c - pyrt_sgemm on every one of its paths, against a product summed in double.
 *
 * The shapes below are chosen from csrc/kernels/gemm/gemm.c's rules (AVX2's 6 x 16 tiles) so
 * that each path is taken: one or two rows and the sweep of a few (row.c), small products and
 * a few rows over narrow spans (small.c),
 * A B^T with a small side (dot.c, one chunk of k and several), and the packed path with B read
 * in place,
 * B packed by each tile (b_in_tile), a separate packing phase, several passes over rows, over
 * k and over columns, and k cut into groups summed in buffers. Random shapes then mix
 * transposes, alpha, beta and row strides. Edge tiles come from sizes that are not multiples
 * of 6 or 16. Each operand is allocated to its exact extent, (rows - 1) * ld + cols floats,
 * so its last row ends at the end of the block; the gaps between rows hold NaN (a kernel that
 * reads them spreads it into C), and C's gaps a sentinel that must survive. With beta == 0,
 * C starts as NaN, which must not show through.
 */
#include <stddef.h>
#include <stdint.h>

#include "kernels_check.h"

typedef struct {
    const char *what;
    int trans_a, trans_b;
    int64_t m, n, k;
    int64_t pad_a, pad_b, pad_c; /* row stride minus stored row length */
    float alpha, beta;
    int heavy;                   /* large enough to skip at STRESS_SCALE < 0.5 (TSan) */
} gemm_case;

static const gemm_case CASES[] = {
    /* row.c: m <= 2, B not transposed */
    {"row m=1", 0, 0, 1, 37, 19, 0, 0, 0, 1.0f, 0.0f, 0},
    {"row m=2 several k blocks", 0, 0, 2, 300, 600, 3, 5, 1, 1.0f, 0.5f, 0},
    {"row A^T alpha", 1, 0, 2, 33, 70, 2, 0, 0, 0.5f, 0.75f, 0},
    {"row wide, split in tasks", 0, 0, 1, 2053, 300, 0, 0, 0, 1.0f, 0.0f, 0},
    /* small.c: k <= 256, m*n*k <= 2^17 */
    {"small", 0, 0, 13, 37, 29, 0, 0, 0, 1.0f, 0.0f, 0},
    {"small A^T B^T", 1, 1, 10, 21, 64, 1, 2, 3, 1.0f, -1.0f, 0},
    {"small A B^T before dot", 0, 1, 64, 16, 64, 0, 0, 0, 1.0f, 0.0f, 0},
    {"small alpha packs A", 1, 0, 7, 40, 256, 0, 0, 0, 2.0f, 0.0f, 0},
    {"small B rows evict each other", 0, 0, 30, 20, 100, 0, 1004, 0, 1.0f, 1.0f, 0},
    /* dot.c: A B^T, m or n <= 64 */
    {"dot before small", 0, 1, 64, 10, 128, 0, 0, 0, 1.0f, 0.0f, 0},
    {"dot long k", 0, 1, 50, 300, 784, 4, 3, 0, 1.0f, 0.25f, 0},
    {"dot chunks of k", 0, 1, 3, 5, 3000, 0, 0, 2, 1.5f, 0.0f, 0},
    {"dot few columns", 0, 1, 200, 7, 2500, 0, 0, 0, 1.0f, 1.0f, 0},
    /* row.c, the sweep: 3 to 5 rows, B not transposed, spans of more than 64 columns */
    {"sweep, k blocks, tasks", 0, 0, 5, 2100, 600, 3, 5, 1, 1.0f, 0.5f, 0},
    {"sweep A^T alpha", 1, 0, 5, 300, 700, 2, 0, 4, 0.5f, -0.5f, 0},
    {"sweep, pieces, right edge", 0, 0, 3, 1001, 257, 0, 11, 0, 1.0f, 0.0f, 0},
    {"sweep 4 rows, ragged k", 0, 0, 4, 700, 389, 1, 2, 3, 1.0f, 1.0f, 0},
    /* small.c, few rows: m <= mr (6 here), B not transposed, spans of 64 columns at most
     * (or 6 rows) */
    {"few rows", 0, 0, 5, 60, 700, 3, 5, 1, 1.0f, 0.5f, 0},
    {"few rows, 6 of them", 0, 0, 6, 300, 700, 0, 0, 0, 1.0f, 0.0f, 0},
    {"few rows A^T alpha", 1, 0, 6, 50, 900, 2, 0, 4, 0.5f, -0.5f, 0},
    /* packed path */
    {"packed A and B in place", 0, 0, 100, 100, 300, 0, 0, 0, 1.0f, 0.0f, 0},
    {"packed, packing phase", 1, 1, 150, 130, 300, 5, 0, 7, 0.5f, 0.25f, 0},
    {"packed b_in_tile", 0, 1, 100, 100, 300, 0, 0, 0, 1.0f, 0.0f, 0},
    {"packed b_in_tile, k groups", 0, 0, 140, 70, 2200, 0, 954, 0, 1.0f, 0.0f, 0},
    {"packed k groups, B in place", 0, 0, 16, 16, 4096, 0, 0, 0, 1.0f, 2.0f, 0},
    {"packed passes over rows", 0, 0, 4100, 1, 300, 0, 0, 0, 0.5f, 0.0f, 0},
    {"packed passes over rows and k", 1, 0, 4100, 2, 2100, 0, 0, 3, 0.5f, 1.0f, 0},
    {"packed passes over columns", 0, 1, 150, 4100, 256, 0, 0, 0, 1.0f, 0.0f, 1},
};

typedef struct {
    int64_t rows, cols, ld; /* as stored: rows of `cols` values, `ld` apart */
} extent;

static int64_t extent_floats(extent e)
{
    return (e.rows - 1) * e.ld + e.cols;
}

/* Random values in the matrix, NaN or `gap` between its rows. */
static float *matrix(stress_rng *r, extent e, float gap)
{
    float *x = kc_floats(extent_floats(e));
    kc_fill_value(x, extent_floats(e), gap);
    for (int64_t i = 0; i < e.rows; i++)
        kc_fill(r, x + i * e.ld, e.cols, -1.0f, 1.0f);
    return x;
}

/* The reference for the rows i of C that are multiples of `step` (and the last): want[i, j]
 * and, for the tolerance, the same sum of absolute values. */
static void reference(const gemm_case *g, const float *a, int64_t lda, const float *b,
                      int64_t ldb, const float *c0, int64_t ldc, int64_t step, double *want,
                      double *bound)
{
    for (int64_t i = 0; i < g->m; i++) {
        if (i % step != 0 && i != g->m - 1)
            continue;
        for (int64_t j = 0; j < g->n; j++) {
            double s = 0, t = 0;
            for (int64_t p = 0; p < g->k; p++) {
                const double x = g->trans_a ? a[p * lda + i] : a[i * lda + p];
                const double y = g->trans_b ? b[j * ldb + p] : b[p * ldb + j];
                s += x * y;
                t += fabs(x * y);
            }
            s *= g->alpha;
            t *= fabs(g->alpha);
            if (g->beta != 0.0f) {
                s += (double)g->beta * c0[i * ldc + j];
                t += fabs((double)g->beta * c0[i * ldc + j]);
            }
            want[i * g->n + j] = s;
            bound[i * g->n + j] = t;
        }
    }
}

static void run_case(stress_rng *r, const gemm_case *g)
{
    const extent ea = {g->trans_a ? g->k : g->m, g->trans_a ? g->m : g->k, 0};
    const extent eb = {g->trans_b ? g->n : g->k, g->trans_b ? g->k : g->n, 0};
    extent xa = ea, xb = eb, xc = {g->m, g->n, g->n + g->pad_c};
    xa.ld = ea.cols + g->pad_a;
    xb.ld = eb.cols + g->pad_b;
    float *a = matrix(r, xa, NAN), *b = matrix(r, xb, NAN);
    const float sentinel = -12345.0f;
    float *c0 = matrix(r, xc, sentinel);
    if (g->beta == 0.0f)
        for (int64_t i = 0; i < g->m; i++)
            kc_fill_value(c0 + i * xc.ld, g->n, NAN);

    /* check about 4 M multiply-adds of reference at most */
    const double work = (double)g->m * (double)g->n * (double)g->k;
    const int64_t step = work > 4e6 ? (int64_t)(work / 4e6) + 1 : 1;
    double *want = kc_doubles(g->m * g->n), *bound = kc_doubles(g->m * g->n);
    reference(g, a, xa.ld, b, xb.ld, c0, xc.ld, step, want, bound);

    const int64_t nc = extent_floats(xc);
    float *first = kc_floats(nc), *c = kc_floats(nc);
    char what[160];
    for (int t = 0; t < KERNELS_NTHREADS; t++) {
        stress_set_threads(KERNELS_THREADS[t]);
        memcpy(c, c0, sizeof(float) * (size_t)nc);
        CHECK_RC(pyrt_sgemm(g->trans_a, g->trans_b, g->m, g->n, g->k, g->alpha, a, xa.ld, b,
                            xb.ld, g->beta, c, xc.ld),
                 PYRT_OK);
        snprintf(what, sizeof what, "sgemm %s (%s%s %lld x %lld x %lld, alpha %g beta %g)",
                 g->what, g->trans_a ? "A^T" : "A", g->trans_b ? " B^T" : " B", (long long)g->m,
                 (long long)g->n, (long long)g->k, (double)g->alpha, (double)g->beta);
        if (t > 0) {
            kc_same(what, KERNELS_THREADS[t], c, first, sizeof(float) * (size_t)nc);
            continue;
        }
        memcpy(first, c, sizeof(float) * (size_t)nc);
        for (int64_t i = 0; i < g->m; i++) {
            if (i % step == 0 || i == g->m - 1)
                kc_close(what, c + i * xc.ld, want + i * g->n, bound + i * g->n, g->n, g->k, 0);
            for (int64_t j = g->n; j < xc.ld && i < g->m - 1; j++)
                CHECK(c[i * xc.ld + j] == sentinel, "%s wrote C's gap at row %lld", what,
                      (long long)i);
        }
    }
    free(a);
    free(b);
    free(c0);
    free(c);
    free(first);
    free(want);
    free(bound);
}

/* Random shapes around the paths' limits, with random transposes, scalars and strides. */
static void random_case(stress_rng *r, gemm_case *g)
{
    static const float alphas[] = {1.0f, 1.0f, 0.5f, -2.0f};
    static const float betas[] = {0.0f, 0.0f, 1.0f, -0.5f};
    g->what = "random";
    g->trans_a = (int)stress_below(r, 2);
    g->trans_b = (int)stress_below(r, 2);
    g->m = 1 + stress_log_below(r, 300);
    g->n = 1 + stress_log_below(r, 300);
    g->k = 1 + stress_log_below(r, 1200);
    g->pad_a = stress_below(r, 3) == 0 ? stress_below(r, 40) : 0;
    g->pad_b = stress_below(r, 3) == 0 ? stress_below(r, 40) : 0;
    g->pad_c = stress_below(r, 3) == 0 ? stress_below(r, 40) : 0;
    g->alpha = alphas[stress_below(r, 4)];
    g->beta = betas[stress_below(r, 4)];
    g->heavy = 0;
}

/* alpha == 0 or k == 0: C = beta * C without reading A or B (which may be NULL); empty C;
 * and the argument errors. */
static void check_degenerate(stress_rng *r)
{
    const int64_t m = 37, n = 53, ldc = 60, nc = (m - 1) * ldc + n;
    float *c = kc_floats(nc), *c0 = kc_floats(nc);
    kc_fill(r, c0, nc, -1.0f, 1.0f);
    for (int t = 0; t < KERNELS_NTHREADS; t++) {
        stress_set_threads(KERNELS_THREADS[t]);
        memcpy(c, c0, sizeof(float) * (size_t)nc);
        CHECK_RC(pyrt_sgemm(0, 0, m, n, 0, 1.0f, NULL, 1, NULL, n, 0.5f, c, ldc), PYRT_OK);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < ldc && i * ldc + j < nc; j++)
                CHECK(c[i * ldc + j] == (j < n ? 0.5f * c0[i * ldc + j] : c0[i * ldc + j]),
                      "sgemm k=0 beta=0.5 at (%lld, %lld)", (long long)i, (long long)j);
        kc_fill_value(c, nc, NAN);
        CHECK_RC(pyrt_sgemm(1, 1, m, n, 9, 0.0f, NULL, m, NULL, 9, 0.0f, c, ldc), PYRT_OK);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                CHECK(c[i * ldc + j] == 0.0f, "sgemm alpha=0 beta=0 left NaN at (%lld, %lld)",
                      (long long)i, (long long)j);
    }
    float *a = kc_floats(m * 5);
    kc_fill(r, a, m * 5, -1.0f, 1.0f);
    CHECK_RC(pyrt_sgemm(0, 0, 0, n, 5, 1.0f, a, 5, a, n, 0.0f, c, ldc), PYRT_OK);
    CHECK_RC(pyrt_sgemm(0, 0, m, 0, 5, 1.0f, a, 5, a, 1, 0.0f, c, ldc), PYRT_OK);
    CHECK_RC(pyrt_sgemm(0, 0, -1, n, 5, 1.0f, a, 5, a, n, 0.0f, c, ldc), PYRT_EINVAL);
    CHECK_RC(pyrt_sgemm(0, 0, m, n, 5, 1.0f, a, 4, a, n, 0.0f, c, ldc), PYRT_EINVAL);
    CHECK_RC(pyrt_sgemm(0, 0, m, n, 5, 1.0f, a, 5, a, n, 0.0f, c, n - 1), PYRT_EINVAL);
    CHECK_RC(pyrt_sgemm(0, 0, m, n, 5, 1.0f, NULL, 5, a, n, 0.0f, c, ldc), PYRT_EINVAL);
    /* C overlapping A */
    CHECK_RC(pyrt_sgemm(0, 0, 5, 5, 5, 1.0f, c, 5, a, 5, 0.0f, c + 3, 5), PYRT_EINVAL);
    free(a);
    free(c);
    free(c0);
}

/* pyrt_sgemm_batched against one pyrt_sgemm call per product, bitwise, at every thread count:
 * batches of small products (many to a task), of large ones (split inside), one A or one B
 * for every product (stride 0), transposes and beta; then its argument errors. */
static void check_batched(stress_rng *r)
{
    static const struct {
        int64_t batch, m, n, k, stride_a, stride_b; /* a stride -1: the matrix's size */
        int trans_a, trans_b;
        float beta;
    } shapes[] = {
        {64, 8, 8, 8, -1, -1, 0, 0, 0.0f},       /* many products to a task */
        {33, 64, 64, 32, -1, -1, 0, 1, 0.0f},    /* attention's Q K^T */
        {5, 150, 130, 300, -1, -1, 1, 0, 0.5f},  /* packed products, split inside */
        {12, 20, 30, 40, 0, -1, 0, 0, 0.0f},     /* one A for all */
        {12, 20, 30, 40, -1, 0, 1, 1, 1.0f},     /* one B for all */
        {3, 1, 200, 50, -1, -1, 0, 0, 0.0f},     /* rows */
    };
    char what[160];
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t batch = shapes[s].batch, m = shapes[s].m, n = shapes[s].n;
        const int64_t k = shapes[s].k;
        const int ta = shapes[s].trans_a, tb = shapes[s].trans_b;
        const int64_t sa = shapes[s].stride_a < 0 ? m * k : 0;
        const int64_t sb = shapes[s].stride_b < 0 ? k * n : 0;
        const int64_t na = (sa ? batch : 1) * m * k, nb = (sb ? batch : 1) * k * n;
        const int64_t nc = batch * m * n;
        float *a = kc_floats(na), *b = kc_floats(nb), *c0 = kc_floats(nc);
        float *want = kc_floats(nc), *c = kc_floats(nc);
        kc_fill(r, a, na, -1.0f, 1.0f);
        kc_fill(r, b, nb, -1.0f, 1.0f);
        kc_fill(r, c0, nc, -1.0f, 1.0f);
        memcpy(want, c0, sizeof(float) * (size_t)nc);
        for (int64_t i = 0; i < batch; i++)
            CHECK_RC(pyrt_sgemm(ta, tb, m, n, k, 1.0f, a + i * sa, ta ? m : k, b + i * sb,
                                tb ? k : n, shapes[s].beta, want + i * m * n, n),
                     PYRT_OK);
        snprintf(what, sizeof what, "sgemm_batched %lld x (%lld x %lld x %lld)",
                 (long long)batch, (long long)m, (long long)n, (long long)k);
        for (int t = 0; t < KERNELS_NTHREADS; t++) {
            stress_set_threads(KERNELS_THREADS[t]);
            memcpy(c, c0, sizeof(float) * (size_t)nc);
            CHECK_RC(pyrt_sgemm_batched(batch, ta, tb, m, n, k, 1.0f, a, sa, ta ? m : k, b, sb,
                                        tb ? k : n, shapes[s].beta, c, m * n, n),
                     PYRT_OK);
            kc_same(what, KERNELS_THREADS[t], c, want, sizeof(float) * (size_t)nc);
        }
        free(a);
        free(b);
        free(c0);
        free(want);
        free(c);
    }
    float *x = kc_floats(4 * 25), *y = kc_floats(4 * 25);
    kc_fill(r, x, 4 * 25, -1.0f, 1.0f);
    CHECK_RC(pyrt_sgemm_batched(0, 0, 0, 5, 5, 5, 1.0f, x, 25, 5, x, 25, 5, 0.0f, y, 25, 5),
             PYRT_OK);
    CHECK_RC(pyrt_sgemm_batched(-1, 0, 0, 5, 5, 5, 1.0f, x, 25, 5, x, 25, 5, 0.0f, y, 25, 5),
             PYRT_EINVAL);
    CHECK_RC(pyrt_sgemm_batched(4, 0, 0, 5, 5, 5, 1.0f, x, -25, 5, x, 25, 5, 0.0f, y, 25, 5),
             PYRT_EINVAL);
    /* products of C sharing elements */
    CHECK_RC(pyrt_sgemm_batched(4, 0, 0, 5, 5, 5, 1.0f, x, 25, 5, x, 25, 5, 0.0f, y, 24, 5),
             PYRT_EINVAL);
    /* C overlapping A's last matrix */
    CHECK_RC(pyrt_sgemm_batched(2, 0, 0, 5, 5, 5, 1.0f, x, 25, 5, x, 0, 5, 0.0f, x + 40, 25,
                                5),
             PYRT_EINVAL);
    free(x);
    free(y);
}

int main(void)
{
    double t0 = stress_now();
    stress_begin("kernels_gemm");
    printf("kernels_gemm: micro-kernel %s\n", pyrt_sgemm_kernel());
    stress_rng rng = stress_rng_make(stress_seed(), 101);
    int64_t cases = 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        if (CASES[i].heavy && stress_scale() < 0.5)
            continue;
        run_case(&rng, &CASES[i]);
        cases++;
    }
    const int64_t randoms = stress_scaled(40, 10);
    for (int64_t i = 0; i < randoms; i++) {
        gemm_case g;
        random_case(&rng, &g);
        run_case(&rng, &g);
    }
    check_degenerate(&rng);
    check_batched(&rng);
    printf("kernels_gemm: %lld chosen shapes, %lld random ones\n", (long long)cases,
           (long long)randoms);
    return stress_end("kernels_gemm", t0);
}
