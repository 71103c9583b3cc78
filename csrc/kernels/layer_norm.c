/*
 * layer_norm.c - layer normalisation of x [rows, m] row by row (pyrt.h).
 *
 * Each row of m values (the trailing normalized_shape of PyTorch's layer_norm, flattened) is
 * centred on its own mean and scaled by its own inverse standard deviation, then by the
 * elementwise weight and bias of m values each:
 *
 *   forward    mean = sum(x) / m, var = sum((x - mean)^2) / m (biased), invstd =
 *              1 / sqrt(var + eps); y = (x - mean) * invstd * w + b
 *   backward   with g = dy * w, per row A = sum(g) and B = sum(g * (x - mean)):
 *              dx = invstd * g - invstd * A / m - (x - mean) * invstd^3 * B / m;
 *              over the rows, dw = sum(dy * (x - mean) * invstd) and db = sum(dy)
 *
 * Accuracy. A row's sums take float32 terms in blocks: eight lanes each add eight terms in
 * float (a fixed tree), then that block sum goes into the lane's double sum. So the rounding
 * of a sum is that of eight float additions whatever m is (a float sum along the row would
 * err in proportion to m), and the passes run about twice as fast as with every term
 * converted to double, the conversions' cost on a row read from L1 (measured on AVX2). The
 * mean is summed about the row's first value (see forward_rows), so its error follows the
 * spread of the values rather than their distance from zero; the squares are taken about the
 * float32 mean the output is centred on, with no cancellation, and the rounding of that mean
 * is taken off in double (var = sum(d^2) / m - (mean - mean32)^2).
 *
 * Parallelism and determinism. The forward pass is a parallel loop over rows; one task
 * handles a row whole, so its statistics do not depend on who ran it. The backward pass cuts
 * the rows into row_groups(rows, m) fixed groups (from the shape alone), a task each: a group
 * takes its rows four at a time, computes their sums A and B, writes their dx, and adds their
 * dy and dy * xhat, four rows summed in float, into its own double vectors of m column sums.
 * The groups' vectors are then added in group order, column by column in parallel. A row of
 * SPLIT values or more is itself cut: its sums become a pyrt_parallel_reduce over leaves of
 * LEAF values (fixed by m), its elementwise passes a parallel loop over its columns (each
 * column's arithmetic is the same whoever runs it). So every output is bitwise the same at
 * any thread count.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "pyrt.h"
#include "simd_math.h"

/* The elementwise bodies below are compiled twice, for AVX2+FMA (chosen where the CPU has
 * them) and for the baseline instruction set, as in batch_norm.c; the row sums have AVX2 code
 * of their own (row_sums_avx2). */
#define LN_INLINE static inline __attribute__((always_inline))
#if SIMD_HAVE_X86
#define LN_DISPATCHED(ret, name, params, args)                                                \
    SIMD_AVX2 static ret name##_avx2 params { return name##_body args; }                    \
    static ret name##_generic params { return name##_body args; }                           \
    static ret name params                                                                    \
    {                                                                                         \
        return simd_cpu_has_avx2_fma() ? name##_avx2 args : name##_generic args;              \
    }
