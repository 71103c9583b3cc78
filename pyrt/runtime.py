"""The thread count and the parallel loops of pyrt's C runtime, for Python callables.

Loop bodies run on the calling thread and on pool workers; each takes the GIL to run, so
Python code that releases it (NumPy, C extensions) runs in parallel. While bodies run, the BLAS
and OpenMP pools of the process are limited to one thread, so that pyrt's pool is the only one
that spreads work over the cores.
"""

import atexit
import contextlib
import operator
import os
import threading

from pyrt._pyrt_cffi import ffi, lib

__all__ = [
    "cpu_count",
    "get_num_threads",
    "max_concurrency",
    "num_threads",
    "parallel_for",
    "parallel_reduce",
    "set_num_threads",
]

MAX_THREADS = lib.PYRT_MAX_THREADS
ENV_NUM_THREADS = "PYRT_NUM_THREADS"
ENV_CPUS = "PYRT_CPUS"  # CPUs the pool may keep busy (README: threads)

_ERRORS = {
    lib.PYRT_EINVAL: (ValueError, "invalid argument"),
    lib.PYRT_ENOMEM: (MemoryError, "out of memory"),
    lib.PYRT_EAGAIN: (RuntimeError, "could not start worker threads"),
    lib.PYRT_EBUSY: (RuntimeError, "the pool is busy"),
}


def _raise_for(rc, what):
    exc, text = _ERRORS.get(rc, (RuntimeError, f"error {rc}"))
    raise exc(f"{what}: {text}")


# ---- thread count ---------------------------------------------------------------------------


def _thread_count(value, name):
    """`value` as a thread count: TypeError naming `name` when it is not an integer,
    ValueError when it is out of range."""
    try:
        if isinstance(value, bool):
            raise TypeError
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer from 1 to {MAX_THREADS}, got "
                        f"{type(value).__name__} {value!r}") from None
    if not 1 <= n <= MAX_THREADS:
        raise ValueError(f"{name} must be an integer from 1 to {MAX_THREADS}, got {n}")
    return n


