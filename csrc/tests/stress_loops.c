/*
 * stress_loops.c - many small parallel_for loops with random sizes and grains.
 *
 * Lazy splitting decides at run time who takes which half of a loop, so each loop here is a
 * fresh race between the caller and the thieves. Sizes and grains are drawn log-uniformly from
 * a seeded generator (tiny loops matter as much as large ones) and the per-index cost is uneven
 * so that steals happen in the middle of ranges. Each loop must call its body on disjoint
 * in-range chunks covering [0, n) exactly once, with no chunk shorter than the grain but a tail,
 * and must not return before its last chunk has.
 */
#include <stddef.h>
#include <stdint.h>

#include "stress.h"

#include <stdatomic.h>

typedef struct {
    int64_t n, grain;
    int coarse;                   /* run through pyrt_parallel_for_coarse */
    _Atomic uint8_t *visits;
    _Atomic int64_t short_chunks; /* chunks of fewer than `grain` indices */
    _Atomic int64_t in_flight;    /* chunks running now */
    _Atomic int64_t sink;         /* keeps the busy work from being optimised out */
    _Atomic int64_t chunks, stolen_chunks; /* all chunks, and those a pool worker ran */
} loop;

/* Uneven work: index i costs 0..15 rounds of a hash. */
static uint64_t busy_work(int64_t i)
{
    uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull + 1;
    int rounds = (int)((x >> 60) & 15);
    for (int k = 0; k < rounds; k++) {
        x ^= x >> 33;
        x *= 0xFF51AFD7ED558CCDull;
    }
    return x;
}

