/*
 * pyrt.h - the public C API of the pyrt work-stealing runtime.
 *
 * This file is the contract: the Python bindings pass it to cffi's cdef exactly as it is, so it
 * holds plain declarations only (no includes, no guards, no macros with logic). C code includes
 * <stdint.h> and <stddef.h> before it; csrc/README.md explains the scheduler behind it.
 *
 * Threads. The pool has one worker thread per requested thread minus one: the thread that
 * calls an entry point takes part in the work it started. "Any thread" below means any thread
 * of the process, a pool worker or not, and several may call at once. Return codes: 0 is
 * success, a negative PYRT_E* value is an error, and a positive value is what a user callback
 * returned to stop a loop.
 */

#define PYRT_MAX_THREADS 1024

#define PYRT_OK 0
#define PYRT_EINVAL -1
#define PYRT_ENOMEM -2
#define PYRT_EAGAIN -3
#define PYRT_EBUSY -4

/* ---- pool and thread count ------------------------------------------------------------ */

/* Threads the next parallel call may use, the caller included: 1..PYRT_MAX_THREADS.
 * Any thread. Before the first set it is the number of CPUs in the process's affinity mask. */
int pyrt_get_num_threads(void);

/* Set the thread count for the calls that start after it returns; calls already running keep
 * the workers they have. Returns the previous count, or PYRT_EINVAL if n is outside
 * 1..PYRT_MAX_THREADS, or PYRT_EAGAIN if a worker thread could not be created.
 * Any thread; workers beyond the new count park until it grows again. */
int pyrt_set_num_threads(int n);

/* Number of CPUs in this process's affinity mask (at least 1). Any thread. */
int pyrt_cpu_count(void);

/* Start the workers now rather than on the first parallel call. Returns 0 or PYRT_EAGAIN.
 * Any thread. */
int pyrt_init(void);

/* Stop and join every worker thread; the next parallel call starts them again. Calls running
 * in other threads meanwhile still complete: workers finish the tasks they took, and callers
 * run the rest. Returns PYRT_OK, or PYRT_EBUSY when called from a worker (a task cannot stop
 * its own pool). Any thread. */
int pyrt_shutdown(void);

/* Index of the calling thread in the pool: 0..n-1 for workers, -1 for threads outside it
 * (a thread calling into the pool counts as outside between calls). Any thread. */
int pyrt_worker_index(void);

/* Idle-pool counters for tests and benchmarks: the number of workers now started, and how many
 * of them are asleep on their futex. Any thread; the values are a snapshot. */
int pyrt_workers_started(void);
int pyrt_workers_sleeping(void);

/* ---- fork/join ------------------------------------------------------------------------ */

/* A task is a frame the spawner owns, usually on its stack; its fields are the runtime's. */
typedef struct pyrt_task {
    void *reserved[4];
} pyrt_task;

typedef void (*pyrt_task_fn)(void *arg);

/* Run fn(arg) as a child of the calling task: it is pushed on the caller's deque, where an idle
 * worker may steal it. The caller must pass `task` to pyrt_sync before the frame holding it
 * goes away, syncing its spawns in reverse order (last spawned, first synced).
 * Only inside pyrt_run, a parallel loop or a task (that is, on a thread working for the pool);
 * from any other thread fn runs at once. */
void pyrt_spawn(pyrt_task *task, pyrt_task_fn fn, void *arg);

/* Wait until the task spawned last and not yet synced has run. If no one stole it the caller
 * runs it now; if it was stolen the caller works on the thief's tasks until it is done. */
void pyrt_sync(pyrt_task *task);

/* Run fn(arg) on the calling thread as the root of a task tree: inside it pyrt_spawn/pyrt_sync
 * and nested loops share the pool. Returns 0 (if the pool cannot start, fn still runs, on the
 * calling thread alone). Any thread; nested calls simply call fn. */
int pyrt_run(pyrt_task_fn fn, void *arg);

/* ---- loops ---------------------------------------------------------------------------- */

/* Loop body: process the indices [start, stop). Return 0 to go on; a nonzero value stops the
 * loop: no new chunk starts, chunks already running finish, and the loop returns that value
 * (the first one recorded, if several chunks stop it). */
typedef int (*pyrt_range_fn)(void *ctx, int64_t start, int64_t stop);

/* Call fn on disjoint chunks covering [0, n), each of at least `grain` indices except a tail
 * (grain 0: chosen from n and the thread count). The caller runs the loop and hands halves of
 * what is left to workers only when some are idle (lazy binary splitting). Returns 0, the
 * first nonzero value a chunk returned, or PYRT_EINVAL (n or grain negative).
 * Any thread, including inside a task or another loop (the nested loop uses the same pool). */
int pyrt_parallel_for(int64_t n, int64_t grain, pyrt_range_fn fn, void *ctx);

/* Reduction. leaf computes the value of [start, stop) into `acc` (acc_size bytes, not
 * initialised); combine merges `right` into `left`, where left covers the indices just before
 * right's. The leaves are fixed ranges of `grain` indices (grain 0: chosen from n alone) and the
 * merge order is a fixed binary tree over them, so the result never depends on the thread count
 * or on which worker ran what. A nonzero return from leaf or combine stops the reduction and is
 * returned. With n == 0 the result is not written and PYRT_OK is returned.
 * Returns PYRT_EINVAL for negative n or grain, acc_size 0 or above PYRT_MAX_ACC.
 * Any thread, as pyrt_parallel_for. */
#define PYRT_MAX_ACC 256

typedef int (*pyrt_leaf_fn)(void *ctx, int64_t start, int64_t stop, void *acc);
typedef int (*pyrt_combine_fn)(void *ctx, void *left, const void *right);

int pyrt_parallel_reduce(int64_t n, int64_t grain, size_t acc_size, pyrt_leaf_fn leaf,
                         pyrt_combine_fn combine, void *ctx, void *result);

/* The leaf size pyrt_parallel_reduce uses for grain 0 (depends on n only). Any thread. */
int64_t pyrt_reduce_leaf_size(int64_t n);

