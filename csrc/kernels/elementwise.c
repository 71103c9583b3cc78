/*
 * elementwise.c - binary ops with broadcasting, unary ops and their gradients, the fused
 * bias + activation, the bias gradient (a column sum) and addcmul.
 *
 * Every kernel but the bias gradient views its data as one flat range of n = rows * cols
 * elements and hands chunks of it to pyrt_parallel_for: one pass over memory, no temporary.
 * A chunk is at least GRAIN_* elements (a few microseconds of work), so a small array is a
 * single direct call and a large one splits only when a thread is idle.
 *
 * On CPUs with AVX2 and FMA the loops run 8 floats at a time. Where a result is more than one
 * IEEE operation (exp, tanh, a gradient, addcmul) the last partial vector goes through the
 * same vector code under a mask, so every element gets the same arithmetic wherever a chunk
 * happens to start: results never depend on the thread count. A single IEEE add, sub, mul or
 * div rounds the same in scalar code, so binary ops finish with a scalar tail. Other CPUs run
 * the plain C loops, with the scalar functions of simd_math.h.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "overlap.h"
#include "pyrt.h"
#include "simd_math.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))

/* Elements per chunk: a pass over memory at 12-16 bytes per element, or a transcendental
 * function at about 0.3-0.5 ns per element, each takes a few microseconds per chunk. */
#define GRAIN_CHEAP 16384
#define GRAIN_MATH 8192

/* Row broadcasting over narrow rows repeats b up to this many floats, so the inner loops see
 * long runs rather than one short row at a time. */
#define PERIOD_TARGET 256

static int is_binary_op(int op) { return op >= PYRT_ADD && op <= PYRT_DIV; }
static int is_unary_op(int op) { return op >= PYRT_NEG && op <= PYRT_IDENTITY; }

static ALWAYS_INLINE float scalar_binary(int op, float x, float y)
{
    switch (op) {
    case PYRT_ADD: return x + y;
    case PYRT_SUB: return x - y;
    case PYRT_MUL: return x * y;
    default: return x / y;
    }
}

static ALWAYS_INLINE float scalar_unary(int op, float x)
{
    switch (op) {
    case PYRT_NEG: return -x;
    case PYRT_EXP: return simd_expf(x);
    case PYRT_LOG: return simd_logf(x);
    case PYRT_SQRT: return sqrtf(x);
    case PYRT_TANH: return simd_tanhf(x);
    case PYRT_SIGMOID: return simd_sigmoidf(x);
    case PYRT_RELU: return x <= 0.0f ? 0.0f : x; /* nan passes, as in NumPy and PyTorch */
    default: return x;
    }
}

/* PyTorch's formulas: relu passes grad where x > 0 (and where x is nan, as its
 * threshold_backward does), sigmoid grad * (1 - y) * y, tanh grad * (1 - y^2). */
static ALWAYS_INLINE float scalar_unary_backward(int op, float g, float s)
{
    switch (op) {
    case PYRT_NEG: return -g;
    case PYRT_EXP: return g * s;
    case PYRT_LOG: return g / s;
    case PYRT_SQRT: return g / (s + s);
    case PYRT_TANH: return g * (1.0f - s * s);
    case PYRT_SIGMOID: return g * (1.0f - s) * s;
    case PYRT_RELU: return s <= 0.0f ? 0.0f : g;
    default: return g;
    }
}

/* ---- loops over one contiguous run ------------------------------------------------------ */

#if SIMD_HAVE_X86

/* The first n lanes (0 <= n < 8) for the masked load and store of a loop's last vector. */
SIMD_AVX2 static ALWAYS_INLINE __m256i tail_mask(int64_t n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

SIMD_AVX2 static ALWAYS_INLINE __m256 vec_binary(int op, __m256 x, __m256 y)
{
    switch (op) {
    case PYRT_ADD: return _mm256_add_ps(x, y);
    case PYRT_SUB: return _mm256_sub_ps(x, y);
    case PYRT_MUL: return _mm256_mul_ps(x, y);
    default: return _mm256_div_ps(x, y);
    }
}

SIMD_AVX2 static ALWAYS_INLINE __m256 vec_unary(int op, __m256 x)
{
    switch (op) {
    case PYRT_NEG: return _mm256_xor_ps(x, _mm256_set1_ps(-0.0f));
    case PYRT_EXP: return simd_exp_avx2(x);
    case PYRT_LOG: return simd_log_avx2(x);
    case PYRT_SQRT: return _mm256_sqrt_ps(x);
    case PYRT_TANH: return simd_tanh_avx2(x);
    case PYRT_SIGMOID: return simd_sigmoid_avx2(x);
    case PYRT_RELU: /* keep x where !(x <= 0): positive or nan */
        return _mm256_and_ps(_mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_NLE_UQ), x);
    default: return x;
    }
}

