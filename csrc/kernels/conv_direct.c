/*
 * conv_direct.c - stride-1 convolutions computed straight from shifted copies of the input,
 * for layers with few taps per output (conv_internal.h says when conv2d.c uses them).
 *
 * Layout. For each filter column j the input is copied once with its rows re-cut to the
 * output width: copy_j[c, r, x] = in[c, r - pad_h, x + j*dw - pad_w] (zero outside the
 * input; dw, dh: the dilation), rows of exactly ow values. Output pixel p = y*ow + x then reads
 * tap (i, j) at copy_j[c, p + i*dh*ow]: one fixed offset per tap for the whole plane, so a
 * plane is one flat run of positions with no row ends inside it and no lanes wasted at the end
 * of each row.
 * Building the kw copies costs kw passes over a (few-channel) image, much less than the
 * c*kh*kw passes of a full im2col.
 *
 * Forward. A tile is KB filters x NV vectors of consecutive positions (8 lanes each, 16 with
 * AVX-512: conv_direct_lanes.h holds these kernels), held in KB*NV vector registers. For each
 * channel c and tap (i, j) it adds w[o, c, i, j] * copy_j[c, p + i*ow ...]: one load per vector,
 * shared by the KB filters, and one broadcast weight per filter, shared by the NV vectors. The
 * packed weights keep the KB weights of a tap side by side, so the broadcasts walk memory in
 * order. The last vector of a plane may run past its end: its extra lanes read zeros and are not
 * stored.
 *
 * Filter gradient. dw[o, c, i, j] is the dot product of output-gradient plane o with copy_j
 * of channel c at offset i*ow. A tile keeps KB filters x TW taps as vector partial sums over
 * the planes of several images (bands), so each gradient vector feeds TW taps and each input
 * vector KB filters; the lanes are added up once at the end (fold_lanes).
 */
#include <string.h>

#include "conv_internal.h"

/* Filters per tile: 4 while at least 4 are left, then 2, then 1. */
#define MAX_KB 4
/* Vectors per forward tile for each KB: KB * NV accumulators, the NV inputs (or, with one
 * filter, memory operands) and a broadcast fit the 16 vector registers of AVX2 (AVX-512 has
 * 32), with enough independent sums to hide the latency of the FMAs. */
#define NV_FOR(kb) ((kb) == 4 ? 3 : (kb) == 2 ? 5 : 8)
#define MAX_NV 8
/* Filter taps per gradient tile. */
#define MAX_TW 3
/* Data a gradient tile may stream over its group of bands (an L1 cache's worth). */
#define DW_TILE_BYTES (24 << 10)

static int64_t block_size(int64_t left)
{
    return left >= 4 ? 4 : left >= 2 ? 2 : 1;
}

int64_t conv_direct_plane(int64_t rows, int64_t span, int64_t ow)
{
    const int64_t lanes = CONV_DIRECT_LANES_MAX;
    return ((rows + span - 1) * ow + 2 * lanes - 1) / lanes * lanes;
}

/* ---- shifted copies ------------------------------------------------------------------- */

/* dst[0, n) = src[0, n): whole vectors, the last one overlapping the one before it rather
 * than running past the row. */
CONV_INLINE void copy_row(float *dst, const float *src, int64_t n)
{
    if (n < CONV_VEC) {
        for (int64_t q = 0; q < n; q++)
            dst[q] = src[q];
        return;
    }
    int64_t q = 0;
    for (; q + CONV_VEC <= n; q += CONV_VEC) {
        conv_vec v = vload(src + q);
        vstore(dst + q, &v, CONV_VEC);
    }
    if (q < n) {
        conv_vec v = vload(src + n - CONV_VEC);
        vstore(dst + n - CONV_VEC, &v, CONV_VEC);
    }
}

/* Zero what the data of a shifted copy does not cover: the rows above [r0, r1) and below it,
 * the slack after the last row, and columns [0, x0) and [x1, ow) of the data rows (those
 * column by column, as strided stores: a call per row would cost more than the zeros). */
CONV_INLINE void zero_borders(const conv_direct *g, float *plane, int64_t r0, int64_t r1,
                              int64_t x0, int64_t x1)
{
    const int64_t ow = g->ow;
    if (r1 <= r0 || x1 <= x0) {
        memset(plane, 0, (size_t)g->in_plane * sizeof(float));
        return;
    }
    memset(plane, 0, (size_t)(r0 * ow) * sizeof(float));
    memset(plane + r1 * ow, 0, (size_t)(g->in_plane - r1 * ow) * sizeof(float));
    for (int64_t q = 0; q < x0; q++)
        for (int64_t r = r0; r < r1; r++)
            plane[r * ow + q] = 0.0f;
    for (int64_t q = x1; q < ow; q++)
        for (int64_t r = r0; r < r1; r++)
            plane[r * ow + q] = 0.0f;
}

