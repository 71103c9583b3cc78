/*
 * cell_rows.h - the LSTM and GRU cells on the calling thread, for the step loops of
 * recurrence.c, which run blocks of rows in parallel themselves. Arguments as
 * pyrt_lstm_cell, pyrt_lstm_cell_backward, pyrt_gru_cell and pyrt_gru_cell_backward (pyrt.h),
 * already checked; the results are theirs, bit for bit (the same code per row).
 */
#ifndef PYRT_CELL_ROWS_H
#define PYRT_CELL_ROWS_H

#include <stdint.h>

void lstm_cell_rows(const float *gates, const float *gates_h, const float *c_prev, float *h,
                    float *c, float *act, int64_t rows, int64_t hidden);
void lstm_cell_backward_rows(const float *dh, const float *dc, const float *act, const float *c,
                             const float *c_prev, float *dgates, float *dc_prev, int64_t rows,
                             int64_t hidden);
void gru_cell_rows(const float *gates_x, const float *gates_h, const float *bias_h,
                   const float *h_prev, float *h, float *act, int64_t rows, int64_t hidden);
void gru_cell_backward_rows(const float *dh, const float *act, const float *h_prev,
                            float *dgates_x, float *dgates_h, float *dh_prev, int64_t rows,
                            int64_t hidden);

#endif
