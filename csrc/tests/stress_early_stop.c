/*
 * stress_early_stop.c - a chunk that returns nonzero stops its loop or reduction.
 *
 * The value must come back from pyrt_parallel_for/pyrt_parallel_reduce, and when several chunks
 * stop the loop it must be one of theirs. The loop must not return while one of its chunks
 * still runs, and no chunk may start after it returned: the loop's context lives on the heap
 * and is freed right after the call, so a late chunk is a use-after-free that AddressSanitizer
 * reports, and a `returned` flag catches it in the plain build. Stops also travel out of nested
 * loops and out of reduction leaves and combines.
 */
#include <stddef.h>
#include <stdint.h>

#include "stress.h"

#include <stdatomic.h>

enum { MAX_STOPPERS = 4 };

typedef struct {
    int64_t n;
    int nstoppers;
    int64_t stop_at[MAX_STOPPERS]; /* index whose chunk stops the loop */
    int value[MAX_STOPPERS];       /* what that chunk returns, > 0 */
    _Atomic int fired;             /* bit k: stopper k returned its value */
    _Atomic int64_t in_flight;     /* chunks running now */
    _Atomic int returned;          /* set once the loop call has returned */
    int every_chunk;               /* every chunk stops, returning start + 1 */
    _Atomic int64_t any_fired;     /* every_chunk: one value a chunk did return */
} stopper;

static int stop_chunk(void *ctx, int64_t start, int64_t stop)
{
    stopper *s = ctx;
    CHECK(!atomic_load_explicit(&s->returned, memory_order_relaxed),
          "chunk [%lld, %lld) started after its loop returned", (long long)start,
          (long long)stop);
    atomic_fetch_add_explicit(&s->in_flight, 1, memory_order_relaxed);
    CHECK(0 <= start && start < stop && stop <= s->n, "chunk [%lld, %lld) outside [0, %lld)",
          (long long)start, (long long)stop, (long long)s->n);
    int rc = 0;
    if (s->every_chunk) {
        rc = (int)(start + 1);
        atomic_store_explicit(&s->any_fired, rc, memory_order_relaxed);
    } else {
        for (int k = 0; k < s->nstoppers; k++) {
            if (start <= s->stop_at[k] && s->stop_at[k] < stop) {
                atomic_fetch_or_explicit(&s->fired, 1 << k, memory_order_relaxed);
                rc = s->value[k];
                break;
            }
        }
    }
    /* release: pairs with the acquire load after the loop returns */
    atomic_fetch_sub_explicit(&s->in_flight, 1, memory_order_release);
    return rc;
}

/* The value returned must be that of a stopper whose chunk ran. */
static void check_stopped(stopper *s, int rc, const char *what)
{
    CHECK(atomic_load_explicit(&s->in_flight, memory_order_acquire) == 0,
          "%s returned while a chunk still ran", what);
    if (s->every_chunk) {
        CHECK(rc > 0 && rc <= s->n, "%s: every chunk stops, but it returned %d", what, rc);
        return;
    }
    int fired = atomic_load_explicit(&s->fired, memory_order_relaxed);
    for (int k = 0; k < s->nstoppers; k++)
        if ((fired & (1 << k)) && rc == s->value[k])
            return;
    stress_fail(__FILE__, __LINE__, "%s (n=%lld, %d stoppers) returned %d, no stopper that ran "
                "returned it (fired mask %#x)", what, (long long)s->n, s->nstoppers, rc, fired);
}

static stopper *make_stopper(stress_rng *rng, int64_t n)
{
    stopper *s = calloc(1, sizeof *s);
    CHECK(s != NULL, "out of memory");
    s->n = n;
    s->every_chunk = stress_below(rng, 8) == 0;
    s->nstoppers = 1 + (int)stress_below(rng, MAX_STOPPERS);
    for (int k = 0; k < s->nstoppers; k++) {
        s->stop_at[k] = stress_below(rng, n);
        s->value[k] = 1 + k + 10 * (int)stress_below(rng, 1000);
    }
    return s;
}

/* ---- a stop inside a nested loop ------------------------------------------------------ */

typedef struct {
    stopper *inner;
    int64_t outer_n;
} nested;

static int outer_chunk(void *ctx, int64_t start, int64_t stop)
{
    nested *nc = ctx;
    for (int64_t i = start; i < stop; i++) {
        int rc = pyrt_parallel_for(nc->inner->n, 1, stop_chunk, nc->inner);
        if (rc != 0)
            return rc; /* pass the inner loop's stop on to the outer loop */
    }
    return 0;
}

