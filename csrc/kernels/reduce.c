/*
 * reduce.c - sum, max and argmax of x seen as [outer, len, inner], over the middle axis.
 *
 * Three shapes of work, chosen from the sizes alone (never from the thread count, so every
 * result is bitwise identical at any thread count):
 *
 * - a contiguous run (inner == 1: a full reduction, or the last axis) is cut into fixed
 *   leaves of LEAF elements merged up pyrt_parallel_reduce's fixed tree. Inside a leaf the
 *   sum runs on LANES independent float lanes (four AVX2 vectors where the CPU has them, the
 *   same lanes in portable C otherwise: both add the same numbers in the same order), flushed
 *   into double accumulators every BLOCK elements; leaves merge in double and the result is
 *   rounded to float once. A float lane adds at most BLOCK / LANES = 8 numbers before its
 *   partial goes to double, so the error stays within a few eps of sum |x| however long the
 *   array (a pairwise sum's bound grows with log n), at no cost in speed: the flush is a few
 *   instructions per 32 vector loads.
 * - many rows (inner == 1, outer > 1): a parallel loop over rows, each row reduced as above,
 *   so a row of an axis reduction equals the full reduction of that row bit for bit.
 * - columns (inner > 1): a parallel loop over (outer index, block of COLS columns); each
 *   column adds its len values in index order, in float for KBLOCK rows at a time, then in
 *   double.
 *
 * Max and argmax follow NumPy on NaN: max returns NaN if any element is NaN, argmax the
 * index of the first NaN; otherwise argmax is the first index of the maximum.
 */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pyrt.h"
#include "simd_math.h"

#define LEAF 32768  /* elements per leaf: 128 KiB, a few microseconds even from memory */
#define LANES 32    /* independent float partial sums in a leaf */
#define BLOCK 256   /* elements added into the float lanes before they flush into double */
#define COLS 256    /* columns per task in a column reduction */
#define KBLOCK 16   /* rows a column adds in float before flushing into double */
#define CHUNK 16384 /* elements' worth of work a loop chunk should have, at least */

/* Rows (or tasks) of `per` elements each that make one chunk of a parallel loop. */
static int64_t loop_grain(int64_t per)
{
    int64_t g = CHUNK / (per + 32); /* +32: the fixed cost of a row, in elements */
    return g > 0 ? g : 1;
}

/* ---- the sum of a contiguous run ------------------------------------------------------- */

/* Flush 32 float lanes into 8 double accumulators: d[j] += (a[j] + a[j+8]) + (a[j+16] +
 * a[j+24]), which is exactly what the AVX2 code does with its four vectors. */
static inline void flush_lanes(const float *a, double *d)
{
    for (int j = 0; j < 8; j++)
        d[j] += (double)((a[j] + a[j + 8]) + (a[j + 16] + a[j + 24]));
}

static inline double finish_lanes(const double *d)
{
    return ((d[0] + d[4]) + (d[2] + d[6])) + ((d[1] + d[5]) + (d[3] + d[7]));
}

static double sum_run_portable(const float *x, int64_t n)
{
    double d[8] = {0};
    for (int64_t b = 0; b < n; b += BLOCK) {
        int64_t m = n - b < BLOCK ? n - b : BLOCK;
        const float *p = x + b;
        float a[LANES] = {0};
        int64_t i = 0;
        for (; i + LANES <= m; i += LANES)
            for (int j = 0; j < LANES; j++)
                a[j] += p[i + j];
        for (int j = 0; i + j < m; j++)
            a[j] += p[i + j];
        flush_lanes(a, d);
    }
    return finish_lanes(d);
}

#if SIMD_HAVE_X86
/* Lanes 0..r-1 of a vector set (none for r <= 0, all for r >= 8). */
SIMD_AVX2 static inline __m256i lane_mask(int r)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

