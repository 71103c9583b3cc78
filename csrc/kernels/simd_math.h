/*
 * simd_math.h - float32 exp, log, tanh and sigmoid: AVX2+FMA vectors and portable scalars.
 *
 * Names (all static inline, so each kernel file that includes this gets its own copy):
 *
 *   __m256 simd_exp_avx2(__m256 x)        float simd_expf(float x)
 *   __m256 simd_log_avx2(__m256 x)        float simd_logf(float x)
 *   __m256 simd_tanh_avx2(__m256 x)       float simd_tanhf(float x)
 *   __m256 simd_sigmoid_avx2(__m256 x)    float simd_sigmoidf(float x)
 *
 * The _avx2 functions exist where SIMD_HAVE_X86 is 1 and carry SIMD_AVX2, that is
 * __attribute__((target("avx2,fma"))): call them only from functions with the same attribute,
 * after checking simd_cpu_has_avx2_fma() at run time. The scalar ones are plain C for any x86-64 or other CPU; they use the same
 * reductions and polynomials, so both agree to within rounding differences of the FMA.
 *
 * Accuracy against float64 libm, measured on every 97th float32 bit pattern (all signs and
 * exponents), both forms: exp 1.0 ULP, log 0.8, tanh 1.3, sigmoid 2.3 at most. Special values
 * follow C99: exp(+inf) = +inf, exp(-inf) = 0, exp overflows to +inf above 88.7228 and
 * underflows through the subnormals to 0 below -103.97; log(0) = -inf, log(x < 0) = nan,
 * log(+inf) = +inf, subnormal x keeps full accuracy; tanh and sigmoid saturate to +-1 and 0/1
 * for large |x| without producing nan; nan in gives nan out.
 *
 * The algorithms are Cephes' (Moshier): Cody-Waite reduction x = n ln2 + r for exp,
 * frexp-style m * 2^e with m in [sqrt(1/2), sqrt(2)) for log, a polynomial near 0 and
 * 1 - 2 / (exp(2|x|) + 1) elsewhere for tanh, exp(-|x|) for sigmoid so neither tail cancels.
 */
#ifndef PYRT_SIMD_MATH_H
#define PYRT_SIMD_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* SIMD_HAVE_X86 may be preset to 0 to build (and test) the portable code on x86 too. */
#ifndef SIMD_HAVE_X86
#if defined(__x86_64__) || defined(__i386__)
#define SIMD_HAVE_X86 1
#else
#define SIMD_HAVE_X86 0
#endif
#endif
#if SIMD_HAVE_X86
#include <immintrin.h>
#define SIMD_AVX2 __attribute__((target("avx2,fma")))
#endif

