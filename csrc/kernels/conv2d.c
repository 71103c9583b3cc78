/*
 * conv2d.c - 2-D convolution of NCHW batches, forward and backward (pyrt.h).
 *
 * Method. A stride-1 convolution with few taps per output (c*kh*kw, or k*kh*kw for the input
 * gradient, at most DIRECT_MAX_TAPS) runs the direct kernels of conv_direct.c, dilated or not;
 * everything else unfolds each image with im2col and multiplies with pyrt_sgemm:
 *     forward       y[n]  = weight[k, c*kh*kw] @ cols(x[n]) + bias
 *     input grad    dx[n] = col2im(weight^T @ dy[n])
 *     weight grad   dw    = sum over n of dy[n] @ patches(x[n]),  dbias = sum of dy over n, y, x
 * where patches is cols transposed, its columns in (kh, kw, c) order (im2col.c): built from
 * the image channels-last, it is copied in runs of c floats rather than short stretches of
 * output rows, and the product reads it in place where cols^T had to be packed (the weight
 * gradient of 96 -> 32 filters of 3x3 over a batch of 32 16x16 images, 1 thread on an AMD
 * EPYC: 5.2-5.6 ms, against 8.0-11.5 through im2col); the sum is put in the weight's
 * (c, kh, kw) order at the end.
 * Groups. A convolution of g groups is g convolutions, each of c/g input planes with k/g
 * filters: group i reads planes [i c/g, (i+1) c/g) of each image and writes planes
 * [i k/g, (i+1) k/g) of its output, and its filters are rows [i k/g, (i+1) k/g) of the weight
 * (and of the gradients). Below, a job is one group: its shape has c/g channels and k/g
 * filters, and it steps from one image to the next by the whole tensors' image sizes. Each
 * group picks its own method, so a depthwise layer (one plane per group) runs the direct
 * kernels, and the groups are a parallel loop whose tasks run their own loops over the batch
 * (nested, in the same pool): many small groups keep every thread busy.
 * The direct input gradient is itself a direct convolution: of dy, padded by
 * dilation_h*(kh-1)-pad_h and dilation_w*(kw-1)-pad_w, with the filters transposed (k <-> c)
 * and flipped in both spatial axes (of the same dilation).
 *
 * Parallelism. The batch is cut into units: an image for im2col + GEMM (whose GEMM and
 * unfolding are parallel loops themselves, so a batch of one still uses every thread), a band
 * of output rows of one image for the direct kernels (a whole image unless the batch is too
 * small to keep the threads busy, or, for the weight gradient, the image too large). A
 * parallel loop runs over the units with a grain of about CHUNK_FLOPS, and each chunk
 * allocates its own scratch buffers once.
 *
 * Determinism. The weight and bias gradients are sums over the batch. Consecutive units are
 * grouped into blocks of a size computed from the shape alone (about BLOCK_FLOPS of work,
 * never from the thread count); each block sums its units in order into its own partial
 * buffer, in parallel with the other blocks, and the partials are then added in block order.
 * Every kernel involved sums in a fixed order too, so the gradients are bitwise identical at
 * any thread count. (When there are fewer blocks than threads want, the direct path also
 * splits each block's filters into groups: different filters are different sums, so this
 * changes no result.)
 */
#include <string.h>

#include "conv_internal.h"

/* Largest number of taps per output (input channels x kh x kw) the direct kernels take; for
 * the weight gradient also the most weight entries, whose vector partial sums (8 floats
 * each) must stay in cache. */
#define DIRECT_MAX_TAPS 576
/* Forward and input gradient: up to DIRECT_MAX_TAPS_THIN taps per output also run direct
 * where im2col + GEMM would be a thin product per image (fewer than GEMM_MIN_FILTERS filters,
 * or fewer than GEMM_MIN_PLANE output pixels), which GEMM runs below its speed. On an AMD EPYC
 * with AVX-512, the direct kernels' time over im2col + GEMM's, 1 / 2 threads:
 * [32, 96, 16, 16] -> 32 filters 0.66 / 0.62, -> 96 filters 0.86 / 0.82, [32, 128, 8, 8] -> 128
 * 0.75 / 0.84, [32, 256, 8, 8] -> 256 0.91 / 0.93; but [8, 256, 14, 14] -> 256, a GEMM of
 * 256 x 2304 x 196 per image, 1.02 / 1.07. */
#define DIRECT_MAX_TAPS_THIN 4608
#define GEMM_MIN_FILTERS 128
#define GEMM_MIN_PLANE 128
#define DIRECT_MAX_FILTERS 4096
/* Direct path: the shifted copies of a band are kept under this size (a band is at least one
 * row), so that the kernels read them from the L2 cache. */
#define COPY_BYTES (256 << 10)
/* Direct path, forward and input gradient: the loops leave each thread about
 * UNITS_PER_THREAD chunks, cutting images into bands of output rows when the batch is too
 * small for that, but no band below MIN_BAND_FLOPS of work. */
