/*
 * pool.c - the worker pool: creation on first use, the slot table thieves scan, the thread
 * count, outside threads joining a call, shutdown and fork.
 *
 * Threads. A pool of N threads has N-1 worker threads; the thread that makes a parallel call is
 * the N-th and works on its own call. Any thread may call in; each outside thread gets a slot
 * (a deque thieves can see) the first time and keeps it until it exits.
 *
 * Lifetime. The pool structure and every worker structure live until the process ends (or, in
 * a forked child, are abandoned with the parent's threads): shutdown joins the worker threads
 * but frees nothing, so a thread that is entering a call while another shuts the pool down
 * never touches freed memory. Such a call still completes, because a caller runs every task
 * no worker took.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

static _Atomic(pool *) g_pool;           /* the live pool, or NULL before first use */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* creation, resize, shutdown */
_Atomic int g_num_threads;               /* 0: not chosen yet */
static uint64_t g_generation;            /* bumped for every pool, under g_lock */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_exit_key;         /* runs slot_release when an outside thread exits */

/* The worker of the thread now working for a pool: always set on pool threads, set on outside
 * threads for the duration of their calls. */
static __thread worker *tls_worker;
/* An outside thread's own slot, kept between calls; valid while tls_generation matches. */
static __thread worker *tls_outside;
static __thread uint64_t tls_generation;

uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double ticks_per_us(void)
{
    static _Atomic double cached;
    double r = atomic_load_explicit(&cached, memory_order_relaxed);
    if (r > 0)
        return r;
    uint64_t t0 = now_ns(), c0 = ticks(), t1;
    do
        t1 = now_ns();
    while (t1 - t0 < 100000);
    r = (double)(ticks() - c0) * 1000.0 / (double)(t1 - t0);
    if (r <= 0)
        r = 1000.0;
    atomic_store_explicit(&cached, r, memory_order_relaxed);
    return r;
}

/* PYRT_NUM_THREADS if it is a valid count, else the affinity mask's size. The Python layer
 * reports an invalid value as an error; C programs fall back silently. */
static int default_num_threads(void)
{
    int n = env_count("PYRT_NUM_THREADS");
    return n ? n : pyrt_cpu_count();
}

int pyrt_get_num_threads(void)
{
    int n = atomic_load_explicit(&g_num_threads, memory_order_relaxed);
    if (n == 0) {
        int expected = 0;
        n = default_num_threads();
        if (!atomic_compare_exchange_strong(&g_num_threads, &expected, n))
            n = expected;
    }
    return n;
}

/* ---- workers and slots ---------------------------------------------------------------- */

static worker *worker_new(pool *p, int slot, int index)
{
    worker *w = aligned_alloc(PYRT_CACHE_LINE, sizeof(worker));
    if (!w)
        return NULL;
    memset(w, 0, sizeof *w);
    deque_init(&w->dq);
    w->pool = p;
    w->slot = slot;
    w->index = index;
    w->rng = 0x9E3779B97F4A7C15ull * (uint64_t)(slot + 1);
    atomic_init(&w->asleep, 0);
    atomic_init(&w->waker_cpu, -1);
    return w;
}

/* Under p->lock. Returns a free slot index or -1. */
static int slot_claim(pool *p)
{
    if (p->nfree > 0)
        return p->free_slots[--p->nfree];
    int n = atomic_load_explicit(&p->nslots, memory_order_relaxed);
    return n < PYRT_MAX_SLOTS ? n : -1;
}

/* Under p->lock: publish w in its slot; release so thieves see an initialised deque. */
static void slot_publish(pool *p, worker *w)
{
    atomic_store_explicit(&p->slots[w->slot], w, memory_order_release);
    if (w->slot >= atomic_load_explicit(&p->nslots, memory_order_relaxed))
        atomic_store_explicit(&p->nslots, w->slot + 1, memory_order_release);
}

/* Under p->lock: a worker structure in a free slot for a thread with pool index `index` (-1 for
 * an outside thread). A slot returned by an exited thread keeps its structure, whose deque is
 * empty and may still be read by thieves, so it is reused rather than replaced. */
static worker *slot_worker(pool *p, int index)
{
    int slot = slot_claim(p);
    if (slot < 0)
        return NULL;
    worker *w = atomic_load_explicit(&p->slots[slot], memory_order_relaxed);
    if (w) {
        w->index = index;
        w->depth = 0;
        return w;
    }
    w = worker_new(p, slot, index);
    if (!w) {
        p->free_slots[p->nfree++] = slot;
        return NULL;
    }
    slot_publish(p, w);
    return w;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    tls_worker = w;
    leave_waker_cpu(w);
    worker_loop(w);
    tls_worker = NULL;
    return NULL;
}

/* Under p->lock: create worker threads until `want` run. A worker keeps its structure and slot
 * across shutdowns; a new one gets a slot now. Workers start with signals blocked so that
 * SIGINT and friends reach the application's threads, not ours. */