/* ---- stops in reductions -------------------------------------------------------------- */

typedef struct {
    int64_t n, grain;
    int64_t bad_leaf_start; /* the leaf starting here fails; -1 for none */
    int64_t bad_merge_at;   /* a combine whose right part starts here fails; -1 for none */
    int value;
} reduce_stop;

typedef struct {
    int64_t lo, hi;
} span;

static int span_leaf(void *ctx, int64_t start, int64_t stop, void *acc)
{
    reduce_stop *r = ctx;
    span s = {start, stop};
    *(span *)acc = s;
    return start == r->bad_leaf_start ? r->value : 0;
}

static int span_combine(void *ctx, void *left, const void *right)
{
    reduce_stop *r = ctx;
    span *a = left;
    const span *b = right;
    CHECK(a->hi == b->lo, "combined [%lld, %lld) with [%lld, %lld)", (long long)a->lo,
          (long long)a->hi, (long long)b->lo, (long long)b->hi);
    int rc = b->lo == r->bad_merge_at ? r->value : 0;
    a->hi = b->hi;
    return rc;
}

static void check_reduce_stop(stress_rng *rng, int threads)
{
    reduce_stop r;
    r.n = 2 + stress_log_below(rng, 100000);
    r.grain = 1 + stress_log_below(rng, r.n / 2 + 1);
    int64_t leaves = (r.n + r.grain - 1) / r.grain;
    int64_t leaf = stress_below(rng, leaves);
    r.value = 1 + (int)stress_below(rng, 1 << 20);
    if (stress_below(rng, 2)) {
        r.bad_leaf_start = leaf * r.grain;
        r.bad_merge_at = -1;
    } else {
        /* every leaf start but 0 is the left edge of some right part in the merge tree */
        r.bad_leaf_start = -1;
        r.bad_merge_at = leaves > 1 ? (1 + stress_below(rng, leaves - 1)) * r.grain : -1;
    }
    span result;
    int rc = pyrt_parallel_reduce(r.n, r.grain, sizeof result, span_leaf, span_combine, &r,
                                  &result);
    int expect = r.bad_leaf_start >= 0 || r.bad_merge_at >= 0 ? r.value : 0;
    CHECK(rc == expect, "reduce(n=%lld, grain=%lld) on %d threads, failing leaf at %lld, merge "
          "at %lld: returned %d, expected %d", (long long)r.n, (long long)r.grain, threads,
          (long long)r.bad_leaf_start, (long long)r.bad_merge_at, rc, expect);
    if (expect == 0)
        CHECK(result.lo == 0 && result.hi == r.n, "reduce covered [%lld, %lld) of [0, %lld)",
              (long long)result.lo, (long long)result.hi, (long long)r.n);
}

int main(void)
{
    double t0 = stress_now();
    stress_begin("stress_early_stop");
    stress_rng rng = stress_rng_make(stress_seed(), 5);
    int64_t rounds = stress_scaled(20000, 200);

    int threads = 1;
    for (int64_t k = 0; k < rounds; k++) {
        if (k % 40 == 0) {
            threads = 1 + (int)stress_below(&rng, STRESS_MAX_THREADS);
            stress_set_threads(threads);
        }

        /* a flat loop */
        int64_t n = 1 + stress_log_below(&rng, 200000);
        int64_t grain = stress_below(&rng, 2) ? 0 : 1 + stress_log_below(&rng, 256);
        stopper *s = make_stopper(&rng, n);
        int rc = pyrt_parallel_for(n, grain, stop_chunk, s);
        atomic_store_explicit(&s->returned, 1, memory_order_relaxed);
        check_stopped(s, rc, "parallel_for");
        free(s);

        /* a stop in an inner loop ends the outer one */
        if (k % 4 == 0) {
            nested nc = {make_stopper(&rng, 1 + stress_log_below(&rng, 2000)),
                         1 + stress_log_below(&rng, 64)};
            nc.inner->every_chunk = 0;
            rc = pyrt_parallel_for(nc.outer_n, 1, outer_chunk, &nc);
            atomic_store_explicit(&nc.inner->returned, 1, memory_order_relaxed);
            check_stopped(nc.inner, rc, "nested parallel_for");
            free(nc.inner);
        }

        check_reduce_stop(&rng, threads);
    }
    return stress_end("stress_early_stop", t0);
}
