/*
 * kernels_train.c - the optimizer updates and the fused chain of linear layers.
 *
 * SGD (plain, with momentum, dampening, Nesterov and weight decay) and Adam take two steps
 * each, compared with PyTorch's formulas in double. The linear chain must be bitwise what its
 * steps give when called one by one (pyrt_sgemm and pyrt_bias_act forward; pyrt_unary_backward,
 * two GEMMs and pyrt_bias_grad backward, as pyrt.h promises), with gradients that are not
 * wanted left unwritten. Batch normalisation (forward in training, with its running
 * statistics, and in evaluation; its three gradients) is compared with its formulas in double,
 * on values near zero and far from it. Layer normalisation (statistics, output, the three
 * gradients) is compared with its formulas in double, with bounds for float32 rounding, on
 * rows of one value to rows split into leaves.
 * Every run is repeated at 2 and 4 threads and must match bit for bit.
 */
#include <stddef.h>
#include <stdint.h>

#include "kernels_check.h"

/* ---- optimizers ----------------------------------------------------------------------- */

typedef struct {
    int64_t n;
    const float *param0, *grad;
    float *param, *buf, *m, *v;
    double *want_param, *want_buf, *want_m, *want_v;
    double lr, momentum, dampening, wd, beta1, beta2, eps;
    int nesterov, adam;
} optim_job;

static void optim_run(void *ctx)
{
    optim_job *j = ctx;
    memcpy(j->param, j->param0, sizeof(float) * (size_t)j->n);
    if (j->adam) {
        memset(j->m, 0, sizeof(float) * (size_t)j->n);
        memset(j->v, 0, sizeof(float) * (size_t)j->n);
        for (int64_t step = 1; step <= 2; step++)
            CHECK_RC(pyrt_adam_step(j->param, j->grad, j->m, j->v, j->n, j->lr, j->beta1,
                                    j->beta2, j->eps, j->wd, step),
                     PYRT_OK);
        return;
    }
    for (int step = 0; step < 2; step++)
        CHECK_RC(pyrt_sgd_step(j->param, j->grad, j->momentum != 0 ? j->buf : NULL, j->n, j->lr,
                               j->momentum, j->dampening, j->wd, j->nesterov, step == 0),
                 PYRT_OK);
}

static void optim_reference(optim_job *j)
{
    for (int64_t i = 0; i < j->n; i++) {
        double p = j->param0[i], buf = 0, m = 0, v = 0;
        for (int step = 1; step <= 2; step++) {
            double g = j->grad[i] + j->wd * p;
            if (j->adam) {
                m = m + (1 - j->beta1) * (g - m);
                v = j->beta2 * v + (1 - j->beta2) * g * g;
                const double bc1 = 1 - pow(j->beta1, step), bc2 = 1 - pow(j->beta2, step);
                p -= j->lr / bc1 * m / (sqrt(v) / sqrt(bc2) + j->eps);
            } else {
                if (j->momentum != 0) {
                    buf = step == 1 ? g : j->momentum * buf + (1 - j->dampening) * g;
                    g = j->nesterov ? g + j->momentum * buf : buf;
                }
                p -= j->lr * g;
            }
        }
        j->want_param[i] = p;
        j->want_buf[i] = buf;
        j->want_m[i] = m;
        j->want_v[i] = v;
    }
}

static void optim_check(void *ctx)
{
    optim_job *j = ctx;
    kc_close(j->adam ? "adam param" : "sgd param", j->param, j->want_param, NULL, j->n, 16, 1e-7);
    if (j->adam) {
        kc_close("adam m", j->m, j->want_m, NULL, j->n, 16, 1e-9);
        kc_close("adam v", j->v, j->want_v, NULL, j->n, 16, 1e-12);
    } else if (j->momentum != 0) {
        kc_close("sgd momentum buffer", j->buf, j->want_buf, NULL, j->n, 16, 1e-7);
    }
}

