/*
 * optim.c - fused SGD and Adam updates: one pass over each parameter and its state.
 *
 * Each step follows the order of operations of PyTorch's single-tensor implementations
 * (torch/optim/sgd.py and adam.py, foreach=False), so results agree to float32 rounding:
 *
 *   SGD   g = grad + wd * param
 *         buf = g (first step), else buf = momentum * buf + (1 - dampening) * g
 *         g = nesterov ? g + momentum * buf : buf
 *         param = param - lr * g
 *   Adam  g = grad + wd * param
 *         m = lerp(m, g, 1 - beta1)               (m + w (g - m), PyTorch's lerp_)
 *         v = beta2 * v + (1 - beta2) * g * g
 *         param = param - step_size * m / (sqrt(v) / sqrt(bias_correction2) + eps)
 *         with step_size = lr / bias_correction1, bias_correction_i = 1 - beta_i^step
 *
 * One departure: momentum buffers and Adam's moments smaller than FLT_MIN in magnitude are
 * stored as zero. A state that decays geometrically, as it does for a parameter whose gradient
 * stays zero (the weights of a ReLU unit that never fires), would otherwise spend a hundred
 * steps or more among subnormal numbers, each of which costs the CPU a microcode assist of
 * about a hundred cycles (on a Xeon the MLP's SGD step, 100k parameters, took 868 us instead of
 * 42). PyTorch keeps them; the difference is under 1.2e-38 in the state and nothing in the
 * parameters, whose updates of that size round away.
 *
 * Hyper-parameters come in double precision, as Python holds them: 1 - beta magnifies any
 * earlier rounding by 1 / (1 - beta) (float(0.999) would make 1 - beta2 1.3e-5 away from 0.001).
 * The per-step scalars are computed once per call in double and rounded to float. Chunks of
 * GRAIN elements run in parallel; with AVX2 and FMA every element, the last partial vector
 * included, goes through the same vector code.
 */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "overlap.h"
#include "pyrt.h"
#include "simd_math.h"

/* Elements per chunk: an update streams 3 to 5 arrays, a few microseconds per chunk. */
#define GRAIN 8192

/* x, or 0 where |x| < FLT_MIN (a subnormal): see the note at the top. NaN stays NaN. */
static inline float flush_tiny(float x)
{
    return fabsf(x) < FLT_MIN ? 0.0f : x;
}

#if SIMD_HAVE_X86
SIMD_AVX2 static inline __m256 flush_tiny_avx2(__m256 x)
{
    /* keep the lanes whose magnitude is not below FLT_MIN: unordered (NaN) counts as not below */
    const __m256 mag = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
    return _mm256_and_ps(x, _mm256_cmp_ps(mag, _mm256_set1_ps(FLT_MIN), _CMP_NLT_UQ));
}
#endif

/* ---- SGD -------------------------------------------------------------------------------- */

typedef struct sgd_ctx {
    float *param, *buf;
    const float *grad;
    float lr, momentum, keep, wd; /* keep = 1 - dampening */
    int nesterov, first_step;
} sgd_ctx;

#if SIMD_HAVE_X86
SIMD_AVX2 static inline __m256 sgd_vec(const sgd_ctx *c, __m256 p, __m256 g, float *buf,
                                       __m256i mask, int full)
{
    if (c->wd != 0.0f)
        g = _mm256_fmadd_ps(p, _mm256_set1_ps(c->wd), g);
    if (c->momentum != 0.0f) {
        __m256 mom = _mm256_set1_ps(c->momentum);
        __m256 b;
        if (c->first_step) {
            b = g;
        } else {
            b = full ? _mm256_loadu_ps(buf) : _mm256_maskload_ps(buf, mask);
            b = _mm256_fmadd_ps(g, _mm256_set1_ps(c->keep), _mm256_mul_ps(b, mom));
        }
        b = flush_tiny_avx2(b);
        if (full)
            _mm256_storeu_ps(buf, b);
        else
            _mm256_maskstore_ps(buf, mask, b);
        g = c->nesterov ? _mm256_fmadd_ps(b, mom, g) : b;
    }
    return _mm256_fmadd_ps(g, _mm256_set1_ps(-c->lr), p);
}

