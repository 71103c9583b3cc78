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

// Loads a thread keeps in flight in the vector kernels below: with one load at a time, the
// 1024 threads of an SM have 4 KB in flight, a third of what HBM's latency needs to reach
// its bandwidth; four float4 loads a thread give 64 KB.
constexpr int pyrt_unroll = 4;  // a constant expression, as #pragma unroll needs

__device__ __forceinline__ void pyrt_add4(float4 &acc, float4 v) {
    acc.x += v.x;
    acc.y += v.y;
    acc.z += v.z;
    acc.w += v.w;
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

// The last block's sum of the slices: out[j] = the sum over b < slices of partial[b * cols +
// j], for every j < cols <= PYRT_BLOCK. Every thread of the block takes part: thread t adds
// the slices t / cols, t / cols + lanes, ... of column t % cols (lanes = PYRT_BLOCK / cols of
// them side by side), then thread j adds column j's lanes in order. One thread a column, going
// through the slices alone, waited on one load after another: the longest part of the kernel
// on the CNN's gradients. Loads through L2 (__ldcg): the other blocks' partial sums are not in
// this SM's L1, and their fence and ticket come before this read.
__device__ __forceinline__ void pyrt_sum_slices(const float *partial, float *out,
                                                long long slices, long long cols) {
    __shared__ float lane_sums[PYRT_BLOCK];
    const int t = threadIdx.x;
    const long long lanes = PYRT_BLOCK / cols;
    float s = 0.0f;
    if (t < lanes * cols)
        for (long long b = t / cols; b < slices; b += lanes) s += __ldcg(partial + b * cols + t % cols);
    lane_sums[t] = s;
    __syncthreads();
    if (t < cols) {
        float total = 0.0f;
        for (long long m = t; m < lanes * cols; m += cols) total += lane_sums[m];
        out[t] = total;
    }
}

// The end of a plane-sum block (grid (channels, slices)): thread 0 holds the block's sum `s`
// of its slice of channel c; the block last to finish channel c adds the slices' sums, with
// every thread taking part (see pyrt_sum_slices), writes out[c] and resets the ticket.
__device__ __forceinline__ void pyrt_finish_plane(float s, float *out, float *partial,
                                                  unsigned int *tickets, long long channels) {
    const unsigned int c = blockIdx.x, slices = gridDim.y;
    if (threadIdx.x == 0) partial[(unsigned long long)blockIdx.y * channels + c] = s;
    if (pyrt_last_block(&tickets[c])) {
        float part = 0.0f;
        for (unsigned int b = threadIdx.x; b < slices; b += PYRT_BLOCK)
            part += __ldcg(partial + (unsigned long long)b * channels + c);
        const float total = pyrt_block_sum(part);
        if (threadIdx.x == 0) {
            out[c] = total;
            tickets[c] = 0;
        }
    }
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
            pyrt_sum_slices(partial, out, slices, cols);
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
    pyrt_finish_plane(pyrt_block_sum(acc), out, partial, tickets, channels);
}

// pyrt_bias_grad_rows's narrow layout read as float4, for cols a multiple of 4 up to
// PYRT_BLOCK and a 16-byte-aligned grad (the host checks both). A float4 "column" q holds
// columns 4q .. 4q + 3; thread j of a block reads the float4 j + slice * width, stepping by
// slices * width, where width is the largest multiple of cols / 4 within the block, so it
// stays in float4 column j % (cols / 4). Each thread has pyrt_unroll loads in flight at once.
extern "C" __global__ void pyrt_bias_grad_rows4(const float4 *__restrict__ grad,
                                                float *__restrict__ out,
                                                float *__restrict__ partial,
                                                unsigned int *__restrict__ tickets,
                                                long long rows, long long cols) {
    __shared__ float4 sums[PYRT_BLOCK];
    const int j = threadIdx.x;
    const long long slices = gridDim.y, slice = blockIdx.y;
    const long long cols4 = cols / 4, width = (PYRT_BLOCK / cols4) * cols4, n = rows * cols4;
    const long long step = slices * width;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (j < width) {
        long long e = slice * width + j;
        for (; e + (pyrt_unroll - 1) * step < n; e += pyrt_unroll * step) {
            float4 v[pyrt_unroll];
#pragma unroll
            for (int u = 0; u < pyrt_unroll; ++u) v[u] = grad[e + u * step];
#pragma unroll
            for (int u = 0; u < pyrt_unroll; ++u) pyrt_add4(acc, v[u]);
        }
#pragma unroll pyrt_unroll
        for (; e < n; e += step) pyrt_add4(acc, grad[e]);
    }
    sums[j] = acc;
    __syncthreads();
    if (j < cols4) {
        float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        for (long long m = j; m < width; m += cols4) pyrt_add4(s, sums[m]);
        float *to = partial + slice * cols + 4 * j;
        to[0] = s.x;
        to[1] = s.y;
        to[2] = s.z;
        to[3] = s.w;
    }
    if (pyrt_last_block(&tickets[0])) {
        pyrt_sum_slices(partial, out, slices, cols);
        if (j == 0) tickets[0] = 0;
    }
}

// pyrt_bias_grad_planes with inner a multiple of 4 and a 16-byte-aligned grad (the host
// checks both), read as float4: e counts the float4 of channel c's outer * inner / 4, and
// each thread has pyrt_unroll loads in flight at once.
extern "C" __global__ void pyrt_bias_grad_planes4(const float4 *__restrict__ grad,
                                                  float *__restrict__ out,
                                                  float *__restrict__ partial,
                                                  unsigned int *__restrict__ tickets,
                                                  long long outer, long long channels,
                                                  long long inner) {
    const unsigned int c = blockIdx.x, slices = gridDim.y, slice = blockIdx.y;
    const unsigned int in = (unsigned int)(inner / 4), n = (unsigned int)(outer * inner / 4);
    const unsigned int step = slices * PYRT_BLOCK;
    const unsigned long long plane_step = (unsigned long long)channels * in;
    const float4 *base = grad + (unsigned long long)c * in;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    unsigned int e = slice * PYRT_BLOCK + threadIdx.x;
    // n < 2^29 (the host keeps outer * inner below 2^31) and the host gives each thread at
    // least pyrt_unroll float4 (step <= n / 4 + PYRT_BLOCK), so e + (pyrt_unroll - 1) * step
    // stays below 2^32
    for (; e + (pyrt_unroll - 1) * step < n; e += pyrt_unroll * step) {
        float4 v[pyrt_unroll];
#pragma unroll
        for (int u = 0; u < pyrt_unroll; ++u) {
            const unsigned int f = e + u * step, p = f / in;
            v[u] = base[p * plane_step + (f - p * in)];
        }
#pragma unroll
        for (int u = 0; u < pyrt_unroll; ++u) pyrt_add4(acc, v[u]);
    }
#pragma unroll pyrt_unroll
    for (; e < n; e += step) {
        const unsigned int p = e / in;
        pyrt_add4(acc, base[p * plane_step + (e - p * in)]);
    }
    pyrt_finish_plane(pyrt_block_sum((acc.x + acc.y) + (acc.z + acc.w)), out, partial, tickets,
                      channels);
}