static int start_workers(pool *p, int want)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = PYRT_OK;
    while (p->started < want) {
        worker *w;
        if (p->started < p->created) {
            w = p->workers[p->started];
            atomic_store_explicit(&w->asleep, 0, memory_order_relaxed);
        } else {
            w = slot_worker(p, p->started);
            if (!w) {
                rc = PYRT_ENOMEM;
                break;
            }
            p->workers[p->created++] = w;
        }
        /* the new worker counts as searching from birth; sleep.c keeps the count exact */
        atomic_fetch_add_explicit(&p->searching, 1, memory_order_relaxed);
        atomic_store_explicit(&w->waker_cpu, sched_getcpu(), memory_order_relaxed);
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            atomic_fetch_sub_explicit(&p->searching, 1, memory_order_relaxed);
            rc = PYRT_EAGAIN;
            break;
        }
        p->started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* Under g_lock: make `active` workers runnable, starting threads as needed; the others park.
 * Sleepers beyond the new count are taken off the idle stack and woken so that they park:
 * wake_one must only ever pick a worker that may run. */
static int pool_resize(pool *p, int active)
{
    pthread_mutex_lock(&p->lock);
    int before = atomic_load_explicit(&p->active, memory_order_relaxed);
    atomic_store_explicit(&p->cpus, cpus_refresh(), memory_order_relaxed);
    int rc = start_workers(p, active);
    if (rc != PYRT_OK)
        active = p->started < active ? p->started : active;
    for (int i = before; i < active; i++) /* parked workers about to run: see steal.c park() */
        atomic_store_explicit(&p->workers[i]->waker_cpu, sched_getcpu(), memory_order_relaxed);
    atomic_store_explicit(&p->active, active, memory_order_release);
    atomic_store_explicit(&p->running, 1, memory_order_release);
    for (int i = 0; i < p->nidle;) {
        worker *w = atomic_load_explicit(&p->slots[p->idle[i]], memory_order_relaxed);
        if (w->index < active) {
            i++;
            continue;
        }
        p->idle[i] = p->idle[--p->nidle];
        atomic_fetch_sub_explicit(&p->sleeping, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&p->searching, 1, memory_order_relaxed);
        atomic_store_explicit(&w->asleep, 0, memory_order_release);
        futex_wake(&w->asleep, 1);
    }
    /* release: parked workers re-read `active` after they see the new sequence number */
    atomic_fetch_add_explicit(&p->park_seq, 1, memory_order_release);
    pthread_mutex_unlock(&p->lock);
    futex_wake(&p->park_seq, INT_MAX);
    return rc;
}

static void exit_key_destructor(void *value);

static void once_init(void)
{
    pthread_key_create(&g_exit_key, exit_key_destructor);
}

/* Under g_lock. */
static pool *pool_create(void)
{
    pool *p = aligned_alloc(PYRT_CACHE_LINE, sizeof(pool));
    if (!p)
        return NULL;
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->lock, NULL);
    p->generation = ++g_generation;
    return p;
}

/* Under g_lock: create the pool, or restart its workers after a shutdown. */
static pool *pool_start_locked(void)
{
    pool *p = atomic_load_explicit(&g_pool, memory_order_relaxed);
    if (!p) {
        ticks_per_us(); /* calibrate now rather than in the first auto-grain loop */
        p = pool_create();
        if (!p)
            return NULL;
        atomic_store_explicit(&g_pool, p, memory_order_release);
    }
    if (!atomic_load_explicit(&p->running, memory_order_relaxed))
        pool_resize(p, pyrt_get_num_threads() - 1);
    return p;
}

pool *pool_get(void)
{
    /* acquire: pairs with the releases in pool_start_locked and pool_resize, so a pool seen
     * running is fully built */
    pool *p = atomic_load_explicit(&g_pool, memory_order_acquire);
    if (p && atomic_load_explicit(&p->running, memory_order_acquire))
        return p;
    pthread_once(&g_once, once_init);
    pthread_mutex_lock(&g_lock);
    p = pool_start_locked();
    pthread_mutex_unlock(&g_lock);
    return p;
}

/* ---- outside threads ------------------------------------------------------------------ */

static void exit_key_destructor(void *value)
{
    worker *w = value;
    pthread_mutex_lock(&g_lock);
    pool *p = atomic_load_explicit(&g_pool, memory_order_relaxed);
    /* a slot of a pool a forked parent left behind is not ours to return */
    if (p && tls_generation == p->generation && w == tls_outside) {
        pthread_mutex_lock(&p->lock);
        p->free_slots[p->nfree++] = w->slot;
        pthread_mutex_unlock(&p->lock);
    }
    tls_outside = NULL;
    pthread_mutex_unlock(&g_lock);
}

