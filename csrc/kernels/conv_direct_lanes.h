/*
 * conv_direct_lanes.h - the vector kernels of the direct convolution (forward, filter
 * gradient, folding the gradient's lanes), written once for vectors of LANES floats.
 *
 * conv_direct.c includes this file twice: with LANES 8 for AVX2 and the baseline instruction
 * set, and with LANES 16 for AVX-512, whose 512-bit FMAs do twice the work per instruction;
 * it picks one at run time, the same for the life of the process. Before each inclusion it
 * defines LANES and SUFFIX(name), which names this instance's type and functions (name_8,
 * name_16); this file undefines both at its end. What the kernels compute and in which order
 * is described in conv_direct.c; the lanes only decide which partial sum of the filter
 * gradient a term goes to (lane p mod LANES), so each width gives the same bits at any
 * thread count.
 */

typedef float SUFFIX(vec) __attribute__((vector_size(LANES * sizeof(float))));
#define VEC SUFFIX(vec)
/* Filters per filter-gradient tile at most: with AVX-512's 32 registers a tile of 8 filters x 3
 * taps keeps 24 sums, and each vector loaded feeds 3 or 8 FMAs instead of 3 or 4. */
#define DW_KB (LANES == 16 ? 8 : MAX_KB)

CONV_VEC_HELPERS(VEC, LANES, SUFFIX(vload), SUFFIX(vsplat), SUFFIX(vstore))

/* The sum of the lanes, always in the same tree: the upper half of the lanes added to the
 * lower, lane by lane, until one is left (shuffles with constant masks, then adds). */
CONV_INLINE float SUFFIX(vsum)(const VEC *v)
{
    typedef int32_t SUFFIX(ivec) __attribute__((vector_size(LANES * sizeof(int32_t))));
    VEC t = *v;
#if LANES == 16
    t += __builtin_shuffle(t, (SUFFIX(ivec)){8, 9, 10, 11, 12, 13, 14, 15,
                                              8, 9, 10, 11, 12, 13, 14, 15});
    t += __builtin_shuffle(t, (SUFFIX(ivec)){4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7});
    t += __builtin_shuffle(t, (SUFFIX(ivec)){2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3});
    t += __builtin_shuffle(t, (SUFFIX(ivec)){1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1});
#else
    t += __builtin_shuffle(t, (SUFFIX(ivec)){4, 5, 6, 7, 4, 5, 6, 7});
    t += __builtin_shuffle(t, (SUFFIX(ivec)){2, 3, 2, 3, 2, 3, 2, 3});
    t += __builtin_shuffle(t, (SUFFIX(ivec)){1, 1, 1, 1, 1, 1, 1, 1});
#endif
    return t[0];
}

/* ---- forward -------------------------------------------------------------------------- */

/* One tile: `in` points at position p of copy 0, channel 0; `out` at out[o, p]; `wp` at the
 * packed weights of filters o..o+KB-1. `last` is how many lanes of the last vector to store.
 * kh and kw are the filter's (constants where fwd_tile calls this for 3 x 3 filters, so that
 * the loops over the taps unroll). */
CONV_INLINE void SUFFIX(fwd_tile_k)(
    const conv_direct *g, const float *in, const float *wp, const float *bias, float *out, int KB,
    int NV, int64_t last, int64_t kh, int64_t kw)
{
    const int64_t copy = g->cin * g->in_plane;
    VEC acc[MAX_KB][MAX_NV];
    for (int b = 0; b < KB; b++)
        for (int v = 0; v < NV; v++)
            acc[b][v] = SUFFIX(vsplat)(bias ? bias[b] : 0.0f);
    for (int64_t c = 0; c < g->cin; c++) {
        const float *row = in + c * g->in_plane;
        _Pragma("GCC unroll 3") for (int64_t i = 0; i < kh; i++, row += g->dh * g->ow) {
            const float *tap = row;
            _Pragma("GCC unroll 3") for (int64_t j = 0; j < kw; j++, tap += copy, wp += KB) {
                VEC xv[MAX_NV];
                for (int v = 0; v < NV; v++)
                    xv[v] = SUFFIX(vload)(tap + v * LANES);
                for (int b = 0; b < KB; b++)
                    for (int v = 0; v < NV; v++)
                        acc[b][v] += wp[b] * xv[v];
            }
        }
    }
    for (int b = 0; b < KB; b++)
        for (int v = 0; v < NV; v++)
            SUFFIX(vstore)(out + b * g->out_plane + v * LANES, &acc[b][v],
                   v == NV - 1 ? last : LANES);
}

