/*
 * fib_tbb.cpp - fib(n) with one oneTBB task_group task per call: run fib(n-1) in the group,
 * compute fib(n-2), wait. The thread count comes from TBB_NUM_THREADS (see tbb_threads.h).
 */
#include <oneapi/tbb/task_group.h>

#include "fib_common.h"
#include "tbb_threads.h"

static long fib(int n)
{
    if (n < 2)
        return n;
    long x, y;
    tbb::task_group g;
    g.run([&] { x = fib(n - 1); });
    y = fib(n - 2);
    g.wait();
    return x + y;
}

int main(int argc, char **argv)
{
    int n, reps;
    fib_parse(argc, argv, &n, &reps);

    tbb::global_control control(tbb::global_control::max_allowed_parallelism,
                                tbb_thread_limit());

    long result = fib(FIB_WARMUP_N);
    double samples[FIB_MAX_REPS];
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now();
        result = fib(n);
        samples[r] = bench_now() - t0;
    }
    return fib_report("tbb", tbb_threads(), n, result, samples, reps);
}
