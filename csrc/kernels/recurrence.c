/*
 * recurrence.c - the step loops of an LSTM or GRU layer in one direction, forward and back.
 *
 * A step is one GEMM (the hidden projection h_prev W_hh^T) and one pass of the fused cell
 * (lstm_cell.c, gru_cell.c); its backward is the cell's backward pass and one GEMM (the hidden
 * projection's gradient times W_hh, for h_prev). The loops run here rather than in Python so
 * that a step costs its two calls and nothing more. The weight gradients are not summed here
 * step by step: the caller makes them with one GEMM over all steps at the end.
 *
 * Each step waits for the one before, but only row by row: a row of h_t depends on the same
 * row of h_{t-1} and no other, forward and back. So the batch is cut into blocks of rows
 * (block_rows), and each block runs all its steps as a recurrence of its own, the blocks in
 * parallel, with no join between steps. Run as whole-batch steps, the parallelism was inside
 * each step, its GEMM's and its cell's, with a join per step: 16 rows of 128 units (a
 * [16, 128] x [128, 512] GEMM, 19 us on one thread of an AMD EPYC, and 9 us of cell) took
 * 23.8 us a step on two threads against 28.5 on one, and the backward pass was slower on two
 * threads than on one (32 steps: 1.00 ms against 0.83). In two blocks of 8 rows, the forward
 * takes 0.50 ms on two threads against 0.94 on one, the backward 0.41 against 0.76. A
 * block's GEMM is as fast per row as the batch's as long as it has whole panels of the GEMM
 * kernel's rows (8 rows of that product ran at 109 GFLOP/s, 16 at 108, one at 42). The
 * blocks are fixed by the batch size and the GEMM kernel alone, never the thread count, so
 * the results are bitwise the same at any thread count; a batch of fewer than two blocks'
 * rows is one block, whose GEMMs spread over the threads themselves.
 *
 * Step t of `steps` runs in order t = 0, 1, ... or, with `reverse`, t = steps - 1, ..., 0;
 * arrays indexed by step ([steps, batch, ...]) are indexed by t either way, so the first step
 * run reads h0 (and c0) and the others the output of the step run before them.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cell_rows.h"
#include "gemm/gemm_internal.h" /* pyrt.h, and the GEMM kernel's rows */

/* A block has at least this many rows: whole panels of the GEMM kernel's mr rows (8 with
 * AVX-512, so 8; 6 with AVX2, so 12). */
#define BLOCK_ROWS_MIN 8

/* The step run k-th (k = 0 first). */
static int64_t step_at(int64_t k, int64_t steps, int reverse)
{
    return reverse ? steps - 1 - k : k;
}

/* PYRT_EINVAL for a negative size, PYRT_OK with nothing to do for an empty one, else 1. */
static int sizes(int64_t steps, int64_t batch, int64_t hidden)
{
    if (steps < 0 || batch < 0 || hidden < 0)
        return PYRT_EINVAL;
    return steps == 0 || batch == 0 || hidden == 0 ? PYRT_OK : 1;
}

static int64_t block_rows(void)
{
    const int mr = gemm_kernel_get()->mr;
    return (BLOCK_ROWS_MIN + mr - 1) / mr * mr;
}

/* dh_t = the step's output gradient (d_out: NULL for none) + dh, what the next step passed
 * back. */
