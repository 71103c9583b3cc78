/*
 * batch_norm.c - batch normalisation of x [n, c, m] channel by channel (pyrt.h).
 *
 * A channel's values are its n planes of m (m = h * w for images, 1 for rows of features),
 * one plane in every image. Three kinds of pass:
 *
 *   statistics   per channel the mean and the biased variance of its n * m values, in two
 *                reductions (the mean, then the squares about it: no cancellation however far
 *                the values sit from zero)
 *   forward      y = (x - mean[ch]) * scale[ch] + shift[ch] (the caller's scale = weight *
 *                invstd and shift = bias: x is centred before it is scaled, as in PyTorch)
 *   gradient     per channel sum(dy) and sum(dy * (x - mean)), for dbias, dweight and dx, then
 *                dx = dy * a[ch] + (x - mean[ch]) * b[ch] + k[ch] with the caller's per-channel
 *                coefficients (which fold in those sums for a batch's own statistics)
 *
 * Parallelism and determinism. The channels are a parallel loop; inside one, its planes are a
 * parallel reduction over the images with leaves of fixed ranges (from n and m alone), each
 * plane summed in eight lanes and then a fixed tree, the leaves and planes added in double.
 * So a layer of few channels still uses every thread, and every statistic and gradient is
 * bitwise the same at any thread count. The elementwise passes are a parallel loop over the
 * planes.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "pyrt.h"

/* Values a leaf of a channel's reduction, or a chunk of an affine pass, should hold. */
#define CHUNK_VALUES 16384

typedef struct bn_job {
    int64_t n, c, m;
    const float *x, *dy;
    const float *mean;  /* per channel (the statistics' second pass, the other passes) */
    const float *a, *b, *k; /* per-channel coefficients of the elementwise passes */
    float *out;
    double *sums;       /* per channel: one or two sums, as the pass fills them */
    int64_t channel;    /* the channel a reduction sums */
    int kind;           /* what a reduction sums */
} bn_job;

enum { SUM_X, SUM_SQUARES, SUM_GRADS };

/* sum over i < m of f(i), in eight lanes by i mod 8 and then a fixed tree, in double */
#define LANE_SUM(m, TERM)                                                                     \
    do {                                                                                      \
        float lane[8] = {0};                                                                  \
        int64_t i = 0;                                                                        \
        for (; i + 8 <= (m); i += 8)                                                          \
            for (int l = 0; l < 8; l++) {                                                     \
                const int64_t k = i + l;                                                      \
                lane[l] += (TERM);                                                            \
            }                                                                                 \
        for (int l = 0; i < (m); i++, l++) {                                                  \
            const int64_t k = i;                                                              \
            lane[l] += (TERM);                                                                \
        }                                                                                     \
        total = (((double)lane[0] + lane[4]) + ((double)lane[2] + lane[6]))                   \
                + (((double)lane[1] + lane[5]) + ((double)lane[3] + lane[7]));                \
    } while (0)

