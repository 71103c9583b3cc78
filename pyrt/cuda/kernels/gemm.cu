// C = alpha * op(A) @ op(B) + beta * C on row-major float32 matrices, batched over up to two
// leading dimensions: the product a captured CUDA graph runs, since CuPy refuses to call
// cuBLAS while a stream is being captured.
//
// A block of PYRT_BLOCK (256) threads computes a 64 x 64 tile of C, each thread 4 x 4 of its
// outputs (rows ty, ty + 16, ..., columns tx, tx + 16, ...: neighbouring threads write
// neighbouring columns, and read shared memory without bank conflicts). k advances in steps
// of 16: the block stages the 64 x 16 slice of op(A) and the 16 x 64 slice of op(B) in
// shared memory, zero outside the matrices, then every thread runs its 4 x 4 FMAs over them.
// Each output sums k in order, one FMA at a time, so results depend on the shapes alone.
//
// op(A)[r][i] is a[r * lda + i], or a[i * lda + r] when trans_a (A^T stored row-major); the
// same for B. The grid is one-dimensional, blockIdx.x = (z * tiles_m + tile row) * tiles_n +
// tile column, so that batches of any size fit; batch index z = i1 * nb2 + i2 offsets each
// operand by i1 * s1 + i2 * s2 elements: a stride of 0 broadcasts an operand over that
// dimension.
#include "common.cuh"

#if PYRT_BLOCK != 256
#error "pyrt_gemm's tiles assume 256 threads a block"
#endif

#define GEMM_T 64  // rows and columns of a tile of C
#define GEMM_K 16  // k per step

extern "C" __global__ void pyrt_gemm(const float *__restrict__ a, const float *__restrict__ b,
                                     float *__restrict__ c, long long m, long long n,
                                     long long k, long long trans_a, long long trans_b,
                                     long long lda, long long ldb, long long ldc,
                                     long long nb2, long long sa1, long long sa2,
                                     long long sb1, long long sb2, long long sc1,
                                     long long sc2, float alpha, float beta) {
    __shared__ float as[GEMM_K][GEMM_T + 4];  // as[i][r] = op(A)[row0 + r][k0 + i]
    __shared__ float bs[GEMM_K][GEMM_T + 4];  // bs[i][j] = op(B)[k0 + i][col0 + j]
    const long long tiles_n = (n + GEMM_T - 1) / GEMM_T, tiles_m = (m + GEMM_T - 1) / GEMM_T;
    const long long tile = blockIdx.x, z = tile / (tiles_n * tiles_m);
    const long long i1 = z / nb2, i2 = z % nb2;
    a += i1 * sa1 + i2 * sa2;
    b += i1 * sb1 + i2 * sb2;
    c += i1 * sc1 + i2 * sc2;
    const long long row0 = (tile / tiles_n) % tiles_m * GEMM_T, col0 = tile % tiles_n * GEMM_T;
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    float acc[4][4];
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;

    for (long long k0 = 0; k0 < k; k0 += GEMM_K) {
        // staging: consecutive threads read consecutive addresses of whichever layout
        for (int e = threadIdx.x; e < GEMM_T * GEMM_K; e += PYRT_BLOCK) {
            const int r = trans_a ? e % GEMM_T : e / GEMM_K;
            const int i = trans_a ? e / GEMM_T : e % GEMM_K;
            const long long gr = row0 + r, gi = k0 + i;
            as[i][r] = gr < m && gi < k ? (trans_a ? a[gi * lda + gr] : a[gr * lda + gi]) : 0.0f;
        }
        for (int e = threadIdx.x; e < GEMM_T * GEMM_K; e += PYRT_BLOCK) {
            const int j = trans_b ? e / GEMM_K : e % GEMM_T;
            const int i = trans_b ? e % GEMM_K : e / GEMM_T;
            const long long gj = col0 + j, gi = k0 + i;
            bs[i][j] = gj < n && gi < k ? (trans_b ? b[gj * ldb + gi] : b[gi * ldb + gj]) : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int i = 0; i < GEMM_K; ++i) {
            float av[4], bv[4];
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                av[q] = as[i][ty + 16 * q];
                bv[q] = bs[i][tx + 16 * q];
            }
#pragma unroll
            for (int p = 0; p < 4; ++p)
#pragma unroll
                for (int q = 0; q < 4; ++q) acc[p][q] = fmaf(av[p], bv[q], acc[p][q]);
        }
        __syncthreads();
    }

    for (int p = 0; p < 4; ++p) {
        const long long r = row0 + ty + 16 * p;
        if (r >= m) break;
        for (int q = 0; q < 4; ++q) {
            const long long j = col0 + tx + 16 * q;
            if (j >= n) break;
            float *out = c + r * ldc + j;
            // beta == 0 never reads C, which may hold garbage (an uninitialised result)
            *out = beta == 0.0f ? alpha * acc[p][q] : alpha * acc[p][q] + beta * *out;
        }
    }
}
