/*
 * kernels_ops.c - elementwise ops, reductions, softmax and the losses, against double.
 *
 * Sizes straddle the kernels' chunking (elementwise grains of 8192 and 16384 elements, the
 * reductions' leaves of 32768 and column blocks of 256) and their vector width (lengths that
 * are not multiples of 8 leave masked or scalar tails), so that the last partial vector of
 * an operand ends exactly at the end of its malloc block. Results are checked at 1 thread and
 * must be bitwise the same at 2 and 4.
 */
#include <stddef.h>
#include <stdint.h>

#include "kernels_check.h"

/* Error allowed, in units of half an ulp of the result, for a few float operations or a
 * vectorised exp, log or tanh. */
#define MATH_TERMS 8

/* ---- elementwise ---------------------------------------------------------------------- */

typedef struct {
    int op, bcast, swap, in_place;
    int64_t rows, cols;
    float *a, *b, *a0, *out;
    double *want;
} binary_job;

static void binary_run(void *ctx)
{
    binary_job *j = ctx;
    float *out = j->out;
    if (j->in_place) {
        memcpy(j->out, j->a0, sizeof(float) * (size_t)(j->rows * j->cols));
        j->a = out;
    }
    CHECK_RC(pyrt_binary(j->op, j->a, j->b, out, j->rows, j->cols, j->bcast, j->swap), PYRT_OK);
}

static void binary_check(void *ctx)
{
    binary_job *j = ctx;
    char what[96];
    snprintf(what, sizeof what, "binary op %d bcast %d swap %d in place %d", j->op, j->bcast,
             j->swap, j->in_place);
    kc_close(what, j->out, j->want, NULL, j->rows * j->cols, 0, 0);
}

static void check_binary(stress_rng *r, int64_t rows, int64_t cols)
{
    const int64_t n = rows * cols;
    const int64_t b_len[] = {n, 1, cols, rows};
    binary_job j = {.rows = rows, .cols = cols};
    j.a0 = kc_floats(n);
    j.out = kc_floats(n);
    j.want = kc_doubles(n);
    kc_fill(r, j.a0, n, 0.5f, 2.0f);
    for (int bcast = PYRT_BCAST_NONE; bcast <= PYRT_BCAST_COL; bcast++) {
        j.b = kc_floats(b_len[bcast]);
        kc_fill(r, j.b, b_len[bcast], -2.0f, -0.5f);
        for (int op = PYRT_ADD; op <= PYRT_DIV; op++)
            for (int variant = 0; variant < 3; variant++) {
                j.op = op;
                j.bcast = bcast;
                j.swap = variant == 1;
                j.in_place = variant == 2;
                j.a = j.a0;
                for (int64_t i = 0; i < rows; i++)
                    for (int64_t c = 0; c < cols; c++) {
                        const int64_t bi[] = {i * cols + c, 0, c, i};
                        double x = j.a0[i * cols + c], y = j.b[bi[bcast]];
                        if (j.swap) {
                            const double t = x;
                            x = y;
                            y = t;
                        }
                        const double v = op == PYRT_ADD ? x + y : op == PYRT_SUB ? x - y
                                         : op == PYRT_MUL ? x * y : x / y;
                        j.want[i * cols + c] = (float)v;
                    }
                const kc_out outs[] = {{j.out, sizeof(float) * (size_t)n}};
                kc_across_threads("pyrt_binary", binary_run, binary_check, &j, outs, 1);
            }
        free(j.b);
    }
    free(j.a0), free(j.out), free(j.want);
}

typedef struct {
    int op;
    int64_t n, rows, cols;
    const float *x, *grad, *bias, *y_ref; /* y_ref: the op's output, for the gradients */
    float *y, *dx, *ba, *bg, *acm;
    double *want_y, *want_dx, *want_ba, *want_bg, *bound_bg, *want_acm;
} unary_job;

static double act_ref(int op, double x)
{
    switch (op) {
    case PYRT_NEG: return -x;
    case PYRT_EXP: return exp(x);
    case PYRT_LOG: return log(x);
    case PYRT_SQRT: return sqrt(x);
    case PYRT_TANH: return tanh(x);
    case PYRT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case PYRT_RELU: return x > 0 ? x : 0;
    default: return x;
    }
}

/* op'(x) times grad, from x and y = op(x) as the kernel gets them */
static double act_grad_ref(int op, double g, double x, double y)
{
    switch (op) {
    case PYRT_NEG: return -g;
    case PYRT_EXP: return g * y;
    case PYRT_LOG: return g / x;
    case PYRT_SQRT: return g / (2 * y);
    case PYRT_TANH: return g * (1 - y * y);
    case PYRT_SIGMOID: return g * y * (1 - y);
    case PYRT_RELU: return x > 0 ? g : 0;
    default: return g;
    }
}

static int is_chain_act(int op)
{
    return op == PYRT_IDENTITY || op == PYRT_RELU || op == PYRT_SIGMOID || op == PYRT_TANH;
}

static void unary_run(void *ctx)
{
    unary_job *j = ctx;
    CHECK_RC(pyrt_unary(j->op, j->x, j->y, j->n), PYRT_OK);
    const float *saved = j->op == PYRT_RELU || j->op == PYRT_LOG ? j->x : j->y_ref;
    CHECK_RC(pyrt_unary_backward(j->op, j->grad, saved, j->dx, j->n), PYRT_OK);
    if (is_chain_act(j->op))
        CHECK_RC(pyrt_bias_act(j->x, j->bias, j->ba, j->rows, j->cols, j->op), PYRT_OK);
    CHECK_RC(pyrt_bias_grad(j->grad, j->bg, j->rows, j->cols), PYRT_OK);
    CHECK_RC(pyrt_addcmul(j->x, j->grad, j->bias, 0.5f, j->acm, j->cols), PYRT_OK);
}

static void unary_check(void *ctx)
{
    unary_job *j = ctx;
    char what[64];
    snprintf(what, sizeof what, "unary op %d", j->op);
    kc_close(what, j->y, j->want_y, NULL, j->n, MATH_TERMS, 1e-7);
    snprintf(what, sizeof what, "unary_backward op %d", j->op);
    kc_close(what, j->dx, j->want_dx, NULL, j->n, MATH_TERMS, 1e-7);
    snprintf(what, sizeof what, "bias_act op %d", j->op);
    if (is_chain_act(j->op))
        kc_close(what, j->ba, j->want_ba, NULL, j->n, MATH_TERMS, 1e-7);
    kc_close("bias_grad", j->bg, j->want_bg, j->bound_bg, j->cols, j->rows, 0);
    kc_close("addcmul", j->acm, j->want_acm, NULL, j->cols, 3, 1e-7);
}

