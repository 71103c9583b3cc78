/*
 * stress_reduce.c - parallel_reduce: exact results, fixed leaves and a fixed merge tree.
 *
 * The contract is that leaves are the ranges [k*leaf, min((k+1)*leaf, n)) and that they merge
 * in one fixed binary tree, with `left` always the range just before `right`. The accumulator
 * here carries the range it covers, so every leaf checks its bounds and every combine checks
 * adjacency; a float32 sum then must come out bitwise identical for 1..8 threads, and an
 * integer sum must be exact. Accumulators of PYRT_MAX_ACC bytes and of one byte check that the
 * runtime copies exactly acc_size bytes.
 */
#include <stddef.h>
#include <stdint.h>

#include "stress.h"

#include <math.h>
#include <string.h>

typedef struct {
    const float *f;
    const int64_t *v;
    int64_t n, leaf; /* leaf: the leaf size the runtime must use */
} data;

typedef struct {
    int64_t lo, hi; /* the indices [lo, hi) this partial covers */
    int64_t isum;
    float fsum;
} partial;

static int sum_leaf(void *ctx, int64_t start, int64_t stop, void *acc)
{
    const data *d = ctx;
    CHECK(start >= 0 && start < stop && stop <= d->n && start % d->leaf == 0
              && stop == (d->n - start > d->leaf ? start + d->leaf : d->n),
          "reduce(n=%lld) leaf [%lld, %lld) is not a fixed range of %lld", (long long)d->n,
          (long long)start, (long long)stop, (long long)d->leaf);
    partial p = {start, stop, 0, 0.0f};
    for (int64_t i = start; i < stop; i++) {
        p.isum += d->v[i];
        p.fsum += d->f[i];
    }
    memcpy(acc, &p, sizeof p);
    return 0;
}

static int sum_combine(void *ctx, void *left, const void *right)
{
    const data *d = ctx;
    partial a, b;
    memcpy(&a, left, sizeof a);
    memcpy(&b, right, sizeof b);
    CHECK(a.hi == b.lo && a.lo < a.hi && b.lo < b.hi,
          "reduce(n=%lld) combined [%lld, %lld) with [%lld, %lld): not adjacent", (long long)d->n,
          (long long)a.lo, (long long)a.hi, (long long)b.lo, (long long)b.hi);
    a.hi = b.hi;
    a.isum += b.isum;
    a.fsum += b.fsum;
    memcpy(left, &a, sizeof a);
    return 0;
}

/* ---- the largest accumulator: a 32-bucket histogram of v[i] & 31 ---------------------- */

typedef struct {
    int64_t bucket[32];
} histogram;

_Static_assert(sizeof(histogram) == PYRT_MAX_ACC, "histogram must be the largest accumulator");

static int hist_leaf(void *ctx, int64_t start, int64_t stop, void *acc)
{
    const data *d = ctx;
    histogram h;
    memset(&h, 0, sizeof h);
    for (int64_t i = start; i < stop; i++)
        h.bucket[d->v[i] & 31]++;
    memcpy(acc, &h, sizeof h);
    return 0;
}

static int hist_combine(void *ctx, void *left, const void *right)
{
    (void)ctx;
    histogram a, b;
    memcpy(&a, left, sizeof a);
    memcpy(&b, right, sizeof b);
    for (int k = 0; k < 32; k++)
        a.bucket[k] += b.bucket[k];
    memcpy(left, &a, sizeof a);
    return 0;
}

/* ---- the smallest accumulator: one byte, the xor of the low bytes --------------------- */

static int xor_leaf(void *ctx, int64_t start, int64_t stop, void *acc)
{
    const data *d = ctx;
    uint8_t x = 0;
    for (int64_t i = start; i < stop; i++)
        x ^= (uint8_t)d->v[i];
    *(uint8_t *)acc = x;
    return 0;
}

static int xor_combine(void *ctx, void *left, const void *right)
{
    (void)ctx;
    *(uint8_t *)left ^= *(const uint8_t *)right;
    return 0;
}

/* ---- one case: (n, grain) at every thread count --------------------------------------- */

