/*
 * kernel_avx512.c - the AVX-512 micro-kernel: an 8 x 48 register tile.
 *
 * Thirty-two zmm registers: 24 hold the tile (8 rows x 3 vectors of 16), 3 the current row of
 * B, 1 the broadcast A value. Each step of k issues 24 FMAs against 3 vector loads and 8
 * broadcasts: enough independent accumulators for two 512-bit FMA pipes with a latency of 4
 * cycles (Skylake-SP and later, Zen 4). Loads per FMA matter on these cores: a 14 x 32 tile
 * (28 FMAs against 16 loads) ran at 87% of the FMA peak from L1 on a Sapphire Rapids Xeon,
 * this one at 97%. It is compiled for AVX-512F with a target attribute and called only after
 * __builtin_cpu_supports("avx512f") said yes.
 *
 * At the edges of C the tile has versions for fewer rows (1 to 7) and for fewer columns: one
 * or two vectors of B when the columns fit them, and the last vector's columns written (and,
 * for beta != 0, read) through a small buffer when they do not fill it. Every element goes
 * through the same instructions in any version, so an edge tile rounds as a full one does.
 *
 * The file also holds the dot-product kernel for A B^T (dot.c) on vectors of 16: against the
 * AVX2 one it takes 64 x 10 x 128 (a layer's forward with 10 outputs) from 2.4 to 2.0 us and
 * 64 x 32 x 784 from 30 to 23 us on one thread of a Sapphire Rapids Xeon.
 *
 * The tile is written with GCC's generic vectors (16 floats, one zmm register under the
 * target attribute; a * b + c becomes one FMA, as -std=gnu11 contracts) in arrays indexed by
 * constants inside fully unrolled loops, which GCC keeps in registers; the whole tile's k loop
 * is assembly (see tile_8x48 below). Built with GEMM_AVX512_PORTABLE, the file is the generic
 * vectors alone and compiles for any CPU: tests/avx512_logic.c checks every version that way
 * against a plain reference on machines without AVX-512, and as built here on those with it.
 */
#include <string.h>

#include "gemm_internal.h"

#ifndef GEMM_AVX512_PORTABLE
#include <immintrin.h>
#else
#include <math.h>
#endif

/* GEMM_AVX512_PORTABLE: the generic vectors alone, for the baseline instruction set (the
 * check in tests/avx512_logic.c, on CPUs without AVX-512) */
#ifdef GEMM_AVX512_PORTABLE
#define GEMM_AVX512_TARGET
#else
#define GEMM_AVX512_TARGET __attribute__((target("avx512f")))
#endif

#define MR 8
#define NV 3 /* vectors of 16 columns */
#define NR (NV * 16)

typedef float v16 __attribute__((vector_size(64)));

/* Unaligned loads and stores of 16 floats (one vmovups). */
#define LOAD16(v, ptr) memcpy(&(v), (ptr), sizeof(v16))
#define STORE16(ptr, v) memcpy((ptr), &(v), sizeof(v16))

/* x * y + z in one rounding, lane by lane (one vfmadd), and s in every lane. The FMAs are
 * written out rather than left to the compiler's contraction of `z += x * y`, which one
 * version of GCC applied in some instances of a kernel and not in others: then an element
 * computed by a 1 x 1 block differed in its last bits from the same element of a 3 x 4 one,
 * and results depended on how a product was cut into blocks. */
#ifdef GEMM_AVX512_PORTABLE
static inline v16 fma16(v16 x, v16 y, v16 z)
{
    v16 r;
    for (int l = 0; l < 16; l++)
        r[l] = fmaf(x[l], y[l], z[l]);
    return r;
}
#else
#define fma16(x, y, z) ((v16)_mm512_fmadd_ps((__m512)(x), (__m512)(y), (__m512)(z)))
#endif
#define SPLAT16(s) ((v16){(s), (s), (s), (s), (s), (s), (s), (s), (s), (s), (s), (s), (s), (s), (s), (s)})

/* The k loop of the first R rows and V vectors: acc[i][v] += A(i, p) * B(p, 16v ...) for
 * p = 0 .. kc-1 in order, A(i, p) at a[i*rsa + p*csa]. Called with rsa or csa the constant 1,
 * so that the addresses of a step's values fold into constant offsets. */
