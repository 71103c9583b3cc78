/*
 * conv_direct.c - stride-1 convolutions computed straight from shifted copies of the input,
 * for layers with few taps per output (conv_internal.h says when conv2d.c uses them).
 *
 * Layout. For each filter column j the input is copied once with its rows re-cut to the
 * output width: copy_j[c, r, x] = in[c, r - pad_h, x + j - pad_w] (zero outside the input),
 * rows of exactly ow values. Output pixel p = y*ow + x then reads tap (i, j) at
 * copy_j[c, p + i*ow]: one fixed offset per tap for the whole plane, so a plane is one flat
 * run of positions with no row ends inside it and no lanes wasted at the end of each row.
 * Building the kw copies costs kw passes over a (few-channel) image, much less than the
 * c*kh*kw passes of a full im2col.
 *
 * Forward. A tile is KB filters x NV vectors of CONV_VEC consecutive positions, held in KB*NV
 * vector registers. For each channel c and tap (i, j) it adds w[o, c, i, j] * copy_j[c, p +
 * i*ow ...]: one load per vector, shared by the KB filters, and one broadcast weight per
 * filter, shared by the NV vectors. The packed weights keep the KB weights of a tap side by
 * side, so the broadcasts walk memory in order. The last vector of a plane may run past its
 * end: its extra lanes read zeros and are not stored.
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
 * filter, memory operands) and a broadcast fit the 16 vector registers of AVX2, with enough
 * independent sums to hide the latency of the FMAs. */
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

