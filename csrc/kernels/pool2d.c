/*
 * pool2d.c - max and average pooling of NCHW batches, forward and backward (pyrt.h).
 *
 * Each (image, channel) plane is pooled on its own, so every pass is a parallel loop over the
 * n*c planes, with a grain of about CHUNK_OPS window reads. A backward task zeroes and then
 * scatters into only the planes of dx it owns: no races, and each dx entry adds its
 * contributions in output order, whatever the thread count.
 *
 * The window of output pixel (y, x) covers input rows y*stride_h - pad_h .. + kh and columns
 * likewise (for max pooling with dilation, every dilation_h-th row from there, kh of them,
 * and the columns likewise); it is clipped to the input once per pixel, so padding is never
 * read: for max
 * pooling the padding is -inf (it never wins), for average pooling it is zero (it adds
 * nothing, but still counts in the divisor, as PyTorch's count_include_pad=True, unless
 * exclude_pad). With ceil_mode a last window may hang past the padded input; what hangs past
 * counts in no divisor (avg_divisor).
 *
 * Max pooling follows PyTorch's CPU kernel: the first maximum wins a tie, a NaN wins over
 * everything (the last NaN of the window), and a window of -inf reports its first pixel. The
 * running maximum is kept with selects rather than branches, and windows two columns wide at
 * stride 2 (2x2 pooling) are computed 8 at a time in vectors.
 *
 * Max pooling with s->relu stores the ReLU of each maximum and -1 for the index of a window
 * whose maximum is 0 or less (or -inf: a window of padding alone), which the backward pass
 * already skips: the gradient of relu(max_pool2d(x)), whose ReLU then runs on the pooled
 * values rather than on every input (ReLU is monotone: the ReLU of the maximum is the
 * maximum of the ReLUs).
 */
#include <math.h>

#include "conv_internal.h"

/* Window reads (or dx updates) a chunk of planes should hold: a few microseconds. */
#define CHUNK_OPS 16384

typedef struct pool_job {
    pyrt_conv_shape s;
    const float *x, *dy;
    float *y, *dx;
    int64_t *indices;
    const int64_t *saved; /* indices from the forward pass */
} pool_job;

/* The input range [*lo, *hi) under output position o along one axis. */
static inline void window(int64_t o, int64_t stride, int64_t pad, int64_t k, int64_t size,
                          int64_t *lo, int64_t *hi)
{
    const int64_t a = o * stride - pad, b = a + k;
    *lo = a < 0 ? 0 : a;
    *hi = b > size ? size : b;
}

/* The taps of the window at output position o along one axis (k taps, `dilation` apart) that
 * lie in the input [0, size): *count of them, from input position *first on. */
static inline void dilated_window(int64_t o, int64_t stride, int64_t pad, int64_t k,
                                  int64_t dilation, int64_t size, int64_t *first,
                                  int64_t *count)
{
    const int64_t a = o * stride - pad;
    const int64_t t0 = a < 0 ? (dilation - 1 - a) / dilation : 0;
    int64_t t1 = size > a ? (size - a + dilation - 1) / dilation : 0;
    if (t1 > k)
        t1 = k;
    *first = a + t0 * dilation;
    *count = t1 > t0 ? t1 - t0 : 0;
}

/* Check the geometry into j->s; *empty is set when there is nothing to compute. Pooling has
 * no groups, and average pooling no dilation and no ReLU (`dilated` 0: max pooling takes
 * both). */
static int pool_shape(const pyrt_conv_shape *in, pool_job *j, int dilated, int *empty)
{
    if (!in)
        return PYRT_EINVAL;
    j->s = *in;
    int rc = pyrt_conv_shape_init(&j->s);
    *empty = j->s.n * j->s.c == 0;
    if (rc || j->s.groups != 1
        || (!dilated && (j->s.dilation_h != 1 || j->s.dilation_w != 1 || j->s.relu)))
        return PYRT_EINVAL;
    /* planes without rows or columns: padding alone could "fit" a window there, but a window
     * of padding has no maximum and no average */
    if (j->s.h == 0 || j->s.w == 0)
        return PYRT_EINVAL;
    return PYRT_OK;
}