SIMD_AVX2 static ALWAYS_INLINE __m256 vec_unary_backward(int op, __m256 g, __m256 s)
{
    __m256 one = _mm256_set1_ps(1.0f);
    switch (op) {
    case PYRT_NEG: return _mm256_xor_ps(g, _mm256_set1_ps(-0.0f));
    case PYRT_EXP: return _mm256_mul_ps(g, s);
    case PYRT_LOG: return _mm256_div_ps(g, s);
    case PYRT_SQRT: return _mm256_div_ps(g, _mm256_add_ps(s, s));
    case PYRT_TANH: return _mm256_mul_ps(g, _mm256_fnmadd_ps(s, s, one)); /* 1 - s*s, exact */
    case PYRT_SIGMOID: return _mm256_mul_ps(_mm256_mul_ps(g, _mm256_sub_ps(one, s)), s);
    case PYRT_RELU:
        return _mm256_and_ps(_mm256_cmp_ps(s, _mm256_setzero_ps(), _CMP_NLE_UQ), g);
    default: return g;
    }
}

/* o = p op q over n elements */
SIMD_AVX2 static ALWAYS_INLINE void run_vv_avx2(int op, const float *p, const float *q, float *o,
                                                int64_t n)
{
    int64_t k = 0;
    for (; k + 8 <= n; k += 8)
        _mm256_storeu_ps(o + k, vec_binary(op, _mm256_loadu_ps(p + k), _mm256_loadu_ps(q + k)));
    for (; k < n; k++)
        o[k] = scalar_binary(op, p[k], q[k]);
}

/* o = p op s (s_first == 0) or s op p over n elements */
SIMD_AVX2 static ALWAYS_INLINE void run_vs_avx2(int op, const float *p, float s, int s_first,
                                                float *o, int64_t n)
{
    __m256 sv = _mm256_set1_ps(s);
    int64_t k = 0;
    if (s_first) {
        for (; k + 8 <= n; k += 8)
            _mm256_storeu_ps(o + k, vec_binary(op, sv, _mm256_loadu_ps(p + k)));
        for (; k < n; k++)
            o[k] = scalar_binary(op, s, p[k]);
    } else {
        for (; k + 8 <= n; k += 8)
            _mm256_storeu_ps(o + k, vec_binary(op, _mm256_loadu_ps(p + k), sv));
        for (; k < n; k++)
            o[k] = scalar_binary(op, p[k], s);
    }
}

SIMD_AVX2 static void vv_avx2(int op, const float *p, const float *q, float *o, int64_t n)
{
    switch (op) {
    case PYRT_ADD: run_vv_avx2(PYRT_ADD, p, q, o, n); break;
    case PYRT_SUB: run_vv_avx2(PYRT_SUB, p, q, o, n); break;
    case PYRT_MUL: run_vv_avx2(PYRT_MUL, p, q, o, n); break;
    default: run_vv_avx2(PYRT_DIV, p, q, o, n); break;
    }
}

SIMD_AVX2 static void vs_avx2(int op, const float *p, float s, int s_first, float *o, int64_t n)
{
    switch (op) {
    case PYRT_ADD: run_vs_avx2(PYRT_ADD, p, s, s_first, o, n); break;
    case PYRT_SUB: run_vs_avx2(PYRT_SUB, p, s, s_first, o, n); break;
    case PYRT_MUL: run_vs_avx2(PYRT_MUL, p, s, s_first, o, n); break;
    default: run_vs_avx2(PYRT_DIV, p, s, s_first, o, n); break;
    }
}