static void check_optim(stress_rng *r, int64_t n, int adam, double momentum, double dampening,
                        double wd, int nesterov)
{
    optim_job j = {.n = n, .adam = adam, .lr = adam ? 1e-3 : 0.05, .momentum = momentum,
                   .dampening = dampening, .wd = wd, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                   .nesterov = nesterov};
    float *param0 = kc_floats(n), *grad = kc_floats(n);
    kc_fill(r, param0, n, -1.0f, 1.0f);
    kc_fill(r, grad, n, -1.0f, 1.0f);
    j.param0 = param0, j.grad = grad;
    j.param = kc_floats(n), j.buf = kc_floats(n), j.m = kc_floats(n), j.v = kc_floats(n);
    j.want_param = kc_doubles(n), j.want_buf = kc_doubles(n);
    j.want_m = kc_doubles(n), j.want_v = kc_doubles(n);
    optim_reference(&j);
    const size_t bytes = sizeof(float) * (size_t)n;
    const kc_out outs[] = {
        {j.param, bytes},
        {j.buf, momentum != 0 && !adam ? bytes : 0},
        {j.m, adam ? bytes : 0},
        {j.v, adam ? bytes : 0},
    };
    kc_across_threads(adam ? "adam" : "sgd", optim_run, optim_check, &j, outs, 4);
    free(param0), free(grad), free(j.param), free(j.buf), free(j.m), free(j.v);
    free(j.want_param), free(j.want_buf), free(j.want_m), free(j.want_v);
}

/* ---- the linear chain --------------------------------------------------------------- */

#define CHAIN_MAX 4

typedef struct {
    int64_t layers, batch, dims[CHAIN_MAX + 1];
    int acts[CHAIN_MAX], needs[CHAIN_MAX];
    int with_dx; /* dx is wanted (else NULL is passed, and the gradient stops early) */
    const float *weights[CHAIN_MAX], *biases[CHAIN_MAX];
    const float *x, *dy;
    float *out, *grads, *dx;
    int64_t out_floats, grad_floats;
    float *want_out, *want_grads, *want_dx;
} chain_job;

static void chain_run(void *ctx)
{
    chain_job *j = ctx;
    CHECK_RC(pyrt_linear_chain_forward(j->layers, j->dims, j->batch, j->weights, j->biases,
                                       j->acts, j->x, j->out),
             PYRT_OK);
    CHECK_RC(pyrt_linear_chain_backward(j->layers, j->dims, j->batch, j->weights, j->biases,
                                        j->acts, j->needs, j->x, j->out, j->dy, j->grads,
                                        j->with_dx ? j->dx : NULL),
             PYRT_OK);
}

/* The chain's steps one call at a time, each output in its own block. */
static void chain_reference(chain_job *j)
{
    int64_t out_at[CHAIN_MAX + 1] = {0}, grad_at[CHAIN_MAX + 1] = {0};
    for (int64_t l = 0; l < j->layers; l++) {
        out_at[l + 1] = out_at[l] + j->batch * j->dims[l + 1];
        grad_at[l + 1] = grad_at[l] + j->dims[l + 1] * j->dims[l]
                         + (j->biases[l] ? j->dims[l + 1] : 0);
    }
    for (int64_t l = 0; l < j->layers; l++) {
        const int64_t k = j->dims[l], n = j->dims[l + 1];
        const float *in = l == 0 ? j->x : j->want_out + out_at[l - 1];
        float *y = j->want_out + out_at[l];
        CHECK_RC(pyrt_sgemm(0, 1, j->batch, n, k, 1.0f, in, k, j->weights[l], k, 0.0f, y, n),
                 PYRT_OK);
        CHECK_RC(pyrt_bias_act(y, j->biases[l], y, j->batch, n, j->acts[l]), PYRT_OK);
    }
    const float *g = j->dy;
    float *prev = NULL;
    for (int64_t l = j->layers - 1; l >= 0; l--) {
        const int64_t k = j->dims[l], n = j->dims[l + 1];
        float *gp = kc_floats(j->batch * n);
        if (j->acts[l] != PYRT_IDENTITY)
            CHECK_RC(pyrt_unary_backward(j->acts[l], g, j->want_out + out_at[l], gp,
                                         j->batch * n),
                     PYRT_OK);
        else
            memcpy(gp, g, sizeof(float) * (size_t)(j->batch * n));
        const float *in = l == 0 ? j->x : j->want_out + out_at[l - 1];
        float *dw = j->want_grads + grad_at[l];
        if (j->needs[l] & 1)
            CHECK_RC(pyrt_sgemm(1, 0, n, k, j->batch, 1.0f, gp, n, in, k, 0.0f, dw, k), PYRT_OK);
        if ((j->needs[l] & 2) && j->biases[l])
            CHECK_RC(pyrt_bias_grad(gp, dw + n * k, j->batch, n), PYRT_OK);
        float *below = l > 0 ? kc_floats(j->batch * k) : j->want_dx;
        CHECK_RC(pyrt_sgemm(0, 0, j->batch, k, n, 1.0f, gp, n, j->weights[l], k, 0.0f, below, k),
                 PYRT_OK);
        free(gp);
        free(prev);
        prev = l > 0 ? below : NULL;
        g = below;
    }
}