GEMM_AVX512_TARGET static inline __attribute__((always_inline)) void tile_steps(
    const int R, const int V, int64_t kc, const float *a, int64_t rsa, int64_t csa,
    const float *b, int64_t rsb, v16 acc[MR][NV])
{
    for (int64_t p = 0; p < kc; p++, a += csa, b += rsb) {
        v16 bv[NV];
#pragma GCC unroll 3
        for (int v = 0; v < V; v++)
            LOAD16(bv[v], b + 16 * v);
#pragma GCC unroll 8
        for (int i = 0; i < R; i++) {
            const float ai = a[i * rsa];
#pragma GCC unroll 3
            for (int v = 0; v < V; v++)
                acc[i][v] = fma16(SPLAT16(ai), bv[v], acc[i][v]);
        }
    }
}

/* The first R rows and V vectors of the tile, of which the first `cols` columns are C's
 * (16 (V - 1) < cols <= 16 V); R and V are constant in each instance below, so that the loops
 * unroll and the accumulators stay in registers. A's rows past R are not read, nor B's columns
 * past 16 V; C is read (beta != 0) and written in its first R rows and `cols` columns only. */
GEMM_AVX512_TARGET static inline __attribute__((always_inline)) void tile_body(
    const int R, const int V, int64_t kc, const float *a, int64_t rsa, int64_t csa,
    const float *b, int64_t rsb, float *c, int64_t ldc, float beta, int cols)
{
    v16 acc[MR][NV];
#pragma GCC unroll 8
    for (int i = 0; i < R; i++) {
#pragma GCC unroll 3
        for (int v = 0; v < V; v++)
            acc[i][v] = (v16){0};
        __builtin_prefetch(c + i * ldc);
        __builtin_prefetch(c + i * ldc + cols - 1);
    }

    if (rsa == 1) /* a packed micro-panel, or a transposed A: a step's values are adjacent */
        tile_steps(R, V, kc, a, 1, csa, b, rsb, acc);
    else /* rows of A read in place (csa == 1) */
        tile_steps(R, V, kc, a, rsa, 1, b, rsb, acc);

    /* C = beta * C + acc, one rounding, as the AVX2 kernel does; the last vector's columns
     * past `cols` are neither read nor written */
    const size_t tail = sizeof(float) * (size_t)(cols - 16 * (V - 1));
#pragma GCC unroll 8
    for (int i = 0; i < R; i++) {
        float *ci = c + i * ldc;
#pragma GCC unroll 3
        for (int v = 0; v < V; v++) {
            const int whole = v < V - 1 || tail == sizeof(v16);
            v16 cv = (v16){0};
            if (beta != 0.0f) {
                if (whole)
                    LOAD16(cv, ci + 16 * v);
                else
                    memcpy(&cv, ci + 16 * v, tail);
                acc[i][v] = fma16(SPLAT16(beta), cv, acc[i][v]);
            }
            if (whole)
                STORE16(ci + 16 * v, acc[i][v]);
            else
                memcpy(ci + 16 * v, &acc[i][v], tail);
        }
    }
}

typedef void (*part_fn)(int64_t kc, const float *a, int64_t rsa, int64_t csa, const float *b,
                        int64_t rsb, float *c, int64_t ldc, float beta, int cols);

#define TILE_RV(R, V)                                                                         \
    GEMM_AVX512_TARGET static void tile_##R##x##V(int64_t kc, const float *a, int64_t rsa,    \
                                                  int64_t csa, const float *b, int64_t rsb,   \
                                                  float *c, int64_t ldc, float beta, int cols)\
    {                                                                                         \
        tile_body(R, V, kc, a, rsa, csa, b, rsb, c, ldc, beta, cols);                         \
    }
#define TILE_R(R) TILE_RV(R, 1) TILE_RV(R, 2) TILE_RV(R, 3)
TILE_R(1)
TILE_R(2)
TILE_R(3)
TILE_R(4)
TILE_R(5)
TILE_R(6)
TILE_R(7)
TILE_R(8)

/* ---- the whole tile, in assembly ------------------------------------------------------ */