static int64_t plane_grain(int64_t ops_per_plane)
{
    return ops_per_plane >= CHUNK_OPS ? 1 : CHUNK_OPS / (ops_per_plane > 0 ? ops_per_plane : 1);
}

/* The work per plane, for the grain: a pass over every window, a scatter into the input plane
 * (clearing it first), or both. */
enum plane_cost { COST_WINDOWS, COST_SCATTER, COST_WINDOWS_SCATTER };

/* Every entry point: check the geometry (`dilated`: whether the pooling takes a dilation),
 * then the buffers (args_ok for those the caller checked; `plane` is the input-side buffer, x
 * or dx, needed when planes have pixels), then run `body` over the n * c planes in parallel.
 * Nothing to do for an empty batch. */
static int run_planes(const pyrt_conv_shape *shape, pool_job *j, int dilated, int args_ok,
                      const void *plane, enum plane_cost cost, pyrt_range_fn body)
{
    int empty, rc = pool_shape(shape, j, dilated, &empty);
    if (rc || empty)
        return rc;
    const pyrt_conv_shape *s = &j->s;
    if (!args_ok || (!plane && s->h * s->w > 0))
        return PYRT_EINVAL;
    const int64_t windows = s->oh * s->ow * s->kh * s->kw, scatter = s->h * s->w;
    const int64_t ops = cost == COST_WINDOWS ? windows
                        : cost == COST_SCATTER ? s->oh * s->ow + scatter
                                               : windows + scatter;
    return pyrt_parallel_for(s->n * s->c, plane_grain(ops), body, j);
}

/* ---- max pooling ---------------------------------------------------------------------- */

/* Let v at index idx replace the running maximum (*best at *at) if it is larger or NaN.
 * Written with masks rather than a branch: on real data which element wins is a coin toss,
 * and the mispredicted branches would cost far more than the comparisons. */
static inline void take_max(float v, int64_t idx, float *best, int64_t *at)
{
    const int64_t m = -(int64_t)((v > *best) | (v != v));
    uint32_t vb, bb;
    memcpy(&vb, &v, sizeof vb);
    memcpy(&bb, best, sizeof bb);
    bb = (vb & (uint32_t)m) | (bb & ~(uint32_t)m);
    memcpy(best, &bb, sizeof bb);
    *at = (idx & m) | (*at & ~m);
}

/* Max pooling of one plane, any geometry. */
static void max_plane(const pyrt_conv_shape *s, const float *x, float *y, int64_t *ind)
{
    const int64_t dh = s->dilation_h, dw = s->dilation_w;
    for (int64_t oy = 0; oy < s->oh; oy++) {
        int64_t y0, ny;
        dilated_window(oy, s->stride_h, s->pad_h, s->kh, dh, s->h, &y0, &ny);
        for (int64_t ox = 0; ox < s->ow; ox++) {
            int64_t x0, nx;
            dilated_window(ox, s->stride_w, s->pad_w, s->kw, dw, s->w, &x0, &nx);
            float best = -INFINITY;
            /* a window of padding alone (with a dilation, or padding wider than PyTorch
             * allows) holds -inf and reports no pixel: -1 */
            int64_t at = ny > 0 && nx > 0 ? y0 * s->w + x0 : -1;
            for (int64_t ty = 0, iy = y0; ty < ny; ty++, iy += dh)
                for (int64_t tx = 0, ix = x0; tx < nx; tx++, ix += dw)
                    take_max(x[iy * s->w + ix], iy * s->w + ix, &best, &at);
            if (s->relu && best <= 0.0f) { /* ReLU: 0, and no gradient (NaN stays) */
                best = 0.0f;
                at = -1;
            }
            y[oy * s->ow + ox] = best;
            if (ind)
                ind[oy * s->ow + ox] = at;
        }
    }
}

