/*
 * fib_common.h - the fib(n) benchmark's shared parts: argument handling and the report.
 *
 * Every variant computes fib(n) by the naive recursion with one task per call, so the task
 * count is the number of calls, 2*fib(n+1) - 1, the same figure for all variants.
 *
 * Usage: fib_<variant> [n=30] [reps=3]. One warm-up fib(20) starts the pool and touches the
 * stacks, then `reps` timed calls of fib(n); the report's `seconds` is their median.
 */
#ifndef PYRT_BENCH_FIB_COMMON_H
#define PYRT_BENCH_FIB_COMMON_H

#include <stdio.h>

#include "bench.h"

#define FIB_MAX_REPS 64
#define FIB_WARMUP_N 20

/* fib(n) by iteration, to check the variants' answers. */
static inline int64_t fib_iter(int n)
{
    int64_t a = 0, b = 1; /* fib(i), fib(i+1) */
    for (int i = 0; i < n; i++) {
        int64_t c = a + b;
        a = b;
        b = c;
    }
    return a;
}

static inline int64_t fib_calls(int n)
{
    return 2 * fib_iter(n + 1) - 1;
}

static inline void fib_parse(int argc, char **argv, int *n, int *reps)
{
    *n = (int)bench_arg_int(argc, argv, 1, 30);
    *reps = (int)bench_arg_int(argc, argv, 2, 3);
    if (*reps < 1)
        *reps = 1;
    if (*reps > FIB_MAX_REPS)
        *reps = FIB_MAX_REPS;
}

/* Prints the report line; returns the exit status: 1 if the result is wrong. */
static inline int fib_report(const char *variant, int threads, int n, long result,
                             double *samples, int reps)
{
    int64_t tasks = fib_calls(n);
    printf("{\"bench\": \"fib\", \"variant\": \"%s\", \"threads\": %d, \"n\": %d, "
           "\"result\": %ld, \"tasks\": %lld, \"reps\": %d, \"samples\": [",
           variant, threads, n, result, (long long)tasks, reps);
    for (int i = 0; i < reps; i++)
        printf("%s%.9f", i ? ", " : "", samples[i]);
    double s = bench_median(samples, reps);
    int ok = result == fib_iter(n);
    printf("], \"seconds\": %.9f, \"ns_per_task\": %.3f, \"ok\": %s}\n", s,
           1e9 * s / (double)tasks, ok ? "true" : "false");
    if (!ok)
        fprintf(stderr, "%s: fib(%d) = %ld, expected %lld\n", variant, n, result,
                (long long)fib_iter(n));
    return ok ? 0 : 1;
}

#endif