/* Compiled from the generic vectors above, the k loop broadcasts every value of A into one
 * register and runs one step of k per iteration, which held the whole tile at 87% of the FMA peak
 * (from L1, on a Sapphire Rapids Xeon); two steps per iteration, the broadcasts alternating
 * between two registers, reach 97%. So the whole tile is written out here, and the generic version
 * (tile_body) serves the edges and the portable build. Each element takes the same instructions in
 * both: FMAs of A(i, p) and B's vector in k order from zero, then C = beta * C + acc fused (or C =
 * acc when beta is zero). zmm0-zmm23 hold the tile (row i, vector v in zmm(3i + v)), zmm24 and
 * zmm25 the broadcasts, zmm29-zmm31 the row of B, zmm26 beta. */
#ifndef GEMM_AVX512_PORTABLE

#define Z(N) "%%zmm" #N
#define ASM_B "vmovups (%[b]), %%zmm29\n\t" "vmovups 64(%[b]), %%zmm30\n\t"                    \
              "vmovups 128(%[b]), %%zmm31\n\t"
/* row i of a step: broadcast its value of A (at address A) into BR and update its vectors */
#define ASM_ROW(A, BR, V0, V1, V2)                                                            \
    "vbroadcastss " A ", " BR "\n\t"                                                          \
    "vfmadd231ps %%zmm29, " BR ", " V0 "\n\t"                                                 \
    "vfmadd231ps %%zmm30, " BR ", " V1 "\n\t"                                                 \
    "vfmadd231ps %%zmm31, " BR ", " V2 "\n\t"
#define ASM_ROWS(A0, A1, A2, A3, A4, A5, A6, A7)                                              \
    ASM_ROW(A0, Z(24), Z(0), Z(1), Z(2)) ASM_ROW(A1, Z(25), Z(3), Z(4), Z(5))                 \
    ASM_ROW(A2, Z(24), Z(6), Z(7), Z(8)) ASM_ROW(A3, Z(25), Z(9), Z(10), Z(11))               \
    ASM_ROW(A4, Z(24), Z(12), Z(13), Z(14)) ASM_ROW(A5, Z(25), Z(15), Z(16), Z(17))           \
    ASM_ROW(A6, Z(24), Z(18), Z(19), Z(20)) ASM_ROW(A7, Z(25), Z(21), Z(22), Z(23))
/* one step of k, A packed or transposed: the 8 values adjacent at %[a] */
#define ASM_STEP_COL                                                                          \
    ASM_B ASM_ROWS("(%[a])", "4(%[a])", "8(%[a])", "12(%[a])", "16(%[a])", "20(%[a])",        \
                   "24(%[a])", "28(%[a])")                                                    \
    "add %[rsb], %[b]\n\t" "add %[csa], %[a]\n\t"
/* one step of k, rows of A in place: at a, a + rsa, a + 2 rsa, r3, r3 + rsa, r3 + 2 rsa, r6,
 * r6 + rsa */
#define ASM_STEP_ROW                                                                          \
    ASM_B ASM_ROWS("(%[a])", "(%[a],%[rsa],1)", "(%[a],%[rsa],2)", "(%[r3])",                 \
                   "(%[r3],%[rsa],1)", "(%[r3],%[rsa],2)", "(%[r6])", "(%[r6],%[rsa],1)")     \
    "add %[rsb], %[b]\n\t" "add $4, %[a]\n\t" "add $4, %[r3]\n\t" "add $4, %[r6]\n\t"

/* tile_8x48_stream: before each step, fetch the three lines of B's row STREAM_AHEAD steps on
 * (%[pfb]), for products whose B comes from beyond L2. A row of B is loaded one step of k
 * before its FMAs: from L3 (or from memory, or from rows far apart in place, whose pages and
 * strides the hardware prefetchers do not follow) the kernel waits on it, with too few lines
 * in flight to hide the wait. Fetched 8 steps ahead, 1024^3 ran 3% faster and 16 x 12544 x 72
 * (B read in place, rows 50 KB apart) about 10%; where B is in L2 already (64 x 784 x 128)
 * the extra instructions cost 3%, so the plain tile serves there. */
#define STREAM_AHEAD 8
#define ASM_FETCH_B                                                                           \
    "prefetcht0 (%[pfb])\n\t" "prefetcht0 64(%[pfb])\n\t" "prefetcht0 128(%[pfb])\n\t"        \
    "add %[rsb], %[pfb]\n\t"
