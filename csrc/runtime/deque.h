/*
 * deque.h - the Chase-Lev work-stealing deque, with the memory orderings of Le, Pop, Cohen and
 * Zappa Nardelli, "Correct and Efficient Work-Stealing for Weak Memory Models" (PPoPP 2013).
 *
 * The owner pushes and takes at the bottom; thieves steal at the top. Slots hold task pointers.
 * The array has a fixed capacity: a deque never grows, so no thief can read a freed array; when
 * it is full the owner runs the task it wanted to push instead (depth-first, still correct).
 *
 * Who may call: push and take only the owner thread; steal any thread.
 */
#ifndef PYRT_DEQUE_H
#define PYRT_DEQUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define PYRT_DEQUE_CAPACITY 4096 /* power of two; nesting depth, not loop size, fills it */
#define PYRT_CACHE_LINE 64

struct pyrt_task_impl;

typedef struct deque {
    /* written by thieves (CAS) and by the owner when it races for the last task */
    _Alignas(PYRT_CACHE_LINE) _Atomic int64_t top;
    /* written by the owner only, read by thieves */
    _Alignas(PYRT_CACHE_LINE) _Atomic int64_t bottom;
    _Alignas(PYRT_CACHE_LINE) _Atomic(struct pyrt_task_impl *) slots[PYRT_DEQUE_CAPACITY];
} deque;

_Static_assert(sizeof(deque) % PYRT_CACHE_LINE == 0, "deque must tile cache lines");

static inline void deque_init(deque *d)
{
    atomic_init(&d->top, 0);
    atomic_init(&d->bottom, 0);
    for (int i = 0; i < PYRT_DEQUE_CAPACITY; i++)
        atomic_init(&d->slots[i], NULL);
}

/* Owner only. Returns false when the deque is full. */
static inline bool deque_push(deque *d, struct pyrt_task_impl *t)
{
    int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed);
    /* acquire: a thief's CAS on top frees the slot we may overwrite */
    int64_t top = atomic_load_explicit(&d->top, memory_order_acquire);
    if (b - top >= PYRT_DEQUE_CAPACITY)
        return false;
    atomic_store_explicit(&d->slots[b & (PYRT_DEQUE_CAPACITY - 1)], t, memory_order_relaxed);
    /* release: a thief that reads the new bottom also sees the slot and the task's fields */
    atomic_store_explicit(&d->bottom, b + 1, memory_order_release);
    return true;
}

/* Owner only. Returns the most recently pushed task, or NULL if thieves took everything. */
static inline struct pyrt_task_impl *deque_take(deque *d)
{
    int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed) - 1;
    atomic_store_explicit(&d->bottom, b, memory_order_relaxed);
    /* seq_cst fence: our claim on slot b (the store above) must be visible before we read top,
     * or a thief and the owner could both take the last task (the store-load race of Chase-Lev) */
    atomic_thread_fence(memory_order_seq_cst);
    int64_t t = atomic_load_explicit(&d->top, memory_order_relaxed);
    if (t > b) { /* empty: restore bottom */
        atomic_store_explicit(&d->bottom, b + 1, memory_order_relaxed);
        return NULL;
    }
    struct pyrt_task_impl *x =
        atomic_load_explicit(&d->slots[b & (PYRT_DEQUE_CAPACITY - 1)], memory_order_relaxed);
    if (t == b) {
        /* last task: race the thieves for it through top, as they do */
        if (!atomic_compare_exchange_strong_explicit(&d->top, &t, t + 1, memory_order_seq_cst,
                                                     memory_order_relaxed))
            x = NULL;
        atomic_store_explicit(&d->bottom, b + 1, memory_order_relaxed);
    }
    return x;
}

typedef enum { STEAL_EMPTY, STEAL_ABORT, STEAL_OK } steal_result;

/* Any thread. On STEAL_OK *out holds the stolen task; STEAL_ABORT means another thread won the
 * race for the top slot (the deque may still hold work). */
static inline steal_result deque_steal(deque *d, struct pyrt_task_impl **out)
{
    /* acquire: pairs with the CAS of other thieves so we never reuse a stale top */
    int64_t t = atomic_load_explicit(&d->top, memory_order_acquire);
    /* seq_cst fence: read top before bottom, ordered against the owner's fence in take() */
    atomic_thread_fence(memory_order_seq_cst);
    /* acquire: pairs with the release in push(), making the slot and the task visible */
    int64_t b = atomic_load_explicit(&d->bottom, memory_order_acquire);
    if (t >= b)
        return STEAL_EMPTY;
    struct pyrt_task_impl *x =
        atomic_load_explicit(&d->slots[t & (PYRT_DEQUE_CAPACITY - 1)], memory_order_relaxed);
    /* seq_cst CAS: claims slot t against other thieves and the owner's take() */
    if (!atomic_compare_exchange_strong_explicit(&d->top, &t, t + 1, memory_order_seq_cst,
                                                 memory_order_relaxed))
        return STEAL_ABORT;
    *out = x;
    return STEAL_OK;
}

/* Any thread; a hint only (the answer may be stale by the time it is used). */
static inline bool deque_maybe_nonempty(deque *d)
{
    int64_t t = atomic_load_explicit(&d->top, memory_order_relaxed);
    int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed);
    return b > t;
}

#endif
