/*
 * embedding_bag.c - bags of embedding rows reduced to one row each, and the gradients
 * (pyrt.h; pyrt/embedding_bag.py lays out the bags).
 *
 * The bags are runs of an array of entries: bag b holds entries [bounds[b], bounds[b + 1]),
 * entry e the row index[e] of a weight table [rows, dim] (optionally times scale[e]). The
 * forward pass is a parallel loop over the bags, each reading its rows in order into its own
 * output row: a sum (then divided by the bag's size for a mean), or the elementwise maximum
 * with the entry that gave it (the first entry greater than all before it wins, so a NaN
 * first in its bag stays and a later one never takes over, as PyTorch's). Gathering and
 * reducing in one pass reads each row once and writes nothing else: NumPy's gather into an
 * [entries, dim] array, then a reduction over each bag's run, took 34 times PyTorch's time
 * (200000 entries of 64 floats in 20000 bags).
 *
 * The weight's gradient adds each entry's share of its bag's output gradient into the row
 * it read; entries of different bags may read the same row, so the loop is over blocks of
 * columns instead, each adding every entry's slice of its columns in entry order: no two
 * tasks write the same float, and every sum has one order at any thread count.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pyrt.h"

/* Floats of output a chunk of the forward loop should produce, and columns per block of the
 * backward loop: four cache lines, so that blocks meet in few lines of a row whatever its
 * alignment (blocks of one line, written by two threads into rows 16 bytes off a line,
 * took twice the one-thread time). */
#define CHUNK_FLOATS 8192
#define COLUMN_BLOCK 64
#define PREFETCH_AHEAD 8

typedef struct bag_job {
    const float *weight;
    const int64_t *index, *bounds;
    const float *scale;
    const float *grad;
    int64_t dim, bags;
    int mode;
    float *out;
    int64_t *arg;
} bag_job;

static int forward_bags(void *arg, int64_t b0, int64_t b1)
{
    const bag_job *j = arg;
    const int64_t dim = j->dim;
    int32_t *restrict pos = NULL; /* a maximum's place in its bag, per column */
    if (j->mode == PYRT_BAG_MAX && !(pos = malloc((size_t)dim * sizeof(int32_t))))
        return PYRT_ENOMEM;
    for (int64_t b = b0; b < b1; b++) {
        float *restrict out = j->out + b * dim;
        const int64_t e0 = j->bounds[b], e1 = j->bounds[b + 1];
        if (e0 == e1) {
            memset(out, 0, (size_t)dim * sizeof(float));
            if (j->arg)
                for (int64_t d = 0; d < dim; d++)
                    j->arg[b * dim + d] = -1;
            continue;
        }
        if (j->mode == PYRT_BAG_MAX) {
            const float *first = j->weight + j->index[e0] * dim;
            for (int64_t d = 0; d < dim; d++) {
                out[d] = first[d];
                pos[d] = 0;
            }
            /* selects rather than a branch, and the winner's place in the bag as an int32
             * beside the float it won with, so that the loop runs in vectors (branching, or
             * selecting int64 entries, it took 10 times the sum's time) */
            for (int64_t e = e0 + 1; e < e1; e++) {
                const float *restrict row = j->weight + j->index[e] * dim;
                const int32_t k = (int32_t)(e - e0);
                if (e + PREFETCH_AHEAD < j->bounds[j->bags]) /* (as the sums', below) */
                    __builtin_prefetch(j->weight + j->index[e + PREFETCH_AHEAD] * dim);
                for (int64_t d = 0; d < dim; d++) {
                    const float v = row[d], m = out[d];
                    const int32_t greater = -(int32_t)(v > m); /* all ones where v wins */
                    out[d] = v > m ? v : m;
                    pos[d] = (pos[d] & ~greater) | (k & greater);
                }
            }
            for (int64_t d = 0; d < dim; d++)
                j->arg[b * dim + d] = e0 + pos[d];
            continue;
        }
        memset(out, 0, (size_t)dim * sizeof(float));
        for (int64_t e = e0; e < e1; e++) {
            const float *restrict row = j->weight + j->index[e] * dim;
            /* rows come in no order: ask for one a few entries ahead while this one is
             * added (its first line: asking for all four of a 64-float row took longer) */
            if (e + PREFETCH_AHEAD < j->bounds[j->bags])
                __builtin_prefetch(j->weight + j->index[e + PREFETCH_AHEAD] * dim);
            if (j->scale) {
                const float s = j->scale[e];
                for (int64_t d = 0; d < dim; d++)
                    out[d] += row[d] * s;
            } else {
                for (int64_t d = 0; d < dim; d++)
                    out[d] += row[d];
            }
        }
        if (j->mode == PYRT_BAG_MEAN) {
            const float n = (float)(e1 - e0);
            for (int64_t d = 0; d < dim; d++)
                out[d] /= n;
        }
    }
    free(pos);
    return 0;
}

