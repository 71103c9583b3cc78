/*
 * avx512_logic.c - checks the AVX-512 micro-kernel, on any CPU.
 *
 * kernel_avx512.c is written with GCC's generic vectors, but for the k loop of its whole tile
 * (assembly). Built with GEMM_AVX512_PORTABLE it is the generic vectors alone, for the baseline
 * instruction set, computing the same sums (each multiply-add rounded twice instead of once);
 * built plainly (on a CPU with AVX-512) it is the kernel pyrt runs. This program includes it and
 * compares its whole tile and every version for part of a tile (1 to 8 rows, 1 to 48 columns),
 * in every layout pyrt_sgemm passes to them (A packed, a transposed A in place, rows of A in
 * place; B packed or in place; an even and an odd number of steps; beta 0 with NaN in C, 1 and
 * -0.5), with a double-precision reference, and checks that they write nothing outside their
 * rows and columns; and the dot-product kernel for A B^T in each of its versions (1 to 3 rows
 * of A, 1 to 4 of B, lengths with and without a partial last vector). It prints "ok" and
 * exits 0, or prints the first mismatch and exits 1.
 *
 *     gcc -O2 -std=gnu11 -DGEMM_AVX512_PORTABLE -Icsrc avx512_logic.c -lm && ./a.out
 *     gcc -O2 -std=gnu11 -Icsrc avx512_logic.c -lm && ./a.out      # with AVX-512
 *
 * It is not part of the library build (the builder skips tests/ folders); the Python tests
 * compile and run it.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernel_avx512.c"

/* The kernel table of kernel_avx512.c names these; the check never calls them. */
void gemm_pack_a_avx2(const float *a, int64_t lda, int trans, int64_t i0, int64_t rows,
                      int64_t p0, int64_t kc, float alpha, int mr, float *dst)
{
    (void)a, (void)lda, (void)trans, (void)i0, (void)rows, (void)p0, (void)kc, (void)alpha;
    (void)mr, (void)dst;
    abort();
}

void gemm_pack_b_avx2(const float *b, int64_t ldb, int trans, int64_t p0, int64_t kc,
                      int64_t j0, int64_t cols, int nr, float *dst)
{
    (void)b, (void)ldb, (void)trans, (void)p0, (void)kc, (void)j0, (void)cols, (void)nr;
    (void)dst;
    abort();
}

void gemm_pack_b_avx512(const float *b, int64_t ldb, int trans, int64_t p0, int64_t kc,
                        int64_t j0, int64_t cols, int nr, float *dst)
{
    (void)b, (void)ldb, (void)trans, (void)p0, (void)kc, (void)j0, (void)cols, (void)nr;
    (void)dst;
    abort();
}

void gemm_row_avx2(int64_t kc, const float *a, const float *b, int64_t rsb, float *c, int cols,
                   float beta)
{
    (void)kc, (void)a, (void)b, (void)rsb, (void)c, (void)cols, (void)beta;
    abort();
}

void gemm_row_sweep_avx2(int64_t kc, int rows, const float *const *a, const float *b,
                         int64_t rsb, float *c, int64_t ldc, int64_t cols, float beta)
{
    (void)kc, (void)rows, (void)a, (void)b, (void)rsb, (void)c, (void)ldc, (void)cols;
    (void)beta;
    abort();
}

static uint64_t rng = 88172645463325252ull;