SIMD_AVX2 static void sgd_avx2(const sgd_ctx *c, int64_t start, int64_t stop)
{
    __m256i all = _mm256_set1_epi32(-1);
    int64_t k = start;
    for (; k + 8 <= stop; k += 8) {
        __m256 p = _mm256_loadu_ps(c->param + k);
        __m256 r = sgd_vec(c, p, _mm256_loadu_ps(c->grad + k), c->buf ? c->buf + k : NULL, all,
                           1);
        _mm256_storeu_ps(c->param + k, r);
    }
    if (k < stop) {
        __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(stop - k)),
                                       _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        __m256 p = _mm256_maskload_ps(c->param + k, m);
        __m256 r = sgd_vec(c, p, _mm256_maskload_ps(c->grad + k, m),
                           c->buf ? c->buf + k : NULL, m, 0);
        _mm256_maskstore_ps(c->param + k, m, r);
    }
}
#endif

static int sgd_body(void *vctx, int64_t start, int64_t stop)
{
    const sgd_ctx *c = vctx;
#if SIMD_HAVE_X86
    if (simd_cpu_has_avx2_fma()) {
        sgd_avx2(c, start, stop);
        return 0;
    }
#endif
    for (int64_t k = start; k < stop; k++) {
        float g = c->wd != 0.0f ? c->grad[k] + c->wd * c->param[k] : c->grad[k];
        if (c->momentum != 0.0f) {
            float b = flush_tiny(c->first_step ? g : c->buf[k] * c->momentum + c->keep * g);
            c->buf[k] = b;
            g = c->nesterov ? g + c->momentum * b : b;
        }
        c->param[k] -= c->lr * g;
    }
    return 0;
}

int pyrt_sgd_step(float *param, const float *grad, float *momentum_buf, int64_t n, double lr,
                  double momentum, double dampening, double weight_decay, int nesterov,
                  int first_step)
{
    if (n < 0)
        return PYRT_EINVAL;
    if (n == 0)
        return PYRT_OK;
    if (!param || !grad || (momentum != 0.0 && !momentum_buf))
        return PYRT_EINVAL;
    if (momentum == 0.0)
        momentum_buf = NULL;
    /* the parameter and its buffer are both written: they may not meet; the gradient, only
     * read, may be one of them exactly */
    if (overlaps_partly(param, n, grad, n)
        || (momentum_buf && (ranges_meet(param, n, momentum_buf, n)
                             || overlaps_partly(momentum_buf, n, grad, n))))
        return PYRT_EOVERLAP;
    sgd_ctx c = {param,           momentum_buf,
                 grad,            (float)lr,
                 (float)momentum, (float)(1.0 - dampening),
                 (float)weight_decay, nesterov != 0,
                 first_step != 0};
    return pyrt_parallel_for(n, GRAIN, sgd_body, &c);
}

/* ---- Adam ------------------------------------------------------------------------------- */

typedef struct adam_ctx {
    float *param, *m, *v;
    const float *grad;
    float wd, w1, beta2, w2; /* w1 = 1 - beta1 (lerp weight), w2 = 1 - beta2 */
    float neg_step_size, bc2_sqrt, eps;
} adam_ctx;

#if SIMD_HAVE_X86
SIMD_AVX2 static inline void adam_vec(const adam_ctx *c, __m256 *p, __m256 g, __m256 *m,
                                      __m256 *v)
{
    if (c->wd != 0.0f)
        g = _mm256_fmadd_ps(*p, _mm256_set1_ps(c->wd), g);
    /* lerp as PyTorch computes it: from m for a small weight, from g for a large one */
    __m256 d = _mm256_sub_ps(g, *m);
    if (c->w1 < 0.5f)
        *m = _mm256_fmadd_ps(_mm256_set1_ps(c->w1), d, *m);
    else
        *m = _mm256_fnmadd_ps(d, _mm256_set1_ps(1.0f - c->w1), g);
    *m = flush_tiny_avx2(*m);
    __m256 vb = _mm256_mul_ps(*v, _mm256_set1_ps(c->beta2));
    *v = flush_tiny_avx2(_mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(c->w2), g), g, vb));
    __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(*v), _mm256_set1_ps(c->bc2_sqrt)),
                                 _mm256_set1_ps(c->eps));
    *p = _mm256_add_ps(*p, _mm256_div_ps(_mm256_mul_ps(_mm256_set1_ps(c->neg_step_size), *m),
                                         denom));
}