SIMD_AVX2 static double sum_run_avx2(const float *x, int64_t n)
{
    __m256d dlo = _mm256_setzero_pd(), dhi = _mm256_setzero_pd();
    for (int64_t b = 0; b < n; b += BLOCK) {
        int64_t m = n - b < BLOCK ? n - b : BLOCK;
        const float *p = x + b;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        int64_t i = 0;
        for (; i + LANES <= m; i += LANES) {
            a0 = _mm256_add_ps(a0, _mm256_loadu_ps(p + i));
            a1 = _mm256_add_ps(a1, _mm256_loadu_ps(p + i + 8));
            a2 = _mm256_add_ps(a2, _mm256_loadu_ps(p + i + 16));
            a3 = _mm256_add_ps(a3, _mm256_loadu_ps(p + i + 24));
        }
        if (i < m) {
            /* the last 1..31 elements into the same lanes as the portable code; masked-off
             * lanes load +0, which leaves a lane unchanged (a lane is never -0: it starts at
             * +0, and x + y rounds to -0 only when both are -0) */
            int r = (int)(m - i);
            a0 = _mm256_add_ps(a0, _mm256_maskload_ps(p + i, lane_mask(r)));
            a1 = _mm256_add_ps(a1, _mm256_maskload_ps(p + i + 8, lane_mask(r - 8)));
            a2 = _mm256_add_ps(a2, _mm256_maskload_ps(p + i + 16, lane_mask(r - 16)));
            a3 = _mm256_add_ps(a3, _mm256_maskload_ps(p + i + 24, lane_mask(r - 24)));
        }
        __m256 t = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
        dlo = _mm256_add_pd(dlo, _mm256_cvtps_pd(_mm256_castps256_ps128(t)));
        dhi = _mm256_add_pd(dhi, _mm256_cvtps_pd(_mm256_extractf128_ps(t, 1)));
    }
    double d[8];
    _mm256_storeu_pd(d, dlo);
    _mm256_storeu_pd(d + 4, dhi);
    return finish_lanes(d);
}
#endif

static double sum_run(const float *x, int64_t n)
{
#if SIMD_HAVE_X86
    if (__builtin_cpu_supports("avx2"))
        return sum_run_avx2(x, n);
#endif
    return sum_run_portable(x, n);
}

/* ---- the max of a contiguous run ------------------------------------------------------- */

/* Lanes keep m = v > m ? v : m (NaN never wins a comparison) and remember separately whether
 * a NaN was seen; a NaN anywhere makes the result NaN. */
static float max_run_portable(const float *x, int64_t n)
{
    float m[16];
    int nan[16];
    for (int j = 0; j < 16; j++) {
        m[j] = -INFINITY;
        nan[j] = 0;
    }
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) {
            float v = x[i + j];
            m[j] = v > m[j] ? v : m[j];
            nan[j] |= v != v;
        }
    for (int j = 0; i + j < n; j++) {
        float v = x[i + j];
        m[j] = v > m[j] ? v : m[j];
        nan[j] |= v != v;
    }
    float r = m[0];
    int any_nan = nan[0];
    for (int j = 1; j < 16; j++) {
        r = m[j] > r ? m[j] : r;
        any_nan |= nan[j];
    }
    return any_nan ? NAN : r;
}

#if SIMD_HAVE_X86
SIMD_AVX2 static float max_run_avx2(const float *x, int64_t n)
{
    /* _mm256_max_ps(v, m) returns m when v is NaN or equal to m: the portable rule */
    __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
    __m256 nan = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
        __m256 v2 = _mm256_loadu_ps(x + i + 16), v3 = _mm256_loadu_ps(x + i + 24);
        m0 = _mm256_max_ps(v0, m0);
        m1 = _mm256_max_ps(v1, m1);
        m2 = _mm256_max_ps(v2, m2);
        m3 = _mm256_max_ps(v3, m3);
        __m256 u01 = _mm256_cmp_ps(v0, v1, _CMP_UNORD_Q);
        __m256 u23 = _mm256_cmp_ps(v2, v3, _CMP_UNORD_Q);
        nan = _mm256_or_ps(nan, _mm256_or_ps(u01, u23));
    }
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        m0 = _mm256_max_ps(v, m0);
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
    m0 = _mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3));
    float m[8];
    _mm256_storeu_ps(m, m0);
    int any_nan = _mm256_movemask_ps(nan) != 0;
    float r = m[0];
    for (int j = 1; j < 8; j++)
        r = m[j] > r ? m[j] : r;
    for (; i < n; i++) {
        r = x[i] > r ? x[i] : r;
        any_nan |= x[i] != x[i];
    }
    return any_nan ? NAN : r;
}

/* First index of `value` in x (of the first NaN if value is NaN); n if absent. */
SIMD_AVX2 static int64_t find_avx2(const float *x, int64_t n, float value)
{
    int64_t i = 0;
    if (value != value) {
        for (; i + 8 <= n; i += 8) {
            __m256 v = _mm256_loadu_ps(x + i);
            int mask = _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
            if (mask)
                return i + __builtin_ctz((unsigned)mask);
        }
        for (; i < n; i++)
            if (x[i] != x[i])
                return i;
        return n;
    }
    __m256 target = _mm256_set1_ps(value);
    for (; i + 8 <= n; i += 8) {
        int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), target, _CMP_EQ_OQ));
        if (mask)
            return i + __builtin_ctz((unsigned)mask);
    }
    for (; i < n; i++)
        if (x[i] == value)
            return i;
    return n;
}
#endif

