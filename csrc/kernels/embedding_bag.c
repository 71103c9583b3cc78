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
#include "simd_math.h"

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
    int64_t rows; /* forward: the table's, which each chunk checks its indices against */
    int mode;
    float *out;
    int64_t *arg;
} bag_job;

/* out[0:dim] = the sum over entries [e0, e1) of row index[e] of the weight (times scale[e]
 * if given), each column's terms added in entry order from zero. Rows come in no order: the
 * row of an entry a few ahead is asked for while this one is added, up to entry `end` (the
 * indices checked so far). */
typedef void (*bag_sum_fn)(const bag_job *j, int64_t e0, int64_t e1, int64_t end,
                           float *out);

static void bag_sum(const bag_job *j, int64_t e0, int64_t e1, int64_t end, float *out)
{
    const int64_t dim = j->dim;
    memset(out, 0, (size_t)dim * sizeof(float));
    for (int64_t e = e0; e < e1; e++) {
        const float *restrict row = j->weight + j->index[e] * dim;
        /* its first line: asking for all four of a 64-float row took longer here */
        if (e + PREFETCH_AHEAD < end)
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
}

#if SIMD_HAVE_X86

typedef float bag_v8 __attribute__((vector_size(32)));

/* Columns [c, c + 8 V) of a bag's sum, in V vector accumulators held in registers across
 * its entries, every line of a row ahead asked for. Through the portable loop each entry
 * loaded and stored the whole output row, and the loads of the rows waited behind those
 * stores: 200000 entries of 64 floats in 20000 bags took 1.56 times PyTorch's time, now
 * 1.2-1.45 (with the indices checked in parallel, below). */
SIMD_AVX2 static inline __attribute__((always_inline)) void bag_columns(
    const int V, const bag_job *j, int64_t e0, int64_t e1, int64_t end, int64_t c, float *out)
{
    const int64_t dim = j->dim;
    bag_v8 acc[8];
#pragma GCC unroll 8
    for (int v = 0; v < V; v++)
        acc[v] = (bag_v8){0};
    for (int64_t e = e0; e < e1; e++) {
        const float *row = j->weight + j->index[e] * dim + c;
        if (e + PREFETCH_AHEAD < end) { /* every line of its columns */
            const float *ahead = j->weight + j->index[e + PREFETCH_AHEAD] * dim + c;
#pragma GCC unroll 8
            for (int v = 0; v < V; v += 2)
                __builtin_prefetch(ahead + 8 * v);
        }
        const float k = j->scale ? j->scale[e] : 1.0f;
#pragma GCC unroll 8
        for (int v = 0; v < V; v++) {
            bag_v8 r;
            memcpy(&r, row + 8 * v, sizeof r);
            if (j->scale)
                acc[v] += r * k;
            else
                acc[v] += r;
        }
    }
    memcpy(out + c, acc, (size_t)V * sizeof(bag_v8));
}

SIMD_AVX2 static void bag_sum_avx2(const bag_job *j, int64_t e0, int64_t e1, int64_t end,
                                   float *out)
{
    const int64_t dim = j->dim;
    int64_t c = 0;
    for (; c + 64 <= dim; c += 64)
        bag_columns(8, j, e0, e1, end, c, out);
    for (; c + 8 <= dim; c += 8)
        bag_columns(1, j, e0, e1, end, c, out);
    for (; c < dim; c++) {
        float sum = 0.0f;
        for (int64_t e = e0; e < e1; e++)
            sum += j->weight[j->index[e] * dim + c] * (j->scale ? j->scale[e] : 1.0f);
        out[c] = sum;
    }
}

#endif

static bag_sum_fn bag_sum_kernel(void)
{
#if SIMD_HAVE_X86
    if (simd_cpu_has_avx2_fma())
        return bag_sum_avx2;
#endif
    return bag_sum;
}

static int forward_bags(void *arg, int64_t b0, int64_t b1)
{
    const bag_job *j = arg;
    const int64_t dim = j->dim;
    const bag_sum_fn sum = bag_sum_kernel();
    /* the chunk's indices, checked here in parallel rather than before the loop on one
     * thread (a twentieth of the time of 200000 entries in 20000 bags) */
    const int64_t end = j->bounds[b1];
    for (int64_t e = j->bounds[b0]; e < end; e++)
        if ((uint64_t)j->index[e] >= (uint64_t)j->rows)
            return PYRT_EINVAL;
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
                if (e + PREFETCH_AHEAD < end) /* (as the sums') */
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
        sum(j, e0, e1, end, out);
        if (j->mode == PYRT_BAG_MEAN) {
            const float n = (float)(e1 - e0);
            for (int64_t d = 0; d < dim; d++)
                out[d] /= n;
        }
    }
    free(pos);
    return 0;
}

