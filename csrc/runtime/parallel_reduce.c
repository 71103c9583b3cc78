/*
 * parallel_reduce.c - deterministic reductions merged up the task tree.
 *
 * The index range is cut into fixed leaves of `leaf` indices, and the leaves form a fixed
 * binary tree (each node splits its leaves at the middle). Every node computes its left and
 * right values and combines them in that order, whether the right half was stolen or run here,
 * so the result depends on n and the leaf size only: float sums come out bitwise identical at
 * any thread count. Splitting is lazy as in parallel_for: a node offers its right half as a
 * task only when a worker is idle; otherwise it recurses inline, which costs a call per node.
 * There is no barrier and no central merge: the thread that finishes a node's second half last
 * (the owner, after sync) merges it.
 */
#include <string.h>

#include "internal.h"

#define WAKE_MIN_LEAVES 4

typedef struct reduction {
    pyrt_leaf_fn leaf;
    pyrt_combine_fn combine;
    void *ctx;
    size_t acc_size;
    int64_t n, leaf_size;
    int64_t wake_leaves; /* wake a sleeper for a right half of at least this many leaves */
    int coarse;          /* leaves may block: wake sleepers even with no CPU free */
    _Atomic int status;
} reduction;

typedef union acc_buf {
    unsigned char bytes[PYRT_MAX_ACC];
    max_align_t align;
} acc_buf;

typedef struct node_task {
    pyrt_task_impl task;
    reduction *r;
    int64_t first, last; /* leaves [first, last) */
    acc_buf acc;
} node_task;

static void set_status(reduction *r, int rc)
{
    int expected = 0;
    atomic_compare_exchange_strong(&r->status, &expected, rc);
}

static void reduce_node(worker *w, reduction *r, int64_t first, int64_t last, void *acc);

static void node_task_fn(void *arg)
{
    node_task *nt = arg;
    reduce_node(worker_current(), nt->r, nt->first, nt->last, nt->acc.bytes);
}

static void reduce_node(worker *w, reduction *r, int64_t first, int64_t last, void *acc)
{
    if (atomic_load_explicit(&r->status, memory_order_relaxed))
        return;
    if (last - first == 1) {
        int64_t start = first * r->leaf_size;
        int64_t stop = r->n - start > r->leaf_size ? start + r->leaf_size : r->n;
        int rc = r->leaf(r->ctx, start, stop, acc);
        if (rc)
            set_status(r, rc);
        return;
    }
    int64_t mid = first + (last - first) / 2;
    pool *p = w->pool;
    int64_t right_leaves = last - mid;
    bool awake = atomic_load_explicit(&p->searching, memory_order_relaxed) > 0;
    bool wake = !awake && right_leaves >= r->wake_leaves
                && atomic_load_explicit(&p->sleeping, memory_order_relaxed) > 0
                && (r->coarse || cpu_free(p));
    if (awake || wake) {
        /* offer the right half; hopefully a thief takes it while we do the left */
        node_task nt;
        nt.r = r;
        nt.first = mid;
        nt.last = last;
        task_push(w, &nt.task, node_task_fn, &nt);
        if (wake) {
            /* seq_cst fence: the task is visible before we read `sleeping` (README) */
            atomic_thread_fence(memory_order_seq_cst);
            maybe_wake_for(p, r->coarse);
        }
        reduce_node(w, r, first, mid, acc);
        task_join(w, &nt.task);
        if (!atomic_load_explicit(&r->status, memory_order_relaxed)) {
            int rc = r->combine(r->ctx, acc, nt.acc.bytes);
            if (rc)
                set_status(r, rc);
        }
        return;
    }
    acc_buf right;
    reduce_node(w, r, first, mid, acc);
    reduce_node(w, r, mid, last, right.bytes);
    if (!atomic_load_explicit(&r->status, memory_order_relaxed)) {
        int rc = r->combine(r->ctx, acc, right.bytes);
        if (rc)
            set_status(r, rc);
    }
}

int64_t pyrt_reduce_leaf_size(int64_t n)
{
    /* about 256 leaves, each at least 4096 indices (a few microseconds of a cheap body) and at
     * most 65536 (so big reductions still have leaves to share) */
    int64_t leaf = (n + 255) / 256;
    if (leaf < 4096)
        leaf = 4096;
    if (leaf > 65536)
        leaf = 65536;
    return leaf;
}

static int parallel_reduce(int64_t n, int64_t grain, size_t acc_size, pyrt_leaf_fn leaf,
                           pyrt_combine_fn combine, void *ctx, void *result, int coarse)
{
    if (n < 0 || grain < 0 || acc_size == 0 || acc_size > PYRT_MAX_ACC || !leaf || !combine
        || !result)
        return PYRT_EINVAL;
    if (n == 0)
        return PYRT_OK;
    /* a coarse reduction wakes a sleeper for a single leaf: each costs more than the wake-up */
    reduction r = {leaf, combine, ctx, acc_size, n, grain ? grain : pyrt_reduce_leaf_size(n),
                   coarse ? 1 : WAKE_MIN_LEAVES, coarse, 0};
    /* ceil(n / leaf) without n + leaf - 1, which overflows for a leaf near INT64_MAX */
    int64_t leaves = n / r.leaf_size + (n % r.leaf_size != 0);
    if (leaves == 1)
        return leaf(ctx, 0, n, result);
    worker *w = worker_enter();
    if (!w)
        return PYRT_ENOMEM;
    acc_buf acc;
    reduce_node(w, &r, 0, leaves, acc.bytes);
    worker_leave(w);
    int rc = atomic_load_explicit(&r.status, memory_order_relaxed);
    if (rc == 0)
        memcpy(result, acc.bytes, acc_size);
    return rc;
}

int pyrt_parallel_reduce(int64_t n, int64_t grain, size_t acc_size, pyrt_leaf_fn leaf,
                         pyrt_combine_fn combine, void *ctx, void *result)
{
    return parallel_reduce(n, grain, acc_size, leaf, combine, ctx, result, 0);
}

int pyrt_parallel_reduce_coarse(int64_t n, int64_t grain, size_t acc_size, pyrt_leaf_fn leaf,
                                pyrt_combine_fn combine, void *ctx, void *result)
{
    return parallel_reduce(n, grain, acc_size, leaf, combine, ctx, result, 1);
}