static float max_run(const float *x, int64_t n)
{
#if SIMD_HAVE_X86
    if (__builtin_cpu_supports("avx2"))
        return max_run_avx2(x, n);
#endif
    return max_run_portable(x, n);
}

static int64_t find_portable(const float *x, int64_t n, float value)
{
    if (value != value) {
        for (int64_t i = 0; i < n; i++)
            if (x[i] != x[i])
                return i;
        return n;
    }
    for (int64_t i = 0; i < n; i++)
        if (x[i] == value)
            return i;
    return n;
}

/* Argmax of a run in two passes over memory the first pass leaves in cache (a run is at most
 * a leaf here): the vectorised max, then the first index holding it. */
static int64_t argmax_run(const float *x, int64_t n, float *max)
{
    float m = max_run(x, n);
    *max = m;
#if SIMD_HAVE_X86
    if (__builtin_cpu_supports("avx2"))
        return find_avx2(x, n, m);
#endif
    return find_portable(x, n, m);
}

/* ---- leaves and merges of a long run --------------------------------------------------- */

typedef struct arg_acc {
    float value;
    int64_t index;
} arg_acc;

static int sum_leaf(void *ctx, int64_t start, int64_t stop, void *acc)
{
    *(double *)acc = sum_run((const float *)ctx + start, stop - start);
    return 0;
}

static int sum_merge(void *ctx, void *left, const void *right)
{
    (void)ctx;
    *(double *)left += *(const double *)right;
    return 0;
}

static int max_leaf(void *ctx, int64_t start, int64_t stop, void *acc)
{
    *(float *)acc = max_run((const float *)ctx + start, stop - start);
    return 0;
}

static int max_merge(void *ctx, void *left, const void *right)
{
    (void)ctx;
    float l = *(float *)left, r = *(const float *)right;
    if (l == l && (r != r || r > l))
        *(float *)left = r;
    return 0;
}

static int argmax_leaf(void *ctx, int64_t start, int64_t stop, void *acc)
{
    arg_acc *a = acc;
    a->index = start + argmax_run((const float *)ctx + start, stop - start, &a->value);
    return 0;
}

static int argmax_merge(void *ctx, void *left, const void *right)
{
    (void)ctx;
    /* left holds the earlier indices, so it keeps a tie: the first maximum wins */
    arg_acc *l = left;
    const arg_acc *r = right;
    if (l->value == l->value && (r->value != r->value || r->value > l->value))
        *l = *r;
    return 0;
}

/* The reduction of one contiguous run of len elements (len >= 1 for max and argmax). */
static int sum_long(const float *x, int64_t len, float *out)
{
    double s = 0.0;
    int rc = pyrt_parallel_reduce(len, LEAF, sizeof s, sum_leaf, sum_merge, (void *)x, &s);
    *out = (float)s;
    return rc;
}

static int max_long(const float *x, int64_t len, float *out)
{
    return pyrt_parallel_reduce(len, LEAF, sizeof(float), max_leaf, max_merge, (void *)x, out);
}

static int argmax_long(const float *x, int64_t len, int64_t *out)
{
    arg_acc a = {0.0f, 0};
    int rc = pyrt_parallel_reduce(len, LEAF, sizeof a, argmax_leaf, argmax_merge, (void *)x, &a);
    *out = a.index;
    return rc;
}

/* ---- column reductions: out[j] over x[k * inner + j], k = 0 .. len-1, j < w ------------- */

__attribute__((target_clones("avx2", "default")))
static void sum_cols(const float *x, float *out, int64_t len, int64_t inner, int64_t w)
{
    double d[COLS];
    float a[COLS];
    for (int64_t j = 0; j < w; j++)
        d[j] = 0.0;
    for (int64_t k0 = 0; k0 < len; k0 += KBLOCK) {
        int64_t k1 = len - k0 < KBLOCK ? len : k0 + KBLOCK;
        for (int64_t j = 0; j < w; j++)
            a[j] = 0.0f;
        for (int64_t k = k0; k < k1; k++) {
            const float *row = x + k * inner;
            for (int64_t j = 0; j < w; j++)
                a[j] += row[j];
        }
        for (int64_t j = 0; j < w; j++)
            d[j] += (double)a[j];
    }
    for (int64_t j = 0; j < w; j++)
        out[j] = (float)d[j];
}

