/*
 * loop_serial.c - the small loop run on one thread with no runtime: the baseline every
 * parallel variant's time per call is compared with.
 */
#include "loop_common.h"

static void serial_call(struct loop_data *d)
{
    loop_range(d, 0, d->n);
}

int main(int argc, char **argv)
{
    struct loop_data d;
    loop_setup(argc, argv, &d);
    loop_measure(&d, serial_call);
    return loop_report("serial", 1, "", &d);
}
