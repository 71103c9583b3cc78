/*
 * tasks.c - running the independent tasks of a GEMM phase on the pool.
 */
#include "gemm_internal.h"

/* The tasks of a phase (packing jobs, tiles) are few and each worth tens of microseconds, so
 * they are split eagerly: the range is halved recursively, the upper half offered to thieves
 * at once and the lower half run here. pyrt_parallel_for would run a whole first chunk before
 * offering anything, leaving an idle worker waiting for one tile out of eight. Spawns nobody
 * steals cost a few nanoseconds each and run here in order. A spawn wakes no sleeping worker
 * (only a take does, when tasks remain below it), so the root takes once before any work
 * (run_root). */
typedef struct task_span {
    pyrt_range_fn fn;
    void *ctx;
    int64_t lo, hi;
} task_span;

static void run_span(void *arg)
{
    const task_span *s = arg;
    if (s->hi - s->lo == 1) {
        (void)s->fn(s->ctx, s->lo, s->hi);
        return;
    }
    const int64_t mid = s->lo + (s->hi - s->lo) / 2;
    task_span upper = {s->fn, s->ctx, mid, s->hi}, lower = {s->fn, s->ctx, s->lo, mid};
    pyrt_task t;
    pyrt_spawn(&t, run_span, &upper);
    run_span(&lower);
    pyrt_sync(&t);
}

static void nothing(void *arg)
{
    (void)arg;
}

/* The root: as run_span, but before any work it syncs an empty task spawned after the upper
 * half. That take finds the upper half queued below it and, if every other worker sleeps,
 * wakes one (a spawn alone wakes nobody, and the first sync in run_span would come only after
 * a whole leaf task has run here). */
static void run_root(void *arg)
{
    const task_span *s = arg;
    const int64_t mid = s->lo + (s->hi - s->lo) / 2;
    task_span upper = {s->fn, s->ctx, mid, s->hi}, lower = {s->fn, s->ctx, s->lo, mid};
    pyrt_task t, w;
    pyrt_spawn(&t, run_span, &upper);
    pyrt_spawn(&w, nothing, NULL);
    pyrt_sync(&w);
    run_span(&lower);
    pyrt_sync(&t);
}

void gemm_for_each(int64_t n, pyrt_range_fn fn, void *ctx)
{
    if (n <= 0)
        return;
    if (n == 1 || pyrt_max_concurrency() == 1) {
        (void)fn(ctx, 0, n);
        return;
    }
    task_span all = {fn, ctx, 0, n};
    (void)pyrt_run(run_root, &all);
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

#define SPAN_MIN_FLOPS (1 << 18) /* a task is at least ~2 us of work: worth a steal */

int64_t gemm_column_span(int64_t m, int64_t n, int64_t k, int64_t unit, int tasks_per_thread)
{
    /* one thread: one span, as long as the kernel takes (a row sweep's pieces of B's rows
     * are as long as the span) */
    const int threads = pyrt_max_concurrency();
    const int64_t tasks = threads == 1 ? 1 : (int64_t)threads * tasks_per_thread;
    int64_t span = ceil_div(n, tasks);
    const int64_t least = SPAN_MIN_FLOPS / (2 * m * k) + 1;
    if (span < least)
        span = least;
    return ceil_div(span, unit) * unit;
}

void gemm_plan_grid(int64_t pm, int64_t pn, int64_t *tiles_m, int64_t *tiles_n, int64_t *tm,
                    int64_t *tn, double flops, int64_t groups, int threads, int tasks_per_thread,
                    double min_flops)
{
    int64_t mt = *tiles_m, nt = 1;
    if (threads > 1) {
        int64_t want = ceil_div((int64_t)threads * tasks_per_thread, groups);
        const double most = flops / (double)groups / min_flops;
        /* capped by the work: a whole number of tiles per thread, or one tile (three tiles
         * on two threads take as long as four, and longer than two) */
        if ((double)want > most)
            want = most < threads ? 1 : (int64_t)(most / threads) * threads;
        while (mt * nt < want) {
            const int64_t per_m = ceil_div(pm, mt), per_n = ceil_div(pn, nt);
            if (per_n > 1 && (per_n >= per_m || per_m == 1))
                nt++;
            else if (per_m > 1)
                mt++;
            else
                break;
        }
    }
    *tm = ceil_div(pm, mt);
    *tn = ceil_div(pn, nt);
    *tiles_m = ceil_div(pm, *tm);
    *tiles_n = ceil_div(pn, *tn);
}
