/*
 * loop_common.h - the small parallel_for benchmark's shared parts: the loop body, the data it
 * works on, the timing harness and the report.
 *
 * The body is scalar float work, y[i] = y[i]*a + x[i], identical in every variant. With 64 or
 * 1024 elements a call costs tens to hundreds of nanoseconds serially, so what the benchmark
 * measures is the runtime's cost of starting, splitting and joining a tiny loop.
 *
 * Usage: loop_<variant> [n=64] [calls=1e6] [max_seconds=2] [variant options]. After a warm-up
 * the harness makes up to `calls` calls of the whole loop in batches (of LOOP_BATCH calls, or
 * a hundredth of `calls` if that is fewer), stopping early once `max_seconds` have passed,
 * and reports the median over the batches of the time per call (and the mean over all calls).
 * A call takes tens of nanoseconds: the mean moved by a fifth between runs on a shared
 * machine, where a batch now and then loses the CPU to another process; the median batch does
 * not see those.
 */
#ifndef PYRT_BENCH_LOOP_COMMON_H
#define PYRT_BENCH_LOOP_COMMON_H

#include <stdio.h>

#include "bench.h"

#define LOOP_BATCH 1000
#define LOOP_MAX_BATCHES 4096 /* batches timed at most (the rest of the calls are not made) */

struct loop_data {
    float *y;
    const float *x;
    float a;
    int64_t n;
    int64_t calls;       /* most timed calls to make */
    double max_seconds;  /* ... or stop after this much time */
    int64_t warmup;      /* untimed calls made */
    int64_t done;        /* timed calls made */
    double seconds;      /* their total time */
    double median_call;  /* the median over the batches of a batch's time per call */
};

/* Read through a volatile so the compiler cannot specialise the body for a known constant. */
static volatile float loop_scale = 1.0f;

static inline void loop_body(struct loop_data *d, int64_t i)
{
    d->y[i] = d->y[i] * d->a + d->x[i];
}

/* One out-of-line copy, aligned, so every variant runs the same machine code for a range and
 * code placement does not decide the comparison. */
__attribute__((noinline, aligned(64), unused)) static void loop_range(struct loop_data *d,
                                                                     int64_t start, int64_t stop)
{
    for (int64_t i = start; i < stop; i++)
        loop_body(d, i);
}

/* Arrays on their own cache lines. With a = 1 and x[i] a small integer, y[i] counts the calls
 * that reached element i exactly (while it stays below 2^24), so loop_check sees any chunk
 * skipped or run twice in any call. */
static inline void loop_setup(int argc, char **argv, struct loop_data *d)
{
    d->n = bench_arg_int(argc, argv, 1, 64);
    d->calls = bench_arg_int(argc, argv, 2, 1000000);
    d->max_seconds = bench_arg_double(argc, argv, 3, 2.0);
    if (d->n < 1)
        d->n = 1;
    size_t bytes = ((size_t)d->n * sizeof(float) + 63) / 64 * 64;
    float *x = (float *)aligned_alloc(64, bytes);
    float *y = (float *)aligned_alloc(64, bytes);
    if (!x || !y) {
        fprintf(stderr, "loop: out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < d->n; i++) {
        x[i] = (float)(1 + i % 7);
        y[i] = 1.0f;
    }
    d->x = x;
    d->y = y;
    d->a = loop_scale;
    d->warmup = 0;
    d->done = 0;
    d->seconds = 0.0;
}

/* Times `call(d)`, which must run the whole loop once, as described at the top of the file. */
static inline void loop_measure(struct loop_data *d, void (*call)(struct loop_data *))
{
    int64_t warmup = d->calls / 10 < LOOP_BATCH ? d->calls / 10 : LOOP_BATCH;
    d->warmup = warmup;
    for (int64_t c = 0; c < warmup; c++) {
        call(d);
        bench_clobber();
    }
    static double per_call[LOOP_MAX_BATCHES];
    const int64_t hundredth = d->calls / 100 > 1 ? d->calls / 100 : 1;
    const int64_t per_batch = hundredth < LOOP_BATCH ? hundredth : LOOP_BATCH;
    int batches = 0;
    double t0 = bench_now(), t = t0;
    int64_t done = 0;
    while (done < d->calls && t - t0 < d->max_seconds && batches < LOOP_MAX_BATCHES) {
        int64_t batch = d->calls - done < per_batch ? d->calls - done : per_batch;
        const double start = t;
        for (int64_t c = 0; c < batch; c++) {
            call(d);
            bench_clobber();
        }
        done += batch;
        t = bench_now();
        per_call[batches++] = (t - start) / (double)batch;
    }
    d->done = done;
    d->seconds = t - t0;
    d->median_call = batches ? bench_median(per_call, batches) : 0.0;
}

/* Whether y holds what the same number of serial calls gives, bit for bit: each element sees
 * the same float operations in the same order whichever thread ran its chunk. */
static inline int loop_check(const struct loop_data *d)
{
    struct loop_data r = *d;
    float *y = (float *)malloc((size_t)d->n * sizeof(float));
    if (!y)
        return 0;
    for (int64_t i = 0; i < d->n; i++)
        y[i] = 1.0f;
    r.y = y;
    for (int64_t c = 0; c < d->warmup + d->done; c++)
        loop_range(&r, 0, r.n);
    int ok = memcmp(y, d->y, (size_t)d->n * sizeof(float)) == 0;
    free(y);
    return ok;
}

/* Prints the report line; returns the exit status: 1 if the loop computed a wrong y.
 * `config` is a JSON fragment with the variant's options, e.g. "\"grain\": 32" or "". */
static inline int loop_report(const char *variant, int threads, const char *config,
                              const struct loop_data *d)
{
    double checksum = 0.0;
    for (int64_t i = 0; i < d->n; i++)
        checksum += d->y[i];
    int ok = loop_check(d);
    const double mean = d->done ? d->seconds / (double)d->done : 0.0, per_call = d->median_call;
    printf("{\"bench\": \"loop\", \"variant\": \"%s\", \"threads\": %d, %s%s\"n\": %lld, "
           "\"calls\": %lld, \"total_seconds\": %.6f, \"seconds\": %.12f, "
           "\"mean_seconds\": %.12f, \"ns_per_call\": %.3f, \"ns_per_iter\": %.4f, "
           "\"checksum\": %.6f, \"ok\": %s}\n",
           variant, threads, config, config[0] ? ", " : "", (long long)d->n,
           (long long)d->done, d->seconds, per_call, mean, 1e9 * per_call,
           1e9 * per_call / (double)d->n, checksum, ok ? "true" : "false");
    if (!ok)
        fprintf(stderr, "%s: y differs from the serial result\n", variant);
    return ok ? 0 : 1;
}

#endif