static int loop_chunk(void *ctx, int64_t start, int64_t stop)
{
    loop *l = ctx;
    atomic_fetch_add_explicit(&l->in_flight, 1, memory_order_relaxed);
    CHECK(0 <= start && start < stop && stop <= l->n, "chunk [%lld, %lld) outside [0, %lld)",
          (long long)start, (long long)stop, (long long)l->n);
    atomic_fetch_add_explicit(&l->chunks, 1, memory_order_relaxed);
    if (pyrt_worker_index() >= 0)
        atomic_fetch_add_explicit(&l->stolen_chunks, 1, memory_order_relaxed);
    if (stop - start < l->grain)
        atomic_fetch_add_explicit(&l->short_chunks, 1, memory_order_relaxed);
    uint64_t acc = 0;
    for (int64_t i = start; i < stop; i++) {
        acc += busy_work(i);
        atomic_fetch_add_explicit(&l->visits[i], 1, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&l->sink, (int64_t)(acc & 1), memory_order_relaxed);
    /* release: the caller's acquire load after the loop returns must see this chunk done */
    atomic_fetch_sub_explicit(&l->in_flight, 1, memory_order_release);
    return 0;
}

static void run_loop(loop *l, int threads)
{
    atomic_store_explicit(&l->short_chunks, 0, memory_order_relaxed);
    CHECK_RC((l->coarse ? pyrt_parallel_for_coarse : pyrt_parallel_for)(l->n, l->grain,
                                                                          loop_chunk, l),
             0);
    CHECK(atomic_load_explicit(&l->in_flight, memory_order_acquire) == 0,
          "parallel_for(n=%lld, grain=%lld) returned while a chunk still ran", (long long)l->n,
          (long long)l->grain);
    for (int64_t i = 0; i < l->n; i++) {
        int v = atomic_load_explicit(&l->visits[i], memory_order_relaxed);
        CHECK(v == 1, "parallel_for(n=%lld, grain=%lld) on %d threads visited index %lld %d times",
              (long long)l->n, (long long)l->grain, threads, (long long)i, v);
        atomic_store_explicit(&l->visits[i], 0, memory_order_relaxed);
    }
    int64_t shorts = atomic_load_explicit(&l->short_chunks, memory_order_relaxed);
    CHECK(shorts <= 1,
          "parallel_for(n=%lld, grain=%lld) on %d threads ran %lld chunks shorter than the grain",
          (long long)l->n, (long long)l->grain, threads, (long long)shorts);
}

/* Argument errors, and the empty loop, which calls nothing. */
static void check_edges(loop *l)
{
    CHECK_RC(pyrt_parallel_for(-1, 0, loop_chunk, l), PYRT_EINVAL);
    CHECK_RC(pyrt_parallel_for(10, -1, loop_chunk, l), PYRT_EINVAL);
    l->n = 0;
    l->grain = 0;
    CHECK_RC(pyrt_parallel_for(0, 0, loop_chunk, l), 0);
    CHECK_RC(pyrt_parallel_for(0, 5, loop_chunk, l), 0);
    /* grains so large that k * grain would overflow: one chunk */
    for (int coarse = 0; coarse < 2; coarse++) {
        l->coarse = coarse;
        l->n = 100;
        l->grain = INT64_MAX - 50;
        run_loop(l, pyrt_get_num_threads());
    }
}

/* A loop far too small to share (1024 floats of an axpy, about 300 ns), asked for in chunks
 * of 32, called back to back so that the other thread is awake and looking for work: the
 * caller keeps it (parallel_for.c, SPLIT_MIN_US), where it used to give half away in nearly
 * every call and run 4 times slower than on one thread. Timing-based, so only the plain build
 * checks it (under a sanitizer the same loop takes microseconds, and is worth sharing). */
static float tiny_x[1024], tiny_y[1024];
static _Atomic int tiny_shared;

static int tiny_chunk(void *ctx, int64_t start, int64_t stop)
{
    (void)ctx;
    if (pyrt_worker_index() >= 0)
        atomic_store_explicit(&tiny_shared, 1, memory_order_relaxed);
    for (int64_t i = start; i < stop; i++)
        tiny_y[i] = tiny_y[i] * 0.5f + tiny_x[i];
    return 0;
}

static void check_tiny_loops_stay(void)
{
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
    stress_set_threads(2);
    const int calls = 20000;
    int shared = 0;
    for (int k = 0; k < calls; k++) {
        atomic_store_explicit(&tiny_shared, 0, memory_order_relaxed);
        CHECK_RC(pyrt_parallel_for(1024, 32, tiny_chunk, NULL), 0);
        shared += atomic_load_explicit(&tiny_shared, memory_order_relaxed);
    }
    /* a preempted caller can make a loop look long, and then it is shared: on a busy shared
     * machine that happened in up to a quarter of the calls (1024 floats, 2 vCPUs, the other
     * stress programs running beside), where the fault this checks shared nearly every one */
    CHECK(shared < calls / 2, "a 300 ns loop was shared in %d of %d calls", shared, calls);
#endif
}

/* One body and context (a kernel's, on its stack) asked first for many cheap indices with a
 * coarse grain, then for 64 dear ones (about 0.4 ms each) with grain 1: the second loop is
 * split and shared. The rate the first one left (parallel_for.c, remember_rate) belongs to
 * its grain; when it answered for the body and context alone, the dear loop ran on the
 * caller alone in every call. A call lasts some 25 ms, so that a woken worker gets a CPU in
 * time even while the other stress programs keep the machine's CPUs busy. */
struct dear_job {
    long spins;
    _Atomic int shared;
};
static float dear_out[3000]; /* one slot per index, read at the end: the work is kept */

static int dear_chunk(void *ctx, int64_t start, int64_t stop)
{
    struct dear_job *j = ctx;
    if (pyrt_worker_index() >= 0)
        atomic_store_explicit(&j->shared, 1, memory_order_relaxed);
    for (int64_t i = start; i < stop; i++) {
        float s = 0.0f;
        for (long k = 0; k < j->spins; k++)
            s += (float)k;
        dear_out[i] = s;
    }
    return 0;
}

/* Calls of the 64-index dear loop (grain `grain`) run until one is shared, at most `most`;
 * returns how many ran unshared before it (`most` if none was shared). */
static int calls_until_shared(struct dear_job *j, int64_t grain, int most)
{
    int calls = 0;
    do {
        CHECK_RC(pyrt_parallel_for(64, grain, dear_chunk, j), 0);
    } while (!atomic_load_explicit(&j->shared, memory_order_relaxed) && ++calls < most);
    CHECK(dear_out[63] == dear_out[0] && dear_out[0] > 0.0f, "the dear loop's sums differ");
    return calls;
}

static void check_rates_belong_to_their_grain(void)
{
    stress_set_threads(2);
    struct dear_job j = {1, 0};
    for (int k = 0; k < 200; k++)
        CHECK_RC(pyrt_parallel_for(3000, 100, dear_chunk, &j), 0);
    j.spins = 400000;
    const int calls = calls_until_shared(&j, 1, 10);
    CHECK(calls < 10, "64 indices of 0.4 ms each ran on the caller alone in all %d calls", calls);
}

/* A loop of pyrt's grain first cheap (64 indices of a few ns: one chunk, run from
 * parallel_for's fast path), then dear (64 indices of about 10 us): it must be timed again
 * within COST_REFRESH_TINY (1024) of the fast path's calls, and from then on be split and
 * shared. The dear calls stop at the first one shared; 3000 are allowed (parallel_for.c,
 * tiny.countdown: a count that wrapped or was never set would never run out). */
static void check_tiny_loop_grows(void)
{
    stress_set_threads(2);
    struct dear_job j = {1, 0};
    for (int k = 0; k < 5000; k++)
        CHECK_RC(pyrt_parallel_for(64, 0, dear_chunk, &j), 0);
    j.spins = 10000;
    const int calls = calls_until_shared(&j, 0, 3000);
    CHECK(calls < 3000, "64 indices of 10 us each, once cheap, ran on the caller alone in all "
          "of %d calls", calls);
}

int main(void)
{
    double t0 = stress_now();
    stress_begin("stress_loops");
    stress_rng rng = stress_rng_make(stress_seed(), 3);
    const int64_t max_n = 200000;
    int64_t loops = stress_scaled(4000, 200);

    loop l = {0};
    l.visits = calloc((size_t)max_n, sizeof *l.visits);
    CHECK(l.visits != NULL, "out of memory");
    check_edges(&l);
    check_tiny_loops_stay();
    check_rates_belong_to_their_grain();
    check_tiny_loop_grows();

    int threads = 1;
    for (int64_t k = 0; k < loops; k++) {
        if (k % 50 == 0) {
            threads = 1 + (int)stress_below(&rng, STRESS_MAX_THREADS);
            stress_set_threads(threads);
        }
        l.n = 1 + stress_log_below(&rng, max_n);
        switch (stress_below(&rng, 3)) {
        case 0: l.grain = 0; break;                                /* the runtime's choice */
        case 1: l.grain = 1; break;                                /* finest splitting */
        default: l.grain = 1 + stress_log_below(&rng, l.n + 16); break; /* may exceed n */
        }
        l.coarse = (int)stress_below(&rng, 2);
        run_loop(&l, threads);
    }
    printf("stress_loops: %lld loops, %lld chunks, %lld of them on pool workers\n",
           (long long)loops, (long long)atomic_load(&l.chunks),
           (long long)atomic_load(&l.stolen_chunks));
    free(l.visits);
    return stress_end("stress_loops", t0);
}