static void check_unary(stress_rng *r, int64_t rows, int64_t cols)
{
    const int64_t n = rows * cols;
    unary_job j = {.n = n, .rows = rows, .cols = cols};
    float *x = kc_floats(n), *grad = kc_floats(n), *bias = kc_floats(cols);
    float *y_ref = kc_floats(n);
    kc_fill(r, grad, n, -1.0f, 1.0f);
    kc_fill(r, bias, cols, -1.0f, 1.0f);
    j.x = x, j.grad = grad, j.bias = bias, j.y_ref = y_ref;
    j.y = kc_floats(n), j.dx = kc_floats(n), j.ba = kc_floats(n);
    j.bg = kc_floats(cols), j.acm = kc_floats(cols);
    j.want_y = kc_doubles(n), j.want_dx = kc_doubles(n), j.want_ba = kc_doubles(n);
    j.want_bg = kc_doubles(cols), j.bound_bg = kc_doubles(cols), j.want_acm = kc_doubles(cols);
    for (int64_t c = 0; c < cols; c++) {
        double s = 0, t = 0;
        for (int64_t i = 0; i < rows; i++) {
            s += grad[i * cols + c];
            t += fabs(grad[i * cols + c]);
        }
        j.want_bg[c] = s;
        j.bound_bg[c] = t;
    }
    for (int op = PYRT_NEG; op <= PYRT_IDENTITY; op++) {
        const int positive = op == PYRT_LOG || op == PYRT_SQRT;
        kc_fill(r, x, n, positive ? 0.1f : -6.0f, positive ? 4.0f : 6.0f);
        for (int64_t i = 0; i < n; i++) {
            const double y = act_ref(op, x[i]);
            y_ref[i] = (float)y;
            j.want_y[i] = y;
            j.want_dx[i] = act_grad_ref(op, grad[i], x[i], y_ref[i]);
            j.want_ba[i] = act_ref(op, (double)x[i] + bias[i % cols]);
        }
        for (int64_t c = 0; c < cols; c++)
            j.want_acm[c] = x[c] + 0.5 * grad[c] * bias[c];
        j.op = op;
        const kc_out outs[] = {
            {j.y, sizeof(float) * (size_t)n},         {j.dx, sizeof(float) * (size_t)n},
            {j.ba, sizeof(float) * (size_t)(is_chain_act(op) ? n : 0)},
            {j.bg, sizeof(float) * (size_t)cols},     {j.acm, sizeof(float) * (size_t)cols},
        };
        kc_across_threads("unary ops", unary_run, unary_check, &j, outs, 5);
    }
    free(x), free(grad), free(bias), free(y_ref);
    free(j.y), free(j.dx), free(j.ba), free(j.bg), free(j.acm);
    free(j.want_y), free(j.want_dx), free(j.want_ba), free(j.want_bg), free(j.bound_bg);
    free(j.want_acm);
}

/* ---- reductions ----------------------------------------------------------------------- */

typedef struct {
    int64_t outer, len, inner;
    int nans; /* x holds NaN: the sums are NaN too, and not compared */
    const float *x;
    float *sum, *max;
    int64_t *argmax;
    double *want_sum, *bound_sum, *want_max;
    int64_t *want_arg;
} reduce_job;

static void reduce_run(void *ctx)
{
    reduce_job *j = ctx;
    CHECK_RC(pyrt_sum(j->x, j->sum, j->outer, j->len, j->inner), PYRT_OK);
    CHECK_RC(pyrt_max(j->x, j->max, j->outer, j->len, j->inner), PYRT_OK);
    CHECK_RC(pyrt_argmax(j->x, j->argmax, j->outer, j->len, j->inner), PYRT_OK);
}

static void reduce_check(void *ctx)
{
    reduce_job *j = ctx;
    const int64_t m = j->outer * j->inner;
    if (!j->nans)
        kc_close("sum", j->sum, j->want_sum, j->bound_sum, m, j->len, 0);
    for (int64_t i = 0; i < m; i++) {
        CHECK((isnan(j->want_max[i]) && isnan(j->max[i])) || j->max[i] == j->want_max[i],
              "max [%lld, %lld, %lld] at %lld: %g, expected %g", (long long)j->outer,
              (long long)j->len, (long long)j->inner, (long long)i, (double)j->max[i],
              j->want_max[i]);
        CHECK(j->argmax[i] == j->want_arg[i],
              "argmax [%lld, %lld, %lld] at %lld: %lld, expected %lld", (long long)j->outer,
              (long long)j->len, (long long)j->inner, (long long)i, (long long)j->argmax[i],
              (long long)j->want_arg[i]);
    }
}

static void check_reduce(stress_rng *r, int64_t outer, int64_t len, int64_t inner, int nans)
{
    const int64_t n = outer * len * inner, m = outer * inner;
    float *x = kc_floats(n);
    kc_fill(r, x, n, -1.0f, 1.0f);
    for (int i = 0; i < nans; i++)
        x[stress_below(r, n)] = NAN;
    reduce_job j = {.outer = outer, .len = len, .inner = inner, .nans = nans, .x = x};
    j.sum = kc_floats(m), j.max = kc_floats(m);
    j.argmax = malloc(sizeof(int64_t) * (size_t)m);
    j.want_arg = malloc(sizeof(int64_t) * (size_t)m);
    CHECK(j.argmax && j.want_arg, "out of memory");
    j.want_sum = kc_doubles(m), j.bound_sum = kc_doubles(m), j.want_max = kc_doubles(m);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t c = 0; c < inner; c++) {
            double s = 0, t = 0, best = -INFINITY;
            int64_t at = -1;
            for (int64_t l = 0; l < len; l++) {
                const float v = x[(o * len + l) * inner + c];
                s += v;
                t += fabs(v);
                if (at < 0 || (!isnan(best) && (isnan(v) || v > best))) {
                    best = v;
                    at = l;
                }
            }
            j.want_sum[o * inner + c] = s;
            j.bound_sum[o * inner + c] = t;
            j.want_max[o * inner + c] = best;
            j.want_arg[o * inner + c] = at;
        }
    const kc_out outs[] = {
        {j.max, sizeof(float) * (size_t)m},
        {j.argmax, sizeof(int64_t) * (size_t)m},
        {j.sum, sizeof(float) * (size_t)m},
    };
    kc_across_threads("reductions", reduce_run, reduce_check, &j, outs, 3);
    free(x), free(j.sum), free(j.max), free(j.argmax), free(j.want_arg);
    free(j.want_sum), free(j.bound_sum), free(j.want_max);
}

