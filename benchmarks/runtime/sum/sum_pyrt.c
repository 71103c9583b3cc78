/*
 * sum_pyrt.c - the sum through pyrt_parallel_reduce with pyrt's leaf size (grain 0): each
 * leaf runs sum_leaf and yields a double, partial doubles merge up pyrt's fixed tree.
 * The thread count comes from PYRT_NUM_THREADS.
 */
#include <stddef.h>
#include <stdint.h>

#include "pyrt.h"
#include "sum_common.h"

static int leaf(void *ctx, int64_t start, int64_t stop, void *acc)
{
    const struct sum_data *d = ctx;
    *(double *)acc = sum_leaf(d->x + start, stop - start);
    return 0;
}

static int combine(void *ctx, void *left, const void *right)
{
    (void)ctx;
    *(double *)left += *(const double *)right;
    return 0;
}

static double pyrt_pass(struct sum_data *d)
{
    double s = 0.0;
    int rc = pyrt_parallel_reduce(d->n, 0, sizeof s, leaf, combine, d, &s);
    if (rc != PYRT_OK) {
        fprintf(stderr, "sum_pyrt: pyrt_parallel_reduce returned %d\n", rc);
        exit(1);
    }
    return s;
}

int main(int argc, char **argv)
{
    struct sum_data d;
    sum_setup(argc, argv, &d, 1);
    return sum_run("pyrt", pyrt_get_num_threads(), &d, pyrt_pass);
}
