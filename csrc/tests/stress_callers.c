/*
 * stress_callers.c - several outside threads calling into the pool at once.
 *
 * Eight pthreads, none of them a pool worker, each run loops, reductions and task trees in a
 * tight loop and check every result: coverage of their own loops, exact integer sums, float32
 * sums bitwise equal to the ones the main thread computed alone beforehand, fib values, and
 * pyrt_worker_index() == -1 between calls. In the first phase the thread count stays put; in
 * the second a ninth thread keeps resizing the pool and shutting it down under the callers'
 * feet; every call must still complete with the right result.
 */
#include <stddef.h>
#include <stdint.h>

#include "stress.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

enum { NCALLERS = 8, NCASES = 6 };

/* Reduction cases every caller repeats; ref_sum holds the main thread's result. */
static const int64_t case_n[NCASES] = {1, 33, 1000, 4099, 50000, 131072};
static const int64_t case_grain[NCASES] = {0, 1, 0, 16, 0, 1024};
static float ref_sum[NCASES];

static float *g_values; /* 131072 values of mixed magnitude, shared read-only */

/* ---- the work -------------------------------------------------------------------------- */

typedef struct {
    int64_t n;
    _Atomic int32_t *visits;
} cover;

static int cover_chunk(void *ctx, int64_t start, int64_t stop)
{
    cover *c = ctx;
    CHECK(0 <= start && start < stop && stop <= c->n, "chunk [%lld, %lld) outside [0, %lld)",
          (long long)start, (long long)stop, (long long)c->n);
    for (int64_t i = start; i < stop; i++)
        atomic_fetch_add_explicit(&c->visits[i], 1, memory_order_relaxed);
    return 0;
}

typedef struct {
    int64_t isum;
    float fsum;
} sums;

static int sums_leaf(void *ctx, int64_t start, int64_t stop, void *acc)
{
    (void)ctx;
    sums s = {0, 0.0f};
    for (int64_t i = start; i < stop; i++) {
        s.isum += i * i;
        s.fsum += g_values[i];
    }
    memcpy(acc, &s, sizeof s);
    return 0;
}

static int sums_combine(void *ctx, void *left, const void *right)
{
    (void)ctx;
    sums a, b;
    memcpy(&a, left, sizeof a);
    memcpy(&b, right, sizeof b);
    a.isum += b.isum;
    a.fsum += b.fsum;
    memcpy(left, &a, sizeof a);
    return 0;
}

static int64_t fib_serial(int n)
{
    int64_t a = 0, b = 1;
    for (int i = 0; i < n; i++) {
        int64_t t = a + b;
        a = b;
        b = t;
    }
    return a;
}

static sums reduce_case(int k)
{
    sums s;
    CHECK_RC(pyrt_parallel_reduce(case_n[k], case_grain[k], sizeof s, sums_leaf, sums_combine,
                                  NULL, &s),
             0);
    return s;
}

/* ---- a caller thread ------------------------------------------------------------------- */

typedef struct {
    int id;
    int64_t rounds;
    const char *phase;
    int64_t pause_us; /* at most this long between some calls; 0: never pause */
} caller;