/* ---- softmax and losses ---------------------------------------------------------------- */

typedef struct {
    int64_t rows, cols;
    const float *x, *targets;
    const int64_t *labels;
    float *soft, *logsoft, *ce_grad, *bce_grad, *ce_loss, *bce_loss;
    double *want_soft, *want_log, *want_ce_grad, *want_bce_grad, want_ce, want_bce;
} softmax_job;

static void softmax_run(void *ctx)
{
    softmax_job *j = ctx;
    CHECK_RC(pyrt_softmax(j->x, j->soft, j->rows, j->cols, 0), PYRT_OK);
    CHECK_RC(pyrt_softmax(j->x, j->logsoft, j->rows, j->cols, 1), PYRT_OK);
    CHECK_RC(pyrt_cross_entropy(j->x, j->labels, j->ce_loss, j->ce_grad, j->rows, j->cols),
             PYRT_OK);
    CHECK_RC(pyrt_bce_with_logits(j->x, j->targets, j->bce_loss, j->bce_grad,
                                  j->rows * j->cols),
             PYRT_OK);
}

static void softmax_check(void *ctx)
{
    softmax_job *j = ctx;
    const int64_t n = j->rows * j->cols;
    kc_close("softmax", j->soft, j->want_soft, NULL, n, MATH_TERMS + j->cols, 1e-7);
    kc_close("log_softmax", j->logsoft, j->want_log, NULL, n, MATH_TERMS + j->cols, 1e-6);
    kc_close("cross_entropy grad", j->ce_grad, j->want_ce_grad, NULL, n, MATH_TERMS + j->cols,
             1e-7);
    kc_close("cross_entropy loss", j->ce_loss, &j->want_ce, NULL, 1, MATH_TERMS + n, 1e-6);
    kc_close("bce_with_logits grad", j->bce_grad, j->want_bce_grad, NULL, n, MATH_TERMS, 1e-9);
    kc_close("bce_with_logits loss", j->bce_loss, &j->want_bce, NULL, 1, MATH_TERMS + n, 1e-6);
}

static void check_softmax(stress_rng *r, int64_t rows, int64_t cols, float spread)
{
    const int64_t n = rows * cols;
    softmax_job j = {.rows = rows, .cols = cols};
    float *x = kc_floats(n), *targets = kc_floats(n);
    int64_t *labels = malloc(sizeof(int64_t) * (size_t)rows);
    CHECK(labels != NULL, "out of memory");
    kc_fill(r, x, n, -spread, spread);
    kc_fill(r, targets, n, 0.0f, 1.0f);
    for (int64_t i = 0; i < rows; i++)
        labels[i] = stress_below(r, cols);
    j.x = x, j.targets = targets, j.labels = labels;
    j.soft = kc_floats(n), j.logsoft = kc_floats(n), j.ce_grad = kc_floats(n);
    j.bce_grad = kc_floats(n), j.ce_loss = kc_floats(1), j.bce_loss = kc_floats(1);
    j.want_soft = kc_doubles(n), j.want_log = kc_doubles(n), j.want_ce_grad = kc_doubles(n);
    j.want_bce_grad = kc_doubles(n);
    j.want_ce = j.want_bce = 0;
    for (int64_t i = 0; i < rows; i++) {
        const float *row = x + i * cols;
        double top = row[0], s = 0;
        for (int64_t c = 1; c < cols; c++)
            top = row[c] > top ? row[c] : top;
        for (int64_t c = 0; c < cols; c++)
            s += exp(row[c] - top);
        for (int64_t c = 0; c < cols; c++) {
            const double p = exp(row[c] - top) / s;
            j.want_soft[i * cols + c] = p;
            j.want_log[i * cols + c] = row[c] - top - log(s);
            j.want_ce_grad[i * cols + c] = (p - (c == labels[i])) / (double)rows;
        }
        j.want_ce -= (row[labels[i]] - top - log(s)) / (double)rows;
    }
    for (int64_t i = 0; i < n; i++) {
        const double z = x[i], t = targets[i];
        j.want_bce += ((z > 0 ? z : 0) - z * t + log1p(exp(-fabs(z)))) / (double)n;
        j.want_bce_grad[i] = (1 / (1 + exp(-z)) - t) / (double)n;
    }
    const kc_out outs[] = {
        {j.soft, sizeof(float) * (size_t)n},    {j.logsoft, sizeof(float) * (size_t)n},
        {j.ce_grad, sizeof(float) * (size_t)n}, {j.bce_grad, sizeof(float) * (size_t)n},
        {j.ce_loss, sizeof(float)},             {j.bce_loss, sizeof(float)},
    };
    kc_across_threads("softmax and losses", softmax_run, softmax_check, &j, outs, 6);
    /* a label out of range: an error, and nothing written */
    labels[rows - 1] = cols;
    j.ce_loss[0] = 7.0f;
    CHECK_RC(pyrt_cross_entropy(x, labels, j.ce_loss, NULL, rows, cols), PYRT_EINVAL);
    CHECK(j.ce_loss[0] == 7.0f, "cross_entropy wrote a loss for a bad label");
    free(x), free(targets), free(labels);
    free(j.soft), free(j.logsoft), free(j.ce_grad), free(j.bce_grad), free(j.ce_loss);
    free(j.bce_loss), free(j.want_soft), free(j.want_log), free(j.want_ce_grad);
    free(j.want_bce_grad);
}

/* ---- transpose: every element where it belongs ---------------------------------------- */

typedef struct {
    int64_t batch, rows, cols;
    const float *x;
    float *out;
} transpose_job;

static void transpose_run(void *ctx)
{
    transpose_job *j = ctx;
    CHECK_RC(pyrt_transpose(j->x, j->out, j->batch, j->rows, j->cols), PYRT_OK);
}

static void transpose_check(void *ctx)
{
    const transpose_job *j = ctx;
    const int64_t m = j->rows, n = j->cols;
    for (int64_t b = 0; b < j->batch; b++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t k = 0; k < n; k++)
                CHECK(j->out[b * m * n + k * m + i] == j->x[b * m * n + i * n + k],
                      "transpose %lld x %lld x %lld: out[%lld, %lld, %lld] is %.9g, expected "
                      "%.9g", (long long)j->batch, (long long)m, (long long)n, (long long)b,
                      (long long)k, (long long)i, (double)j->out[b * m * n + k * m + i],
                      (double)j->x[b * m * n + i * n + k]);
}