static void chain_check(void *ctx)
{
    chain_job *j = ctx;
    kc_same("linear_chain_forward against its steps", 1, j->out, j->want_out,
            sizeof(float) * (size_t)j->out_floats);
    kc_same("linear_chain_backward gradients against its steps", 1, j->grads, j->want_grads,
            sizeof(float) * (size_t)j->grad_floats);
    if (j->with_dx)
        kc_same("linear_chain_backward dx against its steps", 1, j->dx, j->want_dx,
                sizeof(float) * (size_t)(j->batch * j->dims[0]));
}

static void check_chain(stress_rng *r, int64_t layers, const int64_t *dims, int64_t batch,
                        const int *acts, const int *needs, const int *has_bias, int with_dx)
{
    chain_job j = {.layers = layers, .batch = batch, .with_dx = with_dx};
    j.out_floats = j.grad_floats = 0;
    for (int64_t l = 0; l <= layers; l++)
        j.dims[l] = dims[l];
    for (int64_t l = 0; l < layers; l++) {
        j.acts[l] = acts[l];
        j.needs[l] = needs[l];
        float *w = kc_floats(dims[l + 1] * dims[l]);
        kc_fill(r, w, dims[l + 1] * dims[l], -0.5f, 0.5f);
        j.weights[l] = w;
        float *b = NULL;
        if (has_bias[l]) {
            b = kc_floats(dims[l + 1]);
            kc_fill(r, b, dims[l + 1], -0.5f, 0.5f);
        }
        j.biases[l] = b;
        j.out_floats += batch * dims[l + 1];
        j.grad_floats += dims[l + 1] * dims[l] + (has_bias[l] ? dims[l + 1] : 0);
    }
    float *x = kc_floats(batch * dims[0]), *dy = kc_floats(batch * dims[layers]);
    kc_fill(r, x, batch * dims[0], -1.0f, 1.0f);
    kc_fill(r, dy, batch * dims[layers], -1.0f, 1.0f);
    j.x = x, j.dy = dy;
    j.out = kc_floats(j.out_floats), j.want_out = kc_floats(j.out_floats);
    j.grads = kc_floats(j.grad_floats), j.want_grads = kc_floats(j.grad_floats);
    j.dx = kc_floats(batch * dims[0]), j.want_dx = kc_floats(batch * dims[0]);
    stress_set_threads(1);
    const kc_out outs[] = {
        {j.out, sizeof(float) * (size_t)j.out_floats},
        {j.grads, sizeof(float) * (size_t)j.grad_floats},
        {j.dx, sizeof(float) * (size_t)(with_dx ? batch * dims[0] : 0)},
    };
    /* the run fills unwanted gradients with all-ones bytes first: they must stay so, as
     * the reference's NaN do (the same bits) */
    memset(j.want_grads, 0xff, sizeof(float) * (size_t)j.grad_floats);
    chain_reference(&j);
    kc_across_threads("linear_chain", chain_run, chain_check, &j, outs, 3);
    for (int64_t l = 0; l < layers; l++) {
        free((void *)j.weights[l]);
        free((void *)j.biases[l]);
    }
    free(x), free(dy), free(j.out), free(j.want_out), free(j.grads), free(j.want_grads);
    free(j.dx), free(j.want_dx);
}

/* ---- batch normalisation -------------------------------------------------------------- */

typedef struct {
    int64_t n, c, m;
    int training;
    const float *x, *dy, *weight, *bias, *running0;
    float *running_mean, *running_var, *y, *mean, *invstd, *dx, *dweight, *dbias;
    double *want_y, *want_dx, *want_c; /* want_c: [7][c] per-channel values, see bn_reference */
} bn_job;

