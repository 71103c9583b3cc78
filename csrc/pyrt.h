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
#define PYRT_EOVERLAP -5 /* an output array partly overlaps an input */

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

/* Threads that can run a parallel call at the same time: the thread count, but at most the
 * CPUs the pool may keep busy (the environment variable PYRT_CPUS, else the affinity mask's
 * CPUs or fewer if a cgroup CPU quota allows fewer; read when the pool starts or resizes).
 * Beyond that, workers wait for a free CPU rather than share one, so kernels size their
 * splits by this. Any thread. */
int pyrt_max_concurrency(void);

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
 * what is left to workers only when some are idle (lazy binary splitting); a loop that cannot
 * be split (under three grains, or one thread) is a single call fn(ctx, 0, n). Returns 0, the
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

/* The same loops for bodies whose every chunk (leaf) is costly, a call into an interpreter
 * say, of the order of a worker's wake-up (tens of microseconds) or more: a range is split
 * before its first chunk runs, as soon as two grains (two leaves) are left, and a sleeping
 * worker is woken for any split, so that a loop of two heavy chunks runs on two threads.
 * Results, chunks and the reduction tree are those of pyrt_parallel_for/pyrt_parallel_reduce
 * with the same arguments, except that a coarse loop of two grains may be split. */
int pyrt_parallel_for_coarse(int64_t n, int64_t grain, pyrt_range_fn fn, void *ctx);
int pyrt_parallel_reduce_coarse(int64_t n, int64_t grain, size_t acc_size, pyrt_leaf_fn leaf,
                                pyrt_combine_fn combine, void *ctx, void *result);

/* The leaf size pyrt_parallel_reduce uses for grain 0 (depends on n only). Any thread. */
int64_t pyrt_reduce_leaf_size(int64_t n);

/* =========================================================================================
 * Kernels: float32, C-contiguous (row-major) buffers, parallel through the runtime above.
 * Any thread may call them, including loop bodies and tasks. Each returns PYRT_OK or
 * PYRT_EINVAL (a negative size, an unknown op code, a NULL where data is needed). Sizes of 0
 * are valid and do nothing. Outputs may alias inputs only where a kernel says so. Every
 * reduction sums in a fixed order, so results are bitwise identical at any thread count.
 * ========================================================================================= */

/* ---- array memory --------------------------------------------------------------------- */

/* Blocks of PYRT_BUFFER_MIN_BYTES and more are kept when freed and handed out again for a
 * request of the same size class (at most 1/8 larger than asked), so that the large arrays a
 * training step allocates every step keep their pages mapped (runtime/buffers.c). */
#define PYRT_BUFFER_MIN_BYTES 131072

/* nbytes of memory aligned to 64 bytes, or NULL when the system has none. Any thread. */
void *pyrt_buffer_alloc(size_t nbytes);

/* Release a block from pyrt_buffer_alloc (NULL: nothing). Any thread. */
void pyrt_buffer_free(void *ptr);

/* Give every kept block back to the system; returns the bytes they held. Any thread. */
size_t pyrt_buffer_trim(void);

/* Bytes held in kept blocks that nothing uses now. Any thread. */
size_t pyrt_buffer_idle_bytes(void);

/* ---- elementwise ---------------------------------------------------------------------- */

#define PYRT_ADD 0
#define PYRT_SUB 1
#define PYRT_MUL 2
#define PYRT_DIV 3

/* How `b` is laid against an [rows, cols] `a`. */
#define PYRT_BCAST_NONE 0   /* b is [rows, cols] too */
#define PYRT_BCAST_SCALAR 1 /* b[0] everywhere */
#define PYRT_BCAST_ROW 2    /* b is [cols]: b[j] for every row */
#define PYRT_BCAST_COL 3    /* b is [rows]: b[i] for every column */

/* out = a op b, or b op a when `swap` is nonzero. out may be a (in place) or, with
 * PYRT_BCAST_NONE, b; PYRT_EOVERLAP if it meets either in any other way. */
int pyrt_binary(int op, const float *a, const float *b, float *out, int64_t rows, int64_t cols,
                int bcast, int swap);

