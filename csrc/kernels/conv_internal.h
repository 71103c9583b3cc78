/*
 * conv_internal.h - helpers shared by the convolution kernels (conv2d.c, im2col.c,
 * conv_direct.c). Not part of the public API: pyrt.h is.
 *
 * Two ways to compute a convolution live here:
 *
 * - im2col + GEMM (im2col.c, any geometry): one image [c, h, w] is unfolded into a matrix
 *   cols[c*kh*kw, oh*ow] whose column p holds the window under output pixel p, so that the
 *   convolution is the product weight[k, c*kh*kw] @ cols. col2im folds such a matrix back,
 *   summing the entries that came from the same input pixel.
 *
 * - direct (conv_direct.c, stride 1, few input channels): the input is copied kw times,
 *   shifted, and every output plane is a sum of shifted input planes times scalar weights,
 *   computed in vector registers without unfolding the kh axis. With c*kh*kw small
 *   (the 1- and 8-channel layers of a small CNN) the unfolded matrix would be as large as the
 *   work done on it, and a GEMM of depth 9..72 spends more time packing than multiplying.
 *
 * Every function here is called from inside a parallel loop of conv2d.c and may itself run
 * nested parallel loops; all are safe to call from any thread. The vector helpers at the top
 * serve pool2d.c too.
 */
#ifndef PYRT_CONV_INTERNAL_H
#define PYRT_CONV_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pyrt.h"

#define CONV_HIDDEN __attribute__((visibility("hidden")))

/* ---- vectors -------------------------------------------------------------------------- */

/* The vector kernels are written once with GCC vector extensions and compiled twice: for
 * AVX2+FMA, chosen at run time when the CPU has both, and for the baseline instruction set.
 * The helpers are always inlined, so no vector crosses a call whose ABI could differ between
 * the two builds (which is all -Wpsabi warns about). */
#pragma GCC diagnostic ignored "-Wpsabi"

/* Lanes of the vectors. */
#define CONV_VEC 8

typedef float conv_vec __attribute__((vector_size(CONV_VEC * sizeof(float))));
typedef int32_t conv_ivec __attribute__((vector_size(CONV_VEC * sizeof(int32_t))));
typedef int64_t conv_lvec __attribute__((vector_size(CONV_VEC * sizeof(int64_t))));

#define CONV_INLINE static inline __attribute__((always_inline))

