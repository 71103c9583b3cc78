/*
 * task.c - fork/join: spawn pushes a task frame on the caller's deque, sync takes it back or,
 * if a thief has it, works for that thief until it is done (leapfrogging).
 */
#define _GNU_SOURCE
#include <sched.h>

#include "internal.h"

/* `thief` value of a task that ran at spawn time (no pool, or a full deque): sync returns. */
#define THIEF_NONE (-1)
#define THIEF_INLINE (-2)

/* A waiting owner spins this long on a stolen child, helping its thief, before it yields, and
 * sleeps on the task's state word after WAIT_SLEEP_NS. */
#define WAIT_SPIN_NS 20000u
#define WAIT_SLEEP_NS 2000000u

static void run_inline(pyrt_task_impl *t, pyrt_task_fn fn, void *arg)
{
    atomic_store_explicit(&t->thief, THIEF_INLINE, memory_order_relaxed);
    fn(arg);
    atomic_store_explicit(&t->state, TASK_DONE, memory_order_relaxed);
}

void task_push(worker *w, pyrt_task_impl *t, pyrt_task_fn fn, void *arg)
{
    t->fn = fn;
    t->arg = arg;
    atomic_store_explicit(&t->state, TASK_QUEUED, memory_order_relaxed);
    atomic_store_explicit(&t->thief, THIEF_NONE, memory_order_relaxed);
    if (!deque_push(&w->dq, t))
        run_inline(t, fn, arg);
}

/* The owner waits for a stolen task. Leapfrogging: while the thief works on it, take tasks
 * back from the thief's deque (they are the stolen task's own children), so the waiter never
 * idles while the work it waits for can be shared. While it finds nothing it counts itself in
 * pool->searching, as an idle worker does: the thief's loops then split off halves for it
 * (parallel_for.c splits only when someone is idle). It stops counting while it runs a task
 * and before it sleeps, so that a sleeping owner never stops wake-ups of real idle workers. */
static void join_stolen(worker *w, pyrt_task_impl *t)
{
    pool *p = w->pool;
    bool idle = false; /* counted in p->searching */
    uint64_t start = 0;
    unsigned rounds = 0;
    for (;;) {
        /* acquire: pairs with the thief's release of TASK_DONE, so its results are visible */
        uint32_t s = atomic_load_explicit(&t->state, memory_order_acquire);
        if (s == TASK_DONE)
            break;
        if (s == TASK_QUEUED) { /* stolen, but the thief has not announced itself yet */
            cpu_relax();
            continue;
        }
        pyrt_task_impl *y;
        int thief = atomic_load_explicit(&t->thief, memory_order_relaxed);
        if (steal_one(w, thief, &y)) {
            if (idle)
                atomic_fetch_sub_explicit(&p->searching, 1, memory_order_relaxed);
            idle = false;
            task_run_stolen(w, y);
            rounds = 0;
            start = 0;
            continue;
        }
        if (!idle)
            atomic_fetch_add_explicit(&p->searching, 1, memory_order_relaxed);
        idle = true;
        if (++rounds % 16) {
            cpu_relax();
            continue;
        }
        uint64_t now = now_ns();
        if (!start)
            start = now;
        if (now - start < WAIT_SPIN_NS) {
            cpu_relax();
        } else if (now - start < WAIT_SLEEP_NS) {
            sched_yield();
        } else {
            /* long wait: sleep until the thief's exchange to TASK_DONE wakes us */
            atomic_fetch_sub_explicit(&p->searching, 1, memory_order_relaxed);
            idle = false;
            uint32_t expected = TASK_STOLEN;
            if (atomic_compare_exchange_strong_explicit(&t->state, &expected, TASK_WAITING,
                                                        memory_order_acq_rel,
                                                        memory_order_acquire)
                || expected == TASK_WAITING)
                futex_wait(&t->state, TASK_WAITING, 1000000L);
        }
    }
    if (idle)
        atomic_fetch_sub_explicit(&p->searching, 1, memory_order_relaxed);
}

void task_join(worker *w, pyrt_task_impl *t)
{
    if (atomic_load_explicit(&t->thief, memory_order_relaxed) == THIEF_INLINE)
        return;
    pyrt_task_impl *x = deque_take(&w->dq);
    if (x == t) {
        /* Not stolen: run it here. Tasks older than t are still queued; the fence in take()
         * orders this read of `sleeping` after their publication, so a worker that went to
         * sleep without seeing them is seen here (README: why no wake-up is lost). */
        if (deque_maybe_nonempty(&w->dq))
            maybe_wake(w->pool);
        t->fn(t->arg);
        return;
    }
    /* take() found nothing: t was stolen, and with it everything older (thieves steal from the
     * top), so x is NULL here as long as spawns are synced last-in first-out */
    join_stolen(w, t);
}

void pyrt_spawn(pyrt_task *task, pyrt_task_fn fn, void *arg)
{
    pyrt_task_impl *t = (pyrt_task_impl *)task;
    worker *w = worker_current();
    if (!w) {
        run_inline(t, fn, arg);
        return;
    }
    task_push(w, t, fn, arg);
}

void pyrt_sync(pyrt_task *task)
{
    pyrt_task_impl *t = (pyrt_task_impl *)task;
    worker *w = worker_current();
    if (!w)
        return; /* spawned outside the pool: it ran at spawn */
    task_join(w, t);
}

int pyrt_run(pyrt_task_fn fn, void *arg)
{
    worker *w = worker_enter();
    if (!w) {
        fn(arg);
        return PYRT_OK;
    }
    fn(arg);
    worker_leave(w);
    return PYRT_OK;
}