/* The leaf of a channel's reduction: images [i0, i1), one or two sums in acc. */
static int channel_leaf(void *ctx, int64_t i0, int64_t i1, void *acc)
{
    const bn_job *j = ctx;
    const int64_t ch = j->channel, m = j->m;
    double *out = acc;
    out[0] = out[1] = 0.0;
    const float mu = j->mean ? j->mean[ch] : 0.0f;
    for (int64_t i = i0; i < i1; i++) {
        const float *x = j->x + (i * j->c + ch) * m;
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
    return 0;
}

static int add_sums(void *ctx, void *left, const void *right)
{
    (void)ctx;
    double *l = left;
    const double *r = right;
    l[0] += r[0];
    l[1] += r[1];
    return 0;
}

/* Reductions of channels [c0, c1): j->sums[2 ch] (and [2 ch + 1]) for each. */
static int channel_range(void *ctx, int64_t c0, int64_t c1)
{
    const bn_job *all = ctx;
    const int64_t grain = all->m >= CHUNK_VALUES ? 1 : CHUNK_VALUES / all->m;
    for (int64_t ch = c0; ch < c1; ch++) {
        bn_job j = *all;
        j.channel = ch;
        int rc = pyrt_parallel_reduce(j.n, grain, 2 * sizeof(double), channel_leaf, add_sums,
                                      &j, all->sums + 2 * ch);
        if (rc)
            return rc;
    }
    return 0;
}

static int reduce_channels(bn_job *j, int kind, double *sums)
{
    j->kind = kind;
    j->sums = sums;
    return pyrt_parallel_for(j->c, 1, channel_range, j);
}

/* Planes [p0, p1) (plane p is channel p mod c) of the forward pass, out = (x - mean) * a + k,
 * or with dy of the input gradient, out = dy * a + (x - mean) * b + k. */
static int elementwise_range(void *ctx, int64_t p0, int64_t p1)
{
    const bn_job *j = ctx;
    for (int64_t p = p0; p < p1; p++) {
        const int64_t ch = p % j->c;
        const float mu = j->mean[ch], a = j->a[ch], k = j->k[ch];
        const float *x = j->x + p * j->m;
        float *out = j->out + p * j->m;
        if (!j->dy) {
            for (int64_t q = 0; q < j->m; q++)
                out[q] = (x[q] - mu) * a + k;
            continue;
        }
        const float b = j->b[ch], *dy = j->dy + p * j->m;
        for (int64_t q = 0; q < j->m; q++)
            out[q] = dy[q] * a + (x[q] - mu) * b + k;
    }
    return 0;
}

static int64_t plane_grain(int64_t m)
{
    return m >= CHUNK_VALUES ? 1 : CHUNK_VALUES / (m > 0 ? m : 1);
}

static int check_sizes(int64_t n, int64_t c, int64_t m)
{
    if (n < 0 || c < 0 || m < 0)
        return PYRT_EINVAL;
    if (n > 0 && c > 0 && m > INT64_MAX / n / c)
        return PYRT_EINVAL;
    return PYRT_OK;
}

int pyrt_batch_norm_stats(int64_t n, int64_t c, int64_t m, const float *x, float *mean,
                          float *var)
{
    int rc = check_sizes(n, c, m);
    if (rc)
        return rc;
    if (c == 0)
        return PYRT_OK;
    if (!mean || !var || !x || n * m == 0)
        return PYRT_EINVAL;
    double *acc = pyrt_buffer_alloc(2 * (size_t)c * sizeof(double));
    if (!acc)
        return PYRT_ENOMEM;
    bn_job j = {.n = n, .c = c, .m = m, .x = x};
    const double count = (double)n * (double)m;
    rc = reduce_channels(&j, SUM_X, acc);
    for (int64_t ch = 0; !rc && ch < c; ch++)
        mean[ch] = (float)(acc[2 * ch] / count);
    j.mean = mean;
    if (!rc)
        rc = reduce_channels(&j, SUM_SQUARES, acc);
    for (int64_t ch = 0; !rc && ch < c; ch++)
        var[ch] = (float)(acc[2 * ch] / count);
    pyrt_buffer_free(acc);
    return rc;
}

int pyrt_batch_norm_forward(int64_t n, int64_t c, int64_t m, const float *x, const float *mean,
                            const float *scale, const float *shift, float *y)
{
    int rc = check_sizes(n, c, m);
    if (rc)
        return rc;
    if (n * c * m == 0)
        return PYRT_OK;
    if (!x || !mean || !scale || !shift || !y)
        return PYRT_EINVAL;
    bn_job j = {.n = n, .c = c, .m = m, .x = x, .mean = mean, .a = scale, .k = shift, .out = y};
    return pyrt_parallel_for(n * c, plane_grain(m), elementwise_range, &j);
}

int pyrt_batch_norm_grad_sums(int64_t n, int64_t c, int64_t m, const float *x,
                              const float *dy, const float *mean, double *sums)
{
    int rc = check_sizes(n, c, m);
    if (rc)
        return rc;
    if (c == 0)
        return PYRT_OK;
    if (!sums || !mean || (n * m > 0 && (!x || !dy)))
        return PYRT_EINVAL;
    for (int64_t q = 0; q < 2 * c; q++)
        sums[q] = 0.0;
    if (n * m == 0)
        return PYRT_OK;
    bn_job j = {.n = n, .c = c, .m = m, .x = x, .dy = dy, .mean = mean};
    return reduce_channels(&j, SUM_GRADS, sums);
}

int pyrt_batch_norm_input_grad(int64_t n, int64_t c, int64_t m, const float *x,
                               const float *dy, const float *mean, const float *a,
                               const float *b, const float *k, float *dx)
{
    int rc = check_sizes(n, c, m);
    if (rc)
        return rc;
    if (n * c * m == 0)
        return PYRT_OK;
    if (!x || !dy || !mean || !a || !b || !k || !dx)
        return PYRT_EINVAL;
    bn_job j = {.n = n, .c = c, .m = m, .x = x, .dy = dy, .mean = mean, .a = a, .b = b, .k = k,
                .out = dx};
    return pyrt_parallel_for(n * c, plane_grain(m), elementwise_range, &j);
}