/* o = act(x + bias) (bias may be NULL) or o = op(x); the tail is a masked vector */
SIMD_AVX2 static ALWAYS_INLINE void run_unary_avx2(int op, const float *x, const float *bias,
                                                   float *o, int64_t n)
{
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
        __m256 v = _mm256_loadu_ps(x + k);
        if (bias)
            v = _mm256_add_ps(v, _mm256_loadu_ps(bias + k));
        _mm256_storeu_ps(o + k, vec_unary(op, v));
    }
    if (k < n) {
        __m256i m = tail_mask(n - k);
        __m256 v = _mm256_maskload_ps(x + k, m);
        if (bias)
            v = _mm256_add_ps(v, _mm256_maskload_ps(bias + k, m));
        _mm256_maskstore_ps(o + k, m, vec_unary(op, v));
    }
}

SIMD_AVX2 static void unary_avx2(int op, const float *x, const float *bias, float *o, int64_t n)
{
    switch (op) {
    case PYRT_NEG: run_unary_avx2(PYRT_NEG, x, bias, o, n); break;
    case PYRT_EXP: run_unary_avx2(PYRT_EXP, x, bias, o, n); break;
    case PYRT_LOG: run_unary_avx2(PYRT_LOG, x, bias, o, n); break;
    case PYRT_SQRT: run_unary_avx2(PYRT_SQRT, x, bias, o, n); break;
    case PYRT_TANH: run_unary_avx2(PYRT_TANH, x, bias, o, n); break;
    case PYRT_SIGMOID: run_unary_avx2(PYRT_SIGMOID, x, bias, o, n); break;
    case PYRT_RELU: run_unary_avx2(PYRT_RELU, x, bias, o, n); break;
    default: run_unary_avx2(PYRT_IDENTITY, x, bias, o, n); break;
    }
}

SIMD_AVX2 static ALWAYS_INLINE void run_backward_avx2(int op, const float *g, const float *s,
                                                      float *o, int64_t n)
{
    int64_t k = 0;
    /* s is NULL for the ops whose gradient needs no saved values (neg, identity) */
    for (; k + 8 <= n; k += 8)
        _mm256_storeu_ps(o + k, vec_unary_backward(op, _mm256_loadu_ps(g + k),
                                                   s ? _mm256_loadu_ps(s + k)
                                                     : _mm256_setzero_ps()));
    if (k < n) {
        __m256i m = tail_mask(n - k);
        /* lanes past the end read as 0 (g / 0 there is harmless: it is never stored) */
        __m256 gv = _mm256_maskload_ps(g + k, m);
        __m256 sv = s ? _mm256_maskload_ps(s + k, m) : _mm256_setzero_ps();
        _mm256_maskstore_ps(o + k, m, vec_unary_backward(op, gv, sv));
    }
}

SIMD_AVX2 static void backward_avx2(int op, const float *g, const float *s, float *o, int64_t n)
{
    switch (op) {
    case PYRT_NEG: run_backward_avx2(PYRT_NEG, g, s, o, n); break;
    case PYRT_EXP: run_backward_avx2(PYRT_EXP, g, s, o, n); break;
    case PYRT_LOG: run_backward_avx2(PYRT_LOG, g, s, o, n); break;
    case PYRT_SQRT: run_backward_avx2(PYRT_SQRT, g, s, o, n); break;
    case PYRT_TANH: run_backward_avx2(PYRT_TANH, g, s, o, n); break;
    case PYRT_SIGMOID: run_backward_avx2(PYRT_SIGMOID, g, s, o, n); break;
    case PYRT_RELU: run_backward_avx2(PYRT_RELU, g, s, o, n); break;
    default: run_backward_avx2(PYRT_IDENTITY, g, s, o, n); break;
    }
}

/* o = c + (value * a) * b, rounded once after the multiply-add */
SIMD_AVX2 static void addcmul_avx2(const float *c, const float *a, const float *b, float value,
                                   float *o, int64_t n)
{
    __m256 v = _mm256_set1_ps(value);
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
        __m256 t = _mm256_mul_ps(v, _mm256_loadu_ps(a + k));
        _mm256_storeu_ps(o + k, _mm256_fmadd_ps(t, _mm256_loadu_ps(b + k),
                                                _mm256_loadu_ps(c + k)));
    }
    if (k < n) {
        __m256i m = tail_mask(n - k);
        __m256 t = _mm256_mul_ps(v, _mm256_maskload_ps(a + k, m));
        _mm256_maskstore_ps(o + k, m, _mm256_fmadd_ps(t, _mm256_maskload_ps(b + k, m),
                                                      _mm256_maskload_ps(c + k, m)));
    }
}

