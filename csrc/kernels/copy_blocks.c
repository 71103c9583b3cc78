/*
 * copy_blocks.c - an array assembled from equal blocks of another, in parallel (pyrt.h).
 *
 * Layout changes that move whole rows or planes (a 3-d convolution's depth slices laid side
 * by side for one 2-d convolution, pyrt/volumes.py) are lists of block copies: block i of the
 * output comes from block offset src_at[i] of the input, or is zeros. NumPy runs such a copy,
 * a strided and transposed view assigned into place, on one thread; here the blocks are a
 * parallel loop. Each block is written by one task, so the result does not depend on the
 * thread count.
 */
#include <stdint.h>
#include <string.h>

#include "overlap.h"
#include "pyrt.h"

/* Floats a chunk of the loop should move: a few microseconds of memory traffic. */
#define CHUNK_FLOATS 32768

typedef struct blocks_job {
    const float *src;
    float *dst;
    const int64_t *src_at;
    int64_t len;
} blocks_job;

static int copy_range(void *arg, int64_t b0, int64_t b1)
{
    const blocks_job *j = arg;
    const size_t bytes = (size_t)j->len * sizeof(float);
    for (int64_t b = b0; b < b1; b++) {
        float *to = j->dst + b * j->len;
        if (j->src_at[b] < 0)
            memset(to, 0, bytes);
        else
            memcpy(to, j->src + j->src_at[b], bytes);
    }
    return 0;
}

int pyrt_copy_blocks(const float *src, int64_t src_len, const int64_t *src_at, int64_t count,
                     int64_t len, float *dst)
{
    if (src_len < 0 || count < 0 || len < 0)
        return PYRT_EINVAL;
    if (count == 0 || len == 0)
        return PYRT_OK;
    if (!dst || !src_at || (src_len > 0 && !src) || count > INT64_MAX / len)
        return PYRT_EINVAL;
    for (int64_t b = 0; b < count; b++)
        if (src_at[b] >= 0 && (src_at[b] > src_len - len || src_len < len))
            return PYRT_EINVAL; /* a block past the end of src */
    if (src_len > 0 && ranges_meet(dst, count * len, src, src_len))
        return PYRT_EOVERLAP;
    blocks_job j = {src, dst, src_at, len};
    const int64_t grain = len >= CHUNK_FLOATS ? 1 : CHUNK_FLOATS / len;
    return pyrt_parallel_for(count, grain, copy_range, &j);
}
