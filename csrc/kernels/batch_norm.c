/*
 * batch_norm.c - batch normalisation of x [n, c, m] channel by channel (pyrt.h).
 *
 * A channel's values are its n planes of m (m = h * w for images, 1 for rows of features),
 * one plane in every image. Three kinds of pass, and per-channel arithmetic in double between
 * them:
 *
 *   statistics   per channel the mean and the biased variance of its n * m values: for rows
 *                of features in one reduction of the values and their squares about one of
 *                the channel's own values, for planes in two (the mean, then the squares
 *                about it); little or no cancellation however far the values sit from zero
 *                (see statistics())
 *   forward      y = (x - mean[ch]) * scale[ch] + shift[ch], scale = weight * invstd and
 *                shift = bias (x is centred before it is scaled, as in PyTorch)
 *   gradient     per channel sum(dy) and sum(dy * (x - mean)): dbias, and dweight times
 *                sqrt(var + eps); then dx = dy * a[ch] + (x - mean[ch]) * b[ch] + k[ch], whose
 *                b and k carry those sums when the statistics were the batch's own
 *
 * Parallelism and determinism. The channels, in blocks of BLOCK, are a parallel loop; inside
 * a block, its planes are a parallel reduction over the images with leaves of fixed ranges
 * (from n, c and m alone), each plane summed in eight lanes and then a fixed tree, the leaves
 * and planes added in double. So a layer of few channels still uses every thread. Rows of
 * features (m == 1) are read row by row instead (row_groups): fixed groups of rows, each
 * summed in order, four rows at a time (ROWS_AT_ONCE), into its own vector of per-channel
 * sums, then the groups' vectors added in group order. Every statistic and gradient is bitwise the same at any thread count. The
 * elementwise passes are a parallel loop over the planes (over the rows, for rows of
 * features).
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "pyrt.h"
#include "simd_math.h"

/* The leaf and elementwise bodies are compiled twice, for AVX2+FMA (chosen where the CPU has
 * them) and for the baseline instruction set: with eight lanes the rows of features and the
 * planes run about twice as fast. */
#define BN_INLINE static inline __attribute__((always_inline))
#if SIMD_HAVE_X86
#define BN_DISPATCHED(name, params, args)                                                     \
    SIMD_AVX2 static int name##_avx2 params { return name##_body args; }                    \
    static int name##_generic params { return name##_body args; }                           \
    static int name params                                                                    \
    {                                                                                         \
        return simd_cpu_has_avx2_fma() ? name##_avx2 args : name##_generic args;              \
    }