#else
#define LN_DISPATCHED(ret, name, params, args)                                                \
    static ret name params { return name##_body args; }
#endif

/* Values a loop chunk should hold (rows per chunk: CHUNK_VALUES / m, at least one). */
#define CHUNK_VALUES 8192
/* Rows of this many values or more are split into leaves of LEAF values. */
#define SPLIT (1 << 16)
#define LEAF 16384
/* The backward pass's groups of rows: at most ROW_GROUPS_MAX, of CHUNK_VALUES values at
 * least, whose column sums take at most ROW_SUMS_MAX doubles in all (but one group always). */
#define ROW_GROUPS_MAX 64
#define ROW_SUMS_MAX (1 << 20)
/* Rows taken together: the forward pass runs each step over such a set (forward_rows), and
 * the backward pass adds their column sums at once, their terms summed in float as a tree,
 * then added in double (one row at a time, the loads and stores of the double sums bound the
 * pass, as batch_norm.c found for its rows of features). */
#define ROWS_AT_ONCE 4

enum { SUM_X, SUM_SQUARES, SUM_GRADS };

/* What a row's sums read: one row of x (and dy), the weight (NULL: ones), and the float32
 * mean the squares and the gradient sums centre on. */
typedef struct ln_row {
    const float *x, *dy, *w;
    float mean;
    float shift; /* the sum of x is a sum of x - shift: see forward_rows */
    int kind;
} ln_row;

/* A row's sums run in blocks of LANES * BLOCK terms: lane l of a block adds its BLOCK terms
 * k = q + t * LANES + l (t < BLOCK) in float, as a fixed tree, and that goes into double lane
 * l; at the end the double lanes are added in a fixed tree. A partial block at the end adds
 * its terms one by one, in lane (k - q) mod LANES. The portable code and the AVX2 code below
 * take the same blocks, lanes and trees (the AVX2 code may fuse a product into an addition). */
#define LANES 8
#define BLOCK 8

/* Term t of lane l: T(t) names it for t < BLOCK. */
#define TREE8(T) ((((T(0)) + (T(1))) + ((T(2)) + (T(3)))) + (((T(4)) + (T(5))) + ((T(6)) + (T(7)))))

#define X_TERM(t) (x[q + (t) * LANES + l] - c)
#define SQUARE_TERM(t) ((x[q + (t) * LANES + l] - c) * (x[q + (t) * LANES + l] - c))
#define G_TERM(t) (dy[q + (t) * LANES + l] * (w ? w[q + (t) * LANES + l] : 1.0f))
#define GX_TERM(t) (G_TERM(t) * (x[q + (t) * LANES + l] - c))

/* The sums of row r's terms [q, hi) into the double lanes s0 (and s1, for the gradient). */
static void lane_sums(const ln_row *r, int64_t q, int64_t hi, double *s0, double *s1)
{
    const float *x = r->x, *dy = r->dy, *w = r->w;
    const float c = r->kind == SUM_X ? r->shift : r->mean;
    for (; q + LANES * BLOCK <= hi; q += LANES * BLOCK)
        for (int l = 0; l < LANES; l++) {
            if (r->kind == SUM_X) {
                s0[l] += (double)TREE8(X_TERM);
            } else if (r->kind == SUM_SQUARES) {
                s0[l] += (double)TREE8(SQUARE_TERM);
            } else {
                s0[l] += (double)TREE8(G_TERM);
                s1[l] += (double)TREE8(GX_TERM);
            }
        }
    for (int l = 0; q < hi; q++, l = (l + 1) % LANES) {
        if (r->kind == SUM_X) {
            s0[l] += (double)(x[q] - c);
        } else if (r->kind == SUM_SQUARES) {
            s0[l] += (double)((x[q] - c) * (x[q] - c));
        } else {
            const float g = dy[q] * (w ? w[q] : 1.0f);
            s0[l] += (double)g;
            s1[l] += (double)(g * (x[q] - c));
        }
    }
}

static inline double lane_total(const double *s)
{
    return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

#if SIMD_HAVE_X86
/* The eight floats of v added into the four-lane doubles lo and hi. */
SIMD_AVX2 static inline void add_wide(__m256 v, __m256d *lo, __m256d *hi)
{
    *lo = _mm256_add_pd(*lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    *hi = _mm256_add_pd(*hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

#define V_TREE8(v)                                                                            \
    _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(v[0], v[1]), _mm256_add_ps(v[2], v[3])),       \
                  _mm256_add_ps(_mm256_add_ps(v[4], v[5]), _mm256_add_ps(v[6], v[7])))

/* Lanes 0..r-1 set, all of them for r >= 8. */
SIMD_AVX2 static inline __m256 lanes_below(int64_t r)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(r < 8 ? (int)r : 8), lane));
}

