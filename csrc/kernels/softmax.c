/*
 * softmax.c - softmax and log-softmax over the rows of [rows, cols], and the two losses built
 * on them: cross-entropy against integer labels and binary cross-entropy with logits.
 *
 * Stability: a row is shifted by its maximum m before exp, so every exp(x - m) lies in
 * [0, 1], the largest is exactly 1 and the sum s is in [1, cols]; logsumexp = m + log(s) never
 * overflows (logits of +-1e4 are fine). A row holding NaN or +inf gives NaN, as in PyTorch.
 *
 * Each row is handled by one thread in a few passes while it sits in cache: the max, then
 * exp(x - m) and its sum (the exponentials are stored where the output goes), then a scale.
 * The losses are means over rows (or elements) computed with pyrt_parallel_reduce over leaves
 * whose size depends on the shape alone, summed in double: bitwise identical at any thread
 * count. Cross-entropy writes its gradient in the same pass that computes the loss.
 *
 * exp and log come from simd_math.h: eight lanes at a time with AVX2+FMA where the CPU has
 * them, its scalar forms elsewhere.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "overlap.h"
#include "pyrt.h"
#include "simd_math.h"

#define CHUNK 16384    /* elements' worth of work per loop chunk or reduction leaf */
#define BCE_LEAF 8192  /* elements per leaf of the binary cross-entropy mean */

/* Rows of `cols` elements that make one chunk (a row also costs a fixed ~16 elements). */
static int64_t row_grain(int64_t cols)
{
    int64_t g = CHUNK / (cols + 16);
    return g > 0 ? g : 1;
}

/* ---- row passes: portable ------------------------------------------------------------- */

/* The largest non-NaN value of the row (-inf for an all-NaN row, whose result is NaN). */
static float row_max_portable(const float *x, int64_t n)
{
    float m[8];
    for (int j = 0; j < 8; j++)
        m[j] = -INFINITY;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            m[j] = x[i + j] > m[j] ? x[i + j] : m[j];
    float r = -INFINITY;
    for (int j = 0; j < 8; j++)
        r = m[j] > r ? m[j] : r;
    for (; i < n; i++)
        r = x[i] > r ? x[i] : r;
    return r;
}

/* sum of exp(x - m); stores the exponentials in y unless y is NULL (y may be x). */
static double exp_sum_portable(const float *x, float m, float *y, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) {
        float e = simd_expf(x[i] - m);
        if (y)
            y[i] = e;
        s += e;
    }
    return s;
}

static void scale_portable(float *y, float c, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] *= c;
}

/* y = (x - m) - l (y may be x). */
static void shift_portable(const float *x, float m, float l, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = (x[i] - m) - l;
}

/* ---- row passes: AVX2 ----------------------------------------------------------------- */

#if SIMD_HAVE_X86
/* Lanes 0..r-1 set, for the tail of a row (r in 0..7). */
SIMD_AVX2 static inline __m256i tail_mask(int64_t r)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)r), lane);
}

/* Store the first min(r, 8) lanes of v (a masked store is slow on some CPUs). */
SIMD_AVX2 static inline void store_tail(float *y, __m256 v, int64_t r)
{
    float buf[8];
    _mm256_storeu_ps(buf, v);
    for (int64_t j = 0; j < r && j < 8; j++)
        y[j] = buf[j];
}

/* Add the eight floats of v into four-lane double accumulators. */
SIMD_AVX2 static inline void add_to_double(__m256 l, __m256d *lo, __m256d *hi)
{
    *lo = _mm256_add_pd(*lo, _mm256_cvtps_pd(_mm256_castps256_ps128(l)));
    *hi = _mm256_add_pd(*hi, _mm256_cvtps_pd(_mm256_extractf128_ps(l, 1)));
}

SIMD_AVX2 static float row_max_avx2(const float *x, int64_t n)
{
    __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
        m1 = _mm256_max_ps(_mm256_loadu_ps(x + i + 8), m1);
    }
    m0 = _mm256_max_ps(m0, m1);
    float m[8];
    _mm256_storeu_ps(m, m0);
    float r = -INFINITY;
    for (int j = 0; j < 8; j++)
        r = m[j] > r ? m[j] : r;
    for (; i < n; i++)
        r = x[i] > r ? x[i] : r;
    return r;
}

