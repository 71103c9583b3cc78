/*
 * gemm.c - single-precision GEMM: C = alpha * op(A) op(B) + beta * C, row-major.
 *
 * pyrt_sgemm picks one of six paths, by the arguments alone:
 *   - one row (two with the AVX2 kernel) times B not transposed: a kernel that keeps eight
 *     accumulators on one row of C and reads B in place, or across wider spans of columns
 *     the sweep below (row.c);
 *   - small products (up to 2^17 multiply-adds, k <= 256): the micro-kernel's tiles on A and
 *     B read in place, on the calling thread, no workspace (small.c);
 *   - A B^T with a small side (m or n <= 64): dot products of rows read in place (dot.c), also
 *     for small products whose few columns would leave the small path's tiles mostly empty
 *     (dot_before_small);
 *   - up to five rows (AVX2) times B not transposed, more than 64 columns: the sweep, which
 *     reads B in place a few rows at a time across spans of columns, all the rows of C at
 *     once, the partial sums parked in L1 (row.c);
 *   - up to mr rows (one row panel) times B not transposed: the small path's tiles at any
 *     size, B read in place, spans of columns spread over the threads (small.c);
 *   - everything else: the Goto/BLIS scheme below.
 *
 * Operands are packed into micro-panels in the order the micro-kernel reads them (pack.c), or
 * read in place where that is as fast (choose_direct), and C is computed in tiles of mr x nr
 * registers (kernel_*.c: 6 x 16 with AVX2, 8 x 48 with AVX-512). Caches set the block sizes;
 * the values are for AMD Zen 3 (32 KB L1d and 512 KB L2 per core, 32 MB L3 shared) and suit
 * Intel cores of the same generation; on a Sapphire Rapids Xeon (48 KB L1d, 2 MB L2) the
 * AVX-512 kernel ran no faster with kc = 128 or 192, or tiles of 96 to 480 rows:
 *
 *   kc_max         k is cut into balanced blocks of at most the kernel's kc_max: 384 for AVX2
 *                  (k = 784 gives 3 x 262), 256 for AVX-512 and portable C. A B micro-panel,
 *                  kc x nr = 384 x 16 floats = 24 KB with AVX2, stays in L1 while the kernel
 *                  sweeps down the A micro-panels (6 x 384 floats = 9 KB each), which stream
 *                  from L2. Each block reads and writes the C tile once and starts the kernel
 *                  again, so longer blocks spend less beside the FMAs: on the Zen 3, 1024^3
 *                  to 2048^3 ran 2-4% faster than with blocks of 256 (timed in turns with
 *                  OpenBLAS: 0.98-1.00 of its time for 1024^3, from 1.02; 1.01 for 2048^3,
 *                  from 1.04), and blocks of 512, which fill L1, no faster than 384. The
 *                  AVX-512 kernel's panel, 256 x 48 floats, already fills the 48 KB L1 of a
 *                  Sapphire Rapids core.
 *   MT_MAX = 144   rows of a tile: its block of A, 144 x 384 floats = 216 KB, stays in L2 (with
 *                  room for the B micro-panels and the C tile passing through) while the kernel
 *                  sweeps across the tile's B micro-panels.
 *   B panel        the packed op(B) of a pass (k x up to NB_MAX columns, or fewer blocks of k
 *                  when that would pass WS_FLOATS, 16 MB, half of L3) is read from L3 by every
 *                  tile; 1024 x 1024 x 1024 is one pass. With a short k a pass has more
 *                  columns (as many floats as NB_MAX columns of kc_max): 4096 columns of
 *                  k = 8 would be too little work per pass to share out.
 *
 * Loop nest (outer to inner):
 *   pass over columns j0 (NB_MAX) / pass over k (as many blocks as the workspace holds) /
 *   pass over rows i0 (MB_MAX): pack A and B for the pass (one parallel phase over groups of
 *   micro-panels), then one parallel phase over a 2-D grid of tiles of C:
 *       tile (rows x columns) / block q of k / B micro-panel jr / A micro-panel ir: kernel,
 *   prefetching the next B micro-panel a few rows per micro-tile (AVX2).
 * When all of op(A)'s rows fit one tile (m <= MT_MAX) and B is not read in place, each tile
 * packs its B micro-panels itself, IN_TILE_PANELS at a time into a buffer on its stack, just
 * before the kernel runs down the tile's A micro-panels with each (b_in_tile): every
 * micro-panel is used by one tile only, so a separate packing phase would only add a pass
 * over memory (the panel is then read from L2 or L3 instead of L1) and a phase boundary.
 * Packed one at a time, a micro-panel of B not transposed took one line of each of its rows,
 * rows often a page or more apart; four at a time take four adjacent lines of each, which the
 * hardware prefetchers follow: with the rows fetched 6 panels ahead instead of 2, 16 x 12544
 * x 72 went from 1.16-1.21 to 1.10 of OpenBLAS's time and 16 x 12544 x 200 from 1.08 to
 * 1.00 (one thread, on the Zen 3), products whose B is in cache unchanged. (With several threads
 * plan_grid may still cut the rows in two when C has few columns; each tile row then packs
 * the panels it uses.) Products with few rows and many columns, such as 16 x 12544 x 72
 * (conv2 W col) and 72 x 12544 x 16 (conv2 dcol = W^T dY), so run as a single pass whose one
 * phase has TASKS_PER_THREAD tiles per thread, where passes of 4096 columns with a packing
 * phase each would give every phase only one to eight tasks.
 *
 * When op(B) is larger than STREAM_B_FLOATS (1 MB), beyond what L2 keeps between the tiles
 * that read it, whole tiles run the kernel's streaming version where it has one (tile_stream:
 * the same sums, fetching B's rows a few steps of k ahead).
 *
 * Parallelism is over both m and n: the grid has tiles of whole micro-panels in both
 * directions, sized from the thread count so that there are about TASKS_PER_THREAD tiles per
 * thread (none smaller than TILE_MIN_FLOPS), which keeps skinny products such as 64 x 784
 * busy on every thread. A phase's tasks go to the pool by eager binary splitting (tasks.c).
 * When C has few elements but k is long (16 x 72 x 12544 not in A B^T form), or when each tile
 * packs its own B (plan_groups), the blocks of k of a pass are also split into up to
 * KGROUPS_MAX groups, each summed into its own buffer; the buffers are then added to C in
 * group order.
 *
 * Determinism. Every element of C is C = beta * C + acc_0, then C = C + acc_1, ... over the
 * blocks of k in order, where acc_q sums its block in increasing k starting from zero (with k
 * groups, the sums of groups after the first are added in order afterwards). The path, the
 * blocks, passes, groups and the operands read in place depend on the arguments only; the
 * thread count only changes which thread computes which tile, so results are bitwise
 * identical at any thread count. Edge tiles are computed by the same kernel, through a buffer
 * (or, for the bottom rows, by its version for fewer rows, which runs the same instructions
 * per element), so they round the same way too.
 *
 * C may not overlap A or B: pyrt_sgemm returns PYRT_EINVAL when their address ranges meet.
 *
 * Kernel choice: the best of AVX-512, AVX2 + FMA and portable C that the CPU runs, chosen at
 * the first call. The environment variable PYRT_SGEMM_KERNEL=generic|avx2|avx512 (read then)
 * forces one, if the CPU can run it (dispatch.c); pyrt_sgemm_kernel() tells which is in use.
 */