static void bn_run(void *ctx)
{
    bn_job *j = ctx;
    const int64_t c = j->c;
    memcpy(j->running_mean, j->running0, sizeof(float) * (size_t)c);
    memcpy(j->running_var, j->running0 + c, sizeof(float) * (size_t)c);
    CHECK_RC(pyrt_batch_norm_forward(j->n, c, j->m, j->x, j->weight, j->bias, j->running_mean,
                                     j->running_var, j->training, 0.25, 1e-3, j->y, j->mean,
                                     j->invstd),
             PYRT_OK);
    CHECK_RC(pyrt_batch_norm_backward(j->n, c, j->m, j->x, j->dy, j->weight, j->mean, j->invstd,
                                      j->training, j->dx, j->dweight, j->dbias),
             PYRT_OK);
}

/* The formulas in double: want_c holds mean, invstd, running mean, running var, dweight,
 * dbias and the sum of |dy (x - mean)| (for the tolerance), c values each. */
static void bn_reference(bn_job *j)
{
    const int64_t n = j->n, c = j->c, m = j->m;
    const double count = (double)(n * m);
    double *w = j->want_c;
    for (int64_t ch = 0; ch < c; ch++) {
        double s = 0, sq = 0, sdy = 0, sdyx = 0, abs_dyx = 0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t q = 0; q < m; q++)
                s += j->x[(i * c + ch) * m + q];
        const double r_mean = j->running0[ch], r_var = j->running0[c + ch];
        double mean = s / count;
        for (int64_t i = 0; i < n; i++)
            for (int64_t q = 0; q < m; q++)
                sq += (j->x[(i * c + ch) * m + q] - mean) * (j->x[(i * c + ch) * m + q] - mean);
        double var = sq / count;
        w[2 * c + ch] = j->training ? 0.75 * r_mean + 0.25 * mean : r_mean;
        w[3 * c + ch] = j->training ? 0.75 * r_var + 0.25 * var * count / (count - 1) : r_var;
        if (!j->training)
            mean = r_mean, var = r_var;
        const double invstd = 1.0 / sqrt(var + 1e-3), g = j->weight[ch], b = j->bias[ch];
        for (int64_t i = 0; i < n; i++)
            for (int64_t q = 0; q < m; q++) {
                const int64_t e = (i * c + ch) * m + q;
                sdy += j->dy[e];
                sdyx += j->dy[e] * (j->x[e] - mean);
                abs_dyx += fabs(j->dy[e] * (j->x[e] - mean));
                j->want_y[e] = (j->x[e] - mean) * invstd * g + b;
            }
        for (int64_t i = 0; i < n; i++)
            for (int64_t q = 0; q < m; q++) {
                const int64_t e = (i * c + ch) * m + q;
                const double xhat = (j->x[e] - mean) * invstd;
                j->want_dx[e] = j->training ? g * invstd * (j->dy[e] - sdy / count
                                                            - xhat * sdyx * invstd / count)
                                            : g * invstd * j->dy[e];
            }
        w[ch] = mean;
        w[c + ch] = invstd;
        w[4 * c + ch] = sdyx * invstd;
        w[5 * c + ch] = sdy;
        w[6 * c + ch] = abs_dyx * invstd;
    }
}

static void bn_check(void *ctx)
{
    bn_job *j = ctx;
    const int64_t c = j->c, count = j->n * j->m, size = j->n * c * j->m;
    bn_reference(j);
    const double *w = j->want_c;
    double scale = 0; /* the largest |x|: the mean's float32 rounding moves every centred value */
    for (int64_t e = 0; e < size; e++)
        scale = fabs(j->x[e]) > scale ? fabs(j->x[e]) : scale;
    kc_close("batch_norm mean", j->mean, w, NULL, c, count, 1e-6 * scale);
    kc_close("batch_norm invstd", j->invstd, w + c, NULL, c, count, 0);
    kc_close("batch_norm running mean", j->running_mean, w + 2 * c, NULL, c, count, 1e-6 * scale);
    kc_close("batch_norm running var", j->running_var, w + 3 * c, NULL, c, count, 1e-6);
    kc_close("batch_norm y", j->y, j->want_y, NULL, size, 8, 1e-4 * (1 + scale));
    kc_close("batch_norm dx", j->dx, j->want_dx, NULL, size, 8, 1e-4 * (1 + scale));
    for (int64_t ch = 0; ch < c; ch++) {
        const double tol = 1e-5 * (w[6 * c + ch] + sqrt((double)count)) + 1e-6 * scale * count;
        CHECK(fabs(j->dweight[ch] - w[4 * c + ch]) <= tol,
              "batch_norm dweight %lld is %.9g, expected %.9g", (long long)ch, j->dweight[ch],
              w[4 * c + ch]);
    }
    kc_close("batch_norm dbias", j->dbias, w + 5 * c, NULL, c, count, 1e-5 * count);
}

