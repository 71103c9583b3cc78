/*
 * gru_cell.c - the pointwise part of one GRU step, forward and backward, in one pass.
 *
 * A GRU step has two projections, gx = W_ih x + b_ih and gh = W_hh h_prev (b_hh added here),
 * each [r, z, n] in PyTorch's order, and then
 *
 *     r = sigmoid(gx_r + gh_r)    z = sigmoid(gx_z + gh_z)
 *     n = tanh(gx_n + r * gh_n)   h = (1 - z) n + z h_prev
 *
 * one pass that keeps r, z, n and gh_n for the backward pass, which is one pass too:
 *
 *     dn' = dh (1 - z) (1 - n^2)      (the gradient of n's pre-activation)
 *     dr' = dn' gh_n r (1 - r)        dz' = dh (h_prev - n) z (1 - z)
 *     dgx = [dr', dz', dn']           dgh = [dr', dz', dn' r]
 *     dh_prev = dh z                  (the caller adds dgh W_hh)
 *
 * Rows run in parallel; each element is computed by the same instructions whatever the chunk
 * it falls in (AVX2 vectors of 8 along a row, then the row's tail in scalars), so the results
 * are bitwise the same at any thread count.
 */
#include <stddef.h>
#include <stdint.h>

#include "cell_rows.h"
#include "pyrt.h"
#include "simd_math.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))
#define GRAIN_ELEMENTS 1024 /* elements of h per chunk: three exp-like functions each */

typedef struct gru_job {
    const float *gx, *gh, *bias, *h_prev, *dh, *act;
    float *h, *act_out, *dgx, *dgh, *dh_prev;
    int64_t hidden;
} gru_job;

/* ---- one element, scalar -------------------------------------------------------------- */

static ALWAYS_INLINE float hidden_gate(const float *gh, const float *bias, int64_t at)
{
    return bias ? gh[at] + bias[at] : gh[at];
}

static ALWAYS_INLINE void forward_one(const float *gx, const float *gh, const float *bias,
                                      int64_t H, float hp, float *h, float *act)
{
    const float r = simd_sigmoidf(gx[0] + hidden_gate(gh, bias, 0));
    const float z = simd_sigmoidf(gx[H] + hidden_gate(gh, bias, H));
    const float hn = hidden_gate(gh, bias, 2 * H);
    const float n = simd_tanhf(gx[2 * H] + r * hn);
    *h = (1.0f - z) * n + z * hp;
    act[0] = r;
    act[H] = z;
    act[2 * H] = n;
    act[3 * H] = hn;
}

static ALWAYS_INLINE void backward_one(const float *a, int64_t H, float dh, float hp, float *dgx,
                                       float *dgh, float *dhp)
{
    const float r = a[0], z = a[H], n = a[2 * H], hn = a[3 * H];
    const float dn = dh * (1.0f - z) * (1.0f - n * n);
    const float dr = dn * hn * r * (1.0f - r);
    const float dz = dh * (hp - n) * z * (1.0f - z);
    dgx[0] = dr;
    dgx[H] = dz;
    dgx[2 * H] = dn;
    dgh[0] = dr;
    dgh[H] = dz;
    dgh[2 * H] = dn * r;
    *dhp = dh * z;
}

/* ---- eight elements, AVX2 ------------------------------------------------------------- */

#if SIMD_HAVE_X86

SIMD_AVX2 static ALWAYS_INLINE __m256 hidden_gate8(const float *gh, const float *bias,
                                                   int64_t at)
{
    const __m256 v = _mm256_loadu_ps(gh + at);
    return bias ? _mm256_add_ps(v, _mm256_loadu_ps(bias + at)) : v;
}

SIMD_AVX2 static void forward_row_avx2(const float *gx, const float *gh, const float *bias,
                                       const float *hp, float *h, float *act, int64_t H)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    int64_t j = 0;
    for (; j + 8 <= H; j += 8) {
        const __m256 r = simd_sigmoid_avx2(
            _mm256_add_ps(_mm256_loadu_ps(gx + j), hidden_gate8(gh, bias, j)));
        const __m256 z = simd_sigmoid_avx2(
            _mm256_add_ps(_mm256_loadu_ps(gx + H + j), hidden_gate8(gh, bias, H + j)));
        const __m256 hn = hidden_gate8(gh, bias, 2 * H + j);
        const __m256 n = simd_tanh_avx2(
            _mm256_add_ps(_mm256_loadu_ps(gx + 2 * H + j), _mm256_mul_ps(r, hn)));
        /* (no FMA: the scalar tail rounds each product and sum too) */
        _mm256_storeu_ps(h + j, _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(one, z), n),
                                              _mm256_mul_ps(z, _mm256_loadu_ps(hp + j))));
        _mm256_storeu_ps(act + j, r);
        _mm256_storeu_ps(act + H + j, z);
        _mm256_storeu_ps(act + 2 * H + j, n);
        _mm256_storeu_ps(act + 3 * H + j, hn);
    }
    for (; j < H; j++)
        forward_one(gx + j, gh + j, bias ? bias + j : NULL, H, hp[j], h + j, act + j);
}