SIMD_AVX2 static void adam_avx2(const adam_ctx *c, int64_t start, int64_t stop)
{
    int64_t k = start;
    for (; k + 8 <= stop; k += 8) {
        __m256 p = _mm256_loadu_ps(c->param + k);
        __m256 m = _mm256_loadu_ps(c->m + k), v = _mm256_loadu_ps(c->v + k);
        adam_vec(c, &p, _mm256_loadu_ps(c->grad + k), &m, &v);
        _mm256_storeu_ps(c->param + k, p);
        _mm256_storeu_ps(c->m + k, m);
        _mm256_storeu_ps(c->v + k, v);
    }
    if (k < stop) {
        __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(stop - k)),
                                          _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        __m256 p = _mm256_maskload_ps(c->param + k, mask);
        __m256 m = _mm256_maskload_ps(c->m + k, mask), v = _mm256_maskload_ps(c->v + k, mask);
        adam_vec(c, &p, _mm256_maskload_ps(c->grad + k, mask), &m, &v);
        _mm256_maskstore_ps(c->param + k, mask, p);
        _mm256_maskstore_ps(c->m + k, mask, m);
        _mm256_maskstore_ps(c->v + k, mask, v);
    }
}
#endif

static int adam_body(void *vctx, int64_t start, int64_t stop)
{
    const adam_ctx *c = vctx;
#if SIMD_HAVE_X86
    if (simd_cpu_has_avx2_fma()) {
        adam_avx2(c, start, stop);
        return 0;
    }
#endif
    for (int64_t k = start; k < stop; k++) {
        float g = c->wd != 0.0f ? c->grad[k] + c->wd * c->param[k] : c->grad[k];
        float m = c->m[k], d = g - m;
        m = flush_tiny(c->w1 < 0.5f ? m + c->w1 * d : g - d * (1.0f - c->w1));
        float v = flush_tiny(c->v[k] * c->beta2 + c->w2 * g * g);
        c->m[k] = m;
        c->v[k] = v;
        c->param[k] += c->neg_step_size * m / (sqrtf(v) / c->bc2_sqrt + c->eps);
    }
    return 0;
}

int pyrt_adam_step(float *param, const float *grad, float *m, float *v, int64_t n, double lr,
                   double beta1, double beta2, double eps, double weight_decay, int64_t step)
{
    if (n < 0 || step < 1)
        return PYRT_EINVAL;
    if (n == 0)
        return PYRT_OK;
    if (!param || !grad || !m || !v)
        return PYRT_EINVAL;
    /* param, m and v are written: no two may meet; grad may be one of them exactly */
    if (ranges_meet(param, n, m, n) || ranges_meet(param, n, v, n) || ranges_meet(m, n, v, n)
        || overlaps_partly(param, n, grad, n) || overlaps_partly(m, n, grad, n)
        || overlaps_partly(v, n, grad, n))
        return PYRT_EOVERLAP;
    double b1 = beta1, b2 = beta2;
    double bc1 = 1.0 - pow(b1, (double)step);
    double bc2 = 1.0 - pow(b2, (double)step);
    adam_ctx c = {param, m, v, grad, (float)weight_decay, (float)(1.0 - b1), (float)beta2,
                  (float)(1.0 - b2), (float)(-(lr / bc1)), (float)sqrt(bc2), (float)eps};
    return pyrt_parallel_for(n, GRAIN, adam_body, &c);
}