__attribute__((target_clones("avx2", "default")))
static void max_cols(const float *x, float *out, int64_t len, int64_t inner, int64_t w)
{
    memmove(out, x, (size_t)w * sizeof *out); /* out may be x when len == 1 */
    for (int64_t k = 1; k < len; k++) {
        const float *row = x + k * inner;
        for (int64_t j = 0; j < w; j++) {
            /* a NaN in out stays: nothing compares above it and v != v is false */
            float v = row[j], m = out[j];
            out[j] = (v > m || v != v) ? v : m;
        }
    }
}

static void argmax_cols(const float *x, int64_t *out, int64_t len, int64_t inner, int64_t w)
{
    float best[COLS];
    memcpy(best, x, (size_t)w * sizeof *best);
    for (int64_t j = 0; j < w; j++)
        out[j] = 0;
    for (int64_t k = 1; k < len; k++) {
        const float *row = x + k * inner;
        for (int64_t j = 0; j < w; j++) {
            /* strictly greater, or the first NaN: earlier indices win ties */
            float v = row[j], m = best[j];
            bool take = v > m || (v != v && m == m);
            best[j] = take ? v : m;
            out[j] = take ? k : out[j];
        }
    }
}

/* ---- the parallel loops ---------------------------------------------------------------- */

enum reduce_op { OP_SUM, OP_MAX, OP_ARGMAX };

typedef struct reduce_job {
    enum reduce_op op;
    const float *x;
    void *out;
    int64_t len, inner, blocks; /* blocks: column blocks per outer index */
} reduce_job;

/* One contiguous row o of x into out[o]. */
static int reduce_row(const reduce_job *jb, int64_t o)
{
    const float *row = jb->x + o * jb->len;
    switch (jb->op) {
    case OP_SUM:
        return sum_long(row, jb->len, (float *)jb->out + o);
    case OP_MAX:
        return max_long(row, jb->len, (float *)jb->out + o);
    default:
        return argmax_long(row, jb->len, (int64_t *)jb->out + o);
    }
}

static int rows_body(void *ctx, int64_t start, int64_t stop)
{
    const reduce_job *jb = ctx;
    for (int64_t o = start; o < stop; o++) {
        int rc = reduce_row(jb, o);
        if (rc)
            return rc;
    }
    return 0;
}

/* Tasks t = o * blocks + b: columns [b * COLS, b * COLS + w) of outer index o. */
static int cols_body(void *ctx, int64_t start, int64_t stop)
{
    const reduce_job *jb = ctx;
    for (int64_t t = start; t < stop; t++) {
        int64_t o = t / jb->blocks, j0 = (t % jb->blocks) * COLS;
        int64_t w = jb->inner - j0 < COLS ? jb->inner - j0 : COLS;
        const float *x = jb->x + o * jb->len * jb->inner + j0;
        int64_t at = o * jb->inner + j0;
        switch (jb->op) {
        case OP_SUM:
            sum_cols(x, (float *)jb->out + at, jb->len, jb->inner, w);
            break;
        case OP_MAX:
            max_cols(x, (float *)jb->out + at, jb->len, jb->inner, w);
            break;
        default:
            argmax_cols(x, (int64_t *)jb->out + at, jb->len, jb->inner, w);
            break;
        }
    }
    return 0;
}

static int reduce(enum reduce_op op, const float *x, void *out, int64_t outer, int64_t len,
                  int64_t inner)
{
    if (outer < 0 || len < 0 || inner < 0)
        return PYRT_EINVAL;
    if (outer == 0 || inner == 0)
        return PYRT_OK;
    if (!out || (len > 0 && !x))
        return PYRT_EINVAL;
    if (len == 0) {
        if (op != OP_SUM)
            return PYRT_EINVAL; /* the max of nothing is undefined */
        memset(out, 0, (size_t)(outer * inner) * sizeof(float));
        return PYRT_OK;
    }
    reduce_job jb = {op, x, out, len, inner, (inner + COLS - 1) / COLS};
    if (inner == 1) {
        if (outer == 1)
            return reduce_row(&jb, 0);
        return pyrt_parallel_for(outer, loop_grain(len), rows_body, &jb);
    }
    int64_t w = inner < COLS ? inner : COLS;
    return pyrt_parallel_for(outer * jb.blocks, loop_grain(len * w), cols_body, &jb);
}

int pyrt_sum(const float *x, float *out, int64_t outer, int64_t len, int64_t inner)
{
    return reduce(OP_SUM, x, out, outer, len, inner);
}

int pyrt_max(const float *x, float *out, int64_t outer, int64_t len, int64_t inner)
{
    return reduce(OP_MAX, x, out, outer, len, inner);
}

int pyrt_argmax(const float *x, int64_t *out, int64_t outer, int64_t len, int64_t inner)
{
    return reduce(OP_ARGMAX, x, out, outer, len, inner);
}