#define PYRT_NEG 0
#define PYRT_EXP 1
#define PYRT_LOG 2
#define PYRT_SQRT 3
#define PYRT_TANH 4
#define PYRT_SIGMOID 5
#define PYRT_RELU 6
#define PYRT_IDENTITY 7

/* out = op(x) over n elements; out may be x (PYRT_EOVERLAP if it meets x otherwise). */
int pyrt_unary(int op, const float *x, float *out, int64_t n);

/* Gradient of a unary op: out = grad * op'(...) where `saved` is the op's input x for
 * PYRT_RELU (grad where x > 0), and its output y for PYRT_SIGMOID (y(1-y)) and PYRT_TANH
 * (1-y^2); PYRT_EXP takes y (grad*y), PYRT_LOG takes x (grad/x), PYRT_SQRT takes y
 * (grad/(2y)), PYRT_NEG ignores saved. out may be grad or saved (PYRT_EOVERLAP if it meets
 * either otherwise). */
int pyrt_unary_backward(int op, const float *grad, const float *saved, float *out, int64_t n);

/* out[i, j] = act(x[i, j] + bias[j]) for an [rows, cols] x, one pass over memory; act is
 * PYRT_IDENTITY, PYRT_RELU, PYRT_SIGMOID or PYRT_TANH; bias may be NULL; out may be x
 * (PYRT_EOVERLAP if it meets x or bias in any other way). */
int pyrt_bias_act(const float *x, const float *bias, float *out, int64_t rows, int64_t cols,
                  int act);

/* The bias gradient: out[j] = sum over i of grad[i, j] for an [rows, cols] grad. */
int pyrt_bias_grad(const float *grad, float *out, int64_t rows, int64_t cols);

/* out = c + value * a * b over n elements (PyTorch's addcmul; the a*b+c triad in one pass).
 * out may be any of the inputs (PYRT_EOVERLAP if it meets one in any other way). */
int pyrt_addcmul(const float *c, const float *a, const float *b, float value, float *out,
                 int64_t n);

/* out [batch, cols, rows] = x [batch, rows, cols] with its last two axes swapped: the
 * contiguous copy of a transpose. out may not meet x (PYRT_EOVERLAP). */
int pyrt_transpose(const float *x, float *out, int64_t batch, int64_t rows, int64_t cols);

/* dst [count, len] = block by block, the len floats of src [src_len] from offset src_at[b],
 * or zeros where src_at[b] is negative: a layout change that moves whole rows or planes, in
 * parallel. A block past src's end is PYRT_EINVAL; dst may not meet src (PYRT_EOVERLAP). */
int pyrt_copy_blocks(const float *src, int64_t src_len, const int64_t *src_at, int64_t count,
                     int64_t len, float *dst);

/* ---- bags of embeddings ---------------------------------------------------------------- */

#define PYRT_BAG_SUM 0
#define PYRT_BAG_MEAN 1
#define PYRT_BAG_MAX 2

/* Bag b of entries [bounds[b], bounds[b + 1]) (bounds: bags + 1 non-decreasing offsets from
 * 0), entry e row index[e] of weight [rows, dim]: out[b] = the sum of the bag's rows (each
 * times scale[e] when scale is not NULL), their mean (mode PYRT_BAG_MEAN) or their elementwise
 * maximum (PYRT_BAG_MAX, scale NULL; arg [bags, dim] receives the entry of each maximum, the
 * first greater than all before it; -1 in an empty bag). An empty bag gives zeros. Parallel
 * over the bags, each summed in entry order. */
int pyrt_embedding_bag(const float *weight, int64_t rows, int64_t dim, const int64_t *index,
                       const int64_t *bounds, int64_t bags, const float *scale, int mode,
                       float *out, int64_t *arg);

/* grad_weight [rows, dim] = the gradient of pyrt_embedding_bag for grad [bags, dim] of its
 * output: each entry's row gets its bag's gradient times scale[e] (1 when NULL; a mean's
 * 1 / size is passed as scale), or, with arg (a maximum's), each output element's gradient
 * goes to the element that gave it. Summed in entry order in parallel blocks of columns. */