/* lane_total of the double lanes lo (0-3) and hi (4-7), in registers. */
SIMD_AVX2 static inline double vector_total(__m256d lo, __m256d hi)
{
    const __m256d t = _mm256_add_pd(lo, hi); /* s0 + s4, s1 + s5, s2 + s6, s3 + s7 */
    const __m128d u = _mm_add_pd(_mm256_castpd256_pd128(t), _mm256_extractf128_pd(t, 1));
    return _mm_cvtsd_f64(_mm_add_sd(u, _mm_unpackhi_pd(u, u)));
}

/* row_leaf's sums with lane_sums' blocks, lanes and trees, a vector of lanes at a time (gcc
 * leaves the two sums of the gradient side by side unvectorised). The partial block goes
 * eight terms at a time too, the lanes past hi loaded as zeros and their terms cleared, so
 * that they add nothing. */
SIMD_AVX2 static void row_sums_avx2(const ln_row *r, int64_t lo, int64_t hi, double *out)
{
    const float *x = r->x, *dy = r->dy, *w = r->w;
    const __m256 c = _mm256_set1_ps(r->kind == SUM_X ? r->shift : r->mean);
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, b0 = a0, b1 = a0;
    int64_t q = lo;
    if (r->kind == SUM_GRADS) {
        for (; q + LANES * BLOCK <= hi; q += LANES * BLOCK) {
            __m256 u[BLOCK], v[BLOCK];
            for (int t = 0; t < BLOCK; t++) {
                const int64_t k = q + t * LANES;
                u[t] = _mm256_loadu_ps(dy + k);
                if (w)
                    u[t] = _mm256_mul_ps(u[t], _mm256_loadu_ps(w + k));
                v[t] = _mm256_mul_ps(u[t], _mm256_sub_ps(_mm256_loadu_ps(x + k), c));
            }
            add_wide(V_TREE8(u), &a0, &a1);
            add_wide(V_TREE8(v), &b0, &b1);
        }
        for (; q < hi; q += LANES) {
            const __m256 in = lanes_below(hi - q);
            const __m256i mask = _mm256_castps_si256(in);
            __m256 g = _mm256_maskload_ps(dy + q, mask);
            if (w)
                g = _mm256_mul_ps(g, _mm256_maskload_ps(w + q, mask));
            const __m256 d = _mm256_sub_ps(_mm256_maskload_ps(x + q, mask), c);
            add_wide(_mm256_and_ps(g, in), &a0, &a1);
            add_wide(_mm256_and_ps(_mm256_mul_ps(g, d), in), &b0, &b1);
        }
    } else {
        const int squares = r->kind == SUM_SQUARES;
        for (; q + LANES * BLOCK <= hi; q += LANES * BLOCK) {
            __m256 u[BLOCK];
            for (int t = 0; t < BLOCK; t++) {
                const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + q + t * LANES), c);
                u[t] = squares ? _mm256_mul_ps(d, d) : d;
            }
            add_wide(V_TREE8(u), &a0, &a1);
        }
        for (; q < hi; q += LANES) {
            const __m256 in = lanes_below(hi - q);
            const __m256 d = _mm256_sub_ps(_mm256_maskload_ps(x + q, _mm256_castps_si256(in)), c);
            add_wide(_mm256_and_ps(squares ? _mm256_mul_ps(d, d) : d, in), &a0, &a1);
        }
    }
    out[0] = vector_total(a0, a1);
    out[1] = vector_total(b0, b1);
}
#endif

/* A leaf of a row's sums: values [lo, hi) into acc[0] (and acc[1] for SUM_GRADS). */
static int row_leaf(void *ctx, int64_t lo, int64_t hi, void *acc)
{
    const ln_row *r = ctx;
    double *out = acc;
#if SIMD_HAVE_X86
    if (simd_cpu_has_avx2_fma()) {
        row_sums_avx2(r, lo, hi, out);
        return 0;
    }
#endif
    double s0[LANES] = {0}, s1[LANES] = {0};
    lane_sums(r, lo, hi, s0, s1);
    out[0] = lane_total(s0);
    out[1] = lane_total(s1);
    return 0;
}

static int add_pair(void *ctx, void *left, const void *right)
{
    (void)ctx;
    double *l = left;
    const double *r = right;
    l[0] += r[0];
    l[1] += r[1];
    return 0;
}

