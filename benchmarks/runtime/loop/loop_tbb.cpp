/*
 * loop_tbb.cpp - the small loop through oneTBB parallel_for.
 *
 * Option after the common ones: "simple" (blocked_range grain 32 with simple_partitioner:
 * chunks of at most 32, split eagerly) or "auto" (grain 1 with auto_partitioner, TBB's
 * default, which splits on demand). The thread count comes from TBB_NUM_THREADS (see
 * tbb_threads.h).
 */
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>

#include "loop_common.h"
#include "tbb_threads.h"

typedef tbb::blocked_range<int64_t> range_t;

static void simple_call(struct loop_data *d)
{
    tbb::parallel_for(
        range_t(0, d->n, 32), [d](const range_t &r) { loop_range(d, r.begin(), r.end()); },
        tbb::simple_partitioner());
}

static void auto_call(struct loop_data *d)
{
    tbb::parallel_for(
        range_t(0, d->n), [d](const range_t &r) { loop_range(d, r.begin(), r.end()); },
        tbb::auto_partitioner());
}

int main(int argc, char **argv)
{
    struct loop_data d;
    loop_setup(argc, argv, &d);
    int simple = !(argc > 4 && strcmp(argv[4], "auto") == 0);

    tbb::global_control control(tbb::global_control::max_allowed_parallelism,
                                tbb_thread_limit());

    loop_measure(&d, simple ? simple_call : auto_call);

    const char *config = simple ? "\"partitioner\": \"simple\", \"grain\": 32"
                                : "\"partitioner\": \"auto\", \"grain\": 1";
    return loop_report("tbb", tbb_threads(), config, &d);
}