/* take_max on 8 windows at once. */
CONV_INLINE void take_max8(const conv_vec *v, const conv_ivec *idx, conv_vec *best,
                           conv_ivec *at)
{
    const conv_ivec m = (*v > *best) | (*v != *v);
    *best = (conv_vec)(((conv_ivec)*v & m) | ((conv_ivec)*best & ~m));
    *at = (*idx & m) | (*at & ~m);
}

/* Outputs ox0 .. ox0+n-1 (n <= 8) of an output row whose windows cover input rows [y0, y1)
 * and input columns 2*ox, 2*ox + 1. Each input row gives 16 values, split into the left
 * (even) and right (odd) column of the 8 windows; rows, then columns, are scanned in order,
 * as max_plane does. A row's 16 values may run into the next row, never past `avail` values
 * from x: the ones that would are copied out first. */
CONV_INLINE void max8_cols2(const float *x, int64_t w, int64_t avail, int64_t y0, int64_t y1,
                            int64_t ox0, int64_t n, int spill, int relu, float *y, int64_t *ind)
{
    const conv_ivec even = {0, 2, 4, 6, 8, 10, 12, 14}, odd = even + 1;
    conv_vec best = vsplat(0.0f);
    conv_ivec at = {0};
    for (int64_t iy = y0; iy < y1; iy++) {
        const int64_t start = iy * w + 2 * ox0;
        const float *row = x + start;
        float copy[2 * CONV_VEC] = {0};
        if (start + 2 * CONV_VEC > avail) {
            for (int64_t q = 0; q < 2 * n; q++)
                copy[q] = row[q];
            row = copy;
        }
        const conv_vec a = vload(row), b = vload(row + CONV_VEC);
        const conv_vec left = __builtin_shuffle(a, b, even), right = __builtin_shuffle(a, b, odd);
        const conv_ivec idx = (int32_t)start + even, idx_right = idx + 1;
        if (iy == y0) { /* the first value stands, -inf and NaN included, as in max_plane */
            best = left;
            at = idx;
        } else {
            take_max8(&left, &idx, &best, &at);
        }
        take_max8(&right, &idx_right, &best, &at);
    }
    if (relu) { /* lanes whose maximum is 0 or less: 0 (all bits clear) and index -1 */
        const conv_ivec keep = ~(best <= vsplat(0.0f));
        best = (conv_vec)((conv_ivec)best & keep);
        at |= ~keep;
    }
    /* n < 8 lanes: all 8 are stored when `spill` allows it (the extra ones land on outputs
     * of the same plane that are computed later), which saves a lane-by-lane store */
    const int64_t stored = spill ? CONV_VEC : n;
    vstore(y, &best, stored);
    if (ind) {
        const conv_lvec wide = __builtin_convertvector(at, conv_lvec);
        if (stored == CONV_VEC)
            memcpy(ind, &wide, sizeof wide);
        else
            for (int64_t l = 0; l < n; l++)
                ind[l] = wide[l];
    }
}

/* Max pooling of one plane with windows two columns wide at stride 2 and no column padding
 * (the usual 2x2 pooling), 8 outputs at a time; x has `avail` readable values. */