static void check_batch_norm(stress_rng *r, int64_t n, int64_t c, int64_t m, float offset,
                             int training)
{
    bn_job j = {.n = n, .c = c, .m = m, .training = training};
    const int64_t size = n * c * m;
    float *x = kc_floats(size), *dy = kc_floats(size), *weight = kc_floats(c);
    float *bias = kc_floats(c), *running0 = kc_floats(2 * c);
    kc_fill(r, x, size, offset - 1.0f, offset + 1.0f);
    kc_fill(r, dy, size, -1.0f, 1.0f);
    kc_fill(r, weight, c, -2.0f, 2.0f);
    kc_fill(r, bias, c, -2.0f, 2.0f);
    kc_fill(r, running0, c, offset - 0.5f, offset + 0.5f); /* the means, then the variances */
    kc_fill(r, running0 + c, c, 0.2f, 1.0f);
    j.x = x, j.dy = dy, j.weight = weight, j.bias = bias, j.running0 = running0;
    j.running_mean = kc_floats(c), j.running_var = kc_floats(c);
    j.mean = kc_floats(c), j.invstd = kc_floats(c), j.dweight = kc_floats(c);
    j.dbias = kc_floats(c), j.y = kc_floats(size), j.dx = kc_floats(size);
    j.want_y = kc_doubles(size), j.want_dx = kc_doubles(size), j.want_c = kc_doubles(7 * c);
    const size_t cb = sizeof(float) * (size_t)c, sb = sizeof(float) * (size_t)size;
    const kc_out outs[] = {{j.y, sb}, {j.dx, sb}, {j.mean, cb}, {j.invstd, cb},
                           {j.running_mean, cb}, {j.running_var, cb}, {j.dweight, cb},
                           {j.dbias, cb}};
    kc_across_threads("batch_norm", bn_run, bn_check, &j, outs, 8);
    free(x), free(dy), free(weight), free(bias), free(running0), free(j.running_mean);
    free(j.running_var), free(j.mean), free(j.invstd), free(j.dweight), free(j.dbias);
    free(j.y), free(j.dx), free(j.want_y), free(j.want_dx), free(j.want_c);
}

static void check_batch_norm_errors(void)
{
    float v[4] = {0};
    /* one value per channel cannot be normalised by its own statistics */
    CHECK_RC(pyrt_batch_norm_forward(1, 2, 1, v, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5, v, v, v),
             PYRT_EINVAL);
    /* evaluation needs running statistics; eps may not be negative; nor may sizes */
    CHECK_RC(pyrt_batch_norm_forward(2, 1, 1, v, NULL, NULL, NULL, NULL, 0, 0.1, 1e-5, v, v, v),
             PYRT_EINVAL);
    CHECK_RC(pyrt_batch_norm_forward(2, 1, 1, v, NULL, NULL, NULL, NULL, 1, 0.1, -1.0, v, v, v),
             PYRT_EINVAL);
    CHECK_RC(pyrt_batch_norm_backward(2, 1, -1, v, v, NULL, v, v, 1, v, v, v), PYRT_EINVAL);
}

/* ---- layer normalisation -------------------------------------------------------------- */

typedef struct {
    int64_t rows, m;
    int with_dx;
    const float *x, *dy, *weight, *bias;
    float *y, *mean, *invstd, *dx, *dweight, *dbias;
    /* the formulas in double: y and dx with their bounds (see ln_reference), per row
     * [3][rows] mean, invstd and the mean's scale, per column [4][m] dweight, dbias and
     * their bounds */
    double *want_y, *want_dx, *bound_y, *bound_dx, *want_r, *want_c;
} ln_job;