#else
#define BN_DISPATCHED(name, params, args)                                                     \
    static int name params { return name##_body args; }
#endif

/* Values a leaf of a reduction, or a chunk of an elementwise pass, should hold. */
#define CHUNK_VALUES 16384
/* Channels one reduction sums side by side: two doubles each fill PYRT_MAX_ACC. */
#define BLOCK 16

typedef struct bn_job {
    int64_t n, c, m;
    const float *x, *dy;
    const float *mean;  /* per channel (the statistics' second pass, the other passes) */
    const float *a, *b, *k; /* per-channel coefficients of the elementwise passes */
    float *out;
    double *sums;       /* per channel, two: what the reduction sums (one or two of them) */
    int64_t c0, nb;     /* the block of channels a reduction sums: [c0, c0 + nb) */
    int kind;           /* what a reduction sums */
} bn_job;

enum { SUM_X, SUM_SQUARES, SUM_GRADS, SUM_SHIFTED /* rows of features only */ };

/* total = the sum over k < m of TERM, in eight lanes by k mod 8 and then a fixed tree, in
 * double */
#define LANE_SUM(m, TERM)                                                                     \
    do {                                                                                      \
        float lane[8] = {0};                                                                  \
        int64_t q = 0;                                                                        \
        for (; q + 8 <= (m); q += 8)                                                          \
            for (int l = 0; l < 8; l++) {                                                     \
                const int64_t k = q + l;                                                      \
                lane[l] += (TERM);                                                            \
            }                                                                                 \
        for (int l = 0; q < (m); q++, l++) {                                                  \
            const int64_t k = q;                                                              \
            lane[l] += (TERM);                                                                \
        }                                                                                     \
        total = (((double)lane[0] + lane[4]) + ((double)lane[2] + lane[6]))                   \
                + (((double)lane[1] + lane[5]) + ((double)lane[3] + lane[7]));                \
    } while (0)

/* The sums of plane (i, ch) into out[0] (and out[1]). */
BN_INLINE void plane_sums(const bn_job *j, int64_t i, int64_t ch, double *out)
{
    const int64_t m = j->m;
    const float *x = j->x + (i * j->c + ch) * m;
    const float mu = j->mean ? j->mean[ch] : 0.0f;
    double total;
    if (j->kind == SUM_X) {
        LANE_SUM(m, x[k]);
        out[0] += total;
    } else if (j->kind == SUM_SQUARES) {
        LANE_SUM(m, (x[k] - mu) * (x[k] - mu));
        out[0] += total;
    } else {
        const float *dy = j->dy + (i * j->c + ch) * m;
        LANE_SUM(m, dy[k]);
        out[0] += total;
        LANE_SUM(m, dy[k] * (x[k] - mu));
        out[1] += total;
    }
}

/* The leaf of a block's reduction: images [i0, i1), two sums per channel of the block in acc,
 * each image added in turn. */
BN_INLINE int block_leaf_body(void *ctx, int64_t i0, int64_t i1, void *acc)
{
    const bn_job *j = ctx;
    const int64_t nb = j->nb, c0 = j->c0;
    double *out = acc;
    for (int64_t b = 0; b < 2 * nb; b++)
        out[b] = 0.0;
    for (int64_t i = i0; i < i1; i++)
        for (int64_t b = 0; b < nb; b++)
            plane_sums(j, i, c0 + b, out + 2 * b);
    return 0;
}

BN_DISPATCHED(block_leaf, (void *ctx, int64_t i0, int64_t i1, void *acc), (ctx, i0, i1, acc))

static int add_sums(void *ctx, void *left, const void *right)
{
    const bn_job *j = ctx;
    double *l = left;
    const double *r = right;
    for (int64_t b = 0; b < 2 * j->nb; b++)
        l[b] += r[b];
    return 0;
}

/* Reductions of blocks [b0, b1): j->sums[2 ch] (and [2 ch + 1]) for their channels. Each block
 * is a reduction over the images in leaves of about CHUNK_VALUES values. */
static int block_range(void *ctx, int64_t b0, int64_t b1)
{
    const bn_job *all = ctx;
    for (int64_t blk = b0; blk < b1; blk++) {
        bn_job j = *all;
        j.c0 = blk * BLOCK;
        j.nb = j.c - j.c0 < BLOCK ? j.c - j.c0 : BLOCK;
        const int64_t per_image = j.nb * j.m;
        const int64_t grain = per_image >= CHUNK_VALUES ? 1 : CHUNK_VALUES / per_image;
        int rc = pyrt_parallel_reduce(j.n, grain, 2 * (size_t)j.nb * sizeof(double),
                                      block_leaf, add_sums, &j, all->sums + 2 * j.c0);
        if (rc)
            return rc;
    }
    return 0;
}

/* Rows of features (m == 1): the rows in row_groups(n, c) groups of equal length but the
 * last. A block of BLOCK channels across the rows read a line of each row, 2 KB apart for 512
 * channels, and waited on every one: BatchNorm1d of [256, 512] took 1.4 times PyTorch's time
 * (1.2 with the block's sums kept in registers). Read row by row, each group adds a row's
 * values to its own vector of sums, a contiguous stream in and out of L1. The groups' vectors
 * take 2 c doubles each, so wide rows get fewer groups (at most ROW_SUMS_MAX doubles in all,
 * or one group), and the channels are cut into spans of SPAN_CHANNELS too: a task is a group's
 * rows over one span, so that a few wide rows still share out. */
#define ROW_GROUPS_MAX 64
#define ROW_SUMS_MAX (1 << 20)
#define SPAN_CHANNELS 4096

static int64_t row_groups(int64_t n, int64_t c)
{
    const int64_t rows = c >= CHUNK_VALUES ? 1 : CHUNK_VALUES / c; /* per group, at least */
    int64_t groups = (n + rows - 1) / rows;
    if (groups > ROW_GROUPS_MAX)
        groups = ROW_GROUPS_MAX;
    if (groups > 1 && groups > ROW_SUMS_MAX / (2 * c))
        groups = ROW_SUMS_MAX / (2 * c) > 1 ? ROW_SUMS_MAX / (2 * c) : 1;
    return groups;
}

/* Rows a pass adds to the vectors of sums at once: their terms summed in float, as a tree
 * (the planes sum whole planes in float lanes), then added in double. One row at a time,
 * every sum was loaded and stored back after every row, and those stores bounded the pass
 * (BatchNorm1d of [256, 512]: 38 of its 82 us); four rows each added in double then left
 * the conversions to double and the double additions bounding it. */
#define ROWS_AT_ONCE 4

/* s0[ch] (and, with TWO, s1[ch]) += TERM0 (and TERM1) of rows [i0, i1), for channels
 * [c0, c1). TERMn(r, l) is row r's term of channel l, reading x##r[l], mean[l] and, with DY,
 * dy##r[l]. */
#define ROW_SUMS(TWO, DY, TERM0, TERM1)                                                       \
    do {                                                                                      \
        int64_t i = i0;                                                                       \
        for (; i + ROWS_AT_ONCE <= i1; i += ROWS_AT_ONCE) {                                   \
            const float *restrict x0 = j->x + i * c, *restrict x1 = x0 + c;                   \
            const float *restrict x2 = x1 + c, *restrict x3 = x2 + c;                         \
            const float *restrict dy0 = DY ? j->dy + i * c : x0, *restrict dy1 = dy0 + c;     \
            const float *restrict dy2 = dy1 + c, *restrict dy3 = dy2 + c;                     \
            (void)dy0, (void)dy1, (void)dy2, (void)dy3, (void)x1, (void)x2, (void)x3;         \
            for (int64_t l = c0; l < c1; l++) {                                               \
                s0[l] += (TERM0(0, l) + TERM0(1, l)) + (TERM0(2, l) + TERM0(3, l));           \
                if (TWO)                                                                      \
                    s1[l] += (TERM1(0, l) + TERM1(1, l)) + (TERM1(2, l) + TERM1(3, l));       \
            }                                                                                 \
        }                                                                                     \
        for (; i < i1; i++) {                                                                 \
            const float *restrict x0 = j->x + i * c, *restrict dy0 = DY ? j->dy + i * c : x0; \
            (void)dy0;                                                                        \
            for (int64_t l = c0; l < c1; l++) {                                               \
                s0[l] += TERM0(0, l);                                                         \
                if (TWO)                                                                      \
                    s1[l] += TERM1(0, l);                                                     \
            }                                                                                 \
        }                                                                                     \
    } while (0)

#define X_TERM(r, l) x##r[l]
#define SQUARE_TERM(r, l) ((x##r[l] - mean[l]) * (x##r[l] - mean[l]))
#define SHIFTED_TERM(r, l) (x##r[l] - mean[l])
#define DY_TERM(r, l) dy##r[l]
#define DY_X_TERM(r, l) (dy##r[l] * (x##r[l] - mean[l]))

/* Tasks [t0, t1), task t the rows of group t / spans over the channels of span t % spans:
 * their sums, in order of the rows, into the group's vectors at j->sums + 2 c g (what the
 * reduction sums, and for the gradient sum(dy (x - mean)) beside it). */
BN_INLINE int row_group_range_body(void *ctx, int64_t t0, int64_t t1)
{
    const bn_job *j = ctx;
    const int64_t n = j->n, c = j->c, groups = row_groups(n, c);
    const int64_t spans = (c + SPAN_CHANNELS - 1) / SPAN_CHANNELS;
    const float *restrict mean = j->mean;
    for (int64_t t = t0; t < t1; t++) {
        const int64_t g = t / spans, c0 = t % spans * SPAN_CHANNELS;
        const int64_t c1 = c - c0 < SPAN_CHANNELS ? c : c0 + SPAN_CHANNELS;
        /* restrict: the sums are a buffer of their own, apart from x, dy and the mean */
        double *restrict s0 = j->sums + 2 * c * g, *restrict s1 = s0 + c;
        for (int64_t ch = c0; ch < c1; ch++)
            s0[ch] = s1[ch] = 0.0;
        const int64_t i0 = n * g / groups, i1 = n * (g + 1) / groups;
        if (j->kind == SUM_X)
            ROW_SUMS(0, 0, X_TERM, X_TERM);
        else if (j->kind == SUM_SQUARES)
            ROW_SUMS(0, 0, SQUARE_TERM, X_TERM);
        else if (j->kind == SUM_SHIFTED)
            ROW_SUMS(1, 0, SHIFTED_TERM, SQUARE_TERM);
        else
            ROW_SUMS(1, 1, DY_TERM, DY_X_TERM);
    }
    return 0;
}

BN_DISPATCHED(row_group_range, (void *ctx, int64_t t0, int64_t t1), (ctx, t0, t1))

/* sums[2 ch] (and [2 ch + 1]) for rows of features: the groups' tasks in parallel, then the
 * groups' vectors added in group order. */
static int reduce_rows(bn_job *j, double *sums)
{
    const int64_t c = j->c, groups = row_groups(j->n, c);
    const int64_t spans = (c + SPAN_CHANNELS - 1) / SPAN_CHANNELS;
    double *part = pyrt_buffer_alloc(2 * (size_t)c * (size_t)groups * sizeof(double));
    if (!part)
        return PYRT_ENOMEM;
    j->sums = part;
    int rc = pyrt_parallel_for(groups * spans, 1, row_group_range, j);
    /* into group 0's vectors, a group at a time (a vector loop), then out in pairs */
    for (int64_t g = 1; !rc && g < groups; g++) {
        const double *restrict from = part + 2 * c * g;
        double *restrict to = part;
        for (int64_t q = 0; q < 2 * c; q++)
            to[q] += from[q];
    }
    for (int64_t ch = 0; !rc && ch < c; ch++) {
        sums[2 * ch] = part[ch];
        sums[2 * ch + 1] = part[c + ch];
    }
    j->sums = sums;
    pyrt_buffer_free(part);
    return rc;
}

static int reduce_channels(bn_job *j, int kind, double *sums)
{
    j->kind = kind;
    if (j->m == 1)
        return reduce_rows(j, sums);
    j->sums = sums;
    return pyrt_parallel_for((j->c + BLOCK - 1) / BLOCK, 1, block_range, j);
}

/* Units [u0, u1) of the forward pass, out = (x - mean) * a + k per channel, or with dy of the
 * input gradient, out = dy * a + (x - mean) * b + k. A unit is a plane (u: image u / c,
 * channel u mod c), or for rows of features (m == 1) a row, whose channels lie side by side. */
BN_INLINE int elementwise_range_body(void *ctx, int64_t u0, int64_t u1)
{
    const bn_job *j = ctx;
    const int64_t c = j->c, m = j->m;
    if (m == 1) {
        /* the coefficients are the caller's own buffers, apart from x, dy and out (which may
         * be dy): restrict lets the loops run in vectors */
        const float *restrict mean = j->mean, *restrict a = j->a, *restrict b = j->b;
        const float *restrict k = j->k;
        for (int64_t i = u0; i < u1; i++) {
            const float *x = j->x + i * c;
            float *out = j->out + i * c;
            if (!j->dy) {
                for (int64_t ch = 0; ch < c; ch++)
                    out[ch] = (x[ch] - mean[ch]) * a[ch] + k[ch];
                continue;
            }
            const float *dy = j->dy + i * c;
            for (int64_t ch = 0; ch < c; ch++)
                out[ch] = dy[ch] * a[ch] + (x[ch] - mean[ch]) * b[ch] + k[ch];
        }
        return 0;
    }
    for (int64_t p = u0; p < u1; p++) {
        const int64_t ch = p % c;
        const float mu = j->mean[ch], a = j->a[ch], k = j->k[ch];
        const float *x = j->x + p * m;
        float *out = j->out + p * m;
        if (!j->dy) {
            for (int64_t q = 0; q < m; q++)
                out[q] = (x[q] - mu) * a + k;
            continue;
        }
        const float b = j->b[ch], *dy = j->dy + p * m;
        for (int64_t q = 0; q < m; q++)
            out[q] = dy[q] * a + (x[q] - mu) * b + k;
    }
    return 0;
}

BN_DISPATCHED(elementwise_range, (void *ctx, int64_t u0, int64_t u1), (ctx, u0, u1))

/* The elementwise pass over all of x, in chunks of about CHUNK_VALUES values. */
static int elementwise(const bn_job *j)
{
    const int64_t units = j->m == 1 ? j->n : j->n * j->c, per_unit = j->m == 1 ? j->c : j->m;
    const int64_t grain = per_unit >= CHUNK_VALUES ? 1 : CHUNK_VALUES / per_unit;
    return pyrt_parallel_for(units, grain, elementwise_range, (void *)j);
}

static int check_sizes(int64_t n, int64_t c, int64_t m)
{
    if (n < 0 || c < 0 || m < 0)
        return PYRT_EINVAL;
    if (n > 0 && c > 0 && m > INT64_MAX / n / c)
        return PYRT_EINVAL;
    return PYRT_OK;
}

/* mean[ch] and the biased variance var[ch] of each channel (n * m at least 1), in double.
 *
 * Rows of features in one pass: the sums of d = x - s and of d^2 about a shift s per
 * channel, the channel's first value, give mean = s + sum(d) / N and var = sum(d^2) / N -
 * (sum(d) / N)^2. The shift is one of the channel's own values, a few deviations from its
 * mean at most for any but a far outlier, so the difference cancels little of the variance
 * however far the values sit from zero, and it is taken in double. The pass reads the rows
 * once instead of twice. Planes, and rows whose shifts are not all finite (a channel holding an infinity or a NaN,
 * whose statistics follow from them), take two reductions: the mean, then the squares about
 * it. (For planes, which a leaf sums one at a time from L1, one pass of both sums was
 * slower.) */
static int statistics(bn_job *j, double *mean, double *var)
{
    const int64_t c = j->c;
    double *acc = pyrt_buffer_alloc(2 * (size_t)c * sizeof(double));
    float *mean32 = pyrt_buffer_alloc((size_t)c * sizeof(float));
    int rc = acc && mean32 ? PYRT_OK : PYRT_ENOMEM;
    const double count = (double)j->n * (double)j->m;
    int one_pass = j->m == 1; /* rows of features, while every shift is finite */
    for (int64_t ch = 0; !rc && one_pass && ch < c; ch++) {
        mean32[ch] = j->x[ch]; /* the channel's value in row 0: its shift */
        one_pass = isfinite(mean32[ch]);
    }
    if (one_pass) {
        j->mean = mean32;
        if (!rc)
            rc = reduce_channels(j, SUM_SHIFTED, acc);
        for (int64_t ch = 0; !rc && ch < c; ch++) {
            const double d = acc[2 * ch] / count, v = acc[2 * ch + 1] / count - d * d;
            mean[ch] = mean32[ch] + d;
            var[ch] = v < 0.0 ? 0.0 : v; /* rounding below zero; a NaN stays */
        }
    } else {
        if (!rc)
            rc = reduce_channels(j, SUM_X, acc);
        for (int64_t ch = 0; !rc && ch < c; ch++) {
            mean[ch] = acc[2 * ch] / count;
            mean32[ch] = (float)mean[ch];
        }
        /* the squares about the float32 mean the other passes centre on: no cancellation */
        j->mean = mean32;
        if (!rc)
            rc = reduce_channels(j, SUM_SQUARES, acc);
        for (int64_t ch = 0; !rc && ch < c; ch++) {
            const double shift = mean[ch] - mean32[ch];
            var[ch] = acc[2 * ch] / count - shift * shift;
        }
    }
    j->mean = NULL;
    pyrt_buffer_free(acc);
    pyrt_buffer_free(mean32);
    return rc;
}

/* The per-channel buffers of a call: three float vectors and two double ones. */
typedef struct bn_vectors {
    float *f;     /* 3c floats */
    double *d;    /* 2c doubles */
} bn_vectors;

static int vectors(bn_vectors *v, int64_t c)
{
    v->f = pyrt_buffer_alloc(3 * (size_t)c * sizeof(float) + 1);
    v->d = pyrt_buffer_alloc(2 * (size_t)c * sizeof(double) + 1);
    return v->f && v->d ? PYRT_OK : PYRT_ENOMEM;
}

static void free_vectors(bn_vectors *v)
{
    pyrt_buffer_free(v->f);
    pyrt_buffer_free(v->d);
}

int pyrt_batch_norm_forward(int64_t n, int64_t c, int64_t m, const float *x,
                            const float *weight, const float *bias, float *running_mean,
                            float *running_var, int training, double momentum, double eps,
                            float *y, float *save_mean, float *save_invstd)
{
    int rc = check_sizes(n, c, m);
    if (rc)
        return rc;
    if (!(eps >= 0.0) || (training && n * m < 2)
        || (!training && (!running_mean || !running_var)))
        return PYRT_EINVAL;
    if (c == 0)
        return PYRT_OK;
    if (!save_mean || !save_invstd || (n * m > 0 && (!x || !y)))
        return PYRT_EINVAL;
    bn_vectors v;
    rc = vectors(&v, c);
    bn_job j = {.n = n, .c = c, .m = m, .x = x};
    double *mean = v.d, *var = v.d + c;
    if (!rc && training)
        rc = statistics(&j, mean, var);
    if (rc) {
        free_vectors(&v);
        return rc;
    }
    const double count = (double)n * (double)m;
    float *scale = v.f, *shift = v.f + c;
    for (int64_t ch = 0; ch < c; ch++) {
        if (training && running_mean) /* PyTorch's: towards the batch's, by momentum */
            running_mean[ch] = (float)((1.0 - momentum) * running_mean[ch] + momentum * mean[ch]);
        if (training && running_var) /* ... the unbiased variance */
            running_var[ch] = (float)((1.0 - momentum) * running_var[ch]
                                      + momentum * var[ch] * count / (count - 1.0));
        const double mu = training ? mean[ch] : running_mean[ch];
        const double sigma2 = training ? var[ch] : running_var[ch];
        const double invstd = 1.0 / sqrt(sigma2 + eps);
        save_mean[ch] = (float)mu;
        save_invstd[ch] = (float)invstd;
        scale[ch] = (float)(weight ? invstd * weight[ch] : invstd);
        shift[ch] = bias ? bias[ch] : 0.0f;
    }
    j.mean = save_mean, j.a = scale, j.k = shift, j.out = y;
    if (n * m > 0)
        rc = elementwise(&j);
    free_vectors(&v);
    return rc;
}

int pyrt_batch_norm_backward(int64_t n, int64_t c, int64_t m, const float *x, const float *dy,
                             const float *weight, const float *save_mean,
                             const float *save_invstd, int training, float *dx, float *dweight,
                             float *dbias)
{
    int rc = check_sizes(n, c, m);
    if (rc)
        return rc;
    if (c == 0)
        return PYRT_OK;
    if (!save_mean || !save_invstd || (n * m > 0 && (!x || !dy)))
        return PYRT_EINVAL;
    bn_vectors v;
    rc = vectors(&v, c);
    double *sums = v.d; /* [c][2]: sum dy, sum dy (x - mean) */
    bn_job j = {.n = n, .c = c, .m = m, .x = x, .dy = dy, .mean = save_mean};
    for (int64_t q = 0; !rc && q < 2 * c; q++)
        sums[q] = 0.0;
    if (!rc && n * m > 0)
        rc = reduce_channels(&j, SUM_GRADS, sums);
    if (rc) {
        free_vectors(&v);
        return rc;
    }
    /* dx = dy * a + (x - mean) * b + k: with the batch's own statistics, mean and var move with
     * x too, which adds b and k (a = weight * invstd) */
    const double count = (double)n * (double)m;
    float *a = v.f, *b = v.f + c, *k = v.f + 2 * c;
    for (int64_t ch = 0; ch < c; ch++) {
        const double invstd = save_invstd[ch], sdy = sums[2 * ch], sdyx = sums[2 * ch + 1];
        const double ac = weight ? invstd * weight[ch] : invstd;
        a[ch] = (float)ac;
        b[ch] = training ? (float)(-ac * invstd * invstd * sdyx / count) : 0.0f;
        k[ch] = training ? (float)(-ac * sdy / count) : 0.0f;
        if (dweight)
            dweight[ch] = (float)(sdyx * invstd);
        if (dbias)
            dbias[ch] = (float)sdy;
    }
    if (dx && n * m > 0) {
        j.a = a, j.b = b, j.k = k, j.out = dx;
        rc = elementwise(&j);
    }
    free_vectors(&v);
    return rc;
}
