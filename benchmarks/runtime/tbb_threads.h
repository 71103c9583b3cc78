/*
 * tbb_threads.h - the thread count of the TBB programs. TBB reads no environment variable for
 * it, so they take TBB_NUM_THREADS (set by run_runtime.py beside PYRT_NUM_THREADS and
 * OMP_NUM_THREADS) and pass it to a tbb::global_control that lives for the whole run.
 */
#ifndef PYRT_BENCH_TBB_THREADS_H
#define PYRT_BENCH_TBB_THREADS_H

#include <oneapi/tbb/global_control.h>

#include "bench.h"

/* The limit to give global_control: TBB_NUM_THREADS, or TBB's default when it is unset. */
static inline size_t tbb_thread_limit()
{
    int want = bench_env_threads("TBB_NUM_THREADS");
    return want > 0 ? (size_t)want
                    : tbb::global_control::active_value(
                          tbb::global_control::max_allowed_parallelism);
}

/* The limit in force, for the report. */
static inline int tbb_threads()
{
    return (int)tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism);
}

#endif