static void check_case(const float *f, const int64_t *v, int64_t n, int64_t grain)
{
    data d = {f, v, n, grain > 0 ? grain : pyrt_reduce_leaf_size(n)};
    CHECK(d.leaf > 0, "pyrt_reduce_leaf_size(%lld) = %lld", (long long)n, (long long)d.leaf);

    int64_t isum = 0;
    double fsum_ref = 0.0, fabs_sum = 0.0;
    histogram hist_ref;
    memset(&hist_ref, 0, sizeof hist_ref);
    uint8_t xor_ref = 0;
    for (int64_t i = 0; i < n; i++) {
        isum += v[i];
        fsum_ref += f[i];
        fabs_sum += fabs(f[i]);
        hist_ref.bucket[v[i] & 31]++;
        xor_ref ^= (uint8_t)v[i];
    }

    partial first;
    for (int threads = 1; threads <= STRESS_MAX_THREADS; threads++) {
        stress_set_threads(threads);
        partial p;
        memset(&p, 0xAB, sizeof p);
        CHECK_RC(pyrt_parallel_reduce(n, grain, sizeof p, sum_leaf, sum_combine, &d, &p), 0);
        CHECK(p.lo == 0 && p.hi == n, "reduce(n=%lld, grain=%lld) covered [%lld, %lld)",
              (long long)n, (long long)grain, (long long)p.lo, (long long)p.hi);
        CHECK(p.isum == isum, "reduce(n=%lld, grain=%lld) on %d threads: integer sum %lld != %lld",
              (long long)n, (long long)grain, threads, (long long)p.isum, (long long)isum);
        /* a float32 sum of any order lies within n * eps * sum|x| of the exact value */
        CHECK(fabs((double)p.fsum - fsum_ref) <= (double)n * 1.2e-7 * fabs_sum + 1e-30,
              "reduce(n=%lld, grain=%lld): float sum %.9g far from %.9g", (long long)n,
              (long long)grain, (double)p.fsum, fsum_ref);
        if (threads == 1)
            first = p;
        CHECK(memcmp(&p.fsum, &first.fsum, sizeof p.fsum) == 0,
              "reduce(n=%lld, grain=%lld): float sum %a on %d threads, %a on 1: not bitwise equal",
              (long long)n, (long long)grain, (double)p.fsum, threads, (double)first.fsum);

        /* the coarse variant splits differently, over the same leaves and tree */
        partial c;
        CHECK_RC(pyrt_parallel_reduce_coarse(n, grain, sizeof c, sum_leaf, sum_combine, &d, &c),
                 0);
        CHECK(c.lo == 0 && c.hi == n && c.isum == isum
                  && memcmp(&c.fsum, &first.fsum, sizeof c.fsum) == 0,
              "coarse reduce(n=%lld, grain=%lld) on %d threads differs from reduce on 1",
              (long long)n, (long long)grain, threads);

        histogram h;
        CHECK_RC(pyrt_parallel_reduce(n, grain, sizeof h, hist_leaf, hist_combine, &d, &h), 0);
        CHECK(memcmp(&h, &hist_ref, sizeof h) == 0, "reduce(n=%lld, grain=%lld): histogram wrong",
              (long long)n, (long long)grain);

        uint8_t x = 0x5A;
        CHECK_RC(pyrt_parallel_reduce(n, grain, 1, xor_leaf, xor_combine, &d, &x), 0);
        CHECK(x == xor_ref, "reduce(n=%lld, grain=%lld): one-byte xor %u != %u", (long long)n,
              (long long)grain, x, xor_ref);
    }
}

/* Argument errors, and n == 0, which leaves the result alone. */
static void check_edges(const float *f, const int64_t *v)
{
    data d = {f, v, 10, 1};
    partial p;
    CHECK_RC(pyrt_parallel_reduce(-1, 0, sizeof p, sum_leaf, sum_combine, &d, &p), PYRT_EINVAL);
    CHECK_RC(pyrt_parallel_reduce(10, -1, sizeof p, sum_leaf, sum_combine, &d, &p), PYRT_EINVAL);
    CHECK_RC(pyrt_parallel_reduce(10, 0, 0, sum_leaf, sum_combine, &d, &p), PYRT_EINVAL);
    CHECK_RC(pyrt_parallel_reduce(10, 0, PYRT_MAX_ACC + 1, sum_leaf, sum_combine, &d, &p),
             PYRT_EINVAL);
    uint8_t x = 0x5A;
    CHECK_RC(pyrt_parallel_reduce(0, 0, 1, xor_leaf, xor_combine, &d, &x), PYRT_OK);
    CHECK(x == 0x5A, "reduce with n == 0 wrote its result");
    /* a leaf so large that n + leaf - 1 overflows: one leaf, [0, n) */
    d.leaf = INT64_MAX - 1;
    for (int coarse = 0; coarse < 2; coarse++) {
        memset(&p, 0, sizeof p);
        CHECK_RC((coarse ? pyrt_parallel_reduce_coarse : pyrt_parallel_reduce)(
                     10, INT64_MAX - 1, sizeof p, sum_leaf, sum_combine, &d, &p),
                 0);
        CHECK(p.lo == 0 && p.hi == 10, "reduce(10, grain=INT64_MAX-1) covered [%lld, %lld)",
              (long long)p.lo, (long long)p.hi);
    }
}

int main(void)
{
    double t0 = stress_now();
    stress_begin("stress_reduce");
    stress_rng rng = stress_rng_make(stress_seed(), 4);
    const int64_t max_n = stress_scaled(1 << 20, 1 << 14);

    /* Values of mixed signs spanning 2^-12..2^12, so that float32 rounding depends on the
     * order of additions and a change of tree would show. */
    float *f = malloc((size_t)max_n * sizeof *f);
    int64_t *v = malloc((size_t)max_n * sizeof *v);
    CHECK(f && v, "out of memory");
    for (int64_t i = 0; i < max_n; i++) {
        double mant = (double)(stress_next(&rng) >> 11) / 9007199254740992.0 - 0.5;
        f[i] = (float)ldexp(mant, (int)stress_below(&rng, 25) - 12);
        v[i] = (int64_t)(stress_next(&rng) >> 24) - ((int64_t)1 << 39);
    }

    check_edges(f, v);
    const int64_t fixed[][2] = {
        {1, 0}, {2, 1}, {7, 3}, {1000, 0}, {1000, 1}, {4097, 64}, {65537, 0}, {100000, 7},
        {max_n, 0}, {max_n, 4096}, {max_n - 1, 1000},
    };
    for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++)
        check_case(f, v, fixed[k][0], fixed[k][1]);

    int64_t randoms = stress_scaled(200, 10);
    for (int64_t k = 0; k < randoms; k++) {
        int64_t n = 1 + stress_log_below(&rng, max_n);
        int64_t grain = stress_below(&rng, 2) ? 0 : 1 + stress_log_below(&rng, n);
        if (grain > 0 && n / grain > 100000)
            grain = n / 100000 + 1; /* at most ~1e5 leaves, to bound the run time */
        check_case(f, v, n, grain);
    }
    free(v);
    free(f);
    return stress_end("stress_reduce", t0);
}
