/*
 * stress_restart.c - the pool's life cycle: start, resize, shutdown, start again.
 *
 * Hundreds of rounds of pyrt_set_num_threads(k) with a random k, an optional pyrt_init, a
 * little work of each kind (loop, reduction, task tree), a random idle pause so that workers
 * fall asleep, and then either a pyrt_shutdown (every worker joined, none left started) or a
 * resize of the running pool. pyrt_shutdown while another thread is inside a parallel call
 * must let that call complete, every chunk run once. Under the sanitizers this catches races between
 * workers going to sleep and being stopped, and memory a stopped pool leaks or frees too early.
 */
#include <stddef.h>
#include <stdint.h>

#include "stress.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

/* ---- a little work of each kind ------------------------------------------------------- */

typedef struct {
    int64_t n;
    _Atomic int32_t *visits;
} cover;

static int cover_chunk(void *ctx, int64_t start, int64_t stop)
{
    cover *c = ctx;
    for (int64_t i = start; i < stop; i++)
        atomic_fetch_add_explicit(&c->visits[i], 1, memory_order_relaxed);
    return 0;
}

static int index_leaf(void *ctx, int64_t start, int64_t stop, void *acc)
{
    (void)ctx;
    int64_t s = 0;
    for (int64_t i = start; i < stop; i++)
        s += i;
    *(int64_t *)acc = s;
    return 0;
}

static int add_combine(void *ctx, void *left, const void *right)
{
    (void)ctx;
    *(int64_t *)left += *(const int64_t *)right;
    return 0;
}

static void small_work(stress_rng *rng, int threads)
{
    cover c;
    c.n = 1 + stress_log_below(rng, 20000);
    c.visits = calloc((size_t)c.n, sizeof *c.visits);
    CHECK(c.visits != NULL, "out of memory");
    CHECK_RC(pyrt_parallel_for(c.n, stress_below(rng, 8), cover_chunk, &c), 0);
    for (int64_t i = 0; i < c.n; i++)
        CHECK(atomic_load_explicit(&c.visits[i], memory_order_relaxed) == 1,
              "loop of %lld on %d threads visited %lld %d times", (long long)c.n, threads,
              (long long)i, atomic_load_explicit(&c.visits[i], memory_order_relaxed));
    free(c.visits);

    int64_t n = 1 + stress_log_below(rng, 100000), sum = -1;
    CHECK_RC(pyrt_parallel_reduce(n, 0, sizeof sum, index_leaf, add_combine, NULL, &sum), 0);
    CHECK(sum == n * (n - 1) / 2, "reduce sum of 0..%lld on %d threads gave %lld",
          (long long)(n - 1), threads, (long long)sum);

    fib_frame f = {15, -1};
    CHECK_RC(pyrt_run(fib_task, &f), PYRT_OK);
    CHECK(f.result == 610, "fib(15) on %d threads gave %lld", threads, (long long)f.result);
}

static void pause_us(int64_t us)
{
    struct timespec ts = {0, (long)(us * 1000)};
    nanosleep(&ts, NULL);
}

/* ---- shutdown while another thread is inside a parallel call -------------------------- */

typedef struct {
    _Atomic int entered; /* a chunk of the blocking loop is running */
    _Atomic int release; /* let the chunks finish */
    _Atomic int64_t done; /* indices processed */
    int rc;
} blocker;

static int blocking_chunk(void *ctx, int64_t start, int64_t stop)
{
    blocker *b = ctx;
    /* release/acquire: the main thread sees `entered` only once a chunk runs */
    atomic_store_explicit(&b->entered, 1, memory_order_release);
    while (!atomic_load_explicit(&b->release, memory_order_acquire))
        pause_us(50);
    atomic_fetch_add(&b->done, stop - start);
    return 0;
}

static void *blocking_caller(void *arg)
{
    blocker *b = arg;
    b->rc = pyrt_parallel_for(64, 1, blocking_chunk, b);
    return NULL;
}

static void *release_later(void *arg)
{
    blocker *b = arg;
    pause_us(20000);
    atomic_store_explicit(&b->release, 1, memory_order_release);
    return NULL;
}

/* The shutdown waits for the chunks workers took; the caller runs the rest itself. */
static void check_shutdown_during_call(void)
{
    blocker b = {0};
    pthread_t caller, releaser;
    CHECK(pthread_create(&caller, NULL, blocking_caller, &b) == 0, "pthread_create failed");
    while (!atomic_load_explicit(&b.entered, memory_order_acquire))
        pause_us(50);
    CHECK(pthread_create(&releaser, NULL, release_later, &b) == 0, "pthread_create failed");
    CHECK_RC(pyrt_shutdown(), PYRT_OK);
    CHECK(pthread_join(caller, NULL) == 0, "pthread_join failed");
    CHECK(pthread_join(releaser, NULL) == 0, "pthread_join failed");
    CHECK_RC(b.rc, 0);
    CHECK(atomic_load(&b.done) == 64, "%lld of 64 indices done", (long long)atomic_load(&b.done));
    CHECK_RC(pyrt_shutdown(), PYRT_OK);
    CHECK_RC(pyrt_workers_started(), 0);
}

