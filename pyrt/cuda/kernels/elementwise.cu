// Elementwise kernels: the unary ops and their gradients, and bias + activation fused into
// the pass that follows a GEMM. One thread an element, grid-stride loops so that any grid
// covers any size.
#include "common.cuh"

extern "C" __global__ void pyrt_unary(long long op, const float *__restrict__ x,
                                      float *__restrict__ y, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const float v = x[i];
        float r;
        switch (op) {
        case PYRT_OP_EXP: r = expf(v); break;
        case PYRT_OP_LOG: r = logf(v); break;
        case PYRT_OP_SQRT: r = sqrtf(v); break;
        case PYRT_OP_NEG: r = -v; break;
        default: r = pyrt_activate((int)op, v); break;
        }
        y[i] = r;
    }
}

// dx from the upstream gradient g and what the forward pass saved: relu and log keep their
// input x, the others their output y.
extern "C" __global__ void pyrt_unary_backward(long long op, const float *__restrict__ g,
                                               const float *__restrict__ saved,
                                               float *__restrict__ dx, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const float gi = g[i], s = saved[i];
        float r;
        switch (op) {
        case PYRT_OP_RELU: r = s <= 0.0f ? 0.0f : gi; break;  // nan in x passes grad
        case PYRT_OP_SIGMOID: r = gi * (1.0f - s) * s; break;
        case PYRT_OP_TANH: r = gi * (1.0f - s * s); break;
        case PYRT_OP_EXP: r = gi * s; break;
        case PYRT_OP_LOG: r = gi / s; break;
        case PYRT_OP_SQRT: r = gi / (2.0f * s); break;
        default: r = gi; break;
        }
        dx[i] = r;
    }
}

// y[r, c] = act(x[r, c] + bias[c]) over a C-contiguous [rows, cols] array; bias is read
// only when has_bias is set. y may be x.
extern "C" __global__ void pyrt_bias_act(const float *x, const float *__restrict__ bias,
                                         float *y, long long rows, long long cols,
                                         long long has_bias, long long act) {
    const long long n = rows * cols;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const float v = has_bias ? x[i] + bias[i % cols] : x[i];
        y[i] = pyrt_activate((int)act, v);
    }
}

// y[p, c, i] = x[p, c, i] + bias[c] over planes of `inner` elements (a conv2d result
// [n, k, oh * ow]); y may be x.
extern "C" __global__ void pyrt_bias_planes(const float *x, const float *__restrict__ bias,
                                            float *y, long long outer, long long channels,
                                            long long inner) {
    const long long n = outer * channels * inner;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        y[i] = x[i] + bias[(i / inner) % channels];
}

extern "C" __global__ void pyrt_addcmul(const float *input, const float *t1, const float *t2,
                                        float value, float *out, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        out[i] = fmaf(value * t1[i], t2[i], input[i]);
}