/* A row's sums into out[0] and out[1]: one leaf for a row under SPLIT values, else a
 * reduction over leaves of LEAF values. */
static int row_sums(ln_row *r, int64_t m, double *out)
{
    if (m < SPLIT)
        return row_leaf(r, 0, m, out);
    return pyrt_parallel_reduce(m, LEAF, 2 * sizeof(double), row_leaf, add_pair, r, out);
}

/* ---- forward ---------------------------------------------------------------------------- */

typedef struct ln_forward {
    int64_t rows, m;
    const float *x, *w, *b;
    double eps;
    float *y, *mean, *invstd;
    int64_t row; /* the row an elementwise pass over split columns writes */
} ln_forward;

/* y = (x - mean) * invstd * w + b over columns [lo, hi) of row j->row. */
LN_INLINE int normalise_columns_body(void *ctx, int64_t lo, int64_t hi)
{
    const ln_forward *j = ctx;
    const int64_t at = j->row * j->m;
    const float *x = j->x + at;
    float *y = j->y + at;
    const float *restrict w = j->w, *restrict b = j->b;
    const float mu = j->mean[j->row], inv = j->invstd[j->row];
    if (w && b)
        for (int64_t k = lo; k < hi; k++)
            y[k] = (x[k] - mu) * inv * w[k] + b[k];
    else if (w)
        for (int64_t k = lo; k < hi; k++)
            y[k] = (x[k] - mu) * inv * w[k];
    else if (b)
        for (int64_t k = lo; k < hi; k++)
            y[k] = (x[k] - mu) * inv + b[k];
    else
        for (int64_t k = lo; k < hi; k++)
            y[k] = (x[k] - mu) * inv;
    return 0;
}

LN_DISPATCHED(int, normalise_columns, (void *ctx, int64_t lo, int64_t hi), (ctx, lo, hi))

/* Rows [r0, r1), ROWS_AT_ONCE at a time, each step over the set before the next: their means,
 * their variances, then their outputs. A row's steps depend on each other, the rows of a set
 * do not, so the processor overlaps their latencies (one row at a time, rows of 64 values
 * took 1.3 times as long). */
static int forward_rows(void *ctx, int64_t r0, int64_t r1)
{
    const ln_forward *all = ctx;
    const int64_t m = all->m;
    for (int64_t i0 = r0; i0 < r1; i0 += ROWS_AT_ONCE) {
        const int nr = r1 - i0 < ROWS_AT_ONCE ? (int)(r1 - i0) : ROWS_AT_ONCE;
        ln_row r[ROWS_AT_ONCE];
        double mean[ROWS_AT_ONCE], s[2];
        for (int k = 0; k < nr; k++) {
            /* the mean as shift + sum(x - shift) / m, the shift the row's first value: the
             * float terms and their block sums then round with the spread of the values
             * rather than their distance from zero. A first value that is an infinity or
             * NaN gives the shift 0, and the sum carries it: the mean is inf or NaN, as the
             * plain sum's. */
            const float *x = all->x + (i0 + k) * m;
            r[k] = (ln_row){.x = x, .shift = isfinite(x[0]) ? x[0] : 0.0f, .kind = SUM_X};
            int rc = row_sums(&r[k], m, s);
            if (rc)
                return rc;
            mean[k] = r[k].shift + s[0] / (double)m;
            r[k].mean = (float)mean[k];
            r[k].kind = SUM_SQUARES;
        }
        for (int k = 0; k < nr; k++) {
            /* the squares about the float32 mean y is centred on, less the square of its
             * rounding: sum((x - mean32)^2) / m = var + (mean - mean32)^2 */
            int rc = row_sums(&r[k], m, s);
            if (rc)
                return rc;
            const double rounding = mean[k] - (double)r[k].mean;
            double var = s[0] / (double)m - rounding * rounding;
            var = var < 0.0 ? 0.0 : var; /* rounding below zero; a NaN stays */
            all->mean[i0 + k] = r[k].mean;
            all->invstd[i0 + k] = (float)(1.0 / sqrt(var + all->eps));
        }
        for (int k = 0; k < nr; k++) {
            ln_forward j = *all;
            j.row = i0 + k;
            int rc = m < SPLIT ? normalise_columns(&j, 0, m)
                               : pyrt_parallel_for(m, LEAF, normalise_columns, &j);
            if (rc)
                return rc;
        }
    }
    return 0;
}