CONV_INLINE void max_plane_cols2_body(const pyrt_conv_shape *s, const float *x, int64_t avail,
                                      float *y, int64_t *ind)
{
    for (int64_t oy = 0; oy < s->oh; oy++) {
        int64_t y0, y1;
        window(oy, s->stride_h, s->pad_h, s->kh, s->h, &y0, &y1);
        float *yr = y + oy * s->ow;
        int64_t *ir = ind ? ind + oy * s->ow : NULL;
        if (s->ow < CONV_VEC) {
            /* the extra lanes may land on the plane's later rows, if it has enough */
            const int spill = (s->oh - 1 - oy) * s->ow >= CONV_VEC - s->ow;
            max8_cols2(x, s->w, avail, y0, y1, 0, s->ow, spill, (int)s->relu, yr, ir);
            continue;
        }
        int64_t ox = 0;
        for (; ox + CONV_VEC <= s->ow; ox += CONV_VEC)
            max8_cols2(x, s->w, avail, y0, y1, ox, CONV_VEC, 1, (int)s->relu, yr + ox,
                       ir ? ir + ox : NULL);
        if (ox < s->ow) { /* the last 8 outputs again, rather than reading past the row */
            ox = s->ow - CONV_VEC;
            max8_cols2(x, s->w, avail, y0, y1, ox, CONV_VEC, 1, (int)s->relu, yr + ox,
                       ir ? ir + ox : NULL);
        }
    }
}

static void max_plane_cols2(const pyrt_conv_shape *s, const float *x, int64_t avail, float *y,
                            int64_t *ind);
CONV_DISPATCHED(max_plane_cols2, max_plane_cols2_body,
                (const pyrt_conv_shape *s, const float *x, int64_t avail, float *y,
                 int64_t *ind),
                (s, x, avail, y, ind))

static int max_forward_planes(void *arg, int64_t p0, int64_t p1)
{
    const pool_job *j = arg;
    const pyrt_conv_shape *s = &j->s;
    const int64_t npix = s->oh * s->ow;
    /* the vector path: 2-column windows at stride 2, no column padding, no empty window
     * rows, and 32-bit indices */
    const int cols2 = s->kw == 2 && s->stride_w == 2 && s->pad_w == 0 && s->pad_h < s->kh
                      && s->dilation_h == 1 && s->dilation_w == 1
                      && 2 * s->ow <= s->w /* (no window past the row: ceil_mode) */
                      && s->h * s->w <= INT32_MAX;
    for (int64_t p = p0; p < p1; p++) {
        const float *x = j->x + p * s->h * s->w;
        int64_t *ind = j->indices ? j->indices + p * npix : NULL;
        if (cols2)
            max_plane_cols2(s, x, (s->n * s->c - p) * s->h * s->w, j->y + p * npix, ind);
        else
            max_plane(s, x, j->y + p * npix, ind);
    }
    return 0;
}

int pyrt_max_pool2d_forward(const pyrt_conv_shape *shape, const float *x, float *y,
                            int64_t *indices)
{
    pool_job j = {.x = x, .y = y, .indices = indices};
    return run_planes(shape, &j, 1, y != NULL, x, COST_WINDOWS, max_forward_planes);
}

static int max_backward_planes(void *arg, int64_t p0, int64_t p1)
{
    const pool_job *j = arg;
    const pyrt_conv_shape *s = &j->s;
    const int64_t npix = s->oh * s->ow, plane = s->h * s->w;
    for (int64_t p = p0; p < p1; p++) {
        const float *dy = j->dy + p * npix;
        const int64_t *ind = j->saved + p * npix;
        float *dx = j->dx + p * plane;
        memset(dx, 0, (size_t)plane * sizeof(float));
        /* an index from elsewhere (not max_pool2d's) is refused, never followed: the bounds
         * test costs nothing beside the scattered add. -1 is a window of padding alone (which
         * a dilation allows): it has no pixel to pass its gradient to. */
        int64_t bad = 0;
        for (int64_t o = 0; o < npix; o++) {
            const int64_t i = ind[o];
            if ((uint64_t)i < (uint64_t)plane)
                dx[i] += dy[o];
            else if (i != -1)
                bad = 1;
        }
        if (bad)
            return PYRT_EINVAL;
    }
    return 0;
}

int pyrt_max_pool2d_backward(const pyrt_conv_shape *shape, const float *dy,
                             const int64_t *indices, float *dx)
{
    pool_job j = {.dy = dy, .saved = indices, .dx = dx};
    return run_planes(shape, &j, 1, dy && indices, dx, COST_SCATTER, max_backward_planes);
}

