/*
 * small.c - GEMM for matrices too small for packing and threads to pay (a 4x4 or 16x16
 * product costs less than packing it would).
 *
 * Blocks of 4 rows x 8 columns of C are summed in vector registers: for each step p of k,
 * one load of 8 values of row p of op(B) feeds 4 multiply-adds, one per row of A, so that 4
 * independent chains hide the latency of the adds. Leftover rows go one at a time, leftover
 * columns (n not a multiple of 8) through scalar sums. A transposed B is first copied to
 * [k, n] order on the stack, so that rows of op(B) are contiguous. Each element of C sums over
 * k in increasing order, then C = alpha * sum (+ beta * C). The body is compiled once per
 * instruction set (the wrappers below inline it under their target attribute): GCC's vector
 * type is a ymm register with AVX, two xmm registers without.
 */
#include <string.h>

#include "gemm_internal.h"

typedef float v8 __attribute__((vector_size(32)));

/* Unaligned vector load and store through memcpy (one instruction once compiled). */
#define LOAD8(v, ptr) memcpy(&(v), (ptr), sizeof(v8))
#define STORE8(ptr, v) memcpy((ptr), &(v), sizeof(v8))

/* C[0:8] = alpha * s, or alpha * s + beta * C[0:8]. */
#define WRITE8(ptr, s)                                                                        \
    do {                                                                                      \
        v8 out_ = alpha * (s);                                                                \
        if (beta != 0.0f) {                                                                   \
            v8 old_;                                                                          \
            LOAD8(old_, ptr);                                                                 \
            out_ += beta * old_;                                                              \
        }                                                                                     \
        STORE8(ptr, out_);                                                                    \
    } while (0)

static inline __attribute__((always_inline)) void small_body(
    int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
    int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    /* strides of op(A): element (i, p) is a[i*ai + p*ap] */
    const int64_t ai = trans_a ? 1 : lda, ap = trans_a ? lda : 1;
    float bt[GEMM_SMALL_MAX_KN];
    if (trans_b) {
        for (int64_t j = 0; j < n; j++)
            for (int64_t p = 0; p < k; p++)
                bt[p * n + j] = b[j * ldb + p];
        b = bt;
        ldb = n;
    }
    const int64_t n8 = n / 8 * 8;
    int64_t i = 0;
    for (; i + 4 <= m; i += 4) {
        const float *a0 = a + i * ai, *a1 = a0 + ai, *a2 = a1 + ai, *a3 = a2 + ai;
        for (int64_t j = 0; j < n8; j += 8) {
            v8 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
            for (int64_t p = 0; p < k; p++) {
                v8 bv;
                LOAD8(bv, b + p * ldb + j);
                s0 += a0[p * ap] * bv;
                s1 += a1[p * ap] * bv;
                s2 += a2[p * ap] * bv;
                s3 += a3[p * ap] * bv;
            }
            WRITE8(c + i * ldc + j, s0);
            WRITE8(c + (i + 1) * ldc + j, s1);
            WRITE8(c + (i + 2) * ldc + j, s2);
            WRITE8(c + (i + 3) * ldc + j, s3);
        }
    }
    for (; i < m; i++) {
        const float *a0 = a + i * ai;
        for (int64_t j = 0; j < n8; j += 8) {
            v8 s0 = {0};
            for (int64_t p = 0; p < k; p++) {
                v8 bv;
                LOAD8(bv, b + p * ldb + j);
                s0 += a0[p * ap] * bv;
            }
            WRITE8(c + i * ldc + j, s0);
        }
    }
    for (int64_t j = n8; j < n; j++) {
        for (i = 0; i < m; i++) {
            float sum = 0.0f;
            for (int64_t p = 0; p < k; p++)
                sum += a[i * ai + p * ap] * b[p * ldb + j];
            float *cij = c + i * ldc + j;
            *cij = beta == 0.0f ? alpha * sum : alpha * sum + beta * *cij;
        }
    }
}

void gemm_small_generic(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                        const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                        float *c, int64_t ldc)
{
    small_body(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

__attribute__((target("avx2,fma"))) void gemm_small_avx2(int trans_a, int trans_b, int64_t m,
                                                         int64_t n, int64_t k, float alpha,
                                                         const float *a, int64_t lda,
                                                         const float *b, int64_t ldb,
                                                         float beta, float *c, int64_t ldc)
{
    small_body(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

__attribute__((target("avx512f"))) void gemm_small_avx512(int trans_a, int trans_b, int64_t m,
                                                          int64_t n, int64_t k, float alpha,
                                                          const float *a, int64_t lda,
                                                          const float *b, int64_t ldb,
                                                          float beta, float *c, int64_t ldc)
{
    small_body(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