def _count_from_env(name):
    """The count environment variable `name` holds (PYRT_NUM_THREADS, PYRT_CPUS), or None when
    it is unset or empty; ValueError when it is not a whole number from 1 to MAX_THREADS."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    # ASCII digits only: int() would also take "2_0" or full-width digits, which C does not
    n = int(raw) if raw.isascii() and raw.isdigit() else None
    if n is None or not 1 <= n <= MAX_THREADS:
        raise ValueError(
            f"environment variable {name}={raw!r} is invalid: expected an integer "
            f"from 1 to {MAX_THREADS} (unset it to use all {cpu_count()} available CPUs)"
        )
    return n


def cpu_count():
    """CPUs this process may run on (its affinity mask)."""
    return lib.pyrt_cpu_count()


def max_concurrency():
    """Threads that run pyrt's kernels at the same time: get_num_threads(), but at most the
    CPUs the pool may keep busy (PYRT_CPUS, else the affinity mask's CPUs, or fewer under a
    container's CPU quota). The surplus threads of a larger count sleep."""
    return lib.pyrt_max_concurrency()


def get_num_threads():
    """Threads the next parallel call may use, the calling thread included."""
    return lib.pyrt_get_num_threads()


def set_num_threads(n):
    """Use `n` threads from the next parallel call on; returns the previous count."""
    n = _thread_count(n, "n")
    previous = lib.pyrt_set_num_threads(n)
    if previous < 0:
        _raise_for(previous, f"set_num_threads({n})")
    return previous


@contextlib.contextmanager
def num_threads(n):
    """``with pyrt.num_threads(n):`` runs the block with `n` threads, then restores the count."""
    previous = set_num_threads(n)
    try:
        yield n
    finally:
        set_num_threads(previous)


# ---- limiting other thread pools --------------------------------------------------------------


class _OtherPools:
    """Holds the process's BLAS/OpenMP pools at one thread while Python bodies run on workers.

    Building a threadpoolctl controller walks every loaded library, which costs far more than a
    small loop, so it is built once and rebuilt only when new modules were imported (a new
    BLAS may have come with them). Its library controllers are then called directly, a get and
    a set each way (about 2 us, where threadpoolctl's limit() and restore cost 4). Nested and
    concurrent loops share one limit: the first to enter sets it, the last to leave restores
    it. `depth` is the number of parallel calls in flight.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self.depth = 0
        self._saved = []  # (library controller, its thread count before the limit)
        self._libraries = []
        self._modules_seen = -1

    def _select(self):
        import sys

        import threadpoolctl

        if len(sys.modules) != self._modules_seen:
            self._modules_seen = len(sys.modules)
            controller = threadpoolctl.ThreadpoolController()
            self._libraries = controller.select(user_api=["blas", "openmp"]).lib_controllers
        return self._libraries

    def enter(self):
        with self._lock:
            self.depth += 1
            if self.depth == 1:
                for library in self._select():
                    threads = library.get_num_threads()
                    if threads is not None and threads != 1:
                        library.set_num_threads(1)
                        self._saved.append((library, threads))

    def _restore(self):
        for library, threads in self._saved:
            library.set_num_threads(threads)
        self._saved = []

    def leave(self):
        with self._lock:
            self.depth -= 1
            if self.depth == 0:
                self._restore()

    def reset_after_fork(self):
        # a fork taken while another thread was inside a loop: the child has no such loop,
        # and its pools get their thread counts back
        self._lock = threading.Lock()
        self.depth = 0
        self._restore()
        self._modules_seen = -1


_other_pools = _OtherPools()


@contextlib.contextmanager
def _parallel_section(parallel):
    if not parallel:
        yield
        return
    _other_pools.enter()
    try:
        yield
    finally:
        _other_pools.leave()


# ---- loops ----------------------------------------------------------------------------------


# Per-thread settings of the layers above (grad mode) that a loop's bodies must see as its
# caller does, whichever thread runs them: (get, set) pairs, get read on the calling thread
# when the loop starts, set on the thread of each chunk around the body.
_carried = []


def carry_thread_state(get, set_):
    """Make every chunk of a parallel loop run with ``set_(get())`` as read on the calling
    thread (then restored): for a thread-local setting such as grad mode."""
    _carried.append((get, set_))


class _Job:
    """State shared by the chunks of one parallel call; C holds it through a cffi handle."""

    __slots__ = ("combine", "error", "fn", "leaf_size", "state", "values")

    def __init__(self, fn, combine=None, leaf_size=0):
        self.fn = fn
        self.combine = combine
        self.leaf_size = leaf_size
        self.values = {}
        self.error = None
        self.state = [get() for get, _ in _carried]

    def call(self, fn, *args):
        """fn(*args) with the caller's thread state (carry_thread_state)."""
        before = [get() for get, _ in _carried]
        if before == self.state:  # the caller's thread, or one already in the same state
            return fn(*args)
        for (_, set_), value in zip(_carried, self.state):
            set_(value)
        try:
            return fn(*args)
        finally:
            for (_, set_), value in zip(_carried, before):
                set_(value)

    def fail(self, exc):
        if self.error is None:
            self.error = exc
        return 1  # nonzero: the runtime starts no further chunk


def _escaped(exc_type, exc, tb):
    """cffi's onerror for the callbacks below: an exception that escaped a callback, raised
    before its own try could catch it (a Ctrl-C arriving as the callback starts). It fails the
    chunk (error=1, never a silent success) and is recorded on the job, found through the
    callback's `ctx` argument, to be raised in the caller."""
    ctx = tb.tb_frame.f_locals.get("ctx") if tb is not None else None
    if ctx is not None:  # (without it the chunk still fails: _finish raises a RuntimeError)
        ffi.from_handle(ctx).fail(exc)


@ffi.def_extern(error=1, onerror=_escaped)
def pyrt_py_range(ctx, start, stop):
    job = ffi.from_handle(ctx)
    if job.error is not None:
        return 1
    try:
        job.call(job.fn, start, stop)
    except BaseException as exc:  # noqa: BLE001 (KeyboardInterrupt too: it must reach the caller)
        return job.fail(exc)
    return 0


@ffi.def_extern(error=1, onerror=_escaped)
def pyrt_py_leaf(ctx, start, stop, acc):
    # the accumulator C carries up the tree is the leaf's start index; values live in Python
    job = ffi.from_handle(ctx)
    if job.error is not None:
        return 1
    try:
        job.values[start] = job.call(job.fn, start, stop)
    except BaseException as exc:  # noqa: BLE001 (as in pyrt_py_range)
        return job.fail(exc)
    ffi.cast("int64_t *", acc)[0] = start
    return 0


@ffi.def_extern(error=1, onerror=_escaped)
def pyrt_py_combine(ctx, left, right):
    job = ffi.from_handle(ctx)
    if job.error is not None:
        return 1
    lkey = ffi.cast("int64_t *", left)[0]
    rkey = ffi.cast("int64_t *", right)[0]
    try:
        job.values[lkey] = job.call(job.combine, job.values[lkey], job.values.pop(rkey))
    except BaseException as exc:  # noqa: BLE001 (as in pyrt_py_range)
        return job.fail(exc)
    return 0


_INT64_MAX = 2**63 - 1


def _count(value, name):
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None
    if not 0 <= n <= _INT64_MAX:
        raise ValueError(f"{name} must be from 0 to 2**63 - 1, got {n}")
    return n


def _grain(grain):
    if grain is None:
        return None
    g = _count(grain, "grain")
    if g == 0:
        raise ValueError("grain must be >= 1 (or None to let pyrt choose)")
    return g


def _finish(job, rc, what):
    if job.error is not None:
        error, job.error = job.error, None
        raise error
    if rc < 0:
        _raise_for(rc, what)
    if rc > 0:  # a chunk failed without recording why (see _escaped)
        raise RuntimeError(f"{what}: a callback failed")


def parallel_for(n, fn, *, grain=None):
    """Call ``fn(start, stop)`` on disjoint ranges that together cover ``range(n)``.

    Ranges hold at least `grain` indices (but the last); by default pyrt picks about four per
    thread. The calling thread runs ranges too, and hands halves of what is left to workers,
    waking them if need be: a Python body is taken to cost more than a wake-up, so a loop of
    two ranges runs on two threads. If `fn` raises, no new range starts and the first
    exception is raised here.
    """
    n = _count(n, "n")
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    grain = _grain(grain)
    if n == 0:
        return
    if grain is None:
        grain = max(1, -(-n // (4 * get_num_threads())))
    job = _Job(fn)
    # the C loop splits only with two grains or more (pyrt_parallel_for_coarse): a loop that
    # runs on the calling thread alone leaves the other pools as they are
    with _parallel_section(n // 2 >= grain and get_num_threads() > 1):
        rc = lib.pyrt_parallel_for_coarse(n, grain, lib.pyrt_py_range, ffi.new_handle(job))
    _finish(job, rc, "parallel_for")


def reduce_leaf_size(n, grain=None):
    """The fixed leaf size parallel_reduce uses for `n` indices (64 leaves by default)."""
    n = _count(n, "n")
    grain = _grain(grain)
    return grain if grain is not None else max(1, -(-n // 64))


def parallel_reduce(n, fn, combine, *, grain=None):
    """Reduce ``range(n)``: ``fn(start, stop)`` gives the value of a range and
    ``combine(left, right)`` merges two neighbours, the left one covering the lower indices.

    The ranges (leaves) have `grain` indices, or n/64 by default, whatever the thread count, and
    values are merged in a fixed binary tree over them, so the result is the same on any number
    of threads (bitwise, for floats). ``combine`` need not be commutative. For n == 0 the
    result is ``fn(0, 0)``.
    """
    n = _count(n, "n")
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if not callable(combine):
        raise TypeError(f"combine must be callable, got {type(combine).__name__}")
    leaf = reduce_leaf_size(n, grain)
    if n == 0:
        return fn(0, 0)
    job = _Job(fn, combine, leaf)
    acc = ffi.new("int64_t *")
    with _parallel_section(n > leaf and get_num_threads() > 1):
        rc = lib.pyrt_parallel_reduce_coarse(
            n, leaf, ffi.sizeof("int64_t"), lib.pyrt_py_leaf, lib.pyrt_py_combine,
            ffi.new_handle(job), acc,
        )
    _finish(job, rc, "parallel_reduce")
    return job.values[acc[0]]


# ---- process life ---------------------------------------------------------------------------


def _after_fork_in_child():
    # The C runtime rebuilds its pool on first use (pthread_atfork); the limiter's lock may
    # have been held by a thread that does not exist in the child.
    _other_pools.reset_after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _shutdown():
    """At exit, stop the workers before the interpreter goes away under them; unless a loop
    of Python bodies is still running (in a daemon thread, say): its workers finish a range
    only when its bodies do, which may be never, and waiting for them would hang the exit.
    They are left to the process's end, as the daemon thread is."""
    if _other_pools.depth == 0:
        lib.pyrt_shutdown()


atexit.register(_shutdown)


def _configure_from_env():
    # PYRT_CPUS is read by the C runtime (csrc/runtime/cpus.c); checked here so that a typo is
    # an error rather than silently ignored
    _count_from_env(ENV_CPUS)
    n = _count_from_env(ENV_NUM_THREADS)
    if n is not None:
        lib.pyrt_set_num_threads(n)


_configure_from_env()