static void *caller_main(void *arg)
{
    caller *me = arg;
    stress_rng rng = stress_rng_make(stress_seed(), 100 + (uint64_t)me->id);
    cover c;
    c.visits = calloc(30000, sizeof *c.visits);
    CHECK(c.visits != NULL, "out of memory");

    for (int64_t round = 0; round < me->rounds; round++) {
        CHECK(pyrt_worker_index() == -1, "%s, caller %d: worker index %d between calls",
              me->phase, me->id, pyrt_worker_index());

        c.n = 1 + stress_log_below(&rng, 30000);
        CHECK_RC(pyrt_parallel_for(c.n, stress_below(&rng, 4), cover_chunk, &c), 0);
        for (int64_t i = 0; i < c.n; i++) {
            int v = atomic_load_explicit(&c.visits[i], memory_order_relaxed);
            CHECK(v == 1, "%s, caller %d: loop of %lld visited %lld %d times", me->phase,
                  me->id, (long long)c.n, (long long)i, v);
            atomic_store_explicit(&c.visits[i], 0, memory_order_relaxed);
        }

        int k = (int)stress_below(&rng, NCASES);
        sums s = reduce_case(k);
        int64_t n = case_n[k];
        int64_t isum = (n - 1) * n * (2 * n - 1) / 6;
        CHECK(s.isum == isum, "%s, caller %d: sum of squares below %lld gave %lld, not %lld",
              me->phase, me->id, (long long)n, (long long)s.isum, (long long)isum);
        CHECK(memcmp(&s.fsum, &ref_sum[k], sizeof s.fsum) == 0,
              "%s, caller %d: float sum of case %d is %a, alone it was %a", me->phase, me->id, k,
              (double)s.fsum, (double)ref_sum[k]);

        /* pauses between calls give the resizer of phase two idle moments to shut down in */
        if (me->pause_us && stress_below(&rng, 4) == 0) {
            struct timespec ts = {0, (long)(stress_below(&rng, me->pause_us) * 1000)};
            nanosleep(&ts, NULL);
        }

        fib_frame f = {10 + (int)stress_below(&rng, 8), -1};
        CHECK_RC(pyrt_run(fib_task, &f), PYRT_OK);
        CHECK(f.result == fib_serial(f.n), "%s, caller %d: fib(%d) gave %lld", me->phase, me->id,
              f.n, (long long)f.result);
    }
    free(c.visits);
    return NULL;
}

/* ---- the pool resizer of phase two ----------------------------------------------------- */

typedef struct {
    _Atomic int done;
    int64_t shutdowns;
} churn;

static void *churn_main(void *arg)
{
    churn *ch = arg;
    stress_rng rng = stress_rng_make(stress_seed(), 99);
    while (!atomic_load_explicit(&ch->done, memory_order_acquire)) {
        int threads = 1 + (int)stress_below(&rng, STRESS_MAX_THREADS);
        int prev = pyrt_set_num_threads(threads);
        CHECK(prev >= 1 && prev <= STRESS_MAX_THREADS, "set_num_threads returned %d", prev);
        if (stress_below(&rng, 4) == 0) {
            CHECK_RC(pyrt_shutdown(), PYRT_OK);
            ch->shutdowns++;
        }
        struct timespec ts = {0, (long)(stress_below(&rng, 2000) * 1000)};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void run_phase(const char *phase, int64_t rounds, int with_churn)
{
    double t = stress_now();
    pthread_t threads[NCALLERS], churner;
    caller callers[NCALLERS];
    churn ch = {0};
    if (with_churn)
        CHECK(pthread_create(&churner, NULL, churn_main, &ch) == 0, "pthread_create failed");
    for (int i = 0; i < NCALLERS; i++) {
        callers[i] = (caller){i, rounds, phase, with_churn ? 300 : 0};
        CHECK(pthread_create(&threads[i], NULL, caller_main, &callers[i]) == 0,
              "pthread_create failed");
    }
    for (int i = 0; i < NCALLERS; i++)
        CHECK(pthread_join(threads[i], NULL) == 0, "pthread_join failed");
    if (with_churn) {
        atomic_store_explicit(&ch.done, 1, memory_order_release);
        CHECK(pthread_join(churner, NULL) == 0, "pthread_join failed");
        printf("stress_callers: %s: %lld shutdowns\n", phase, (long long)ch.shutdowns);
    }
    printf("stress_callers: %s: %d callers x %lld rounds in %.2f s\n", phase, NCALLERS,
           (long long)rounds, stress_now() - t);
}

int main(void)
{
    double t0 = stress_now();
    stress_begin("stress_callers");
    stress_rng rng = stress_rng_make(stress_seed(), 7);
    int64_t rounds = stress_scaled(1500, 20);

    g_values = malloc((size_t)case_n[NCASES - 1] * sizeof *g_values);
    CHECK(g_values != NULL, "out of memory");
    for (int64_t i = 0; i < case_n[NCASES - 1]; i++)
        g_values[i] = (float)((double)stress_below(&rng, 1 << 24) / (1 << 20) - 8.0)
                      * (float)(1 << stress_below(&rng, 12));

    /* The references: every case on one thread, before any caller starts. */
    stress_set_threads(1);
    for (int k = 0; k < NCASES; k++)
        ref_sum[k] = reduce_case(k).fsum;

    stress_set_threads(4);
    run_phase("fixed pool", rounds, 0);
    run_phase("resized pool", rounds, 1);
    free(g_values);
    return stress_end("stress_callers", t0);
}
