/*
 * bench.h - what every runtime benchmark program shares: a monotonic clock, argument parsing,
 * the thread count a peer runtime should use, and the median of a few samples.
 *
 * Each program prints exactly one JSON line on stdout; benchmarks/run_runtime.py reads it.
 * The helpers are static inline so the file works from C and from the TBB programs in C++.
 */
#ifndef PYRT_BENCH_H
#define PYRT_BENCH_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* argv[i] as an integer (accepts "1e8"), or `fallback` when the argument is absent. */
static inline int64_t bench_arg_int(int argc, char **argv, int i, int64_t fallback)
{
    return i < argc ? (int64_t)strtod(argv[i], NULL) : fallback;
}

static inline double bench_arg_double(int argc, char **argv, int i, double fallback)
{
    return i < argc ? strtod(argv[i], NULL) : fallback;
}

/* Thread count for runtimes that read no environment variable of their own (TBB): the value
 * of `name`, or 0 meaning "the runtime's default". */
static inline int bench_env_threads(const char *name)
{
    const char *s = getenv(name);
    return s ? atoi(s) : 0;
}

/* Median of n samples; sorts them in place (insertion sort: n is at most a few thousand). */
static inline double bench_median(double *v, int n)
{
    for (int i = 1; i < n; i++) {
        double x = v[i];
        int j = i - 1;
        while (j >= 0 && v[j] > x) {
            v[j + 1] = v[j];
            j--;
        }
        v[j + 1] = x;
    }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Keeps the compiler from merging or deleting repetitions of a loop whose effects it can see. */
static inline void bench_clobber(void)
{
    __asm__ volatile("" ::: "memory");
}

#endif