#define UNITS_PER_THREAD 4
#define MIN_BAND_FLOPS (1 << 20)
/* Direct path, weight gradient: bands of about DW_BAND_FLOPS, from the shape alone (the band
 * decides which lane each term is added in, so it must not depend on the thread count). */
#define DW_BAND_FLOPS (1 << 24)
/* Work a chunk of a parallel loop should hold (some 20 us): a chunk allocates its scratch
 * buffers and zeroes their padding once, then reuses them for all its units. */
#define CHUNK_FLOPS (1 << 20)
/* Weight-gradient work summed into one partial buffer. */
#define BLOCK_FLOPS (1 << 21)
/* ... and on the im2col + GEMM path, at least this much work per entry of the partial: each
 * block's partial is zeroed, added into by every GEMM and summed with the others at the end,
 * so a block per image of a wide layer moved more memory than its GEMMs took time (128 -> 128
 * filters of 3x3 over 8x8 images: 32 partials of 147k floats; the weight gradient took 1.7
 * times PyTorch's). The GEMMs are parallel loops themselves: fewer blocks keep every thread
 * busy all the same. */
#define GEMM_BLOCK_FLOPS_PER_ENTRY 1024
/* ... whose products take about SEG_ROWS rows of the patch matrix (a block of k of the GEMM
 * kernels) and at most SEG_FLOATS of it (so that it stays in L2). */
#define SEG_ROWS 256
#define SEG_FLOATS (1 << 18)

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* A buffer of n floats (n may be 0), 64-byte aligned; NULL when out of memory. Scratch comes
 * from the buffer cache, which keeps the pages of large blocks mapped from one call to the
 * next; free_floats gives it back. */
static float *alloc_floats(int64_t n)
{
    return pyrt_buffer_alloc((size_t)(n > 0 ? n : 1) * sizeof(float));
}

static void free_floats(float *p)
{
    pyrt_buffer_free(p);
}

/* a*b*c*d fits comfortably in an int64 byte count. */
static int product_ok(int64_t a, int64_t b, int64_t c, int64_t d)
{
    int64_t p;
    return !__builtin_mul_overflow(a, b, &p) && !__builtin_mul_overflow(p, c, &p)
           && !__builtin_mul_overflow(p, d, &p) && p <= INT64_MAX / 16;
}

/* Windows along one axis, `extent` = dilation * (k - 1) + 1 input positions from first tap to
 * last: those that fit the padded input or, with ceil_mode, also a last one that hangs past
 * it, as long as it starts inside the input or its leading padding (PyTorch's rule: a window
 * starting in the trailing padding would hold padding only). */
static int64_t out_size(int64_t size, int64_t extent, int64_t stride, int64_t pad,
                        int64_t ceil_mode)
{
    const int64_t span = size + 2 * pad - extent;
    int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
    if (ceil_mode && (out - 1) * stride >= size + pad)
        out--;
    return out;
}

int pyrt_conv_shape_init(pyrt_conv_shape *s)
{
    if (!s)
        return PYRT_EINVAL;
    const int64_t big = INT32_MAX;
    if (s->dilation_h == 0)
        s->dilation_h = 1;
    if (s->dilation_w == 0)
        s->dilation_w = 1;
    if (s->groups == 0)
        s->groups = 1;
    if (s->n < 0 || s->c < 0 || s->h < 0 || s->w < 0 || s->kh < 1 || s->kw < 1
        || s->stride_h < 1 || s->stride_w < 1 || s->pad_h < 0 || s->pad_w < 0
        || s->dilation_h < 1 || s->dilation_w < 1 || s->groups < 1)
        return PYRT_EINVAL;
    if (s->n > big || s->c > big || s->h > big || s->w > big || s->kh > big || s->kw > big
        || s->stride_h > big || s->stride_w > big || s->pad_h > big || s->pad_w > big
        || s->dilation_h > big || s->dilation_w > big || s->groups > big)
        return PYRT_EINVAL;
    /* below 2^62: each factor is below 2^31 */
    const int64_t extent_h = s->dilation_h * (s->kh - 1) + 1;
    const int64_t extent_w = s->dilation_w * (s->kw - 1) + 1;
    if (s->h + 2 * s->pad_h < extent_h || s->w + 2 * s->pad_w < extent_w)
        return PYRT_EINVAL; /* the window does not fit in the padded input */
    if ((s->ceil_mode != 0 && s->ceil_mode != 1) || (s->exclude_pad != 0 && s->exclude_pad != 1)
        || (s->relu != 0 && s->relu != 1))
        return PYRT_EINVAL;
    s->oh = out_size(s->h, extent_h, s->stride_h, s->pad_h, s->ceil_mode);
    s->ow = out_size(s->w, extent_w, s->stride_w, s->pad_w, s->ceil_mode);
    if (!product_ok(s->n, s->c, s->h, s->w) || !product_ok(s->n, s->c, s->oh, s->ow))
        return PYRT_EINVAL;
    return PYRT_OK;
}

