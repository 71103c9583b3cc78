/*
 * recurrence.c - the step loops of an LSTM or GRU layer in one direction, forward and back.
 *
 * A step is one GEMM (the hidden projection h_prev W_hh^T) and one pass of the fused cell
 * (lstm_cell.c, gru_cell.c); its backward is the cell's backward pass and one GEMM (the hidden
 * projection's gradient times W_hh, for h_prev). Each step waits for the one before, so the
 * parallelism is inside the step: the GEMM's and the cell's. The loops run here rather than in
 * Python so that a step costs its two calls and nothing more. The weight gradients are not
 * summed here step by step: the caller makes them with one GEMM over all steps at the end.
 *
 * Step t of `steps` runs in order t = 0, 1, ... or, with `reverse`, t = steps - 1, ..., 0;
 * arrays indexed by step ([steps, batch, ...]) are indexed by t either way, so the first step
 * run reads h0 (and c0) and the others the output of the step run before them.
 */
#include <stdlib.h>
#include <string.h>

#include "pyrt.h"

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

int pyrt_lstm_forward(int64_t steps, int64_t batch, int64_t hidden, int reverse,
                      const float *xw, const float *w_hh_t, const float *h0, const float *c0,
                      float *out, float *cells, float *acts)
{
    const int size = sizes(steps, batch, hidden);
    if (size != 1)
        return size;
    if (!xw || !w_hh_t || !h0 || !c0 || !out || !cells)
        return PYRT_EINVAL;
    const int64_t G = 4 * hidden, step_h = batch * hidden, step_g = batch * G;
    float *hw = malloc(sizeof(float) * (size_t)step_g);
    if (!hw)
        return PYRT_ENOMEM;
    int rc = PYRT_OK;
    const float *h_prev = h0, *c_prev = c0;
    for (int64_t k = 0; k < steps && rc == PYRT_OK; k++) {
        const int64_t t = step_at(k, steps, reverse);
        rc = pyrt_sgemm(0, 0, batch, G, hidden, 1.0f, h_prev, hidden, w_hh_t, G, 0.0f, hw, G);
        if (rc == PYRT_OK)
            rc = pyrt_lstm_cell(xw + t * step_g, hw, c_prev, out + t * step_h,
                                cells + t * step_h, acts ? acts + t * step_g : NULL, batch,
                                hidden);
        h_prev = out + t * step_h;
        c_prev = cells + t * step_h;
    }
    free(hw);
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
    const int64_t G = 4 * hidden, step_h = batch * hidden, step_g = batch * G;
    /* dh_t (the step's output gradient plus what the next step passed back) and the cell
     * gradient written while the other is read */
    float *dh_t = malloc(sizeof(float) * (size_t)step_h);
    float *dc_other = malloc(sizeof(float) * (size_t)step_h);
    if (!dh_t || !dc_other) {
        free(dh_t);
        free(dc_other);
        return PYRT_ENOMEM;
    }
    int rc = PYRT_OK;
    float *dc_in = dc, *dc_out = dc_other;
    for (int64_t k = steps - 1; k >= 0 && rc == PYRT_OK; k--) {
        const int64_t t = step_at(k, steps, reverse);
        const float *c_prev = k == 0 ? c0 : cells + step_at(k - 1, steps, reverse) * step_h;
        step_gradient(dh_t, d_out ? d_out + t * step_h : NULL, dh, step_h);
        rc = pyrt_lstm_cell_backward(dh_t, dc_in, acts + t * step_g, cells + t * step_h, c_prev,
                                     dgates + t * step_g, dc_out, batch, hidden);
        /* dh_prev = dgates W_hh: [batch, 4H] @ [4H, H] */
        if (rc == PYRT_OK)
            rc = pyrt_sgemm(0, 0, batch, hidden, G, 1.0f, dgates + t * step_g, G, w_hh, hidden,
                            0.0f, dh, hidden);
        float *swap = dc_in;
        dc_in = dc_out;
        dc_out = swap;
    }
    if (dc_in != dc) /* the last cell gradient written is dc0: into the caller's dc */
        memcpy(dc, dc_in, sizeof(float) * (size_t)step_h);
    free(dh_t);
    free(dc_other);
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
    const int64_t G = 3 * hidden, step_h = batch * hidden, step_g = batch * G;
    float *hw = malloc(sizeof(float) * (size_t)step_g);
    if (!hw)
        return PYRT_ENOMEM;
    int rc = PYRT_OK;
    const float *h_prev = h0;
    for (int64_t k = 0; k < steps && rc == PYRT_OK; k++) {
        const int64_t t = step_at(k, steps, reverse);
        rc = pyrt_sgemm(0, 0, batch, G, hidden, 1.0f, h_prev, hidden, w_hh_t, G, 0.0f, hw, G);
        if (rc == PYRT_OK)
            rc = pyrt_gru_cell(xw + t * step_g, hw, bias_hh, h_prev, out + t * step_h,
                               acts + t * batch * 4 * hidden, batch, hidden);
        h_prev = out + t * step_h;
    }
    free(hw);
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
    const int64_t G = 3 * hidden, step_h = batch * hidden, step_g = batch * G;
    float *dh_t = malloc(sizeof(float) * (size_t)step_h);
    if (!dh_t)
        return PYRT_ENOMEM;
    int rc = PYRT_OK;
    for (int64_t k = steps - 1; k >= 0 && rc == PYRT_OK; k--) {
        const int64_t t = step_at(k, steps, reverse);
        const float *h_prev = k == 0 ? h0 : out + step_at(k - 1, steps, reverse) * step_h;
        step_gradient(dh_t, d_out ? d_out + t * step_h : NULL, dh, step_h);
        /* dh_prev = dh z (into dh), then += dgates_h W_hh: [batch, 3H] @ [3H, H] */
        rc = pyrt_gru_cell_backward(dh_t, acts + t * batch * 4 * hidden, h_prev,
                                    dgates_x + t * step_g, dgates_h + t * step_g, dh, batch,
                                    hidden);
        if (rc == PYRT_OK)
            rc = pyrt_sgemm(0, 0, batch, hidden, G, 1.0f, dgates_h + t * step_g, G, w_hh, hidden,
                            1.0f, dh, hidden);
    }
    free(dh_t);
    return rc;
}
