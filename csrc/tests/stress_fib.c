/*
 * stress_fib.c - millions of tiny tasks through pyrt_spawn/pyrt_sync.
 *
 * fib(n) with a task per call is the classic fork/join stress: almost no work per task, so
 * spawn, steal, sync and the leapfrogging of a waiter over its thief's tasks happen millions of
 * times per second. Every result is checked against the serial value. Two other shapes stress
 * what fib does not: a task that spawns thousands of children before syncing any (more than a
 * deque holds, so the runtime's overflow path runs) and a spawn outside the pool, which must
 * run at once.
 */
#include <stddef.h>
#include <stdint.h>

#include "stress.h"

#include <stdatomic.h>

/* ---- fib, one task per call ----------------------------------------------------------- */

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

/* Spawn both children and sync them last-first: two frames in the deque at once, so thieves
 * can take the older one while the owner takes back the newer one. */
static void fib2_task(void *arg)
{
    fib_frame *f = arg;
    if (f->n < 2) {
        f->result = f->n;
        return;
    }
    fib_frame a = {f->n - 1, 0}, b = {f->n - 2, 0};
    pyrt_task ta, tb;
    pyrt_spawn(&ta, fib2_task, &a);
    pyrt_spawn(&tb, fib2_task, &b);
    pyrt_sync(&tb);
    pyrt_sync(&ta);
    f->result = a.result + b.result;
}

static void check_fib(pyrt_task_fn fn, const char *name, int n, int threads)
{
    fib_frame root = {n, -1};
    CHECK_RC(pyrt_run(fn, &root), PYRT_OK);
    CHECK(root.result == fib_serial(n), "%s(%d) on %d threads: got %lld, expected %lld", name,
          n, threads, (long long)root.result, (long long)fib_serial(n));
}

/* ---- many siblings: more spawns outstanding than a deque holds ------------------------- */

/* Children that a pool worker ran rather than the spawner: shows that stealing happened. */
static _Atomic int64_t g_run_by_workers;

typedef struct {
    _Atomic int32_t *hits; /* per child: times it ran */
    int64_t index;
    int threads;
} sibling;

static void sibling_task(void *arg)
{
    sibling *s = arg;
    int w = pyrt_worker_index();
    CHECK(w >= -1 && w < s->threads, "worker index %d outside -1..%d", w, s->threads - 1);
    if (w >= 0)
        atomic_fetch_add_explicit(&g_run_by_workers, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->hits[s->index], 1, memory_order_relaxed);
}

typedef struct {
    int64_t count;
    int threads;
} siblings_job;

static void siblings_root(void *arg)
{
    siblings_job *job = arg;
    int64_t n = job->count;
    _Atomic int32_t *hits = calloc((size_t)n, sizeof *hits);
    pyrt_task *tasks = malloc((size_t)n * sizeof *tasks);
    sibling *frames = malloc((size_t)n * sizeof *frames);
    CHECK(hits && tasks && frames, "out of memory");
    for (int64_t i = 0; i < n; i++) {
        frames[i] = (sibling){hits, i, job->threads};
        pyrt_spawn(&tasks[i], sibling_task, &frames[i]);
    }
    for (int64_t i = n - 1; i >= 0; i--) {
        pyrt_sync(&tasks[i]);
        /* once synced, the child has run, whoever ran it */
        CHECK(atomic_load_explicit(&hits[i], memory_order_relaxed) == 1,
              "sibling %lld of %lld ran %d times by its sync", (long long)i, (long long)n,
              atomic_load_explicit(&hits[i], memory_order_relaxed));
    }
    free(frames);
    free(tasks);
    free(hits);
}

/* ---- spawn from outside the pool ------------------------------------------------------ */

static void set_flag(void *arg)
{
    *(int *)arg = 1;
}

static void check_spawn_outside_pool(void)
{
    int ran = 0;
    pyrt_task t;
    pyrt_spawn(&t, set_flag, &ran);
    CHECK(ran == 1, "pyrt_spawn outside the pool did not run its task at once");
    pyrt_sync(&t);
    CHECK_RC(pyrt_worker_index(), -1);
}

int main(void)
{
    double t0 = stress_now();
    stress_begin("stress_fib");

    /* A sweep runs fib(25..27), about 1.6 million tasks, on each thread count. */
    const int thread_counts[] = {1, 2, 3, 4, 8};
    const int ncounts = (int)(sizeof thread_counts / sizeof thread_counts[0]);
    int64_t sweeps = stress_scaled(8, 1);

    check_spawn_outside_pool();
    for (int64_t sweep = 0; sweep < sweeps; sweep++) {
        for (int c = 0; c < ncounts; c++) {
            int threads = thread_counts[c];
            stress_set_threads(threads);
            for (int n = 25; n <= 27; n++)
                check_fib(fib_task, "fib", n, threads);
            check_fib(fib2_task, "fib2", 24, threads);
            siblings_job job = {20000, threads};
            CHECK_RC(pyrt_run(siblings_root, &job), PYRT_OK);
            CHECK_RC(pyrt_worker_index(), -1);
        }
        stress_set_threads(1); /* the next sweep grows the pool again */
    }
    check_spawn_outside_pool();
    printf("stress_fib: %lld sweeps; %lld of %lld sibling tasks ran on pool workers\n",
           (long long)sweeps, (long long)atomic_load(&g_run_by_workers),
           (long long)(sweeps * ncounts * 20000));
    return stress_end("stress_fib", t0);
}