#include <string.h>

#include "gemm_internal.h"

#define MT_MAX 144
#define MB_MAX 4096                  /* rows of C per pass */
#define NB_MAX 4096                  /* columns of C per pass */
#define WS_FLOATS (4 << 20)          /* packed A + B of a pass: 16 MB, half of L3 */
#define TILE_MIN_FLOPS (1 << 19)     /* a tile is at least ~3 us of work: worth a steal */
#define TASKS_PER_THREAD 4           /* tiles per thread, for balance */
#define IN_TILE_TASKS_PER_THREAD 1   /* ... when each row of tiles packs its own B (b_in_tile) */
#define PACK_GRAIN_FLOATS (1 << 14)  /* at least this much packing per task */
#define KSPLIT_MAX_MN (128 * 128)    /* split k only when C has at most this many elements */
#define KGROUP_MIN 1024              /* ... and into groups of at least this much of k */
#define KGROUPS_MAX 16
#define IN_TILE_GROUP_BLOCKS 2       /* b_in_tile: blocks of k per group, at most */
#define ROW_GRAIN_FLOATS (1 << 14)   /* elements per chunk when scaling or combining C */
#define IN_TILE_PANELS 4             /* b_in_tile: micro-panels of B packed at a time */
#define IN_TILE_AHEAD 6              /* b_in_tile: prefetch the rows of the panel this far on */
#define STREAM_B_FLOATS (1 << 18)    /* op(B) larger than this (1 MB): the streaming tile */

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* ---- the plan of one call ------------------------------------------------------------- */