SIMD_AVX2 static double exp_sum_avx2(const float *x, float m, float *y, int64_t n)
{
    __m256 vm = _mm256_set1_ps(m);
    __m256d s0 = _mm256_setzero_pd(), s1 = s0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 e0 = simd_exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        __m256 e1 = simd_exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm));
        if (y) {
            _mm256_storeu_ps(y + i, e0);
            _mm256_storeu_ps(y + i + 8, e1);
        }
        /* in double: a long row adds many terms, and each conversion is cheap beside exp */
        add_to_double(_mm256_add_ps(e0, e1), &s0, &s1);
    }
    for (; i < n; i += 8) {
        /* the last 1..15 elements, eight at a time; missing lanes take m (exp(0), an ordinary
         * value) and are cleared after the exp. They used to load -inf, whose exp goes
         * through the subnormal scaling: a microcode assist per lane, and a softmax of 64 x 10
         * spent half its time there (5.3 us) */
        __m256i mask = tail_mask(n - i);
        __m256 v = _mm256_blendv_ps(vm, _mm256_maskload_ps(x + i, mask),
                                    _mm256_castsi256_ps(mask));
        __m256 e = _mm256_and_ps(simd_exp_avx2(_mm256_sub_ps(v, vm)),
                                 _mm256_castsi256_ps(mask));
        if (y)
            store_tail(y + i, e, n - i);
        add_to_double(e, &s0, &s1);
    }
    double d[4];
    _mm256_storeu_pd(d, _mm256_add_pd(s0, s1));
    return (d[0] + d[2]) + (d[1] + d[3]);
}

SIMD_AVX2 static void scale_avx2(float *y, float c, int64_t n)
{
    __m256 vc = _mm256_set1_ps(c);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), vc));
    for (; i < n; i++)
        y[i] *= c;
}

SIMD_AVX2 static void shift_avx2(const float *x, float m, float l, float *y, int64_t n)
{
    __m256 vm = _mm256_set1_ps(m), vl = _mm256_set1_ps(l);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm), vl));
    for (; i < n; i++)
        y[i] = (x[i] - m) - l;
}
#endif

/* ---- dispatch ------------------------------------------------------------------------- */

static inline int have_avx2(void)
{
    return simd_cpu_has_avx2_fma();
}

static float row_max(const float *x, int64_t n)
{
#if SIMD_HAVE_X86
    if (have_avx2())
        return row_max_avx2(x, n);
#endif
    return row_max_portable(x, n);
}

static double exp_sum(const float *x, float m, float *y, int64_t n)
{
#if SIMD_HAVE_X86
    if (have_avx2())
        return exp_sum_avx2(x, m, y, n);
#endif
    return exp_sum_portable(x, m, y, n);
}

static void scale(float *y, float c, int64_t n)
{
#if SIMD_HAVE_X86
    if (have_avx2()) {
        scale_avx2(y, c, n);
        return;
    }
#endif
    scale_portable(y, c, n);
}

static void shift(const float *x, float m, float l, float *y, int64_t n)
{
#if SIMD_HAVE_X86
    if (have_avx2()) {
        shift_avx2(x, m, l, y, n);
        return;
    }
#endif
    shift_portable(x, m, l, y, n);
}

/* ---- softmax and log-softmax ---------------------------------------------------------- */

typedef struct softmax_job {
    const float *x;
    float *out;
    int64_t cols;
    int log;
} softmax_job;

static int softmax_rows(void *ctx, int64_t start, int64_t stop)
{
    const softmax_job *jb = ctx;
    int64_t n = jb->cols;
    for (int64_t r = start; r < stop; r++) {
        const float *x = jb->x + r * n;
        float *y = jb->out + r * n;
        float m = row_max(x, n);
        if (jb->log) {
            /* log_softmax = (x - m) - log s: subtracting m first keeps the small results
             * exact where m + log s, rounded at the scale of m, would not */
            double s = exp_sum(x, m, NULL, n);
            shift(x, m, (float)log(s), y, n);
        } else {
            /* y holds exp(x - m) after this pass (x is no longer needed when y is x) */
            double s = exp_sum(x, m, y, n);
            scale(y, (float)(1.0 / s), n);
        }
    }
    return 0;
}

