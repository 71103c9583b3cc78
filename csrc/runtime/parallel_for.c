/*
 * parallel_for.c - loops with lazy binary splitting (Tzannes et al., PPoPP 2010).
 *
 * The thread that owns a range runs it chunk by chunk. Between chunks it looks at the pool's
 * counters (one shared, read-mostly cache line): only when an idle worker is awake to take work
 * does it split what is left in two, push the upper half as a task and go on with the lower
 * half. When every other worker is busy nothing is split and the loop costs what a serial loop
 * of chunk calls costs. A stolen half is run the same way by its thief, so splitting recurses
 * where it pays.
 */
#include "internal.h"

/* Wake a sleeping worker for a loop only if at least this many chunks are left: a wake-up
 * costs tens of microseconds before the sleeper starts stealing. */
#define WAKE_MIN_CHUNKS 4
/* Splits one range owner can have outstanding; each halves what is left, so 64 is plenty. */
#define MAX_SPLITS 64
/* Split only if what is left looks like this much work at the rate the range has run so far:
 * the half offered must outweigh a steal and its join (about a microsecond). Chunks of an
 * automatic grain are 2 us each, so this only holds back loops whose caller asked for chunks
 * far below that: 1024 floats of an axpy in chunks of 32 (330 ns in all) took 1.3 us on two
 * threads when an idle worker took half of it (now 345 ns, against 339 on one thread). The
 * rate is that of the range's own chunks so far, read from the clock only when an idle
 * worker could take a half; after a "no" not
 * before the range has done as many indices again (a loop whose later indices cost more is
 * looked at again, a few times at most), which it runs as one chunk, as one thread would. */
#define SPLIT_MIN_US 2.0
/* ... and only once the range has run this long: a rate read off less is the clock's and a
 * cache miss's, not the body's. 32 floats of that axpy take 14 ns, and a first chunk that met
 * one miss (a line the other thread wrote last, say) looked like 2 us of work left: the loop was
 * split, the halves' lines moved between the cores, the next call's first chunk missed again,
 * and in bad spells it was shared in 5-25% of 20000 calls (over half, once in ten runs of
 * stress_loops), 1.2-1.4x its one-thread time; deciding after 0.25 us, in 0.1-0.3%. Below
 * this the range decides nothing: it looks again after as many indices again, and a range
 * that ends without having split keeps the rate of all its indices (remember_rate), so that
 * the next calls of a loop this small run from parallel_for's fast path. */
#define SPLIT_SEEN_US 0.25
/* A rate remembered from an earlier call lets a loop split before its first chunk only if it
 * puts the whole loop at this much work or more, and only such loops remember the rate they
 * split at. A rate read off a chunk that met a miss or lost the CPU can be several times too
 * high: kept for a loop near SPLIT_MIN_US, it split that loop's next call at once (a 1024-float
 * axpy in chunks of 32, 0.73 us, on two threads 1.037-1.045 times its one-thread time, against
 * 1.011-1.033 without). */
#define EAGER_SPLIT_US 8.0

typedef struct loop {
    pyrt_range_fn fn;
    void *ctx;
    int64_t grain;
    int64_t asked;      /* the caller's grain (0: automatic), under which rates are kept */
    int coarse;         /* pyrt_parallel_for_coarse: split before each chunk, wake for any */
    _Atomic int status; /* first nonzero chunk result; stops the loop */
} loop;

typedef struct range_task {
    pyrt_task_impl task;
    loop *lp;
    int64_t lo, hi;
    double per_index; /* ticks an index took its owner: the thief may split before a chunk */
} range_task;

/* k * grain, or INT64_MAX where that would overflow (no loop has that many indices left). */
static inline int64_t grains(int64_t k, int64_t grain)
{
    return grain <= INT64_MAX / k ? k * grain : INT64_MAX;
}

