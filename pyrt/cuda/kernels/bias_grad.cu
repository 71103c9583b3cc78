// The bias gradient: the column sums of a gradient, in one launch that reads it once.
//
// Blocks of one grid row split the reduced elements into gridDim.y slices; each block sums
// its slice into partial[slice, column]. The last block of a grid column to finish (counted
// with an atomic ticket after a memory fence, as in the CUDA threadFenceReduction sample)
// adds the slices up in slice order and resets its ticket for the next launch. So there is
// no second launch, no memset before the launch and no float atomics: the result depends on
// the shapes and the grid alone and is the same on every run.
#include "common.cuh"

// A partial sum written by another block, read by the last block with a volatile load, which
// bypasses its SM's L1 (not coherent with the other SMs): the fence and the ticket order the
// write before this read.
__device__ __forceinline__ float pyrt_partial(const float *partial, long long at) {
    return *(const volatile float *)(partial + at);
}

// Whether this block is the last of its grid column to finish: every thread gets the answer.
__device__ __forceinline__ bool pyrt_last_block(unsigned int *ticket) {
    __shared__ bool last;
    __threadfence();  // this block's partial sums are visible before its ticket is taken
    __syncthreads();
    if (threadIdx.x == 0)
        last = atomicAdd(ticket, 1u) == gridDim.y - 1;
    __syncthreads();
    return last;
}

// grad is a C-contiguous [rows, cols]; out[c] = sum over r of grad[r, c].
//
// cols <= PYRT_BLOCK ("narrow", grid (1, slices)): thread j of a block reads the flat
// elements j + slice * width, stepping by slices * width, where width is the largest
// multiple of cols within the block; every step is a multiple of cols, so each thread stays
// in column j % cols while a warp reads consecutive addresses, whatever cols is.
// cols > PYRT_BLOCK ("wide", grid (column groups, slices)): thread j owns column
// blockIdx.x * PYRT_BLOCK + j and walks down the rows of its slice.
extern "C" __global__ void pyrt_bias_grad_rows(const float *__restrict__ grad,
                                               float *__restrict__ out,
                                               float *__restrict__ partial,
                                               unsigned int *__restrict__ tickets,
                                               long long rows, long long cols) {
    __shared__ float sums[PYRT_BLOCK];
    const int j = threadIdx.x;
    const long long slices = gridDim.y, slice = blockIdx.y;
    if (cols <= PYRT_BLOCK) {
        const long long width = (PYRT_BLOCK / cols) * cols, n = rows * cols;
        float acc = 0.0f;
        if (j < width)
            for (long long e = slice * width + j; e < n; e += slices * width) acc += grad[e];
        sums[j] = acc;
        __syncthreads();
        if (j < cols) {
            float s = 0.0f;
            for (long long m = j; m < width; m += cols) s += sums[m];
            partial[slice * cols + j] = s;
        }
        if (pyrt_last_block(&tickets[0])) {
            if (j < cols) {
                float s = 0.0f;
                for (long long b = 0; b < slices; ++b) s += pyrt_partial(partial, b * cols + j);
                out[j] = s;
            }
            if (j == 0) tickets[0] = 0;
        }
        return;
    }
    const long long c = blockIdx.x * (long long)PYRT_BLOCK + j;
    float acc = 0.0f;
    if (c < cols)
        for (long long r = slice; r < rows; r += slices) acc += grad[r * cols + c];
    if (c < cols) partial[slice * cols + c] = acc;
    if (pyrt_last_block(&tickets[blockIdx.x])) {
        if (c < cols) {
            float s = 0.0f;
            for (long long b = 0; b < slices; ++b) s += pyrt_partial(partial, b * cols + c);
            out[c] = s;
        }
        if (j == 0) tickets[blockIdx.x] = 0;
    }
}

// grad is a C-contiguous [outer, channels, inner] (a conv2d gradient [n, k, oh * ow]);
// out[c] = the sum over outer and inner. Grid (channels, slices): block (c, slice) reads
// the flat index e = slice * PYRT_BLOCK + j, stepping by slices * PYRT_BLOCK, of channel c's
// outer * inner elements, so a warp reads runs of consecutive addresses. The host keeps
// outer * inner below 2^31, so the 32-bit index arithmetic cannot wrap past the end.
extern "C" __global__ void pyrt_bias_grad_planes(const float *__restrict__ grad,
                                                 float *__restrict__ out,
                                                 float *__restrict__ partial,
                                                 unsigned int *__restrict__ tickets,
                                                 long long outer, long long channels,
                                                 long long inner) {
    const unsigned int c = blockIdx.x, slices = gridDim.y, slice = blockIdx.y;
    const unsigned int in = (unsigned int)inner, n = (unsigned int)(outer * inner);
    const unsigned long long plane_step = (unsigned long long)channels * in;
    const float *base = grad + (unsigned long long)c * in;
    float acc = 0.0f;
    for (unsigned int e = slice * PYRT_BLOCK + threadIdx.x; e < n; e += slices * PYRT_BLOCK) {
        const unsigned int p = e / in;
        acc += base[p * plane_step + (e - p * in)];
    }
    const float s = pyrt_block_sum(acc);
    if (threadIdx.x == 0) partial[(unsigned long long)slice * channels + c] = s;
    if (pyrt_last_block(&tickets[c]) && threadIdx.x == 0) {
        float total = 0.0f;
        for (unsigned int b = 0; b < slices; ++b)
            total += pyrt_partial(partial, (long long)b * channels + c);
        out[c] = total;
        tickets[c] = 0;
    }
}