int pyrt_softmax(const float *x, float *out, int64_t rows, int64_t cols, int log)
{
    if (rows < 0 || cols < 0)
        return PYRT_EINVAL;
    if (rows == 0 || cols == 0)
        return PYRT_OK;
    if (!x || !out)
        return PYRT_EINVAL;
    if (overlaps_partly(out, rows * cols, x, rows * cols))
        return PYRT_EOVERLAP;
    softmax_job jb = {x, out, cols, log};
    return pyrt_parallel_for(rows, row_grain(cols), softmax_rows, &jb);
}

/* ---- cross-entropy -------------------------------------------------------------------- */

typedef struct ce_job {
    const float *logits;
    const int64_t *labels;
    float *grad;
    int64_t rows, cols;
} ce_job;

/* The summed loss of rows [start, stop) into *acc (a double); their gradient rows too. */
static int ce_leaf(void *ctx, int64_t start, int64_t stop, void *acc)
{
    const ce_job *jb = ctx;
    int64_t n = jb->cols;
    double total = 0.0;
    float inv_rows = (float)(1.0 / (double)jb->rows);
    for (int64_t r = start; r < stop; r++) {
        const float *z = jb->logits + r * n;
        int64_t label = jb->labels[r];
        float *g = jb->grad ? jb->grad + r * n : NULL;
        float m = row_max(z, n);
        double s = exp_sum(z, m, g, n);
        /* loss = logsumexp(z) - z[label] = m + log(s) - z[label] */
        total += ((double)m + log(s)) - (double)z[label];
        if (g) {
            /* d loss / d z = (softmax(z) - onehot(label)) / rows, from exp(z - m) in g */
            scale(g, (float)(1.0 / (s * (double)jb->rows)), n);
            g[label] -= inv_rows;
        }
    }
    *(double *)acc = total;
    return 0;
}

static int sum_merge(void *ctx, void *left, const void *right)
{
    (void)ctx;
    *(double *)left += *(const double *)right;
    return 0;
}

int pyrt_cross_entropy(const float *logits, const int64_t *labels, float *loss, float *grad,
                       int64_t rows, int64_t cols)
{
    if (rows < 0 || cols < 0 || !loss)
        return PYRT_EINVAL;
    if (rows > 0 && (!logits || !labels))
        return PYRT_EINVAL;
    /* every label is checked before anything is written */
    for (int64_t r = 0; r < rows; r++)
        if (labels[r] < 0 || labels[r] >= cols)
            return PYRT_EINVAL;
    if (rows == 0) {
        *loss = NAN; /* the mean of no rows, as PyTorch returns it */
        return PYRT_OK;
    }
    ce_job jb = {logits, labels, grad, rows, cols};
    double total = 0.0;
    int rc = pyrt_parallel_reduce(rows, row_grain(cols), sizeof total, ce_leaf, sum_merge, &jb,
                                  &total);
    if (rc == PYRT_OK)
        *loss = (float)(total / (double)rows);
    return rc;
}

/* ---- binary cross-entropy with logits ------------------------------------------------- */

/* Per element, with e = exp(-|z|) in (0, 1]:
 *   loss = max(z, 0) - z t + log1p(e)   (z (1 - t) at z = +inf, where z - z t is inf - inf:
 *                                         inf for t < 1, as PyTorch gives)
 *   grad = (sigmoid(z) - t) / n, sigmoid(z) = (z < 0 ? e : 1) / (1 + e)
 * log1p(e) = log(u) * e / (u - 1) with u = 1 + e (and e itself when u rounds to 1): the
 * rounding of u cancels in the ratio, so small e keeps its relative accuracy. */

typedef struct bce_job {
    const float *z, *t;
    float *grad;
    int64_t n;
} bce_job;

static int bce_leaf_portable(const bce_job *jb, int64_t start, int64_t stop, double *acc)
{
    double total = 0.0;
    float inv_n = (float)(1.0 / (double)jb->n);
    for (int64_t i = start; i < stop; i++) {
        float z = jb->z[i], t = jb->t[i];
        float e = simd_expf(-fabsf(z));
        float u = 1.0f + e, d = u - 1.0f;
        float l1p = d == 0.0f ? e : simd_logf(u) * (e / d);
        const float loss = z == INFINITY ? z * (1.0f - t) : (z > 0.0f ? z : 0.0f) - z * t + l1p;
        total += (double)loss;
        if (jb->grad)
            jb->grad[i] = ((z < 0.0f ? e : 1.0f) / u - t) * inv_n;
    }
    *acc = total;
    return 0;
}

