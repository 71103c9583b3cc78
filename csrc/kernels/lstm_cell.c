/*
 * lstm_cell.c - the pointwise part of one LSTM step, forward and backward, in one pass.
 *
 * A step of an LSTM is a GEMM (the hidden projection, which added to the input projection
 * gives the gate pre-activations, PyTorch's order i, f, g, o; the sum is made here) followed
 * by
 *
 *     i' = sigmoid(i)   f' = sigmoid(f)   g' = tanh(g)   o' = sigmoid(o)
 *     c  = f' c_prev + i' g'               h  = o' tanh(c)
 *
 * Done as separate ops that is a dozen passes over [rows, hidden] arrays, each a call with its
 * own overhead, for a few microseconds of arithmetic. Here it is one pass that also keeps
 * i', f', g', o' for the backward pass, which is one pass too:
 *
 *     dc_total = dc + dh o' (1 - tanh(c)^2)
 *     do = dh tanh(c) o' (1 - o')      di = dc_total g' i' (1 - i')
 *     df = dc_total c_prev f' (1 - f') dg = dc_total i' (1 - g'^2)
 *     dc_prev = dc_total f'
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
#define GRAIN_ELEMENTS 1024 /* elements of h per chunk: five exp-like functions each, a few
                             * microseconds in all */

typedef struct cell_job {
    const float *gates, *gates_h, *c_prev, *dh, *dc, *act, *c;
    float *h, *c_out, *act_out, *dgates, *dc_prev;
    int64_t hidden;
} cell_job;

/* ---- one element, scalar -------------------------------------------------------------- */

static ALWAYS_INLINE float gate(const float *g, const float *gh, int64_t at)
{
    return gh ? g[at] + gh[at] : g[at];
}

static ALWAYS_INLINE void forward_one(const float *g, const float *gh, int64_t H, float cp,
                                      float *h, float *c, float *act)
{
    const float si = simd_sigmoidf(gate(g, gh, 0)), sf = simd_sigmoidf(gate(g, gh, H));
    const float tg = simd_tanhf(gate(g, gh, 2 * H)), so = simd_sigmoidf(gate(g, gh, 3 * H));
    const float cn = sf * cp + si * tg;
    *c = cn;
    *h = so * simd_tanhf(cn);
    if (act) {
        act[0] = si;
        act[H] = sf;
        act[2 * H] = tg;
        act[3 * H] = so;
    }
}

static ALWAYS_INLINE void backward_one(const float *a, int64_t H, float dh, float dc, float c,
                                       float cp, float *dg, float *dcp)
{
    const float si = a[0], sf = a[H], tg = a[2 * H], so = a[3 * H];
    const float tc = simd_tanhf(c);
    const float dct = dc + dh * so * (1.0f - tc * tc);
    dg[0] = dct * tg * si * (1.0f - si);
    dg[H] = dct * cp * sf * (1.0f - sf);
    dg[2 * H] = dct * si * (1.0f - tg * tg);
    dg[3 * H] = dh * tc * so * (1.0f - so);
    if (dcp)
        *dcp = dct * sf;
}

/* ---- eight elements, AVX2 ------------------------------------------------------------- */

#if SIMD_HAVE_X86

SIMD_AVX2 static ALWAYS_INLINE __m256 gate8(const float *g, const float *gh, int64_t at)
{
    const __m256 v = _mm256_loadu_ps(g + at);
    return gh ? _mm256_add_ps(v, _mm256_loadu_ps(gh + at)) : v;
}

