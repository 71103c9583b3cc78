/*
 * tile.c - what the packed and the small path share about running the micro-kernel on C:
 * tiles at the edges of C, and which operand strides let a micro-panel be read in place.
 */
#include <string.h>

#include "gemm_internal.h"

/* A tile whose columns stick out, or whose rows do where the kernel has no version for fewer
 * rows: the kernel writes a buffer of nr columns (holding C's old values when beta != 0, zeros
 * elsewhere) and the part inside C is copied back. The version for fewer rows, where there is
 * one, writes the buffer too, so that A's rows past the edge are not read when A is read in
 * place. Every element goes through the same instructions as in a full tile. */
void gemm_edge_tile(const gemm_kernel *kr, int64_t kc, const float *a, int64_t rsa, int64_t csa,
                    const float *b, int64_t rsb, float *c, int64_t ldc, int64_t rows,
                    int64_t cols, float beta)
{
    const int mr = kr->mr, nr = kr->nr;
    float buf[GEMM_TILE_MAX] __attribute__((aligned(GEMM_ALIGN)));
    if (beta != 0.0f) {
        memset(buf, 0, sizeof(float) * (size_t)(mr * nr));
        for (int64_t i = 0; i < rows; i++)
            memcpy(buf + i * nr, c + i * ldc, sizeof(float) * (size_t)cols);
    }
    if (rows < mr && kr->tile_rows)
        kr->tile_rows((int)rows, kc, a, rsa, csa, b, rsb, buf, nr, beta);
    else
        kr->tile(kc, a, rsa, csa, b, rsb, buf, nr, beta);
    for (int64_t i = 0; i < rows; i++)
        memcpy(c + i * ldc, buf + i * nr, sizeof(float) * (size_t)cols);
}

/* Can `rows` rows `ld` floats apart (the rows of a micro-panel read in place, one per step of
 * k) stay in half of a 32 KB 8-way L1 of 64 sets and 64-byte lines? Rows whose stride is a
 * multiple of 64 bytes fall in 64 / gcd(stride in lines, 64) sets only: with ld a multiple of
 * 1024 all of them land in one set and evict each other, and every micro-tile after the first
 * reads the panel from L2 again, with too little work to hide the wait. */
int gemm_l1_holds(int64_t ld, int64_t rows)
{
    int64_t sets = 64;
    if (ld % 16 == 0) {
        int64_t s = (ld / 16) % 64, gcd = 64;
        while (s) {
            const int64_t t = gcd % s;
            gcd = s;
            s = t;
        }
        sets = 64 / gcd;
    }
    return rows <= sets * 8 / 2;
}
