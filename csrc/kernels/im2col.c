/*
 * im2col.c - unfold an image into the matrix whose product with the filters is the
 * convolution, in either orientation, and fold such a matrix back (conv_internal.h).
 *
 * Row (c, i, j) of cols holds, for every output pixel (y, x), the input pixel the filter tap
 * (i, j) of channel c lies on: x[c, y*stride_h - pad_h + i*dilation_h, x*stride_w - pad_w +
 * j*dilation_w], or 0 in the padding. Along a row of output pixels the input column moves by
 * stride_w, so each stretch of cols is a zero run, a (strided) copy of one input row and
 * another zero run; the bounds of the copy are computed once per stretch rather than tested
 * per pixel.
 *
 * The patch matrix is the transpose, with its columns in another order: row p holds all
 * the taps of output pixel p, channel fastest (column (i*kw + j)*c + ch). Read from the image
 * in channels-last order, each tap of a pixel is a run of c contiguous floats, a copy of
 * hundreds of bytes for a wide layer, where cols' stretches are rows of the output (8 to 32
 * floats).
 *
 * All three are parallel loops: im2col over rows of cols, patches over its rows (each
 * written by one task), col2im over input channels (each channel's taps are summed by the one
 * task that owns that channel of dx, so there are no races and the order of the sums is
 * fixed).
 */
#include <string.h>

#include "conv_internal.h"

/* Elements a chunk of either loop should move: a few microseconds of memory traffic. */
#define CHUNK_ELEMS 8192

/* The output columns x with 0 <= x*stride - pad + j < w: [*lo, *hi). (j is the tap's column
 * offset within the window, its index times the dilation.) */
static void valid_span(int64_t ow, int64_t w, int64_t stride, int64_t pad, int64_t j,
                       int64_t *lo, int64_t *hi)
{
    int64_t first = pad - j; /* x*stride must reach this */
    int64_t a = first > 0 ? (first + stride - 1) / stride : 0;
    int64_t end = w + pad - j; /* x*stride must stay below this */
    int64_t b = end > 0 ? (end + stride - 1) / stride : 0;
    if (b > ow)
        b = ow;
    if (a > b)
        a = b;
    *lo = a;
    *hi = b;
}

typedef struct unfold_ctx {
    const pyrt_conv_shape *s;
    const float *x;
    float *cols;
} unfold_ctx;

static int im2col_rows(void *arg, int64_t r0, int64_t r1)
{
    const unfold_ctx *u = arg;
    const pyrt_conv_shape *s = u->s;
    const int64_t ow = s->ow, npix = s->oh * s->ow;
    for (int64_t r = r0; r < r1; r++) {
        /* the tap's offsets in the window */
        const int64_t c = r / (s->kh * s->kw), i = r / s->kw % s->kh * s->dilation_h;
        const int64_t j = r % s->kw * s->dilation_w;
        const float *plane = u->x + c * s->h * s->w;
        float *out = u->cols + r * npix;
        int64_t lo, hi;
        valid_span(ow, s->w, s->stride_w, s->pad_w, j, &lo, &hi);
        for (int64_t y = 0; y < s->oh; y++, out += ow) {
            const int64_t iy = y * s->stride_h - s->pad_h + i;
            if (iy < 0 || iy >= s->h) {
                memset(out, 0, (size_t)ow * sizeof(float));
                continue;
            }
            /* output column x reads input column x*stride_w + shift; the stretches are a
             * few floats to a few dozen (rows of 8 to 32 pixels), so loops the compiler
             * vectorises in line: calls to memset and memcpy for each of them took a fifth
             * of a wide layer's weight gradient (128 channels over 8x8 images) */
            const float *restrict src = plane + iy * s->w;
            float *restrict dst = out;
            const int64_t shift = j - s->pad_w;
            for (int64_t x = 0; x < lo; x++)
                dst[x] = 0.0f;
            if (s->stride_w == 1)
                for (int64_t x = lo; x < hi; x++)
                    dst[x] = src[x + shift];
            else
                for (int64_t x = lo; x < hi; x++)
                    dst[x] = src[x * s->stride_w + shift];
            for (int64_t x = hi; x < ow; x++)
                dst[x] = 0.0f;
        }
    }
    return 0;
}

void conv_im2col(const pyrt_conv_shape *s, const float *x, float *cols)
{
    const int64_t npix = s->oh * s->ow, nrows = s->c * s->kh * s->kw;
    unfold_ctx u = {s, x, cols};
    int64_t grain = npix > 0 ? (CHUNK_ELEMS + npix - 1) / npix : nrows;
    pyrt_parallel_for(nrows, grain, im2col_rows, &u);
}

