/*
 * fib_pyrt.c - fib(n) with one pyrt task per call.
 *
 * Each call spawns fib(n-1), computes fib(n-2) itself and then syncs: if no worker stole the
 * child the caller runs it now; if one did, the caller works on the thief's tasks until it is
 * done. The thread count comes from PYRT_NUM_THREADS.
 */
#include <stddef.h>
#include <stdint.h>

#include "fib_common.h"
#include "pyrt.h"

struct fib_args {
    int n;
    long result;
};

static long fib(int n);

static void fib_task(void *arg)
{
    struct fib_args *a = arg;
    a->result = fib(a->n);
}

static long fib(int n)
{
    if (n < 2)
        return n;
    struct fib_args child = {n - 1, 0};
    pyrt_task t;
    pyrt_spawn(&t, fib_task, &child); /* fib(n-1) may be stolen while we compute fib(n-2) */
    long y = fib(n - 2);
    pyrt_sync(&t);
    return child.result + y;
}

static long fib_root(int n)
{
    struct fib_args root = {n, 0};
    if (pyrt_run(fib_task, &root) != PYRT_OK) {
        fprintf(stderr, "fib_pyrt: the pool could not start\n");
        exit(1);
    }
    return root.result;
}

int main(int argc, char **argv)
{
    int n, reps;
    fib_parse(argc, argv, &n, &reps);

    long result = fib_root(FIB_WARMUP_N);
    double samples[FIB_MAX_REPS];
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now();
        result = fib_root(n);
        samples[r] = bench_now() - t0;
    }
    return fib_report("pyrt", pyrt_get_num_threads(), n, result, samples, reps);
}