/* Should the owner of `left` more indices split now? 0: no; 1: yes, a worker is awake to take
 * the half (two grains are left: `split_min` indices); 2: yes, and wake a sleeper for it (with
 * `wake_min` indices left, and a CPU free for it unless the loop is coarse: its bodies may
 * block, as Python's sleep or I/O do). Cheap when the answer is no: two compares and, with
 * work left, a load of a read-mostly line. */
static inline int split_demand(pool *p, int64_t left, int64_t split_min, int64_t wake_min,
                               int coarse)
{
    if (left < split_min)
        return 0;
    if (atomic_load_explicit(&p->searching, memory_order_relaxed) > 0)
        return 1;
    if (left >= wake_min && atomic_load_explicit(&p->sleeping, memory_order_relaxed) > 0
        && (coarse || cpu_free(p)))
        return 2;
    return 0;
}

static void wake_for_split(pool *p, int coarse)
{
    /* seq_cst fence: the half just pushed is visible before we read `sleeping` (pairs with
     * the sleeper's seq_cst increment, README: why no wake-up is lost) */
    atomic_thread_fence(memory_order_seq_cst);
    maybe_wake_for(p, coarse);
}

static void run_range(worker *w, loop *lp, int64_t lo, int64_t hi, double per_index);
static void remember_rate(pyrt_range_fn fn, void *ctx, int64_t grain, int64_t indices,
                          uint64_t ticks);

static void range_task_fn(void *arg)
{
    range_task *rt = arg;
    run_range(worker_current(), rt->lp, rt->lo, rt->hi, rt->per_index);
}

/* Runs [lo, hi) of a loop, chunk by chunk, offering halves to idle workers. `per_index` is
 * what an index of this loop is known to cost, in ticks (0: not known): the rate its owner had
 * measured when it split off this range, or the rate the loop's last call left in the cost
 * table (EAGER_SPLIT_US). With it the range may split before its first chunk. Without it a thief ran a whole
 * chunk before it could offer half of its range on, and a loop spread over the pool one chunk
 * time per halving: a ReLU over 401408 floats (24 chunks of 16384, 6.5 us each on a 16-core
 * Xeon) ran 160 us on 1 thread and 45-53 on 4 to 16, most of them spent before the last
 * thread had work. */