static void check_transpose(stress_rng *r, int64_t batch, int64_t rows, int64_t cols)
{
    const int64_t n = batch * rows * cols;
    float *x = kc_floats(n + 1);
    kc_fill(r, x, n + 1, -1.0f, 1.0f);
    transpose_job j = {batch, rows, cols, x, kc_floats(n)};
    const kc_out outs[] = {{j.out, sizeof(float) * (size_t)n}};
    kc_across_threads("transpose", transpose_run, transpose_check, &j, outs, 1);
    CHECK_RC(pyrt_transpose(x, j.out, batch, -1, cols), PYRT_EINVAL);
    CHECK_RC(pyrt_transpose(NULL, j.out, batch, rows, cols), PYRT_EINVAL);
    if (n > 1) /* a shifted view, and the same array: no transpose can write in place */
        CHECK_RC(pyrt_transpose(x, x + 1, batch, rows, cols), PYRT_EOVERLAP);
    CHECK_RC(pyrt_transpose(x, x, batch, rows, cols), PYRT_EOVERLAP);
    CHECK_RC(pyrt_transpose(NULL, NULL, batch, 0, cols), PYRT_OK);
    free(x), free(j.out);
}

/* ---- block copies: every block from its offset, zeros for the negative ones ------------ */

typedef struct {
    const float *src;
    const int64_t *at;
    int64_t src_len, count, len;
    float *dst;
} blocks_job;

static void blocks_run(void *ctx)
{
    blocks_job *j = ctx;
    CHECK_RC(pyrt_copy_blocks(j->src, j->src_len, j->at, j->count, j->len, j->dst), PYRT_OK);
}

static void blocks_check(void *ctx)
{
    const blocks_job *j = ctx;
    for (int64_t b = 0; b < j->count; b++)
        for (int64_t k = 0; k < j->len; k++) {
            const float want = j->at[b] < 0 ? 0.0f : j->src[j->at[b] + k];
            CHECK(j->dst[b * j->len + k] == want, "copy_blocks: block %lld float %lld is %.9g, "
                  "expected %.9g", (long long)b, (long long)k, (double)j->dst[b * j->len + k],
                  (double)want);
        }
}

static void check_copy_blocks(stress_rng *r, int64_t src_len, int64_t count, int64_t len)
{
    float *src = kc_floats(src_len + 1);
    kc_fill(r, src, src_len + 1, -1.0f, 1.0f);
    int64_t *at = malloc(sizeof(int64_t) * (size_t)(count + 1));
    for (int64_t b = 0; b < count; b++) /* any offset a block fits at, or a zero block */
        at[b] = stress_next(r) % 5 == 0 ? -1
                                        : (int64_t)(stress_next(r) % (uint64_t)(src_len - len + 1));
    blocks_job j = {src, at, src_len, count, len, kc_floats(count * len + 1)};
    const kc_out outs[] = {{j.dst, sizeof(float) * (size_t)(count * len)}};
    kc_across_threads("copy_blocks", blocks_run, blocks_check, &j, outs, 1);
    const int64_t past = src_len - len + 1;
    CHECK_RC(pyrt_copy_blocks(src, src_len, &past, 1, len, j.dst), PYRT_EINVAL);
    CHECK_RC(pyrt_copy_blocks(src, src_len, at, count, -1, j.dst), PYRT_EINVAL);
    CHECK_RC(pyrt_copy_blocks(src, src_len, at, 1, len, src + 1), PYRT_EOVERLAP);
    CHECK_RC(pyrt_copy_blocks(NULL, 0, NULL, 0, len, NULL), PYRT_OK);
    free(src), free(at), free(j.dst);
}

/* ---- bags of embeddings: sums, means, maxima and their gradients against loops --------- */

typedef struct {
    int64_t rows, dim, bags, mode;
    const float *weight, *scale, *grad;
    const int64_t *index, *bounds;
    float *out, *gw;
    int64_t *arg;
} bag_job;

static void bag_run(void *ctx)
{
    bag_job *j = ctx;
    CHECK_RC(pyrt_embedding_bag(j->weight, j->rows, j->dim, j->index, j->bounds, j->bags,
                                j->scale, (int)j->mode, j->out, j->arg),
             PYRT_OK);
    CHECK_RC(pyrt_embedding_bag_backward(j->grad, j->rows, j->dim, j->index, j->bounds, j->bags,
                                         j->scale, j->mode == PYRT_BAG_MAX ? j->arg : NULL,
                                         j->gw),
             PYRT_OK);
}

static void bag_check(void *ctx)
{
    const bag_job *j = ctx;
    const int64_t dim = j->dim;
    double *gw = calloc((size_t)(j->rows * dim + 1), sizeof(double));
    for (int64_t b = 0; b < j->bags; b++) {
        const int64_t e0 = j->bounds[b], e1 = j->bounds[b + 1];
        for (int64_t d = 0; d < dim; d++) {
            double want = 0.0;
            int64_t at = -1;
            for (int64_t e = e0; e < e1; e++) {
                const double v = j->weight[j->index[e] * dim + d];
                if (j->mode == PYRT_BAG_MAX) {
                    if (at < 0 || v > want)
                        want = v, at = e;
                } else {
                    want += v * (j->scale ? j->scale[e] : 1.0);
                }
            }
            if (j->mode == PYRT_BAG_MEAN && e1 > e0)
                want /= (double)(e1 - e0);
            const double got = j->out[b * dim + d];
            CHECK(fabs(got - want) <= 1e-5 * (1.0 + fabs(want)),
                  "embedding_bag mode %lld: bag %lld column %lld is %.9g, expected %.9g",
                  (long long)j->mode, (long long)b, (long long)d, got, want);
            if (j->mode == PYRT_BAG_MAX) {
                CHECK(j->arg[b * dim + d] == at, "embedding_bag max: bag %lld column %lld took "
                      "entry %lld, expected %lld", (long long)b, (long long)d,
                      (long long)j->arg[b * dim + d], (long long)at);
                if (at >= 0)
                    gw[j->index[at] * dim + d] += j->grad[b * dim + d];
            } else {
                for (int64_t e = e0; e < e1; e++)
                    gw[j->index[e] * dim + d] += j->grad[b * dim + d]
                                                 * (j->scale ? j->scale[e] : 1.0);
            }
        }
    }
    for (int64_t i = 0; i < j->rows * dim; i++)
        CHECK(fabs(j->gw[i] - gw[i]) <= 1e-4 * (1.0 + fabs(gw[i])),
              "embedding_bag backward mode %lld: element %lld is %.9g, expected %.9g",
              (long long)j->mode, (long long)i, (double)j->gw[i], gw[i]);
    free(gw);
}