#define ASM_STEP_COL_STREAM ASM_FETCH_B ASM_STEP_COL
#define ASM_STEP_ROW_STREAM ASM_FETCH_B ASM_STEP_ROW
#define ASM_ZERO                                                                              \
    "vpxord %%zmm0, %%zmm0, %%zmm0\n\t" "vmovaps %%zmm0, %%zmm1\n\t"                          \
    "vmovaps %%zmm0, %%zmm2\n\t" "vmovaps %%zmm0, %%zmm3\n\t" "vmovaps %%zmm0, %%zmm4\n\t"    \
    "vmovaps %%zmm0, %%zmm5\n\t" "vmovaps %%zmm0, %%zmm6\n\t" "vmovaps %%zmm0, %%zmm7\n\t"    \
    "vmovaps %%zmm0, %%zmm8\n\t" "vmovaps %%zmm0, %%zmm9\n\t" "vmovaps %%zmm0, %%zmm10\n\t"   \
    "vmovaps %%zmm0, %%zmm11\n\t" "vmovaps %%zmm0, %%zmm12\n\t"                               \
    "vmovaps %%zmm0, %%zmm13\n\t" "vmovaps %%zmm0, %%zmm14\n\t"                               \
    "vmovaps %%zmm0, %%zmm15\n\t" "vmovaps %%zmm0, %%zmm16\n\t"                               \
    "vmovaps %%zmm0, %%zmm17\n\t" "vmovaps %%zmm0, %%zmm18\n\t"                               \
    "vmovaps %%zmm0, %%zmm19\n\t" "vmovaps %%zmm0, %%zmm20\n\t"                               \
    "vmovaps %%zmm0, %%zmm21\n\t" "vmovaps %%zmm0, %%zmm22\n\t"                               \
    "vmovaps %%zmm0, %%zmm23\n\t"

/* The rows of the tile to C: rows 0-2 at %[c] + i ldc, 3-5 at %[c3] + (i-3) ldc, 6-7 at
 * %[c6] + (i-6) ldc. */
#define ASM_C_ROW(OP, M, V0, V1, V2) OP(M, V0, 0) OP(M, V1, 64) OP(M, V2, 128)
#define ASM_C(OP)                                                                             \
    ASM_C_ROW(OP, "%[c])", Z(0), Z(1), Z(2))                                                  \
    ASM_C_ROW(OP, "%[c],%[ldc],1)", Z(3), Z(4), Z(5))                                         \
    ASM_C_ROW(OP, "%[c],%[ldc],2)", Z(6), Z(7), Z(8))                                         \
    ASM_C_ROW(OP, "%[c3])", Z(9), Z(10), Z(11))                                               \
    ASM_C_ROW(OP, "%[c3],%[ldc],1)", Z(12), Z(13), Z(14))                                     \
    ASM_C_ROW(OP, "%[c3],%[ldc],2)", Z(15), Z(16), Z(17))                                     \
    ASM_C_ROW(OP, "%[c6])", Z(18), Z(19), Z(20))                                              \
    ASM_C_ROW(OP, "%[c6],%[ldc],1)", Z(21), Z(22), Z(23))
/* C = acc; C = beta * C + acc, one rounding (beta broadcast in zmm26). M is the end of an
 * address "base[,index,scale])", completed with the byte offset of the vector. */
#define ASM_STORE(M, V, OFF) "vmovups " V ", " #OFF "(" M "\n\t"
#define ASM_UPDATE(M, V, OFF) "vfmadd231ps " #OFF "(" M ", %%zmm26, " V "\n\t" ASM_STORE(M, V, OFF)
/* CROWS is ASM_C (or ASM_C2, the 8 x 32 tile's rows below) */
#define ASM_WRITE_C(CROWS)                                                                    \
    "vpxord %%zmm26, %%zmm26, %%zmm26\n\t"                                                    \
    "vucomiss %[beta], %%xmm26\n\t"                                                           \
    "jne 4f\n\t"                                                                              \
    "jp 4f\n\t"                                                                               \
    CROWS(ASM_STORE)                                                                          \
    "jmp 5f\n\t"                                                                              \
    "4:\n\t"                                                                                  \
    "vbroadcastss %[beta], %%zmm26\n\t"                                                       \
    CROWS(ASM_UPDATE)                                                                         \
    "5:\n\t"