/* fwd_tile_k for any filter; 3 x 3 filters, the commonest, get their nine taps unrolled: with
 * the loops over 3 rows and 3 columns of taps left as loops, their counting and branches ran
 * between every twelve FMAs. The taps are added in the same order either way. */
CONV_INLINE void SUFFIX(fwd_tile)(
    const conv_direct *g, const float *in, const float *wp, const float *bias, float *out, int KB,
    int NV, int64_t last)
{
    if (g->kh == 3 && g->kw == 3)
        SUFFIX(fwd_tile_k)(g, in, wp, bias, out, KB, NV, last, 3, 3);
    else
        SUFFIX(fwd_tile_k)(g, in, wp, bias, out, KB, NV, last, g->kh, g->kw);
}

/* Filters o..o+KB-1 over the plane, NV_FOR(KB) vectors at a time. */
CONV_INLINE void SUFFIX(fwd_filters)(
    const conv_direct *g, const float *in, const float *wp, const float *bias, float *out, int KB)
{
    const int NV = NV_FOR(KB);
    const int64_t len = g->rows * g->ow, nvec = (len + LANES - 1) / LANES;
    const int64_t last = len - (nvec - 1) * LANES;
    int64_t v = 0;
    for (; v + NV < nvec; v += NV)
        SUFFIX(fwd_tile)(g, in + v * LANES, wp, bias, out + v * LANES, KB, NV, LANES);
    /* the vectors left, the plane's last among them */
    in += v * LANES;
    out += v * LANES;
    switch (nvec - v) {
#define TAIL(nv)                                                                               \
    case nv:                                                                                  \
        if (NV >= nv)                                                                         \
            SUFFIX(fwd_tile)(g, in, wp, bias, out, KB, nv, last);                             \
        break;
        TAIL(1) TAIL(2) TAIL(3) TAIL(4) TAIL(5) TAIL(6) TAIL(7) TAIL(8)
#undef TAIL
    }
}

CONV_INLINE void SUFFIX(forward_body)(
    const conv_direct *g, const float *in, const float *packed, const float *bias, float *out)
{
    const int64_t taps = g->cin * g->kh * g->kw;
    for (int64_t o = 0; o < g->cout;) {
        const int64_t kb = block_size(g->cout - o);
        const float *wp = packed + o * taps, *b = bias ? bias + o : NULL;
        float *out_o = out + o * g->out_plane;
        if (kb == 4)
            SUFFIX(fwd_filters)(g, in, wp, b, out_o, 4);
        else if (kb == 2)
            SUFFIX(fwd_filters)(g, in, wp, b, out_o, 2);
        else
            SUFFIX(fwd_filters)(g, in, wp, b, out_o, 1);
        o += kb;
    }
}

/* ---- filter gradient ------------------------------------------------------------------ */

/* One tile: filters o..o+KB-1 (`d_off` is the offset of plane o in each band's dout), taps
 * j..j+TW-1 of row i of channel c (`in_off` is the offset of copy j, channel c, row i in each
 * band's copies), summed over the bands in order into `lanes` (those of dw[o, c, i, j]),
 * starting from zero or, with `add`, from the lanes. The last, partial vector of a band's
 * gradient plane is read from its `tails` (zero-filled). */
