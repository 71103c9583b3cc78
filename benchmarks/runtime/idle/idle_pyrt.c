/*
 * idle_pyrt.c - CPU used by an idle pyrt pool: after a parallel loop and a spawn tree, the
 * workers should spin briefly, yield, then sleep on their futex. Also reports how many
 * workers have started and how many sleep, before and after the window.
 * The thread count comes from PYRT_NUM_THREADS.
 */
#include <stddef.h>
#include <stdint.h>

#include "idle_common.h"
#include "pyrt.h"

static int range_fn(void *ctx, int64_t start, int64_t stop)
{
    idle_body((float *)ctx, start, stop);
    return 0;
}

struct tree_args {
    int depth;
};

/* A binary spawn tree of 2^depth leaves, so stealing and leapfrogging run too. */
static void tree_task(void *arg)
{
    const struct tree_args *a = arg;
    if (a->depth == 0)
        return;
    struct tree_args left = {a->depth - 1}, right = {a->depth - 1};
    pyrt_task t;
    pyrt_spawn(&t, tree_task, &left);
    tree_task(&right);
    pyrt_sync(&t);
}

int main(int argc, char **argv)
{
    if (pyrt_init() != PYRT_OK) {
        fprintf(stderr, "idle_pyrt: the pool could not start\n");
        return 1;
    }
    float *y = idle_alloc();
    for (int r = 0; r < IDLE_ROUNDS; r++)
        pyrt_parallel_for(IDLE_N, 0, range_fn, y);
    struct tree_args root = {16};
    pyrt_run(tree_task, &root);

    int sleeping_before = pyrt_workers_sleeping();
    struct idle_result r = idle_measure(argc, argv);
    char extra[128];
    snprintf(extra, sizeof extra,
             "\"workers_started\": %d, \"workers_sleeping_before\": %d, "
             "\"workers_sleeping_after\": %d",
             pyrt_workers_started(), sleeping_before, pyrt_workers_sleeping());
    idle_report("pyrt", pyrt_get_num_threads(), extra, r, y);
    return 0;
}
