/*
 * kernels_conv.c - 2-D convolution and pooling, forward and backward, against loops in double.
 *
 * Convolutions take both of conv2d.c's methods: the direct kernels (stride 1, few taps per
 * output, enough filters; the input gradient on its own rule, with k and c swapped) and
 * im2col + GEMM (strides, many taps, few filters), both with dilations and groups, with and
 * without padding and bias, on batches of one image (cut into bands of rows) and of several. Pooling covers
 * windows that tile the input, overlap it, stick out into the padding and, for max pooling,
 * spread out by a dilation. Every input, weight and output
 * is its own malloc block of its exact size.
 */
#include <stddef.h>
#include <stdint.h>

#include "kernels_check.h"

typedef struct {
    const char *what;
    int64_t n, c, h, w, k, kh, kw, stride_h, stride_w, pad_h, pad_w;
    int bias;
    int64_t dilation_h, dilation_w, groups; /* 0: the default, 1 */
} conv_case;

static const conv_case CONVS[] = {
    {"direct 3x3 pad 1", 2, 3, 9, 11, 5, 3, 3, 1, 1, 1, 1, 1},
    {"direct 5x5 no pad, no bias", 3, 1, 12, 10, 4, 5, 5, 1, 1, 0, 0, 0},
    {"direct one image in bands", 1, 3, 48, 44, 8, 3, 3, 1, 1, 1, 1, 1},
    {"direct 1x1", 2, 16, 7, 6, 4, 1, 1, 1, 1, 0, 0, 1},
    {"im2col stride 2", 2, 4, 10, 9, 6, 3, 2, 2, 1, 1, 0, 1},
    {"im2col many taps", 1, 70, 6, 5, 8, 3, 3, 1, 1, 1, 1, 1},
    {"im2col few filters", 4, 16, 8, 8, 1, 3, 3, 1, 1, 1, 1, 0},
    {"im2col stride 3 pad 2", 3, 2, 13, 11, 7, 4, 5, 3, 2, 2, 2, 1},
    {"dilation 2", 2, 3, 11, 12, 5, 3, 3, 1, 1, 2, 2, 1, 2, 2, 0},
    {"dilation 3x2, stride 2", 2, 2, 14, 13, 4, 3, 2, 2, 1, 1, 0, 1, 3, 2, 0},
    {"groups 2", 2, 4, 9, 8, 6, 3, 3, 1, 1, 1, 1, 1, 0, 0, 2},
    {"depthwise", 3, 5, 7, 9, 5, 3, 3, 1, 2, 1, 1, 1, 0, 0, 5},
    {"depthwise x2, dilation 2", 2, 3, 10, 9, 6, 3, 3, 1, 1, 2, 2, 0, 2, 2, 3},
    {"direct dilation 2x3, one image in bands", 1, 3, 44, 40, 8, 3, 3, 1, 1, 2, 3, 1, 2, 3, 0},
    {"im2col dilation 2, many taps", 2, 70, 9, 8, 5, 3, 3, 1, 1, 2, 2, 1, 2, 2, 0},
};

typedef struct {
    pyrt_conv_shape s;
    const float *x, *weight, *bias, *dy;
    float *y, *dx, *dweight, *dbias;
    double *want_y, *bound_y, *want_dx, *bound_dx, *want_dw, *bound_dw, *want_db, *bound_db;
    const char *what;
} conv_job;

static int64_t x_size(const pyrt_conv_shape *s)
{
    return s->n * s->c * s->h * s->w;
}

static int64_t y_size(const pyrt_conv_shape *s, int64_t channels)
{
    return s->n * channels * s->oh * s->ow;
}

/* Every product x * w of the convolution, in double: the outputs, the three gradients and,
 * for the tolerances, the same sums of absolute values. */