static void run_range(worker *w, loop *lp, int64_t lo, int64_t hi, double per_index)
{
    range_task splits[MAX_SPLITS];
    int nsplits = 0;
    const int64_t grain = lp->grain;
    pool *p = w->pool;
    /* a coarse loop looks for idle workers before each chunk (the first included), and a
     * sleeper is worth waking for two chunks: each costs more than the wake-up */
    const int64_t split_min = grains(2, grain);
    const int64_t wake_min = grains(lp->coarse ? 2 : WAKE_MIN_CHUNKS, grain);
    int ran = lp->coarse || per_index > 0.0;
    const int64_t first = lo, last = hi;
    const uint64_t start = ticks();
    int64_t look_again = lo; /* SPLIT_MIN_US: no rate read before this index */
    int judged = 0;          /* split, or found not worth splitting (its rate remembered) */

    while (lo < hi) {
        if (ran && lo >= look_again) {
            int demand = nsplits < MAX_SPLITS
                             ? split_demand(p, hi - lo, split_min, wake_min, lp->coarse) : 0;
            /* the range's own rate once it has run long enough to tell, else the one it was
             * given; a coarse loop's first look, with neither, splits */
            int measured = 0;
            uint64_t spent = 0;
            if (demand && lo > first) {
                spent = ticks() - start;
                if ((double)spent >= SPLIT_SEEN_US * ticks_per_us()) {
                    per_index = (double)spent / (double)(lo - first);
                    measured = 1;
                } else if (per_index <= 0.0) {
                    demand = 0; /* too soon to tell */
                    look_again = lo + (lo - first);
                }
            }
            if (demand && per_index > 0.0
                && per_index * (double)(hi - lo) < SPLIT_MIN_US * ticks_per_us()) {
                demand = 0;
                look_again = lo + (lo > first ? lo - first : 1);
                if (measured) {
                    remember_rate(lp->fn, lp->ctx, lp->asked, lo - first, spent);
                    judged = 1;
                }
            }
            if (demand) {
                /* keep the lower half (its memory is warm in our cache), offer the upper one */
                int64_t mid = lo + ((hi - lo) / grain / 2) * grain;
                range_task *rt = &splits[nsplits++];
                rt->lp = lp;
                rt->lo = mid;
                rt->hi = hi;
                /* (a coarse loop's bodies may block: its thieves time their own) */
                rt->per_index = lp->coarse ? 0.0 : per_index;
                task_push(w, &rt->task, range_task_fn, rt);
                /* the rate, for the loop's next call to split before its first chunk */
                if (measured && lp->asked > 0 && !lp->coarse
                    && per_index * (double)(last - first) >= EAGER_SPLIT_US * ticks_per_us())
                    remember_rate(lp->fn, lp->ctx, lp->asked, lo - first, spent);
                hi = mid;
                judged = 1;
                if (demand == 2)
                    wake_for_split(p, lp->coarse);
            }
        }
        if (atomic_load_explicit(&lp->status, memory_order_relaxed))
            break; /* another chunk stopped the loop */
        int64_t end = hi - lo > grain ? lo + grain : hi;
        if (end < look_again) /* not worth sharing until then: one chunk, one call */
            end = look_again < hi ? look_again : hi;
        int rc = lp->fn(lp->ctx, lo, end);
        if (rc) {
            int expected = 0;
            atomic_compare_exchange_strong(&lp->status, &expected, rc);
            break;
        }
        lo = end;
        ran = 1;
    }
    /* a range that ran whole before it could be judged (SPLIT_SEEN_US): the rate of all its
     * indices, if it ran them all (a loop stopped by a chunk's error tells nothing) */
    if (!judged && lo == hi && hi > first)
        remember_rate(lp->fn, lp->ctx, lp->asked, hi - first, ticks() - start);
    /* join the halves we gave away, newest first; those no one stole run here, splitting
     * again if thieves turn up meanwhile */
    while (nsplits > 0)
        task_join(w, &splits[--nsplits].task);
}

/* A chunk should take at least this long: a steal and its join cost about a microsecond. */
#define AUTO_CHUNK_US 2.0
/* The cost of an index is measured on the loop's first indices, in rounds of AUTO_PROBE of
 * them, then twice as many, and so on, until one round (not the first) runs AUTO_PROBE_US:
 * the longest round's rate is the cost. A probe of a fixed few indices measured the call, the
 * clock and cold caches rather than the body: a 2^20-element axpy probed on 4 indices got
 * chunks of 17 to 288 indices instead of about 5000, and ran at 2 threads 15% slower than
 * OpenMP's static halves. The probe's indices are the loop's own: nothing is run twice. */
#define AUTO_PROBE 4
#define AUTO_PROBE_US 0.5
/* Measured costs are remembered per (body, context, grain) in a small per-thread table, so a loop
 * called again and again (a kernel in a training step) is timed once every COST_REFRESH calls
 * rather than every time. A loop of a chunk or less (below any split, such as 64 elements of
 * an axpy: 28 ns) runs from parallel_for's frameless fast path, and the thread's calls that
 * take it are counted together (tiny.countdown): every COST_REFRESH_TINY-th goes the checked
 * way and times its loop again. Timing it every 64 calls and the full function's frame cost
 * 2.5 ns a call (on a Sapphire Rapids Xeon: 28.9 ns on one thread, 30.0 on two, against 27.6
 * and 28.1 without). Such a loop would have to become some 3 times slower before a split
 * paid; it is then noticed within COST_REFRESH_TINY calls (one loop called alone), or as many
 * of the thread's fast-path calls. */
#define COST_SLOTS 16
#define COST_REFRESH 64
#define COST_REFRESH_TINY 1024

