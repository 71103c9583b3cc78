/*
 * loop_pyrt.c - the small loop through pyrt_parallel_for.
 *
 * Options after the common ones: grain (0: pyrt's choice; 32: the grain the TBB variant uses)
 * and context: "main" calls the loop from the plain main thread, as a Python caller would;
 * "run" calls it from inside a pyrt_run root task, as a kernel nested in task-parallel code
 * would. The thread count comes from PYRT_NUM_THREADS.
 */
#include <stddef.h>
#include <stdint.h>

#include "loop_common.h"
#include "pyrt.h"

static int64_t grain;

static int range_fn(void *ctx, int64_t start, int64_t stop)
{
    loop_range((struct loop_data *)ctx, start, stop);
    return 0;
}

static void pyrt_call(struct loop_data *d)
{
    pyrt_parallel_for(d->n, grain, range_fn, d);
}

static void measure_task(void *arg)
{
    loop_measure((struct loop_data *)arg, pyrt_call);
}

int main(int argc, char **argv)
{
    struct loop_data d;
    loop_setup(argc, argv, &d);
    grain = bench_arg_int(argc, argv, 4, 0);
    const char *context = argc > 5 ? argv[5] : "main";
    int in_run = strcmp(context, "run") == 0;

    if (pyrt_init() != PYRT_OK) {
        fprintf(stderr, "loop_pyrt: the pool could not start\n");
        return 1;
    }
    if (in_run)
        pyrt_run(measure_task, &d);
    else
        measure_task(&d);

    char config[64];
    snprintf(config, sizeof config, "\"grain\": %lld, \"context\": \"%s\"", (long long)grain,
             in_run ? "run" : "main");
    return loop_report("pyrt", pyrt_get_num_threads(), config, &d);
}