/* The k loop: pairs of steps, then an odd last step, then the tile to C. */
#define ASM_TILE(STEP, CROWS)                                                                 \
    ASM_ZERO                                                                                  \
    "test %[n], %[n]\n\t"                                                                     \
    "jz 2f\n\t"                                                                               \
    "1:\n\t" STEP STEP                                                                        \
    "dec %[n]\n\t"                                                                            \
    "jnz 1b\n\t"                                                                              \
    "2:\n\t"                                                                                  \
    "test %[odd], %[odd]\n\t"                                                                 \
    "jz 3f\n\t" STEP                                                                          \
    "3:\n\t" ASM_WRITE_C(CROWS)

#define ASM_CLOBBERS                                                                          \
    "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",   \
        "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19",      \
        "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm29", "xmm30",      \
        "xmm31", "cc", "memory"

/* The same for a tile of 8 x 32 (two vectors of B per step): the right edge of a product
 * whose columns leave 32 in their last panel, such as the 128 outputs of a linear layer (48 +
 * 48 + 32), where it is a quarter of the work. Compiled from the generic vectors, one step of
 * k per iteration, this edge ran at 0.83 of the whole tile's rate per FMA. zmm(3i) and
 * zmm(3i + 1) hold row i, as in the whole tile. */
#define ASM_B2 "vmovups (%[b]), %%zmm29\n\t" "vmovups 64(%[b]), %%zmm30\n\t"
#define ASM_ROW2(A, BR, V0, V1)                                                               \
    "vbroadcastss " A ", " BR "\n\t"                                                          \
    "vfmadd231ps %%zmm29, " BR ", " V0 "\n\t"                                                 \
    "vfmadd231ps %%zmm30, " BR ", " V1 "\n\t"
#define ASM_ROWS2(A0, A1, A2, A3, A4, A5, A6, A7)                                             \
    ASM_ROW2(A0, Z(24), Z(0), Z(1)) ASM_ROW2(A1, Z(25), Z(3), Z(4))                           \
    ASM_ROW2(A2, Z(24), Z(6), Z(7)) ASM_ROW2(A3, Z(25), Z(9), Z(10))                          \
    ASM_ROW2(A4, Z(24), Z(12), Z(13)) ASM_ROW2(A5, Z(25), Z(15), Z(16))                       \
    ASM_ROW2(A6, Z(24), Z(18), Z(19)) ASM_ROW2(A7, Z(25), Z(21), Z(22))
#define ASM_STEP_COL2                                                                         \
    ASM_B2 ASM_ROWS2("(%[a])", "4(%[a])", "8(%[a])", "12(%[a])", "16(%[a])", "20(%[a])",      \
                     "24(%[a])", "28(%[a])")                                                  \
    "add %[rsb], %[b]\n\t" "add %[csa], %[a]\n\t"
#define ASM_STEP_ROW2                                                                         \
    ASM_B2 ASM_ROWS2("(%[a])", "(%[a],%[rsa],1)", "(%[a],%[rsa],2)", "(%[r3])",               \
                     "(%[r3],%[rsa],1)", "(%[r3],%[rsa],2)", "(%[r6])", "(%[r6],%[rsa],1)")   \
    "add %[rsb], %[b]\n\t" "add $4, %[a]\n\t" "add $4, %[r3]\n\t" "add $4, %[r6]\n\t"
#define ASM_C_ROW2(OP, M, V0, V1) OP(M, V0, 0) OP(M, V1, 64)
#define ASM_C2(OP)                                                                            \
    ASM_C_ROW2(OP, "%[c])", Z(0), Z(1))                                                       \
    ASM_C_ROW2(OP, "%[c],%[ldc],1)", Z(3), Z(4))                                              \
    ASM_C_ROW2(OP, "%[c],%[ldc],2)", Z(6), Z(7))                                              \
    ASM_C_ROW2(OP, "%[c3])", Z(9), Z(10))                                                     \
    ASM_C_ROW2(OP, "%[c3],%[ldc],1)", Z(12), Z(13))                                           \
    ASM_C_ROW2(OP, "%[c3],%[ldc],2)", Z(15), Z(16))                                           \
    ASM_C_ROW2(OP, "%[c6])", Z(18), Z(19))                                                    \
    ASM_C_ROW2(OP, "%[c6],%[ldc],1)", Z(21), Z(22))