SIMD_AVX2 static void backward_row_avx2(const float *a, const float *dh, const float *hp,
                                        float *dgx, float *dgh, float *dhp, int64_t H)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    int64_t j = 0;
    for (; j + 8 <= H; j += 8) {
        const __m256 r = _mm256_loadu_ps(a + j), z = _mm256_loadu_ps(a + H + j);
        const __m256 n = _mm256_loadu_ps(a + 2 * H + j), hn = _mm256_loadu_ps(a + 3 * H + j);
        const __m256 g = _mm256_loadu_ps(dh + j);
        /* each product in the scalar order, left to right, so that both forms agree */
        const __m256 dn = _mm256_mul_ps(_mm256_mul_ps(g, _mm256_sub_ps(one, z)),
                                        _mm256_sub_ps(one, _mm256_mul_ps(n, n)));
        const __m256 dr = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(dn, hn), r),
                                        _mm256_sub_ps(one, r));
        const __m256 dz = _mm256_mul_ps(
            _mm256_mul_ps(_mm256_mul_ps(g, _mm256_sub_ps(_mm256_loadu_ps(hp + j), n)), z),
            _mm256_sub_ps(one, z));
        _mm256_storeu_ps(dgx + j, dr);
        _mm256_storeu_ps(dgx + H + j, dz);
        _mm256_storeu_ps(dgx + 2 * H + j, dn);
        _mm256_storeu_ps(dgh + j, dr);
        _mm256_storeu_ps(dgh + H + j, dz);
        _mm256_storeu_ps(dgh + 2 * H + j, _mm256_mul_ps(dn, r));
        _mm256_storeu_ps(dhp + j, _mm256_mul_ps(g, z));
    }
    for (; j < H; j++)
        backward_one(a + j, H, dh[j], hp[j], dgx + j, dgh + j, dhp + j);
}

#endif

/* ---- rows ----------------------------------------------------------------------------- */

static int forward_rows(void *ctx, int64_t start, int64_t stop)
{
    const gru_job *j = ctx;
    const int64_t H = j->hidden;
#if SIMD_HAVE_X86
    const int avx2 = simd_cpu_has_avx2_fma();
#endif
    for (int64_t r = start; r < stop; r++) {
        const float *gx = j->gx + r * 3 * H, *gh = j->gh + r * 3 * H, *hp = j->h_prev + r * H;
        float *h = j->h + r * H, *act = j->act_out + r * 4 * H;
#if SIMD_HAVE_X86
        if (avx2) {
            forward_row_avx2(gx, gh, j->bias, hp, h, act, H);
            continue;
        }
#endif
        for (int64_t k = 0; k < H; k++)
            forward_one(gx + k, gh + k, j->bias ? j->bias + k : NULL, H, hp[k], h + k, act + k);
    }
    return 0;
}

static int backward_rows(void *ctx, int64_t start, int64_t stop)
{
    const gru_job *j = ctx;
    const int64_t H = j->hidden;
#if SIMD_HAVE_X86
    const int avx2 = simd_cpu_has_avx2_fma();
#endif
    for (int64_t r = start; r < stop; r++) {
        const float *a = j->act + r * 4 * H, *dh = j->dh + r * H, *hp = j->h_prev + r * H;
        float *dgx = j->dgx + r * 3 * H, *dgh = j->dgh + r * 3 * H, *dhp = j->dh_prev + r * H;
#if SIMD_HAVE_X86
        if (avx2) {
            backward_row_avx2(a, dh, hp, dgx, dgh, dhp, H);
            continue;
        }
#endif
        for (int64_t k = 0; k < H; k++)
            backward_one(a + k, H, dh[k], hp[k], dgx + k, dgh + k, dhp + k);
    }
    return 0;
}

void gru_cell_rows(const float *gates_x, const float *gates_h, const float *bias_h,
                   const float *h_prev, float *h, float *act, int64_t rows, int64_t hidden)
{
    gru_job j = {.gx = gates_x, .gh = gates_h, .bias = bias_h, .h_prev = h_prev, .h = h,
                 .act_out = act, .hidden = hidden};
    (void)forward_rows(&j, 0, rows);
}

void gru_cell_backward_rows(const float *dh, const float *act, const float *h_prev, float *dgates_x,
                            float *dgates_h, float *dh_prev, int64_t rows, int64_t hidden)
{
    gru_job j = {.dh = dh, .act = act, .h_prev = h_prev, .dgx = dgates_x, .dgh = dgates_h,
                 .dh_prev = dh_prev, .hidden = hidden};
    (void)backward_rows(&j, 0, rows);
}

static int64_t row_grain(int64_t hidden)
{
    const int64_t g = GRAIN_ELEMENTS / (hidden > 0 ? hidden : 1);
    return g > 0 ? g : 1;
}

int pyrt_gru_cell(const float *gates_x, const float *gates_h, const float *bias_h,
                  const float *h_prev, float *h, float *act, int64_t rows, int64_t hidden)
{
    if (rows < 0 || hidden < 0)
        return PYRT_EINVAL;
    if (rows == 0 || hidden == 0)
        return PYRT_OK;
    if (!gates_x || !gates_h || !h_prev || !h || !act)
        return PYRT_EINVAL;
    gru_job j = {.gx = gates_x, .gh = gates_h, .bias = bias_h, .h_prev = h_prev, .h = h,
                 .act_out = act, .hidden = hidden};
    return pyrt_parallel_for(rows, row_grain(hidden), forward_rows, &j);
}

int pyrt_gru_cell_backward(const float *dh, const float *act, const float *h_prev,
                           float *dgates_x, float *dgates_h, float *dh_prev, int64_t rows,
                           int64_t hidden)
{
    if (rows < 0 || hidden < 0)
        return PYRT_EINVAL;
    if (rows == 0 || hidden == 0)
        return PYRT_OK;
    if (!dh || !act || !h_prev || !dgates_x || !dgates_h || !dh_prev)
        return PYRT_EINVAL;
    gru_job j = {.dh = dh, .act = act, .h_prev = h_prev, .dgx = dgates_x, .dgh = dgates_h,
                 .dh_prev = dh_prev, .hidden = hidden};
    return pyrt_parallel_for(rows, row_grain(hidden), backward_rows, &j);
}