typedef struct gemm {
    const gemm_kernel *kr;
    int trans_a, trans_b;
    int64_t m, n, k;
    float alpha, beta;
    const float *a, *b;
    int64_t lda, ldb, ldc;
    float *c;

    int64_t kc, nkb; /* k in nkb blocks of kc (the last may be shorter) */
    int a_direct;    /* whole micro-panels of A are read in place, only the edge is packed */
    int b_direct;    /* the same for B */
    int b_in_tile;   /* B is packed by each tile, a micro-panel at a time, just before use */
    gemm_tile_fn tile; /* the kernel's whole tile: its streaming version when B is large */
    int64_t rsa, csa; /* A(i, p) at a[i*rsa + p*csa] */

    /* the current pass: rows [i0, i0+mb) and columns [j0, j0+nb) of C, blocks [q0, q0+nq) of
     * k; mbp and nbp are mb and nb rounded up to whole micro-panels */
    int64_t i0, mb, mbp, j0, nb, nbp, q0, nq;
    float beta_pass;    /* beta for the first pass over k, 1 after */
    /* packed A: nq blocks of apw x kc, holding rows [ap0, ap0 + apw) of the pass (all of them,
     * or only the partial edge panel when A is read in place); B likewise */
    float *ap, *bp;
    int64_t ap0, apw, bp0, bpw;
    int pack_b;         /* this pass packs B (the first pass over rows for these columns) */
    int64_t pack_jobs, pack_per_task;

    /* the grid of the compute loop */
    int64_t tm, tn;     /* tile size in micro-panels */
    int64_t tiles_m, tiles_n;
    int64_t groups, group_blocks; /* groups of k-blocks; blocks per group (the last fewer) */
    float *partial;     /* groups-1 buffers of mbp x nbp, for groups after the first */
} gemm;

/* Length of block q of k. */
static int64_t block_len(const gemm *g, int64_t q)
{
    return q == g->nkb - 1 ? g->k - q * g->kc : g->kc;
}

/* ---- packing: one parallel loop over groups of micro-panels of A and of B ------------- */

/* Micro-panels per packing job: about PACK_WIDTH floats across, so that packing a row of A (A
 * transposed) reads whole cache lines; a row of B (not transposed) is copied 256 floats at a
 * time, as each row is usually on a page of its own and the copy runs at the rate of rows. */
#define PACK_WIDTH 64
#define PACK_WIDTH_B_ROWS 256

static int64_t pack_group_a(const gemm *g)
{
    return max64(1, PACK_WIDTH / g->kr->mr);
}

static int64_t pack_group_b(const gemm *g)
{
    return max64(1, (g->trans_b ? PACK_WIDTH : PACK_WIDTH_B_ROWS) / g->kr->nr);
}

/* The micro-panels of A a pass packs: [*first, *first + *count). An operand read in place
 * packs only its partial edge panel, if it has one. */
static void a_panels(const gemm *g, int64_t *first, int64_t *count)
{
    const int mr = g->kr->mr;
    *first = g->a_direct ? g->mb / mr : 0;
    *count = g->mbp / mr - *first;
}

static void b_panels(const gemm *g, int64_t *first, int64_t *count)
{
    const int nr = g->kr->nr;
    *first = g->b_direct ? g->nb / nr : 0;
    *count = g->pack_b && !g->b_in_tile ? g->nbp / nr - *first : 0;
}

static int pack_range(void *ctx, int64_t start, int64_t stop)
{
    const gemm *g = ctx;
    const int mr = g->kr->mr, nr = g->kr->nr;
    const int64_t ga = pack_group_a(g), gb = pack_group_b(g);
    int64_t fa, na, fb, nb;
    a_panels(g, &fa, &na);
    b_panels(g, &fb, &nb);
    const int64_t ja = ceil_div(na, ga);
    for (int64_t t = start; t < stop; t++) {
        /* jobs [0, ja) pack ga panels of A each, the rest gb panels of B; a job packs its
         * panels for every block q of k of the pass, at offset q * kc * (padded width) */
        for (int64_t q = 0; q < g->nq; q++) {
            const int64_t p0 = (g->q0 + q) * g->kc, kcq = block_len(g, g->q0 + q);
            if (t < ja) {
                const int64_t r = (fa + t * ga) * mr;
                g->kr->pack_a(g->a, g->lda, g->trans_a, g->i0 + r, min64(ga * mr, g->mb - r),
                              p0, kcq, g->alpha, mr,
                              g->ap + q * g->kc * g->apw + (r - g->ap0) * kcq);
            } else {
                const int64_t col = (fb + (t - ja) * gb) * nr;
                g->kr->pack_b(g->b, g->ldb, g->trans_b, p0, kcq, g->j0 + col,
                              min64(gb * nr, g->nb - col), nr,
                              g->bp + q * g->kc * g->bpw + (col - g->bp0) * kcq);
            }
        }
    }
    return 0;
}

static int pack_tasks(void *ctx, int64_t start, int64_t stop)
{
    const gemm *g = ctx;
    return pack_range(ctx, start * g->pack_per_task, min64(stop * g->pack_per_task, g->pack_jobs));
}

