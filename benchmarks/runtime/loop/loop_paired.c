/*
 * loop_paired.c - the small loop through pyrt_parallel_for on one thread and on several, in
 * turns in one process.
 *
 * Usage: loop_paired [n=64] [rounds=2000] [threads=2] [grain=0]. Each round times a batch of
 * LOOP_BATCH calls of the whole loop (in chunks of `grain`, 0: pyrt's own) with the thread
 * count 1 and a batch with `threads` (every other
 * round in the other order). The report gives each count's median batch time per call and the
 * median over the rounds of the ratio of the two batches. A shared machine's speed drifts over
 * seconds, by half at times: the fresh processes of a sweep meet different drifts, and their
 * medians part by 10-15% for a loop whose cost does not depend on the thread count at all;
 * the two batches of a round meet the same drift.
 */
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "loop_common.h"
#include "pyrt.h"

static int range_fn(void *ctx, int64_t start, int64_t stop)
{
    loop_range((struct loop_data *)ctx, start, stop);
    return 0;
}

/* Sets the thread count, then waits (up to 50 ms) until every started worker sleeps: a count
 * that grows unparks a worker, which spins looking for work for a while (csrc/runtime/steal.c),
 * and a batch timed meanwhile would meet that, where a process at a fixed count does not. */
static void set_threads_settled(int threads)
{
    pyrt_set_num_threads(threads);
    const double deadline = bench_now() + 0.05;
    while (pyrt_workers_sleeping() < pyrt_workers_started() && bench_now() < deadline) {
        struct timespec nap = {0, 100000};
        nanosleep(&nap, NULL);
    }
}

/* Seconds per call of a batch of `calls` calls at the thread count now set. */
static double batch(struct loop_data *d, int64_t grain, int64_t calls)
{
    const double t0 = bench_now();
    for (int64_t c = 0; c < calls; c++) {
        pyrt_parallel_for(d->n, grain, range_fn, d);
        bench_clobber();
    }
    return (bench_now() - t0) / (double)calls;
}

int main(int argc, char **argv)
{
    struct loop_data d;
    loop_setup(argc > 1 ? 2 : 1, argv, &d); /* only n: the rest of the arguments are ours */
    const int64_t rounds = bench_arg_int(argc, argv, 2, 2000);
    const int threads = (int)bench_arg_int(argc, argv, 3, 2);
    const int64_t grain = bench_arg_int(argc, argv, 4, 0);
    if (rounds < 1 || threads < 1 || threads > PYRT_MAX_THREADS || grain < 0) {
        fprintf(stderr, "loop_paired: rounds must be at least 1, threads 1 to %d and grain at "
                "least 0\n", PYRT_MAX_THREADS);
        return 2;
    }
    if (pyrt_init() != PYRT_OK) {
        fprintf(stderr, "loop_paired: the pool could not start\n");
        return 1;
    }
    double *one = malloc((size_t)rounds * sizeof(double));
    double *many = malloc((size_t)rounds * sizeof(double));
    double *ratio = malloc((size_t)rounds * sizeof(double));
    if (!one || !many || !ratio) {
        fprintf(stderr, "loop_paired: out of memory\n");
        return 1;
    }
    /* a warm-up batch at each count: the cost table entry, the caches, the worker asleep */
    for (int k = 0; k < 2; k++) {
        set_threads_settled(k ? threads : 1);
        batch(&d, grain, LOOP_BATCH);
    }
    d.warmup = 2 * LOOP_BATCH;
    for (int64_t r = 0; r < rounds; r++) {
        for (int side = 0; side < 2; side++) {
            const int many_now = side ^ (int)(r & 1);
            set_threads_settled(many_now ? threads : 1);
            (many_now ? many : one)[r] = batch(&d, grain, LOOP_BATCH);
        }
        ratio[r] = many[r] / one[r];
    }
    d.done = 2 * rounds * LOOP_BATCH;
    const double med_one = bench_median(one, (int)rounds);
    const double med_many = bench_median(many, (int)rounds);
    const double med_ratio = bench_median(ratio, (int)rounds);
    const int ok = loop_check(&d);
    printf("{\"bench\": \"loop_paired\", \"n\": %lld, \"grain\": %lld, \"rounds\": %lld, "
           "\"calls_per_batch\": %d, \"threads\": [1, %d], \"ns_per_call\": [%.3f, %.3f], "
           "\"ratio\": %.4f, \"ok\": %s}\n",
           (long long)d.n, (long long)grain, (long long)rounds, LOOP_BATCH, threads, 1e9 * med_one,
           1e9 * med_many, med_ratio, ok ? "true" : "false");
    if (!ok)
        fprintf(stderr, "loop_paired: y differs from the serial result\n");
    free(one);
    free(many);
    free(ratio);
    return ok ? 0 : 1;
}