SIMD_AVX2 static void forward_row_avx2(const float *g, const float *gh, const float *cp,
                                       float *h, float *c, float *act, int64_t H)
{
    int64_t j = 0;
    for (; j + 8 <= H; j += 8) {
        const __m256 si = simd_sigmoid_avx2(gate8(g, gh, j));
        const __m256 sf = simd_sigmoid_avx2(gate8(g, gh, H + j));
        const __m256 tg = simd_tanh_avx2(gate8(g, gh, 2 * H + j));
        const __m256 so = simd_sigmoid_avx2(gate8(g, gh, 3 * H + j));
        const __m256 prev = cp ? _mm256_loadu_ps(cp + j) : _mm256_setzero_ps();
        /* (no FMA: the scalar tail computes sf * cp + si * tg with two roundings too) */
        const __m256 cn = _mm256_add_ps(_mm256_mul_ps(sf, prev), _mm256_mul_ps(si, tg));
        _mm256_storeu_ps(c + j, cn);
        _mm256_storeu_ps(h + j, _mm256_mul_ps(so, simd_tanh_avx2(cn)));
        if (act) {
            _mm256_storeu_ps(act + j, si);
            _mm256_storeu_ps(act + H + j, sf);
            _mm256_storeu_ps(act + 2 * H + j, tg);
            _mm256_storeu_ps(act + 3 * H + j, so);
        }
    }
    for (; j < H; j++)
        forward_one(g + j, gh ? gh + j : NULL, H, cp ? cp[j] : 0.0f, h + j, c + j,
                    act ? act + j : NULL);
}

SIMD_AVX2 static void backward_row_avx2(const float *a, const float *dh, const float *dc,
                                        const float *c, const float *cp, float *dg, float *dcp,
                                        int64_t H)
{
    int64_t j = 0;
    const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    for (; j + 8 <= H; j += 8) {
        const __m256 si = _mm256_loadu_ps(a + j), sf = _mm256_loadu_ps(a + H + j);
        const __m256 tg = _mm256_loadu_ps(a + 2 * H + j), so = _mm256_loadu_ps(a + 3 * H + j);
        const __m256 tc = simd_tanh_avx2(_mm256_loadu_ps(c + j));
        const __m256 vdh = dh ? _mm256_loadu_ps(dh + j) : zero;
        const __m256 vdc = dc ? _mm256_loadu_ps(dc + j) : zero;
        const __m256 prev = cp ? _mm256_loadu_ps(cp + j) : zero;
        /* each product in the scalar order, left to right, so that both forms agree */
        const __m256 dct = _mm256_add_ps(
            vdc, _mm256_mul_ps(_mm256_mul_ps(vdh, so),
                               _mm256_sub_ps(one, _mm256_mul_ps(tc, tc))));
        _mm256_storeu_ps(dg + j, _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(dct, tg), si),
                                               _mm256_sub_ps(one, si)));
        _mm256_storeu_ps(dg + H + j,
                         _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(dct, prev), sf),
                                       _mm256_sub_ps(one, sf)));
        _mm256_storeu_ps(dg + 2 * H + j,
                         _mm256_mul_ps(_mm256_mul_ps(dct, si),
                                       _mm256_sub_ps(one, _mm256_mul_ps(tg, tg))));
        _mm256_storeu_ps(dg + 3 * H + j,
                         _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(vdh, tc), so),
                                       _mm256_sub_ps(one, so)));
        if (dcp)
            _mm256_storeu_ps(dcp + j, _mm256_mul_ps(dct, sf));
    }
    for (; j < H; j++)
        backward_one(a + j, H, dh ? dh[j] : 0.0f, dc ? dc[j] : 0.0f, c[j], cp ? cp[j] : 0.0f,
                     dg + j, dcp ? dcp + j : NULL);
}

#endif

/* ---- rows ----------------------------------------------------------------------------- */

static int forward_rows(void *ctx, int64_t start, int64_t stop)
{
    const cell_job *j = ctx;
    const int64_t H = j->hidden;
#if SIMD_HAVE_X86
    const int avx2 = simd_cpu_has_avx2_fma();
#endif
    for (int64_t r = start; r < stop; r++) {
        const float *g = j->gates + r * 4 * H;
        const float *gh = j->gates_h ? j->gates_h + r * 4 * H : NULL;
        const float *cp = j->c_prev ? j->c_prev + r * H : NULL;
        float *act = j->act_out ? j->act_out + r * 4 * H : NULL;
#if SIMD_HAVE_X86
        if (avx2) {
            forward_row_avx2(g, gh, cp, j->h + r * H, j->c_out + r * H, act, H);
            continue;
        }
#endif
        for (int64_t k = 0; k < H; k++)
            forward_one(g + k, gh ? gh + k : NULL, H, cp ? cp[k] : 0.0f, j->h + r * H + k, j->c_out + r * H + k,
                        act ? act + k : NULL);
    }
    return 0;
}