int pyrt_embedding_bag_backward(const float *grad, int64_t rows, int64_t dim,
                                const int64_t *index, const int64_t *bounds, int64_t bags,
                                const float *scale, const int64_t *arg, float *grad_weight);

/* ---- reductions ----------------------------------------------------------------------- */

/* Reductions see x as [outer, len, inner] and reduce the middle axis into out[outer, inner]
 * (a full reduction is outer = inner = 1). len must be at least 1 for max and argmax. */
int pyrt_sum(const float *x, float *out, int64_t outer, int64_t len, int64_t inner);
int pyrt_max(const float *x, float *out, int64_t outer, int64_t len, int64_t inner);
/* Index of the first maximum along the axis; NaN counts as the maximum (as NumPy does). */
int pyrt_argmax(const float *x, int64_t *out, int64_t outer, int64_t len, int64_t inner);

/* ---- softmax and losses (over the last axis of an [rows, cols] x) --------------------- */

/* out = softmax(x) or, with `log` nonzero, log_softmax(x); stable for large |x|; out may
 * be x (PYRT_EOVERLAP if it meets x in any other way). */
int pyrt_softmax(const float *x, float *out, int64_t rows, int64_t cols, int log);

/* Mean cross-entropy of softmax(logits) against integer labels in [0, cols): *loss gets the
 * mean over rows; if grad is not NULL it gets d(loss)/d(logits) = (softmax - onehot) / rows,
 * in the same pass. A label out of range returns PYRT_EINVAL and writes nothing. */
int pyrt_cross_entropy(const float *logits, const int64_t *labels, float *loss, float *grad,
                       int64_t rows, int64_t cols);

/* Mean binary cross-entropy with logits: loss = mean(max(z,0) - z*t + log(1+exp(-|z|)));
 * grad (optional) = (sigmoid(z) - t) / n. */
int pyrt_bce_with_logits(const float *logits, const float *targets, float *loss, float *grad,
                         int64_t n);

/* ---- GEMM ----------------------------------------------------------------------------- */

/* C = alpha * op(A) op(B) + beta * C, row-major; op(A) is [m, k] (A is [k, m] when trans_a),
 * op(B) is [k, n] (B is [n, k] when trans_b); lda, ldb, ldc are row strides in elements.
 * beta == 0 ignores C's old contents (NaN included). C must not overlap A or B. Parallel over
 * blocks of both m and n; each element sums over k in one fixed order. */
int pyrt_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
               int64_t ldc);

/* `batch` products of one shape: for i in [0, batch),
 *     C_i = alpha * op(A_i) op(B_i) + beta * C_i,
 * A_i = a + i * stride_a, B_i = b + i * stride_b, C_i = c + i * stride_c (strides in floats;
 * a stride of 0 uses one A or one B for every product), each as pyrt_sgemm computes it, so
 * bitwise the same at any thread count. Parallel over the products, and within a product
 * large enough to split. The C_i must not share elements (stride_c at least (m - 1) * ldc + n
 * when batch > 1) and must not overlap any A_i or B_i; PYRT_EINVAL otherwise. */
int pyrt_sgemm_batched(int64_t batch, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                       float alpha, const float *a, int64_t stride_a, int64_t lda,
                       const float *b, int64_t stride_b, int64_t ldb, float beta, float *c,
                       int64_t stride_c, int64_t ldc);

/* The instruction set the GEMM micro-kernel uses on this CPU: "avx512", "avx2" or "generic". */
const char *pyrt_sgemm_kernel(void);

/* ---- recurrent cells ------------------------------------------------------------------ */

/* The pointwise part of an LSTM step over `rows` rows of `hidden` units. The gate
 * pre-activations, in PyTorch's order (i, f, g, o), are gates + gates_h (two [rows,
 * 4 * hidden] arrays: the input and the hidden projections; gates_h NULL: gates alone), and
 * c_prev [rows, hidden] is the previous cell state (NULL: zeros):
 *     c = sigmoid(f) * c_prev + sigmoid(i) * tanh(g),    h = sigmoid(o) * tanh(c).
 * act [rows, 4 * hidden] (NULL: not kept) receives sigmoid(i), sigmoid(f), tanh(g),
 * sigmoid(o), which the backward pass reads. Outputs must not overlap inputs. Parallel over
 * rows; bitwise the same at any thread count. */