static void conv_reference(conv_job *j)
{
    const pyrt_conv_shape *s = &j->s;
    const int64_t cg = s->c / s->groups, kg = s->k / s->groups; /* per group */
    memset(j->want_dx, 0, sizeof(double) * (size_t)x_size(s));
    memset(j->bound_dx, 0, sizeof(double) * (size_t)x_size(s));
    memset(j->want_dw, 0, sizeof(double) * (size_t)(s->k * cg * s->kh * s->kw));
    memset(j->bound_dw, 0, sizeof(double) * (size_t)(s->k * cg * s->kh * s->kw));
    memset(j->want_db, 0, sizeof(double) * (size_t)s->k);
    memset(j->bound_db, 0, sizeof(double) * (size_t)s->k);
    for (int64_t n = 0; n < s->n; n++)
        for (int64_t o = 0; o < s->k; o++)
            for (int64_t oy = 0; oy < s->oh; oy++)
                for (int64_t ox = 0; ox < s->ow; ox++) {
                    const int64_t yi = ((n * s->k + o) * s->oh + oy) * s->ow + ox;
                    const double g = j->dy[yi];
                    double acc = j->bias ? j->bias[o] : 0, abs_acc = fabs(acc);
                    j->want_db[o] += g;
                    j->bound_db[o] += fabs(g);
                    /* filter o sees the channels of its group */
                    for (int64_t c = o / kg * cg; c < (o / kg + 1) * cg; c++)
                        for (int64_t i = 0; i < s->kh; i++)
                            for (int64_t q = 0; q < s->kw; q++) {
                                const int64_t r = oy * s->stride_h - s->pad_h + i * s->dilation_h;
                                const int64_t col = ox * s->stride_w - s->pad_w
                                                    + q * s->dilation_w;
                                if (r < 0 || r >= s->h || col < 0 || col >= s->w)
                                    continue;
                                const int64_t xi = ((n * s->c + c) * s->h + r) * s->w + col;
                                const int64_t wi = ((o * cg + c % cg) * s->kh + i) * s->kw + q;
                                const double xv = j->x[xi], wv = j->weight[wi];
                                acc += xv * wv;
                                abs_acc += fabs(xv * wv);
                                j->want_dx[xi] += g * wv;
                                j->bound_dx[xi] += fabs(g * wv);
                                j->want_dw[wi] += g * xv;
                                j->bound_dw[wi] += fabs(g * xv);
                            }
                    j->want_y[yi] = acc;
                    j->bound_y[yi] = abs_acc;
                }
}

static void conv_run(void *ctx)
{
    conv_job *j = ctx;
    CHECK_RC(pyrt_conv2d_forward(&j->s, j->x, j->weight, j->bias, j->y), PYRT_OK);
    CHECK_RC(pyrt_conv2d_backward(&j->s, j->x, j->weight, j->dy, j->dx, j->dweight,
                                  j->bias ? j->dbias : NULL),
             PYRT_OK);
}

static void conv_check(void *ctx)
{
    conv_job *j = ctx;
    const pyrt_conv_shape *s = &j->s;
    const int64_t taps = s->c / s->groups * s->kh * s->kw, pixels = s->n * s->oh * s->ow;
    char what[160];
    snprintf(what, sizeof what, "conv2d %s: y", j->what);
    kc_close(what, j->y, j->want_y, j->bound_y, y_size(s, s->k), taps + 1, 0);
    snprintf(what, sizeof what, "conv2d %s: dx", j->what);
    kc_close(what, j->dx, j->want_dx, j->bound_dx, x_size(s),
             s->k / s->groups * s->kh * s->kw, 0);
    snprintf(what, sizeof what, "conv2d %s: dweight", j->what);
    kc_close(what, j->dweight, j->want_dw, j->bound_dw, s->k * taps, pixels, 0);
    if (j->bias) {
        snprintf(what, sizeof what, "conv2d %s: dbias", j->what);
        kc_close(what, j->dbias, j->want_db, j->bound_db, s->k, pixels, 0);
    }
}

static void run_conv(stress_rng *r, const conv_case *cc)
{
    conv_job j = {.what = cc->what};
    j.s = (pyrt_conv_shape){.n = cc->n, .c = cc->c, .h = cc->h, .w = cc->w, .k = cc->k,
                            .kh = cc->kh, .kw = cc->kw, .stride_h = cc->stride_h,
                            .stride_w = cc->stride_w, .pad_h = cc->pad_h, .pad_w = cc->pad_w,
                            .dilation_h = cc->dilation_h, .dilation_w = cc->dilation_w,
                            .groups = cc->groups};
    CHECK_RC(pyrt_conv_shape_init(&j.s), PYRT_OK);
    const pyrt_conv_shape *s = &j.s;
    const int64_t nx = x_size(s), ny = y_size(s, s->k);
    const int64_t nw = s->k * (s->c / s->groups) * s->kh * s->kw;
    float *x = kc_floats(nx), *weight = kc_floats(nw), *bias = kc_floats(s->k);
    float *dy = kc_floats(ny);
    kc_fill(r, x, nx, -1.0f, 1.0f);
    kc_fill(r, weight, nw, -1.0f, 1.0f);
    kc_fill(r, bias, s->k, -1.0f, 1.0f);
    kc_fill(r, dy, ny, -1.0f, 1.0f);
    j.x = x;
    j.weight = weight;
    j.bias = cc->bias ? bias : NULL;
    j.dy = dy;
    j.y = kc_floats(ny);
    j.dx = kc_floats(nx);
    j.dweight = kc_floats(nw);
    j.dbias = kc_floats(s->k);
    j.want_y = kc_doubles(ny);
    j.bound_y = kc_doubles(ny);
    j.want_dx = kc_doubles(nx);
    j.bound_dx = kc_doubles(nx);
    j.want_dw = kc_doubles(nw);
    j.bound_dw = kc_doubles(nw);
    j.want_db = kc_doubles(s->k);
    j.bound_db = kc_doubles(s->k);
    conv_reference(&j);
    const kc_out outs[] = {
        {j.y, sizeof(float) * (size_t)ny},
        {j.dx, sizeof(float) * (size_t)nx},
        {j.dweight, sizeof(float) * (size_t)nw},
        {j.dbias, sizeof(float) * (size_t)(cc->bias ? s->k : 0)},
    };
    kc_across_threads(cc->what, conv_run, conv_check, &j, outs, 4);
    free(x), free(weight), free(bias), free(dy);
    free(j.y), free(j.dx), free(j.dweight), free(j.dbias);
    free(j.want_y), free(j.bound_y), free(j.want_dx), free(j.bound_dx);
    free(j.want_dw), free(j.bound_dw), free(j.want_db), free(j.bound_db);
}

