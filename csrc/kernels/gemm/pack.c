/*
 * pack.c - copying panels of A and B into the order the micro-kernel reads them.
 *
 * A micro-panel holds mr rows of op(A) over kc columns, column after column (dst[p*mr + i]):
 * the kernel broadcasts its mr values of one column at each step of k. A B micro-panel holds
 * nr columns of op(B) over kc rows, row after row (dst[p*nr + j]): the kernel loads one row
 * as whole vectors. Rows or columns past the edge of the matrix are packed as zeros, so the
 * kernel always computes a full tile (the driver writes back only the part inside C). alpha is
 * folded into A here, where it costs one multiplication per packed value instead of one per
 * element of C per block of k; alpha == 1 multiplies exactly.
 *
 * Of the four (operand, transposed) cases, two copy contiguous runs (A transposed: a column of
 * op(A) is a row of A; B not transposed) and two transpose (A not transposed, B transposed):
 * the AVX2 versions do those with 8 x 8 register transposes.
 */
#include <immintrin.h>

#include "gemm_internal.h"

/* ---- portable ------------------------------------------------------------------------- */

/* always_inline: the AVX2 versions inline these for the cases they have no special code for,
 * so that the loops are compiled (and vectorised) for AVX2 there too. */

/* One micro-panel of op(A): rows [i0, i0+rows) (rows <= mr), columns [p0, p0+kc). */
static inline __attribute__((always_inline)) void pack_a_panel(const float *a, int64_t lda,
                                                               int trans, int64_t i0,
                                                               int64_t rows, int64_t p0,
                                                               int64_t kc, float alpha, int mr,
                                                               float *dst)
{
    if (!trans) {
        /* op(A)[i, p] = a[i*lda + p]: read each row along k, write with stride mr */
        for (int64_t i = 0; i < rows; i++) {
            const float *src = a + (i0 + i) * lda + p0;
            for (int64_t p = 0; p < kc; p++)
                dst[p * mr + i] = alpha * src[p];
        }
        for (int64_t i = rows; i < mr; i++)
            for (int64_t p = 0; p < kc; p++)
                dst[p * mr + i] = 0.0f;
    } else {
        /* op(A)[i, p] = a[p*lda + i]: a column of op(A) is a contiguous run of a row of A */
        for (int64_t p = 0; p < kc; p++) {
            const float *src = a + (p0 + p) * lda + i0;
            float *d = dst + p * mr;
            for (int64_t i = 0; i < rows; i++)
                d[i] = alpha * src[i];
            for (int64_t i = rows; i < mr; i++)
                d[i] = 0.0f;
        }
    }
}

/* One micro-panel of op(B): rows [p0, p0+kc), columns [j0, j0+cols) (cols <= nr). */
static inline __attribute__((always_inline)) void pack_b_panel(const float *b, int64_t ldb,
                                                               int trans, int64_t p0,
                                                               int64_t kc, int64_t j0,
                                                               int64_t cols, int nr, float *dst)
{
    if (!trans) {
        /* op(B)[p, j] = b[p*ldb + j]: each packed row is a contiguous run of a row of B */
        for (int64_t p = 0; p < kc; p++) {
            const float *src = b + (p0 + p) * ldb + j0;
            float *d = dst + p * nr;
            for (int64_t j = 0; j < cols; j++)
                d[j] = src[j];
            for (int64_t j = cols; j < nr; j++)
                d[j] = 0.0f;
        }
    } else {
        /* op(B)[p, j] = b[j*ldb + p]: read each row of B along k, write with stride nr */
        for (int64_t j = 0; j < cols; j++) {
            const float *src = b + (j0 + j) * ldb + p0;
            for (int64_t p = 0; p < kc; p++)
                dst[p * nr + j] = src[p];
        }
        for (int64_t j = cols; j < nr; j++)
            for (int64_t p = 0; p < kc; p++)
                dst[p * nr + j] = 0.0f;
    }
}

void gemm_pack_a_generic(const float *a, int64_t lda, int trans, int64_t i0, int64_t rows,
                         int64_t p0, int64_t kc, float alpha, int mr, float *dst)
{
    for (int64_t r = 0; r < rows; r += mr, dst += mr * kc)
        pack_a_panel(a, lda, trans, i0 + r, rows - r < mr ? rows - r : mr, p0, kc, alpha, mr,
                     dst);
}