static void ln_run(void *ctx)
{
    ln_job *j = ctx;
    CHECK_RC(pyrt_layer_norm_forward(j->rows, j->m, j->x, j->weight, j->bias, 1e-3, j->y,
                                     j->mean, j->invstd),
             PYRT_OK);
    CHECK_RC(pyrt_layer_norm_backward(j->rows, j->m, j->x, j->dy, j->weight, j->mean, j->invstd,
                                      j->with_dx ? j->dx : NULL, j->dweight, j->dbias),
             PYRT_OK);
}

/* Row by row in double, with the bounds kc_close scales by a few float32 roundings: the
 * kernel's mean, summed about the row's first value in float blocks, is rounded to float32,
 * off by up to half an ulp of mscale = |mean| + 32 mean|x - x[0]|; that moves every centred
 * value, and so y, dx and dweight, by up to as much. */
static void ln_reference(ln_job *j)
{
    const int64_t rows = j->rows, m = j->m;
    double *mean_r = j->want_r, *inv_r = mean_r + rows, *mscale_r = inv_r + rows;
    double *dw = j->want_c, *db = dw + m, *dw_bound = db + m, *db_bound = dw_bound + m;
    for (int64_t q = 0; q < 4 * m; q++)
        j->want_c[q] = 0.0;
    for (int64_t i = 0; i < rows; i++) {
        const float *x = j->x + i * m, *dy = j->dy + i * m;
        double s = 0, sq = 0, abs_dev = 0, a = 0, b = 0, abs_g = 0, abs_gx = 0;
        for (int64_t q = 0; q < m; q++)
            s += x[q];
        const double mean = s / (double)m;
        for (int64_t q = 0; q < m; q++) {
            sq += (x[q] - mean) * (x[q] - mean);
            abs_dev += fabs(x[q] - x[0]);
        }
        const double inv = 1.0 / sqrt(sq / (double)m + 1e-3);
        const double mscale = fabs(mean) + 32.0 * abs_dev / (double)m;
        for (int64_t q = 0; q < m; q++) {
            const double w = j->weight ? j->weight[q] : 1.0, bias = j->bias ? j->bias[q] : 0.0;
            const double xhat = (x[q] - mean) * inv, g = dy[q] * w;
            j->want_y[i * m + q] = xhat * w + bias;
            j->bound_y[i * m + q] = (fabs(x[q] - mean) + mscale) * inv * fabs(w) + fabs(bias);
            a += g;
            b += g * (x[q] - mean);
            abs_g += fabs(g);
            abs_gx += fabs(g) * (fabs(x[q] - mean) + mscale);
            dw[q] += dy[q] * xhat;
            db[q] += dy[q];
            dw_bound[q] += fabs(dy[q]) * (fabs(x[q] - mean) + mscale) * inv;
            db_bound[q] += fabs(dy[q]);
        }
        for (int64_t q = 0; q < m; q++) {
            const double w = j->weight ? j->weight[q] : 1.0, g = dy[q] * w;
            const double centred = x[q] - mean;
            j->want_dx[i * m + q] = inv * g - inv * a / (double)m
                                    - centred * inv * inv * inv * b / (double)m;
            j->bound_dx[i * m + q] = inv * fabs(g) + inv * abs_g / (double)m
                                     + (fabs(centred) + mscale) * inv * inv * inv * abs_gx
                                           / (double)m;
        }
        mean_r[i] = mean;
        inv_r[i] = inv;
        mscale_r[i] = mscale;
    }
}

static void ln_check(void *ctx)
{
    ln_job *j = ctx;
    const int64_t rows = j->rows, m = j->m, size = rows * m;
    ln_reference(j);
    const double *mean_r = j->want_r, *inv_r = mean_r + rows, *mscale_r = inv_r + rows;
    kc_close("layer_norm mean", j->mean, mean_r, mscale_r, rows, 0, 0);
    kc_close("layer_norm invstd", j->invstd, inv_r, NULL, rows, 16, 0);
    kc_close("layer_norm y", j->y, j->want_y, j->bound_y, size, 8, 0);
    if (j->with_dx)
        kc_close("layer_norm dx", j->dx, j->want_dx, j->bound_dx, size, 16, 0);
    const double *c = j->want_c;
    kc_close("layer_norm dweight", j->dweight, c, c + 2 * m, m, 16, 0);
    kc_close("layer_norm dbias", j->dbias, c + m, c + 3 * m, m, 16, 0);
}

