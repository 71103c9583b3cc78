// Losses with their gradients in the same pass, launched as one block so that the mean is
// summed in a fixed order and written without atomics or a second launch: the loss stays
// on the device, nothing is copied to the host.
#include "common.cuh"

// Mean cross-entropy of softmax(z [n, c]) against labels [n] (int64), and, with want_grad,
// grad = (softmax(z) - onehot(labels)) / kept. With use_ignore the rows labelled ignore_index
// do not count: their loss and gradient are 0, and kept, the rows the mean is over, is the
// number of the others (none: the loss is 0 / 0, nan, as PyTorch's; the gradient 0); without,
// kept is n. Warp w takes rows w, w + PYRT_WARPS, ...; its lanes stride over the row. A label
// outside [0, c) that is not ignored makes the loss nan (checking it on the host would need
// a device-to-host copy).
extern "C" __global__ void pyrt_cross_entropy(const float *__restrict__ z,
                                              const long long *__restrict__ labels,
                                              float *__restrict__ loss,
                                              float *__restrict__ grad, long long n,
                                              long long c, long long want_grad,
                                              long long use_ignore, long long ignore_index) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __shared__ unsigned long long kept_rows;
    if (use_ignore) {
        // the rows that count, an integer sum (exact and in no particular order)
        if (threadIdx.x == 0) kept_rows = 0;
        __syncthreads();
        unsigned long long mine = 0;
        for (long long r = threadIdx.x; r < n; r += PYRT_BLOCK) mine += labels[r] != ignore_index;
        for (int o = 16; o > 0; o >>= 1) mine += __shfl_down_sync(0xffffffffu, mine, o);
        if (lane == 0) atomicAdd(&kept_rows, mine);
        __syncthreads();
    }
    const float inv_n = 1.0f / (float)(use_ignore ? (long long)kept_rows : n);
    float warp_loss = 0.0f;  // kept by lane 0
    for (long long r = warp; r < n; r += PYRT_WARPS) {
        const long long label = labels[r];
        if (use_ignore && label == ignore_index) {  // the whole warp's row: no shuffle skipped
            if (want_grad)
                for (long long j = lane; j < c; j += 32) grad[r * c + j] = 0.0f;
            continue;
        }
        const float *row = z + r * c;
        float m = -PYRT_INF;
        for (long long j = lane; j < c; j += 32) m = fmaxf(m, row[j]);
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        float s = 0.0f;
        for (long long j = lane; j < c; j += 32) s += expf(row[j] - m);
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        const bool valid = label >= 0 && label < c;
        if (lane == 0)
            warp_loss += valid ? m + logf(s) - row[label] : PYRT_NAN;
        if (want_grad) {
            const float inv_s = 1.0f / s;
            float *g = grad + r * c;
            // a label outside [0, c) makes its row NaN, as its loss is: a gradient that looks
            // right would let training step on past it
            for (long long j = lane; j < c; j += 32)
                g[j] = valid ? (expf(row[j] - m) * inv_s - (j == label ? 1.0f : 0.0f)) * inv_n
                             : PYRT_NAN;
        }
    }
    const float total = pyrt_block_sum(lane == 0 ? warp_loss : 0.0f);
    if (threadIdx.x == 0) loss[0] = total * inv_n;
}

// Mean binary cross-entropy of sigmoid(z) against targets t (same shape, n elements):
// max(z, 0) - z t + log(1 + exp(-|z|)); with want_grad, grad = (sigmoid(z) - t) / n.
extern "C" __global__ void pyrt_bce_with_logits(const float *__restrict__ z,
                                                const float *__restrict__ t,
                                                float *__restrict__ loss,
                                                float *__restrict__ grad, long long n,
                                                long long want_grad) {
    const float inv_n = 1.0f / (float)n;
    float acc = 0.0f;
    for (long long i = threadIdx.x; i < n; i += PYRT_BLOCK) {
        const float x = z[i], y = t[i];
        acc += fmaxf(x, 0.0f) - x * y + log1pf(expf(-fabsf(x)));
        if (want_grad) grad[i] = (pyrt_sigmoid(x) - y) * inv_n;
    }
    const float total = pyrt_block_sum(acc);
    if (threadIdx.x == 0) loss[0] = total * inv_n;
}
