/*
 * sleep.c - idle workers going to sleep and being woken.
 *
 * A worker that found nothing to steal for a while puts itself on the pool's idle stack and
 * sleeps on its own futex word (`asleep`). A thread that makes work stealable wakes one sleeper
 * only when no awake idle worker ("searching") could take it. The protocol that keeps a sleeper
 * from missing work is in csrc/README.md ("Why no wake-up is lost"); in short: the sleeper
 * publishes itself (a seq_cst RMW on `sleeping`), then rescans every deque; the producer
 * publishes its task, executes a seq_cst fence, then reads `sleeping`. One of the two sees the
 * other.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* A sleeper rechecks the deques this often even if nobody wakes it: a safety net that costs
 * nothing measurable (10 wake-ups a second). */
#define SLEEP_TIMEOUT_NS 100000000L

int futex_wait(_Atomic uint32_t *addr, uint32_t expected, long timeout_ns)
{
    struct timespec ts = {timeout_ns / 1000000000L, timeout_ns % 1000000000L};
    long rc = syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, expected,
                      timeout_ns > 0 ? &ts : NULL, NULL, 0);
    return rc == 0 ? 0 : errno;
}

void futex_wake(_Atomic uint32_t *addr, int n)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

bool pool_has_work(pool *p)
{
    int n = atomic_load_explicit(&p->nslots, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        worker *v = atomic_load_explicit(&p->slots[i], memory_order_acquire);
        if (v && deque_maybe_nonempty(&v->dq))
            return true;
    }
    return false;
}

/* Under p->lock: take w off the idle stack if it is still there. Returns whether it was. */
static bool idle_remove(pool *p, worker *w)
{
    if (!atomic_load_explicit(&w->asleep, memory_order_relaxed))
        return false; /* a waker already took it off and counted it as searching */
    for (int i = 0; i < p->nidle; i++) {
        if (p->idle[i] == w->slot) {
            p->idle[i] = p->idle[--p->nidle];
            break;
        }
    }
    atomic_store_explicit(&w->asleep, 0, memory_order_relaxed);
    atomic_fetch_sub_explicit(&p->sleeping, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->searching, 1, memory_order_relaxed);
    return true;
}

/* Work found on waking up (the rescan, or the timeout's) is taken only where a CPU is free
 * for this thread: otherwise the threads awake will run it, its owner at the latest. */
static bool should_get_up(pool *p, worker *w)
{
    return atomic_load_explicit(&p->stopping, memory_order_relaxed)
        || w->index >= atomic_load_explicit(&p->active, memory_order_relaxed)
        || (cpu_free(p) && pool_has_work(p));
}

/* A new or woken thread is often placed on the CPU of the thread that created or woke it (the
 * scheduler's wake-affine heuristic; seen on 2-CPU virtual machines): that thread keeps running
 * there, the worker shares its CPU, and an idle CPU stays idle until the load balancer
 * notices, which can take longer than a short parallel call (10 ms seen). So a woken worker that finds itself on the
 * waker's CPU steps off it: it narrows its affinity to exclude that CPU, which migrates it at
 * once, then restores the mask, which does not move it back. It costs two system calls on a
 * path that has just paid for a futex wake. */
void leave_waker_cpu(worker *w)
{
    int waker = atomic_exchange_explicit(&w->waker_cpu, -1, memory_order_relaxed);
    if (waker < 0 || sched_getcpu() != waker)
        return;
    cpu_set_t mask, narrowed;
    if (pthread_getaffinity_np(pthread_self(), sizeof mask, &mask) != 0)
        return;
    narrowed = mask;
    CPU_CLR(waker, &narrowed);
    if (CPU_COUNT(&narrowed) == 0)
        return;
    if (pthread_setaffinity_np(pthread_self(), sizeof narrowed, &narrowed) == 0)
        pthread_setaffinity_np(pthread_self(), sizeof mask, &mask);
}

/* Called by a searching worker; returns with it searching again (counted in p->searching). */
void sleep_until_work(worker *w)
{
    pool *p = w->pool;
    pthread_mutex_lock(&p->lock);
    /* a worker beyond the thread count parks rather than sleeps: the idle stack holds only
     * workers that may run (wake_one picks from it). pool_resize lowers `active` under this
     * lock, so either it finds us on the stack and takes us off, or we see its count here. */
    if (w->index >= atomic_load_explicit(&p->active, memory_order_relaxed)
        || atomic_load_explicit(&p->stopping, memory_order_relaxed)) {
        pthread_mutex_unlock(&p->lock);
        return;
    }
    atomic_store_explicit(&w->asleep, 1, memory_order_relaxed);
    p->idle[p->nidle++] = w->slot;
    atomic_fetch_sub_explicit(&p->searching, 1, memory_order_relaxed);
    /* seq_cst: publishes us as a sleeper before the rescan below reads any deque; pairs with
     * the fence a producer runs between publishing a task and reading `sleeping` */
    atomic_fetch_add_explicit(&p->sleeping, 1, memory_order_seq_cst);
    pthread_mutex_unlock(&p->lock);

    for (;;) {
        if (should_get_up(p, w)) {
            pthread_mutex_lock(&p->lock);
            idle_remove(p, w);
            pthread_mutex_unlock(&p->lock);
            return;
        }
        futex_wait(&w->asleep, 1, SLEEP_TIMEOUT_NS);
        /* acquire: pairs with the release in wake_one; the waker counted us as searching */
        if (!atomic_load_explicit(&w->asleep, memory_order_acquire)) {
            leave_waker_cpu(w);
            return;
        }
    }
}

void wake_one(pool *p)
{
    pthread_mutex_lock(&p->lock);
    if (p->nidle == 0) {
        pthread_mutex_unlock(&p->lock);
        return;
    }
    worker *w = atomic_load_explicit(&p->slots[p->idle[--p->nidle]], memory_order_relaxed);
    atomic_fetch_sub_explicit(&p->sleeping, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->searching, 1, memory_order_relaxed);
    atomic_store_explicit(&w->waker_cpu, sched_getcpu(), memory_order_relaxed);
    /* release: the woken worker sees the counters (and waker_cpu) as we left them */
    atomic_store_explicit(&w->asleep, 0, memory_order_release);
    pthread_mutex_unlock(&p->lock);
    futex_wake(&w->asleep, 1);
}