/* The caller's grain is part of the key. A kernel passes its context on its stack, so one
 * (body, context) pair stands for every call from the same place, whatever the shapes; its
 * grain is its own estimate of what an index costs (rows of `cols` elements: 16384 / cols of
 * them). Keyed by body and context alone, a pair seen with cheap indices (3000 of them in
 * 2 us) ran its next calls of 64 indices of 50 us each on one thread, 3.4 ms a call instead
 * of 1.7, until the entry was due for timing again. */
typedef struct cost_entry {
    pyrt_range_fn fn;
    void *ctx;
    int64_t grain; /* the caller's (0: pyrt's own) */
    int64_t chunk; /* indices that take about AUTO_CHUNK_US, at least 1 */
    unsigned uses;
} cost_entry;

static __thread cost_entry cost_table[COST_SLOTS];

/* The fast path's own state: the entry of its last hit, looked at before the table (a loop
 * called again and again finds it without hashing its key), and the count of its hits left
 * before one goes the checked way. Hashing the key took a 64-element axpy (51 ns a call on an
 * AMD EPYC) 1.037-1.042 times its one-thread time on two threads, in paired runs
 * (benchmarks/runtime/bench_loop_paired.py); looking at the last entry first, 1.011-1.016.
 * `last` points into cost_table, or at no_entry, whose body matches no loop; an entry that
 * has since been given to another loop no longer matches either. The count is 0 only before
 * the thread's first checked call: every hit comes after one, which sets it. */
static const cost_entry no_entry;
static __thread struct {
    const cost_entry *last;
    unsigned countdown;
} tiny = {&no_entry, 0};

/* The slot of a key: the grain is hashed in too, so that one body and context asked with two
 * grains in turn (a kernel called for two layers of different widths) keeps both entries
 * rather than evicting one with the other on every call. */
static cost_entry *cost_slot(pyrt_range_fn fn, void *ctx, int64_t grain)
{
    uint64_t h = ((uint64_t)(uintptr_t)fn ^ (uint64_t)(uintptr_t)ctx ^ (uint64_t)grain)
                 * 0x9E3779B97F4A7C15ull;
    return &cost_table[h >> 60];
}

/* A rate measured by run_range (a loop with a caller's grain found too small to share), kept
 * as auto_grain keeps its own: parallel_for's fast path then runs the next calls of a loop of
 * at most a chunk's length straight away, without entering the pool. */
static void remember_rate(pyrt_range_fn fn, void *ctx, int64_t grain, int64_t indices,
                          uint64_t ticks)
{
    const double chunk = AUTO_CHUNK_US * ticks_per_us() * (double)indices
                         / (double)(ticks > 0 ? ticks : 1);
    const int64_t kept = chunk >= (double)INT64_MAX ? INT64_MAX
                         : chunk >= 1.0 ? (int64_t)chunk : 1;
    *cost_slot(fn, ctx, grain) = (cost_entry){fn, ctx, grain, kept, 1};
}

/* grain 0 on several threads: use chunks of about AUTO_CHUNK_US, so that no split is smaller
 * than what sharing it costs. The cost of an index comes from the table or from timing the
 * loop's first indices (AUTO_PROBE_US). Returns the index the loop goes on from (n when it is
 * done); *rc holds the probe's result. The common case, the same loop again, is a lookup, a
 * count and an integer: a loop too small to split costs on several threads what it costs on
 * one. */
