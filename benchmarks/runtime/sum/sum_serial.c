/*
 * sum_serial.c - the sum on one thread: sum_leaf over the whole array, the sequential twin of
 * the parallel variants.
 */
#include "sum_common.h"

static double serial_pass(struct sum_data *d)
{
    return sum_leaf(d->x, d->n);
}

int main(int argc, char **argv)
{
    struct sum_data d;
    sum_setup(argc, argv, &d, 1);
    return sum_run("serial", 1, &d, serial_pass);
}