static int check_bags(const float *weight, int64_t rows, int64_t dim, const int64_t *index,
                      const int64_t *bounds, int64_t bags)
{
    if (rows < 0 || dim < 0 || bags < 0 || !bounds || (rows * dim > 0 && !weight))
        return PYRT_EINVAL;
    if (bounds[0] != 0)
        return PYRT_EINVAL;
    for (int64_t b = 0; b < bags; b++)
        if (bounds[b + 1] < bounds[b])
            return PYRT_EINVAL;
    const int64_t entries = bounds[bags];
    if (entries > 0 && !index)
        return PYRT_EINVAL;
    for (int64_t e = 0; e < entries; e++)
        if (index[e] < 0 || index[e] >= rows)
            return PYRT_EINVAL;
    return PYRT_OK;
}

int pyrt_embedding_bag(const float *weight, int64_t rows, int64_t dim, const int64_t *index,
                       const int64_t *bounds, int64_t bags, const float *scale, int mode,
                       float *out, int64_t *arg)
{
    if (mode != PYRT_BAG_SUM && mode != PYRT_BAG_MEAN && mode != PYRT_BAG_MAX)
        return PYRT_EINVAL;
    if ((mode == PYRT_BAG_MAX && (!arg || scale)) || (bags * dim > 0 && !out))
        return PYRT_EINVAL;
    int rc = check_bags(weight, rows, dim, index, bounds, bags);
    if (rc || bags == 0 || dim == 0)
        return rc;
    if (mode == PYRT_BAG_MAX) /* (places in a bag are counted in int32) */
        for (int64_t b = 0; b < bags; b++)
            if (bounds[b + 1] - bounds[b] > INT32_MAX)
                return PYRT_EINVAL;
    bag_job j = {weight, index, bounds, scale, NULL, dim, bags, mode, out,
                 mode == PYRT_BAG_MAX ? arg : NULL};
    const int64_t grain = dim >= CHUNK_FLOATS ? 1 : CHUNK_FLOATS / dim;
    return pyrt_parallel_for(bags, grain, forward_bags, &j);
}

/* Columns [c0, c1) of the weight's gradient, the entries in order. */
static int backward_columns(void *arg, int64_t blk0, int64_t blk1)
{
    const bag_job *j = arg;
    const int64_t dim = j->dim, c0 = blk0 * COLUMN_BLOCK;
    const int64_t c1 = blk1 * COLUMN_BLOCK < dim ? blk1 * COLUMN_BLOCK : dim;
    const int64_t bags = j->bags;
    float *grad_weight = j->out;
    if (j->arg) { /* max: each output element's gradient to the entry that gave it */
        for (int64_t b = 0; b < bags; b++)
            for (int64_t d = c0; d < c1; d++) {
                const int64_t e = j->arg[b * dim + d];
                if (e >= 0)
                    grad_weight[j->index[e] * dim + d] += j->grad[b * dim + d];
            }
        return 0;
    }
    for (int64_t b = 0; b < bags; b++) {
        const int64_t e0 = j->bounds[b], e1 = j->bounds[b + 1];
        const float *restrict g = j->grad + b * dim;
        for (int64_t e = e0; e < e1; e++) {
            float *restrict row = grad_weight + j->index[e] * dim;
            const float s = j->scale ? j->scale[e] : 1.0f;
            for (int64_t d = c0; d < c1; d++)
                row[d] += g[d] * s;
        }
    }
    return 0;
}

int pyrt_embedding_bag_backward(const float *grad, int64_t rows, int64_t dim,
                                const int64_t *index, const int64_t *bounds, int64_t bags,
                                const float *scale, const int64_t *arg, float *grad_weight)
{
    if (!bounds || bags < 0 || rows < 0 || dim < 0 || (rows * dim > 0 && !grad_weight)
        || (bags * dim > 0 && !grad))
        return PYRT_EINVAL;
    int rc = check_bags(grad_weight, rows, dim, index, bounds, bags);
    if (rc)
        return rc;
    if (arg)
        for (int64_t i = 0; i < bags * dim; i++)
            if (arg[i] < -1 || arg[i] >= bounds[bags])
                return PYRT_EINVAL;
    if (rows * dim > 0)
        memset(grad_weight, 0, (size_t)(rows * dim) * sizeof(float));
    if (bags == 0 || dim == 0)
        return PYRT_OK;
    bag_job j = {NULL, index, bounds, scale, grad, dim, bags, 0, grad_weight, (int64_t *)arg};
    return pyrt_parallel_for((dim + COLUMN_BLOCK - 1) / COLUMN_BLOCK, 1, backward_columns, &j);
}