static int check_sizes(int64_t rows, int64_t m)
{
    if (rows < 0 || m < 0 || (m > 0 && rows > INT64_MAX / m))
        return PYRT_EINVAL;
    return PYRT_OK;
}

static int64_t row_grain(int64_t m)
{
    return m >= CHUNK_VALUES ? 1 : CHUNK_VALUES / m;
}

int pyrt_layer_norm_forward(int64_t rows, int64_t m, const float *x, const float *weight,
                            const float *bias, double eps, float *y, float *save_mean,
                            float *save_invstd)
{
    int rc = check_sizes(rows, m);
    if (rc)
        return rc;
    if (rows == 0)
        return PYRT_OK;
    if (!save_mean || !save_invstd || (m > 0 && (!x || !y)))
        return PYRT_EINVAL;
    if (m == 0) { /* no values: the statistics of nothing, 0 / 0 */
        for (int64_t i = 0; i < rows; i++)
            save_mean[i] = save_invstd[i] = NAN;
        return PYRT_OK;
    }
    ln_forward j = {.rows = rows, .m = m, .x = x, .w = weight, .b = bias, .eps = eps, .y = y,
                    .mean = save_mean, .invstd = save_invstd};
    return pyrt_parallel_for(rows, row_grain(m), forward_rows, &j);
}

/* ---- backward --------------------------------------------------------------------------- */

static int64_t row_groups(int64_t rows, int64_t m)
{
    const int64_t per_group = row_grain(m); /* rows, at least */
    int64_t groups = (rows + per_group - 1) / per_group;
    if (groups > ROW_GROUPS_MAX)
        groups = ROW_GROUPS_MAX;
    if (groups > ROW_SUMS_MAX / (2 * m))
        groups = ROW_SUMS_MAX / (2 * m) > 1 ? ROW_SUMS_MAX / (2 * m) : 1;
    return groups;
}

typedef struct ln_backward {
    int64_t rows, m, groups;
    const float *x, *dy, *w, *mean, *invstd;
    float *dx;
    double *sums;      /* per group, 2 m: column sums of dy, then of dy * xhat (NULL: none) */
    float *dweight, *dbias;
    /* the rows a pass over the columns handles: [i0, i0 + nr), their dx coefficients, and
     * the column sums of their group (NULL: not wanted) */
    int64_t i0;
    int nr;
    float a[ROWS_AT_ONCE], b[ROWS_AT_ONCE], k[ROWS_AT_ONCE];
    double *s0, *s1;
} ln_backward;

/* A full set of four rows, x and dy from row i0 on (rows m apart), over columns [lo, hi) in
 * one pass: with_dx, their dx; with_sums, their dy and dy * xhat summed in float into the
 * group's column sums s0 and s1. The flags are constants where it is inlined, so that each
 * use is one loop; the arrays are parameters so that their restrict holds. */