typedef struct patch_ctx {
    const pyrt_conv_shape *s;
    const float *hwc;
    int64_t p0, ld;
    float *patches;
} patch_ctx;

/* n floats from src to dst: runs of a few floats in line, longer ones by memcpy. */
static inline void copy_run(float *restrict dst, const float *restrict src, int64_t n)
{
    if (n >= 32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    }
    for (int64_t e = 0; e < n; e++)
        dst[e] = src[e];
}

static inline void zero_run(float *restrict dst, int64_t n)
{
    for (int64_t e = 0; e < n; e++)
        dst[e] = 0.0f;
}

static int patch_rows(void *arg, int64_t q0, int64_t q1)
{
    const patch_ctx *u = arg;
    const pyrt_conv_shape *s = u->s;
    const int64_t c = s->c;
    for (int64_t q = q0; q < q1; q++) {
        const int64_t p = u->p0 + q, y = p / s->ow, x = p % s->ow;
        float *dst = u->patches + q * u->ld;
        /* the taps j in [lo, hi) of a window row lie inside the image */
        int64_t lo, hi;
        valid_span(s->kw, s->w, s->dilation_w, s->pad_w - x * s->stride_w, 0, &lo, &hi);
        const int64_t x0 = x * s->stride_w - s->pad_w;
        for (int64_t i = 0; i < s->kh; i++, dst += s->kw * c) {
            const int64_t iy = y * s->stride_h - s->pad_h + i * s->dilation_h;
            if (iy < 0 || iy >= s->h) {
                zero_run(dst, s->kw * c);
                continue;
            }
            const float *row = u->hwc + iy * s->w * c;
            zero_run(dst, lo * c);
            if (s->dilation_w == 1) /* the taps' pixels are adjacent: one run */
                copy_run(dst + lo * c, row + (x0 + lo) * c, (hi - lo) * c);
            else
                for (int64_t j = lo; j < hi; j++)
                    copy_run(dst + j * c, row + (x0 + j * s->dilation_w) * c, c);
            zero_run(dst + hi * c, (s->kw - hi) * c);
        }
    }
    return 0;
}

void conv_patches(const pyrt_conv_shape *s, const float *hwc, int64_t p0, int64_t p1,
                  float *patches, int64_t ld)
{
    const int64_t taps = s->c * s->kh * s->kw;
    patch_ctx u = {s, hwc, p0, ld, patches};
    int64_t grain = taps > 0 ? (CHUNK_ELEMS + taps - 1) / taps : p1 - p0;
    pyrt_parallel_for(p1 - p0, grain, patch_rows, &u);
}

typedef struct fold_ctx {
    const pyrt_conv_shape *s;
    const float *cols;
    float *dx;
} fold_ctx;

static int col2im_channels(void *arg, int64_t c0, int64_t c1)
{
    const fold_ctx *f = arg;
    const pyrt_conv_shape *s = f->s;
    const int64_t ow = s->ow, npix = s->oh * s->ow;
    for (int64_t c = c0; c < c1; c++) {
        float *plane = f->dx + c * s->h * s->w;
        memset(plane, 0, (size_t)(s->h * s->w) * sizeof(float));
        for (int64_t ti = 0; ti < s->kh; ti++)
            for (int64_t tj = 0; tj < s->kw; tj++) {
                const float *in = f->cols + ((c * s->kh + ti) * s->kw + tj) * npix;
                const int64_t i = ti * s->dilation_h, j = tj * s->dilation_w;
                int64_t lo, hi;
                valid_span(ow, s->w, s->stride_w, s->pad_w, j, &lo, &hi);
                for (int64_t y = 0; y < s->oh; y++, in += ow) {
                    const int64_t iy = y * s->stride_h - s->pad_h + i;
                    if (iy < 0 || iy >= s->h)
                        continue;
                    float *dst = plane + iy * s->w;
                    const int64_t shift = j - s->pad_w;
                    for (int64_t x = lo; x < hi; x++)
                        dst[x * s->stride_w + shift] += in[x];
                }
            }
    }
    return 0;
}

void conv_col2im(const pyrt_conv_shape *s, const float *cols, float *dx)
{
    const int64_t per_channel = s->kh * s->kw * s->oh * s->ow + s->h * s->w;
    fold_ctx f = {s, cols, dx};
    int64_t grain = per_channel > 0 ? (CHUNK_ELEMS + per_channel - 1) / per_channel : s->c;
    pyrt_parallel_for(s->c, grain, col2im_channels, &f);
}
