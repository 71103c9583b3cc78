/*
 * fib_omp.c - fib(n) with one OpenMP task per call (no cut-off), the textbook form: one
 * thread of a parallel region starts the recursion, each call makes fib(n-1) a task, computes
 * fib(n-2) and waits for its child with taskwait. Threads: OMP_NUM_THREADS.
 */
#include <omp.h>

#include "fib_common.h"

static long fib(int n)
{
    if (n < 2)
        return n;
    long x, y;
#pragma omp task shared(x)
    x = fib(n - 1);
    y = fib(n - 2);
#pragma omp taskwait
    return x + y;
}

static long fib_root(int n)
{
    long result = 0;
#pragma omp parallel
#pragma omp single
    result = fib(n);
    return result;
}

int main(int argc, char **argv)
{
    int n, reps;
    fib_parse(argc, argv, &n, &reps);

    long result = fib_root(FIB_WARMUP_N);
    double samples[FIB_MAX_REPS];
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now();
        result = fib_root(n);
        samples[r] = bench_now() - t0;
    }
    return fib_report("omp", omp_get_max_threads(), n, result, samples, reps);
}