/* The tile's first 16 V columns (V = 3: the whole tile; V = 2: the 8 x 32 tile), with B's rows
 * fetched ahead (`stream`, whole tile only) or not; V and `stream` are constant in each
 * instance below. */
GEMM_AVX512_TARGET static inline __attribute__((always_inline)) void tile_asm(
    const int V, const int stream, int64_t kc, const float *a, int64_t rsa, int64_t csa,
    const float *b, int64_t rsb, float *c, int64_t ldc, float beta)
{
    /* the C tile is needed only at the end: start fetching its rows now */
    for (int i = 0; i < MR; i++) {
        __builtin_prefetch(c + i * ldc);
        __builtin_prefetch(c + i * ldc + 16 * V - 1);
    }
    int64_t pairs = kc / 2, odd = kc % 2;
    const int64_t rsb_bytes = rsb * (int64_t)sizeof(float);
    const int64_t ldc_bytes = ldc * (int64_t)sizeof(float);
    float *c3 = c + 3 * ldc, *c6 = c + 6 * ldc;
    /* (past the panel's last row, the fetches run into what follows it: harmless, and for a
     * packed B the next micro-panel, read next) */
    const char *pfb = (const char *)b + STREAM_AHEAD * rsb_bytes;
    if (rsa == 1) {
        /* packed A (csa == 8), or a transposed A read in place (csa == lda) */
        const int64_t csa_bytes = csa * (int64_t)sizeof(float);
#define TILE_ASM(STEP, CROWS)                                                                 \
    __asm__ volatile(ASM_TILE(STEP, CROWS)                                                    \
                     : [a] "+r"(a), [b] "+r"(b), [n] "+r"(pairs), [pfb] "+r"(pfb)             \
                     : [odd] "r"(odd), [rsb] "r"(rsb_bytes), [csa] "r"(csa_bytes),            \
                       [c] "r"(c), [c3] "r"(c3), [c6] "r"(c6), [ldc] "r"(ldc_bytes),          \
                       [beta] "v"(beta)                                                       \
                     : ASM_CLOBBERS)
        if (V == 2)
            TILE_ASM(ASM_STEP_COL2, ASM_C2);
        else if (stream)
            TILE_ASM(ASM_STEP_COL_STREAM, ASM_C);
        else
            TILE_ASM(ASM_STEP_COL, ASM_C);
#undef TILE_ASM
    } else {
        /* the rows of A in place (csa == 1) */
        const int64_t rsa_bytes = rsa * (int64_t)sizeof(float);
        const float *r3 = a + 3 * rsa, *r6 = a + 6 * rsa;
#define TILE_ASM(STEP, CROWS)                                                                 \
    __asm__ volatile(ASM_TILE(STEP, CROWS)                                                    \
                     : [a] "+r"(a), [b] "+r"(b), [n] "+r"(pairs), [r3] "+r"(r3),              \
                       [r6] "+r"(r6), [pfb] "+r"(pfb)                                         \
                     : [odd] "r"(odd), [rsb] "r"(rsb_bytes), [rsa] "r"(rsa_bytes),            \
                       [c] "r"(c), [c3] "r"(c3), [c6] "r"(c6), [ldc] "r"(ldc_bytes),          \
                       [beta] "v"(beta)                                                       \
                     : ASM_CLOBBERS)
        if (V == 2)
            TILE_ASM(ASM_STEP_ROW2, ASM_C2);
        else if (stream)
            TILE_ASM(ASM_STEP_ROW_STREAM, ASM_C);
        else
            TILE_ASM(ASM_STEP_ROW, ASM_C);
#undef TILE_ASM
    }
}

/* gemm_tile_fn: the whole tile */
GEMM_AVX512_TARGET static void tile_8x48(int64_t kc, const float *a, int64_t rsa, int64_t csa,
                                         const float *b, int64_t rsb, float *c, int64_t ldc,
                                         float beta)
{
    tile_asm(3, 0, kc, a, rsa, csa, b, rsb, c, ldc, beta);
}

/* gemm_tile_fn: the whole tile, B's rows fetched ahead */
GEMM_AVX512_TARGET static void tile_8x48_stream(int64_t kc, const float *a, int64_t rsa,
                                                int64_t csa, const float *b, int64_t rsb,
                                                float *c, int64_t ldc, float beta)
{
    tile_asm(3, 1, kc, a, rsa, csa, b, rsb, c, ldc, beta);
}

