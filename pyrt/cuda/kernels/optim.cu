// Fused SGD and Adam updates of every parameter of a model in one launch (multi-tensor).
//
// The parameters and their optimizer state are fixed arrays: their addresses sit in device
// tables built once by pyrt/cuda/ops/optim.py, with the work cut into chunks of PYRT_CHUNK
// elements (chunk_tensor[b] and chunk_start[b] say which tensor and where block b works).
// Gradients are new arrays every step, so their addresses come by value as kernel arguments
// (up to PYRT_MAX_TENSORS of them), like the hyper-parameters: nothing is written to the
// device before a step.
#include "common.cuh"

#ifndef PYRT_CHUNK
#error "PYRT_CHUNK (elements per block) must be defined by the compiler options"
#endif
#ifndef PYRT_MAX_TENSORS
#error "PYRT_MAX_TENSORS (gradients per launch) must be defined by the compiler options"
#endif

struct pyrt_grads {
    unsigned long long ptr[PYRT_MAX_TENSORS];
};

// the gradient of tensor t among those passed by value
__device__ __forceinline__ const float *pyrt_grad(const pyrt_grads &g, int t) {
    return reinterpret_cast<const float *>(g.ptr[t]);
}

#define PYRT_GRAD_ARGS                                                                    \
    unsigned long long g0, unsigned long long g1, unsigned long long g2,                  \
        unsigned long long g3, unsigned long long g4, unsigned long long g5,              \
        unsigned long long g6, unsigned long long g7, unsigned long long g8,              \
        unsigned long long g9, unsigned long long g10, unsigned long long g11,            \
        unsigned long long g12, unsigned long long g13, unsigned long long g14,           \
        unsigned long long g15
#define PYRT_GRADS {{g0, g1, g2, g3, g4, g5, g6, g7, g8, g9, g10, g11, g12, g13, g14, g15}}

#if PYRT_MAX_TENSORS != 16
#error "PYRT_GRAD_ARGS lists 16 gradients: PYRT_MAX_TENSORS must be 16"
#endif

// torch.optim.SGD: g += weight_decay * p; with momentum, buf = g on the first step, else
// momentum * buf + keep * g with keep = 1 - dampening, and g = g + momentum * buf (nesterov)
// or buf; p -= lr * g. keep comes from the host, computed in double as the CPU kernel does.
extern "C" __global__ void pyrt_sgd_multi(const unsigned long long *__restrict__ params,
                                          const unsigned long long *__restrict__ buffers,
                                          const long long *__restrict__ sizes,
                                          const int *__restrict__ chunk_tensor,
                                          const long long *__restrict__ chunk_start,
                                          PYRT_GRAD_ARGS, float lr, float momentum,
                                          float keep, float weight_decay,
                                          long long nesterov, long long first_step) {
    const pyrt_grads grads = PYRT_GRADS;
    const int t = chunk_tensor[blockIdx.x];
    const long long start = chunk_start[blockIdx.x];
    const long long stop = min(start + (long long)PYRT_CHUNK, sizes[t]);
    float *p = reinterpret_cast<float *>(params[t]);
    float *buf = momentum != 0.0f ? reinterpret_cast<float *>(buffers[t]) : nullptr;
    const float *grad = pyrt_grad(grads, t);
    for (long long i = start + threadIdx.x; i < stop; i += blockDim.x) {
        float g = grad[i];
        if (weight_decay != 0.0f) g = fmaf(weight_decay, p[i], g);
        if (buf != nullptr) {
            const float b = first_step ? g : fmaf(momentum, buf[i], keep * g);
            buf[i] = b;
            g = nesterov ? fmaf(momentum, b, g) : b;
        }
        p[i] = fmaf(-lr, g, p[i]);
    }
}

// torch.optim.Adam (amsgrad off, L2 weight decay): m = lerp(m, g, w1) with w1 = 1 - beta1,
// v = beta2 v + w2 g^2 with w2 = 1 - beta2, p += neg_step_size * m / (sqrt(v) / bc2_sqrt + eps)
// with neg_step_size = -lr / (1 - beta1^t) and bc2_sqrt = sqrt(1 - beta2^t) for the host's
// step count t. The host computes w1, w2 and the corrections in double, as the CPU kernel
// does: 1 - beta rounded in float would be 1.3e-5 off for beta2 = 0.999.
extern "C" __global__ void pyrt_adam_multi(const unsigned long long *__restrict__ params,
                                           const unsigned long long *__restrict__ exp_avgs,
                                           const unsigned long long *__restrict__ exp_avg_sqs,
                                           const long long *__restrict__ sizes,
                                           const int *__restrict__ chunk_tensor,
                                           const long long *__restrict__ chunk_start,
                                           PYRT_GRAD_ARGS, float w1, float beta2, float w2,
                                           float eps, float weight_decay, float neg_step_size,
                                           float bc2_sqrt) {
    const pyrt_grads grads = PYRT_GRADS;
    const int t = chunk_tensor[blockIdx.x];
    const long long start = chunk_start[blockIdx.x];
    const long long stop = min(start + (long long)PYRT_CHUNK, sizes[t]);
    float *p = reinterpret_cast<float *>(params[t]);
    float *m = reinterpret_cast<float *>(exp_avgs[t]);
    float *v = reinterpret_cast<float *>(exp_avg_sqs[t]);
    const float *grad = pyrt_grad(grads, t);
    for (long long i = start + threadIdx.x; i < stop; i += blockDim.x) {
        float g = grad[i];
        if (weight_decay != 0.0f) g = fmaf(weight_decay, p[i], g);
        // lerp as torch computes it: from whichever end is nearer to the weight
        const float d = g - m[i];
        const float mi = w1 < 0.5f ? fmaf(w1, d, m[i]) : fmaf(-d, 1.0f - w1, g);
        const float vi = fmaf(beta2, v[i], w2 * g * g);
        m[i] = mi;
        v[i] = vi;
        p[i] = fmaf(neg_step_size, mi / (sqrtf(vi) / bc2_sqrt + eps), p[i]);
    }
}