/* Validate a convolution's geometry into *s (a copy, so a stale oh/ow cannot mislead). */
static int conv_shape(const pyrt_conv_shape *in, pyrt_conv_shape *s)
{
    if (!in)
        return PYRT_EINVAL;
    *s = *in;
    int rc = pyrt_conv_shape_init(s);
    if (rc)
        return rc;
    if (s->k < 0 || s->k > INT32_MAX || !product_ok(s->n, s->k, s->oh, s->ow)
        || !product_ok(s->k, s->c, s->kh, s->kw) || s->c % s->groups || s->k % s->groups
        || s->relu)
        return PYRT_EINVAL;
    return PYRT_OK;
}

/* The direct kernels apply to a stride-1 correlation of cin planes with cout filters (of any
 * dilation) into planes of `plane` pixels when it has enough filters to share the kw shifted
 * copies of the input (at least cin / 8) and at most DIRECT_MAX_TAPS taps per output, or, with
 * `thin`, at most DIRECT_MAX_TAPS_THIN where the GEMM would be thin (above); otherwise
 * im2col + GEMM is faster. */
static int use_direct(const pyrt_conv_shape *s, int64_t cin, int64_t cout, int64_t plane,
                      int thin)
{
    const int64_t taps = cin * s->kh * s->kw;
    if (s->stride_h != 1 || s->stride_w != 1 || 8 * cout < cin)
        return 0;
    return taps <= DIRECT_MAX_TAPS
           || (thin && taps <= DIRECT_MAX_TAPS_THIN
               && (cout < GEMM_MIN_FILTERS || plane < GEMM_MIN_PLANE));
}

/* What the loop bodies share: one group's convolution (see Groups above). */
typedef struct conv_job {
    pyrt_conv_shape s;       /* the group's: c and k per group, groups 1 */
    int64_t x_image, y_image; /* floats from one image to the next in x and dx, in y and dy */
    const float *x, *weight, *bias, *dy;
    float *y, *dx;
    const float *packed;     /* direct: filters laid out by conv_direct_pack */
    conv_direct g;           /* direct: geometry of a full band */
    int64_t band, bands;     /* direct: output rows per unit, units per image */
    int direct;              /* the weight gradient uses the direct kernels */
    float *dweight, *dbias;  /* which parameter gradients are wanted */
    int64_t units, units_per_block;
    int64_t seg_rows;        /* GEMM path: rows of the patch matrix per product (param_grads) */
    int64_t filter_groups, filter_group_size; /* direct: filter groups per block, their size */
    float *partials;         /* [blocks][k*c*kh*kw + k]: weight, then bias gradient */
} conv_job;

/* Cut each image's `rows` output rows into bands of `band` rows for the direct path. */
static void set_bands(conv_job *j, int64_t rows, int64_t band)
{
    j->band = clamp(band, 1, rows > 0 ? rows : 1);
    j->bands = ceil_div(rows, j->band);
}

/* The most output rows whose shifted copies (kw copies of cin planes, dilation_h*(kh-1) rows
 * more than the band) fit in COPY_BYTES. */
static int64_t cache_band(const pyrt_conv_shape *s, int64_t cin, int64_t ow)
{
    return COPY_BYTES / (int64_t)sizeof(float) / (s->kw * cin * ow + 1)
           - s->dilation_h * (s->kh - 1);
}

/* Bands for the forward pass or the input gradient (whose results do not depend on how the
 * work is cut): whole images when the batch gives each thread UNITS_PER_THREAD of them,
 * thinner bands when it does not, and none thicker than cache_rows. Returns the loop grain:
 * about CHUNK_FLOPS of work, but small enough to leave UNITS_PER_THREAD chunks per thread. */
static int64_t plan_bands(conv_job *j, int64_t rows, int64_t row_flops, int64_t cache_rows)
{
    const int64_t threads = pyrt_max_concurrency();
    row_flops = row_flops > 0 ? row_flops : 1;
    int64_t want = ceil_div(UNITS_PER_THREAD * threads, j->s.n);
    int64_t band = ceil_div(rows, want), least = ceil_div(MIN_BAND_FLOPS, row_flops);
    band = band > least ? band : least;
    set_bands(j, rows, band < cache_rows ? band : cache_rows);
    const int64_t units = j->s.n * j->bands;
    int64_t grain = CHUNK_FLOPS / (row_flops * j->band);
    if (grain > units / (UNITS_PER_THREAD * threads))
        grain = units / (UNITS_PER_THREAD * threads);
    return grain > 1 ? grain : 1;
}

/* The direct-path geometry of a full band of `band` output rows of width ow. */
static conv_direct direct_geometry(const pyrt_conv_shape *s, int64_t cin, int64_t cout,
                                   int64_t band, int64_t ow, int64_t out_plane)
{
    const int64_t span = s->dilation_h * (s->kh - 1) + 1;
    return (conv_direct){.cin = cin, .cout = cout, .kh = s->kh, .kw = s->kw, .rows = band,
                         .dh = s->dilation_h, .dw = s->dilation_w, .ow = ow,
                         .in_plane = conv_direct_plane(band, span, ow), .out_plane = out_plane};
}