/* This thread's slot in p, claimed on first use. */
static worker *outside_slot(pool *p)
{
    if (tls_outside && tls_generation == p->generation)
        return tls_outside;
    pthread_mutex_lock(&p->lock);
    worker *w = slot_worker(p, -1);
    pthread_mutex_unlock(&p->lock);
    if (!w)
        return NULL;
    w->rng = 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)&w ^ now_ns();
    tls_outside = w;
    tls_generation = p->generation;
    pthread_setspecific(g_exit_key, w);
    return w;
}

worker *worker_current(void)
{
    return tls_worker;
}

worker *worker_enter(void)
{
    worker *w = tls_worker;
    if (w) { /* nested call, or a pool thread */
        w->depth++;
        return w;
    }
    pool *p = pool_get();
    if (!p)
        return NULL;
    w = outside_slot(p);
    if (!w)
        return NULL;
    w->depth = 1;
    tls_worker = w;
    return w;
}

void worker_leave(worker *w)
{
    if (--w->depth == 0 && w->index < 0)
        tls_worker = NULL;
}

/* ---- public entry points -------------------------------------------------------------- */

int pyrt_set_num_threads(int n)
{
    if (n < 1 || n > PYRT_MAX_THREADS)
        return PYRT_EINVAL;
    pthread_mutex_lock(&g_lock);
    int previous = pyrt_get_num_threads();
    atomic_store_explicit(&g_num_threads, n, memory_order_relaxed);
    pool *p = atomic_load_explicit(&g_pool, memory_order_relaxed);
    /* a pool that is shut down starts with the new count on its next call */
    int rc = p && atomic_load(&p->running) ? pool_resize(p, n - 1) : PYRT_OK;
    pthread_mutex_unlock(&g_lock);
    return rc == PYRT_OK ? previous : rc;
}

int pyrt_init(void)
{
    pool *p = pool_get();
    if (!p)
        return PYRT_ENOMEM;
    return p->started >= atomic_load(&p->active) ? PYRT_OK : PYRT_EAGAIN;
}

int pyrt_shutdown(void)
{
    if (tls_worker && tls_worker->index >= 0)
        return PYRT_EBUSY;
    pthread_mutex_lock(&g_lock);
    pool *p = atomic_load_explicit(&g_pool, memory_order_relaxed);
    if (!p || !atomic_load_explicit(&p->running, memory_order_relaxed)) {
        pthread_mutex_unlock(&g_lock);
        return PYRT_OK;
    }
    /* Callers see `running` cleared and restart the pool, which waits for g_lock. Workers see
     * `stopping` between tasks, so every task a worker stole is finished before it exits. */
    atomic_store(&p->running, 0);
    atomic_store(&p->stopping, 1);
    pthread_mutex_lock(&p->lock);
    for (int i = 0; i < p->started; i++) {
        atomic_store(&p->workers[i]->asleep, 0);
        futex_wake(&p->workers[i]->asleep, 1);
    }
    atomic_fetch_add(&p->park_seq, 1);
    pthread_mutex_unlock(&p->lock);
    futex_wake(&p->park_seq, INT_MAX);
    for (int i = 0; i < p->started; i++)
        pthread_join(p->workers[i]->thread, NULL);
    pthread_mutex_lock(&p->lock);
    p->started = 0;
    p->nidle = 0;
    atomic_store(&p->sleeping, 0);
    atomic_store(&p->searching, 0);
    atomic_store(&p->stopping, 0);
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&g_lock);
    return PYRT_OK;
}

int pyrt_worker_index(void)
{
    worker *w = tls_worker;
    return w && w->index >= 0 ? w->index : -1;
}

int pyrt_workers_started(void)
{
    pool *p = atomic_load_explicit(&g_pool, memory_order_acquire);
    if (!p)
        return 0;
    pthread_mutex_lock(&p->lock);
    int n = p->started;
    pthread_mutex_unlock(&p->lock);
    return n;
}

int pyrt_workers_sleeping(void)
{
    pool *p = atomic_load_explicit(&g_pool, memory_order_acquire);
    if (!p)
        return 0;
    pthread_mutex_lock(&p->lock);
    /* parked workers (beyond the thread count) sleep too; the idle stack holds only the others */
    int parked = p->started - atomic_load(&p->active);
    int n = (parked > 0 ? parked : 0) + p->nidle;
    pthread_mutex_unlock(&p->lock);
    return n;
}

/* ---- fork ----------------------------------------------------------------------------- */

/* In the child only the forking thread exists: the old pool's workers are gone and its locks
 * may be held by threads that no longer run. Forget it (its memory is not ours to free safely)
 * and let the first parallel call build a fresh one. */
static void atfork_child(void)
{
    atomic_store_explicit(&g_pool, NULL, memory_order_relaxed);
    pthread_mutex_init(&g_lock, NULL);
    tls_worker = NULL;
    tls_outside = NULL;
}

__attribute__((constructor)) static void register_fork_handler(void)
{
    pthread_atfork(NULL, NULL, atfork_child);
}
