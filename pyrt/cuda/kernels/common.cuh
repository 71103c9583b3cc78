// Shared by every pyrt CUDA kernel file: the launch constants (PYRT_BLOCK threads a block,
// given with -D by pyrt/cuda/_module.py and by the compile test) and block-wide sums.
// NVRTC-compatible: no host headers, only what the CUDA compiler provides itself.
#pragma once

#ifndef PYRT_BLOCK
#error "PYRT_BLOCK (threads per block) must be defined by the compiler options"
#endif

#define PYRT_WARPS (PYRT_BLOCK / 32)

// NVRTC has no <math.h> and so none of its infinity and nan macros: the bit patterns instead
#define PYRT_INF __int_as_float(0x7f800000)
#define PYRT_NAN __int_as_float(0x7fc00000)

// the activation and unary op codes, the same numbers as pyrt/cuda/_module.py's OP_*
#define PYRT_OP_IDENTITY 0
#define PYRT_OP_RELU 1
#define PYRT_OP_SIGMOID 2
#define PYRT_OP_TANH 3
#define PYRT_OP_EXP 4
#define PYRT_OP_LOG 5
#define PYRT_OP_SQRT 6
#define PYRT_OP_NEG 7

__device__ __forceinline__ float pyrt_warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// The sum of `v` over the block, valid in thread 0. Every thread must call it. Partial sums
// merge in a fixed order (lanes by shuffles, then warps 0, 1, ...), so the result depends on
// the launch shape alone, not on scheduling.
__device__ __forceinline__ float pyrt_block_sum(float v) {
    __shared__ float warp_sums[PYRT_WARPS];
    v = pyrt_warp_sum(v);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    float total = 0.0f;
    if (threadIdx.x == 0)
        for (int w = 0; w < PYRT_WARPS; ++w) total += warp_sums[w];
    __syncthreads();  // warp_sums may be reused by the caller's next call
    return total;
}

__device__ __forceinline__ float pyrt_sigmoid(float x) {
    // from exp(-|x|), so that neither tail overflows
    const float e = expf(-fabsf(x));
    return x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}

__device__ __forceinline__ float pyrt_activate(int act, float v) {
    switch (act) {
    case PYRT_OP_RELU: return v > 0.0f || v != v ? v : 0.0f;  // nan stays nan
    case PYRT_OP_SIGMOID: return pyrt_sigmoid(v);
    case PYRT_OP_TANH: return tanhf(v);
    default: return v;
    }
}