static void check_embedding_bag(stress_rng *r, int64_t rows, int64_t dim, int64_t bags,
                                int64_t per_bag)
{
    const int64_t most = bags * 2 * per_bag + 1;
    int64_t *index = malloc(sizeof(int64_t) * (size_t)most);
    int64_t *bounds = malloc(sizeof(int64_t) * (size_t)(bags + 1));
    bounds[0] = 0;
    for (int64_t b = 0; b < bags; b++) /* sizes 0 .. 2 per_bag, some bags empty */
        bounds[b + 1] = bounds[b] + (int64_t)(stress_next(r) % (uint64_t)(2 * per_bag + 1));
    const int64_t entries = bounds[bags];
    for (int64_t e = 0; e < entries; e++)
        index[e] = (int64_t)(stress_next(r) % (uint64_t)rows); /* rows repeat across bags */
    float *weight = kc_floats(rows * dim + 1), *scale = kc_floats(entries + 1);
    float *grad = kc_floats(bags * dim + 1);
    kc_fill(r, weight, rows * dim + 1, -1.0f, 1.0f);
    kc_fill(r, scale, entries + 1, -1.0f, 1.0f);
    kc_fill(r, grad, bags * dim + 1, -1.0f, 1.0f);
    for (int64_t mode = 0; mode < 4; mode++) { /* sum, mean, max, and sum with scales */
        bag_job j = {rows, dim, bags, mode == 3 ? PYRT_BAG_SUM : mode, weight,
                     mode == 3 ? scale : NULL, grad, index, bounds, kc_floats(bags * dim + 1),
                     kc_floats(rows * dim + 1), malloc(sizeof(int64_t) * (size_t)(bags * dim + 1))};
        const kc_out outs[] = {{j.out, sizeof(float) * (size_t)(bags * dim)},
                               {j.gw, sizeof(float) * (size_t)(rows * dim)}};
        kc_across_threads("embedding_bag", bag_run, bag_check, &j, outs, 2);
        free(j.out), free(j.gw), free(j.arg);
    }
    float out[4];
    int64_t arg[4], bad_bounds[3] = {0, 2, 1}, bad_index[2] = {0, rows};
    CHECK_RC(pyrt_embedding_bag(weight, rows, 2, bad_index, (int64_t[]){0, 2}, 1, NULL,
                                PYRT_BAG_SUM, out, arg),
             PYRT_EINVAL); /* an index past the table */
    CHECK_RC(pyrt_embedding_bag(weight, rows, 2, index, bad_bounds, 2, NULL, PYRT_BAG_SUM, out,
                                arg),
             PYRT_EINVAL); /* bounds that fall */
    CHECK_RC(pyrt_embedding_bag(weight, rows, 2, index, bounds, 1, NULL, 7, out, arg),
             PYRT_EINVAL);
    CHECK_RC(pyrt_embedding_bag(weight, rows, 2, index, bounds, 1, NULL, PYRT_BAG_MAX, out,
                                NULL),
             PYRT_EINVAL); /* a maximum needs somewhere to put its entries */
    free(index), free(bounds), free(weight), free(scale), free(grad);
}

/* ---- the LSTM cell: forward and backward against double closed forms ----------------- */

typedef struct {
    int64_t rows, hidden;
    const float *gx, *gh, *cp, *dh, *dc;
    float *h, *c, *act, *dg, *dcp;
} lstm_job;

static void lstm_run(void *ctx)
{
    lstm_job *j = ctx;
    CHECK_RC(pyrt_lstm_cell(j->gx, j->gh, j->cp, j->h, j->c, j->act, j->rows, j->hidden),
             PYRT_OK);
    CHECK_RC(pyrt_lstm_cell_backward(j->dh, j->dc, j->act, j->c, j->cp, j->dg, j->dcp, j->rows,
                                     j->hidden),
             PYRT_OK);
}

static double sig(double x)
{
    return 1 / (1 + exp(-x));
}

static void lstm_check(void *ctx)
{
    const lstm_job *j = ctx;
    const int64_t H = j->hidden;
    for (int64_t r = 0; r < j->rows; r++)
        for (int64_t k = 0; k < H; k++) {
            const int64_t g = r * 4 * H + k, e = r * H + k;
            const double si = sig((double)j->gx[g] + j->gh[g]);
            const double sf = sig((double)j->gx[g + H] + j->gh[g + H]);
            const double tg = tanh((double)j->gx[g + 2 * H] + j->gh[g + 2 * H]);
            const double so = sig((double)j->gx[g + 3 * H] + j->gh[g + 3 * H]);
            const double c = sf * j->cp[e] + si * tg, tc = tanh(c), h = so * tc;
            const double dct = j->dc[e] + j->dh[e] * so * (1 - tc * tc);
            const double want[] = {h, c, dct * tg * si * (1 - si), dct * j->cp[e] * sf * (1 - sf),
                                   dct * si * (1 - tg * tg), j->dh[e] * tc * so * (1 - so),
                                   dct * sf};
            const float got[] = {j->h[e], j->c[e], j->dg[g], j->dg[g + H], j->dg[g + 2 * H],
                                 j->dg[g + 3 * H], j->dcp[e]};
            for (int i = 0; i < 7; i++)
                CHECK(fabs(got[i] - want[i]) <= 1e-5 * (1 + fabs(want[i])),
                      "lstm_cell %lld x %lld: value %d at (%lld, %lld) is %.9g, expected %.9g",
                      (long long)j->rows, (long long)H, i, (long long)r, (long long)k,
                      (double)got[i], want[i]);
        }
}

