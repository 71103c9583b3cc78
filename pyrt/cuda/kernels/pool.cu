// Max and average pooling of [planes, h, w] inputs (planes = n * c) and their gradients.
// The gradients gather: one thread per input pixel adds up the outputs whose windows cover
// it, so no atomics and no zero-fill are needed and the sums run in a fixed order.
#include "common.cuh"

// the output rows (or columns) whose windows cover input row y: [*lo, *hi)
__device__ __forceinline__ void pyrt_covering(long long y, long long k, long long s,
                                              long long p, long long out, long long *lo,
                                              long long *hi) {
    const long long top = y + p - k + 1;  // first window start that still covers y
    *lo = top <= 0 ? 0 : (top + s - 1) / s;
    const long long last = (y + p) / s + 1;
    *hi = last < out ? last : out;
}

// y = the maximum of each window (padding is -inf; its taps dh rows and dw columns apart),
// idx = the flat h * w index of the first maximum in its plane, when want_idx. A nan wins
// over any number and a later nan over an earlier one, as in the CPU kernel
// (csrc/kernels/pool2d.c) and PyTorch.
extern "C" __global__ void pyrt_max_pool_forward(const float *__restrict__ x,
                                                 float *__restrict__ y,
                                                 long long *__restrict__ idx,
                                                 long long planes, long long h, long long w,
                                                 long long kh, long long kw, long long sh,
                                                 long long sw, long long ph, long long pw,
                                                 long long oh, long long ow, long long dh,
                                                 long long dw, long long want_idx) {
    const long long n = planes * oh * ow;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const long long ox = i % ow, oy = (i / ow) % oh, p = i / (ow * oh);
        const float *plane = x + p * h * w;
        float best = -PYRT_INF;
        long long at = -1;
        for (long long a = 0; a < kh; ++a) {
            const long long yy = oy * sh - ph + a * dh;
            if (yy < 0 || yy >= h) continue;
            for (long long b = 0; b < kw; ++b) {
                const long long xx = ox * sw - pw + b * dw;
                if (xx < 0 || xx >= w) continue;
                const float v = plane[yy * w + xx];
                if (at < 0 || v > best || v != v) {
                    best = v;
                    at = yy * w + xx;
                }
            }
        }
        y[i] = best;
        if (want_idx) idx[i] = at;
    }
}

// dx = the sum of the gradients of the outputs whose maximum this pixel was, in output order
// (as the CPU kernel scatters them). The windows that cover a pixel are those of its taps:
// output row oy covers row yy through tap a when oy * sh - ph + a * dh == yy (dh: the
// dilation), and taps taken from the last to the first give the rows in increasing order.
extern "C" __global__ void pyrt_max_pool_backward(const float *__restrict__ gy,
                                                  const long long *__restrict__ idx,
                                                  float *__restrict__ dx, long long planes,
                                                  long long h, long long w, long long kh,
                                                  long long kw, long long sh, long long sw,
                                                  long long ph, long long pw, long long oh,
                                                  long long ow, long long dh, long long dw) {
    const long long n = planes * h * w;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const long long xx = i % w, yy = (i / w) % h, p = i / (w * h), at = yy * w + xx;
        const long long base = p * oh * ow;
        float acc = 0.0f;
        for (long long a = kh - 1; a >= 0; --a) {
            const long long ty = yy + ph - a * dh;
            if (ty < 0 || ty % sh != 0 || ty / sh >= oh) continue;
            for (long long b = kw - 1; b >= 0; --b) {
                const long long tx = xx + pw - b * dw;
                if (tx < 0 || tx % sw != 0 || tx / sw >= ow) continue;
                const long long o = base + (ty / sh) * ow + tx / sw;
                if (idx[o] == at) acc += gy[o];
            }
        }
        dx[i] = acc;
    }
}

// the divisor of the window at output (oy, ox): its pixels within the padded input (kh * kw
// unless ceil_mode lets it hang past), or with exclude_pad within the input (csrc pool2d.c)
__device__ float pyrt_avg_divisor(long long oy, long long ox, long long h, long long w,
                                  long long kh, long long kw, long long sh, long long sw,
                                  long long ph, long long pw, long long exclude_pad) {
    long long a = oy * sh - ph, b = ox * sw - pw;
    long long ae = min(a + kh, h + ph), be = min(b + kw, w + pw);
    if (exclude_pad) {
        a = max(a, 0LL);
        b = max(b, 0LL);
        ae = min(ae, h);
        be = min(be, w);
    }
    return (float)((ae - a) * (be - b));
}

// the mean of each window, padding counted as zeros in the divisor unless exclude_pad
extern "C" __global__ void pyrt_avg_pool_forward(const float *__restrict__ x,
                                                 float *__restrict__ y, long long planes,
                                                 long long h, long long w, long long kh,
                                                 long long kw, long long sh, long long sw,
                                                 long long ph, long long pw, long long oh,
                                                 long long ow, long long exclude_pad) {
    const long long n = planes * oh * ow;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const long long ox = i % ow, oy = (i / ow) % oh, p = i / (ow * oh);
        const float *plane = x + p * h * w;
        float acc = 0.0f;
        for (long long a = 0; a < kh; ++a) {
            const long long yy = oy * sh - ph + a;
            if (yy < 0 || yy >= h) continue;
            for (long long b = 0; b < kw; ++b) {
                const long long xx = ox * sw - pw + b;
                if (xx >= 0 && xx < w) acc += plane[yy * w + xx];
            }
        }
        y[i] = acc / pyrt_avg_divisor(oy, ox, h, w, kh, kw, sh, sw, ph, pw, exclude_pad);
    }
}

extern "C" __global__ void pyrt_avg_pool_backward(const float *__restrict__ gy,
                                                  float *__restrict__ dx, long long planes,
                                                  long long h, long long w, long long kh,
                                                  long long kw, long long sh, long long sw,
                                                  long long ph, long long pw, long long oh,
                                                  long long ow, long long exclude_pad) {
    const long long n = planes * h * w;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const long long xx = i % w, yy = (i / w) % h, p = i / (w * h);
        long long y0, y1, x0, x1;
        pyrt_covering(yy, kh, sh, ph, oh, &y0, &y1);
        pyrt_covering(xx, kw, sw, pw, ow, &x0, &x1);
        const float *plane = gy + p * oh * ow;
        float acc = 0.0f;
        for (long long a = y0; a < y1; ++a)
            for (long long b = x0; b < x1; ++b)
                acc += plane[a * ow + b] /
                       pyrt_avg_divisor(a, b, h, w, kh, kw, sh, sw, ph, pw, exclude_pad);
        dx[i] = acc;
    }
}
