/*
 * kernels_check.h - what the kernel programs in this folder (kernels_*.c) share: operands
 * allocated to their exact size, comparisons with references summed in double, and runs at
 * several thread counts.
 *
 * Every operand is a malloc block of exactly the floats the kernel may touch, so that
 * AddressSanitizer reports any read or write one element past the end (a pool block from
 * pyrt_buffer_alloc would be rounded up and hide it). A kernel runs at each of
 * KERNELS_THREADS' counts into its own output; the first run is checked against the reference
 * and the others must match it bit for bit, as pyrt.h promises for every kernel.
 */
#ifndef PYRT_KERNELS_CHECK_H
#define PYRT_KERNELS_CHECK_H

#include "stress.h"

#include <float.h>
#include <math.h>
#include <string.h>

static const int KERNELS_THREADS[] = {1, 2, 4};
#define KERNELS_NTHREADS 3

/* n floats (n may be 0), exactly: the block ends where the operand does. */
static inline float *kc_floats(int64_t n)
{
    float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    CHECK(p != NULL, "out of memory for %lld floats", (long long)n);
    return p;
}

static inline double *kc_doubles(int64_t n)
{
    double *p = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    CHECK(p != NULL, "out of memory for %lld doubles", (long long)n);
    return p;
}

/* Uniform in [lo, hi). */
static inline float kc_uniform(stress_rng *r, float lo, float hi)
{
    return lo + (hi - lo) * (float)((double)(stress_next(r) >> 11) * 0x1.0p-53);
}

static inline void kc_fill(stress_rng *r, float *x, int64_t n, float lo, float hi)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = kc_uniform(r, lo, hi);
}

static inline void kc_fill_value(float *x, int64_t n, float value)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = value;
}

/* got[i] == want[i] up to float32 rounding of a sum of `terms` products whose absolute values
 * add up to bound[i] (bound NULL: |want[i]|): each step may be off by an ulp of that sum, as
 * tests/test_ops_linalg.py's check_close allows, plus `abs_tol`. An infinite want[i] must be
 * met exactly. */
static inline void kc_close(const char *what, const float *got, const double *want,
                            const double *bound, int64_t n, int64_t terms, double abs_tol)
{
    const double eps = FLT_EPSILON / 2;
    for (int64_t i = 0; i < n; i++) {
        const double b = bound ? bound[i] : fabs(want[i]);
        const double tol = 2.0 * (double)(terms + 2) * eps * b + abs_tol + 1e-30;
        const double err = isinf(want[i]) && (double)got[i] == want[i]
                           ? 0.0 : fabs((double)got[i] - want[i]);
        CHECK(err <= tol, "%s: element %lld is %.9g, expected %.9g (error %.3g > %.3g)", what,
              (long long)i, (double)got[i], want[i], err, tol);
    }
}

/* The same bits: results at another thread count, or of another way to the same result. */
static inline void kc_same(const char *what, int threads, const void *got, const void *want,
                           size_t nbytes)
{
    if (memcmp(got, want, nbytes) == 0)
        return;
    const unsigned char *g = got, *w = want;
    size_t i = 0;
    while (g[i] == w[i])
        i++;
    stress_fail(__FILE__, __LINE__, "%s at %d threads: byte %zu of %zu differs", what, threads,
                i, nbytes);
}

/* An output of a kernel run: the block it writes. */
typedef struct {
    void *ptr;
    size_t nbytes;
} kc_out;

#define KC_MAX_OUTS 8

/* Run `run(ctx)` at every count of KERNELS_THREADS, each time with the outputs filled with
 * all-ones bytes first (NaN as floats, -1 as integers: a value the kernel forgot to write
 * shows). After the first run check(ctx) compares them with the reference; later runs must
 * reproduce the first bit for bit. */
static inline void kc_across_threads(const char *what, void (*run)(void *ctx),
                                     void (*check)(void *ctx), void *ctx, const kc_out *outs,
                                     int nouts)
{
    CHECK(nouts <= KC_MAX_OUTS, "%s: too many outputs", what);
    void *first[KC_MAX_OUTS];
    for (int t = 0; t < KERNELS_NTHREADS; t++) {
        stress_set_threads(KERNELS_THREADS[t]);
        for (int o = 0; o < nouts; o++)
            memset(outs[o].ptr, 0xff, outs[o].nbytes);
        run(ctx);
        if (t == 0) {
            check(ctx);
            for (int o = 0; o < nouts; o++) {
                first[o] = malloc(outs[o].nbytes ? outs[o].nbytes : 1);
                CHECK(first[o] != NULL, "out of memory");
                memcpy(first[o], outs[o].ptr, outs[o].nbytes);
            }
        } else {
            for (int o = 0; o < nouts; o++) {
                char where[160];
                snprintf(where, sizeof where, "%s, output %d against 1 thread", what, o);
                kc_same(where, KERNELS_THREADS[t], outs[o].ptr, first[o], outs[o].nbytes);
            }
        }
    }
    for (int o = 0; o < nouts; o++)
        free(first[o]);
}

#endif
