/*
 * fma_peak.c - the float32 multiply-add peak of this machine: the ceiling for any SGEMM.
 *
 * Each thread runs ACC independent chains of vector FMAs (acc = acc * x + y) on registers:
 * enough chains to cover the FMA latency on every port, no loads or stores in the loop. A
 * vector is the widest the compiler targets with -march=native (16 floats with AVX-512, else
 * 8). GFLOP/s counts 2 flops per lane per FMA over all threads; the threads run at once, as
 * a parallel GEMM's do. Threads: OMP_NUM_THREADS. Build: gcc -O3 -march=native -fopenmp.
 *
 *     fma_peak REPS   ->   one JSON line: every pass's seconds and GFLOP/s, and the median
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef __AVX512F__
#define LANES 16
#else
#define LANES 8
#endif
typedef float vec __attribute__((vector_size(4 * LANES)));

/* 12 chains: latency 4 x 2 ports = 8 in flight, with room to spare, and 12 + 2 registers
 * fit the 16 of AVX2 */
#define CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define ACC 12
#define STEPS 2000000L

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* STEPS steps of the chains; returns a value that depends on all of them (kept live) */
static float run(float seed)
{
    const vec x = (vec){0} + 0.999999f, y = (vec){0} + 1e-6f;
#define DECL(i) vec a##i = (vec){0} + (seed + (float)(i));
    CHAINS(DECL)
    for (long s = 0; s < STEPS; s++) {
#define STEP(i) a##i = a##i * x + y;
        CHAINS(STEP)
        /* an empty statement the compiler cannot see through: the chains stay in registers
         * and the loop is not folded */
        __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5));
        __asm__ volatile("" : "+x"(a6), "+x"(a7), "+x"(a8), "+x"(a9), "+x"(a10), "+x"(a11));
    }
    vec sum = (vec){0};
#define SUM(i) sum += a##i;
    CHAINS(SUM)
    float total = 0.0f;
    for (int l = 0; l < LANES; l++)
        total += sum[l];
    return total;
}

int main(int argc, char **argv)
{
    if (argc != 2 || atoi(argv[1]) < 1) {
        fprintf(stderr, "usage: %s REPS\n", argv[0]);
        return 2;
    }
    const int reps = atoi(argv[1]);
    const int threads = omp_get_max_threads();
    double *secs = malloc(sizeof(double) * (size_t)reps);
    double *sorted = malloc(sizeof(double) * (size_t)reps);
    if (!secs || !sorted)
        return 1;
    volatile float sink = 0.0f;
    for (int r = -1; r < reps; r++) { /* one untimed pass first: clocks and threads up */
        float total = 0.0f;
        double t0 = omp_get_wtime();
#pragma omp parallel reduction(+ : total)
        total += run((float)omp_get_thread_num());
        double dt = omp_get_wtime() - t0;
        sink += total;
        if (r >= 0)
            secs[r] = dt;
    }
    const double flops = 2.0 * LANES * ACC * (double)STEPS * threads;
    printf("{\"threads\": %d, \"lanes\": %d, \"samples\": [", threads, LANES);
    for (int r = 0; r < reps; r++)
        printf("%s%.9f", r ? ", " : "", secs[r]);
    for (int r = 0; r < reps; r++)
        sorted[r] = secs[r];
    qsort(sorted, (size_t)reps, sizeof(double), cmp_double);
    const double median = reps % 2 ? sorted[reps / 2]
                                   : 0.5 * (sorted[reps / 2 - 1] + sorted[reps / 2]);
    printf("], \"gflop_per_s\": %.2f, \"best_gflop_per_s\": %.2f}\n", 1e-9 * flops / median,
           1e-9 * flops / sorted[0]);
    free(secs);
    free(sorted);
    return sink != sink; /* (never NaN: 0) */
}