#endif /* SIMD_HAVE_X86 */

static void vv_scalar(int op, const float *p, const float *q, float *o, int64_t n)
{
    for (int64_t k = 0; k < n; k++)
        o[k] = scalar_binary(op, p[k], q[k]);
}

static void vs_scalar(int op, const float *p, float s, int s_first, float *o, int64_t n)
{
    for (int64_t k = 0; k < n; k++)
        o[k] = s_first ? scalar_binary(op, s, p[k]) : scalar_binary(op, p[k], s);
}

static void run_vv(int op, const float *p, const float *q, float *o, int64_t n)
{
#if SIMD_HAVE_X86
    if (simd_cpu_has_avx2_fma()) {
        vv_avx2(op, p, q, o, n);
        return;
    }
#endif
    vv_scalar(op, p, q, o, n);
}

static void run_vs(int op, const float *p, float s, int s_first, float *o, int64_t n)
{
#if SIMD_HAVE_X86
    if (simd_cpu_has_avx2_fma()) {
        vs_avx2(op, p, s, s_first, o, n);
        return;
    }
#endif
    vs_scalar(op, p, s, s_first, o, n);
}

static void run_unary(int op, const float *x, const float *bias, float *o, int64_t n)
{
#if SIMD_HAVE_X86
    if (simd_cpu_has_avx2_fma()) {
        unary_avx2(op, x, bias, o, n);
        return;
    }
#endif
    for (int64_t k = 0; k < n; k++)
        o[k] = scalar_unary(op, bias ? x[k] + bias[k] : x[k]);
}

/* ---- binary ops ------------------------------------------------------------------------- */

typedef struct binary_ctx {
    int op, bcast, swap;
    const float *a, *b;
    float *out;
    int64_t cols;
    const float *period; /* PYRT_BCAST_ROW: b repeated, period_len a multiple of cols */
    int64_t period_len;
} binary_ctx;

/* Fill rep with whole copies of row[0, cols), as many as fit in PERIOD_TARGET floats. */
static int64_t repeat_row(const float *row, int64_t cols, float *rep)
{
    int64_t len = 0;
    while (len + cols <= PERIOD_TARGET) {
        memcpy(rep + len, row, (size_t)cols * sizeof *rep);
        len += cols;
    }
    return len;
}

static int binary_body(void *vctx, int64_t start, int64_t stop)
{
    const binary_ctx *c = vctx;
    const float *a = c->a;
    float *out = c->out;
    switch (c->bcast) {
    case PYRT_BCAST_NONE:
        if (c->swap)
            run_vv(c->op, c->b + start, a + start, out + start, stop - start);
        else
            run_vv(c->op, a + start, c->b + start, out + start, stop - start);
        break;
    case PYRT_BCAST_SCALAR:
        run_vs(c->op, a + start, c->b[0], c->swap, out + start, stop - start);
        break;
    case PYRT_BCAST_ROW:
        /* runs from i to the end of the period (or the chunk), b read from the same offset */
        for (int64_t i = start; i < stop;) {
            int64_t off = i % c->period_len;
            int64_t len = c->period_len - off < stop - i ? c->period_len - off : stop - i;
            if (c->swap)
                run_vv(c->op, c->period + off, a + i, out + i, len);
            else
                run_vv(c->op, a + i, c->period + off, out + i, len);
            i += len;
        }
        break;
    default: /* PYRT_BCAST_COL: one run per row, against the scalar b[row] */
        for (int64_t i = start; i < stop;) {
            int64_t row = i / c->cols;
            int64_t len = (row + 1) * c->cols - i < stop - i ? (row + 1) * c->cols - i : stop - i;
            run_vs(c->op, a + i, c->b[row], c->swap, out + i, len);
            i += len;
        }
        break;
    }
    return 0;
}