LN_INLINE void four_rows(const ln_backward *j, int64_t lo, int64_t hi, const float *restrict x,
                         const float *restrict dy, const float *restrict w,
                         float *restrict dx, double *restrict s0, double *restrict s1,
                         int with_w, int with_dx, int with_sums)
{
    const int64_t m = j->m, i0 = j->i0;
    float mu[ROWS_AT_ONCE], in[ROWS_AT_ONCE], a[ROWS_AT_ONCE], b[ROWS_AT_ONCE], k[ROWS_AT_ONCE];
    for (int r = 0; r < ROWS_AT_ONCE; r++) {
        mu[r] = j->mean[i0 + r], in[r] = j->invstd[i0 + r];
        a[r] = j->a[r], b[r] = j->b[r], k[r] = j->k[r];
    }
    for (int64_t q = lo; q < hi; q++) {
        float c[ROWS_AT_ONCE], d[ROWS_AT_ONCE];
        for (int r = 0; r < ROWS_AT_ONCE; r++) {
            c[r] = x[r * m + q] - mu[r];
            d[r] = dy[r * m + q];
        }
        if (with_dx) {
            const float wq = with_w ? w[q] : 1.0f;
            for (int r = 0; r < ROWS_AT_ONCE; r++)
                dx[r * m + q] = d[r] * wq * a[r] + c[r] * b[r] + k[r];
        }
        if (with_sums) {
            s0[q] += (d[0] + d[1]) + (d[2] + d[3]);
            s1[q] += (d[0] * (c[0] * in[0]) + d[1] * (c[1] * in[1]))
                     + (d[2] * (c[2] * in[2]) + d[3] * (c[3] * in[3]));
        }
    }
}

/* One row, x and dy of row i0 + r, over columns [lo, hi) in one pass: with_dx, its dx;
 * with_sums, its dy and dy * xhat added into the column sums. As four_rows. */
LN_INLINE void one_row(const ln_backward *j, int r, int64_t lo, int64_t hi,
                       const float *restrict x, const float *restrict dy,
                       const float *restrict w, float *restrict dx, double *restrict s0,
                       double *restrict s1, int with_w, int with_dx, int with_sums)
{
    const float mu = j->mean[j->i0 + r], inv = j->invstd[j->i0 + r];
    const float a = j->a[r], b = j->b[r], k = j->k[r];
    for (int64_t q = lo; q < hi; q++) {
        const float c = x[q] - mu;
        if (with_dx)
            dx[q] = dy[q] * (with_w ? w[q] : 1.0f) * a + c * b + k;
        if (with_sums) {
            s0[q] += dy[q];
            s1[q] += dy[q] * (c * inv);
        }
    }
}

/* The variants of a loop over columns: BODY(with_w, with_dx, with_sums) for the flags that
 * dx, s0 and w give, each a loop of its own. */
#define BY_FLAGS(BODY)                                                                        \
    do {                                                                                      \
        if (dx && s0 && w)                                                                    \
            BODY(1, 1, 1);                                                                    \
        else if (dx && s0)                                                                    \
            BODY(0, 1, 1);                                                                    \
        else if (dx && w)                                                                     \
            BODY(1, 1, 0);                                                                    \
        else if (dx)                                                                          \
            BODY(0, 1, 0);                                                                    \
        else                                                                                  \
            BODY(0, 0, 1);                                                                    \
    } while (0)

/* four_rows and one_row with the flags of BY_FLAGS, in backward_columns_body */
#define FOUR(with_w, with_dx, with_sums)                                                      \
    four_rows(j, lo, hi, x, dy, w, dx, s0, s1, with_w, with_dx, with_sums)
#define ONE(with_w, with_dx, with_sums)                                                       \
    one_row(j, r, lo, hi, x + r * m, dy + r * m, w, dx ? dx + r * m : NULL, s0, s1, with_w,    \
            with_dx, with_sums)

/* Columns [lo, hi) of rows [i0, i0 + nr): dx = g * a + (x - mean) * b + k with g = dy * w,
 * and their dy and dy * xhat into the group's column sums s0 and s1 (NULL: not wanted), the
 * four rows of a full set summed in float first. */
LN_INLINE int backward_columns_body(void *ctx, int64_t lo, int64_t hi)
{
    const ln_backward *j = ctx;
    const int64_t m = j->m, at = j->i0 * m;
    const float *x = j->x + at, *dy = j->dy + at, *w = j->w;
    float *dx = j->dx ? j->dx + at : NULL;
    double *s0 = j->s0, *s1 = j->s1;
    if (j->nr == ROWS_AT_ONCE) {
        BY_FLAGS(FOUR);
        return 0;
    }
    for (int r = 0; r < j->nr; r++)
        BY_FLAGS(ONE);
    return 0;
}

