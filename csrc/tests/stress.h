/*
 * stress.h - helpers shared by the scheduler stress programs in this folder.
 *
 * Each stress_*.c is one program testing one concept of the runtime. They run unchanged in a
 * plain build and under ThreadSanitizer and AddressSanitizer+UBSan (tests/test_c_stress.py),
 * so they check results themselves: a failed check prints where and why, then exits with
 * status 1 at once, without running atexit handlers that could race with live workers.
 *
 * Environment knobs, read once:
 *   STRESS_SCALE  multiplies the amount of work (default 1.0); sanitizer builds run below 1
 *   STRESS_SEED   seed of every random choice (default 1), printed so a failure can be replayed
 */
#ifndef PYRT_STRESS_H
#define PYRT_STRESS_H

#include <stddef.h>
#include <stdint.h>

#include "pyrt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Largest thread count the programs ask for: above the cores of a small machine on purpose,
 * so that workers are preempted at arbitrary points. */
#define STRESS_MAX_THREADS 8

static inline void stress_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));

static inline void stress_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "STRESS FAILURE at %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stdout);
    fflush(stderr);
    _exit(1);
}

/* CHECK(condition, printf-style message): the condition must hold, or the program fails. */
#define CHECK(cond, ...)                                                                         \
    do {                                                                                         \
        if (!(cond))                                                                             \
            stress_fail(__FILE__, __LINE__, __VA_ARGS__);                                        \
    } while (0)

/* A public-API call that must return `expect`. */
#define CHECK_RC(call, expect)                                                                   \
    do {                                                                                         \
        long long rc_ = (long long)(call);                                                       \
        if (rc_ != (long long)(expect))                                                          \
            stress_fail(__FILE__, __LINE__, "%s returned %lld, expected %lld", #call, rc_,      \
                        (long long)(expect));                                                    \
    } while (0)

static inline double stress_env_double(const char *name, double fallback)
{
    const char *s = getenv(name);
    if (s == NULL || *s == '\0')
        return fallback;
    char *end;
    double v = strtod(s, &end);
    if (*end != '\0' || !(v > 0))
        stress_fail(__FILE__, __LINE__, "%s=%s is not a positive number", name, s);
    return v;
}

static inline double stress_scale(void)
{
    return stress_env_double("STRESS_SCALE", 1.0);
}

static inline uint64_t stress_seed(void)
{
    return (uint64_t)stress_env_double("STRESS_SEED", 1.0);
}

/* `full` scaled by STRESS_SCALE, but never below `floor`. */
static inline int64_t stress_scaled(int64_t full, int64_t floor)
{
    int64_t v = (int64_t)((double)full * stress_scale());
    return v < floor ? floor : v;
}

/* xorshift64*: small, fast, and the same sequence on every run for a given seed. */
typedef struct {
    uint64_t s;
} stress_rng;

static inline stress_rng stress_rng_make(uint64_t seed, uint64_t stream)
{
    /* splitmix64 of (seed, stream), so nearby seeds and streams give unrelated sequences */
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + stream + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    stress_rng r = {z ? z : 1};
    return r;
}

static inline uint64_t stress_next(stress_rng *r)
{
    uint64_t x = r->s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* Uniform in [0, bound); bound > 0. The modulo bias is irrelevant here. */
static inline int64_t stress_below(stress_rng *r, int64_t bound)
{
    return (int64_t)(stress_next(r) % (uint64_t)bound);
}

/* Roughly log-uniform in [0, bound): small sizes are as likely as large ones. */
static inline int64_t stress_log_below(stress_rng *r, int64_t bound)
{
    int bits = 0;
    while (bits < 62 && ((int64_t)1 << bits) < bound)
        bits++;
    int64_t cap = (int64_t)1 << stress_below(r, bits + 1);
    int64_t v = stress_below(r, cap);
    return v < bound ? v : bound - 1;
}

/* fib(n) with one task per call, the shape of Cilk's fib: spawn fib(n-1), compute fib(n-2)
 * here, then sync. */
typedef struct {
    int n;
    int64_t result;
} fib_frame;

__attribute__((unused)) static void fib_task(void *arg)
{
    fib_frame *f = arg;
    if (f->n < 2) {
        f->result = f->n;
        return;
    }
    fib_frame a = {f->n - 1, 0}, b = {f->n - 2, 0};
    pyrt_task t;
    pyrt_spawn(&t, fib_task, &a);
    fib_task(&b);
    pyrt_sync(&t);
    f->result = a.result + b.result;
}

static inline double stress_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Set the thread count and check that the previous one is reported back. */
static inline void stress_set_threads(int n)
{
    int before = pyrt_get_num_threads();
    CHECK_RC(pyrt_set_num_threads(n), before);
    CHECK_RC(pyrt_get_num_threads(), n);
}

/* Program prologue: say what runs with which knobs. */
static inline void stress_begin(const char *name)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress lines survive a sanitizer's abort */
    printf("%s: scale %g seed %llu cpus %d threads %d\n", name, stress_scale(),
           (unsigned long long)stress_seed(), pyrt_cpu_count(), pyrt_get_num_threads());
    fflush(stdout);
}

/* Program epilogue: stop the pool (no parallel call may be left running) and report. */
static inline int stress_end(const char *name, double t0)
{
    CHECK_RC(pyrt_shutdown(), PYRT_OK);
    CHECK_RC(pyrt_workers_started(), 0);
    printf("%s: ok in %.2f s\n", name, stress_now() - t0);
    return 0;
}

#endif
