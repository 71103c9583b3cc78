/*
 * internal.h - the runtime's private types: tasks, workers (one per deque) and the pool.
 * Fields are grouped by who writes them; groups written by different threads sit on different
 * cache lines. csrc/README.md describes the states and invariants.
 */
#ifndef PYRT_INTERNAL_H
#define PYRT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../pyrt.h"
#include "deque.h"

/* Capacity of the slot table: workers plus threads from outside the pool that call in. */
#define PYRT_MAX_SLOTS (2 * PYRT_MAX_THREADS)

/* ---- tasks ---------------------------------------------------------------------------- */

enum task_state {
    TASK_QUEUED = 0,  /* in its owner's deque, or just taken back by it */
    TASK_STOLEN = 1,  /* a thief runs it */
    TASK_WAITING = 2, /* stolen, and the owner sleeps on `state` until it is done */
    TASK_DONE = 3,
};

/* The layout behind the public pyrt_task: it lives in the spawner's frame, so a spawn allocates
 * nothing. */
typedef struct pyrt_task_impl {
    pyrt_task_fn fn;
    void *arg;
    _Atomic uint32_t state; /* enum task_state; also the futex word of a sleeping owner */
    _Atomic int32_t thief;  /* slot index of the thief, valid once state != TASK_QUEUED */
} pyrt_task_impl;

_Static_assert(sizeof(pyrt_task_impl) <= sizeof(pyrt_task), "pyrt_task too small");
_Static_assert(_Alignof(pyrt_task_impl) <= _Alignof(pyrt_task), "pyrt_task misaligned");

/* ---- workers -------------------------------------------------------------------------- */

struct pool;

/* One per thread that works for the pool: a pool worker, or an outside thread while it runs a
 * parallel call. Thieves read `dq`; everything after it belongs to the owner thread. */
typedef struct worker {
    deque dq;

    /* owner-only */
    _Alignas(PYRT_CACHE_LINE) struct pool *pool;
    int slot;           /* index in pool->slots */
    int index;          /* pool worker index, or -1 for an outside thread */
    int depth;          /* nesting of parallel calls on this thread */
    uint64_t rng;       /* xorshift state for victim selection */
    pthread_t thread;

    /* sleep: written by the owner and by a waker under pool->lock */
    _Alignas(PYRT_CACHE_LINE) _Atomic uint32_t asleep; /* futex word: 1 while on the idle stack */
    _Atomic int waker_cpu; /* CPU of the thread that started or woke this one, or -1 */
} worker;

/* ---- pool ----------------------------------------------------------------------------- */

typedef struct pool {
    /* Read on every split decision and written when workers change state: searching counts
     * awake idle workers looking for work, sleeping those on the idle stack. */
    _Alignas(PYRT_CACHE_LINE) _Atomic int searching;
    _Atomic int sleeping;

    /* read by every thief */
    _Alignas(PYRT_CACHE_LINE) _Atomic int nslots;
    _Atomic int active;          /* workers allowed to run: num_threads - 1 */
    _Atomic int stopping;        /* set while shutdown stops the worker threads */
    _Atomic int running;         /* worker threads are started (cleared by shutdown) */
    _Atomic uint32_t park_seq;   /* futex word of parked workers; bumped when `active` grows */
    _Atomic int cpus;            /* CPUs the pool may keep busy (cpus.c), as of the last resize */

    /* under lock */
    _Alignas(PYRT_CACHE_LINE) pthread_mutex_t lock;
    int started;                 /* worker threads created (slots 0..started-1) */
    int nidle;                   /* entries of idle[] */
    int free_slots[PYRT_MAX_SLOTS]; /* outside-thread slots released by exited threads */
    int nfree;
    int idle[PYRT_MAX_THREADS];  /* slots of sleeping workers, a stack */
    worker *workers[PYRT_MAX_THREADS]; /* by worker index; kept across shutdowns */
    int created;                 /* entries of workers[] allocated */
    uint64_t generation;         /* tells this pool from one a forked parent left behind */

    _Atomic(worker *) slots[PYRT_MAX_SLOTS];
} pool;

/* pool.c */
extern _Atomic int g_num_threads;    /* the thread count set; 0 until first chosen */
pool *pool_get(void);                /* the current pool, created on first use; NULL on ENOMEM */
worker *worker_enter(void);          /* this thread's worker for a parallel call, or NULL */
void worker_leave(worker *w);
worker *worker_current(void);        /* this thread's worker while it works for a pool */
void worker_loop(worker *w);         /* body of a pool thread */

/* steal.c */
bool steal_one(worker *w, int victim, pyrt_task_impl **out);
bool steal_any(worker *w, pyrt_task_impl **out);
void task_run_stolen(worker *w, pyrt_task_impl *t);

/* cpus.c */
int cpus_refresh(void);              /* read the CPUs the pool may keep busy again; returns it */
int env_count(const char *name);     /* environment variable `name` as 1..PYRT_MAX_THREADS, or 0 */

/* sleep.c */
void sleep_until_work(worker *w);    /* idle worker: park on the idle stack until woken */
void wake_one(pool *p);              /* wake one sleeping worker, if any */
void leave_waker_cpu(worker *w);     /* step off the CPU of whoever started or woke w */
bool pool_has_work(pool *p);
int futex_wait(_Atomic uint32_t *addr, uint32_t expected, long timeout_ns);
void futex_wake(_Atomic uint32_t *addr, int n);

/* Threads of the pool that are awake (working or searching): the workers allowed to run less
 * those asleep, plus one for the thread that calls in. An estimate from relaxed loads. */
static inline int awake_threads(pool *p)
{
    return atomic_load_explicit(&p->active, memory_order_relaxed)
           - atomic_load_explicit(&p->sleeping, memory_order_relaxed) + 1;
}

/* With more threads than CPUs, is there a CPU left for one more thread to run on? A woken
 * worker that must share a CPU takes its time from the threads doing the work: on 2 CPUs, 16
 * threads all awake ran the MLP's training step 13-31% slower than 2 threads (see README: more
 * threads than CPUs). */
static inline bool cpu_free(pool *p)
{
    return awake_threads(p) < atomic_load_explicit(&p->cpus, memory_order_relaxed);
}

/* Wake a sleeper when work was made stealable, no awake idle worker will take it, and a CPU
 * is free for it (or `any_cpu`: the work is a coarse loop's, whose bodies may block rather
 * than compute). The caller must have made that work visible with a seq_cst operation before
 * this load (see README: why no wake-up is lost); a wake-up skipped for want of a CPU loses
 * nothing, as the owner of work that nobody steals runs it itself. */
static inline void maybe_wake_for(pool *p, bool any_cpu)
{
    if (atomic_load_explicit(&p->sleeping, memory_order_relaxed) > 0
        && atomic_load_explicit(&p->searching, memory_order_relaxed) == 0
        && (any_cpu || cpu_free(p)))
        wake_one(p);
}

static inline void maybe_wake(pool *p)
{
    maybe_wake_for(p, false);
}

/* task.c */
void task_push(worker *w, pyrt_task_impl *t, pyrt_task_fn fn, void *arg);
void task_join(worker *w, pyrt_task_impl *t);

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline uint64_t xorshift64(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

uint64_t now_ns(void);

/* A cheap clock for cost estimates: the time-stamp counter where there is one (about 10 ns to
 * read, against 25 for clock_gettime here), nanoseconds elsewhere. ticks_per_us() is measured
 * once per process. */
static inline uint64_t ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_ia32_rdtsc();
#else
    return now_ns();
#endif
}
double ticks_per_us(void);

#endif