/* ---- pooling ------------------------------------------------------------------------- */

typedef struct {
    pyrt_conv_shape s;
    const float *x, *dy;
    float *y, *dx, *avg_y, *avg_dx;
    int64_t *indices;
    int64_t *want_idx;
    double *want_y, *want_dx, *want_avg_y, *want_avg_dx;
} pool_job;

static void pool_reference(pool_job *j)
{
    const pyrt_conv_shape *s = &j->s;
    const int64_t plane = s->h * s->w, npix = s->oh * s->ow;
    memset(j->want_dx, 0, sizeof(double) * (size_t)x_size(s));
    memset(j->want_avg_dx, 0, sizeof(double) * (size_t)x_size(s));
    for (int64_t p = 0; p < s->n * s->c; p++)
        for (int64_t oy = 0; oy < s->oh; oy++)
            for (int64_t ox = 0; ox < s->ow; ox++) {
                const int64_t o = p * npix + oy * s->ow + ox;
                double best = -INFINITY, sum = 0;
                int64_t at = -1;
                /* the divisor: the window's taps within the padded input, or with
                 * exclude_pad within the input (ceil_mode's last windows hang past both) */
                double div = 0;
                for (int64_t i = 0; i < s->kh; i++)
                    for (int64_t q = 0; q < s->kw; q++) {
                        const int64_t r = oy * s->stride_h - s->pad_h + i;
                        const int64_t col = ox * s->stride_w - s->pad_w + q;
                        const int64_t lo = s->exclude_pad ? 0 : -s->pad_h;
                        const int64_t left = s->exclude_pad ? 0 : -s->pad_w;
                        div += r >= lo && r < s->h - lo && col >= left && col < s->w - left;
                    }
                for (int64_t i = 0; i < s->kh; i++)
                    for (int64_t q = 0; q < s->kw; q++) {
                        /* (average pooling is checked without dilation only) */
                        const int64_t r = oy * s->stride_h - s->pad_h + i * s->dilation_h;
                        const int64_t col = ox * s->stride_w - s->pad_w + q * s->dilation_w;
                        if (r < 0 || r >= s->h || col < 0 || col >= s->w)
                            continue;
                        const double v = j->x[p * plane + r * s->w + col];
                        sum += v;
                        j->want_avg_dx[p * plane + r * s->w + col] += j->dy[o] / div;
                        if (v > best) {
                            best = v;
                            at = r * s->w + col;
                        }
                    }
                if (s->relu && best <= 0) { /* the ReLU of the maximum, and no gradient */
                    best = 0;
                    at = -1;
                }
                j->want_y[o] = best;
                j->want_idx[o] = at;
                j->want_avg_y[o] = sum / div;
                if (at >= 0) /* else a window of padding alone: no pixel */
                    j->want_dx[p * plane + at] += j->dy[o];
            }
}

/* Average pooling takes no dilation and no ReLU: with either it refuses the geometry. */
static int pool_avg(const pool_job *j)
{
    return j->s.dilation_h == 1 && j->s.dilation_w == 1 && !j->s.relu;
}