static inline int conv_have_avx2_fma(void)
{
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

static inline int conv_have_avx512(void)
{
    return __builtin_cpu_supports("avx512f") && conv_have_avx2_fma();
}

/* Define the function `name` (declare it static first for a file-local one) to run
 * body(args), compiled once for AVX2+FMA and once for the baseline instruction set, and
 * choose between the two at run time. */
#define CONV_DISPATCHED(name, body, params, args)                                              \
    __attribute__((target("avx2,fma"))) static void name##_avx2 params { body args; }        \
    static void name##_generic params { body args; }                                          \
    void name params                                                                          \
    {                                                                                         \
        if (conv_have_avx2_fma())                                                             \
            name##_avx2 args;                                                                 \
        else                                                                                  \
            name##_generic args;                                                              \
    }

/* The three helpers every vector loop needs, for a vector type VEC of N floats:
 *   LOAD(p)          a vector of N floats from p (any alignment);
 *   SPLAT(a)         a in every lane (a vector-scalar operation compiles to one broadcast; a
 *                    braced list of N copies does not);
 *   STORE(p, v, n)   the first n lanes of *v to p.
 * Instantiated here for conv_vec, and in conv_direct_lanes.h for each width it is built at. */
#define CONV_VEC_HELPERS(VEC, N, LOAD, SPLAT, STORE)                                          \
    CONV_INLINE VEC LOAD(const float *p)                                                      \
    {                                                                                         \
        VEC v;                                                                                \
        memcpy(&v, p, sizeof v);                                                              \
        return v;                                                                             \
    }                                                                                         \
    CONV_INLINE VEC SPLAT(float a)                                                            \
    {                                                                                         \
        return a - (VEC){0};                                                                  \
    }                                                                                         \
    CONV_INLINE void STORE(float *p, const VEC *v, int64_t n)                                 \
    {                                                                                         \
        if (n == (N)) {                                                                       \
            memcpy(p, v, sizeof *v);                                                          \
        } else {                                                                              \
            float lanes[N];                                                                   \
            memcpy(lanes, v, sizeof *v);                                                      \
            for (int64_t l = 0; l < n; l++)                                                   \
                p[l] = lanes[l];                                                              \
        }                                                                                     \
    }

CONV_VEC_HELPERS(conv_vec, CONV_VEC, vload, vsplat, vstore)

/* The sum of the lanes, always in the same tree. */
CONV_INLINE float vsum(const conv_vec *v)
{
    float t[CONV_VEC];
    memcpy(t, v, sizeof *v);
    return ((t[0] + t[4]) + (t[2] + t[6])) + ((t[1] + t[5]) + (t[3] + t[7]));
}

/* ---- im2col.c ------------------------------------------------------------------------- */

/* Unfold one image x[c, h, w] into cols[c*kh*kw, oh*ow] (zeros where the window hangs over
 * the padding). Parallel over the rows of cols. */
CONV_HIDDEN void conv_im2col(const pyrt_conv_shape *s, const float *x, float *cols);

/* Rows [p0, p1) of the patch matrix of one image, given channels-last (hwc[h, w, c]), into
 * patches[p1 - p0, kh*kw*c]: row p - p0 holds output pixel p's taps, tap (i, j) of channel ch
 * at column (i*kw + j)*c + ch (zero in the padding). Parallel over the rows. */
CONV_HIDDEN void conv_patches(const pyrt_conv_shape *s, const float *hwc, int64_t p0,
                              int64_t p1, float *patches, int64_t ld);

/* Fold cols[c*kh*kw, oh*ow] back into dx[c, h, w]: dx is overwritten with the sum of the
 * entries of cols that unfold from each pixel. Parallel over the channels of dx, each of
 * which only its own task writes. */
CONV_HIDDEN void conv_col2im(const pyrt_conv_shape *s, const float *cols, float *dx);

/* ---- conv_direct.c -------------------------------------------------------------------- */

/* A stride-1 cross-correlation of `cin` zero-padded planes with `cout` filters of kh x kw
 * whose taps lie dh rows and dw columns apart (the dilation), over a band of `rows` output rows
 * of width ow:
 *     out[o, y, x] = sum over c, i, j of w[o, c, i, j] * in[c, y + i*dh, x + j*dw].
 * The kernels read the input as kw shifted copies (conv_direct_shift): copy j holds
 * in[c, r, x + j*dw] for r < rows + dh*(kh - 1) and x < ow, rows of exactly ow values, planes
 * `in_plane` apart (conv_direct_plane), zero past their data. */
typedef struct conv_direct {
    int64_t cin, cout;
    int64_t kh, kw;
    int64_t dh, dw;    /* the taps' spacing */
    int64_t rows, ow;  /* output rows and width */
    int64_t in_plane;  /* distance between the planes of a shifted copy */
    int64_t out_plane; /* distance between the planes of out (forward) or dout (weight
                        * gradient): rows*ow, or more for a band of a taller image */
} conv_direct;

/* The widest vectors of the direct kernels (16 lanes with AVX-512, else 8): the planes of the
 * shifted copies are padded for them, and the filter gradient keeps this many partial sums
 * per entry at most. */
#define CONV_DIRECT_LANES_MAX 16

/* The plane size of the shifted copies for `rows` output rows of width ow, under a window
 * whose first and last taps are `span` rows apart, both included (dh*(kh - 1) + 1). */
CONV_HIDDEN int64_t conv_direct_plane(int64_t rows, int64_t span, int64_t ow);

/* Fill dst[kw][cin][in_plane] with the shifted copies of src[cin, h, w] (the padded input is
 * src moved down by `top` rows and right by `left` columns; negative values crop it):
 * copy j, channel c, row r, column x = src[c, r - top, x + j*dw - left], 0 outside src. With
 * zeros_ready, dst already holds the zeros of an earlier call with the same geometry and
 * only the data is copied. */
CONV_HIDDEN void conv_direct_shift(const conv_direct *g, const float *src, int64_t h,
                                   int64_t w, int64_t top, int64_t left, int zeros_ready,
                                   float *dst);

/* Lay out filters for conv_direct_forward: from w[cout, cin, kh, kw] (or, with `transpose`,
 * from the weight of the convolution this one is the input gradient of, w[cin, cout, kh, kw],
 * flipped in both spatial axes) into packed[cout * cin * kh * kw]. */
CONV_HIDDEN void conv_direct_pack(const conv_direct *g, const float *w, int transpose,
                                  float *packed);

/* out[cout, rows, ow] (planes out_plane apart) = the correlation of the shifted copies `in`
 * with the packed filters, plus bias[o] (bias may be NULL). */
CONV_HIDDEN void conv_direct_forward(const conv_direct *g, const float *in, const float *packed,
                                     const float *bias, float *out);

/* One band of output rows for conv_direct_dweight: the shifted copies of its input, its
 * output gradient [cout, rows, ow] (planes out_plane apart) and its number of rows. */
typedef struct conv_band {
    const float *in;
    const float *dout;
    int64_t rows;
} conv_band;

/* Most bands one conv_direct_dweight call takes. */
#define CONV_MAX_BANDS 8

/* The filter gradient of the correlation over `count` bands (1..CONV_MAX_BANDS), as L partial
 * sums per entry, L the lanes of the kernels' vectors (8 or 16, the same in every call of a
 * process): lanes[cout, cin, kh, kw][L] = the lanes of the sum over the bands, in order, and
 * their pixels y, x of dout[o, y, x] * in[c, y + i, x + j]. Each lane adds its terms in one
 * fixed order; conv_direct_fold_lanes adds the lanes up. `lanes` holds
 * CONV_DIRECT_LANES_MAX floats per entry. */
CONV_HIDDEN void conv_direct_dweight(const conv_direct *g, const conv_band *bands,
                                     int64_t count, float *lanes);

/* out[e] += the sum of the L lanes of entry e (as conv_direct_dweight wrote them), for
 * e < count, in a fixed order. */
CONV_HIDDEN void conv_direct_fold_lanes(const float *lanes, int64_t count, float *out);

/* sums[p] += the sum of x[p * stride + i] for i < len, in a fixed order, for p < planes. */
CONV_HIDDEN void conv_plane_sums(const float *x, int64_t planes, int64_t stride, int64_t len,
                                 float *sums);

#endif
