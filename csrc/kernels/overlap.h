/*
 * overlap.h - whether an output array meets an input in a way a kernel cannot write through.
 *
 * An element-for-element kernel reads each element before it writes it, so its output may be
 * one of its inputs exactly; a shifted or partly shared view would make the result depend on
 * the order of the writes. Kernels return PYRT_EOVERLAP for such arguments, which lets the
 * Python wrappers skip their own (slower) checks on the common call and name the offending
 * argument only when the kernel refused.
 */
#ifndef PYRT_KERNELS_OVERLAP_H
#define PYRT_KERNELS_OVERLAP_H

#include <stdint.h>

/* Do the n floats at a and the nb floats at b share any address? */
static inline int ranges_meet(const float *a, int64_t n, const float *b, int64_t nb)
{
    const uintptr_t a0 = (uintptr_t)a, a1 = (uintptr_t)(a + n);
    const uintptr_t b0 = (uintptr_t)b, b1 = (uintptr_t)(b + nb);
    return b0 < a1 && a0 < b1;
}

/* Does out (n floats) meet x (nx floats) other than as the same array? */
static inline int overlaps_partly(const float *out, int64_t n, const float *x, int64_t nx)
{
    return ranges_meet(out, n, x, nx) && !(x == out && nx == n);
}

#endif