/* ---- forward -------------------------------------------------------------------------- */

/* Unit u of the direct path: its image *n, first output row *y0, and the geometry of its band
 * (the last band of an image may be shorter) out of `rows` rows per image. */
static conv_direct unit_band(const conv_job *j, int64_t u, int64_t rows, int64_t *n,
                             int64_t *y0)
{
    conv_direct g = j->g;
    *n = u / j->bands;
    *y0 = u % j->bands * j->band;
    g.rows = rows - *y0 < j->band ? rows - *y0 : j->band;
    return g;
}

/* The shifted copies of a full band, allocated for a chunk of units. */
static float *alloc_copies(const conv_direct *g)
{
    return alloc_floats(g->kw * g->cin * g->in_plane);
}

static int forward_direct(void *arg, int64_t u0, int64_t u1)
{
    const conv_job *j = arg;
    const pyrt_conv_shape *s = &j->s;
    float *in = alloc_copies(&j->g);
    if (!in)
        return PYRT_ENOMEM;
    int64_t zeros_for = -1; /* the band whose zeros `in` holds */
    for (int64_t u = u0; u < u1; u++) {
        int64_t n, y0;
        conv_direct g = unit_band(j, u, s->oh, &n, &y0);
        /* output row y0 + r reads input rows y0 + r - pad_h .. + kh */
        conv_direct_shift(&g, j->x + n * j->x_image, s->h, s->w, s->pad_h - y0, s->pad_w,
                          zeros_for == y0, in);
        zeros_for = y0;
        conv_direct_forward(&g, in, j->packed, j->bias, j->y + n * j->y_image + y0 * s->ow);
    }
    free_floats(in);
    return 0;
}

static int forward_gemm(void *arg, int64_t n0, int64_t n1)
{
    const conv_job *j = arg;
    const pyrt_conv_shape *s = &j->s;
    const int64_t taps = s->c * s->kh * s->kw, npix = s->oh * s->ow;
    float *cols = alloc_floats(taps * npix);
    if (!cols)
        return PYRT_ENOMEM;
    int rc = 0;
    for (int64_t n = n0; n < n1 && !rc; n++) {
        float *y = j->y + n * j->y_image;
        conv_im2col(s, j->x + n * j->x_image, cols);
        if (j->bias)
            for (int64_t o = 0; o < s->k; o++)
                for (int64_t p = 0; p < npix; p++)
                    y[o * npix + p] = j->bias[o];
        rc = pyrt_sgemm(0, 0, s->k, npix, taps, 1.0f, j->weight, taps, cols, npix,
                        j->bias ? 1.0f : 0.0f, y, npix);
    }
    free_floats(cols);
    return rc;
}

/* One group's forward pass (j from group_of). */
static int forward(conv_job *j)
{
    const pyrt_conv_shape *s = &j->s;
    const int64_t npix = s->oh * s->ow, taps = s->c * s->kh * s->kw;
    if (taps == 0) { /* no input channels: the bias alone */
        for (int64_t n = 0; n < s->n; n++)
            for (int64_t o = 0; o < s->k; o++)
                for (int64_t p = 0; p < npix; p++)
                    j->y[n * j->y_image + o * npix + p] = j->bias ? j->bias[o] : 0.0f;
        return PYRT_OK;
    }
    if (!use_direct(s, s->c, s->k, s->oh * s->ow, 1)) {
        int64_t grain = clamp(CHUNK_FLOPS / (2 * s->k * taps * npix), 1, s->n);
        return pyrt_parallel_for(s->n, grain, forward_gemm, j);
    }
    int64_t grain = plan_bands(j, s->oh, 2 * s->k * taps * s->ow, cache_band(s, s->c, s->ow));
    j->g = direct_geometry(s, s->c, s->k, j->band, s->ow, npix);
    float *packed = alloc_floats(s->k * taps);
    if (!packed)
        return PYRT_ENOMEM;
    conv_direct_pack(&j->g, j->weight, 0, packed);
    j->packed = packed;
    int rc = pyrt_parallel_for(s->n * j->bands, grain, forward_direct, j);
    free_floats(packed);
    return rc;
}

/* ---- input gradient ------------------------------------------------------------------- */

static int input_grad_direct(void *arg, int64_t u0, int64_t u1)
{
    const conv_job *j = arg;
    const pyrt_conv_shape *s = &j->s;
    float *in = alloc_copies(&j->g);
    if (!in)
        return PYRT_ENOMEM;
    int64_t zeros_for = -1; /* the band whose zeros `in` holds */
    for (int64_t u = u0; u < u1; u++) {
        int64_t n, y0;
        conv_direct g = unit_band(j, u, s->h, &n, &y0);
        /* dy padded by dilation_h*(kh-1)-pad_h rows and dilation_w*(kw-1)-pad_w columns (a crop
         * where negative) */
        conv_direct_shift(&g, j->dy + n * j->y_image, s->oh, s->ow,
                          s->dilation_h * (s->kh - 1) - s->pad_h - y0,
                          s->dilation_w * (s->kw - 1) - s->pad_w, zeros_for == y0, in);
        zeros_for = y0;
        conv_direct_forward(&g, in, j->packed, NULL, j->dx + n * j->x_image + y0 * s->w);
    }
    free_floats(in);
    return 0;
}

