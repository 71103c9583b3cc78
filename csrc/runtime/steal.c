/*
 * steal.c - thieves: victim selection, running a stolen task, and the idle loop of a worker.
 *
 * A worker is in one of four states (csrc/README.md): WORKING on a task, SEARCHING (awake,
 * stealing from random victims), SLEEPING (on the idle stack, futex) or PARKED (beyond the
 * current thread count). An idle worker spins for SPIN_NS, then yields the CPU until YIELD_NS,
 * then sleeps: back-to-back calls find it awake, and an idle pool costs no CPU.
 */
#define _GNU_SOURCE
#include <sched.h>

#include "internal.h"

#define SPIN_NS 50000u     /* busy-wait with pause: a thief ready within nanoseconds */
#define YIELD_NS 1000000u  /* then sched_yield: awake, but other threads get the core */

bool steal_one(worker *w, int victim, pyrt_task_impl **out)
{
    worker *v = atomic_load_explicit(&w->pool->slots[victim], memory_order_acquire);
    if (!v || v == w)
        return false;
    for (int tries = 0; tries < 4; tries++) {
        steal_result r = deque_steal(&v->dq, out);
        if (r == STEAL_OK) {
            /* a thief that sees more work behind what it took wakes one more worker; the CAS
             * in deque_steal was seq_cst, which orders this check after it */
            if (deque_maybe_nonempty(&v->dq))
                maybe_wake(w->pool);
            return true;
        }
        if (r == STEAL_EMPTY)
            return false;
    }
    return false;
}

/* One pass over all slots, starting at a random one. */
bool steal_any(worker *w, pyrt_task_impl **out)
{
    int n = atomic_load_explicit(&w->pool->nslots, memory_order_acquire);
    if (n <= 1)
        return false;
    int start = (int)(xorshift64(&w->rng) % (uint64_t)n);
    for (int i = 0; i < n; i++) {
        int victim = start + i < n ? start + i : start + i - n;
        if (steal_one(w, victim, out))
            return true;
    }
    return false;
}

/* Run a task taken from another deque, then tell its owner it is done. */
void task_run_stolen(worker *w, pyrt_task_impl *t)
{
    atomic_store_explicit(&t->thief, w->slot, memory_order_relaxed);
    /* release: the owner that reads STOLEN also reads our slot in `thief` */
    atomic_store_explicit(&t->state, TASK_STOLEN, memory_order_release);
    t->fn(t->arg);
    /* acq_rel: release publishes the task's effects to the owner; acquire pairs with an owner
     * that announced it sleeps (TASK_WAITING) so we wake it */
    uint32_t old = atomic_exchange_explicit(&t->state, TASK_DONE, memory_order_acq_rel);
    if (old == TASK_WAITING)
        futex_wake(&t->state, 1);
}

static void park(worker *w)
{
    pool *p = w->pool;
    atomic_fetch_sub_explicit(&p->searching, 1, memory_order_relaxed);
    for (;;) {
        uint32_t seq = atomic_load_explicit(&p->park_seq, memory_order_acquire);
        if (atomic_load_explicit(&p->stopping, memory_order_relaxed)
            || w->index < atomic_load_explicit(&p->active, memory_order_acquire))
            break;
        futex_wait(&p->park_seq, seq, 0);
    }
    atomic_fetch_add_explicit(&p->searching, 1, memory_order_relaxed);
    leave_waker_cpu(w);
}

/* A worker thread: searching from birth (pool.c counted it). */
void worker_loop(worker *w)
{
    pool *p = w->pool;
    uint64_t idle_since = now_ns();
    unsigned rounds = 0;
    for (;;) {
        if (atomic_load_explicit(&p->stopping, memory_order_relaxed))
            break;
        if (w->index >= atomic_load_explicit(&p->active, memory_order_relaxed)) {
            park(w);
            idle_since = now_ns();
            continue;
        }
        pyrt_task_impl *t;
        if (steal_any(w, &t)) {
            atomic_fetch_sub_explicit(&p->searching, 1, memory_order_relaxed);
            task_run_stolen(w, t);
            atomic_fetch_add_explicit(&p->searching, 1, memory_order_relaxed);
            idle_since = now_ns();
            rounds = 0;
            continue;
        }
        /* nothing to steal, and more threads awake than CPUs: spinning or yielding would take
         * CPU time from the threads that work, so the surplus sleeps at once. It is woken when
         * a CPU is free, or by a coarse loop (whose bodies may block), and steals first. */
        if (awake_threads(p) > atomic_load_explicit(&p->cpus, memory_order_relaxed)) {
            sleep_until_work(w);
            idle_since = now_ns();
            rounds = 0;
            continue;
        }
        /* read the clock every few rounds: it costs more than a steal attempt */
        if (++rounds % 16)
            continue;
        uint64_t idle = now_ns() - idle_since;
        if (idle < SPIN_NS) {
            for (int i = 0; i < 8; i++)
                cpu_relax();
        } else if (idle < YIELD_NS) {
            sched_yield();
        } else {
            sleep_until_work(w);
            idle_since = now_ns();
        }
    }
    atomic_fetch_sub_explicit(&p->searching, 1, memory_order_relaxed);
}