CONV_INLINE void SUFFIX(dw_tile)(
    const conv_direct *g, const conv_band *bands, int64_t count, int64_t in_off, int64_t d_off,
    const float *tails, float *lanes, int add, int KB, int TW)
{
    const int64_t copy = g->cin * g->in_plane, filter = g->cin * g->kh * g->kw;
    /* KB*TW accumulators, TW input vectors and one gradient vector: 16 registers at most
     * with 8 lanes, 28 with 16 */
    VEC acc[DW_KB][MAX_TW], xv[MAX_TW];
    for (int b = 0; b < KB; b++)
        for (int t = 0; t < TW; t++)
            acc[b][t] = add ? SUFFIX(vload)(lanes + (b * filter + t) * LANES)
                            : SUFFIX(vsplat)(0.0f);
    for (int64_t u = 0; u < count; u++) {
        const float *in = bands[u].in + in_off, *dout = bands[u].dout + d_off;
        const int64_t len = bands[u].rows * g->ow, full = len / LANES * LANES;
        for (int64_t p = 0; p < full; p += LANES) {
            for (int t = 0; t < TW; t++)
                xv[t] = SUFFIX(vload)(in + t * copy + p);
            for (int b = 0; b < KB; b++) {
                VEC d = SUFFIX(vload)(dout + b * g->out_plane + p);
#if LANES == 16
                /* in a register: left to itself GCC folds the load into each of the TW
                 * FMAs, 27 loads per 24 FMAs with 8 filters */
                __asm__("" : "+v"(d));
#endif
                for (int t = 0; t < TW; t++)
                    acc[b][t] += d * xv[t];
            }
        }
        if (full < len) {
            for (int t = 0; t < TW; t++)
                xv[t] = SUFFIX(vload)(in + t * copy + full);
            for (int b = 0; b < KB; b++) {
                VEC d = SUFFIX(vload)(tails + (u * DW_KB + b) * LANES);
                for (int t = 0; t < TW; t++)
                    acc[b][t] += d * xv[t];
            }
        }
    }
    for (int b = 0; b < KB; b++)
        for (int t = 0; t < TW; t++)
            SUFFIX(vstore)(lanes + (b * filter + t) * LANES, &acc[b][t], LANES);
}

/* Filters o..o+KB-1: all their taps. */
CONV_INLINE void SUFFIX(dw_filters)(
    const conv_direct *g, const conv_band *bands, int64_t count, int64_t o, float *lanes, int add,
    int KB)
{
    const int64_t copy = g->cin * g->in_plane, d_off = o * g->out_plane;
    /* the last vector of each band's gradient planes, zero past its end */
    float tails[CONV_MAX_BANDS * DW_KB * LANES] = {0};
    for (int64_t u = 0; u < count; u++) {
        const int64_t len = bands[u].rows * g->ow, full = len / LANES * LANES;
        for (int b = 0; b < KB; b++)
            for (int64_t p = full; p < len; p++)
                tails[(u * DW_KB + b) * LANES + p - full] =
                    bands[u].dout[d_off + b * g->out_plane + p];
    }
    for (int64_t c = 0; c < g->cin; c++)
        for (int64_t i = 0; i < g->kh; i++)
            for (int64_t j = 0; j < g->kw; j += MAX_TW) {
                const int64_t in_off = j * copy + c * g->in_plane + i * g->dh * g->ow;
                float *l = lanes + ((c * g->kh + i) * g->kw + j) * LANES;
                const int64_t tw = g->kw - j;
                if (tw >= 3)
                    SUFFIX(dw_tile)(g, bands, count, in_off, d_off, tails, l, add, KB, 3);
                else if (tw == 2)
                    SUFFIX(dw_tile)(g, bands, count, in_off, d_off, tails, l, add, KB, 2);
                else
                    SUFFIX(dw_tile)(g, bands, count, in_off, d_off, tails, l, add, KB, 1);
            }
}

/* Filters o..o+KB-1 over all bands, a group of bands at a time: as many as keep the data one
 * tile streams (KB gradient planes and kw input planes a band) within DW_TILE_BYTES, so that
 * it stays in the L1 cache. The lanes carry the sums from one group to the next, which adds
 * every term in the same order whatever the grouping. */
CONV_INLINE void SUFFIX(dw_groups)(
    const conv_direct *g, const conv_band *bands, int64_t count, int64_t o, float *lanes, int KB)
{
    const int64_t per_band = (KB * g->rows * g->ow + g->kw * g->in_plane) * sizeof(float);
    const int64_t group = per_band < DW_TILE_BYTES ? DW_TILE_BYTES / per_band : 1;
    for (int64_t u = 0; u < count; u += group) {
        const int64_t n = count - u < group ? count - u : group;
        SUFFIX(dw_filters)(g, bands + u, n, o, lanes, u > 0, KB);
    }
}