static void check_lstm_cell(stress_rng *r, int64_t rows, int64_t hidden)
{
    const int64_t n = rows * hidden, ng = 4 * n;
    float *gx = kc_floats(ng), *gh = kc_floats(ng), *cp = kc_floats(n), *dh = kc_floats(n);
    float *dc = kc_floats(n);
    kc_fill(r, gx, ng, -4.0f, 4.0f);
    kc_fill(r, gh, ng, -1.0f, 1.0f);
    kc_fill(r, cp, n, -2.0f, 2.0f);
    kc_fill(r, dh, n, -1.0f, 1.0f);
    kc_fill(r, dc, n, -1.0f, 1.0f);
    lstm_job j = {.rows = rows, .hidden = hidden, .gx = gx, .gh = gh, .cp = cp, .dh = dh,
                  .dc = dc, .h = kc_floats(n), .c = kc_floats(n), .act = kc_floats(ng),
                  .dg = kc_floats(ng), .dcp = kc_floats(n)};
    const kc_out outs[] = {
        {j.h, sizeof(float) * (size_t)n},    {j.c, sizeof(float) * (size_t)n},
        {j.act, sizeof(float) * (size_t)ng}, {j.dg, sizeof(float) * (size_t)ng},
        {j.dcp, sizeof(float) * (size_t)n},
    };
    kc_across_threads("lstm_cell", lstm_run, lstm_check, &j, outs, 5);
    CHECK_RC(pyrt_lstm_cell(gx, NULL, NULL, j.h, j.c, NULL, -1, hidden), PYRT_EINVAL);
    CHECK_RC(pyrt_lstm_cell(NULL, NULL, NULL, j.h, j.c, NULL, rows, hidden), PYRT_EINVAL);
    CHECK_RC(pyrt_lstm_cell_backward(dh, NULL, NULL, j.c, NULL, j.dg, NULL, rows, hidden),
             PYRT_EINVAL);
    free(gx), free(gh), free(cp), free(dh), free(dc);
    free(j.h), free(j.c), free(j.act), free(j.dg), free(j.dcp);
}

/* ---- the GRU cell ------------------------------------------------------------------- */

typedef struct {
    int64_t rows, hidden;
    const float *gx, *gh, *bias, *hp, *dh;
    float *h, *act, *dgx, *dgh, *dhp;
} gru_job;

static void gru_run(void *ctx)
{
    gru_job *j = ctx;
    CHECK_RC(pyrt_gru_cell(j->gx, j->gh, j->bias, j->hp, j->h, j->act, j->rows, j->hidden),
             PYRT_OK);
    CHECK_RC(pyrt_gru_cell_backward(j->dh, j->act, j->hp, j->dgx, j->dgh, j->dhp, j->rows,
                                    j->hidden),
             PYRT_OK);
}

static void gru_check(void *ctx)
{
    const gru_job *j = ctx;
    const int64_t H = j->hidden;
    for (int64_t r = 0; r < j->rows; r++)
        for (int64_t k = 0; k < H; k++) {
            const int64_t g = r * 3 * H + k, e = r * H + k;
            const double hr = (double)j->gh[g] + j->bias[k];
            const double hz = (double)j->gh[g + H] + j->bias[k + H];
            const double hn = (double)j->gh[g + 2 * H] + j->bias[k + 2 * H];
            const double rr = sig(j->gx[g] + hr), z = sig(j->gx[g + H] + hz);
            const double n = tanh(j->gx[g + 2 * H] + rr * hn), hp = j->hp[e], dh = j->dh[e];
            const double dn = dh * (1 - z) * (1 - n * n), dr = dn * hn * rr * (1 - rr);
            const double dz = dh * (hp - n) * z * (1 - z);
            const double want[] = {(1 - z) * n + z * hp, dr, dz, dn, dr, dz, dn * rr, dh * z};
            const float got[] = {j->h[e],       j->dgx[g],     j->dgx[g + H],
                                 j->dgx[g + 2 * H], j->dgh[g], j->dgh[g + H],
                                 j->dgh[g + 2 * H], j->dhp[e]};
            for (int i = 0; i < 8; i++)
                CHECK(fabs(got[i] - want[i]) <= 1e-5 * (1 + fabs(want[i])),
                      "gru_cell %lld x %lld: value %d at (%lld, %lld) is %.9g, expected %.9g",
                      (long long)j->rows, (long long)H, i, (long long)r, (long long)k,
                      (double)got[i], want[i]);
        }
}

static void check_gru_cell(stress_rng *r, int64_t rows, int64_t hidden)
{
    const int64_t n = rows * hidden, ng = 3 * n;
    float *gx = kc_floats(ng), *gh = kc_floats(ng), *bias = kc_floats(3 * hidden);
    float *hp = kc_floats(n), *dh = kc_floats(n);
    kc_fill(r, gx, ng, -4.0f, 4.0f);
    kc_fill(r, gh, ng, -1.0f, 1.0f);
    kc_fill(r, bias, 3 * hidden, -1.0f, 1.0f);
    kc_fill(r, hp, n, -1.0f, 1.0f);
    kc_fill(r, dh, n, -1.0f, 1.0f);
    gru_job j = {.rows = rows, .hidden = hidden, .gx = gx, .gh = gh, .bias = bias, .hp = hp,
                 .dh = dh, .h = kc_floats(n), .act = kc_floats(4 * n), .dgx = kc_floats(ng),
                 .dgh = kc_floats(ng), .dhp = kc_floats(n)};
    const kc_out outs[] = {
        {j.h, sizeof(float) * (size_t)n},     {j.act, sizeof(float) * (size_t)(4 * n)},
        {j.dgx, sizeof(float) * (size_t)ng},  {j.dgh, sizeof(float) * (size_t)ng},
        {j.dhp, sizeof(float) * (size_t)n},
    };
    kc_across_threads("gru_cell", gru_run, gru_check, &j, outs, 5);
    CHECK_RC(pyrt_gru_cell(gx, gh, NULL, hp, j.h, NULL, rows, hidden), PYRT_EINVAL);
    CHECK_RC(pyrt_gru_cell_backward(dh, j.act, hp, j.dgx, j.dgh, j.dhp, rows, -1), PYRT_EINVAL);
    free(gx), free(gh), free(bias), free(hp), free(dh);
    free(j.h), free(j.act), free(j.dgx), free(j.dgh), free(j.dhp);
}

/* ---- the step loops of recurrent layers: against steps made by hand, bitwise ---------- */

/* The loops run blocks of rows (recurrence.c) and the reference the whole batch at once: the
 * same bits, as the GEMM sums an element the same way whatever other rows share its call
 * while k is one of its blocks (hidden and 4 * hidden up to 256 here). */

typedef struct {
    int64_t steps, batch, hidden;
    int reverse;
    const float *xw, *w, *wt, *bias, *h0, *c0, *d_out, *dh_n, *dc_n;
    float *out, *cells, *acts, *dgx, *dgh, *dh, *dc;
    float *want_out, *want_dgx, *want_dgh, *want_dh, *want_dc; /* by hand, one thread */
} loop_job;

