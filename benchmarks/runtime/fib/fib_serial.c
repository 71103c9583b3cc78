/*
 * fib_serial.c - fib(n) by plain recursion: the sequential baseline of the fib benchmarks.
 * Its time per call is the cost of the work itself, with no task bookkeeping.
 *
 * The recursion goes through a volatile function pointer. Left alone, gcc -O2 turns one of the
 * two calls into a loop and inlines levels of the other, so the program would make a fraction
 * of the 2*fib(n+1) - 1 calls that every task variant makes; this way each fib call is a real
 * call and the per-task figures compare.
 */
#include "fib_common.h"

static long fib(int n);
static long (*volatile fib_entry)(int) = fib;

static long fib(int n)
{
    if (n < 2)
        return n;
    return fib_entry(n - 1) + fib_entry(n - 2);
}

int main(int argc, char **argv)
{
    int n, reps;
    fib_parse(argc, argv, &n, &reps);

    long result = fib_entry(FIB_WARMUP_N);
    double samples[FIB_MAX_REPS];
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now();
        result = fib_entry(n);
        samples[r] = bench_now() - t0;
    }
    return fib_report("serial", 1, n, result, samples, reps);
}