int pyrt_lstm_cell(const float *gates, const float *gates_h, const float *c_prev, float *h,
                   float *c, float *act, int64_t rows, int64_t hidden);

/* Its gradient: from dh and dc, the gradients of h and c (either NULL: zeros), with act and c
 * as pyrt_lstm_cell wrote them and its c_prev (NULL: zeros), the gradient of the gates
 * dgates [rows, 4 * hidden] and of c_prev, dc_prev [rows, hidden] (NULL: not wanted). */
int pyrt_lstm_cell_backward(const float *dh, const float *dc, const float *act, const float *c,
                            const float *c_prev, float *dgates, float *dc_prev, int64_t rows,
                            int64_t hidden);

/* The pointwise part of a GRU step over `rows` rows of `hidden` units, from the input and
 * hidden projections gates_x and gates_h [rows, 3 * hidden] (PyTorch's order r, z, n;
 * bias_h [3 * hidden], NULL: none, is added to gates_h here) and h_prev [rows, hidden]:
 *     r = sigmoid(x_r + h_r),  z = sigmoid(x_z + h_z),  n = tanh(x_n + r * h_n),
 *     h = (1 - z) * n + z * h_prev.
 * act [rows, 4 * hidden] receives r, z, n and h_n (with its bias) for the backward pass.
 * Outputs must not overlap inputs. Parallel over rows; bitwise the same at any thread count. */
int pyrt_gru_cell(const float *gates_x, const float *gates_h, const float *bias_h,
                  const float *h_prev, float *h, float *act, int64_t rows, int64_t hidden);

/* Its gradient from dh (the gradient of h), with act as pyrt_gru_cell wrote it and h_prev:
 * the gradients of gates_x and of gates_h (before the bias: also the bias's, summed over
 * rows) [rows, 3 * hidden], and dh_prev = dh * z [rows, hidden], the part of h_prev's gradient
 * that does not pass through gates_h (add dgates_h @ W_hh for the rest). */
int pyrt_gru_cell_backward(const float *dh, const float *act, const float *h_prev,
                           float *dgates_x, float *dgates_h, float *dh_prev, int64_t rows,
                           int64_t hidden);

/* The step loops of one LSTM or GRU layer in one direction (in parallel over blocks of the
 * batch's rows, each block's steps a recurrence of its own; a small batch is one block, and
 * the parallelism is inside each step: its GEMM). xw [steps, batch, G * hidden] holds the input projection
 * of every step (G = 4 for the LSTM, 3 for the GRU; the biases before the nonlinearities
 * included), w_hh_t W_hh^T [hidden, G * hidden] row-major, w_hh W_hh [G * hidden, hidden];
 * h0, c0 [batch, hidden] the initial states. Steps run t = 0, 1, ... or, with `reverse`,
 * t = steps - 1, ..., 0; arrays by step are indexed by t either way. Bitwise the same at any
 * thread count.
 *
 * pyrt_lstm_forward writes out (h) and cells (c) [steps, batch, hidden] and, if acts is not
 * NULL, the cells' saved activations [steps, batch, 4 * hidden] (pyrt_lstm_cell's act).
 * pyrt_lstm_backward takes d_out, the gradient of out (NULL: zeros), dh and dc [batch,
 * hidden], the gradients of the final h and c (zeros for none), and writes dgates [steps,
 * batch, 4 * hidden], the gradient of xw (and, summed against h_prev, of W_hh), and in dh and
 * dc the gradients of h0 and c0. */
int pyrt_lstm_forward(int64_t steps, int64_t batch, int64_t hidden, int reverse,
                      const float *xw, const float *w_hh_t, const float *h0, const float *c0,
                      float *out, float *cells, float *acts);
