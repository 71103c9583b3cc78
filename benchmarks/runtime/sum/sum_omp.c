/*
 * sum_omp.c - the sum as OpenMP code usually writes it: a float accumulator and
 * `#pragma omp parallel for simd reduction(+:s)`. Threads: OMP_NUM_THREADS.
 */
#include <omp.h>

#include "sum_common.h"

static double omp_pass(struct sum_data *d)
{
    const float *x = d->x;
    int64_t n = d->n;
    float s = 0.0f;
#pragma omp parallel for simd reduction(+ : s)
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    return s;
}

int main(int argc, char **argv)
{
    struct sum_data d;
    sum_setup(argc, argv, &d, 1);
    return sum_run("omp", omp_get_max_threads(), &d, omp_pass);
}
