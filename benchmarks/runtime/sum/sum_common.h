/*
 * sum_common.h - the sum-of-floats benchmark's shared parts: the data, the leaf every
 * single-threaded piece of work runs, the check and the report.
 *
 * The data are multiples of 1/512 in (-0.5, 0.5), drawn from a hash of the index, with mean
 * zero. Every partial sum of such values stays far below 2^24/512 = 32768 in magnitude on these
 * sizes, so float accumulation is exact whatever the order: each variant must return the exact
 * sum (computed in double, untimed) to the last bit, and an element lost or counted twice
 * (never 0) shows. Float speed does not depend on the values: no zeros, no denormals.
 *
 * Usage: sum_<variant> [n=1e8] [reps=10]. One untimed pass warms the pool and the pages, then
 * `reps` timed passes; `seconds` is their median, GB/s counts 4*n bytes read per pass.
 */
#ifndef PYRT_BENCH_SUM_COMMON_H
#define PYRT_BENCH_SUM_COMMON_H

#include <stdio.h>

#include "bench.h"

#define SUM_MAX_REPS 64

static inline float sum_value(int64_t i)
{
    uint32_t h = (uint32_t)i * 0x9E3779B1u;
    h ^= h >> 15;
    h *= 0x85EBCA77u;
    h ^= h >> 13;
    return ((float)(2 * (h & 255)) - 255.0f) / 512.0f;
}

static inline void sum_fill(float *x, int64_t start, int64_t stop)
{
    for (int64_t i = start; i < stop; i++)
        x[i] = sum_value(i);
}

/* The leaf: eight independent float partial sums, so the adds form two 4-wide SSE vectors
 * (one 8-wide with AVX) instead of one serial dependency chain; merged in double at the end. */
static inline double sum_leaf(const float *x, int64_t n)
{
    float acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            acc[j] += x[i + j];
    for (; i < n; i++)
        acc[i % 8] += x[i];
    double s = 0.0;
    for (int j = 0; j < 8; j++)
        s += acc[j];
    return s;
}

struct sum_data {
    float *x;
    int64_t n;
    int reps;
    double reference;
};

/* Allocates the array; fills it on the calling thread unless the variant fills it itself. */
static inline void sum_setup(int argc, char **argv, struct sum_data *d, int fill)
{
    d->n = bench_arg_int(argc, argv, 1, 100000000);
    d->reps = (int)bench_arg_int(argc, argv, 2, 10);
    if (d->n < 1)
        d->n = 1;
    if (d->reps < 1)
        d->reps = 1;
    if (d->reps > SUM_MAX_REPS)
        d->reps = SUM_MAX_REPS;
    size_t bytes = ((size_t)d->n * sizeof(float) + 63) / 64 * 64;
    d->x = (float *)aligned_alloc(64, bytes);
    if (!d->x) {
        fprintf(stderr, "sum: out of memory\n");
        exit(1);
    }
    if (fill)
        sum_fill(d->x, 0, d->n);
    double s = 0.0;
    for (int64_t i = 0; i < d->n; i++)
        s += sum_value(i);
    d->reference = s;
}

/* Times `pass(d)` reps times after a warm-up; prints the report; returns the exit status. */
static inline int sum_run(const char *variant, int threads, struct sum_data *d,
                          double (*pass)(struct sum_data *))
{
    double result = pass(d);
    int ok = result == d->reference; /* every pass, the warm-up included, must be exact */
    double samples[SUM_MAX_REPS];
    for (int r = 0; r < d->reps; r++) {
        double t0 = bench_now();
        double s = pass(d);
        samples[r] = bench_now() - t0;
        if (s != d->reference) {
            ok = 0;
            result = s;
        }
    }
    double bytes = 4.0 * (double)d->n;
    printf("{\"bench\": \"sum\", \"variant\": \"%s\", \"threads\": %d, \"n\": %lld, "
           "\"reps\": %d, \"samples\": [",
           variant, threads, (long long)d->n, d->reps);
    double best = samples[0];
    for (int r = 0; r < d->reps; r++) {
        printf("%s%.9f", r ? ", " : "", samples[r]);
        if (samples[r] < best)
            best = samples[r];
    }
    double s = bench_median(samples, d->reps);
    printf("], \"seconds\": %.9f, \"gb_per_s\": %.3f, \"best_gb_per_s\": %.3f, "
           "\"result\": %.17g, \"reference\": %.17g, \"ok\": %s}\n",
           s, 1e-9 * bytes / s, 1e-9 * bytes / best, result, d->reference,
           ok ? "true" : "false");
    if (!ok)
        fprintf(stderr, "%s: sum %.17g differs from the exact %.17g\n", variant, result,
                d->reference);
    return ok ? 0 : 1;
}

#endif
