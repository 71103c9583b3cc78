/*
 * stress_buffers.c - the buffer cache (runtime/buffers.c) under concurrent use.
 *
 * Threads of their own and the tasks of a parallel loop allocate blocks of random sizes, small
 * and large, many of them in the same few size classes so that freed blocks are handed out
 * again at once, fill each block with a pattern naming its owner, keep a handful alive for a
 * while, and check the pattern before freeing them, while another thread trims the cache. A
 * block handed to two owners at once, a free list corrupted by a race, or a block smaller than
 * asked shows up as a wrong pattern (or, under the sanitizers, as a race or an out-of-bounds
 * access). At the end the idle bytes are within the cache's bound and a trim returns them all.
 */
#include <stddef.h>
#include <stdint.h>

#include "stress.h"

#include <pthread.h>
#include <stdatomic.h>

#define OWNERS 6
#define LIVE 8                       /* blocks an owner holds at once */
#define LARGE ((size_t)3 << 20)      /* largest request: a few size classes of a few MiB */

typedef struct {
    uint32_t *p;
    size_t words;
    uint32_t tag;
} block;

/* A request size: a third small (under PYRT_BUFFER_MIN_BYTES), the rest large, most of those
 * from four fixed sizes (the same arrays every step, as in training). */
static size_t request(stress_rng *rng)
{
    static const size_t fixed[] = {PYRT_BUFFER_MIN_BYTES, 200000, 1605632, LARGE};
    switch (stress_below(rng, 3)) {
    case 0:
        return (size_t)stress_log_below(rng, PYRT_BUFFER_MIN_BYTES);
    case 1:
        return PYRT_BUFFER_MIN_BYTES + (size_t)stress_below(rng, (int64_t)LARGE);
    default:
        return fixed[stress_below(rng, 4)];
    }
}

/* The pattern: one word per 256 (one per KiB, so several on every page) and the last word,
 * which the block must have room for. */
#define STRIDE 256

static void fill(block *b, uint32_t tag)
{
    b->tag = tag;
    for (size_t i = 0; i < b->words; i += STRIDE)
        b->p[i] = tag ^ (uint32_t)i;
    if (b->words)
        b->p[b->words - 1] = tag ^ (uint32_t)(b->words - 1);
}

static void check_and_free(block *b)
{
    if (!b->p)
        return;
    for (size_t i = 0; i < b->words; i += STRIDE)
        CHECK(b->p[i] == (b->tag ^ (uint32_t)i), "block %p word %zu of %zu: 0x%x, expected 0x%x",
              (void *)b->p, i, b->words, b->p[i], b->tag ^ (uint32_t)i);
    if (b->words)
        CHECK(b->p[b->words - 1] == (b->tag ^ (uint32_t)(b->words - 1)), "block %p: last word overwritten", (void *)b->p);
    pyrt_buffer_free(b->p);
    b->p = NULL;
}

/* `rounds` allocations by one owner, LIVE alive at a time, replaced in random order. */
static void churn(uint64_t stream, int64_t rounds)
{
    stress_rng rng = stress_rng_make(stress_seed(), stream);
    block live[LIVE] = {{0}};
    for (int64_t r = 0; r < rounds; r++) {
        block *b = &live[stress_below(&rng, LIVE)];
        check_and_free(b);
        const size_t bytes = request(&rng);
        b->p = pyrt_buffer_alloc(bytes);
        CHECK(b->p != NULL, "pyrt_buffer_alloc(%zu) failed", bytes);
        CHECK((uintptr_t)b->p % 64 == 0, "block %p is not aligned to 64 bytes", (void *)b->p);
        b->words = bytes / sizeof(uint32_t);
        fill(b, (uint32_t)(stream * 0x9E3779B9u) ^ (uint32_t)r);
    }
    for (int i = 0; i < LIVE; i++)
        check_and_free(&live[i]);
}

static int64_t g_rounds;
static _Atomic int g_done;

static void *owner_thread(void *arg)
{
    churn((uint64_t)(uintptr_t)arg, g_rounds);
    return NULL;
}

static void *trimmer_thread(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&g_done, memory_order_acquire)) {
        (void)pyrt_buffer_trim();
        struct timespec pause = {0, 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static int churn_chunk(void *ctx, int64_t start, int64_t stop)
{
    (void)ctx;
    for (int64_t i = start; i < stop; i++)
        churn(100 + (uint64_t)i, g_rounds / 8);
    return 0;
}

int main(void)
{
    stress_begin("stress_buffers");
    const double t0 = stress_now();
    g_rounds = stress_scaled(1000, 100);
    stress_set_threads(4);

    pthread_t owners[OWNERS], trimmer;
    CHECK(pthread_create(&trimmer, NULL, trimmer_thread, NULL) == 0, "pthread_create");
    for (int t = 0; t < OWNERS; t++)
        CHECK(pthread_create(&owners[t], NULL, owner_thread, (void *)(uintptr_t)(t + 1)) == 0,
              "pthread_create");
    /* meanwhile the pool's tasks allocate too: blocks freed by one thread reused by another */
    CHECK_RC(pyrt_parallel_for(64, 1, churn_chunk, NULL), 0);
    for (int t = 0; t < OWNERS; t++)
        pthread_join(owners[t], NULL);
    atomic_store_explicit(&g_done, 1, memory_order_release);
    pthread_join(trimmer, NULL);

    /* a freed large block is handed out again for the next request of its class */
    void *a = pyrt_buffer_alloc(LARGE);
    CHECK(a != NULL, "pyrt_buffer_alloc(%zu) failed", LARGE);
    pyrt_buffer_free(a);
    const size_t idle = pyrt_buffer_idle_bytes();
    CHECK(idle >= LARGE, "a freed block of %zu bytes is not kept (%zu idle)", LARGE, idle);
    void *b = pyrt_buffer_alloc(LARGE - 4096);
    CHECK(b == a, "a request of the same class got %p, not the kept block %p", b, a);
    CHECK(pyrt_buffer_idle_bytes() < idle, "taking a kept block does not lower the idle bytes");
    pyrt_buffer_free(b);
    pyrt_buffer_free(NULL);

    const size_t held = pyrt_buffer_idle_bytes();
    CHECK(held <= ((size_t)1 << 30), "%zu idle bytes, above the cache's bound", held);
    CHECK(pyrt_buffer_trim() == held, "trim did not report the %zu idle bytes", held);
    CHECK(pyrt_buffer_idle_bytes() == 0, "idle bytes left after a trim");
    return stress_end("stress_buffers", t0);
}