/* True when this CPU runs AVX2 and FMA code (a read of a flag set at program start). */
static inline int simd_cpu_has_avx2_fma(void)
{
#if SIMD_HAVE_X86
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

/* ---- constants shared by both forms ----------------------------------------------------- */

#define SIMD_LOG2E 1.44269504088896341f
#define SIMD_LN2_HI 0.693359375f       /* 9 significant bits: n * LN2_HI is exact */
#define SIMD_LN2_LO -2.12194440e-4f    /* ln 2 - LN2_HI */
#define SIMD_EXP_HI 89.0f              /* exp overflows above 88.72: clamp keeps n small */
#define SIMD_EXP_LO -110.0f            /* exp is 0 below -103.97 */

/* exp(r) = 1 + r + r^2 * P(r) on |r| <= ln2 / 2 */
#define SIMD_EXP_P0 5.0000001201e-1f
#define SIMD_EXP_P1 1.6666665459e-1f
#define SIMD_EXP_P2 4.1665795894e-2f
#define SIMD_EXP_P3 8.3334519073e-3f
#define SIMD_EXP_P4 1.3981999507e-3f
#define SIMD_EXP_P5 1.9875691500e-4f

/* log(1 + t) = t - t^2 / 2 + t^3 * Q(t) on sqrt(1/2) - 1 <= t < sqrt(2) - 1 */
#define SIMD_SQRTHF 0.707106781186547524f
#define SIMD_LOG_Q0 3.3333331174e-1f
#define SIMD_LOG_Q1 -2.4999993993e-1f
#define SIMD_LOG_Q2 2.0000714765e-1f
#define SIMD_LOG_Q3 -1.6668057665e-1f
#define SIMD_LOG_Q4 1.4249322787e-1f
#define SIMD_LOG_Q5 -1.2420140846e-1f
#define SIMD_LOG_Q6 1.1676998740e-1f
#define SIMD_LOG_Q7 -1.1514610310e-1f
#define SIMD_LOG_Q8 7.0376836292e-2f

/* tanh(x) = x + x^3 * T(x^2) for |x| < 0.625 */
#define SIMD_TANH_SMALL 0.625f
#define SIMD_TANH_T0 -3.33332819422e-1f
#define SIMD_TANH_T1 1.33314422036e-1f
#define SIMD_TANH_T2 -5.37397155531e-2f
#define SIMD_TANH_T3 2.06390887954e-2f
#define SIMD_TANH_T4 -5.70498872745e-3f

/* ---- AVX2 + FMA (x86 only: callers guard their AVX2 code with #if SIMD_HAVE_X86) -------- */

#if SIMD_HAVE_X86

SIMD_AVX2 static inline __m256 simd_exp_avx2(__m256 x)
{
    /* min/max with x second would turn nan into a bound; nan is restored at the end */
    __m256 xc = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(SIMD_EXP_HI)),
                              _mm256_set1_ps(SIMD_EXP_LO));
    /* x = n ln2 + r, |r| <= ln2/2; two-part ln2 keeps r exact to ~2^-33 */
    __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(SIMD_LOG2E)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(SIMD_LN2_HI), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(SIMD_LN2_LO), r);
    __m256 p = _mm256_set1_ps(SIMD_EXP_P5);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(SIMD_EXP_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(SIMD_EXP_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(SIMD_EXP_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(SIMD_EXP_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(SIMD_EXP_P0));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r);
    p = _mm256_add_ps(p, _mm256_set1_ps(1.0f));
    /* 2^n as two factors 2^n1 * 2^n2 with n1 = floor(n/2): both are normal floats for
     * n in [-159, 129], so p * 2^n1 is exact and the last multiply rounds once, into the
     * subnormals or to +inf exactly as the true result would. */
    __m256i ni = _mm256_cvtps_epi32(n);
    __m256i n1 = _mm256_srai_epi32(ni, 1);
    __m256i n2 = _mm256_sub_epi32(ni, n1);
    __m256i bias = _mm256_set1_epi32(127);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

SIMD_AVX2 static inline __m256 simd_log_avx2(__m256 x)
{
    /* subnormals: scale by 2^23 into the normal range and take 23 off the exponent */
    __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(1.17549435e-38f), _CMP_LT_OQ);
    __m256 xs = _mm256_blendv_ps(x, _mm256_mul_ps(x, _mm256_set1_ps(8388608.0f)), tiny);
    __m256 eadj = _mm256_and_ps(tiny, _mm256_set1_ps(23.0f));
    /* x = m * 2^e with m in [0.5, 1) */
    __m256i bits = _mm256_castps_si256(xs);
    __m256 e = _mm256_cvtepi32_ps(
        _mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(126)));
    e = _mm256_sub_ps(e, eadj);
    __m256 m = _mm256_castsi256_ps(_mm256_or_si256(
        _mm256_and_si256(bits, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x3f000000)));
    /* move m into [sqrt(1/2), sqrt(2)) so that t = m - 1 is small on both sides of 0 */
    __m256 lo = _mm256_cmp_ps(m, _mm256_set1_ps(SIMD_SQRTHF), _CMP_LT_OQ);
    e = _mm256_sub_ps(e, _mm256_and_ps(lo, _mm256_set1_ps(1.0f)));
    __m256 t = _mm256_sub_ps(_mm256_add_ps(m, _mm256_and_ps(lo, m)), _mm256_set1_ps(1.0f));
    __m256 z = _mm256_mul_ps(t, t);
    __m256 q = _mm256_set1_ps(SIMD_LOG_Q8);
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(SIMD_LOG_Q7));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(SIMD_LOG_Q6));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(SIMD_LOG_Q5));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(SIMD_LOG_Q4));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(SIMD_LOG_Q3));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(SIMD_LOG_Q2));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(SIMD_LOG_Q1));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(SIMD_LOG_Q0));
    /* log x = e ln2 + t - t^2/2 + t^3 Q(t), small terms first, e*LN2_HI (exact) last */
    __m256 y = _mm256_mul_ps(_mm256_mul_ps(q, t), z);
    y = _mm256_fmadd_ps(e, _mm256_set1_ps(SIMD_LN2_LO), y);
    y = _mm256_fnmadd_ps(z, _mm256_set1_ps(0.5f), y);
    y = _mm256_add_ps(t, y);
    y = _mm256_fmadd_ps(e, _mm256_set1_ps(SIMD_LN2_HI), y);
    /* special values: +inf and nan pass through, 0 gives -inf, negatives give nan */
    __m256 pass = _mm256_cmp_ps(x, _mm256_set1_ps(INFINITY), _CMP_EQ_OQ);
    pass = _mm256_or_ps(pass, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    y = _mm256_blendv_ps(y, x, pass);
    y = _mm256_blendv_ps(y, _mm256_set1_ps(-INFINITY),
                         _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ));
    return _mm256_blendv_ps(y, _mm256_set1_ps(NAN),
                            _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ));
}

