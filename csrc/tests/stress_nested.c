/*
 * stress_nested.c - nested loops and loops inside tasks, all in the one pool.
 *
 * A 2-D index space rows x cols is covered five ways: a parallel_for over rows whose chunks run
 * a parallel_for over columns; a tree of spawned tasks whose leaves enter a nested pyrt_run and
 * run parallel_for there; a parallel_reduce whose leaves run parallel_for and count what they
 * visited; a parallel_for whose chunks run a parallel_reduce per row; and loops whose chunks
 * spawn small fib tasks. Every index has an atomic visit counter and must be visited exactly
 * once per pass, whatever the thread count and whoever stole what.
 */
#include <stddef.h>
#include <stdint.h>

#include "stress.h"

#include <stdatomic.h>
#include <string.h>

typedef struct {
    int64_t rows, cols;
    int64_t row_grain, col_grain;
    _Atomic int32_t *visits; /* rows * cols counters */
} grid;

static void check_chunk(int64_t start, int64_t stop, int64_t n, const char *what)
{
    CHECK(0 <= start && start < stop && stop <= n, "%s chunk [%lld, %lld) outside [0, %lld)",
          what, (long long)start, (long long)stop, (long long)n);
}

static void visit(grid *g, int64_t row, int64_t col)
{
    atomic_fetch_add_explicit(&g->visits[row * g->cols + col], 1, memory_order_relaxed);
}

/* Every counter must be 1; then reset them for the next pass. */
static void check_grid(grid *g, const char *pass, int threads)
{
    for (int64_t i = 0; i < g->rows * g->cols; i++) {
        int32_t v = atomic_load_explicit(&g->visits[i], memory_order_relaxed);
        CHECK(v == 1, "%s, %d threads, grid %lldx%lld: index (%lld, %lld) visited %d times", pass,
              threads, (long long)g->rows, (long long)g->cols, (long long)(i / g->cols),
              (long long)(i % g->cols), v);
        atomic_store_explicit(&g->visits[i], 0, memory_order_relaxed);
    }
}

/* ---- parallel_for inside parallel_for ------------------------------------------------- */

typedef struct {
    grid *g;
    int64_t row;
} row_ctx;

static int cols_chunk(void *ctx, int64_t start, int64_t stop)
{
    row_ctx *rc = ctx;
    check_chunk(start, stop, rc->g->cols, "inner");
    for (int64_t c = start; c < stop; c++)
        visit(rc->g, rc->row, c);
    return 0;
}

static int rows_chunk(void *ctx, int64_t start, int64_t stop)
{
    grid *g = ctx;
    check_chunk(start, stop, g->rows, "outer");
    for (int64_t r = start; r < stop; r++) {
        row_ctx rc = {g, r};
        CHECK_RC(pyrt_parallel_for(g->cols, g->col_grain, cols_chunk, &rc), 0);
    }
    return 0;
}

/* ---- parallel_for at the leaves of a task tree ---------------------------------------- */

typedef struct {
    grid *g;
    int64_t row_lo, row_hi;
} rows_span;

static int span_chunk(void *ctx, int64_t start, int64_t stop)
{
    rows_span *s = ctx;
    int64_t span_cells = (s->row_hi - s->row_lo) * s->g->cols;
    check_chunk(start, stop, span_cells, "task-leaf");
    for (int64_t i = start; i < stop; i++)
        visit(s->g, s->row_lo + i / s->g->cols, i % s->g->cols);
    return 0;
}

static void span_leaf(void *arg)
{
    rows_span *s = arg;
    int64_t cells = (s->row_hi - s->row_lo) * s->g->cols;
    CHECK_RC(pyrt_parallel_for(cells, s->g->col_grain, span_chunk, s), 0);
}

/* Split the rows in halves with spawn/sync; a leaf of two rows or fewer loops over its cells
 * inside a nested pyrt_run, which must simply call it. */
static void span_task(void *arg)
{
    rows_span *s = arg;
    if (s->row_hi - s->row_lo <= 2) {
        CHECK_RC(pyrt_run(span_leaf, s), PYRT_OK);
        return;
    }
    int64_t mid = s->row_lo + (s->row_hi - s->row_lo) / 2;
    rows_span left = {s->g, s->row_lo, mid}, right = {s->g, mid, s->row_hi};
    pyrt_task t;
    pyrt_spawn(&t, span_task, &right);
    span_task(&left);
    pyrt_sync(&t);
}

/* ---- parallel_for inside parallel_reduce leaves --------------------------------------- */

static int reduce_leaf(void *ctx, int64_t start, int64_t stop, void *acc)
{
    grid *g = ctx;
    check_chunk(start, stop, g->rows, "reduce-leaf");
    int64_t cells = 0;
    for (int64_t r = start; r < stop; r++) {
        row_ctx rc = {g, r};
        CHECK_RC(pyrt_parallel_for(g->cols, g->col_grain, cols_chunk, &rc), 0);
        cells += g->cols;
    }
    memcpy(acc, &cells, sizeof cells);
    return 0;
}