static void pack_pass(gemm *g)
{
    int64_t fa, na, fb, nb;
    a_panels(g, &fa, &na);
    b_panels(g, &fb, &nb);
    const int64_t jobs = ceil_div(na, pack_group_a(g)) + ceil_div(nb, pack_group_b(g));
    const int64_t kpass = min64(g->nq * g->kc, g->k - g->q0 * g->kc);
    /* the narrower of the kinds of job in the pass (a job of A is at most PACK_WIDTH rows) */
    const int64_t width_b = pack_group_b(g) * g->kr->nr;
    const int64_t width = na ? (nb ? min64(PACK_WIDTH, width_b) : PACK_WIDTH) : width_b;
    const int64_t per_job = kpass * width;
    /* jobs of less than PACK_GRAIN_FLOATS are packed in runs, as one task */
    const int64_t per_task = max64(1, PACK_GRAIN_FLOATS / per_job);
    g->pack_jobs = jobs;
    g->pack_per_task = per_task;
    gemm_for_each(ceil_div(jobs, per_task), pack_tasks, g);
}

/* ---- compute: one parallel loop over tiles x groups of k ------------------------------- */

/* A micro-tile of the compute phase: whole ones by g->tile, edges as gemm_micro_tile does. */
static inline void run_tile(const gemm *g, int64_t kc, const float *a, int64_t rsa, int64_t csa,
                            const float *b, int64_t rsb, float *c, int64_t ldc, int64_t rows,
                            int64_t cols, float beta)
{
    if (rows == g->kr->mr && cols == g->kr->nr)
        g->tile(kc, a, rsa, csa, b, rsb, c, ldc, beta);
    else
        gemm_micro_tile(g->kr, kc, a, rsa, csa, b, rsb, c, ldc, rows, cols, beta);
}

static void compute_task(const gemm *g, int64_t t)
{
    const int mr = g->kr->mr, nr = g->kr->nr;
    const int64_t ntiles = g->tiles_m * g->tiles_n;
    const int64_t grp = t / ntiles, tile = t % ntiles;
    /* tiles down a column of the grid are consecutive: a thread running a range of them
     * reuses the same columns of packed B */
    const int64_t r0 = (tile % g->tiles_m) * g->tm * mr, c0 = (tile / g->tiles_m) * g->tn * nr;
    const int64_t r1 = min64(r0 + g->tm * mr, g->mbp), c1 = min64(c0 + g->tn * nr, g->nbp);

    /* group 0 sums into C (with beta for the first pass over k), the others into their own
     * buffer of the pass's padded size; the tiles at its edges are computed as those of C
     * (a full tile there would compute the padding too: a third more work on 64 x 128 x 784,
     * whose last micro-panel of 48 columns holds 32) */
    float *dst = g->c + g->i0 * g->ldc + g->j0;
    int64_t ldd = g->ldc;
    const int64_t rows_in = g->mb, cols_in = g->nb;
    if (grp > 0) {
        dst = g->partial + (grp - 1) * g->mbp * g->nbp;
        ldd = g->nbp;
    }
    const int64_t qa = grp * g->group_blocks, qb = min64(qa + g->group_blocks, g->nq);
    /* micro-panels below these are read in place (the others, or all, are packed) */
    const int64_t a_full = g->a_direct ? g->mb / mr * mr : 0;
    const int64_t b_full = g->b_direct ? g->nb / nr * nr : 0;
    /* with b_in_tile: the B micro-panels in use, `chunk` of them packed here at a time (as
     * many as the buffer holds, up to IN_TILE_PANELS), each in L1 while the kernel runs down
     * the tile's A micro-panels */
    float bpanel[GEMM_KC_LIMIT * GEMM_NR_MAX] __attribute__((aligned(GEMM_ALIGN)));
    for (int64_t q = qa; q < qb; q++) {
        const int64_t p0 = (g->q0 + q) * g->kc, kcq = block_len(g, g->q0 + q);
        /* packed panels: row r of the pass at aq + (r - ap0) * kcq, column j at
         * bq + (j - bp0) * kcq */
        const float *aq = g->ap + q * g->kc * g->apw, *bq = g->bp + q * g->kc * g->bpw;
        const float *ad = g->a + g->i0 * g->rsa + p0 * g->csa;
        const float *bd = g->b + p0 * g->ldb + g->j0;
        const float beta = q > qa ? 1.0f : grp == 0 ? g->beta_pass : 0.0f;
        const int64_t chunk = max64(1, min64(IN_TILE_PANELS,
                                             (int64_t)GEMM_KC_LIMIT * GEMM_NR_MAX / (kcq * nr)));
        for (int64_t jr = c0; jr < c1; jr += nr) {
            const float *b;
            int64_t rsb;
            if (g->b_in_tile) {
                const int64_t in_chunk = (jr - c0) / nr % chunk;
                if (in_chunk == 0) /* the tile's columns only: the next tile packs its own */
                    g->kr->pack_b(g->b, g->ldb, g->trans_b, p0, kcq, g->j0 + jr,
                                  min64(chunk * nr, min64(c1, g->nb) - jr), nr, bpanel);
                b = bpanel + in_chunk * kcq * nr;
                rsb = nr;
            } else if (jr < b_full) {
                b = bd + jr;
                rsb = g->ldb;
            } else {
                b = bq + (jr - g->bp0) * kcq;
                rsb = nr;
            }
            /* the next packed B micro-panel, fetched a few rows per micro-tile so that it is
             * in L1 when its column of micro-tiles starts (one read in place is left to the
             * hardware prefetchers: fetching it early would evict rows in use), where the
             * kernel asks for it: the 16 KB panels of the AVX2 kernel gain, the 32 KB panels
             * of the AVX-512 kernel lose (the prefetches fill the line buffers and stall the
             * kernel: 1024^3 ran 8% slower with them on a Xeon with AVX-512) */
            const int64_t jn = jr + nr < c1 ? jr + nr : jr;
            const int64_t lines = !g->kr->prefetch_b || jn < b_full || g->b_in_tile
                                  ? 0 : kcq * nr * (int64_t)sizeof(float) / 64;
            const char *next = lines ? (const char *)(bq + (jn - g->bp0) * kcq) : NULL;
            const int64_t per_tile = ceil_div(lines, ceil_div(r1 - r0, mr));
            int64_t line = 0;
            /* when each tile packs its B micro-panels, or reads them in place for a single
             * row of micro-tiles: the rows of B of the micro-panel IN_TILE_AHEAD panels on,
             * spread over the micro-tiles like the lines above. Its kcq rows lie ldb apart,
             * more streams than the hardware prefetchers follow: left to them, each panel
             * waits on kcq misses, and 16 x 12544 x 72 ran at half speed whenever its B was
             * not in cache already (after a pause of a millisecond, say) */
            const int64_t ja = jr + IN_TILE_AHEAD * nr;
            const int ahead_b = g->b_in_tile || (g->b_direct && g->mb <= mr);
            const int64_t rows_ahead = ahead_b && !g->trans_b && ja < c1 ? kcq : 0;
            const char *ahead = rows_ahead ? (const char *)(bd + ja) : NULL;
            const int64_t rows_per_tile = ceil_div(rows_ahead, ceil_div(r1 - r0, mr));
            const int64_t last = (min64(nr, g->nb - ja) - 1) * (int64_t)sizeof(float);
            int64_t row = 0;
            for (int64_t ir = r0; ir < r1; ir += mr) {
                for (int64_t e = min64(line + per_tile, lines); line < e; line++)
                    __builtin_prefetch(next + line * 64);
                for (int64_t e = min64(row + rows_per_tile, rows_ahead); row < e; row++) {
                    const char *r = ahead + row * g->ldb * (int64_t)sizeof(float);
                    __builtin_prefetch(r);
                    __builtin_prefetch(r + last);
                }
                if (ir < a_full)
                    run_tile(g, kcq, ad + ir * g->rsa, g->rsa, g->csa, b, rsb,
                             dst + ir * ldd + jr, ldd, min64(mr, rows_in - ir),
                             min64(nr, cols_in - jr), beta);
                else
                    run_tile(g, kcq, aq + (ir - g->ap0) * kcq, 1, mr, b, rsb,
                             dst + ir * ldd + jr, ldd, min64(mr, rows_in - ir),
                             min64(nr, cols_in - jr), beta);
            }
        }
    }
}

