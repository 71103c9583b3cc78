/*
 * kernels_train.c - the optimizer updates and the fused chain of linear layers.
 *
 * SGD (plain, with momentum, dampening, Nesterov and weight decay) and Adam take two steps
 * each, compared with PyTorch's formulas in double. The linear chain must be bitwise what its
 * steps give when called one by one (pyrt_sgemm and pyrt_bias_act forward; pyrt_unary_backward,
 * two GEMMs and pyrt_bias_grad backward, as pyrt.h promises), with gradients that are not
 * wanted left unwritten. The batch normalisation passes (statistics, forward, gradient sums,
 * input gradient) are compared with the same formulas in double, on values far from zero.
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
    const float *x, *dy, *scale, *shift, *a, *b, *k;
    float *mean, *var, *y, *dx;
    double *sums;
    double *want_mean, *want_var, *want_y, *want_sums, *want_dx;
} bn_job;

static void bn_run(void *ctx)
{
    bn_job *j = ctx;
    CHECK_RC(pyrt_batch_norm_stats(j->n, j->c, j->m, j->x, j->mean, j->var), PYRT_OK);
    CHECK_RC(pyrt_batch_norm_forward(j->n, j->c, j->m, j->x, j->mean, j->scale, j->shift, j->y),
             PYRT_OK);
    CHECK_RC(pyrt_batch_norm_grad_sums(j->n, j->c, j->m, j->x, j->dy, j->mean, j->sums),
             PYRT_OK);
    CHECK_RC(pyrt_batch_norm_input_grad(j->n, j->c, j->m, j->x, j->dy, j->mean, j->a, j->b,
                                        j->k, j->dx),
             PYRT_OK);
}

/* The reference: the mean in double, and the rest about the kernel's own mean (checked against
 * that one), so that the centred terms agree. */
static void bn_reference(bn_job *j)
{
    const int64_t n = j->n, c = j->c, m = j->m;
    for (int64_t ch = 0; ch < c; ch++) {
        double s = 0, sq = 0, sdy = 0, sdyx = 0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t q = 0; q < m; q++)
                s += j->x[(i * c + ch) * m + q];
        j->want_mean[ch] = s / (double)(n * m);
        const double mu = j->mean[ch];
        for (int64_t i = 0; i < n; i++)
            for (int64_t q = 0; q < m; q++) {
                const int64_t e = (i * c + ch) * m + q;
                const double d = j->x[e] - mu;
                sq += d * d;
                sdy += j->dy[e];
                sdyx += j->dy[e] * d;
                j->want_y[e] = d * j->scale[ch] + j->shift[ch];
                j->want_dx[e] = j->dy[e] * j->a[ch] + d * j->b[ch] + j->k[ch];
            }
        j->want_var[ch] = sq / (double)(n * m);
        j->want_sums[2 * ch] = sdy;
        j->want_sums[2 * ch + 1] = sdyx;
    }
}

static void bn_check(void *ctx)
{
    bn_job *j = ctx;
    const int64_t count = j->n * j->m, size = j->n * j->c * j->m;
    bn_reference(j);
    kc_close("batch_norm mean", j->mean, j->want_mean, NULL, j->c, count, 1e-4);
    kc_close("batch_norm var", j->var, j->want_var, NULL, j->c, count, 1e-6);
    kc_close("batch_norm y", j->y, j->want_y, NULL, size, 4, 1e-3);
    kc_close("batch_norm dx", j->dx, j->want_dx, NULL, size, 4, 1e-3);
    for (int64_t q = 0; q < 2 * j->c; q++)
        CHECK(fabs(j->sums[q] - j->want_sums[q]) <= 1e-5 * (double)count + 1e-6,
              "batch_norm gradient sum %lld is %.9g, expected %.9g", (long long)q, j->sums[q],
              j->want_sums[q]);
}

static void check_batch_norm(stress_rng *r, int64_t n, int64_t c, int64_t m, float offset)
{
    bn_job j = {.n = n, .c = c, .m = m};
    const int64_t size = n * c * m;
    float *x = kc_floats(size), *dy = kc_floats(size);
    float *coef[5];
    for (int q = 0; q < 5; q++) {
        coef[q] = kc_floats(c);
        kc_fill(r, coef[q], c, -2.0f, 2.0f);
    }
    kc_fill(r, x, size, offset - 1.0f, offset + 1.0f);
    kc_fill(r, dy, size, -1.0f, 1.0f);
    j.x = x, j.dy = dy;
    j.scale = coef[0], j.shift = coef[1], j.a = coef[2], j.b = coef[3], j.k = coef[4];
    j.mean = kc_floats(c), j.var = kc_floats(c), j.y = kc_floats(size), j.dx = kc_floats(size);
    j.sums = kc_doubles(2 * c);
    j.want_mean = kc_doubles(c), j.want_var = kc_doubles(c), j.want_y = kc_doubles(size);
    j.want_sums = kc_doubles(2 * c), j.want_dx = kc_doubles(size);
    const kc_out outs[] = {
        {j.mean, sizeof(float) * (size_t)c}, {j.var, sizeof(float) * (size_t)c},
        {j.y, sizeof(float) * (size_t)size}, {j.sums, sizeof(double) * 2 * (size_t)c},
        {j.dx, sizeof(float) * (size_t)size},
    };
    kc_across_threads("batch_norm", bn_run, bn_check, &j, outs, 5);
    free(x), free(dy), free(j.mean), free(j.var), free(j.y), free(j.dx), free(j.sums);
    free(j.want_mean), free(j.want_var), free(j.want_y), free(j.want_sums), free(j.want_dx);
    for (int q = 0; q < 5; q++)
        free(coef[q]);
    /* a batch without values has no statistics */
    float one;
    CHECK_RC(pyrt_batch_norm_stats(0, 1, 4, &one, &one, &one), PYRT_EINVAL);
    CHECK_RC(pyrt_batch_norm_stats(2, 1, -1, &one, &one, &one), PYRT_EINVAL);
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

    check_batch_norm(&rng, 64, 8, 784, 0.0f); /* a CNN layer: leaves of several images */
    check_batch_norm(&rng, 3, 5, 7, 1000.0f); /* odd planes, far from zero */
    check_batch_norm(&rng, 300, 13, 1, -5.0f); /* rows of features */
    check_batch_norm(&rng, 2, 3, 40000, 2.0f); /* planes larger than a leaf */
    return stress_end("kernels_train", t0);
}