static int input_grad_gemm(void *arg, int64_t n0, int64_t n1)
{
    const conv_job *j = arg;
    const pyrt_conv_shape *s = &j->s;
    const int64_t taps = s->c * s->kh * s->kw, npix = s->oh * s->ow;
    float *cols = alloc_floats(taps * npix);
    if (!cols)
        return PYRT_ENOMEM;
    int rc = 0;
    for (int64_t n = n0; n < n1 && !rc; n++) {
        rc = pyrt_sgemm(1, 0, taps, npix, s->k, 1.0f, j->weight, taps, j->dy + n * j->y_image,
                        npix, 0.0f, cols, npix);
        if (!rc)
            conv_col2im(s, cols, j->dx + n * j->x_image);
    }
    free_floats(cols);
    return rc;
}

static int input_grad(conv_job *j)
{
    const pyrt_conv_shape *s = &j->s;
    const int64_t image = s->c * s->h * s->w;
    if (s->n == 0 || image == 0)
        return PYRT_OK;
    if (s->k == 0) {
        for (int64_t n = 0; n < s->n; n++)
            memset(j->dx + n * j->x_image, 0, (size_t)image * sizeof(float));
        return PYRT_OK;
    }
    const int64_t taps_t = s->k * s->kh * s->kw; /* taps of the transposed convolution */
    if (!use_direct(s, s->k, s->c, s->h * s->w, 1)) {
        int64_t grain = clamp(CHUNK_FLOPS / (2 * taps_t * s->c * s->oh * s->ow), 1, s->n);
        return pyrt_parallel_for(s->n, grain, input_grad_gemm, j);
    }
    int64_t grain = plan_bands(j, s->h, 2 * s->c * taps_t * s->w, cache_band(s, s->k, s->w));
    j->g = direct_geometry(s, s->k, s->c, j->band, s->w, s->h * s->w);
    float *packed = alloc_floats(s->c * taps_t);
    if (!packed)
        return PYRT_ENOMEM;
    conv_direct_pack(&j->g, j->weight, 1, packed);
    j->packed = packed;
    int rc = pyrt_parallel_for(s->n * j->bands, grain, input_grad_direct, j);
    free_floats(packed);
    return rc;
}

/* ---- weight and bias gradients -------------------------------------------------------- */

/* Filters [o0, o1) of block blk of the direct path: the block's shifted copies go to slots of
 * `copies` (each of `copy_size` floats; zeros_for[slot] is the band whose zeros a slot
 * holds), the filters' weight gradient to `lanes` in one pass over all the block's units,
 * folded into their entries of `part`, and their bias sums after it. */
static void param_block_direct(const conv_job *j, int64_t blk, int64_t o0, int64_t o1,
                               float *part, float *copies, int64_t copy_size,
                               int64_t *zeros_for, float *lanes)
{
    const pyrt_conv_shape *s = &j->s;
    const int64_t taps = s->c * s->kh * s->kw, npix = s->oh * s->ow;
    const int64_t u0 = blk * j->units_per_block;
    const int64_t count = j->units - u0 < j->units_per_block ? j->units - u0
                                                              : j->units_per_block;
    conv_band bands[CONV_MAX_BANDS];
    for (int64_t slot = 0; slot < count; slot++) {
        int64_t n, y0;
        conv_direct g = unit_band(j, u0 + slot, s->oh, &n, &y0);
        /* the band's rows of dy, from plane o0 on */
        const float *dy = j->dy + n * j->y_image + (o0 * s->oh + y0) * s->ow;
        float *in = copies + slot * copy_size;
        if (j->dweight) {
            conv_direct_shift(&g, j->x + n * j->x_image, s->h, s->w, s->pad_h - y0, s->pad_w,
                              zeros_for[slot] == y0, in);
            zeros_for[slot] = y0;
        }
        bands[slot] = (conv_band){in, dy, g.rows};
    }
    memset(part + o0 * taps, 0, (size_t)((o1 - o0) * taps) * sizeof(float));
    memset(part + s->k * taps + o0, 0, (size_t)(o1 - o0) * sizeof(float));
    if (j->dweight) {
        conv_direct g = j->g;
        g.cout = o1 - o0;
        conv_direct_dweight(&g, bands, count, lanes);
        conv_direct_fold_lanes(lanes, (o1 - o0) * taps, part + o0 * taps);
    }
    if (j->dbias) /* after the weight gradient, which has brought dy into the cache */
        for (int64_t slot = 0; slot < count; slot++)
            conv_plane_sums(bands[slot].dout, o1 - o0, npix, bands[slot].rows * s->ow,
                            part + s->k * taps + o0);
}

/* The row stride of the patch matrix: taps rounded up to a multiple of 8 floats that is not
 * one of 16, so that the rows of a micro-panel of it spread over all the sets of L1 and GEMM
 * reads it in place (gemm_l1_holds). */