static int compute_range(void *ctx, int64_t start, int64_t stop)
{
    for (int64_t t = start; t < stop; t++)
        compute_task(ctx, t);
    return 0;
}

/* Add the partial sums of groups 1, 2, ... to C, in that order. */
static int combine_range(void *ctx, int64_t start, int64_t stop)
{
    const gemm *g = ctx;
    for (int64_t i = start; i < stop; i++) {
        float *crow = g->c + (g->i0 + i) * g->ldc + g->j0;
        for (int64_t grp = 1; grp < g->groups; grp++) {
            const float *prow = g->partial + (grp - 1) * g->mbp * g->nbp + i * g->nbp;
            for (int64_t j = 0; j < g->nb; j++)
                crow[j] += prow[j];
        }
    }
    return 0;
}

/* The tile grid for the current pass: tiles of at most MT_MAX rows; then, with several
 * threads, the dimension with more micro-panels per tile is split until there are about
 * TASKS_PER_THREAD tasks per thread or tiles would fall below TILE_MIN_FLOPS. When each tile
 * packs the B micro-panels it uses (b_in_tile), every row of tiles packs them again: there one
 * task per thread is enough (64 x 128 x 784 with B transposed, at 2 threads: 213-225 GFLOP/s
 * against 153-158 with four tiles per thread; 128 x 128 x 1024: 264 against 170; products
 * that pack B once ran the same with one, two or four). */
