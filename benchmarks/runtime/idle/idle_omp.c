/*
 * idle_omp.c - CPU used by an idle libgomp team after parallel loops, the peer of
 * idle_pyrt.c. libgomp's threads spin for a while (OMP_WAIT_POLICY, GOMP_SPINCOUNT) and then
 * sleep. Threads: OMP_NUM_THREADS.
 */
#include <omp.h>

#include "idle_common.h"

int main(int argc, char **argv)
{
    float *y = idle_alloc();
    for (int r = 0; r < IDLE_ROUNDS; r++) {
#pragma omp parallel for
        for (int64_t i = 0; i < IDLE_N; i++)
            idle_body(y, i, i + 1);
    }
    struct idle_result res = idle_measure(argc, argv);
    idle_report("omp", omp_get_max_threads(), "", res, y);
    return 0;
}