static void check_layer_norm(stress_rng *r, int64_t rows, int64_t m, float offset, int affine,
                             int with_dx)
{
    ln_job j = {.rows = rows, .m = m, .with_dx = with_dx};
    const int64_t size = rows * m;
    float *x = kc_floats(size), *dy = kc_floats(size);
    float *weight = affine ? kc_floats(m) : NULL, *bias = affine ? kc_floats(m) : NULL;
    kc_fill(r, x, size, offset - 1.0f, offset + 1.0f);
    kc_fill(r, dy, size, -1.0f, 1.0f);
    if (affine) {
        kc_fill(r, weight, m, -2.0f, 2.0f);
        kc_fill(r, bias, m, -2.0f, 2.0f);
    }
    j.x = x, j.dy = dy, j.weight = weight, j.bias = bias;
    j.y = kc_floats(size), j.dx = kc_floats(size), j.mean = kc_floats(rows);
    j.invstd = kc_floats(rows), j.dweight = kc_floats(m), j.dbias = kc_floats(m);
    j.want_y = kc_doubles(size), j.want_dx = kc_doubles(size), j.bound_y = kc_doubles(size);
    j.bound_dx = kc_doubles(size), j.want_r = kc_doubles(3 * rows), j.want_c = kc_doubles(4 * m);
    const size_t sb = sizeof(float) * (size_t)size, rb = sizeof(float) * (size_t)rows;
    const size_t mb = sizeof(float) * (size_t)m;
    const kc_out outs[] = {{j.y, sb}, {j.dx, with_dx ? sb : 0}, {j.mean, rb}, {j.invstd, rb},
                           {j.dweight, mb}, {j.dbias, mb}};
    kc_across_threads("layer_norm", ln_run, ln_check, &j, outs, 6);
    free(x), free(dy), free(weight), free(bias), free(j.y), free(j.dx), free(j.mean);
    free(j.invstd), free(j.dweight), free(j.dbias), free(j.want_y), free(j.want_dx);
    free(j.bound_y), free(j.bound_dx), free(j.want_r), free(j.want_c);
}

static void check_layer_norm_edges(void)
{
    float v[8] = {0}, out[8], mean[2], invstd[2], dw[4], db[4];
    /* rows of no values: NaN statistics; no rows: zero parameter gradients */
    CHECK_RC(pyrt_layer_norm_forward(2, 0, NULL, NULL, NULL, 1e-5, NULL, mean, invstd), PYRT_OK);
    CHECK(isnan(mean[0]) && isnan(mean[1]) && isnan(invstd[1]), "layer_norm: m == 0 not NaN");
    kc_fill_value(dw, 4, 1.0f);
    kc_fill_value(db, 4, 1.0f);
    CHECK_RC(pyrt_layer_norm_backward(0, 4, NULL, NULL, NULL, NULL, NULL, NULL, dw, db), PYRT_OK);
    CHECK(dw[3] == 0.0f && db[0] == 0.0f, "layer_norm: no rows, gradients not zero");
    /* a constant row: variance 0, output 0 (times the weight) plus the bias */
    kc_fill_value(v, 8, 3.0f);
    CHECK_RC(pyrt_layer_norm_forward(1, 8, v, NULL, NULL, 1e-5, out, mean, invstd), PYRT_OK);
    CHECK(mean[0] == 3.0f && out[5] == 0.0f, "layer_norm: a constant row");
    /* negative sizes, sizes whose product overflows, missing buffers */
    CHECK_RC(pyrt_layer_norm_forward(-1, 4, v, NULL, NULL, 1e-5, out, mean, invstd),
             PYRT_EINVAL);
    CHECK_RC(pyrt_layer_norm_forward(INT64_MAX / 2, 4, v, NULL, NULL, 1e-5, out, mean, invstd),
             PYRT_EINVAL);
    CHECK_RC(pyrt_layer_norm_forward(2, 4, NULL, NULL, NULL, 1e-5, out, mean, invstd),
             PYRT_EINVAL);
    CHECK_RC(pyrt_layer_norm_forward(2, 4, v, NULL, NULL, 1e-5, out, NULL, invstd),
             PYRT_EINVAL);
    CHECK_RC(pyrt_layer_norm_backward(2, -4, v, v, NULL, mean, invstd, out, dw, db),
             PYRT_EINVAL);
    CHECK_RC(pyrt_layer_norm_backward(2, 4, v, NULL, NULL, mean, invstd, out, dw, db),
             PYRT_EINVAL);
}