static void plan_grid(gemm *g, int threads)
{
    const int mr = g->kr->mr, nr = g->kr->nr;
    const int64_t pm = g->mbp / mr, pn = g->nbp / nr;
    const int64_t kpass = min64(g->nq * g->kc, g->k - g->q0 * g->kc);
    g->tiles_m = ceil_div(pm, max64(1, MT_MAX / mr));
    gemm_plan_grid(pm, pn, &g->tiles_m, &g->tiles_n, &g->tm, &g->tn,
                   2.0 * (double)g->mbp * (double)g->nbp * (double)kpass, g->groups, threads,
                   g->b_in_tile ? IN_TILE_TASKS_PER_THREAD : TASKS_PER_THREAD, TILE_MIN_FLOPS);
}

/* Groups of k-blocks for the current pass: a function of the shape only (never of the thread
 * count), so that the order of the sums is fixed. When each tile packs its B micro-panels
 * (b_in_tile), groups of at most IN_TILE_GROUP_BLOCKS blocks: two threads that cut the rows of
 * C in two would each pack all of B, while with k in two groups each packs half of it, for
 * one more pass over C adding the second group's sums. 64 x 128 x 784 with B transposed (a
 * linear layer's forward pass) ran at 2 threads in 46.7 us against 53.7 (the row split), at 1
 * in 79.0 against 77.7; 128 x 128 x 1024 in 99 us against 108 and 177 against 175. */
static void plan_groups(gemm *g)
{
    const int64_t kpass = min64(g->nq * g->kc, g->k - g->q0 * g->kc);
    int64_t groups = 1;
    if ((double)g->m * (double)g->n <= KSPLIT_MAX_MN) {
        groups = min64(KGROUPS_MAX, max64(1, kpass / KGROUP_MIN));
        if (g->b_in_tile)
            groups = max64(groups, min64(KGROUPS_MAX, g->nq / IN_TILE_GROUP_BLOCKS));
    }
    g->group_blocks = ceil_div(g->nq, min64(groups, g->nq));
    g->groups = ceil_div(g->nq, g->group_blocks);
}

/* ---- C = beta * C, for alpha == 0 or k == 0 ------------------------------------------- */

static int scale_range(void *ctx, int64_t start, int64_t stop)
{
    const gemm *g = ctx;
    for (int64_t i = start; i < stop; i++) {
        float *crow = g->c + i * g->ldc;
        if (g->beta == 0.0f)
            memset(crow, 0, sizeof(float) * (size_t)g->n);
        else
            for (int64_t j = 0; j < g->n; j++)
                crow[j] *= g->beta;
    }
    return 0;
}

/* ---- reading operands in place ------------------------------------------------------- */

/* Packing copies an operand once so that the kernel reads it contiguously, from cache, many
 * times over. Reading it in place instead saves the copy, which costs a sizeable part of a
 * product like 64 x 784 x 128, and is as fast when its micro-panels fit L1 at their stride
 * (gemm_l1_holds) and either
 *   - the operand is small enough to stay in L2 (DIRECT_MAX_FLOATS), or
 *   - each of its micro-panels is used by at most DIRECT_FEW_TILES micro-tiles (a B panel
 *     when m is small, an A panel when n is), one after the other: then packing would read it
 *     once just as the kernel does (conv as GEMM: 16 x 12544 x 72).
 * B can be read in place when its rows are rows of op(B) (not transposed); A always (rows of
 * A, contiguous along k, or rows of a transposed A: 6 adjacent values per step of k), but
 * alpha is folded in while packing, so only when alpha == 1. Partial edge panels are always
 * packed (zero-padded). The choice depends on the arguments only, never on the thread count. */
#define DIRECT_MAX_FLOATS (128 * 1024)
#define DIRECT_FEW_TILES 4
/* ... and for an A micro-panel, five: a convolution over 14x14 images multiplies its filters
 * by im2col's 196 columns, one micro-tile more than four of the 8 x 48 kernel's, and packing
 * A for it made 256 x 196 x 2304 1.06-1.08 times as long (208 and 224 columns 1.04-1.08), and
 * the forward pass of 256 filters of 3x3 over [8, 256, 14, 14] 1.1 times. */
#define DIRECT_FEW_TILES_A 5

