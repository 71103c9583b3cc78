// conv2d as a batched GEMM: im2col lays each image's windows out as cols [n, c*kh*kw, oh*ow],
// so that weight [k, c*kh*kw] @ cols[i] is image i's [k, oh*ow] output, already in NCHW
// order (one strided-batched cuBLAS call, no transpose). The input gradient comes back
// through col2im, written as a gather: one thread per input pixel sums the columns that
// read it, so no atomics, no zero-fill and a fixed summation order. Tap (a, b) of a window
// lies a * dh rows and b * dw columns from its first (dh, dw: the dilation).
#include "common.cuh"

extern "C" __global__ void pyrt_im2col(const float *__restrict__ x, float *__restrict__ cols,
                                       long long n, long long c, long long h, long long w,
                                       long long kh, long long kw, long long sh,
                                       long long sw, long long ph, long long pw,
                                       long long oh, long long ow, long long dh,
                                       long long dw) {
    const long long ohw = oh * ow, rows = c * kh * kw, total = n * rows * ohw;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const long long q = i % ohw, row = (i / ohw) % rows, img = i / (ohw * rows);
        const long long b = row % kw, a = (row / kw) % kh, ch = row / (kw * kh);
        const long long yy = (q / ow) * sh - ph + a * dh, xx = (q % ow) * sw - pw + b * dw;
        cols[i] = yy >= 0 && yy < h && xx >= 0 && xx < w
                      ? x[((img * c + ch) * h + yy) * w + xx]
                      : 0.0f;
    }
}

extern "C" __global__ void pyrt_col2im(const float *__restrict__ cols, float *__restrict__ dx,
                                       long long n, long long c, long long h, long long w,
                                       long long kh, long long kw, long long sh,
                                       long long sw, long long ph, long long pw,
                                       long long oh, long long ow, long long dh,
                                       long long dw) {
    const long long ohw = oh * ow, rows = c * kh * kw, total = n * c * h * w;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const long long xx = i % w, yy = (i / w) % h, ch = (i / (w * h)) % c;
        const long long img = i / (w * h * c);
        const float *base = cols + img * rows * ohw;
        float acc = 0.0f;
        // taps (a, b) that put this pixel at output (oy, ox): oy * sh - ph + a * dh = yy
        for (long long a = 0; a < kh; ++a) {
            const long long ty = yy + ph - a * dh;
            if (ty < 0 || ty % sh != 0 || ty / sh >= oh) continue;
            for (long long b = 0; b < kw; ++b) {
                const long long tx = xx + pw - b * dw;
                if (tx < 0 || tx % sw != 0 || tx / sw >= ow) continue;
                acc += base[((ch * kh + a) * kw + b) * ohw + (ty / sh) * ow + tx / sw];
            }
        }
        dx[i] = acc;
    }
}