LN_DISPATCHED(int, backward_columns, (void *ctx, int64_t lo, int64_t hi), (ctx, lo, hi))

/* Groups [g0, g1): each takes its rows ROWS_AT_ONCE at a time (the last set may be shorter),
 * their sums A and B first (when dx is wanted), then one pass over the columns. */
static int backward_groups(void *ctx, int64_t g0, int64_t g1)
{
    const ln_backward *all = ctx;
    const int64_t rows = all->rows, m = all->m, groups = all->groups;
    for (int64_t g = g0; g < g1; g++) {
        ln_backward j = *all;
        if (all->sums) {
            j.s0 = all->sums + 2 * m * g, j.s1 = j.s0 + m;
            for (int64_t q = 0; q < 2 * m; q++)
                j.s0[q] = 0.0;
        }
        const int64_t end = rows * (g + 1) / groups;
        for (j.i0 = rows * g / groups; j.i0 < end; j.i0 += j.nr) {
            j.nr = end - j.i0 < ROWS_AT_ONCE ? (int)(end - j.i0) : ROWS_AT_ONCE;
            for (int r = 0; j.dx && r < j.nr; r++) {
                const int64_t i = j.i0 + r;
                ln_row row = {.x = j.x + i * m, .dy = j.dy + i * m, .w = j.w,
                              .mean = j.mean[i], .kind = SUM_GRADS};
                double s[2];
                int rc = row_sums(&row, m, s);
                if (rc)
                    return rc;
                const double inv = j.invstd[i];
                j.a[r] = (float)inv;
                j.b[r] = (float)(-inv * inv * inv * s[1] / (double)m);
                j.k[r] = (float)(-inv * s[0] / (double)m);
            }
            int rc = m < SPLIT ? backward_columns(&j, 0, m)
                               : pyrt_parallel_for(m, LEAF, backward_columns, &j);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* Columns [c0, c1) of dbias and dweight: the groups' column sums added in group order. */
static int add_groups(void *ctx, int64_t c0, int64_t c1)
{
    const ln_backward *j = ctx;
    const int64_t m = j->m;
    for (int64_t q = c0; q < c1; q++) {
        double db = 0.0, dw = 0.0;
        for (int64_t g = 0; g < j->groups; g++) {
            db += j->sums[2 * m * g + q];
            dw += j->sums[2 * m * g + m + q];
        }
        if (j->dbias)
            j->dbias[q] = (float)db;
        if (j->dweight)
            j->dweight[q] = (float)dw;
    }
    return 0;
}

int pyrt_layer_norm_backward(int64_t rows, int64_t m, const float *x, const float *dy,
                             const float *weight, const float *save_mean,
                             const float *save_invstd, float *dx, float *dweight, float *dbias)
{
    int rc = check_sizes(rows, m);
    if (rc)
        return rc;
    if (m == 0)
        return PYRT_OK;
    if (rows == 0) { /* sums over no rows */
        for (int64_t q = 0; q < m; q++) {
            if (dweight)
                dweight[q] = 0.0f;
            if (dbias)
                dbias[q] = 0.0f;
        }
        return PYRT_OK;
    }
    if (!x || !dy || !save_mean || !save_invstd)
        return PYRT_EINVAL;
    if (!dx && !dweight && !dbias)
        return PYRT_OK;
    ln_backward j = {.rows = rows, .m = m, .groups = row_groups(rows, m), .x = x, .dy = dy,
                     .w = weight, .mean = save_mean, .invstd = save_invstd, .dx = dx,
                     .dweight = dweight, .dbias = dbias};
    if (dweight || dbias) {
        j.sums = pyrt_buffer_alloc(2 * (size_t)m * (size_t)j.groups * sizeof(double));
        if (!j.sums)
            return PYRT_ENOMEM;
    }
    rc = pyrt_parallel_for(j.groups, 1, backward_groups, &j);
    if (!rc && j.sums)
        rc = pyrt_parallel_for(m, CHUNK_VALUES / (j.groups + 1) + 1, add_groups, &j);
    pyrt_buffer_free(j.sums);
    return rc;
}