int64_t conv_direct_plane(int64_t rows, int64_t kh, int64_t ow)
{
    return ((rows + kh - 1) * ow + 2 * CONV_VEC - 1) / CONV_VEC * CONV_VEC;
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
    const int64_t rows = g->rows + g->kh - 1, ow = g->ow;
    /* rows [r0, r1) of each copy hold input rows r - top */
    const int64_t r0 = top > 0 ? top : 0, r1 = top + h < rows ? top + h : rows;
    for (int64_t j = 0; j < g->kw; j++) {
        /* columns x of copy j read input column x + j - left: [x0, x1) lie inside it */
        const int64_t shift = j - left;
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

/* ---- forward -------------------------------------------------------------------------- */

/* One tile: `in` points at position p of copy 0, channel 0; `out` at out[o, p]; `wp` at the
 * packed weights of filters o..o+KB-1. `last` is how many lanes of the last vector to store. */
CONV_INLINE void fwd_tile(const conv_direct *g, const float *in, const float *wp, const float *bias,
                          float *out, int KB, int NV, int64_t last)
{
    const int64_t copy = g->cin * g->in_plane;
    conv_vec acc[MAX_KB][MAX_NV];
    for (int b = 0; b < KB; b++)
        for (int v = 0; v < NV; v++)
            acc[b][v] = vsplat(bias ? bias[b] : 0.0f);
    for (int64_t c = 0; c < g->cin; c++) {
        const float *row = in + c * g->in_plane;
        for (int64_t i = 0; i < g->kh; i++, row += g->ow) {
            const float *tap = row;
            for (int64_t j = 0; j < g->kw; j++, tap += copy, wp += KB) {
                conv_vec xv[MAX_NV];
                for (int v = 0; v < NV; v++)
                    xv[v] = vload(tap + v * CONV_VEC);
                for (int b = 0; b < KB; b++)
                    for (int v = 0; v < NV; v++)
                        acc[b][v] += wp[b] * xv[v];
            }
        }
    }
    for (int b = 0; b < KB; b++)
        for (int v = 0; v < NV; v++)
            vstore(out + b * g->out_plane + v * CONV_VEC, &acc[b][v],
                   v == NV - 1 ? last : CONV_VEC);
}

/* Filters o..o+KB-1 over the plane, NV_FOR(KB) vectors at a time. */
CONV_INLINE void fwd_filters(const conv_direct *g, const float *in, const float *wp,
                             const float *bias, float *out, int KB)
{
    const int NV = NV_FOR(KB);
    const int64_t len = g->rows * g->ow, nvec = (len + CONV_VEC - 1) / CONV_VEC;
    const int64_t last = len - (nvec - 1) * CONV_VEC;
    int64_t v = 0;
    for (; v + NV < nvec; v += NV)
        fwd_tile(g, in + v * CONV_VEC, wp, bias, out + v * CONV_VEC, KB, NV, CONV_VEC);
    /* the vectors left, the plane's last among them */
    in += v * CONV_VEC;
    out += v * CONV_VEC;
    switch (nvec - v) {
#define TAIL(nv)                                                                               \
    case nv:                                                                                  \
        if (NV >= nv)                                                                         \
            fwd_tile(g, in, wp, bias, out, KB, nv, last);                                     \
        break;
        TAIL(1) TAIL(2) TAIL(3) TAIL(4) TAIL(5) TAIL(6) TAIL(7) TAIL(8)
#undef TAIL
    }
}

CONV_INLINE void forward_body(const conv_direct *g, const float *in, const float *packed,
                              const float *bias, float *out)
{
    const int64_t taps = g->cin * g->kh * g->kw;
    for (int64_t o = 0; o < g->cout;) {
        const int64_t kb = block_size(g->cout - o);
        const float *wp = packed + o * taps, *b = bias ? bias + o : NULL;
        float *out_o = out + o * g->out_plane;
        if (kb == 4)
            fwd_filters(g, in, wp, b, out_o, 4);
        else if (kb == 2)
            fwd_filters(g, in, wp, b, out_o, 2);
        else
            fwd_filters(g, in, wp, b, out_o, 1);
        o += kb;
    }
}

CONV_DISPATCHED(conv_direct_forward, forward_body,
                (const conv_direct *g, const float *in, const float *packed, const float *bias,
                 float *out),
                (g, in, packed, bias, out))

/* ---- filter gradient ------------------------------------------------------------------ */

/* One tile: filters o..o+KB-1 (`d_off` is the offset of plane o in each band's dout), taps
 * j..j+TW-1 of row i of channel c (`in_off` is the offset of copy j, channel c, row i in each
 * band's copies), summed over the bands in order into `lanes` (those of dw[o, c, i, j]),
 * starting from zero or, with `add`, from the lanes. The last, partial vector of a band's
 * gradient plane is read from its `tails` (zero-filled). */
CONV_INLINE void dw_tile(const conv_direct *g, const conv_band *bands, int64_t count,
                         int64_t in_off, int64_t d_off, const float *tails, float *lanes,
                         int add, int KB, int TW)
{
    const int64_t copy = g->cin * g->in_plane, filter = g->cin * g->kh * g->kw;
    /* KB*TW accumulators, TW input vectors and one gradient vector: 16 registers at most */
    conv_vec acc[MAX_KB][MAX_TW], xv[MAX_TW];
    for (int b = 0; b < KB; b++)
        for (int t = 0; t < TW; t++)
            acc[b][t] = add ? vload(lanes + (b * filter + t) * CONV_VEC) : vsplat(0.0f);
    for (int64_t u = 0; u < count; u++) {
        const float *in = bands[u].in + in_off, *dout = bands[u].dout + d_off;
        const int64_t len = bands[u].rows * g->ow, full = len / CONV_VEC * CONV_VEC;
        for (int64_t p = 0; p < full; p += CONV_VEC) {
            for (int t = 0; t < TW; t++)
                xv[t] = vload(in + t * copy + p);
            for (int b = 0; b < KB; b++) {
                conv_vec d = vload(dout + b * g->out_plane + p);
                for (int t = 0; t < TW; t++)
                    acc[b][t] += d * xv[t];
            }
        }
        if (full < len) {
            for (int t = 0; t < TW; t++)
                xv[t] = vload(in + t * copy + full);
            for (int b = 0; b < KB; b++) {
                conv_vec d = vload(tails + (u * MAX_KB + b) * CONV_VEC);
                for (int t = 0; t < TW; t++)
                    acc[b][t] += d * xv[t];
            }
        }
    }
    for (int b = 0; b < KB; b++)
        for (int t = 0; t < TW; t++)
            vstore(lanes + (b * filter + t) * CONV_VEC, &acc[b][t], CONV_VEC);
}

/* Filters o..o+KB-1: all their taps. */
CONV_INLINE void dw_filters(const conv_direct *g, const conv_band *bands, int64_t count,
                            int64_t o, float *lanes, int add, int KB)
{
    const int64_t copy = g->cin * g->in_plane, d_off = o * g->out_plane;
    /* the last vector of each band's gradient planes, zero past its end */
    float tails[CONV_MAX_BANDS * MAX_KB * CONV_VEC] = {0};
    for (int64_t u = 0; u < count; u++) {
        const int64_t len = bands[u].rows * g->ow, full = len / CONV_VEC * CONV_VEC;
        for (int b = 0; b < KB; b++)
            for (int64_t p = full; p < len; p++)
                tails[(u * MAX_KB + b) * CONV_VEC + p - full] =
                    bands[u].dout[d_off + b * g->out_plane + p];
    }
    for (int64_t c = 0; c < g->cin; c++)
        for (int64_t i = 0; i < g->kh; i++)
            for (int64_t j = 0; j < g->kw; j += MAX_TW) {
                const int64_t in_off = j * copy + c * g->in_plane + i * g->ow;
                float *l = lanes + ((c * g->kh + i) * g->kw + j) * CONV_VEC;
                const int64_t tw = g->kw - j;
                if (tw >= 3)
                    dw_tile(g, bands, count, in_off, d_off, tails, l, add, KB, 3);
                else if (tw == 2)
                    dw_tile(g, bands, count, in_off, d_off, tails, l, add, KB, 2);
                else
                    dw_tile(g, bands, count, in_off, d_off, tails, l, add, KB, 1);
            }
}

/* Filters o..o+KB-1 over all bands, a group of bands at a time: as many as keep the data one
 * tile streams (KB gradient planes and kw input planes a band) within DW_TILE_BYTES, so that
 * it stays in the L1 cache. The lanes carry the sums from one group to the next, which adds
 * every term in the same order whatever the grouping. */
CONV_INLINE void dw_groups(const conv_direct *g, const conv_band *bands, int64_t count,
                           int64_t o, float *lanes, int KB)
{
    const int64_t per_band = (KB * g->rows * g->ow + g->kw * g->in_plane) * sizeof(float);
    const int64_t group = per_band < DW_TILE_BYTES ? DW_TILE_BYTES / per_band : 1;
    for (int64_t u = 0; u < count; u += group) {
        const int64_t n = count - u < group ? count - u : group;
        dw_filters(g, bands + u, n, o, lanes, u > 0, KB);
    }
}

CONV_INLINE void dweight_body(const conv_direct *g, const conv_band *bands, int64_t count,
                              float *lanes)
{
    const int64_t filter = g->cin * g->kh * g->kw;
    for (int64_t o = 0; o < g->cout;) {
        const int64_t kb = block_size(g->cout - o);
        float *l = lanes + o * filter * CONV_VEC;
        if (kb == 4)
            dw_groups(g, bands, count, o, l, 4);
        else if (kb == 2)
            dw_groups(g, bands, count, o, l, 2);
        else
            dw_groups(g, bands, count, o, l, 1);
        o += kb;
    }
}

CONV_DISPATCHED(conv_direct_dweight, dweight_body,
                (const conv_direct *g, const conv_band *bands, int64_t count, float *lanes),
                (g, bands, count, lanes))

CONV_INLINE void fold_body(const float *lanes, int64_t count, float *out)
{
    for (int64_t e = 0; e < count; e++) {
        conv_vec v = vload(lanes + e * CONV_VEC);
        out[e] += vsum(&v);
    }
}

CONV_DISPATCHED(conv_direct_fold_lanes, fold_body,
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