static void pool_run(void *ctx)
{
    pool_job *j = ctx;
    CHECK_RC(pyrt_max_pool2d_forward(&j->s, j->x, j->y, j->indices), PYRT_OK);
    CHECK_RC(pyrt_max_pool2d_backward(&j->s, j->dy, j->indices, j->dx), PYRT_OK);
    const int want = pool_avg(j) ? PYRT_OK : PYRT_EINVAL;
    CHECK_RC(pyrt_avg_pool2d_forward(&j->s, j->x, j->avg_y), want);
    CHECK_RC(pyrt_avg_pool2d_backward(&j->s, j->dy, j->avg_dx), want);
}

static void pool_check(void *ctx)
{
    pool_job *j = ctx;
    const pyrt_conv_shape *s = &j->s;
    const int64_t ny = y_size(s, s->c), nx = x_size(s), taps = s->kh * s->kw;
    kc_close("max_pool2d y", j->y, j->want_y, NULL, ny, 0, 0);
    for (int64_t o = 0; o < ny; o++)
        CHECK(j->indices[o] == j->want_idx[o], "max_pool2d index %lld is %lld, expected %lld",
              (long long)o, (long long)j->indices[o], (long long)j->want_idx[o]);
    kc_close("max_pool2d dx", j->dx, j->want_dx, NULL, nx, taps, 1e-6);
    if (pool_avg(j)) {
        kc_close("avg_pool2d y", j->avg_y, j->want_avg_y, NULL, ny, taps + 1, 1e-6);
        kc_close("avg_pool2d dx", j->avg_dx, j->want_avg_dx, NULL, nx, taps + 1, 1e-6);
    }
}

static void run_pool(stress_rng *r, int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh,
                     int64_t kw, int64_t stride, int64_t pad, int64_t ceil_mode,
                     int64_t exclude_pad, int64_t dilation, int64_t relu)
{
    pool_job j = {0};
    j.s = (pyrt_conv_shape){.n = n, .c = c, .h = h, .w = w, .kh = kh, .kw = kw,
                            .stride_h = stride, .stride_w = stride, .pad_h = pad, .pad_w = pad,
                            .ceil_mode = ceil_mode, .exclude_pad = exclude_pad,
                            .dilation_h = dilation, .dilation_w = dilation, .relu = relu};
    CHECK_RC(pyrt_conv_shape_init(&j.s), PYRT_OK);
    const int64_t nx = x_size(&j.s), ny = y_size(&j.s, c);
    float *x = kc_floats(nx), *dy = kc_floats(ny);
    kc_fill(r, x, nx, -1.0f, 1.0f);
    kc_fill(r, dy, ny, -1.0f, 1.0f);
    j.x = x;
    j.dy = dy;
    j.y = kc_floats(ny);
    j.avg_y = kc_floats(ny);
    j.dx = kc_floats(nx);
    j.avg_dx = kc_floats(nx);
    j.indices = malloc(sizeof(int64_t) * (size_t)ny);
    j.want_idx = malloc(sizeof(int64_t) * (size_t)ny);
    CHECK(j.indices && j.want_idx, "out of memory");
    j.want_y = kc_doubles(ny);
    j.want_avg_y = kc_doubles(ny);
    j.want_dx = kc_doubles(nx);
    j.want_avg_dx = kc_doubles(nx);
    pool_reference(&j);
    const kc_out outs[] = {
        {j.y, sizeof(float) * (size_t)ny},      {j.indices, sizeof(int64_t) * (size_t)ny},
        {j.dx, sizeof(float) * (size_t)nx},     {j.avg_y, sizeof(float) * (size_t)ny},
        {j.avg_dx, sizeof(float) * (size_t)nx},
    };
    kc_across_threads("pool2d", pool_run, pool_check, &j, outs, 5);
    free(x), free(dy), free(j.y), free(j.avg_y), free(j.dx), free(j.avg_dx);
    free(j.indices), free(j.want_idx), free(j.want_y), free(j.want_avg_y);
    free(j.want_dx), free(j.want_avg_dx);
}