/* part_fn for 8 rows and 17 to 32 columns: the assembly when the columns fill both vectors */
GEMM_AVX512_TARGET static void tile_8x2_fast(int64_t kc, const float *a, int64_t rsa,
                                             int64_t csa, const float *b, int64_t rsb, float *c,
                                             int64_t ldc, float beta, int cols)
{
    if (cols == 32)
        tile_asm(2, 0, kc, a, rsa, csa, b, rsb, c, ldc, beta);
    else
        tile_8x2(kc, a, rsa, csa, b, rsb, c, ldc, beta, cols);
}

#else

GEMM_AVX512_TARGET static void tile_8x48(int64_t kc, const float *a, int64_t rsa, int64_t csa,
                                         const float *b, int64_t rsb, float *c, int64_t ldc,
                                         float beta)
{
    tile_body(MR, NV, kc, a, rsa, csa, b, rsb, c, ldc, beta, NR);
}

#define tile_8x2_fast tile_8x2
#define tile_8x48_stream tile_8x48

#endif

/* gemm_tile_part_fn: the instance for `rows` and the vectors that `cols` spans */
static void tile_part_8x48(int rows, int cols, int64_t kc, const float *a, int64_t rsa,
                           int64_t csa, const float *b, int64_t rsb, float *c, int64_t ldc,
                           float beta)
{
    static const part_fn by_shape[MR][NV] = {
        {tile_1x1, tile_1x2, tile_1x3}, {tile_2x1, tile_2x2, tile_2x3},
        {tile_3x1, tile_3x2, tile_3x3}, {tile_4x1, tile_4x2, tile_4x3},
        {tile_5x1, tile_5x2, tile_5x3}, {tile_6x1, tile_6x2, tile_6x3},
        {tile_7x1, tile_7x2, tile_7x3}, {tile_8x1, tile_8x2_fast, tile_8x3}};
    by_shape[rows - 1][(cols - 1) / 16](kc, a, rsa, csa, b, rsb, c, ldc, beta, cols);
}

/* ---- dot products, for A B^T read in place (dot.c) ----------------------------------- */

typedef int32_t i16v __attribute__((vector_size(64)));

/* v = the first r (1..15) floats at p, the other lanes zero; nothing past p + r is read. */
GEMM_AVX512_TARGET static inline __attribute__((always_inline)) void load_first(v16 *v,
                                                                                const float *p,
                                                                                int64_t r)
{
#ifdef GEMM_AVX512_PORTABLE
    *v = (v16){0};
    memcpy(v, p, sizeof(float) * (size_t)r);
#else
    *v = (v16)_mm512_maskz_loadu_ps((__mmask16)((1u << r) - 1u), p);
#endif
}

/* out[j] = the sum of the 16 lanes of v[j] (j < 4), each in the same balanced tree: pairs of
 * adjacent lanes, then pairs of those, and so on. The four accumulators share each level's
 * shuffles: after the first level lanes 0-7 hold v[0]'s pairs and 8-15 v[1]'s, after the
 * second each quarter of the vector holds one accumulator's four partial sums. */
GEMM_AVX512_TARGET static inline __attribute__((always_inline)) void hsum16x4(const v16 v[4],
                                                                              float *out)
{
    const i16v even = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};
    const i16v odd = even + 1;
    const v16 s01 = __builtin_shuffle(v[0], v[1], even) + __builtin_shuffle(v[0], v[1], odd);
    const v16 s23 = __builtin_shuffle(v[2], v[3], even) + __builtin_shuffle(v[2], v[3], odd);
    const v16 q = __builtin_shuffle(s01, s23, even) + __builtin_shuffle(s01, s23, odd);
    const v16 r = __builtin_shuffle(q, q, even) + __builtin_shuffle(q, q, odd);
    const v16 t = __builtin_shuffle(r, r, even) + __builtin_shuffle(r, r, odd);
    memcpy(out, &t, 4 * sizeof(float));
}

/* An empty asm that takes v in a register and gives it back: GCC otherwise folds a row of B's
 * load into each of the R FMAs that use it (15 loads per step of a 3 x 4 block instead of 7),
 * which held the kernel at one FMA per cycle. */