#if SIMD_HAVE_X86
/* Eight elements: returns their losses and stores their gradients in *g. */
SIMD_AVX2 static inline __m256 bce_avx2(__m256 z, __m256 t, __m256 inv_n, __m256 *g)
{
    const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    __m256 e = simd_exp_avx2(_mm256_or_ps(z, _mm256_set1_ps(-0.0f)));
    __m256 u = _mm256_add_ps(one, e);
    __m256 d = _mm256_sub_ps(u, one);
    __m256 l1p = _mm256_mul_ps(simd_log_avx2(u), _mm256_div_ps(e, d));
    l1p = _mm256_blendv_ps(l1p, e, _mm256_cmp_ps(d, zero, _CMP_EQ_OQ));
    __m256 num = _mm256_blendv_ps(one, e, _mm256_cmp_ps(z, zero, _CMP_LT_OQ));
    *g = _mm256_mul_ps(_mm256_sub_ps(_mm256_div_ps(num, u), t), inv_n);
    const __m256 loss = _mm256_add_ps(_mm256_fnmadd_ps(z, t, _mm256_max_ps(z, zero)), l1p);
    const __m256 inf = _mm256_set1_ps(INFINITY);
    return _mm256_blendv_ps(loss, _mm256_mul_ps(z, _mm256_sub_ps(one, t)),
                            _mm256_cmp_ps(z, inf, _CMP_EQ_OQ));
}

SIMD_AVX2 static int bce_leaf_avx2(const bce_job *jb, int64_t start, int64_t stop, double *acc)
{
    __m256 inv_n = _mm256_set1_ps((float)(1.0 / (double)jb->n));
    __m256d lo = _mm256_setzero_pd(), hi = lo;
    __m256 g;
    int64_t i = start;
    for (; i + 8 <= stop; i += 8) {
        __m256 l = bce_avx2(_mm256_loadu_ps(jb->z + i), _mm256_loadu_ps(jb->t + i), inv_n, &g);
        add_to_double(l, &lo, &hi);
        if (jb->grad)
            _mm256_storeu_ps(jb->grad + i, g);
    }
    if (i < stop) {
        /* the last 1..7 elements: missing lanes load z = t = 0 and are masked out */
        __m256i mask = tail_mask(stop - i);
        __m256 l = bce_avx2(_mm256_maskload_ps(jb->z + i, mask),
                            _mm256_maskload_ps(jb->t + i, mask), inv_n, &g);
        add_to_double(_mm256_and_ps(l, _mm256_castsi256_ps(mask)), &lo, &hi);
        if (jb->grad)
            store_tail(jb->grad + i, g, stop - i);
    }
    double s[4];
    _mm256_storeu_pd(s, _mm256_add_pd(lo, hi));
    *acc = (s[0] + s[2]) + (s[1] + s[3]);
    return 0;
}
#endif

static int bce_leaf(void *ctx, int64_t start, int64_t stop, void *acc)
{
#if SIMD_HAVE_X86
    if (have_avx2())
        return bce_leaf_avx2(ctx, start, stop, acc);
#endif
    return bce_leaf_portable(ctx, start, stop, acc);
}

int pyrt_bce_with_logits(const float *logits, const float *targets, float *loss, float *grad,
                         int64_t n)
{
    if (n < 0 || !loss)
        return PYRT_EINVAL;
    if (n == 0) {
        *loss = NAN; /* the mean of nothing, as PyTorch returns it */
        return PYRT_OK;
    }
    if (!logits || !targets)
        return PYRT_EINVAL;
    bce_job jb = {logits, targets, grad, n};
    double total = 0.0;
    int rc = pyrt_parallel_reduce(n, BCE_LEAF, sizeof total, bce_leaf, sum_merge, &jb, &total);
    if (rc == PYRT_OK)
        *loss = (float)(total / (double)n);
    return rc;
}
