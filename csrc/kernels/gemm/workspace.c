/*
 * workspace.c - the buffers GEMM packs its operands into.
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "gemm_internal.h"

/* Each calling thread keeps its packing buffer between calls (a training loop calls GEMM with
 * the same shapes over and over; a fresh multi-megabyte malloc would be mmap'ed and faulted
 * in every time). A GEMM that starts on a thread whose buffer is in use (a task stolen while
 * that thread waits inside another GEMM) allocates its own. */
typedef struct workspace {
    float *buf;
    size_t cap; /* floats */
    int busy;
} workspace;

static __thread workspace tls_ws;
static pthread_key_t ws_key;
static pthread_once_t ws_once = PTHREAD_ONCE_INIT;

static void ws_free(void *p)
{
    workspace *ws = p;
    free(ws->buf);
    ws->buf = NULL;
    ws->cap = 0;
}

static void ws_key_init(void)
{
    /* the destructor frees a thread's buffer when the thread exits */
    (void)pthread_key_create(&ws_key, ws_free);
}

/* A kept buffer of a huge page or more is allocated on huge-page boundaries and marked for
 * transparent huge pages (Linux, where they are enabled "madvise"): the packed panels of a
 * large product span megabytes, and with 4 KB pages the kernel's streams through them miss
 * the TLB. sgemm 1024^3 ran 6% faster on a Xeon with AVX-512 (3% at 2 threads). A buffer of
 * one call (`keep` 0) is not marked: the first touch of a huge page may wait for the kernel
 * to compact memory, a cost only a buffer used call after call pays back. */
#define HUGE_PAGE ((size_t)2 << 20)

static float *alloc_floats(size_t n, int keep)
{
    size_t bytes = (n * sizeof(float) + GEMM_ALIGN - 1) / GEMM_ALIGN * GEMM_ALIGN;
#ifdef MADV_HUGEPAGE
    if (keep && bytes >= HUGE_PAGE) {
        bytes = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        float *p = aligned_alloc(HUGE_PAGE, bytes);
        if (p)
            (void)madvise(p, bytes, MADV_HUGEPAGE); /* a hint: without it, 4 KB pages */
        return p;
    }
#else
    (void)keep;
#endif
    return aligned_alloc(GEMM_ALIGN, bytes ? bytes : GEMM_ALIGN);
}

float *gemm_ws_acquire(size_t n, int *owned)
{
    workspace *ws = &tls_ws;
    *owned = 0;
    if (ws->busy) {
        *owned = 1;
        return alloc_floats(n, 0);
    }
    if (ws->cap < n) {
        pthread_once(&ws_once, ws_key_init);
        free(ws->buf);
        ws->cap = 0;
        ws->buf = alloc_floats(n, 1);
        if (!ws->buf)
            return NULL;
        ws->cap = n;
        (void)pthread_setspecific(ws_key, ws);
    }
    ws->busy = 1;
    return ws->buf;
}

void gemm_ws_release(float *buf, int owned)
{
    if (owned)
        free(buf);
    else
        tls_ws.busy = 0;
}