static void choose_direct(gemm *g)
{
    const int mr = g->kr->mr, nr = g->kr->nr;
    const int few_a_uses = g->n <= DIRECT_FEW_TILES_A * nr;
    const int few_b_uses = g->m <= DIRECT_FEW_TILES * mr;
    const double a_size = (double)g->m * (double)g->k, b_size = (double)g->k * (double)g->n;
    /* rows of A hold a micro-panel's values in 6 contiguous runs, whatever lda is */
    g->a_direct = g->alpha == 1.0f && (few_a_uses || a_size <= DIRECT_MAX_FLOATS)
                  && (!g->trans_a || gemm_l1_holds(g->lda, g->kc));
    /* a B micro-panel used by at most two micro-tiles (m <= 2 mr) is read in place even when
     * its rows evict each other from L1: with one micro-tile of rows it is read once however
     * it is laid out, and a second one reloads it from L2, cheaper than copying it (a copy
     * doubles the memory traffic of a product that is nearly all B: 1 x 2048 x 512 ran 4x
     * slower packed, 8 x 50176 x 9 a third slower, 16 x 12544 x 72 on the 8 x 48 tile and
     * 12 x 12544 x 72 on the 6 x 16 one 1.2-1.4x slower) */
    const int twice = g->m <= 2 * mr;
    g->b_direct = !g->trans_b && (few_b_uses || b_size <= DIRECT_MAX_FLOATS)
                  && (gemm_l1_holds(g->ldb, g->kc) || twice);
    /* with fewer columns than a micro-panel, B "read in place" would be all edge panel,
     * packed in a phase of its own into the shared workspace: every call would then write
     * the lines the other threads read in the last one (64 x 10 x 784 ran at 2 threads in
     * 26 us, at 1 in 15). Packed by each tile, into its own buffer, it stays put. */
    if (g->n < nr)
        g->b_direct = 0;
    g->b_in_tile = !g->b_direct && ceil_div(g->m, mr) * mr <= MT_MAX;
}

/* ---- entry point ---------------------------------------------------------------------- */

static int run_passes(gemm *g)
{
    const int mr = g->kr->mr, nr = g->kr->nr;
    const int64_t m_pad = ceil_div(g->m, mr) * mr, n_pad = ceil_div(g->n, nr) * nr;
    /* an operand read in place needs no pass limit: only its edge panel is packed */
    const int64_t mbmax = g->a_direct ? m_pad : min64(m_pad, MB_MAX / mr * mr);
    /* a packed B pass has NB_MAX columns, or more when k is short, up to as many floats as
     * NB_MAX columns of one full block of k: with k = 8 a pass of 4096 columns is too little
     * work to share out (two phases of a few tasks each) */
    const int64_t nb_pack = max64(NB_MAX, (int64_t)NB_MAX * g->kr->kc_max / g->k);
    const int64_t nbmax = g->b_direct || g->b_in_tile ? n_pad : min64(n_pad, nb_pack / nr * nr);
    const int64_t awmax = g->a_direct ? mr : mbmax;
    const int64_t bwmax = g->b_in_tile ? 0 : g->b_direct ? nr : nbmax;
    /* blocks of k per pass: as many as fit the workspace with the largest A and B panels */
    const int64_t nqmax = min64(g->nkb, max64(1, WS_FLOATS / ((awmax + bwmax) * g->kc)));
    int64_t groups_max = 1;
    if ((double)g->m * (double)g->n <= KSPLIT_MAX_MN)
        groups_max = KGROUPS_MAX;
    const size_t need = (size_t)((awmax + bwmax) * g->kc * nqmax)
                        + (size_t)((groups_max - 1) * mbmax * nbmax);
    int owned;
    float *ws = gemm_ws_acquire(need, &owned);
    if (!ws)
        return PYRT_ENOMEM;
    g->bp = ws;
    g->ap = ws + bwmax * g->kc * nqmax;
    g->partial = g->ap + awmax * g->kc * nqmax;
    const int threads = pyrt_max_concurrency();

    for (g->j0 = 0; g->j0 < g->n; g->j0 += nbmax) {
        g->nb = min64(nbmax, g->n - g->j0);
        g->nbp = ceil_div(g->nb, nr) * nr;
        g->bp0 = g->b_direct ? g->nb / nr * nr : 0;
        g->bpw = g->b_direct ? nr : g->nbp;
        for (g->q0 = 0; g->q0 < g->nkb; g->q0 += nqmax) {
            g->nq = min64(nqmax, g->nkb - g->q0);
            g->beta_pass = g->q0 == 0 ? g->beta : 1.0f;
            plan_groups(g);
            for (g->i0 = 0; g->i0 < g->m; g->i0 += mbmax) {
                g->mb = min64(mbmax, g->m - g->i0);
                g->mbp = ceil_div(g->mb, mr) * mr;
                g->ap0 = g->a_direct ? g->mb / mr * mr : 0;
                g->apw = g->a_direct ? mr : g->mbp;
                g->pack_b = g->i0 == 0;
                pack_pass(g);
                plan_grid(g, threads);
                gemm_for_each(g->tiles_m * g->tiles_n * g->groups, compute_range, g);
                if (g->groups > 1)
                    (void)pyrt_parallel_for(g->mb, max64(1, ROW_GRAIN_FLOATS / g->nb),
                                            combine_range, g);
            }
        }
    }
    gemm_ws_release(ws, owned);
    return PYRT_OK;
}