int pyrt_binary(int op, const float *a, const float *b, float *out, int64_t rows, int64_t cols,
                int bcast, int swap)
{
    if (!is_binary_op(op) || bcast < PYRT_BCAST_NONE || bcast > PYRT_BCAST_COL || rows < 0 ||
        cols < 0)
        return PYRT_EINVAL;
    int64_t n = rows * cols;
    if (n == 0)
        return PYRT_OK;
    if (!a || !b || !out)
        return PYRT_EINVAL;
    /* a single row or column is plainer as another mode; this also keeps every allowed
     * aliasing of out with b element-for-element */
    if (bcast == PYRT_BCAST_ROW && cols == 1)
        bcast = PYRT_BCAST_SCALAR;
    else if (bcast == PYRT_BCAST_ROW && rows == 1)
        bcast = PYRT_BCAST_NONE;
    else if (bcast == PYRT_BCAST_COL && rows == 1)
        bcast = PYRT_BCAST_SCALAR;
    else if (bcast == PYRT_BCAST_COL && cols == 1)
        bcast = PYRT_BCAST_NONE;
    const int64_t nb = bcast == PYRT_BCAST_NONE ? n
                       : bcast == PYRT_BCAST_SCALAR ? 1 : bcast == PYRT_BCAST_ROW ? cols : rows;
    if (overlaps_partly(out, n, a, n) || overlaps_partly(out, n, b, nb))
        return PYRT_EOVERLAP;

    float rep[PERIOD_TARGET];
    binary_ctx c = {op, bcast, swap != 0, a, b, out, cols, b, cols};
    if (bcast == PYRT_BCAST_ROW && cols < PERIOD_TARGET / 4 && n >= 4 * PERIOD_TARGET) {
        c.period = rep;
        c.period_len = repeat_row(b, cols, rep);
    }
    return pyrt_parallel_for(n, GRAIN_CHEAP, binary_body, &c);
}

/* ---- unary ops, their gradients, bias + activation -------------------------------------- */

typedef struct unary_ctx {
    int op;
    const float *x, *saved, *bias;
    float *out;
    int64_t period_len; /* bias: a multiple of cols; bias is repeated to that length */
} unary_ctx;

static int unary_body(void *vctx, int64_t start, int64_t stop)
{
    const unary_ctx *c = vctx;
    run_unary(c->op, c->x + start, NULL, c->out + start, stop - start);
    return 0;
}

static int64_t unary_grain(int op)
{
    switch (op) {
    case PYRT_EXP:
    case PYRT_LOG:
    case PYRT_TANH:
    case PYRT_SIGMOID: return GRAIN_MATH;
    default: return GRAIN_CHEAP;
    }
}

int pyrt_unary(int op, const float *x, float *out, int64_t n)
{
    if (!is_unary_op(op) || n < 0)
        return PYRT_EINVAL;
    if (n == 0)
        return PYRT_OK;
    if (!x || !out)
        return PYRT_EINVAL;
    if (overlaps_partly(out, n, x, n))
        return PYRT_EOVERLAP;
    unary_ctx c = {op, x, NULL, NULL, out, 0};
    return pyrt_parallel_for(n, unary_grain(op), unary_body, &c);
}

static int backward_body(void *vctx, int64_t start, int64_t stop)
{
    const unary_ctx *c = vctx;
    const float *g = c->x + start;
    const float *s = c->saved ? c->saved + start : NULL;
    float *o = c->out + start;
    int64_t n = stop - start;
#if SIMD_HAVE_X86
    if (simd_cpu_has_avx2_fma()) {
        backward_avx2(c->op, g, s, o, n);
        return 0;
    }
#endif
    for (int64_t k = 0; k < n; k++)
        o[k] = scalar_unary_backward(c->op, g[k], s ? s[k] : 0.0f);
    return 0;
}

int pyrt_unary_backward(int op, const float *grad, const float *saved, float *out, int64_t n)
{
    if (!is_unary_op(op) || n < 0)
        return PYRT_EINVAL;
    if (n == 0)
        return PYRT_OK;
    int needs_saved = op != PYRT_NEG && op != PYRT_IDENTITY;
    if (!grad || !out || (needs_saved && !saved))
        return PYRT_EINVAL;
    if (overlaps_partly(out, n, grad, n) || (needs_saved && overlaps_partly(out, n, saved, n)))
        return PYRT_EOVERLAP;
    unary_ctx c = {op, grad, needs_saved ? saved : NULL, NULL, out, 0};
    return pyrt_parallel_for(n, GRAIN_CHEAP, backward_body, &c);
}

