/*
 * idle_tbb.cpp - CPU used by an idle oneTBB arena after parallel loops, the peer of
 * idle_pyrt.c. The thread count comes from TBB_NUM_THREADS (see tbb_threads.h).
 */
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>

#include "idle_common.h"
#include "tbb_threads.h"

int main(int argc, char **argv)
{
    tbb::global_control control(tbb::global_control::max_allowed_parallelism,
                                tbb_thread_limit());

    float *y = idle_alloc();
    for (int r = 0; r < IDLE_ROUNDS; r++)
        tbb::parallel_for(tbb::blocked_range<int64_t>(0, IDLE_N),
                          [y](const tbb::blocked_range<int64_t> &b) {
                              idle_body(y, b.begin(), b.end());
                          });
    struct idle_result res = idle_measure(argc, argv);
    idle_report("tbb", tbb_threads(), "", res, y);
    return 0;
}