/* Do the address ranges of C (m rows of n, row stride ldc) and of x (rows of cols, stride ld)
 * meet? C is written while A and B are read, so they must not (strided views that interleave
 * without sharing an element are refused too: the caller can copy them). */
static int overlaps(const float *c, int64_t m, int64_t n, int64_t ldc, const float *x,
                    int64_t rows, int64_t cols, int64_t ld)
{
    const uintptr_t c0 = (uintptr_t)c, c1 = (uintptr_t)(c + (m - 1) * ldc + n);
    const uintptr_t x0 = (uintptr_t)x, x1 = (uintptr_t)(x + (rows - 1) * ld + cols);
    return x0 < c1 && c0 < x1;
}

/* A B^T small enough for both the small and the dot-product path goes to the one that runs
 * fewer instructions, by a count fitted on the AVX2 kernels (callgrind, k from 4 to 256): per
 * element of C, the dot path takes about 0.21 k + 24 (a horizontal sum and a write for every 12
 * elements, whatever k), the small path 0.27 k + 2 per element of its tiles, whose columns are
 * padded to whole panels of nr (or to whole vectors, part_cols, where the kernel has a version
 * for part of a tile). The small path wins unless n leaves much of its last panel empty and k
 * is long: 64 x 10 x 128 (a layer with 10 outputs) is a dot product, 64 x 10 x 32 and
 * 64 x 16 x 64 are not. The AVX-512 kernels agree (64 x 16 x 64: 1.2 us by its tiles, 1.7 by
 * dot products; 64 x 10 x 128: 2.5 and 1.8; 64 x 10 x 64 and 64 x 16 x 128 within 0.1 us). */
static int dot_before_small(const gemm_kernel *kr, int64_t n, int64_t k)
{
    const int64_t step = kr->tile_part ? kr->part_cols : kr->nr;
    const int64_t n_pad = ceil_div(n, step) * step;
    return n * (21 * k + 2400) < n_pad * (27 * k + 200);
}

int pyrt_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
               int64_t ldc)
{
    if (m < 0 || n < 0 || k < 0)
        return PYRT_EINVAL;
    /* row strides at least the stored row length: A is [m, k] or, transposed, [k, m] */
    if (lda < max64(1, trans_a ? m : k) || ldb < max64(1, trans_b ? k : n) || ldc < max64(1, n))
        return PYRT_EINVAL;
    if (m == 0 || n == 0)
        return PYRT_OK;
    if (!c || (k > 0 && alpha != 0.0f && (!a || !b)))
        return PYRT_EINVAL;
    if (k > 0 && alpha != 0.0f
        && (overlaps(c, m, n, ldc, a, trans_a ? k : m, trans_a ? m : k, lda)
            || overlaps(c, m, n, ldc, b, trans_b ? n : k, trans_b ? k : n, ldb)))
        return PYRT_EINVAL;

    const gemm_kernel *kr = gemm_kernel_get();
    trans_a = trans_a != 0;
    trans_b = trans_b != 0;
    if (k > 0 && alpha != 0.0f) {
        if (gemm_row_suits(kr, trans_b, m)) {
            gemm_row(kr, trans_a, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
            return PYRT_OK;
        }
        const int dot = gemm_dot_suits(kr, trans_a, trans_b, m, n, k);
        if (gemm_small_suits(m, n, k) && !(dot && dot_before_small(kr, n, k))) {
            gemm_small(kr, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
            return PYRT_OK;
        }
        if (dot)
            return gemm_dot(kr, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        if (gemm_sweep_suits(kr, trans_b, m, n)) {
            gemm_row(kr, trans_a, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
            return PYRT_OK;
        }
        if (gemm_few_rows_suits(kr, trans_b, m)) {
            gemm_few_rows(kr, trans_a, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
            return PYRT_OK;
        }
    }
    gemm g = {
        .kr = kr,
        .trans_a = trans_a,
        .trans_b = trans_b,
        .m = m, .n = n, .k = k,
        .alpha = alpha, .beta = beta,
        .a = a, .b = b, .c = c,
        .lda = lda, .ldb = ldb, .ldc = ldc,
    };
    if (k == 0 || alpha == 0.0f) {
        /* nothing to add (as BLAS: A and B are not read, so NaN in them does not spread) */
        (void)pyrt_parallel_for(m, max64(1, ROW_GRAIN_FLOATS / n), scale_range, &g);
        return PYRT_OK;
    }
    /* balanced blocks of k: as few as the kernel's kc_max allows, of equal length but the last */
    g.kc = gemm_kc(kr, k);
    g.nkb = ceil_div(k, g.kc);
    g.rsa = g.trans_a ? 1 : lda;
    g.csa = g.trans_a ? lda : 1;
    g.tile = kr->tile_stream && (double)k * (double)n > STREAM_B_FLOATS ? kr->tile_stream
                                                                        : kr->tile;
    choose_direct(&g);
    return run_passes(&g);
}