static void check_errors(void)
{
    pyrt_conv_shape s = {.n = 1, .c = 1, .h = 2, .w = 2, .k = 1, .kh = 3, .kw = 3,
                         .stride_h = 1, .stride_w = 1};
    CHECK_RC(pyrt_conv_shape_init(&s), PYRT_EINVAL);
    s.pad_h = s.pad_w = 1;
    s.stride_h = 0;
    CHECK_RC(pyrt_conv_shape_init(&s), PYRT_EINVAL);
    /* a plane without rows: with padding the window "fits", but holds no value to pool */
    pyrt_conv_shape p = {.n = 1, .c = 1, .h = 0, .w = 4, .kh = 2, .kw = 2,
                         .stride_h = 1, .stride_w = 2, .pad_h = 1, .pad_w = 0};
    float y[4];
    int64_t idx[4];
    CHECK_RC(pyrt_max_pool2d_forward(&p, y, y, idx), PYRT_EINVAL);
    CHECK_RC(pyrt_avg_pool2d_forward(&p, y, y), PYRT_EINVAL);
    /* pooling has no groups */
    p.h = 4;
    p.groups = 2;
    CHECK_RC(pyrt_max_pool2d_forward(&p, y, y, idx), PYRT_EINVAL);
    /* channels that do not split into the groups, and a dilated window too wide */
    pyrt_conv_shape g = {.n = 1, .c = 3, .h = 4, .w = 4, .k = 2, .kh = 3, .kw = 3,
                         .stride_h = 1, .stride_w = 1, .groups = 2};
    float x[48], wt[18];
    CHECK_RC(pyrt_conv2d_forward(&g, x, wt, NULL, x), PYRT_EINVAL);
    g.groups = 1;
    g.dilation_h = 2;
    CHECK_RC(pyrt_conv_shape_init(&g), PYRT_EINVAL);
    g.dilation_h = -1;
    CHECK_RC(pyrt_conv_shape_init(&g), PYRT_EINVAL);
    /* the ReLU is max pooling's alone, and takes 0 or 1 */
    g.dilation_h = 1;
    g.relu = 1;
    CHECK_RC(pyrt_conv2d_forward(&g, x, wt, NULL, x), PYRT_EINVAL);
    p.groups = 1;
    p.relu = 1;
    CHECK_RC(pyrt_avg_pool2d_forward(&p, x, y), PYRT_EINVAL);
    p.relu = 2;
    CHECK_RC(pyrt_max_pool2d_forward(&p, x, y, idx), PYRT_EINVAL);
}

int main(void)
{
    double t0 = stress_now();
    stress_begin("kernels_conv");
    stress_rng rng = stress_rng_make(stress_seed(), 102);
    check_errors();
    for (size_t i = 0; i < sizeof CONVS / sizeof CONVS[0]; i++)
        run_conv(&rng, &CONVS[i]);
    run_pool(&rng, 2, 3, 8, 10, 2, 2, 2, 0, 0, 0, 1, 0);  /* windows tile the input */
    run_pool(&rng, 1, 4, 9, 7, 3, 3, 2, 1, 0, 0, 1, 0);   /* overlapping, into the padding */
    run_pool(&rng, 3, 2, 6, 6, 3, 3, 1, 1, 0, 0, 1, 0);   /* stride 1: every value in 9 windows */
    run_pool(&rng, 2, 5, 33, 31, 2, 3, 2, 1, 0, 0, 1, 0); /* uneven window */
    run_pool(&rng, 2, 3, 7, 9, 2, 2, 2, 0, 1, 0, 1, 0);   /* ceil_mode: a last half window */
    run_pool(&rng, 1, 4, 10, 8, 3, 3, 2, 1, 1, 1, 1, 0);  /* ceil_mode, padding left out */
    run_pool(&rng, 3, 2, 6, 6, 3, 3, 1, 1, 0, 1, 1, 0);   /* padding left out of the divisor */
    run_pool(&rng, 2, 3, 11, 10, 3, 3, 1, 1, 0, 0, 2, 0); /* max, dilation 2, into the padding */
    run_pool(&rng, 1, 2, 12, 9, 2, 2, 2, 0, 1, 0, 3, 0);  /* max, dilation 3, ceil_mode */
    run_pool(&rng, 2, 2, 1, 5, 2, 2, 1, 1, 0, 0, 2, 0);   /* max, windows of padding alone */
    /* with the ReLU: 2x2 windows (the vector path, a row of fewer than 8 outputs among them),
     * overlapping windows into the padding, ceil_mode, and windows of padding alone */
    run_pool(&rng, 2, 3, 8, 10, 2, 2, 2, 0, 0, 0, 1, 1);
    run_pool(&rng, 2, 3, 28, 28, 2, 2, 2, 0, 0, 0, 1, 1);
    run_pool(&rng, 1, 4, 9, 7, 3, 3, 2, 1, 0, 0, 1, 1);
    run_pool(&rng, 2, 3, 7, 9, 2, 2, 2, 0, 1, 0, 1, 1);
    run_pool(&rng, 2, 2, 1, 5, 2, 2, 1, 1, 0, 0, 2, 1);
    printf("kernels_conv: %zu convolutions, 15 poolings\n", sizeof CONVS / sizeof CONVS[0]);
    return stress_end("kernels_conv", t0);
}