static int bias_act_body(void *vctx, int64_t start, int64_t stop)
{
    const unary_ctx *c = vctx;
    for (int64_t i = start; i < stop;) {
        int64_t off = i % c->period_len;
        int64_t len = c->period_len - off < stop - i ? c->period_len - off : stop - i;
        run_unary(c->op, c->x + i, c->bias + off, c->out + i, len);
        i += len;
    }
    return 0;
}

int pyrt_bias_act(const float *x, const float *bias, float *out, int64_t rows, int64_t cols,
                  int act)
{
    if ((act != PYRT_IDENTITY && act != PYRT_RELU && act != PYRT_SIGMOID && act != PYRT_TANH) ||
        rows < 0 || cols < 0)
        return PYRT_EINVAL;
    int64_t n = rows * cols;
    if (n == 0)
        return PYRT_OK;
    if (!x || !out)
        return PYRT_EINVAL;
    if (!bias)
        return pyrt_unary(act, x, out, n);
    if (overlaps_partly(out, n, x, n) || overlaps_partly(out, n, bias, cols))
        return PYRT_EOVERLAP;
    float rep[PERIOD_TARGET];
    unary_ctx c = {act, x, NULL, bias, out, cols};
    if (cols < PERIOD_TARGET / 4 && n >= 4 * PERIOD_TARGET) {
        c.bias = rep;
        c.period_len = repeat_row(bias, cols, rep);
    }
    int64_t grain = act == PYRT_IDENTITY || act == PYRT_RELU ? GRAIN_CHEAP : GRAIN_MATH;
    return pyrt_parallel_for(n, grain, bias_act_body, &c);
}

/* ---- bias gradient: a deterministic column sum ------------------------------------------ */

/* The rows are cut into blocks of BG_ROWS and the columns into blocks of BG_COLS. Each tile
 * sums its rows in order into a row of partial sums (block 0 straight into out), tiles run in
 * parallel, then the partial rows of each column merge in a fixed binary tree. Both cuts
 * depend on the shape alone, so the result is the same at any thread count; the sum of each
 * column is sequential within 512 rows and pairwise above, more accurate than either alone. */
#define BG_ROWS 512
#define BG_COLS 256

typedef struct bias_grad_ctx {
    const float *grad;
    float *out, *tmp;
    int64_t rows, cols, row_blocks, col_blocks;
} bias_grad_ctx;

static float *bg_partial(const bias_grad_ctx *c, int64_t rb)
{
    return rb == 0 ? c->out : c->tmp + (rb - 1) * c->cols;
}

/* Column sums of rows [r0, r1) over columns [c0, c0 + w); adds are exact IEEE ops in column
 * order, so the compiler's vectorisation cannot change the result. */
static ALWAYS_INLINE void bg_tile(const float *grad, int64_t cols, int64_t r0, int64_t r1,
                                  int64_t c0, int64_t w, float *dst)
{
    float acc[BG_COLS];
    memcpy(acc, grad + r0 * cols + c0, (size_t)w * sizeof *acc);
    for (int64_t r = r0 + 1; r < r1; r++) {
        const float *row = grad + r * cols + c0;
        for (int64_t j = 0; j < w; j++)
            acc[j] += row[j];
    }
    memcpy(dst, acc, (size_t)w * sizeof *acc);
}

#if SIMD_HAVE_X86
SIMD_AVX2 static void bg_tile_avx2(const float *grad, int64_t cols, int64_t r0, int64_t r1,
                                   int64_t c0, int64_t w, float *dst)
{
    bg_tile(grad, cols, r0, r1, c0, w, dst);
}
#endif

static void bg_tile_scalar(const float *grad, int64_t cols, int64_t r0, int64_t r1, int64_t c0,
                           int64_t w, float *dst)
{
    bg_tile(grad, cols, r0, r1, c0, w, dst);
}