static float uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static int check(int rows, int cols, int64_t kc, int a_layout, int b_in_place, float beta)
{
    /* a_layout 0: packed (rsa 1, csa MR); 1: transposed A in place (rsa 1, csa lda);
     * 2: rows of A in place (rsa lda, csa 1) */
    const int64_t lda = a_layout == 2 ? kc + 5 : MR + 3, ldb = b_in_place ? NR + 9 : NR;
    const int64_t ldc = NR + 7;
    const int64_t rsa = a_layout == 2 ? lda : 1, csa = a_layout == 0 ? MR : a_layout == 1 ? lda : 1;
    const size_t a_len = a_layout == 2 ? (size_t)(MR * lda) : (size_t)(kc * csa + MR);
    float *a = malloc(sizeof(float) * a_len), *b = malloc(sizeof(float) * (size_t)(kc * ldb));
    float *c = malloc(sizeof(float) * (size_t)(MR * ldc));
    float *c0 = malloc(sizeof(float) * (size_t)(MR * ldc));
    for (size_t i = 0; i < a_len; i++)
        a[i] = uniform();
    for (int64_t i = 0; i < kc * ldb; i++)
        b[i] = uniform();
    for (int64_t i = 0; i < MR * ldc; i++)
        c[i] = c0[i] = beta == 0.0f ? NAN : uniform();
    if (rows == MR && cols == NR)
        tile_8x48(kc, a, rsa, csa, b, ldb, c, ldc, beta);
    else
        tile_part_8x48(rows, cols, kc, a, rsa, csa, b, ldb, c, ldc, beta);
    int ok = 1;
    for (int64_t i = 0; i < rows && ok; i++) {
        for (int64_t j = 0; j < cols && ok; j++) {
            double sum = 0.0, bound = 0.0;
            for (int64_t p = 0; p < kc; p++) {
                const double t = (double)a[i * rsa + p * csa] * (double)b[p * ldb + j];
                sum += t;
                bound += fabs(t);
            }
            if (beta != 0.0f) {
                sum += (double)beta * c0[i * ldc + j];
                bound += fabs((double)beta * c0[i * ldc + j]);
            }
            const double err = fabs((double)c[i * ldc + j] - sum);
            if (!(err <= 2.0 * (double)(kc + 2) * 1.2e-7 * bound + 1e-30)) {
                printf("mismatch: %d x %d, kc=%ld a_layout=%d b_in_place=%d beta=%g at (%ld, %ld): "
                       "%g vs %g\n", rows, cols, (long)kc, a_layout, b_in_place, beta, (long)i,
                       (long)j, c[i * ldc + j], sum);
                ok = 0;
            }
        }
    }
    /* the streaming version of the whole tile (B's rows fetched ahead) sums the same way */
    if (ok && rows == MR && cols == NR) {
        float *stream = malloc(sizeof(float) * (size_t)(MR * ldc));
        for (int64_t i = 0; i < MR * ldc; i++)
            stream[i] = c0[i];
        tile_8x48_stream(kc, a, rsa, csa, b, ldb, stream, ldc, beta);
        for (int64_t i = 0; i < MR * ldc && ok; i++)
            if (memcmp(&c[i], &stream[i], sizeof(float)) != 0) {
                printf("streaming tile, kc=%ld a_layout=%d beta=%g at %ld: %a, the tile's %a\n",
                       (long)kc, a_layout, beta, (long)i, stream[i], c[i]);
                ok = 0;
            }
        free(stream);
    }
    /* an edge version computes each element with the whole tile's instructions: its
     * elements are bitwise those of the whole tile on the same A and B (whose columns past
     * `cols` the whole tile reads too: every layout above holds all MR rows of A) */
    if (ok && (rows < MR || cols < NR)) {
        float *whole = malloc(sizeof(float) * (size_t)(MR * ldc));
        for (int64_t i = 0; i < MR * ldc; i++)
            whole[i] = c0[i];
        tile_8x48(kc, a, rsa, csa, b, ldb, whole, ldc, beta);
        for (int64_t i = 0; i < rows && ok; i++)
            for (int64_t j = 0; j < cols && ok; j++)
                if (memcmp(&c[i * ldc + j], &whole[i * ldc + j], sizeof(float)) != 0) {
                    printf("%d x %d, kc=%ld a_layout=%d beta=%g at (%ld, %ld): %a, the whole "
                           "tile's %a\n", rows, cols, (long)kc, a_layout, beta, (long)i,
                           (long)j, c[i * ldc + j], whole[i * ldc + j]);
                    ok = 0;
                }
        free(whole);
    }
    /* the columns past `cols`, and the rows past `rows`, are untouched */
    for (int64_t i = 0; i < MR && ok; i++)
        for (int64_t j = i < rows ? cols : 0; j < ldc && ok; j++)
            if (!(c[i * ldc + j] == c0[i * ldc + j] || (isnan(c[i * ldc + j]) && beta == 0.0f))) {
                printf("wrote outside the tile at (%ld, %ld)\n", (long)i, (long)j);
                ok = 0;
            }
    free(a);
    free(b);
    free(c);
    free(c0);
    return ok;
}