static int backward_rows(void *ctx, int64_t start, int64_t stop)
{
    const cell_job *j = ctx;
    const int64_t H = j->hidden;
#if SIMD_HAVE_X86
    const int avx2 = simd_cpu_has_avx2_fma();
#endif
    for (int64_t r = start; r < stop; r++) {
        const float *a = j->act + r * 4 * H, *c = j->c + r * H;
        const float *dh = j->dh ? j->dh + r * H : NULL, *dc = j->dc ? j->dc + r * H : NULL;
        const float *cp = j->c_prev ? j->c_prev + r * H : NULL;
        float *dg = j->dgates + r * 4 * H, *dcp = j->dc_prev ? j->dc_prev + r * H : NULL;
#if SIMD_HAVE_X86
        if (avx2) {
            backward_row_avx2(a, dh, dc, c, cp, dg, dcp, H);
            continue;
        }
#endif
        for (int64_t k = 0; k < H; k++)
            backward_one(a + k, H, dh ? dh[k] : 0.0f, dc ? dc[k] : 0.0f, c[k],
                         cp ? cp[k] : 0.0f, dg + k, dcp ? dcp + k : NULL);
    }
    return 0;
}

void lstm_cell_rows(const float *gates, const float *gates_h, const float *c_prev, float *h,
                    float *c, float *act, int64_t rows, int64_t hidden)
{
    cell_job j = {.gates = gates, .gates_h = gates_h, .c_prev = c_prev, .h = h, .c_out = c, .act_out = act,
                  .hidden = hidden};
    (void)forward_rows(&j, 0, rows);
}

void lstm_cell_backward_rows(const float *dh, const float *dc, const float *act, const float *c,
                             const float *c_prev, float *dgates, float *dc_prev, int64_t rows,
                             int64_t hidden)
{
    cell_job j = {.dh = dh, .dc = dc, .act = act, .c = c, .c_prev = c_prev, .dgates = dgates,
                  .dc_prev = dc_prev, .hidden = hidden};
    (void)backward_rows(&j, 0, rows);
}

static int64_t row_grain(int64_t hidden)
{
    const int64_t g = GRAIN_ELEMENTS / (hidden > 0 ? hidden : 1);
    return g > 0 ? g : 1;
}

int pyrt_lstm_cell(const float *gates, const float *gates_h, const float *c_prev, float *h,
                   float *c, float *act, int64_t rows, int64_t hidden)
{
    if (rows < 0 || hidden < 0)
        return PYRT_EINVAL;
    if (rows == 0 || hidden == 0)
        return PYRT_OK;
    if (!gates || !h || !c)
        return PYRT_EINVAL;
    cell_job j = {.gates = gates, .gates_h = gates_h, .c_prev = c_prev, .h = h, .c_out = c, .act_out = act,
                  .hidden = hidden};
    return pyrt_parallel_for(rows, row_grain(hidden), forward_rows, &j);
}

int pyrt_lstm_cell_backward(const float *dh, const float *dc, const float *act, const float *c,
                            const float *c_prev, float *dgates, float *dc_prev, int64_t rows,
                            int64_t hidden)
{
    if (rows < 0 || hidden < 0)
        return PYRT_EINVAL;
    if (rows == 0 || hidden == 0)
        return PYRT_OK;
    if (!act || !c || !dgates)
        return PYRT_EINVAL;
    cell_job j = {.dh = dh, .dc = dc, .act = act, .c = c, .c_prev = c_prev, .dgates = dgates,
                  .dc_prev = dc_prev, .hidden = hidden};
    return pyrt_parallel_for(rows, row_grain(hidden), backward_rows, &j);
}