int pyrt_lstm_backward(int64_t steps, int64_t batch, int64_t hidden, int reverse,
                       const float *d_out, const float *w_hh, const float *c0,
                       const float *cells, const float *acts, float *dgates, float *dh,
                       float *dc);

/* The GRU's: bias_hh [3 * hidden] (NULL: none) is W_hh's bias; acts [steps, batch,
 * 4 * hidden] (pyrt_gru_cell's act) is always written. The backward pass writes the
 * gradients of xw (dgates_x) and of the hidden projections before their bias (dgates_h, whose
 * column sums are the bias's gradient), and in dh, which holds the gradient of the final h on
 * entry, that of h0. */
int pyrt_gru_forward(int64_t steps, int64_t batch, int64_t hidden, int reverse,
                     const float *xw, const float *w_hh_t, const float *bias_hh,
                     const float *h0, float *out, float *acts);
int pyrt_gru_backward(int64_t steps, int64_t batch, int64_t hidden, int reverse,
                      const float *d_out, const float *w_hh, const float *h0, const float *out,
                      const float *acts, float *dgates_x, float *dgates_h, float *dh);

/* ---- chains of fully connected layers ------------------------------------------------- */

/* `layers` (1 to 256) fully connected layers on a batch of `batch` rows, in one call:
 *     a_0 = x [batch, dims[0]],   a_{l+1} = acts[l](a_l @ weights[l]^T + biases[l])
 * weights[l] is [dims[l+1], dims[l]]; biases may be NULL, and so may biases[l] (no bias);
 * acts[l] is PYRT_IDENTITY, PYRT_RELU, PYRT_SIGMOID or PYRT_TANH. The outputs a_1 .. a_layers
 * are written one after another into `out` (batch * (dims[1] + ... + dims[layers]) floats),
 * where the backward pass reads them. The results are bitwise those of pyrt_sgemm then
 * pyrt_bias_act layer by layer. Any thread may call it. */
int pyrt_linear_chain_forward(int64_t layers, const int64_t *dims, int64_t batch,
                              const float *const *weights, const float *const *biases,
                              const int *acts, const float *x, float *out);

/* Gradients of that chain from dy = d(loss)/d(a_layers) [batch, dims[layers]], with x and the
 * forward's `out`. needs[l] says what layer l wants: bit 1 its weight gradient, bit 2 its bias
 * gradient. `grads` holds, layer after layer, dweight_l [dims[l+1], dims[l]] then, for a layer
 * with a bias, dbias_l [dims[l+1]]; only the wanted ones are written. dx (NULL: not wanted)
 * gets d(loss)/dx [batch, dims[0]]. Bitwise the layers' own backward kernels, in order. */
int pyrt_linear_chain_backward(int64_t layers, const int64_t *dims, int64_t batch,
                               const float *const *weights, const float *const *biases,
                               const int *acts, const int *needs, const float *x,
                               const float *out, const float *dy, float *grads, float *dx);

/* ---- convolution and pooling (NCHW) --------------------------------------------------- */

/* Geometry of a 2-D convolution or pooling window: input [n, c, h, w], kernel kh x kw whose
 * taps lie dilation_h rows and dilation_w columns apart, stride and zero padding; the output
 * is [n, k, oh, ow] with oh = (h + 2*pad_h - dilation_h*(kh - 1) - 1)/stride_h + 1 (and the
 * same for ow). */
