/*
 * loop_serial.c - the small loop run on one thread with no runtime: the baseline every
 * parallel variant's time per call is compared with. The body is the same range function the
 * pyrt variant hands to pyrt_parallel_for, called once through a function pointer, so the
 * difference between the two is what the runtime adds.
 */
#include <stddef.h>
#include <stdint.h>

#include "loop_common.h"

static int range_fn(void *ctx, int64_t start, int64_t stop)
{
    loop_range((struct loop_data *)ctx, start, stop);
    return 0;
}

/* volatile: the compiler must make the indirect call, as the runtime does */
static int (*volatile body)(void *, int64_t, int64_t) = range_fn;

static void serial_call(struct loop_data *d)
{
    body(d, 0, d->n);
}

int main(int argc, char **argv)
{
    struct loop_data d;
    loop_setup(argc, argv, &d);
    loop_measure(&d, serial_call);
    return loop_report("serial", 1, "", &d);
}