/* The dot-product kernel for `rows` x `cols` against a double reference, each row of A and B
 * at the end of its own allocation (a read past kc would go out of it); and every element
 * bitwise equal to the whole 3 x 4 block's. */
static int check_dot(int rows, int cols, int64_t kc)
{
    float *a[GEMM_DOT_MA], *b[GEMM_DOT_NB], *rows_a[GEMM_DOT_MA], *rows_b[GEMM_DOT_NB];
    for (int i = 0; i < GEMM_DOT_MA; i++) {
        rows_a[i] = malloc(sizeof(float) * (size_t)(kc + 1));
        a[i] = rows_a[i] + 1;
        for (int64_t p = 0; p < kc; p++)
            a[i][p] = uniform();
    }
    for (int j = 0; j < GEMM_DOT_NB; j++) {
        rows_b[j] = malloc(sizeof(float) * (size_t)(kc + 1));
        b[j] = rows_b[j] + 1;
        for (int64_t p = 0; p < kc; p++)
            b[j][p] = uniform();
    }
    float out[GEMM_DOT_MA * GEMM_DOT_NB], whole[GEMM_DOT_MA * GEMM_DOT_NB];
    dot_16(rows, cols, kc, (const float *const *)a, (const float *const *)b, out);
    dot_16(GEMM_DOT_MA, GEMM_DOT_NB, kc, (const float *const *)a, (const float *const *)b,
           whole);
    int ok = 1;
    for (int i = 0; i < rows && ok; i++) {
        for (int j = 0; j < cols && ok; j++) {
            double sum = 0.0, bound = 0.0;
            for (int64_t p = 0; p < kc; p++) {
                sum += (double)a[i][p] * (double)b[j][p];
                bound += fabs((double)a[i][p] * (double)b[j][p]);
            }
            const float got = out[i * GEMM_DOT_NB + j];
            if (!(fabs((double)got - sum) <= 2.0 * (double)(kc + 2) * 1.2e-7 * bound + 1e-30)) {
                printf("dot mismatch: %d x %d, kc=%ld at (%d, %d): %g vs %g\n", rows, cols,
                       (long)kc, i, j, got, sum);
                ok = 0;
            } else if (memcmp(&got, &whole[i * GEMM_DOT_NB + j], sizeof got) != 0) {
                printf("dot %d x %d, kc=%ld at (%d, %d): %a, the whole block's %a\n", rows,
                       cols, (long)kc, i, j, got, whole[i * GEMM_DOT_NB + j]);
                ok = 0;
            }
        }
    }
    for (int i = 0; i < GEMM_DOT_MA; i++)
        free(rows_a[i]);
    for (int j = 0; j < GEMM_DOT_NB; j++)
        free(rows_b[j]);
    return ok;
}

int main(void)
{
    const int64_t dot_kcs[] = {1, 7, 15, 16, 17, 31, 64, 128, 301, 1024};
    for (int rows = 1; rows <= GEMM_DOT_MA; rows++)
        for (int cols = 1; cols <= GEMM_DOT_NB; cols++)
            for (size_t q = 0; q < sizeof dot_kcs / sizeof dot_kcs[0]; q++)
                if (!check_dot(rows, cols, dot_kcs[q]))
                    return 1;
    const int64_t kcs[] = {1, 2, 7, 64, 301};
    const float betas[] = {0.0f, 1.0f, -0.5f};
    const int colss[] = {1, 9, 15, 16, 17, 31, 32, 33, 47, 48};
    for (int rows = 1; rows <= MR; rows++)
        for (size_t w = 0; w < sizeof colss / sizeof colss[0]; w++)
            for (size_t q = 0; q < sizeof kcs / sizeof kcs[0]; q++)
                for (int a_layout = 0; a_layout < 3; a_layout++)
                    for (int b_in_place = 0; b_in_place < 2; b_in_place++)
                        for (size_t s = 0; s < sizeof betas / sizeof betas[0]; s++)
                            if (!check(rows, colss[w], kcs[q], a_layout, b_in_place, betas[s]))
                                return 1;
    printf("ok\n");
    return 0;
}