void gemm_pack_b_generic(const float *b, int64_t ldb, int trans, int64_t p0, int64_t kc,
                         int64_t j0, int64_t cols, int nr, float *dst)
{
    for (int64_t c = 0; c < cols; c += nr, dst += nr * kc)
        pack_b_panel(b, ldb, trans, p0, kc, j0 + c, cols - c < nr ? cols - c : nr, nr, dst);
}

/* ---- AVX2 ----------------------------------------------------------------------------- */

#define AVX2 __attribute__((target("avx2,fma")))

/* Rows ahead that the row-copying packers prefetch. */
#define PACK_AHEAD 8

/* Transpose the 8 x 8 block held in r[0..7] (r[i] is row i) in place. */
static inline __attribute__((always_inline)) AVX2 void transpose8(__m256 r[8])
{
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/* A not transposed, a full panel of MR (6 or 8) rows: load 8 values of k from each row (zero
 * rows make it 8 x 8), transpose, and store each column's MR values. With MR = 6 a full
 * 8-float store spills 2 values into column p+1's slot, which the next column's store
 * overwrites; only the panel's last column is stored as 4 + 2, so nothing is written past the
 * panel. */
static inline __attribute__((always_inline)) AVX2 void pack_a_rows(const int MR, const float *a,
                                                                   int64_t lda, int64_t i0,
                                                                   int64_t p0, int64_t kc,
                                                                   float alpha, float *dst)
{
    const __m256 va = _mm256_set1_ps(alpha);
    const float *src = a + i0 * lda + p0;
    int64_t p = 0;
    for (; p + 8 <= kc; p += 8) {
        __m256 r[8];
        for (int i = 0; i < 8; i++)
            r[i] = i < MR ? _mm256_mul_ps(va, _mm256_loadu_ps(src + i * lda + p))
                          : _mm256_setzero_ps();
        transpose8(r);
        float *d = dst + p * MR;
        for (int q = 0; q < 8; q++) {
            if (MR == 8 || q < 7 || p + 8 < kc) {
                _mm256_storeu_ps(d + q * MR, r[q]);
            } else {
                _mm_storeu_ps(d + q * MR, _mm256_castps256_ps128(r[q]));
                _mm_storel_pi((__m64 *)(d + q * MR + 4), _mm256_extractf128_ps(r[q], 1));
            }
        }
    }
    for (; p < kc; p++)
        for (int i = 0; i < MR; i++)
            dst[p * MR + i] = alpha * src[i * lda + p];
}

/* A transposed, full panels of MR (6 or 8): each row of A (one value of k) holds MR values for
 * each panel in turn, copied as 8, or 4 + 2, so that nothing past the last panel is read.
 * Going along the rows of A across all the panels reads whole cache lines. */
static inline __attribute__((always_inline)) AVX2 void pack_a_trans(const int MR, const float *a,
                                                                    int64_t lda, int64_t i0,
                                                                    int64_t panels, int64_t p0,
                                                                    int64_t kc, float alpha,
                                                                    float *dst)
{
    const __m128 va = _mm_set1_ps(alpha);
    for (int64_t p = 0; p < kc; p++) {
        const float *src = a + (p0 + p) * lda + i0;
        float *d = dst + p * MR;
        for (int64_t x = 0; x < panels * MR; x += 16)
            _mm_prefetch((const char *)(src + PACK_AHEAD * lda + x), _MM_HINT_T0);
        for (int64_t t = 0; t < panels; t++, src += MR, d += MR * kc) {
            if (MR == 8) {
                _mm256_storeu_ps(d, _mm256_mul_ps(_mm256_set1_ps(alpha), _mm256_loadu_ps(src)));
                continue;
            }
            _mm_storeu_ps(d, _mm_mul_ps(va, _mm_loadu_ps(src)));
            /* the last two values, 8 bytes that need not be 8-byte aligned */
            const __m128 hi = _mm_castsi128_ps(_mm_loadu_si64(src + 4));
            _mm_storeu_si64(d + 4, _mm_castps_si128(_mm_mul_ps(va, hi)));
        }
    }
}

/* B not transposed, full panels of NR (16 or 48): each row of B holds NR values for each panel
 * in turn. */
static inline __attribute__((always_inline)) AVX2 void pack_b_rows(const int NR, const float *b,
                                                                   int64_t ldb, int64_t p0,
                                                                   int64_t kc, int64_t j0,
                                                                   int64_t panels, float *dst)
{
    for (int64_t p = 0; p < kc; p++) {
        const float *src = b + (p0 + p) * ldb + j0;
        float *d = dst + p * NR;
        /* rows of B are usually on different pages, where hardware prefetchers stop: fetch
         * the row PACK_AHEAD rows down now */
        for (int64_t x = 0; x < panels * NR; x += 16)
            _mm_prefetch((const char *)(src + PACK_AHEAD * ldb + x), _MM_HINT_T0);
        for (int64_t t = 0; t < panels; t++, src += NR, d += NR * kc)
            for (int v = 0; v < NR; v += 8)
                _mm256_store_ps(d + v, _mm256_loadu_ps(src + v));
    }
}

/* Lanes of a partial panel row that are loaded: mask48[48 - c .. 56 - c) has c ones, or all
 * 8 (c >= 8), or none (c <= 0). */
static const int32_t mask48[96] = {
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
};

/* B not transposed, the last panel, of cols < NR columns: each row is loaded under masks (the
 * lanes past the edge read nothing and hold zeros) and stored whole. */
static inline __attribute__((always_inline)) AVX2 void pack_b_rows_edge(
    const int NR, const float *b, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t cols,
    float *dst)
{
    __m256i mask[GEMM_NR_MAX / 8];
    for (int v = 0; v < NR; v += 8)
        mask[v / 8] = _mm256_loadu_si256((const __m256i *)(mask48 + 48 - cols + v));
    for (int64_t p = 0; p < kc; p++) {
        const float *src = b + (p0 + p) * ldb + j0;
        for (int v = 0; v < NR; v += 8)
            _mm256_store_ps(dst + p * NR + v, _mm256_maskload_ps(src + v, mask[v / 8]));
    }
}

/* B transposed, 16 columns of a full panel of NR (16 or 48): 16 rows of B, 8 values of k at a
 * time, two 8 x 8 transposes give 8 packed rows of 16, stored NR floats apart. */
static inline __attribute__((always_inline)) AVX2 void pack_b_cols16(const int NR, const float *b,
                                                                     int64_t ldb, int64_t p0,
                                                                     int64_t kc, int64_t j0,
                                                                     float *dst)
{
    const float *src = b + j0 * ldb + p0;
    int64_t p = 0;
    for (; p + 8 <= kc; p += 8) {
        __m256 lo[8], hi[8];
        for (int j = 0; j < 8; j++) {
            lo[j] = _mm256_loadu_ps(src + j * ldb + p);
            hi[j] = _mm256_loadu_ps(src + (j + 8) * ldb + p);
        }
        transpose8(lo);
        transpose8(hi);
        float *d = dst + p * NR;
        for (int q = 0; q < 8; q++) {
            _mm256_store_ps(d + q * NR, lo[q]);
            _mm256_store_ps(d + q * NR + 8, hi[q]);
        }
    }
    for (; p < kc; p++)
        for (int j = 0; j < 16; j++)
            dst[p * NR + j] = src[j * ldb + p];
}

/* B transposed, the `n` columns (1 <= n <= 8) at j0 of a panel of NR: n rows of B, 8 values
 * of k at a time, zero rows for the columns past n, one 8 x 8 transpose gives 8 packed rows of
 * 8, stored NR floats apart. */
static inline __attribute__((always_inline)) AVX2 void pack_b_cols8(const int NR, const float *b,
                                                                    int64_t ldb, int64_t p0,
                                                                    int64_t kc, int64_t j0,
                                                                    int n, float *dst)
{
    const float *src = b + j0 * ldb + p0;
    int64_t p = 0;
    for (; p + 8 <= kc; p += 8) {
        __m256 r[8];
        for (int j = 0; j < 8; j++)
            r[j] = j < n ? _mm256_loadu_ps(src + j * ldb + p) : _mm256_setzero_ps();
        transpose8(r);
        float *d = dst + p * NR;
        for (int q = 0; q < 8; q++)
            _mm256_store_ps(d + q * NR, r[q]);
    }
    for (; p < kc; p++)
        for (int j = 0; j < 8; j++)
            dst[p * NR + j] = j < n ? src[j * ldb + p] : 0.0f;
}

/* Columns [h, nr) of the kc rows of a packed B panel (rows nr floats apart, h and nr multiples
 * of 8): zeros. Zeros the compiler cannot see as such: a row's few zero vectors would otherwise
 * become a call of memset (rep stos) per row, which took a third of the packing of 64 x 128 x
 * 784 with B transposed (a linear layer's forward, whose last panel has 32 of 48 columns). */
static inline __attribute__((always_inline)) AVX2 void pack_b_zero_columns(float *dst,
                                                                           int64_t kc,
                                                                           int64_t nr,
                                                                           int64_t h)
{
    __m256 zero = _mm256_setzero_ps();
    __asm__("" : "+x"(zero));
    for (int64_t p = 0; p < kc; p++)
        for (int64_t v = h; v < nr; v += 8)
            _mm256_store_ps(dst + p * nr + v, zero);
}

/* B transposed, the last panel, of cols < NR columns: the columns in groups of 16, then of 8
 * (the last one padded with zeros), then zeros to NR; pack_b_panel copied them element by
 * element. */
static inline __attribute__((always_inline)) AVX2 void pack_b_cols_edge(
    const int NR, const float *b, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t cols,
    float *dst)
{
    int64_t h = 0;
    for (; h + 16 <= cols; h += 16)
        pack_b_cols16(NR, b, ldb, p0, kc, j0 + h, dst + h);
    for (; h < cols; h += 8)
        pack_b_cols8(NR, b, ldb, p0, kc, j0 + h, cols - h < 8 ? (int)(cols - h) : 8, dst + h);
    if (h < NR)
        pack_b_zero_columns(dst, kc, NR, h);
}

/* The panels of A for a tile of MR rows (6 or 8, constant in each instance). */
static inline __attribute__((always_inline)) AVX2 void pack_a_tile(
    const int MR, const float *a, int64_t lda, int trans, int64_t i0, int64_t rows, int64_t p0,
    int64_t kc, float alpha, float *dst)
{
    const int64_t full = rows / MR;
    if (trans) {
        pack_a_trans(MR, a, lda, i0, full, p0, kc, alpha, dst);
    } else {
        for (int64_t t = 0; t < full; t++)
            pack_a_rows(MR, a, lda, i0 + t * MR, p0, kc, alpha, dst + t * MR * kc);
    }
    if (rows > full * MR)
        pack_a_panel(a, lda, trans, i0 + full * MR, rows - full * MR, p0, kc, alpha, MR,
                     dst + full * MR * kc);
}

/* The panels of B for a tile of NR columns (16 or 48, constant in each instance). */
static inline __attribute__((always_inline)) AVX2 void pack_b_tile(
    const int NR, const float *b, int64_t ldb, int trans, int64_t p0, int64_t kc, int64_t j0,
    int64_t cols, float *dst)
{
    const int64_t full = cols / NR;
    if (trans) {
        for (int64_t t = 0; t < full; t++)
            for (int h = 0; h < NR; h += 16)
                pack_b_cols16(NR, b, ldb, p0, kc, j0 + t * NR + h, dst + t * NR * kc + h);
    } else if (full) {
        pack_b_rows(NR, b, ldb, p0, kc, j0, full, dst);
    }
    if (cols > full * NR && !trans)
        pack_b_rows_edge(NR, b, ldb, p0, kc, j0 + full * NR, cols - full * NR,
                         dst + full * NR * kc);
    else if (cols > full * NR)
        pack_b_cols_edge(NR, b, ldb, p0, kc, j0 + full * NR, cols - full * NR,
                         dst + full * NR * kc);
}

AVX2 void gemm_pack_a_avx2(const float *a, int64_t lda, int trans, int64_t i0, int64_t rows,
                           int64_t p0, int64_t kc, float alpha, int mr, float *dst)
{
    if (mr == 6)
        pack_a_tile(6, a, lda, trans, i0, rows, p0, kc, alpha, dst);
    else if (mr == 8)
        pack_a_tile(8, a, lda, trans, i0, rows, p0, kc, alpha, dst);
    else
        gemm_pack_a_generic(a, lda, trans, i0, rows, p0, kc, alpha, mr, dst);
}

AVX2 void gemm_pack_b_avx2(const float *b, int64_t ldb, int trans, int64_t p0, int64_t kc,
                           int64_t j0, int64_t cols, int nr, float *dst)
{
    if (nr == 16)
        pack_b_tile(16, b, ldb, trans, p0, kc, j0, cols, dst);
    else if (nr == 48)
        pack_b_tile(48, b, ldb, trans, p0, kc, j0, cols, dst);
    else
        gemm_pack_b_generic(b, ldb, trans, p0, kc, j0, cols, nr, dst);
}

/* ---- AVX-512 -------------------------------------------------------------------------- */

#define AVX512 __attribute__((target("avx512f,avx2,fma")))

/* Transpose the 16 x 16 block held in r[0..15] (r[i] is row i) in place: 64 shuffles for 256
 * values, where 8 x 8 AVX2 transposes take 96 for as many. Within each
 * 128-bit lane, unpack and shuffle_ps make 4 x 4 transposes (u[4g + q], lane l: column
 * 4l + q of rows 4g .. 4g + 3); two rounds of shuffle_f32x4 then gather column c's four
 * lanes. */
static inline __attribute__((always_inline)) AVX512 void transpose16(__m512 r[16])
{
    __m512 t[16], u[16], v[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int g = 0; g < 16; g += 4) {
        u[g] = _mm512_shuffle_ps(t[g], t[g + 2], 0x44);
        u[g + 1] = _mm512_shuffle_ps(t[g], t[g + 2], 0xEE);
        u[g + 2] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0x44);
        u[g + 3] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0xEE);
    }
    /* v[q] (q < 4): lanes 0 and 2 of u[q] and u[q + 4]; v[q + 4]: lanes 1 and 3; the same
     * for rows 8 .. 15 in v[8 ..] */
    for (int h = 0; h < 16; h += 8)
        for (int q = 0; q < 4; q++) {
            v[h + q] = _mm512_shuffle_f32x4(u[h + q], u[h + q + 4], 0x88);
            v[h + q + 4] = _mm512_shuffle_f32x4(u[h + q], u[h + q + 4], 0xDD);
        }
    for (int q = 0; q < 8; q++) {
        r[q] = _mm512_shuffle_f32x4(v[q], v[q + 8], 0x88);
        r[q + 8] = _mm512_shuffle_f32x4(v[q], v[q + 8], 0xDD);
    }
}

