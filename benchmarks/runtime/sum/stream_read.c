/*
 * stream_read.c - STREAM-style read bandwidth over the same array: the ceiling a sum can
 * reach on this machine. Done the way STREAM does its kernels: the array is first touched by
 * the same static partition of threads that later reads it (so pages sit on the reader's NUMA
 * node), each thread streams over one contiguous block with sum_leaf, and the per-thread
 * doubles are added by the OpenMP reduction. Threads: OMP_NUM_THREADS. Besides the median
 * that every variant reports, `best_gb_per_s` is STREAM's own figure (best of the passes).
 */
#include <omp.h>

#include "sum_common.h"

/* Thread t of T owns [n*t/T, n*(t+1)/T), in both the fill and the passes. */
static void block(int64_t n, int64_t *start, int64_t *stop)
{
    int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
    *start = n * t / T;
    *stop = n * (t + 1) / T;
}

static void parallel_fill(struct sum_data *d)
{
#pragma omp parallel
    {
        int64_t start, stop;
        block(d->n, &start, &stop);
        sum_fill(d->x, start, stop);
    }
}

static double stream_pass(struct sum_data *d)
{
    double s = 0.0;
#pragma omp parallel reduction(+ : s)
    {
        int64_t start, stop;
        block(d->n, &start, &stop);
        s += sum_leaf(d->x + start, stop - start);
    }
    return s;
}

int main(int argc, char **argv)
{
    struct sum_data d;
    sum_setup(argc, argv, &d, 0);
    parallel_fill(&d);
    return sum_run("stream", omp_get_max_threads(), &d, stream_pass);
}