typedef struct pyrt_conv_shape {
    int64_t n, c, h, w;     /* input */
    int64_t k;              /* output channels (convolution only) */
    int64_t kh, kw;         /* window */
    int64_t stride_h, stride_w, pad_h, pad_w;
    int64_t oh, ow;         /* output, filled in by pyrt_conv_shape_init */
    /* pooling only (0 for a convolution): ceil_mode 1 rounds the output size up, as
     * PyTorch's ceil_mode=True (a last window may then hang past the padded input, but
     * starts inside the input or its leading padding); exclude_pad 1 makes average pooling
     * divide by the input pixels of each window only (PyTorch's count_include_pad=False).
     * Otherwise a window's divisor counts its padding, not what hangs past the padding. */
    int64_t ceil_mode, exclude_pad;
    /* spacing of the window's taps, 1 for adjacent taps (0 means 1, and
     * pyrt_conv_shape_init writes 1). Convolution and max pooling; average pooling takes 1
     * only, as PyTorch's. */
    int64_t dilation_h, dilation_w;
    /* convolution only: the channels form `groups` groups (0 means 1, written as 1 by
     * pyrt_conv_shape_init), c and k both divisible by it; each group of c/groups input
     * channels has k/groups filters of its own, and the weight is [k, c/groups, kh, kw].
     * groups == c is a depthwise convolution. Pooling takes 0 or 1. */
    int64_t groups;
    /* max pooling only (0 otherwise): 1 gives the ReLU of each maximum (0 for a maximum of
     * 0 or less, NaN kept), and -1 as the index of such a window, so that the backward pass
     * gives it no gradient, as ReLU's backward would: relu(max_pool2d(x)) in one pass. */
    int64_t relu;
} pyrt_conv_shape;

/* Check the geometry, compute oh, ow and write 1 for a dilation or groups of 0. Returns
 * PYRT_EINVAL if the window does not fit or the channels do not split into the groups. */
int pyrt_conv_shape_init(pyrt_conv_shape *s);

/* y[n, k, oh, ow] = conv(x[n, c, h, w], weight[k, c/groups, kh, kw]) + bias[k] (bias may be
 * NULL). */
int pyrt_conv2d_forward(const pyrt_conv_shape *s, const float *x, const float *weight,
                        const float *bias, float *y);

/* Gradients from dy [n, k, oh, ow]: dx [n, c, h, w] (may be NULL), dweight
 * [k, c/groups, kh, kw] (may be NULL), dbias [k] (may be NULL). dweight and dbias sum over the
 * batch in a fixed order. */
int pyrt_conv2d_backward(const pyrt_conv_shape *s, const float *x, const float *weight,
                         const float *dy, float *dx, float *dweight, float *dbias);

/* Pooling over [n, c, h, w] (s->k is ignored; the output has c channels), h and w at least 1
 * (PYRT_EINVAL otherwise: a window of padding alone has no maximum), groups 0 or 1, and for
 * average pooling dilation 0 or 1 (PYRT_EINVAL otherwise). Max pooling pads
 * with -inf and stores in `indices` (may be NULL) the flat h*w index of each maximum, for
 * the backward pass, or -1 for a window of padding alone (a dilation can leave one); its
 * backward returns PYRT_EINVAL, with dx not fully written, when an index other than -1 lies
 * outside [0, h*w). Average pooling divides by the window's size within the
 * padded input (kh*kw unless ceil_mode lets it hang past; padding counts as zeros), or
 * with exclude_pad by its input pixels. */
int pyrt_max_pool2d_forward(const pyrt_conv_shape *s, const float *x, float *y,
                            int64_t *indices);
int pyrt_max_pool2d_backward(const pyrt_conv_shape *s, const float *dy, const int64_t *indices,
                             float *dx);
int pyrt_avg_pool2d_forward(const pyrt_conv_shape *s, const float *x, float *y);
int pyrt_avg_pool2d_backward(const pyrt_conv_shape *s, const float *dy, float *dx);

/* ---- batch normalisation -------------------------------------------------------------- */
/* x is [n, c, m]: channel ch is plane (i, ch) of every image i, m = h*w values for images, 1 for
 * rows of features. Per-channel statistics and gradient sums are reductions over fixed leaves,
 * summed in double: bitwise the same at any thread count. Any thread. Negative sizes, sizes
 * whose product overflows, or NULL buffers where values are read or written give PYRT_EINVAL. */

/* y = (x - mean) / sqrt(var + eps) * weight + bias, per channel (weight and bias may be NULL:
 * 1 and 0). With `training`, mean and var are the batch's own (the biased variance; n*m at
 * least 2, else PYRT_EINVAL), and running_mean and running_var (each may be NULL) move towards
 * them: r = (1 - momentum) * r + momentum * stat, with the unbiased variance, as PyTorch's.
 * Otherwise they are running_mean and running_var (both needed). save_mean and save_invstd
 * receive the mean and 1 / sqrt(var + eps) used, for the backward pass. eps < 0 is EINVAL. */