CONV_INLINE void shift_body(const conv_direct *g, const float *src, int64_t h, int64_t w,
                            int64_t top, int64_t left, int zeros_ready, float *dst)
{
    const int64_t rows = g->rows + g->dh * (g->kh - 1), ow = g->ow;
    /* rows [r0, r1) of each copy hold input rows r - top */
    const int64_t r0 = top > 0 ? top : 0, r1 = top + h < rows ? top + h : rows;
    for (int64_t j = 0; j < g->kw; j++) {
        /* columns x of copy j read input column x + j*dw - left: [x0, x1) lie inside it */
        const int64_t shift = j * g->dw - left;
        const int64_t x0 = shift < 0 ? -shift : 0, x1 = w - shift < ow ? w - shift : ow;
        for (int64_t c = 0; c < g->cin; c++) {
            float *plane = dst + (j * g->cin + c) * g->in_plane;
            if (!zeros_ready)
                zero_borders(g, plane, r0, r1, x0, x1);
            if (x1 <= x0)
                continue;
            for (int64_t r = r0; r < r1; r++)
                copy_row(plane + r * ow + x0, src + (c * h + r - top) * w + x0 + shift,
                         x1 - x0);
        }
    }
}

CONV_DISPATCHED(conv_direct_shift, shift_body,
                (const conv_direct *g, const float *src, int64_t h, int64_t w, int64_t top,
                 int64_t left, int zeros_ready, float *dst),
                (g, src, h, w, top, left, zeros_ready, dst))

void conv_direct_pack(const conv_direct *g, const float *w, int transpose, float *packed)
{
    const int64_t kh = g->kh, kw = g->kw, taps = g->cin * kh * kw;
    for (int64_t o0 = 0; o0 < g->cout; o0 += block_size(g->cout - o0)) {
        const int64_t kb = block_size(g->cout - o0);
        float *p = packed + o0 * taps;
        for (int64_t c = 0; c < g->cin; c++)
            for (int64_t i = 0; i < kh; i++)
                for (int64_t j = 0; j < kw; j++)
                    for (int64_t b = 0; b < kb; b++) {
                        const int64_t o = o0 + b;
                        /* transposed: tap (i, j) of filter o over channel c is tap
                         * (kh-1-i, kw-1-j) of the forward filter c over channel o */
                        *p++ = transpose
                                   ? w[((c * g->cout + o) * kh + kh - 1 - i) * kw + kw - 1 - j]
                                   : w[((o * g->cin + c) * kh + i) * kw + j];
                    }
    }
}

/* ---- forward, filter gradient, lane folding: in vectors of 8 or 16 lanes ------------- */

#define LANES 8
#define SUFFIX(name) name##_8
#include "conv_direct_lanes.h"

#define LANES 16
#define SUFFIX(name) name##_16
#include "conv_direct_lanes.h"

/* Define the function `name` to run body_16(args) compiled for AVX-512 where the CPU has it,
 * else body_8(args) compiled for AVX2+FMA where it has those, else body_8(args) for the
 * baseline instruction set. The choice is the same for every call in a process, so the
 * filter gradient's lanes are written and folded by kernels of one width. */
#define CONV_DISPATCHED_LANES(name, body, params, args)                                       \
    __attribute__((target("avx512f,avx2,fma"))) static void name##_avx512 params              \
    {                                                                                         \
        body##_16 args;                                                                       \
    }                                                                                         \
    __attribute__((target("avx2,fma"))) static void name##_avx2 params { body##_8 args; }     \
    static void name##_generic params { body##_8 args; }                                      \
    void name params                                                                          \
    {                                                                                         \
        if (conv_have_avx512())                                                               \
            name##_avx512 args;                                                               \
        else if (conv_have_avx2_fma())                                                        \
            name##_avx2 args;                                                                 \
        else                                                                                  \
            name##_generic args;                                                              \
    }

CONV_DISPATCHED_LANES(conv_direct_forward, forward_body,
                      (const conv_direct *g, const float *in, const float *packed,
                       const float *bias, float *out),
                      (g, in, packed, bias, out))

CONV_DISPATCHED_LANES(conv_direct_dweight, dweight_body,
                      (const conv_direct *g, const conv_band *bands, int64_t count,
                       float *lanes),
                      (g, bands, count, lanes))

CONV_DISPATCHED_LANES(conv_direct_fold_lanes, fold_body,
                      (const float *lanes, int64_t count, float *out), (lanes, count, out))

/* ---- bias gradient -------------------------------------------------------------------- */

/* Additions only, so both builds give the same bits. */
CONV_INLINE void plane_sums_body(const float *x, int64_t planes, int64_t stride, int64_t len,
                                 float *sums)
{
    for (int64_t p = 0; p < planes; p++) {
        const float *row = x + p * stride;
        /* four independent vector sums, then the vectors, the lanes and the tail */
        conv_vec a0 = vsplat(0.0f), a1 = a0, a2 = a0, a3 = a0;
        int64_t i = 0;
        for (; i + 4 * CONV_VEC <= len; i += 4 * CONV_VEC) {
            a0 += vload(row + i);
            a1 += vload(row + i + CONV_VEC);
            a2 += vload(row + i + 2 * CONV_VEC);
            a3 += vload(row + i + 3 * CONV_VEC);
        }
        for (; i + CONV_VEC <= len; i += CONV_VEC)
            a0 += vload(row + i);
        a0 = (a0 + a1) + (a2 + a3);
        float s = vsum(&a0);
        for (; i < len; i++)
            s += row[i];
        sums[p] += s;
    }
}

CONV_DISPATCHED(conv_plane_sums, plane_sums_body,
                (const float *x, int64_t planes, int64_t stride, int64_t len, float *sums),
                (x, planes, stride, len, sums))