static int64_t patch_ld(int64_t taps)
{
    const int64_t ld = (taps + 7) / 8 * 8;
    return ld % 16 ? ld : ld + 8;
}

/* Block blk of the GEMM path: the weight gradient as dy @ patches (conv_patches), one
 * segment of the block's pixels at a time, into the partial's entries laid out
 * [k, kh, kw, c] (param_grads puts them in the weight's order after the sum). A segment is
 * part of one image (dy's columns read in place), or whole images when an image has fewer
 * than seg_rows pixels (their columns of dy gathered side by side into dyseg). The image is
 * first copied channels-last into hwc. */
static int param_block_gemm(const conv_job *j, int64_t blk, float *part, float *hwc,
                            float *patches, float *dyseg)
{
    const pyrt_conv_shape *s = &j->s;
    const int64_t taps = s->c * s->kh * s->kw, npix = s->oh * s->ow;
    const int64_t u0 = blk * j->units_per_block;
    const int64_t u1 = j->units - u0 < j->units_per_block ? j->units : u0 + j->units_per_block;
    const int64_t per_seg = npix > 0 && j->seg_rows > npix ? j->seg_rows / npix : 1;
    const int64_t ld = patch_ld(taps);
    int rc = 0;
    for (int64_t n0 = u0; n0 < u1 && j->dweight && taps > 0 && !rc; n0 += per_seg) {
        const int64_t images = u1 - n0 < per_seg ? u1 - n0 : per_seg;
        for (int64_t q = 0; q < images && !rc; q++) {
            const int64_t n = n0 + q;
            const float *dy = j->dy + n * j->y_image;
            rc = pyrt_transpose(j->x + n * j->x_image, hwc, 1, s->c, s->h * s->w);
            if (per_seg == 1) {
                for (int64_t p0 = 0; p0 < npix && !rc; p0 += j->seg_rows) {
                    const int64_t p1 = npix - p0 < j->seg_rows ? npix : p0 + j->seg_rows;
                    conv_patches(s, hwc, p0, p1, patches, ld);
                    rc = pyrt_sgemm(0, 0, s->k, taps, p1 - p0, 1.0f, dy + p0, npix, patches,
                                    ld, 1.0f, part, taps);
                }
                continue;
            }
            conv_patches(s, hwc, 0, npix, patches + q * npix * ld, ld);
            for (int64_t o = 0; o < s->k; o++)
                memcpy(dyseg + (o * images + q) * npix, dy + o * npix,
                       (size_t)npix * sizeof(float));
        }
        if (per_seg > 1 && !rc)
            rc = pyrt_sgemm(0, 0, s->k, taps, images * npix, 1.0f, dyseg, images * npix,
                            patches, ld, 1.0f, part, taps);
    }
    for (int64_t n = u0; n < u1 && j->dbias && !rc; n++)
        conv_plane_sums(j->dy + n * j->y_image, s->k, npix, npix, part + s->k * taps);
    return rc;
}

/* Task t of the parameter-gradient loop: block t / filter_groups, and for the direct path
 * filter group t % filter_groups (of filter_group_size filters, a multiple of the kernels'
 * 4). */
static int param_tasks(void *arg, int64_t t0, int64_t t1)
{
    const conv_job *j = arg;
    const pyrt_conv_shape *s = &j->s;
    const int64_t taps = s->c * s->kh * s->kw, stride = s->k * taps + s->k;
    const int64_t copy_size = j->g.kw * j->g.cin * j->g.in_plane;
    int64_t zeros_for[CONV_MAX_BANDS];
    float *a, *b = NULL, *c = NULL;
    if (j->direct) {
        for (int slot = 0; slot < CONV_MAX_BANDS; slot++)
            zeros_for[slot] = -1;
        a = alloc_floats(j->dweight ? j->units_per_block * copy_size : 0);
        b = alloc_floats(j->filter_group_size * taps * CONV_DIRECT_LANES_MAX);
        c = alloc_floats(0);
    } else { /* the patches, the image channels-last, dy's gathered columns */
        const int64_t want = j->dweight ? 1 : 0, npix = s->oh * s->ow;
        a = alloc_floats(want * j->seg_rows * patch_ld(taps));
        b = alloc_floats(want * s->c * s->h * s->w);
        c = alloc_floats(want && j->seg_rows > npix ? s->k * j->seg_rows : 0);
    }
    int rc = a && b && c ? 0 : PYRT_ENOMEM;
    for (int64_t t = t0; t < t1 && !rc; t++) {
        const int64_t blk = t / j->filter_groups;
        const int64_t o0 = t % j->filter_groups * j->filter_group_size;
        float *part = j->partials + blk * stride;
        if (j->direct) {
            const int64_t o1 = s->k - o0 < j->filter_group_size ? s->k
                                                                : o0 + j->filter_group_size;
            param_block_direct(j, blk, o0, o1, part, a, copy_size, zeros_for, b);
        } else {
            memset(part, 0, (size_t)stride * sizeof(float));
            rc = param_block_gemm(j, blk, part, b, a, c);
        }
    }
    free_floats(a);
    free_floats(b);
    free_floats(c);
    return rc;
}

