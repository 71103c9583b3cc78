/*
 * stream_triad.c - STREAM-style triad over float32, out[i] = a[i] * b[i] + c[i]: the memory
 * bandwidth ceiling for pyrt.ops.addcmul on this machine (three streams read, one written,
 * 16 bytes per element). Done the way STREAM does its kernels: every array is first touched
 * by the same static partition of threads that later streams over it (pages on the user's
 * NUMA node), and each timed pass is one `omp parallel for simd schedule(static)` loop.
 * Threads: OMP_NUM_THREADS. Build: gcc -O3 -march=native -fopenmp stream_triad.c.
 *
 *     stream_triad N REPS   ->   one JSON line: every pass's seconds, the median and best
 *                                GB/s (16 N bytes / time), and whether the result checked
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Multiples of 1/64 in [-2, 2) from a hash of the index: exact products and sums, so the
 * check below is exact whether or not the compiler fuses the multiply-add. */
static float value(uint32_t i, uint32_t salt)
{
    uint32_t h = (i ^ salt) * 0x9E3779B1u;
    h ^= h >> 15;
    h *= 0x85EBCA77u;
    h ^= h >> 13;
    return (float)((int32_t)(h & 255) - 128) / 64.0f;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void triad(float *restrict out, const float *restrict a, const float *restrict b,
                  const float *restrict c, int64_t n)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++)
        out[i] = a[i] * b[i] + c[i];
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s N REPS\n", argv[0]);
        return 2;
    }
    int64_t n = atoll(argv[1]);
    int reps = atoi(argv[2]);
    if (n < 1 || reps < 1) {
        fprintf(stderr, "N and REPS must be positive\n");
        return 2;
    }
    size_t bytes = ((size_t)n * sizeof(float) + 63) / 64 * 64;
    float *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes);
    float *c = aligned_alloc(64, bytes), *out = aligned_alloc(64, bytes);
    double *secs = malloc((size_t)reps * sizeof *secs);
    if (!a || !b || !c || !out || !secs) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }

    /* first touch with the partition the timed loop uses */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        a[i] = value((uint32_t)i, 1);
        b[i] = value((uint32_t)i, 2);
        c[i] = value((uint32_t)i, 3);
        out[i] = 0.0f;
    }

    triad(out, a, b, c, n); /* warm-up */
    for (int r = 0; r < reps; r++) {
        double t0 = omp_get_wtime();
        triad(out, a, b, c, n);
        secs[r] = omp_get_wtime() - t0;
    }

    int ok = 1;
    for (int64_t i = 0; i < n; i++)
        if (out[i] != a[i] * b[i] + c[i]) {
            ok = 0;
            break;
        }

    printf("{\"variant\": \"STREAM triad\", \"threads\": %d, \"n\": %lld, \"samples\": [",
           omp_get_max_threads(), (long long)n);
    for (int r = 0; r < reps; r++)
        printf("%s%.9g", r ? ", " : "", secs[r]);
    qsort(secs, (size_t)reps, sizeof *secs, cmp_double);
    double median = reps % 2 ? secs[reps / 2] : 0.5 * (secs[reps / 2 - 1] + secs[reps / 2]);
    printf("], \"median_s\": %.9g, \"gb_per_s\": %.6g, \"best_gb_per_s\": %.6g, \"ok\": %s}\n",
           median, 16e-9 * (double)n / median, 16e-9 * (double)n / secs[0],
           ok ? "true" : "false");
    free(a);
    free(b);
    free(c);
    free(out);
    free(secs);
    return ok ? 0 : 1;
}
