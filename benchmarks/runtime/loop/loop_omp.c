/*
 * loop_omp.c - the small loop as `#pragma omp parallel for` with the default schedule, the
 * way OpenMP code parallelises a kernel. Threads: OMP_NUM_THREADS; OMP_PROC_BIND and
 * OMP_WAIT_POLICY keep whatever the environment says (the libgomp defaults when unset).
 */
#include <omp.h>

#include "loop_common.h"

static void omp_call(struct loop_data *d)
{
    int64_t n = d->n;
#pragma omp parallel for
    for (int64_t i = 0; i < n; i++)
        loop_body(d, i);
}

int main(int argc, char **argv)
{
    struct loop_data d;
    loop_setup(argc, argv, &d);
    loop_measure(&d, omp_call);
    return loop_report("omp", omp_get_max_threads(), "", &d);
}