int pyrt_batch_norm_forward(int64_t n, int64_t c, int64_t m, const float *x,
                            const float *weight, const float *bias, float *running_mean,
                            float *running_var, int training, double momentum, double eps,
                            float *y, float *save_mean, float *save_invstd);

/* The gradients of pyrt_batch_norm_forward from dy, given the save_mean and save_invstd it
 * gave and the same `training` (with the batch's own statistics the input gradient flows
 * through them too): dx (may be NULL, or dy itself), dweight and dbias (each may be NULL). */
int pyrt_batch_norm_backward(int64_t n, int64_t c, int64_t m, const float *x, const float *dy,
                             const float *weight, const float *save_mean,
                             const float *save_invstd, int training, float *dx, float *dweight,
                             float *dbias);

/* ---- layer normalisation -------------------------------------------------------------- */
/* x is [rows, m]: each row of m values (PyTorch's normalized_shape, flattened) is normalised
 * by its own mean and biased variance (sums of short float blocks, carried in double: see
 * csrc/kernels/layer_norm.c). weight and bias have m values each and may be NULL (1 and 0).
 * A row is one task's work (rows of 65536 values or more are split into fixed leaves); the
 * parameter gradients sum fixed groups of rows in double and add the groups in order: bitwise
 * the same at any thread count. Any thread. Negative sizes, sizes whose product overflows, or
 * NULL buffers where values are read or written give PYRT_EINVAL; PYRT_ENOMEM when the
 * backward pass cannot allocate its column sums. */

/* y = (x - mean) / sqrt(var + eps) * weight + bias per row; save_mean and save_invstd
 * (rows values each) receive the float32 mean and 1 / sqrt(var + eps) used, for the backward
 * pass (NaN for rows of no values, m == 0). Any eps is taken, as PyTorch's; a negative one
 * can give NaN. */
int pyrt_layer_norm_forward(int64_t rows, int64_t m, const float *x, const float *weight,
                            const float *bias, double eps, float *y, float *save_mean,
                            float *save_invstd);

/* The gradients of pyrt_layer_norm_forward from dy [rows, m], given the save_mean and
 * save_invstd it gave: dx [rows, m] (through the row's statistics too), dweight and dbias
 * [m] (sums over the rows; zeros when rows == 0). Each of the three may be NULL: not wanted. */
int pyrt_layer_norm_backward(int64_t rows, int64_t m, const float *x, const float *dy,
                             const float *weight, const float *save_mean,
                             const float *save_invstd, float *dx, float *dweight, float *dbias);

/* ---- optimizer updates (in place, one pass over the parameter and its state) ---------- */
/* Both store a state value (momentum buffer, m, v) below FLT_MIN in magnitude as zero: a state
 * decaying under a zero gradient would otherwise linger among subnormal numbers, on which the
 * CPU is many times slower. */

/* PyTorch's SGD: g = grad + weight_decay * param; with momentum, buf = momentum * buf +
 * (1 - dampening) * g (buf = g on the first step), g = nesterov ? g + momentum * buf : buf;
 * then param -= lr * g. momentum_buf may be NULL when momentum == 0 (and is then not read).
 * PYRT_EOVERLAP if param and momentum_buf meet, or grad meets either other than exactly. */
int pyrt_sgd_step(float *param, const float *grad, float *momentum_buf, int64_t n, double lr,
                  double momentum, double dampening, double weight_decay, int nesterov,
                  int first_step);

/* PyTorch's Adam (L2 weight decay): step counts from 1; m and v start at zero.
 * Hyper-parameters are double, as Python holds them: the per-step scalars (1 - beta,
 * beta^step, lr / bias correction) are computed in double and rounded once. PYRT_EOVERLAP
 * if two of param, m and v meet, or grad meets one of them other than exactly. */
int pyrt_adam_step(float *param, const float *grad, float *m, float *v, int64_t n, double lr,
                   double beta1, double beta2, double eps, double weight_decay, int64_t step);