static int reduce_combine(void *ctx, void *left, const void *right)
{
    (void)ctx;
    int64_t a, b;
    memcpy(&a, left, sizeof a);
    memcpy(&b, right, sizeof b);
    a += b;
    memcpy(left, &a, sizeof a);
    return 0;
}

/* ---- parallel_reduce inside parallel_for chunks --------------------------------------- */

static int cols_leaf(void *ctx, int64_t start, int64_t stop, void *acc)
{
    row_ctx *rc = ctx;
    check_chunk(start, stop, rc->g->cols, "row-reduce leaf");
    for (int64_t c = start; c < stop; c++)
        visit(rc->g, rc->row, c);
    int64_t count = stop - start;
    memcpy(acc, &count, sizeof count);
    return 0;
}

static int row_reduce_chunk(void *ctx, int64_t start, int64_t stop)
{
    grid *g = ctx;
    check_chunk(start, stop, g->rows, "row-reduce");
    for (int64_t r = start; r < stop; r++) {
        row_ctx rc = {g, r};
        int64_t count = -1;
        CHECK_RC(pyrt_parallel_reduce(g->cols, g->col_grain, sizeof count, cols_leaf,
                                      reduce_combine, &rc, &count),
                 0);
        CHECK(count == g->cols, "reduce over row %lld counted %lld of %lld columns",
              (long long)r, (long long)count, (long long)g->cols);
    }
    return 0;
}

/* ---- tasks spawned from loop chunks --------------------------------------------------- */

/* Each row spawns one fib task per column and syncs them all; fib(c % 12) is checked. */
static int spawning_chunk(void *ctx, int64_t start, int64_t stop)
{
    grid *g = ctx;
    static const int64_t fib_of[12] = {0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89};
    check_chunk(start, stop, g->rows, "spawning");
    enum { MAX_COLS = 64 };
    CHECK(g->cols <= MAX_COLS, "spawning pass needs at most %d columns", MAX_COLS);
    for (int64_t r = start; r < stop; r++) {
        pyrt_task tasks[MAX_COLS];
        fib_frame frames[MAX_COLS];
        for (int64_t c = 0; c < g->cols; c++) {
            frames[c] = (fib_frame){(int)(c % 12), -1};
            pyrt_spawn(&tasks[c], fib_task, &frames[c]);
        }
        for (int64_t c = g->cols - 1; c >= 0; c--) {
            pyrt_sync(&tasks[c]);
            CHECK(frames[c].result == fib_of[c % 12], "fib(%d) spawned from a loop gave %lld",
                  (int)(c % 12), (long long)frames[c].result);
            visit(g, r, c);
        }
    }
    return 0;
}

int main(void)
{
    double t0 = stress_now();
    stress_begin("stress_nested");
    stress_rng rng = stress_rng_make(stress_seed(), 2);
    int64_t rounds = stress_scaled(1500, 50);

    for (int64_t round = 0; round < rounds; round++) {
        int threads = 1 + (int)stress_below(&rng, STRESS_MAX_THREADS);
        stress_set_threads(threads);
        grid g;
        g.rows = 1 + stress_log_below(&rng, 300);
        g.cols = 1 + stress_log_below(&rng, 2000);
        g.row_grain = stress_below(&rng, 4);          /* 0: the runtime's choice */
        g.col_grain = stress_log_below(&rng, 64);
        g.visits = calloc((size_t)(g.rows * g.cols), sizeof *g.visits);
        CHECK(g.visits != NULL, "out of memory");

        CHECK_RC(pyrt_parallel_for(g.rows, g.row_grain, rows_chunk, &g), 0);
        check_grid(&g, "for in for", threads);

        rows_span all = {&g, 0, g.rows};
        CHECK_RC(pyrt_run(span_task, &all), PYRT_OK);
        check_grid(&g, "for in task", threads);

        int64_t cells = -1;
        CHECK_RC(pyrt_parallel_reduce(g.rows, g.row_grain, sizeof cells, reduce_leaf,
                                      reduce_combine, &g, &cells),
                 0);
        CHECK(cells == g.rows * g.cols, "for in reduce counted %lld cells of %lld",
              (long long)cells, (long long)(g.rows * g.cols));
        check_grid(&g, "for in reduce", threads);

        CHECK_RC(pyrt_parallel_for(g.rows, g.row_grain, row_reduce_chunk, &g), 0);
        check_grid(&g, "reduce in for", threads);

        if (g.cols > 64)
            g.cols = 64; /* the counters of a smaller grid fit in the same array */
        CHECK_RC(pyrt_parallel_for(g.rows, g.row_grain, spawning_chunk, &g), 0);
        check_grid(&g, "spawn in for", threads);

        free(g.visits);
    }
    return stress_end("stress_nested", t0);
}