static int64_t auto_grain(int64_t n, pyrt_range_fn fn, void *ctx, int *rc, int64_t *grain)
{
    cost_entry *e = cost_slot(fn, ctx, 0);
    *rc = 0;
    const int known = e->fn == fn && e->ctx == ctx && e->grain == 0;
    /* a known loop of a chunk or less comes here only when parallel_for's fast path found
     * it due for timing (it counted the call) */
    if (known && n > e->chunk && ++e->uses % COST_REFRESH != 0) {
        *grain = e->chunk < n ? e->chunk : n;
        return 0;
    }
    const double probe_ticks = AUTO_PROBE_US * ticks_per_us();
    const double chunk_ticks = AUTO_CHUNK_US * ticks_per_us();
    /* measuring again a loop known and warm: the first round is a quarter of the chunk known
     * (about AUTO_PROBE_US), and counts like any later one; a loop shorter than that is timed
     * whole, in one round */
    int64_t start = 0, probe = known && e->chunk / 4 > AUTO_PROBE ? e->chunk / 4 : AUTO_PROBE;
    double per_index = 0.0;
    int64_t measured = 0; /* indices of the round per_index comes from */
    uint64_t t0 = ticks();
    for (int round = known ? 2 : 1;; round++, probe *= 2) {
        const int64_t end = n - start < probe ? n : start + probe;
        *rc = fn(ctx, start, end);
        const uint64_t t1 = ticks(); /* the end of this round is the start of the next */
        const double dt = (double)(t1 - t0);
        t0 = t1;
        /* the rate of the longest round: the last one may be cut short by the loop's end (4
         * indices after 1020 of a 1024-element loop: mostly the clock) */
        if (end - start > measured) {
            per_index = dt / (double)(end - start);
            measured = end - start;
        }
        start = end;
        /* a round of at least AUTO_PROBE_US measures the body, not the clock; the first
         * round, on cold caches (the loop's first lines, its TLB entries: 4 indices of an
         * axpy took 0.6 us), counts only when it is a whole chunk by itself */
        if (*rc || start == n || dt >= chunk_ticks || (dt >= probe_ticks && round > 1))
            break;
    }
    if (per_index < 1.0)
        per_index = 1.0;
    /* the chunk length is kept rather than the cost, so that the calls in between do no
     * arithmetic */
    const double chunk = chunk_ticks / per_index;
    *e = (cost_entry){fn, ctx, 0, chunk >= (double)INT64_MAX ? INT64_MAX
                                  : chunk >= 1.0 ? (int64_t)chunk : 1, 1};
    if (*rc || start == n)
        return n;
    *grain = e->chunk < n - start ? e->chunk : n - start;
    return start;
}

static int parallel_for_split(int64_t n, int64_t grain, pyrt_range_fn fn, void *ctx, int coarse,
                              int threads);

/* Every call that is not one of the fast path's: the arguments checked, the thread count
 * chosen if it was not yet, a loop too short for its caller's grain run whole, and the rest
 * split. Out of line, so that the fast path needs no stack frame. */
static __attribute__((noinline)) int parallel_for_checked(int64_t n, int64_t grain,
                                                          pyrt_range_fn fn, void *ctx,
                                                          int coarse)
{
    if (n < 0 || grain < 0 || !fn)
        return PYRT_EINVAL;
    if (n == 0)
        return PYRT_OK;
    if (tiny.countdown == 0) /* the fast path's count ran out (or was never set) */
        tiny.countdown = COST_REFRESH_TINY;
    const int threads = pyrt_get_num_threads();
    /* one thread, or fewer indices than a split needs: one chunk */
    if (threads <= 1 || (grain > 0 && n < grains(coarse ? 2 : 3, grain)))
        return fn(ctx, 0, n);
    return parallel_for_split(n, grain, fn, ctx, coarse, threads);
}

/* The commonest calls of all in a few instructions, without a stack frame: the body is a
 * tail call. They are a loop on one thread, a loop shorter than three of its caller's grains
 * (two for a coarse loop), and a loop seen before to be at most one chunk of about
 * AUTO_CHUNK_US (by auto_grain's timing, or by run_range's finding a caller's grain too fine
 * to share). With a call to read the thread count, and the frame it forced, a 64-element axpy
 * took 35.4 ns on two threads and 33.5 on one (33.3 and 33.3 without). A hit on the last
 * entry (tiny, above) is marked likely, so that the check runs straight through to the body
 * without a taken branch; GCC then no longer inlined this function into its two callers,
 * hence always_inline. In paired runs of that loop (benchmarks/runtime/bench_loop_paired.py),
 * two threads took 1.019-1.050 of one thread's time, median 1.022, against 1.028-1.061,
 * median 1.056, with the hit laid out as a jump. */