static void step_gradient(float *dh_t, const float *d_out, const float *dh, int64_t n)
{
    if (!d_out) {
        memcpy(dh_t, dh, sizeof(float) * (size_t)n);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        dh_t[i] = d_out[i] + dh[i];
}

/* One layer's loop: the arguments of the pyrt_* function that runs it, and its blocks. A
 * block's function runs its rows through every step: row pointers are the arrays' own moved
 * to the block's first row (a step's rows are `batch` apart). */
typedef struct loop {
    int64_t steps, batch, hidden, rows; /* rows: of a block (the last may have fewer) */
    int reverse;
    const float *xw, *w, *bias, *h0, *c0, *d_out, *cells, *acts, *out;
    float *out_w, *cells_w, *acts_w, *dgates, *dgates_h, *dh, *dc;
} loop;

typedef int (*block_fn)(const loop *l, int64_t r0, int64_t rows);

typedef struct blocks_job {
    const loop *l;
    block_fn fn;
    _Atomic int status; /* the first error of a block */
} blocks_job;

static int run_blocks(void *ctx, int64_t start, int64_t stop)
{
    blocks_job *j = ctx;
    const loop *l = j->l;
    for (int64_t b = start; b < stop; b++) {
        const int64_t r0 = b * l->rows;
        const int rc = j->fn(l, r0, l->batch - r0 < l->rows ? l->batch - r0 : l->rows);
        if (rc != PYRT_OK) {
            /* relaxed: the status is read after gemm_for_each has joined every block */
            int expected = PYRT_OK;
            atomic_compare_exchange_strong_explicit(&j->status, &expected, rc,
                                                    memory_order_relaxed, memory_order_relaxed);
            return rc;
        }
    }
    return PYRT_OK;
}

/* The blocks in parallel. Each is a whole recurrence, hundreds of microseconds or more, and
 * there are few, so they are split eagerly, as the GEMM's tasks are (gemm_for_each): the
 * upper half offered at once, the lower run here, down to single blocks. Split lazily, a
 * thief that took two of three blocks ran both, its range split only when another thread was
 * idle as it looked, and the owner, done with its one, idled through the thief's second:
 * three blocks of a GRU step took as long on two threads as on one. */
static int over_blocks(loop *l, block_fn fn)
{
    const int64_t rows = block_rows();
    l->rows = l->batch < 2 * rows ? l->batch : rows;
    blocks_job j = {l, fn, PYRT_OK};
    gemm_for_each((l->batch + l->rows - 1) / l->rows, run_blocks, &j);
    return atomic_load_explicit(&j.status, memory_order_relaxed); /* joined: see run_blocks */
}

/* ---- LSTM ----------------------------------------------------------------------------- */

static int lstm_forward_block(const loop *l, int64_t r0, int64_t n)
{
    const int64_t H = l->hidden, G = 4 * H, step_h = l->batch * H, step_g = l->batch * G;
    float *hw = malloc(sizeof(float) * (size_t)(n * G));
    if (!hw)
        return PYRT_ENOMEM;
    int rc = PYRT_OK;
    const float *h_prev = l->h0 + r0 * H, *c_prev = l->c0 + r0 * H;
    for (int64_t k = 0; k < l->steps && rc == PYRT_OK; k++) {
        const int64_t t = step_at(k, l->steps, l->reverse);
        float *h = l->out_w + t * step_h + r0 * H, *c = l->cells_w + t * step_h + r0 * H;
        rc = pyrt_sgemm(0, 0, n, G, H, 1.0f, h_prev, H, l->w, G, 0.0f, hw, G);
        if (rc == PYRT_OK)
            lstm_cell_rows(l->xw + t * step_g + r0 * G, hw, c_prev, h, c,
                           l->acts_w ? l->acts_w + t * step_g + r0 * G : NULL, n, H);
        h_prev = h;
        c_prev = c;
    }
    free(hw);
    return rc;
}

int pyrt_lstm_forward(int64_t steps, int64_t batch, int64_t hidden, int reverse,
                      const float *xw, const float *w_hh_t, const float *h0, const float *c0,
                      float *out, float *cells, float *acts)
{
    const int size = sizes(steps, batch, hidden);
    if (size != 1)
        return size;
    if (!xw || !w_hh_t || !h0 || !c0 || !out || !cells)
        return PYRT_EINVAL;
    loop l = {.steps = steps, .batch = batch, .hidden = hidden, .reverse = reverse, .xw = xw,
              .w = w_hh_t, .h0 = h0, .c0 = c0, .out_w = out, .cells_w = cells, .acts_w = acts};
    return over_blocks(&l, lstm_forward_block);
}

static int lstm_backward_block(const loop *l, int64_t r0, int64_t n)
{
    const int64_t H = l->hidden, G = 4 * H, step_h = l->batch * H, step_g = l->batch * G;
    /* dh_t (the step's output gradient plus what the next step passed back) and the cell
     * gradient written while the other is read */
    float *dh_t = malloc(sizeof(float) * (size_t)(n * H));
    float *dc_other = malloc(sizeof(float) * (size_t)(n * H));
    if (!dh_t || !dc_other) {
        free(dh_t);
        free(dc_other);
        return PYRT_ENOMEM;
    }
    int rc = PYRT_OK;
    float *dh = l->dh + r0 * H, *dc = l->dc + r0 * H;
    float *dc_in = dc, *dc_out = dc_other;
    for (int64_t k = l->steps - 1; k >= 0 && rc == PYRT_OK; k--) {
        const int64_t t = step_at(k, l->steps, l->reverse);
        const float *c_prev = k == 0 ? l->c0 + r0 * H
                                     : l->cells + step_at(k - 1, l->steps, l->reverse) * step_h
                                           + r0 * H;
        float *dg = l->dgates + t * step_g + r0 * G;
        step_gradient(dh_t, l->d_out ? l->d_out + t * step_h + r0 * H : NULL, dh, n * H);
        lstm_cell_backward_rows(dh_t, dc_in, l->acts + t * step_g + r0 * G,
                                l->cells + t * step_h + r0 * H, c_prev, dg, dc_out, n, H);
        /* dh_prev = dgates W_hh: [rows, 4H] @ [4H, H] */
        rc = pyrt_sgemm(0, 0, n, H, G, 1.0f, dg, G, l->w, H, 0.0f, dh, H);
        float *swap = dc_in;
        dc_in = dc_out;
        dc_out = swap;
    }
    if (dc_in != dc) /* the last cell gradient written is dc0: into the caller's dc */
        memcpy(dc, dc_in, sizeof(float) * (size_t)(n * H));
    free(dh_t);
    free(dc_other);
    return rc;
}

int pyrt_lstm_backward(int64_t steps, int64_t batch, int64_t hidden, int reverse,
                       const float *d_out, const float *w_hh, const float *c0,
                       const float *cells, const float *acts, float *dgates, float *dh,
                       float *dc)
{
    const int size = sizes(steps, batch, hidden);
    if (size != 1)
        return size;
    if (!w_hh || !c0 || !cells || !acts || !dgates || !dh || !dc)
        return PYRT_EINVAL;
    loop l = {.steps = steps, .batch = batch, .hidden = hidden, .reverse = reverse,
              .d_out = d_out, .w = w_hh, .c0 = c0, .cells = cells, .acts = acts,
              .dgates = dgates, .dh = dh, .dc = dc};
    return over_blocks(&l, lstm_backward_block);
}

/* ---- GRU ------------------------------------------------------------------------------ */

static int gru_forward_block(const loop *l, int64_t r0, int64_t n)
{
    const int64_t H = l->hidden, G = 3 * H, step_h = l->batch * H, step_g = l->batch * G;
    float *hw = malloc(sizeof(float) * (size_t)(n * G));
    if (!hw)
        return PYRT_ENOMEM;
    int rc = PYRT_OK;
    const float *h_prev = l->h0 + r0 * H;
    for (int64_t k = 0; k < l->steps && rc == PYRT_OK; k++) {
        const int64_t t = step_at(k, l->steps, l->reverse);
        float *h = l->out_w + t * step_h + r0 * H;
        rc = pyrt_sgemm(0, 0, n, G, H, 1.0f, h_prev, H, l->w, G, 0.0f, hw, G);
        if (rc == PYRT_OK)
            gru_cell_rows(l->xw + t * step_g + r0 * G, hw, l->bias, h_prev, h,
                          l->acts_w + (t * l->batch + r0) * 4 * H, n, H);
        h_prev = h;
    }
    free(hw);
    return rc;
}

int pyrt_gru_forward(int64_t steps, int64_t batch, int64_t hidden, int reverse,
                     const float *xw, const float *w_hh_t, const float *bias_hh,
                     const float *h0, float *out, float *acts)
{
    const int size = sizes(steps, batch, hidden);
    if (size != 1)
        return size;
    if (!xw || !w_hh_t || !h0 || !out || !acts)
        return PYRT_EINVAL;
    loop l = {.steps = steps, .batch = batch, .hidden = hidden, .reverse = reverse, .xw = xw,
              .w = w_hh_t, .bias = bias_hh, .h0 = h0, .out_w = out, .acts_w = acts};
    return over_blocks(&l, gru_forward_block);
}

static int gru_backward_block(const loop *l, int64_t r0, int64_t n)
{
    const int64_t H = l->hidden, G = 3 * H, step_h = l->batch * H, step_g = l->batch * G;
    float *dh_t = malloc(sizeof(float) * (size_t)(n * H));
    if (!dh_t)
        return PYRT_ENOMEM;
    int rc = PYRT_OK;
    float *dh = l->dh + r0 * H;
    for (int64_t k = l->steps - 1; k >= 0 && rc == PYRT_OK; k--) {
        const int64_t t = step_at(k, l->steps, l->reverse);
        const float *h_prev = k == 0 ? l->h0 + r0 * H
                                     : l->out + step_at(k - 1, l->steps, l->reverse) * step_h
                                           + r0 * H;
        float *dgh = l->dgates_h + t * step_g + r0 * G;
        step_gradient(dh_t, l->d_out ? l->d_out + t * step_h + r0 * H : NULL, dh, n * H);
        /* dh_prev = dh z (into dh), then += dgates_h W_hh: [rows, 3H] @ [3H, H] */
        gru_cell_backward_rows(dh_t, l->acts + (t * l->batch + r0) * 4 * H, h_prev,
                               l->dgates + t * step_g + r0 * G, dgh, dh, n, H);
        rc = pyrt_sgemm(0, 0, n, H, G, 1.0f, dgh, G, l->w, H, 1.0f, dh, H);
    }
    free(dh_t);
    return rc;
}

int pyrt_gru_backward(int64_t steps, int64_t batch, int64_t hidden, int reverse,
                      const float *d_out, const float *w_hh, const float *h0, const float *out,
                      const float *acts, float *dgates_x, float *dgates_h, float *dh)
{
    const int size = sizes(steps, batch, hidden);
    if (size != 1)
        return size;
    if (!w_hh || !h0 || !out || !acts || !dgates_x || !dgates_h || !dh)
        return PYRT_EINVAL;
    loop l = {.steps = steps, .batch = batch, .hidden = hidden, .reverse = reverse,
              .d_out = d_out, .w = w_hh, .h0 = h0, .out = out, .acts = acts,
              .dgates = dgates_x, .dgates_h = dgates_h, .dh = dh};
    return over_blocks(&l, gru_backward_block);
}