/* The arguments, and the indices too with `indices` (the forward loop checks its own). */
static int check_bags(const float *weight, int64_t rows, int64_t dim, const int64_t *index,
                      const int64_t *bounds, int64_t bags, int indices)
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
    for (int64_t e = 0; e < entries && indices; e++)
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
    int rc = check_bags(weight, rows, dim, index, bounds, bags, 0);
    if (rc || bags == 0 || dim == 0)
        return rc;
    if (mode == PYRT_BAG_MAX) /* (places in a bag are counted in int32) */
        for (int64_t b = 0; b < bags; b++)
            if (bounds[b + 1] - bounds[b] > INT32_MAX)
                return PYRT_EINVAL;
    bag_job j = {weight, index, bounds, scale, NULL, dim, bags, rows, mode, out,
                 mode == PYRT_BAG_MAX ? arg : NULL};
    const int64_t grain = dim >= CHUNK_FLOATS ? 1 : CHUNK_FLOATS / dim;
    return pyrt_parallel_for(bags, grain, forward_bags, &j);
}

/* Columns [c0, c1) of the weight's gradient of a sum or a mean: each entry's share of its
 * bag's gradient added into the row it read, the entries in order. Compiled twice, for
 * AVX2 and for any CPU, each loop over the columns in that instruction set's vectors:
 * compiled for SSE only, the loop ran 1.2 times slower after an unrelated change moved its
 * 28 bytes of code across a 64-byte line. */
static inline __attribute__((always_inline)) void add_shares(const bag_job *j, int64_t c0,
                                                             int64_t c1)
{
    const int64_t dim = j->dim;
    for (int64_t b = 0; b < j->bags; b++) {
        const int64_t e0 = j->bounds[b], e1 = j->bounds[b + 1];
        const float *restrict g = j->grad + b * dim;
        for (int64_t e = e0; e < e1; e++) {
            float *restrict row = j->out + j->index[e] * dim;
            const float s = j->scale ? j->scale[e] : 1.0f;
            for (int64_t d = c0; d < c1; d++)
                row[d] += g[d] * s;
        }
    }
}

static void add_shares_plain(const bag_job *j, int64_t c0, int64_t c1)
{
    add_shares(j, c0, c1);
}

#if SIMD_HAVE_X86
SIMD_AVX2 static void add_shares_avx2(const bag_job *j, int64_t c0, int64_t c1)
{
    add_shares(j, c0, c1);
}
#endif

/* Columns [c0, c1) of the weight's gradient, the entries in order. */
static int backward_columns(void *arg, int64_t blk0, int64_t blk1)
{
    const bag_job *j = arg;
    const int64_t dim = j->dim, c0 = blk0 * COLUMN_BLOCK;
    const int64_t c1 = blk1 * COLUMN_BLOCK < dim ? blk1 * COLUMN_BLOCK : dim;
    float *grad_weight = j->out;
    if (j->arg) { /* max: each output element's gradient to the entry that gave it */
        for (int64_t b = 0; b < j->bags; b++)
            for (int64_t d = c0; d < c1; d++) {
                const int64_t e = j->arg[b * dim + d];
                if (e >= 0)
                    grad_weight[j->index[e] * dim + d] += j->grad[b * dim + d];
            }
        return 0;
    }
#if SIMD_HAVE_X86
    if (simd_cpu_has_avx2_fma()) {
        add_shares_avx2(j, c0, c1);
        return 0;
    }
#endif
    add_shares_plain(j, c0, c1);
    return 0;
}

int pyrt_embedding_bag_backward(const float *grad, int64_t rows, int64_t dim,
                                const int64_t *index, const int64_t *bounds, int64_t bags,
                                const float *scale, const int64_t *arg, float *grad_weight)
{
    if (!bounds || bags < 0 || rows < 0 || dim < 0 || (rows * dim > 0 && !grad_weight)
        || (bags * dim > 0 && !grad))
        return PYRT_EINVAL;
    int rc = check_bags(grad_weight, rows, dim, index, bounds, bags, 1);
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
    bag_job j = {NULL, index, bounds, scale, grad, dim, bags, rows, 0, grad_weight,
                 (int64_t *)arg};
    return pyrt_parallel_for((dim + COLUMN_BLOCK - 1) / COLUMN_BLOCK, 1, backward_columns, &j);
}