/* B transposed, the `n` columns (1 <= n <= 16) at j0 of a panel whose rows are nr floats
 * apart (a multiple of 16, so that every store fills one cache line): n rows of B, 16
 * values of k at a time (the last step under a mask), zero rows for the columns past n. */
static inline __attribute__((always_inline)) AVX512 void pack_b_cols16_512(
    const float *b, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int n, int nr, float *dst)
{
    const float *src = b + j0 * ldb + p0;
    for (int64_t p = 0; p < kc; p += 16) {
        const int steps = kc - p < 16 ? (int)(kc - p) : 16;
        const __mmask16 mask = (__mmask16)((1u << steps) - 1);
        __m512 r[16];
        for (int j = 0; j < 16; j++)
            r[j] = j < n ? _mm512_maskz_loadu_ps(mask, src + j * ldb + p) : _mm512_setzero_ps();
        transpose16(r);
        float *d = dst + p * nr;
        for (int q = 0; q < steps; q++)
            _mm512_store_ps(d + q * nr, r[q]);
    }
}

/* The AVX-512 kernel's packing: B transposed by 16 x 16 transposes into panels of nr (a
 * multiple of 16) columns, each row of a panel written a cache line at a time (the AVX2
 * version writes half lines); everything else as gemm_pack_b_avx2. The same values land in
 * the same places, so products are bitwise those of the AVX2 packing. */
AVX512 void gemm_pack_b_avx512(const float *b, int64_t ldb, int trans, int64_t p0, int64_t kc,
                               int64_t j0, int64_t cols, int nr, float *dst)
{
    if (!trans || nr % 16) {
        gemm_pack_b_avx2(b, ldb, trans, p0, kc, j0, cols, nr, dst);
        return;
    }
    for (int64_t c = 0; c < cols; c += nr, dst += nr * kc) {
        const int64_t width = cols - c < nr ? cols - c : nr;
        int64_t h = 0;
        for (; h < width; h += 16)
            pack_b_cols16_512(b, ldb, p0, kc, j0 + c + h, width - h < 16 ? (int)(width - h) : 16,
                              nr, dst + h);
        if (h < nr)
            pack_b_zero_columns(dst, kc, nr, h);
    }
}