static void lstm_loop_run(void *ctx)
{
    loop_job *j = ctx;
    const int64_t n = j->batch * j->hidden;
    CHECK_RC(pyrt_lstm_forward(j->steps, j->batch, j->hidden, j->reverse, j->xw, j->wt, j->h0,
                               j->c0, j->out, j->cells, j->acts),
             PYRT_OK);
    memcpy(j->dh, j->dh_n, sizeof(float) * (size_t)n);
    memcpy(j->dc, j->dc_n, sizeof(float) * (size_t)n);
    CHECK_RC(pyrt_lstm_backward(j->steps, j->batch, j->hidden, j->reverse, j->d_out, j->w, j->c0,
                                j->cells, j->acts, j->dgx, j->dh, j->dc),
             PYRT_OK);
}

static void gru_loop_run(void *ctx)
{
    loop_job *j = ctx;
    memcpy(j->dh, j->dh_n, sizeof(float) * (size_t)(j->batch * j->hidden));
    CHECK_RC(pyrt_gru_forward(j->steps, j->batch, j->hidden, j->reverse, j->xw, j->wt, j->bias,
                              j->h0, j->out, j->acts),
             PYRT_OK);
    CHECK_RC(pyrt_gru_backward(j->steps, j->batch, j->hidden, j->reverse, j->d_out, j->w, j->h0,
                               j->out, j->acts, j->dgx, j->dgh, j->dh),
             PYRT_OK);
}

static void loop_check(void *ctx)
{
    const loop_job *j = ctx;
    const int64_t n = j->batch * j->hidden, G = (j->cells ? 4 : 3) * j->hidden;
    const int64_t total = j->steps * n, total_g = j->steps * j->batch * G;
    CHECK(memcmp(j->out, j->want_out, sizeof(float) * (size_t)total) == 0,
          "recurrence loop: outputs differ from the steps by hand");
    CHECK(memcmp(j->dgx, j->want_dgx, sizeof(float) * (size_t)total_g) == 0,
          "recurrence loop: gate gradients differ from the steps by hand");
    if (j->dgh)
        CHECK(memcmp(j->dgh, j->want_dgh, sizeof(float) * (size_t)total_g) == 0,
              "recurrence loop: hidden gate gradients differ from the steps by hand");
    CHECK(memcmp(j->dh, j->want_dh, sizeof(float) * (size_t)n) == 0,
          "recurrence loop: dh0 differs from the steps by hand");
    if (j->dc)
        CHECK(memcmp(j->dc, j->want_dc, sizeof(float) * (size_t)n) == 0,
              "recurrence loop: dc0 differs from the steps by hand");
}

/* The same steps made call by call on one thread: the loops' reference. */
static void loops_by_hand(loop_job *j, int lstm)
{
    const int64_t B = j->batch, H = j->hidden, n = B * H, G = (lstm ? 4 : 3) * H;
    float *hw = kc_floats(B * G), *dh_t = kc_floats(n), *dc[2] = {kc_floats(n), kc_floats(n)};
    float *dgh = lstm ? kc_floats(j->steps * B * G) : j->want_dgh;
    stress_set_threads(1);
    for (int64_t k = 0; k < j->steps; k++) {
        const int64_t t = j->reverse ? j->steps - 1 - k : k;
        const int64_t p = j->reverse ? t + 1 : t - 1;
        const float *h_prev = k == 0 ? j->h0 : j->want_out + p * n;
        CHECK_RC(pyrt_sgemm(0, 0, B, G, H, 1.0f, h_prev, H, j->wt, G, 0.0f, hw, G), PYRT_OK);
        if (lstm)
            CHECK_RC(pyrt_lstm_cell(j->xw + t * B * G, hw, k == 0 ? j->c0 : j->cells + p * n,
                                    j->want_out + t * n, j->cells + t * n, j->acts + t * B * G,
                                    B, H),
                     PYRT_OK);
        else
            CHECK_RC(pyrt_gru_cell(j->xw + t * B * G, hw, j->bias, h_prev, j->want_out + t * n,
                                   j->acts + t * B * 4 * H, B, H),
                     PYRT_OK);
    }
    memcpy(j->want_dh, j->dh_n, sizeof(float) * (size_t)n);
    memcpy(dc[0], j->dc_n, sizeof(float) * (size_t)n);
    for (int64_t k = j->steps - 1; k >= 0; k--) {
        const int64_t t = j->reverse ? j->steps - 1 - k : k;
        const int64_t p = j->reverse ? t + 1 : t - 1;
        for (int64_t i = 0; i < n; i++)
            dh_t[i] = j->d_out[t * n + i] + j->want_dh[i];
        if (lstm) {
            float *in = dc[(j->steps - 1 - k) % 2], *out = dc[(j->steps - k) % 2];
            CHECK_RC(pyrt_lstm_cell_backward(dh_t, in, j->acts + t * B * G, j->cells + t * n,
                                             k == 0 ? j->c0 : j->cells + p * n,
                                             j->want_dgx + t * B * G, out, B, H),
                     PYRT_OK);
            CHECK_RC(pyrt_sgemm(0, 0, B, H, G, 1.0f, j->want_dgx + t * B * G, G, j->w, H, 0.0f,
                                j->want_dh, H),
                     PYRT_OK);
        } else {
            CHECK_RC(pyrt_gru_cell_backward(dh_t, j->acts + t * B * 4 * H,
                                            k == 0 ? j->h0 : j->want_out + p * n,
                                            j->want_dgx + t * B * G, dgh + t * B * G,
                                            j->want_dh, B, H),
                     PYRT_OK);
            CHECK_RC(pyrt_sgemm(0, 0, B, H, G, 1.0f, dgh + t * B * G, G, j->w, H, 1.0f,
                                j->want_dh, H),
                     PYRT_OK);
        }
    }
    if (lstm)
        memcpy(j->want_dc, dc[j->steps % 2], sizeof(float) * (size_t)n);
    free(hw), free(dh_t), free(dc[0]), free(dc[1]);
    if (lstm)
        free(dgh);
}

