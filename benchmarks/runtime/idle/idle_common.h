/*
 * idle_common.h - the idle-pool measurement's shared parts.
 *
 * A program gives its pool some parallel work (so every worker has started and run), lets it
 * settle for 10 ms, then sleeps for a window of wall time and reports how much CPU time the
 * whole process used meanwhile, in percent of one core. A pool that parks its workers
 * reports close to 0; one that spins reports up to 100 per spinning thread.
 *
 * Usage: idle_<variant> [window_seconds=1].
 */
#ifndef PYRT_BENCH_IDLE_COMMON_H
#define PYRT_BENCH_IDLE_COMMON_H

#include <stdio.h>

#include "bench.h"

#define IDLE_N (1 << 20)
#define IDLE_ROUNDS 20
#define IDLE_SETTLE_SECONDS 0.010

/* The warm-up work: IDLE_ROUNDS passes over IDLE_N floats, run by the variant's parallel loop
 * as idle_body(data, start, stop). */
static inline void idle_body(float *y, int64_t start, int64_t stop)
{
    for (int64_t i = start; i < stop; i++)
        y[i] = y[i] * 0.5f + 1.0f;
}

static inline float *idle_alloc(void)
{
    float *y = (float *)calloc(IDLE_N, sizeof(float));
    if (!y) {
        fprintf(stderr, "idle: out of memory\n");
        exit(1);
    }
    return y;
}

/* CPU time of all the process's threads, user and system. CLOCK_PROCESS_CPUTIME_ID counts
 * the scheduler's exact run time, where getrusage and /proc/self/stat sample at timer ticks
 * (4 ms here), too coarse for a fraction of a percent over a second. */
static inline double idle_cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline void idle_sleep(double seconds)
{
    double end = bench_now() + seconds;
    for (double now = bench_now(); now < end; now = bench_now()) {
        double left = end - now;
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

struct idle_result {
    double window_seconds;
    double wall_seconds;
    double cpu_seconds;
};

/* Settle, then measure the process's CPU time over the window. */
static inline struct idle_result idle_measure(int argc, char **argv)
{
    struct idle_result r;
    r.window_seconds = bench_arg_double(argc, argv, 1, 1.0);
    idle_sleep(IDLE_SETTLE_SECONDS);
    double cpu0 = idle_cpu_seconds(), wall0 = bench_now();
    idle_sleep(r.window_seconds);
    r.cpu_seconds = idle_cpu_seconds() - cpu0;
    r.wall_seconds = bench_now() - wall0;
    return r;
}

/* `extra` is a JSON fragment with variant-specific fields, or "". */
static inline void idle_report(const char *variant, int threads, const char *extra,
                               struct idle_result r, const float *y)
{
    printf("{\"bench\": \"idle\", \"variant\": \"%s\", \"threads\": %d, %s%s"
           "\"settle_seconds\": %.3f, \"wall_seconds\": %.6f, \"cpu_seconds\": %.6f, "
           "\"cpu_percent\": %.3f, \"checksum\": %.1f}\n",
           variant, threads, extra, extra[0] ? ", " : "", IDLE_SETTLE_SECONDS, r.wall_seconds,
           r.cpu_seconds, 100.0 * r.cpu_seconds / r.wall_seconds, (double)y[IDLE_N - 1]);
}

#endif