/* ---- shutdown between the calls of another thread ------------------------------------- */

/* An outside thread keeps its slot between calls; a shutdown from another thread frees that
 * slot with the pool, so the thread's next call must take a slot in the fresh pool. */
typedef struct {
    _Atomic int step; /* odd: the caller is between calls; even: the main thread let it go on */
    int calls;
    uint64_t seed;
} idle_caller;

static void *idle_caller_main(void *arg)
{
    idle_caller *ic = arg;
    stress_rng rng = stress_rng_make(ic->seed, 8);
    for (int k = 0; k < ic->calls; k++) {
        small_work(&rng, pyrt_get_num_threads());
        /* release: the main thread's shutdown starts after this call has returned */
        atomic_store_explicit(&ic->step, 2 * k + 1, memory_order_release);
        while (atomic_load_explicit(&ic->step, memory_order_acquire) != 2 * k + 2)
            pause_us(50);
    }
    return NULL;
}

static void check_shutdown_between_calls(stress_rng *rng)
{
    idle_caller ic = {0, 4, stress_next(rng)};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, idle_caller_main, &ic) == 0, "pthread_create failed");
    for (int k = 0; k < ic.calls; k++) {
        while (atomic_load_explicit(&ic.step, memory_order_acquire) != 2 * k + 1)
            pause_us(50);
        CHECK_RC(pyrt_shutdown(), PYRT_OK);
        CHECK_RC(pyrt_workers_started(), 0);
        stress_set_threads(1 + (int)stress_below(rng, STRESS_MAX_THREADS));
        atomic_store_explicit(&ic.step, 2 * k + 2, memory_order_release);
    }
    CHECK(pthread_join(t, NULL) == 0, "pthread_join failed");
}

/* ---- argument errors leave the count alone -------------------------------------------- */

static void check_bad_counts(void)
{
    int before = pyrt_get_num_threads();
    CHECK_RC(pyrt_set_num_threads(0), PYRT_EINVAL);
    CHECK_RC(pyrt_set_num_threads(-3), PYRT_EINVAL);
    CHECK_RC(pyrt_set_num_threads(PYRT_MAX_THREADS + 1), PYRT_EINVAL);
    CHECK_RC(pyrt_get_num_threads(), before);
}

int main(void)
{
    double t0 = stress_now();
    stress_begin("stress_restart");
    stress_rng rng = stress_rng_make(stress_seed(), 6);
    int64_t rounds = stress_scaled(1000, 40);

    if (getenv("PYRT_NUM_THREADS") == NULL)
        CHECK(pyrt_get_num_threads() == pyrt_cpu_count(),
              "default thread count %d is not the cpu count %d", pyrt_get_num_threads(),
              pyrt_cpu_count());
    CHECK_RC(pyrt_worker_index(), -1);
    check_bad_counts();

    int stopped = 1; /* no pool is running */
    for (int64_t round = 0; round < rounds; round++) {
        int threads = 1 + (int)stress_below(&rng, STRESS_MAX_THREADS);
        stress_set_threads(threads);
        if (stress_below(&rng, 2)) {
            CHECK_RC(pyrt_init(), PYRT_OK);
            int started = pyrt_workers_started();
            if (stopped)
                CHECK(started == threads - 1, "pyrt_init on %d threads started %d workers",
                      threads, started);
            else
                CHECK(started >= threads - 1, "pyrt_init on %d threads left %d workers started",
                      threads, started);
        }
        small_work(&rng, threads);
        stopped = 0;

        if (stress_below(&rng, 4) == 0)
            pause_us(stress_below(&rng, 3000)); /* long enough, at times, for workers to sleep */
        int started = pyrt_workers_started(), sleeping = pyrt_workers_sleeping();
        CHECK(0 <= sleeping && sleeping <= started && started <= PYRT_MAX_THREADS,
              "%d workers sleeping of %d started", sleeping, started);

        switch (stress_below(&rng, 8)) {
        case 0:
            check_shutdown_during_call();
            stopped = 1;
            break;
        case 7:
            check_shutdown_between_calls(&rng);
            CHECK_RC(pyrt_shutdown(), PYRT_OK);
            stopped = 1;
            break;
        case 1: case 2: case 3: case 4:
            CHECK_RC(pyrt_shutdown(), PYRT_OK);
            CHECK_RC(pyrt_workers_started(), 0);
            CHECK_RC(pyrt_shutdown(), PYRT_OK); /* nothing left to stop */
            stopped = 1;
            break;
        default:
            break; /* 5, 6: keep the pool; the next round resizes it */
        }
        CHECK_RC(pyrt_worker_index(), -1);
    }
    return stress_end("stress_restart", t0);
}