static inline __attribute__((always_inline)) int parallel_for(int64_t n, int64_t grain,
                                                              pyrt_range_fn fn, void *ctx,
                                                              int coarse)
{
    /* relaxed: the count is a plain setting, ordered with nothing else; 0 (not chosen yet)
     * goes the checked way */
    const int threads = atomic_load_explicit(&g_num_threads, memory_order_relaxed);
    if (n > 0 && grain >= 0 && fn) {
        if (threads == 1)
            return fn(ctx, 0, n);
        if (threads > 1) {
            /* fewer indices than a split of the caller's grain needs (a kernel's loop on a
             * small tensor, the commonest of all): one chunk */
            if (grain > 0 && n < grains(coarse ? 2 : 3, grain))
                return fn(ctx, 0, n);
            /* the last hit's entry, its key compared field by field: through a helper
             * function GCC laid the hit out as a taken jump (1.024-1.027 paired) */
            const cost_entry *l = tiny.last;
            if (__builtin_expect(l->fn == fn && l->ctx == ctx && l->grain == grain
                                 && n <= l->chunk, 1)) {
                if (__builtin_expect(--tiny.countdown != 0, 1))
                    return fn(ctx, 0, n);
            } else {
                const cost_entry *e = cost_slot(fn, ctx, grain);
                if (e->fn == fn && e->ctx == ctx && e->grain == grain && n <= e->chunk
                    && --tiny.countdown != 0) {
                    tiny.last = e;
                    return fn(ctx, 0, n);
                }
            }
        }
    }
    return parallel_for_checked(n, grain, fn, ctx, coarse);
}

/* The rest of parallel_for: the grain measured or looked up, the loop split where it pays. */
static __attribute__((noinline)) int parallel_for_split(int64_t n, int64_t grain,
                                                        pyrt_range_fn fn, void *ctx,
                                                        int coarse, int threads)
{
    int64_t start = 0;
    const int64_t asked = grain;
    if (grain == 0) {
        int rc;
        start = auto_grain(n, fn, ctx, &rc, &grain);
        if (rc || start == n)
            return rc;
    }
    /* A split needs two grains left after the first chunk (before it, for a coarse loop):
     * below three grains (two), or with no other thread to take a half, the loop is one
     * chunk, and the body is called once. */
    if (n - start < grains(coarse ? 2 : 3, grain) || threads == 1)
        return fn(ctx, start, n);
    worker *w = worker_enter();
    if (!w)
        return fn(ctx, start, n); /* no pool (out of memory): still correct, serially */
    /* what an index costs, if this thread has seen the loop before (the table keeps it as the
     * indices of an AUTO_CHUNK_US chunk): the range may then split before its first chunk */
    double per_index = 0.0;
    const cost_entry *e = cost_slot(fn, ctx, asked);
    if (!coarse && e->fn == fn && e->ctx == ctx && e->grain == asked) {
        per_index = AUTO_CHUNK_US * ticks_per_us() / (double)e->chunk;
        if (per_index * (double)(n - start) < EAGER_SPLIT_US * ticks_per_us())
            per_index = 0.0; /* near the threshold: time its own chunks first */
    }
    loop lp = {fn, ctx, grain, asked, coarse, 0};
    run_range(w, &lp, start, n, per_index);
    worker_leave(w);
    return atomic_load_explicit(&lp.status, memory_order_relaxed);
}

int pyrt_parallel_for(int64_t n, int64_t grain, pyrt_range_fn fn, void *ctx)
{
    return parallel_for(n, grain, fn, ctx, 0);
}

int pyrt_parallel_for_coarse(int64_t n, int64_t grain, pyrt_range_fn fn, void *ctx)
{
    return parallel_for(n, grain, fn, ctx, 1);
}