SIMD_AVX2 static inline __m256 simd_tanh_avx2(__m256 x)
{
    __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 ax = _mm256_andnot_ps(sign, x);
    /* |x| < 0.625: odd polynomial (no cancellation near 0) */
    __m256 z = _mm256_mul_ps(x, x);
    __m256 p = _mm256_set1_ps(SIMD_TANH_T4);
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(SIMD_TANH_T3));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(SIMD_TANH_T2));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(SIMD_TANH_T1));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(SIMD_TANH_T0));
    __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
    /* otherwise 1 - 2 / (exp(2|x|) + 1), which is 1 once exp overflows */
    __m256 e = simd_exp_avx2(_mm256_add_ps(ax, ax));
    __m256 big = _mm256_sub_ps(_mm256_set1_ps(1.0f),
                               _mm256_div_ps(_mm256_set1_ps(2.0f),
                                             _mm256_add_ps(e, _mm256_set1_ps(1.0f))));
    /* nan compares false, takes the big branch, and exp carries it through; the sign is
     * copied from x last, so tanh(-0) = -0 */
    __m256 y = _mm256_blendv_ps(big, small,
                                _mm256_cmp_ps(ax, _mm256_set1_ps(SIMD_TANH_SMALL), _CMP_LT_OQ));
    return _mm256_or_ps(_mm256_andnot_ps(sign, y), _mm256_and_ps(sign, x));
}

SIMD_AVX2 static inline __m256 simd_sigmoid_avx2(__m256 x)
{
    /* e = exp(-|x|) in (0, 1]: sigmoid = 1 / (1 + e) for x >= 0 and e / (1 + e) below, so
     * neither side overflows and tiny results keep their relative accuracy */
    __m256 nax = _mm256_or_ps(x, _mm256_set1_ps(-0.0f));
    __m256 e = simd_exp_avx2(nax);
    __m256 one = _mm256_set1_ps(1.0f);
    __m256 num = _mm256_blendv_ps(one, e, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ));
    return _mm256_div_ps(num, _mm256_add_ps(one, e));
}

#endif /* SIMD_HAVE_X86 */

/* ---- scalar ----------------------------------------------------------------------------- */

static inline float simd_bits_to_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t simd_float_to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float simd_expf(float x)
{
    if (x != x)
        return x;
    float xc = x > SIMD_EXP_HI ? SIMD_EXP_HI : (x < SIMD_EXP_LO ? SIMD_EXP_LO : x);
    float n = nearbyintf(xc * SIMD_LOG2E);
    float r = xc - n * SIMD_LN2_HI;
    r = r - n * SIMD_LN2_LO;
    float p = SIMD_EXP_P5;
    p = p * r + SIMD_EXP_P4;
    p = p * r + SIMD_EXP_P3;
    p = p * r + SIMD_EXP_P2;
    p = p * r + SIMD_EXP_P1;
    p = p * r + SIMD_EXP_P0;
    p = p * (r * r) + r + 1.0f;
    int32_t ni = (int32_t)n;
    int32_t n1 = ni >> 1, n2 = ni - n1;
    return p * simd_bits_to_float((uint32_t)(n1 + 127) << 23)
             * simd_bits_to_float((uint32_t)(n2 + 127) << 23);
}

static inline float simd_logf(float x)
{
    if (x != x || x == INFINITY)
        return x;
    if (x < 0.0f)
        return NAN;
    if (x == 0.0f)
        return -INFINITY;
    float e = 0.0f;
    if (x < 1.17549435e-38f) {
        x *= 8388608.0f;
        e = -23.0f;
    }
    uint32_t bits = simd_float_to_bits(x);
    e += (float)((int32_t)(bits >> 23) - 126);
    float m = simd_bits_to_float((bits & 0x007fffffu) | 0x3f000000u);
    float t;
    if (m < SIMD_SQRTHF) {
        e -= 1.0f;
        t = m + m - 1.0f;
    } else {
        t = m - 1.0f;
    }
    float z = t * t;
    float q = SIMD_LOG_Q8;
    q = q * t + SIMD_LOG_Q7;
    q = q * t + SIMD_LOG_Q6;
    q = q * t + SIMD_LOG_Q5;
    q = q * t + SIMD_LOG_Q4;
    q = q * t + SIMD_LOG_Q3;
    q = q * t + SIMD_LOG_Q2;
    q = q * t + SIMD_LOG_Q1;
    q = q * t + SIMD_LOG_Q0;
    float y = q * t * z;
    y += e * SIMD_LN2_LO;
    y -= 0.5f * z;
    y = t + y;
    return y + e * SIMD_LN2_HI;
}

static inline float simd_tanhf(float x)
{
    float ax = fabsf(x);
    if (ax < SIMD_TANH_SMALL) {
        float z = x * x;
        float p = SIMD_TANH_T4;
        p = p * z + SIMD_TANH_T3;
        p = p * z + SIMD_TANH_T2;
        p = p * z + SIMD_TANH_T1;
        p = p * z + SIMD_TANH_T0;
        return copysignf(p * z * x + x, x);
    }
    float y = 1.0f - 2.0f / (simd_expf(ax + ax) + 1.0f);
    return copysignf(y, x);
}

static inline float simd_sigmoidf(float x)
{
    float e = simd_expf(-fabsf(x));
    return (x < 0.0f ? e : 1.0f) / (1.0f + e);
}

#endif /* PYRT_SIMD_MATH_H */