/* ---- average pooling ------------------------------------------------------------------ */

/* The divisor of the window over input rows [y0, y1) and columns [x0, x1) at output (oy,
 * ox): its pixels in the input with exclude_pad, else in the padded input (kh * kw but for a
 * window that ceil_mode lets hang past the padding). */
static inline float avg_divisor(const pyrt_conv_shape *s, int64_t oy, int64_t ox, int64_t y0,
                                int64_t y1, int64_t x0, int64_t x1)
{
    if (s->exclude_pad)
        return (float)((y1 - y0) * (x1 - x0));
    const int64_t a = oy * s->stride_h - s->pad_h, b = ox * s->stride_w - s->pad_w;
    const int64_t ae = a + s->kh < s->h + s->pad_h ? a + s->kh : s->h + s->pad_h;
    const int64_t be = b + s->kw < s->w + s->pad_w ? b + s->kw : s->w + s->pad_w;
    return (float)((ae - a) * (be - b));
}

static int avg_forward_planes(void *arg, int64_t p0, int64_t p1)
{
    const pool_job *j = arg;
    const pyrt_conv_shape *s = &j->s;
    for (int64_t p = p0; p < p1; p++) {
        const float *x = j->x + p * s->h * s->w;
        float *y = j->y + p * s->oh * s->ow;
        for (int64_t oy = 0; oy < s->oh; oy++) {
            int64_t y0, y1;
            window(oy, s->stride_h, s->pad_h, s->kh, s->h, &y0, &y1);
            for (int64_t ox = 0; ox < s->ow; ox++) {
                int64_t x0, x1;
                window(ox, s->stride_w, s->pad_w, s->kw, s->w, &x0, &x1);
                float sum = 0.0f;
                for (int64_t iy = y0; iy < y1; iy++)
                    for (int64_t ix = x0; ix < x1; ix++)
                        sum += x[iy * s->w + ix];
                y[oy * s->ow + ox] = sum / avg_divisor(s, oy, ox, y0, y1, x0, x1);
            }
        }
    }
    return 0;
}

int pyrt_avg_pool2d_forward(const pyrt_conv_shape *shape, const float *x, float *y)
{
    pool_job j = {.x = x, .y = y};
    return run_planes(shape, &j, 0, y != NULL, x, COST_WINDOWS, avg_forward_planes);
}

static int avg_backward_planes(void *arg, int64_t p0, int64_t p1)
{
    const pool_job *j = arg;
    const pyrt_conv_shape *s = &j->s;
    const int64_t plane = s->h * s->w;
    for (int64_t p = p0; p < p1; p++) {
        const float *dy = j->dy + p * s->oh * s->ow;
        float *dx = j->dx + p * plane;
        memset(dx, 0, (size_t)plane * sizeof(float));
        for (int64_t oy = 0; oy < s->oh; oy++) {
            int64_t y0, y1;
            window(oy, s->stride_h, s->pad_h, s->kh, s->h, &y0, &y1);
            for (int64_t ox = 0; ox < s->ow; ox++) {
                int64_t x0, x1;
                window(ox, s->stride_w, s->pad_w, s->kw, s->w, &x0, &x1);
                const float g = dy[oy * s->ow + ox] / avg_divisor(s, oy, ox, y0, y1, x0, x1);
                for (int64_t iy = y0; iy < y1; iy++)
                    for (int64_t ix = x0; ix < x1; ix++)
                        dx[iy * s->w + ix] += g;
            }
        }
    }
    return 0;
}

int pyrt_avg_pool2d_backward(const pyrt_conv_shape *shape, const float *dy, float *dx)
{
    pool_job j = {.dy = dy, .dx = dx};
    return run_planes(shape, &j, 0, dy != NULL, dx, COST_WINDOWS_SCATTER,
                      avg_backward_planes);
}
