/*
 * buffers.c - memory for large arrays, kept for reuse when freed (pyrt.h, "array memory").
 *
 * Why. A training step allocates the same large arrays every step (activations, their
 * gradients, im2col scratch) and frees them by the end of it. glibc serves a large block from
 * the top of its heap, or with mmap, and gives the memory back to the system once enough of it
 * is free (heap trimming, munmap); in some orders of allocation that happens every step, and
 * the next step maps fresh pages again, a page fault per 4 KiB page. On a virtual machine a
 * fault costs a few microseconds: a CNN step at batch 64 on one fixed batch took 1046 of them,
 * 1.75x its time without. Kept blocks keep their pages: from the second step on, the arrays
 * land on memory that is mapped, whatever the order.
 *
 * How. Requests of PYRT_BUFFER_MIN_BYTES or more are rounded up to a size class, eight classes
 * per doubling of whole pages (so at most 1/8 of a block is slack), and freed blocks wait on
 * the free list of their class for the next request of that class. A block that would take the
 * idle bytes over CACHE_MAX_BYTES (or 1/16 of the RAM, if less) goes back to the system
 * instead, and pyrt_buffer_trim frees every idle block. Smaller requests are plain allocations: malloc keeps those on its own free
 * lists without giving their pages back. Every block starts with a header (one cache line)
 * saying which it is, so pyrt_buffer_free needs no size.
 *
 * Threads. One mutex guards the free lists: a call takes it for a few list operations, and
 * allocations of this size are rare next to the work done on them. fork() happens with the
 * mutex held (pthread_atfork), so the child inherits whole lists, valid memory of its own,
 * and a mutex it can unlock.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "../pyrt.h"

#define HEADER_BYTES 64 /* keeps the user's pointer aligned to a cache line */
#define PAGE_BYTES 4096
#define CLASSES_PER_DOUBLING 8
#define CLASS_COUNT (64 * CLASSES_PER_DOUBLING)
#define CACHE_MAX_BYTES ((size_t)1 << 30) /* idle bytes kept at most ... */
#define CACHE_MAX_RAM_SHARE 16             /* ... and at most this share of the RAM */
#define UNCACHED (-1)

typedef struct header {
    struct header *next; /* on a free list */
    size_t bytes;        /* usable bytes after the header */
    int size_class;      /* UNCACHED for a small block */
} header;

_Static_assert(sizeof(header) <= HEADER_BYTES, "the header fits its cache line");

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static header *g_free[CLASS_COUNT];
static size_t g_idle_bytes;
static size_t g_idle_max = CACHE_MAX_BYTES; /* set once, before main */

static int msb(size_t v)
{
    return 63 - __builtin_clzll((unsigned long long)v);
}

/* The class of a request of `pages` pages (>= 8) and the pages of that class: the request
 * rounded up to a multiple of 1/8 of the power of two at or below it. */
static int size_class(size_t pages, size_t *class_pages)
{
    const int step_shift = msb(pages) - 3;
    const size_t step = (size_t)1 << step_shift;
    const size_t rounded = (pages + step - 1) / step * step;
    const int e = msb(rounded); /* rounding may reach the next power of two */
    *class_pages = rounded;
    return e * CLASSES_PER_DOUBLING + (int)((rounded >> (e - 3)) & (CLASSES_PER_DOUBLING - 1));
}

static header *new_block(size_t bytes, int size_class)
{
    void *p = NULL;
    if (bytes > SIZE_MAX - HEADER_BYTES || posix_memalign(&p, HEADER_BYTES, HEADER_BYTES + bytes))
        return NULL;
    header *h = p;
    h->next = NULL;
    h->bytes = bytes;
    h->size_class = size_class;
    return h;
}

void *pyrt_buffer_alloc(size_t nbytes)
{
    if (nbytes < PYRT_BUFFER_MIN_BYTES) {
        header *h = new_block(nbytes ? nbytes : 1, UNCACHED);
        return h ? (char *)h + HEADER_BYTES : NULL;
    }
    if (nbytes > SIZE_MAX / 2)
        return NULL;
    size_t pages;
    const int c = size_class((nbytes + PAGE_BYTES - 1) / PAGE_BYTES, &pages);
    pthread_mutex_lock(&g_lock);
    header *h = g_free[c];
    if (h) {
        g_free[c] = h->next;
        g_idle_bytes -= h->bytes;
    }
    pthread_mutex_unlock(&g_lock);
    if (!h) {
        h = new_block(pages * PAGE_BYTES, c);
        if (!h) { /* the idle blocks of other classes may be what the system is missing */
            pyrt_buffer_trim();
            h = new_block(pages * PAGE_BYTES, c);
        }
    }
    return h ? (char *)h + HEADER_BYTES : NULL;
}

void pyrt_buffer_free(void *ptr)
{
    if (!ptr)
        return;
    header *h = (header *)((char *)ptr - HEADER_BYTES);
    if (h->size_class != UNCACHED) {
        pthread_mutex_lock(&g_lock);
        const int keep = g_idle_bytes + h->bytes <= g_idle_max;
        if (keep) {
            h->next = g_free[h->size_class];
            g_free[h->size_class] = h;
            g_idle_bytes += h->bytes;
        }
        pthread_mutex_unlock(&g_lock);
        if (keep)
            return;
    }
    free(h);
}

size_t pyrt_buffer_trim(void)
{
    header *all = NULL;
    pthread_mutex_lock(&g_lock);
    const size_t freed = g_idle_bytes;
    for (int c = 0; c < CLASS_COUNT; c++) {
        while (g_free[c]) {
            header *h = g_free[c];
            g_free[c] = h->next;
            h->next = all;
            all = h;
        }
    }
    g_idle_bytes = 0;
    pthread_mutex_unlock(&g_lock);
    while (all) { /* outside the lock: free() may take a while */
        header *next = all->next;
        free(all);
        all = next;
    }
    return freed;
}

size_t pyrt_buffer_idle_bytes(void)
{
    pthread_mutex_lock(&g_lock);
    const size_t n = g_idle_bytes;
    pthread_mutex_unlock(&g_lock);
    return n;
}

static void atfork_prepare(void)
{
    pthread_mutex_lock(&g_lock);
}

static void atfork_release(void)
{
    pthread_mutex_unlock(&g_lock);
}

__attribute__((constructor)) static void init_buffers(void)
{
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) {
        const size_t share = (size_t)pages / CACHE_MAX_RAM_SHARE * (size_t)page;
        if (share < g_idle_max)
            g_idle_max = share;
    }
    pthread_atfork(atfork_prepare, atfork_release, atfork_release);
}