#ifdef GEMM_AVX512_PORTABLE
#define IN_REGISTER(v) ((void)0)
#else
#define IN_REGISTER(v) __asm__("" : "+v"(v))
#endif

/* out[i*4 + j] = sum over p < kc of a[i][p] * b[j][p] for the first R (1..3) rows of A and
 * the first C (1..4) rows of B: the AVX2 kernel's scheme (kernel_avx2.c, dot_body) on vectors
 * of 16. R x C accumulators (lane l sums p = l, l+16, ...), R + C loads per R x C FMAs; a
 * partial last vector is loaded under a mask (zeros add nothing); then hsum16x4. Every element
 * goes through the same instructions whatever R and C are. Against the AVX2 kernel, each step
 * of k covers twice the length for the same instructions; the lane sums at the end cost more
 * (5 levels of shuffles for 4 accumulators), which k of 32 and more repays. */
GEMM_AVX512_TARGET static inline __attribute__((always_inline)) void dot_body(
    const int R, const int C, int64_t kc, const float *const a[3], const float *const b[4],
    float *out)
{
    v16 acc[3][4], x[3];
#pragma GCC unroll 3
    for (int i = 0; i < R; i++)
#pragma GCC unroll 4
        for (int j = 0; j < C; j++)
            acc[i][j] = (v16){0};
    int64_t p = 0;
#define DOT_STEP(LOAD)                                                                        \
    do {                                                                                      \
        _Pragma("GCC unroll 3") for (int i = 0; i < R; i++) LOAD(x[i], a[i] + p);             \
        _Pragma("GCC unroll 4") for (int j = 0; j < C; j++)                                   \
        {                                                                                     \
            v16 y;                                                                            \
            LOAD(y, b[j] + p);                                                                \
            IN_REGISTER(y);                                                                   \
            _Pragma("GCC unroll 3") for (int i = 0; i < R; i++) acc[i][j] =                   \
                fma16(x[i], y, acc[i][j]);                                                    \
        }                                                                                     \
    } while (0)
#define LOADU(v, ptr) LOAD16(v, ptr)
#define LOADM(v, ptr) load_first(&(v), ptr, kc - p)
    for (; p + 16 <= kc; p += 16)
        DOT_STEP(LOADU);
    if (p < kc)
        DOT_STEP(LOADM);
#undef LOADU
#undef LOADM
#undef DOT_STEP
    /* missing columns repeat the last one: their sums are not used */
#pragma GCC unroll 3
    for (int i = 0; i < R; i++) {
        const v16 v[4] = {acc[i][0], acc[i][C > 1 ? 1 : 0], acc[i][C > 2 ? 2 : C - 1],
                          acc[i][C - 1]};
        hsum16x4(v, out + 4 * i);
    }
}

/* gemm_dot_fn */
GEMM_DOT_VERSIONS(static, dot_16, GEMM_AVX512_TARGET, dot_body)

static const gemm_kernel avx512_kernel = {
    .name = "avx512",
    .mr = MR,
    .nr = NR,
    .kc_max = 256,
    .tile = tile_8x48,
    .tile_stream = tile_8x48_stream,
    .tile_part = tile_part_8x48,
    .part_cols = 16,
    /* the dot kernel loads 7 vectors per 12 FMAs, its rows of A from L2, so beside this tile
     * it wins only where one side is narrow (64 x 32 x 784: 22 us against 27 packed; 64 x 48
     * x 784: 33 us against 27) */
    .dot = dot_16,
    .dot_side = 32,
    .prefetch_b = 0,
    /* every AVX-512 CPU has AVX2, and these AVX2 kernels serve here too: */
    /* the row kernel sums each element as this tile does (FMAs in k order from zero, a fused
     * beta update); the packers have AVX2 paths for this tile */
    .row = gemm_row_avx2,
    .row_sweep = gemm_row_sweep_avx2,
    /* one row only: two rows run faster through the 8 x 48 tile with B in place (small.c,
     * gemm_few_rows; 2 x 2048 x 512: 154 us against 244) */
    .row_max_m = 1,
    .sweep_max_m = 1,
    .pack_a = gemm_pack_a_avx2,
    .pack_b = gemm_pack_b_avx512,
};

const gemm_kernel *gemm_kernel_avx512(void)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx2")
        || !__builtin_cpu_supports("fma"))
        return NULL;
    return &avx512_kernel;
}
