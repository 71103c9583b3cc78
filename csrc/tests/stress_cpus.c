/*
 * stress_cpus.c - more threads than CPUs: the pool keeps no more threads awake than it may
 * keep busy (csrc/README.md: more threads than CPUs).
 *
 * With PYRT_CPUS=1 and 4 threads, pyrt_max_concurrency() is 1 and, once the workers have gone
 * to sleep, a loop or reduction wakes none of them: every chunk runs on the caller, however
 * long. A coarse loop is exempt (its bodies may block rather than compute): its chunks that
 * sleep are taken by the workers it wakes. After PYRT_CPUS=4 and a resize, the cap lifts and
 * plain loops are shared again. Every chunk runs exactly once throughout.
 */
#include <stddef.h>
#include <stdint.h>

#include "stress.h"

#include <stdatomic.h>
#include <time.h>

typedef struct {
    _Atomic int32_t *visits;
    _Atomic int by_workers; /* chunks run by a pool worker (pyrt_worker_index() >= 0) */
    long nap_ns;            /* each chunk sleeps this long (0: computes a little) */
} loop_ctx;

static void nap(long ns)
{
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

static int chunk(void *vctx, int64_t start, int64_t stop)
{
    loop_ctx *c = vctx;
    if (pyrt_worker_index() >= 0)
        atomic_fetch_add_explicit(&c->by_workers, 1, memory_order_relaxed);
    if (c->nap_ns)
        nap(c->nap_ns);
    volatile double x = 0;
    for (int64_t i = start; i < stop; i++) {
        for (int k = 0; k < 200; k++)
            x += (double)k;
        atomic_fetch_add_explicit(&c->visits[i], 1, memory_order_relaxed);
    }
    return 0;
}

static int leaf(void *vctx, int64_t start, int64_t stop, void *acc)
{
    loop_ctx *c = vctx;
    if (pyrt_worker_index() >= 0)
        atomic_fetch_add_explicit(&c->by_workers, 1, memory_order_relaxed);
    int64_t s = 0;
    for (int64_t i = start; i < stop; i++)
        s += i;
    *(int64_t *)acc = s;
    return 0;
}

static int add(void *ctx, void *left, const void *right)
{
    (void)ctx;
    *(int64_t *)left += *(const int64_t *)right;
    return 0;
}

static void check_once(_Atomic int32_t *visits, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        int32_t v = atomic_load_explicit(&visits[i], memory_order_relaxed);
        CHECK(v == 1, "%s: index %lld ran %d times", what, (long long)i, v);
        atomic_store_explicit(&visits[i], 0, memory_order_relaxed);
    }
}

/* A loop of m chunks that sleep nap_ns each: every chunk must run once, some on workers. */
static void sleepy_loop_shared(int (*loop)(int64_t, int64_t, pyrt_range_fn, void *),
                               _Atomic int32_t *visits, int64_t m, long nap_ns, const char *what)
{
    loop_ctx c = {visits, 0, nap_ns};
    CHECK_RC(loop(m, 1, chunk, &c), PYRT_OK);
    check_once(visits, m, what);
    CHECK(atomic_load(&c.by_workers) > 0, "%s: sleeping chunks ran on the caller alone", what);
}

/* Wait (up to 5 s) until `count` workers sleep. */
static void workers_asleep(int count)
{
    for (int i = 0; i < 5000 && pyrt_workers_sleeping() < count; i++)
        nap(1000000);
    CHECK(pyrt_workers_sleeping() >= count, "%d of %d workers asleep after 5 s",
          pyrt_workers_sleeping(), count);
}

int main(void)
{
    double t0 = stress_now();
    setenv("PYRT_CPUS", "1", 1); /* before the pool reads it */
    stress_begin("stress_cpus");
    const int64_t n = stress_scaled(20000, 2000);
    _Atomic int32_t *visits = calloc((size_t)n, sizeof *visits);
    CHECK(visits, "out of memory");

    stress_set_threads(4);
    CHECK_RC(pyrt_init(), PYRT_OK);
    CHECK_RC(pyrt_max_concurrency(), 1);
    workers_asleep(3);

    /* one CPU: plain loops and reductions stay on the caller */
    const int rounds = (int)stress_scaled(50, 5);
    for (int r = 0; r < rounds; r++) {
        loop_ctx c = {visits, 0, 0};
        CHECK_RC(pyrt_parallel_for(n, 16, chunk, &c), PYRT_OK);
        check_once(visits, n, "loop on one CPU");
        CHECK(atomic_load(&c.by_workers) == 0, "round %d: workers ran %d chunks of a loop on "
              "one CPU", r, atomic_load(&c.by_workers));
        int64_t sum = 0;
        CHECK_RC(pyrt_parallel_reduce(n, 16, sizeof sum, leaf, add, &c, &sum), PYRT_OK);
        CHECK(sum == n * (n - 1) / 2, "reduction on one CPU: %lld", (long long)sum);
        CHECK(atomic_load(&c.by_workers) == 0, "round %d: workers ran %d leaves on one CPU", r,
              atomic_load(&c.by_workers));
    }

    /* a coarse loop of sleeping chunks still wakes workers */
    sleepy_loop_shared(pyrt_parallel_for_coarse, visits, 32, 2000000L, "coarse loop, one CPU");

    /* four CPUs: loops are shared again */
    setenv("PYRT_CPUS", "4", 1);
    stress_set_threads(4); /* a resize reads PYRT_CPUS again */
    CHECK_RC(pyrt_max_concurrency(), 4);
    sleepy_loop_shared(pyrt_parallel_for, visits, 64, 1000000L, "loop, four CPUs");
    free(visits);
    return stress_end("stress_cpus", t0);
}