typedef struct sum_job {
    float *partials;
    int64_t blocks, stride, filters;
    float *dweight, *dbias; /* dweight may be the first partial itself */
} sum_job;

/* dst[e - e0] = the sum over blocks, in block order, of partial entry e, for e0 <= e < e1
 * (dst may be the first partial's entries). */
static void add_blocks(const sum_job *sj, int64_t e0, int64_t e1, float *dst)
{
    if (dst != sj->partials + e0)
        memcpy(dst, sj->partials + e0, (size_t)(e1 - e0) * sizeof(float));
    for (int64_t blk = 1; blk < sj->blocks; blk++) {
        const float *p = sj->partials + blk * sj->stride;
        for (int64_t e = e0; e < e1; e++)
            dst[e - e0] += p[e];
    }
}

static int sum_partials(void *arg, int64_t e0, int64_t e1)
{
    const sum_job *sj = arg;
    /* a partial holds the weight gradient's entries, then the bias gradient's */
    const int64_t mid = clamp(sj->filters, e0, e1);
    if (sj->dweight && e0 < mid)
        add_blocks(sj, e0, mid, sj->dweight + e0);
    if (sj->dbias && mid < e1)
        add_blocks(sj, mid, e1, sj->dbias + (mid - sj->filters));
    return 0;
}

typedef struct reorder_job {
    const float *from; /* [k, kh*kw, c] */
    float *to;         /* [k, c, kh*kw] */
    int64_t c, spots;
} reorder_job;

static int reorder_filters(void *arg, int64_t o0, int64_t o1)
{
    const reorder_job *r = arg;
    const int64_t taps = r->c * r->spots;
    for (int64_t o = o0; o < o1; o++)
        for (int64_t t = 0; t < r->spots; t++)
            for (int64_t ch = 0; ch < r->c; ch++)
                r->to[o * taps + ch * r->spots + t] = r->from[o * taps + t * r->c + ch];
    return 0;
}

static int param_grads(conv_job *j)
{
    const pyrt_conv_shape *s = &j->s;
    const int64_t taps = s->c * s->kh * s->kw, filters = s->k * taps, stride = filters + s->k;
    if (s->k == 0)
        return PYRT_OK;
    if (s->n == 0) { /* an empty sum */
        if (j->dweight)
            memset(j->dweight, 0, (size_t)filters * sizeof(float));
        if (j->dbias)
            memset(j->dbias, 0, (size_t)s->k * sizeof(float));
        return PYRT_OK;
    }
    int64_t unit_flops;
    j->direct = use_direct(s, s->c, s->k, s->oh * s->ow, 0) && filters <= DIRECT_MAX_FILTERS;
    if (j->direct) {
        const int64_t row_flops = 2 * s->k * taps * s->ow + 1;
        const int64_t band = DW_BAND_FLOPS / row_flops, cache_rows = cache_band(s, s->c, s->ow);
        set_bands(j, s->oh, band < cache_rows ? band : cache_rows);
        j->g = direct_geometry(s, s->c, s->k, j->band, s->ow, s->oh * s->ow);
        j->units = s->n * j->bands;
        unit_flops = 2 * s->k * taps * s->ow * j->band;
    } else {
        j->units = s->n;
        unit_flops = 2 * s->k * taps * s->oh * s->ow;
    }
    unit_flops += s->k * s->oh * s->ow; /* the bias sums */
    int64_t block_flops = BLOCK_FLOPS;
    if (!j->direct && GEMM_BLOCK_FLOPS_PER_ENTRY * stride > block_flops)
        block_flops = GEMM_BLOCK_FLOPS_PER_ENTRY * stride;
    j->units_per_block = clamp(block_flops / unit_flops, 1,
                               j->direct ? CONV_MAX_BANDS : j->units);
    /* GEMM path: about SEG_ROWS pixels per product, whole images if they are smaller, and
     * their patches within SEG_FLOATS */
    const int64_t npix = s->oh * s->ow;
    int64_t seg = clamp(SEG_FLOATS / (taps > 0 ? taps : 1), 1, SEG_ROWS);
    if (npix > 0 && seg > npix)
        seg = npix * clamp(seg / npix, 1, j->units_per_block);
    else if (npix > 0)
        seg = ceil_div(npix, ceil_div(npix, seg)); /* segments of one image, equal */
    j->seg_rows = seg;
    const int64_t blocks = ceil_div(j->units, j->units_per_block);
    /* Filters are independent sums, so splitting them into groups (of whole 4-filter tiles)
     * changes no result: the direct path does it when the blocks alone would leave threads
     * idle. */
    const int64_t threads = pyrt_max_concurrency(), kblocks = ceil_div(s->k, 4);
    j->filter_groups = 1;
    if (j->direct && blocks < UNITS_PER_THREAD * threads)
        j->filter_groups = clamp(ceil_div(UNITS_PER_THREAD * threads, blocks), 1, kblocks);
    j->filter_group_size = 4 * ceil_div(kblocks, j->filter_groups);
    j->filter_groups = ceil_div(s->k, j->filter_group_size);
    j->partials = alloc_floats(blocks * stride);
    if (!j->partials)
        return PYRT_ENOMEM;
    int rc = pyrt_parallel_for(blocks * j->filter_groups, 1, param_tasks, j);
    if (!rc) {
        /* the GEMM path's weight gradient is summed into the first partial, then reordered */
        float *wsum = j->direct || !j->dweight ? j->dweight : j->partials;
        sum_job sj = {j->partials, blocks, stride, filters, wsum, j->dbias};
        rc = pyrt_parallel_for(stride, clamp(8192 / blocks, 1, stride), sum_partials, &sj);
    }
    if (!rc && !j->direct && j->dweight) {
        reorder_job r = {j->partials, j->dweight, s->c, s->kh * s->kw};
        rc = pyrt_parallel_for(s->k, clamp(8192 / (taps > 0 ? taps : 1), 1, s->k),
                               reorder_filters, &r);
    }
    free_floats(j->partials);
    return rc;
}