int main(void)
{
    double t0 = stress_now();
    stress_begin("kernels_train");
    stress_rng rng = stress_rng_make(stress_seed(), 104);
    const int64_t n = stress_scaled(100003, 20003);

    check_optim(&rng, 13, 0, 0.0, 0.0, 0.0, 0);
    check_optim(&rng, n, 0, 0.0, 0.0, 0.0, 0);
    check_optim(&rng, n, 0, 0.9, 0.1, 1e-2, 0);
    check_optim(&rng, n, 0, 0.9, 0.0, 0.0, 1);
    check_optim(&rng, 13, 1, 0, 0, 0.0, 0);
    check_optim(&rng, n, 1, 0, 0, 1e-2, 0);

    const int64_t mlp[] = {784, 128, 64, 10};
    const int mlp_acts[] = {PYRT_RELU, PYRT_TANH, PYRT_IDENTITY};
    const int all[] = {3, 3, 3}, bias3[] = {1, 1, 1};
    check_chain(&rng, 3, mlp, 64, mlp_acts, all, bias3, 1);
    const int64_t tiny[] = {2, 8, 1};
    const int tiny_acts[] = {PYRT_SIGMOID, PYRT_SIGMOID}, tiny_bias[] = {1, 0};
    check_chain(&rng, 2, tiny, 4, tiny_acts, all, tiny_bias, 1);
    /* the first layer frozen: its gradients are not written, and with no dx wanted the
     * gradient stops at the second layer */
    const int64_t odd[] = {37, 50, 23};
    const int odd_acts[] = {PYRT_TANH, PYRT_RELU}, frozen[] = {0, 3}, odd_bias[] = {1, 1};
    check_chain(&rng, 2, odd, 300, odd_acts, frozen, odd_bias, 1);
    check_chain(&rng, 2, odd, 300, odd_acts, frozen, odd_bias, 0);

    check_batch_norm(&rng, 64, 8, 784, 0.0f, 1); /* a CNN layer: leaves of several images */
    check_batch_norm(&rng, 64, 8, 784, 0.0f, 0); /* the same in evaluation */
    check_batch_norm(&rng, 3, 5, 7, 1000.0f, 1); /* odd planes, far from zero */
    check_batch_norm(&rng, 300, 13, 1, -5.0f, 1); /* rows of features */
    check_batch_norm(&rng, 7, 600, 1, 300.0f, 1); /* rows: four at once, then three */
    check_batch_norm(&rng, 64, 40, 1, 0.5f, 1);   /* blocks of channels: 16, 16 and 8 */
    check_batch_norm(&rng, 64, 40, 1, 0.5f, 0);
    check_batch_norm(&rng, 5, 20, 9, 0.0f, 1);
    check_batch_norm(&rng, 2, 3, 40000, 2.0f, 1); /* planes larger than a leaf */
    check_batch_norm_errors();

    check_layer_norm(&rng, 64, 768, 0.0f, 1, 1);    /* a transformer's rows: groups of 21 */
    check_layer_norm(&rng, 7, 13, 300.0f, 1, 1);    /* partial blocks, far from zero */
    check_layer_norm(&rng, 1, 1, 0.0f, 1, 1);
    check_layer_norm(&rng, 300, 64, -5.0f, 0, 1);   /* no weight or bias: one block a row */
    check_layer_norm(&rng, 2000, 37, 0.5f, 1, 1);   /* 64 groups, sets of four and a tail */
    check_layer_norm(&rng, 2000, 37, 0.5f, 1, 0);   /* parameter gradients only */
    check_layer_norm(&rng, 3, 70001, 2.0f, 1, 1);   /* rows split into leaves */
    check_layer_norm(&rng, 0, 5, 0.0f, 1, 1);
    check_layer_norm_edges();
    return stress_end("kernels_train", t0);
}