CONV_INLINE void SUFFIX(dweight_body)(
    const conv_direct *g, const conv_band *bands, int64_t count, float *lanes)
{
    const int64_t filter = g->cin * g->kh * g->kw;
    for (int64_t o = 0; o < g->cout;) {
        const int64_t kb = DW_KB == 8 && g->cout - o >= 8 ? 8 : block_size(g->cout - o);
        float *l = lanes + o * filter * LANES;
        if (DW_KB == 8 && kb == 8)
            SUFFIX(dw_groups)(g, bands, count, o, l, 8);
        else if (kb == 4)
            SUFFIX(dw_groups)(g, bands, count, o, l, 4);
        else if (kb == 2)
            SUFFIX(dw_groups)(g, bands, count, o, l, 2);
        else
            SUFFIX(dw_groups)(g, bands, count, o, l, 1);
        o += kb;
    }
}

/* One step of fold_body: vectors v[2k] and v[2k + 1] (k < pairs), each holding sums of
 * LANES / (2 g) entries in groups of 2 g lanes, folded into v[k], the sums of those 2 n
 * entries in groups of g lanes: the upper g lanes of each group added to its lower g (the
 * lanes LO and HI pick), v[2k]'s entries first. */
#define FOLD_STEP(pairs, LO, HI)                                                              \
    for (int k = 0; k < (pairs); k++)                                                         \
        v[k] = __builtin_shuffle(v[2 * k], v[2 * k + 1], LO)                                   \
               + __builtin_shuffle(v[2 * k], v[2 * k + 1], HI)

/* out[e] += the sum of the lanes of entry e, in vsum's tree. LANES entries at a time are
 * folded together, each step halving the lanes per entry and pairing up the vectors (a
 * transpose by halves), the same additions as vsum's, which runs on the rest: one vsum per
 * entry took a seventh of the time of a small layer's filter gradient (16 -> 16 filters of
 * 3x3 over 14x14 images: 2304 entries per block). */
CONV_INLINE void SUFFIX(fold_body)(const float *lanes, int64_t count, float *out)
{
    typedef int32_t SUFFIX(fvec) __attribute__((vector_size(LANES * sizeof(int32_t))));
    /* loG / hiG: the lower and upper g lanes of each group of 2 g in a pair of vectors */
#if LANES == 16
    const SUFFIX(fvec) lo8 = {0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23};
    const SUFFIX(fvec) hi8 = {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31};
    const SUFFIX(fvec) lo4 = {0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27};
    const SUFFIX(fvec) hi4 = {4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31};
    const SUFFIX(fvec) lo2 = {0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29};
    const SUFFIX(fvec) hi2 = {2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31};
    const SUFFIX(fvec) lo1 = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};
    const SUFFIX(fvec) hi1 = {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31};
#else
    const SUFFIX(fvec) lo4 = {0, 1, 2, 3, 8, 9, 10, 11}, hi4 = {4, 5, 6, 7, 12, 13, 14, 15};
    const SUFFIX(fvec) lo2 = {0, 1, 4, 5, 8, 9, 12, 13}, hi2 = {2, 3, 6, 7, 10, 11, 14, 15};
    const SUFFIX(fvec) lo1 = {0, 2, 4, 6, 8, 10, 12, 14}, hi1 = {1, 3, 5, 7, 9, 11, 13, 15};
#endif
    int64_t e = 0;
    for (; e + LANES <= count; e += LANES) {
        VEC v[LANES];
        for (int k = 0; k < LANES; k++)
            v[k] = SUFFIX(vload)(lanes + (e + k) * LANES);
#if LANES == 16
        FOLD_STEP(8, lo8, hi8);
        FOLD_STEP(4, lo4, hi4);
        FOLD_STEP(2, lo2, hi2);
        FOLD_STEP(1, lo1, hi1);
#else
        FOLD_STEP(4, lo4, hi4);
        FOLD_STEP(2, lo2, hi2);
        FOLD_STEP(1, lo1, hi1);
#endif
        const VEC sums = SUFFIX(vload)(out + e) + v[0];
        SUFFIX(vstore)(out + e, &sums, LANES);
    }
    for (; e < count; e++) {
        VEC v = SUFFIX(vload)(lanes + e * LANES);
        out[e] += SUFFIX(vsum)(&v);
    }
}

#undef FOLD_STEP

#undef VEC
#undef DW_KB
#undef LANES
#undef SUFFIX