/* ---- groups, and the entry points --------------------------------------------------- */

/* p + off, or NULL for a NULL p (a buffer not given). */
static const float *at(const float *p, int64_t off)
{
    return p ? p + off : NULL;
}

static float *at_mut(float *p, int64_t off)
{
    return p ? p + off : NULL;
}

/* Group i's job of the whole convolution `all` (its shape and tensors): the group's planes of
 * x, y, dx and dy, its filters of the weight and the gradients, its shape (c/groups channels,
 * k/groups filters) and the whole tensors' image strides. */
static conv_job group_of(const conv_job *all, int64_t i)
{
    const pyrt_conv_shape *f = &all->s;
    const int64_t cg = f->c / f->groups, kg = f->k / f->groups;
    const int64_t in_plane = f->h * f->w, out_plane = f->oh * f->ow;
    const int64_t filters = kg * cg * f->kh * f->kw;
    conv_job j = {0};
    j.s = *f;
    j.s.c = cg;
    j.s.k = kg;
    j.s.groups = 1;
    j.x_image = f->c * in_plane;
    j.y_image = f->k * out_plane;
    j.x = at(all->x, i * cg * in_plane);
    j.dx = at_mut(all->dx, i * cg * in_plane);
    j.y = at_mut(all->y, i * kg * out_plane);
    j.dy = at(all->dy, i * kg * out_plane);
    j.weight = at(all->weight, i * filters);
    j.dweight = at_mut(all->dweight, i * filters);
    j.bias = at(all->bias, i * kg);
    j.dbias = at_mut(all->dbias, i * kg);
    return j;
}

/* The loop over the groups of a whole convolution, forward or backward (`all`'s y is set for
 * the forward pass). */
static int group_range(void *arg, int64_t i0, int64_t i1)
{
    const conv_job *all = arg;
    int rc = 0;
    for (int64_t i = i0; i < i1 && !rc; i++) {
        conv_job j = group_of(all, i);
        if (all->y) {
            rc = forward(&j);
            continue;
        }
        if (j.dx)
            rc = input_grad(&j);
        if (!rc && (j.dweight || j.dbias))
            rc = param_grads(&j);
    }
    return rc;
}

int pyrt_conv2d_forward(const pyrt_conv_shape *shape, const float *x, const float *weight,
                        const float *bias, float *y)
{
    conv_job all = {0};
    int rc = conv_shape(shape, &all.s);
    if (rc)
        return rc;
    const pyrt_conv_shape *s = &all.s;
    if (s->n == 0 || s->k == 0)
        return PYRT_OK;
    if (!y || (!x && s->c * s->h * s->w > 0) || (!weight && s->c * s->kh * s->kw > 0))
        return PYRT_EINVAL;
    all.x = x;
    all.weight = weight;
    all.bias = bias;
    all.y = y;
    return pyrt_parallel_for(s->groups, 1, group_range, &all);
}

int pyrt_conv2d_backward(const pyrt_conv_shape *shape, const float *x, const float *weight,
                         const float *dy, float *dx, float *dweight, float *dbias)
{
    conv_job all = {0};
    int rc = conv_shape(shape, &all.s);
    if (rc)
        return rc;
    const pyrt_conv_shape *s = &all.s;
    const int64_t out_count = s->n * s->k * s->oh * s->ow;
    if ((!dy && out_count > 0) || (dx && !weight && s->k * s->c > 0)
        || (dweight && !x && s->n * s->c * s->h * s->w > 0))
        return PYRT_EINVAL;
    all.x = x;
    all.weight = weight;
    all.dy = dy;
    all.dx = dx;
    all.dweight = dweight;
    all.dbias = dbias;
    if (!dx && !dweight && !dbias)
        return PYRT_OK;
    return pyrt_parallel_for(s->groups, 1, group_range, &all);
}