static int bg_tiles_body(void *vctx, int64_t start, int64_t stop)
{
    const bias_grad_ctx *c = vctx;
    for (int64_t t = start; t < stop; t++) {
        int64_t rb = t / c->col_blocks, cb = t % c->col_blocks;
        int64_t r0 = rb * BG_ROWS, r1 = r0 + BG_ROWS < c->rows ? r0 + BG_ROWS : c->rows;
        int64_t c0 = cb * BG_COLS, w = c0 + BG_COLS < c->cols ? BG_COLS : c->cols - c0;
        float *dst = bg_partial(c, rb) + c0;
#if SIMD_HAVE_X86
        if (simd_cpu_has_avx2_fma()) {
            bg_tile_avx2(c->grad, c->cols, r0, r1, c0, w, dst);
            continue;
        }
#endif
        bg_tile_scalar(c->grad, c->cols, r0, r1, c0, w, dst);
    }
    return 0;
}

/* Merge partial rows pairwise, stride 1, 2, 4, ...: block b absorbs block b + s. */
static int bg_merge_body(void *vctx, int64_t start, int64_t stop)
{
    const bias_grad_ctx *c = vctx;
    for (int64_t s = 1; s < c->row_blocks; s *= 2)
        for (int64_t b = 0; b + s < c->row_blocks; b += 2 * s) {
            float *dst = bg_partial(c, b);
            const float *src = bg_partial(c, b + s);
            for (int64_t j = start; j < stop; j++)
                dst[j] += src[j];
        }
    return 0;
}

int pyrt_bias_grad(const float *grad, float *out, int64_t rows, int64_t cols)
{
    if (rows < 0 || cols < 0)
        return PYRT_EINVAL;
    if (cols == 0)
        return PYRT_OK;
    if (!out || (rows > 0 && !grad))
        return PYRT_EINVAL;
    if (rows == 0) {
        memset(out, 0, (size_t)cols * sizeof *out);
        return PYRT_OK;
    }
    bias_grad_ctx c = {grad, out, NULL, rows, cols, (rows + BG_ROWS - 1) / BG_ROWS,
                       (cols + BG_COLS - 1) / BG_COLS};
    if (c.row_blocks > 1) {
        c.tmp = pyrt_buffer_alloc((size_t)(c.row_blocks - 1) * (size_t)cols * sizeof *c.tmp);
        if (!c.tmp)
            return PYRT_ENOMEM;
    }
    int64_t tile = (rows < BG_ROWS ? rows : BG_ROWS) * (cols < BG_COLS ? cols : BG_COLS);
    int64_t grain = tile >= GRAIN_CHEAP ? 1 : GRAIN_CHEAP / tile;
    int rc = pyrt_parallel_for(c.row_blocks * c.col_blocks, grain, bg_tiles_body, &c);
    if (rc == 0 && c.row_blocks > 1) {
        int64_t merge_grain = GRAIN_CHEAP / c.row_blocks > 64 ? GRAIN_CHEAP / c.row_blocks : 64;
        rc = pyrt_parallel_for(cols, merge_grain, bg_merge_body, &c);
    }
    pyrt_buffer_free(c.tmp);
    return rc;
}

/* ---- addcmul ---------------------------------------------------------------------------- */

typedef struct addcmul_ctx {
    const float *c, *a, *b;
    float value;
    float *out;
} addcmul_ctx;

static int addcmul_body(void *vctx, int64_t start, int64_t stop)
{
    const addcmul_ctx *x = vctx;
#if SIMD_HAVE_X86
    if (simd_cpu_has_avx2_fma()) {
        addcmul_avx2(x->c + start, x->a + start, x->b + start, x->value, x->out + start,
                     stop - start);
        return 0;
    }
#endif
    for (int64_t k = start; k < stop; k++)
        x->out[k] = x->c[k] + x->value * x->a[k] * x->b[k];
    return 0;
}

int pyrt_addcmul(const float *c, const float *a, const float *b, float value, float *out,
                 int64_t n)
{
    if (n < 0)
        return PYRT_EINVAL;
    if (n == 0)
        return PYRT_OK;
    if (!c || !a || !b || !out)
        return PYRT_EINVAL;
    if (overlaps_partly(out, n, c, n) || overlaps_partly(out, n, a, n)
        || overlaps_partly(out, n, b, n))
        return PYRT_EOVERLAP;
    addcmul_ctx x = {c, a, b, value, out};
    return pyrt_parallel_for(n, GRAIN_CHEAP, addcmul_body, &x);
}