static void check_recurrence(stress_rng *r, int lstm, int64_t steps, int64_t batch,
                             int64_t hidden, int reverse)
{
    const int64_t n = batch * hidden, G = (lstm ? 4 : 3) * hidden, ng = steps * batch * G;
    float *xw = kc_floats(ng), *w = kc_floats(G * hidden), *wt = kc_floats(G * hidden);
    float *bias = kc_floats(G), *h0 = kc_floats(n), *c0 = kc_floats(n);
    float *d_out = kc_floats(steps * n), *dh_n = kc_floats(n), *dc_n = kc_floats(n);
    kc_fill(r, xw, ng, -2.0f, 2.0f);
    kc_fill(r, w, G * hidden, -0.5f, 0.5f);
    for (int64_t i = 0; i < G; i++)
        for (int64_t k = 0; k < hidden; k++)
            wt[k * G + i] = w[i * hidden + k];
    kc_fill(r, bias, G, -0.5f, 0.5f);
    kc_fill(r, h0, n, -1.0f, 1.0f);
    kc_fill(r, c0, n, -1.0f, 1.0f);
    kc_fill(r, d_out, steps * n, -1.0f, 1.0f);
    kc_fill(r, dh_n, n, -1.0f, 1.0f);
    kc_fill(r, dc_n, n, -1.0f, 1.0f);
    const int64_t na = steps * batch * 4 * hidden;
    loop_job j = {.steps = steps, .batch = batch, .hidden = hidden, .reverse = reverse,
                  .xw = xw, .w = w, .wt = wt, .bias = bias, .h0 = h0, .c0 = c0, .d_out = d_out,
                  .dh_n = dh_n, .dc_n = dc_n, .out = kc_floats(steps * n),
                  .cells = lstm ? kc_floats(steps * n) : NULL, .acts = kc_floats(na),
                  .dgx = kc_floats(ng), .dgh = lstm ? NULL : kc_floats(ng), .dh = kc_floats(n),
                  .dc = lstm ? kc_floats(n) : NULL, .want_out = kc_floats(steps * n),
                  .want_dgx = kc_floats(ng), .want_dgh = lstm ? NULL : kc_floats(ng),
                  .want_dh = kc_floats(n), .want_dc = lstm ? kc_floats(n) : NULL};
    loops_by_hand(&j, lstm);
    kc_out outs[4] = {{j.out, sizeof(float) * (size_t)(steps * n)},
                      {j.dgx, sizeof(float) * (size_t)ng},
                      {j.dh, sizeof(float) * (size_t)n}};
    outs[3] = lstm ? (kc_out){j.dc, sizeof(float) * (size_t)n}
                   : (kc_out){j.dgh, sizeof(float) * (size_t)ng};
    kc_across_threads(lstm ? "lstm loops" : "gru loops", lstm ? lstm_loop_run : gru_loop_run,
                      loop_check, &j, outs, 4);
    CHECK_RC(pyrt_lstm_forward(-1, batch, hidden, 0, xw, wt, h0, c0, j.out, j.out, NULL),
             PYRT_EINVAL);
    CHECK_RC(pyrt_gru_backward(steps, batch, hidden, 0, NULL, NULL, h0, j.out, j.acts, j.dgx,
                               j.dgx, j.dh),
             PYRT_EINVAL);
    free(xw), free(w), free(wt), free(bias), free(h0), free(c0), free(d_out), free(dh_n);
    free(dc_n), free(j.out), free(j.cells), free(j.acts), free(j.dgx), free(j.dgh), free(j.dh);
    free(j.dc), free(j.want_out), free(j.want_dgx), free(j.want_dgh), free(j.want_dh);
    free(j.want_dc);
}

int main(void)
{
    double t0 = stress_now();
    stress_begin("kernels_ops");
    stress_rng rng = stress_rng_make(stress_seed(), 103);
    const int64_t big = stress_scaled(300, 60); /* rows of 203: 61 k floats at scale 1 */

    check_binary(&rng, 1, 7);
    check_binary(&rng, 37, 203);
    check_binary(&rng, big, 203);
    check_binary(&rng, big * 50, 3);       /* narrow rows: b repeated to a longer period */
    check_unary(&rng, 1, 13);
    check_unary(&rng, big, 203);

    check_reduce(&rng, 1, 1, 1, 0);
    check_reduce(&rng, 1, 1000 * big + 3, 1, 0); /* full reduction over several leaves */
    check_reduce(&rng, 37, 1001, 1, 0);           /* rows */
    check_reduce(&rng, 3, 50, 3 * big + 1, 0);    /* columns, several blocks of 256 */
    check_reduce(&rng, 5, 17, 1, 0);
    check_reduce(&rng, 4, 3000, 1, 2);            /* NaN: max is NaN, argmax its first index */
    check_reduce(&rng, 2, 40, 300, 3);

    check_softmax(&rng, 1, 1, 3.0f);
    check_softmax(&rng, 9, 10, 3.0f);
    check_softmax(&rng, big, 101, 3.0f);
    check_softmax(&rng, 17, 33, 80.0f);           /* large logits: exp must not overflow */
    check_transpose(&rng, 1, 1, 1);
    check_transpose(&rng, 3, 5, 13);              /* element by element only */
    check_transpose(&rng, 2, 37, 70);             /* 8 x 8 blocks, edges on both sides */
    check_transpose(&rng, 1, big, 203);           /* rows of tiles in parallel */
    check_transpose(&rng, 5, 64, 40);
    check_copy_blocks(&rng, 1000, 37, 9);          /* a few blocks, zeros among them */
    check_copy_blocks(&rng, 70000, 300, 1024);     /* planes in parallel */
    check_embedding_bag(&rng, 7, 3, 9, 3);         /* rows shared by many bags */
    check_embedding_bag(&rng, 300, 130, 200, 6);   /* blocks of columns, empty bags */
    check_embedding_bag(&rng, 50, 77, 40, 5);      /* columns by 64, by 8 and one by one */
    check_lstm_cell(&rng, 1, 3);                  /* the scalar tail only */
    check_lstm_cell(&rng, 16, 128);
    check_lstm_cell(&rng, big, 37);               /* rows in parallel, vectors and a tail */
    check_gru_cell(&rng, 1, 5);
    check_gru_cell(&rng, 16, 128);
    check_gru_cell(&rng, big, 37);
    for (int lstm = 0; lstm < 2; lstm++) {
        check_recurrence(&rng, lstm, 1, 3, 5, 0);
        check_recurrence(&rng, lstm, 7, 16, 37, 0);
        check_recurrence(&rng, lstm, 6, 9, 64, 1);
        /* rows in blocks run as recurrences of their own (three of 8 rows with the AVX-512
         * GEMM kernel, two of 12 and 11 with AVX2), the last block shorter */
        check_recurrence(&rng, lstm, 5, 23, 40, 1);
    }
    printf("kernels_ops: largest operand %lld floats\n", (long long)(1000 * big + 3));
    return stress_end("kernels_ops", t0);
}
