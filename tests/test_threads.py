"""Thread-count API, environment variable, threadpoolctl, fork and Ctrl-C."""

import ctypes
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import threadpoolctl

import pyrt


def run_python(code, env_extra=None, timeout=60):
    env = dict(os.environ)
    env.pop("PYRT_NUM_THREADS", None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_default_is_the_affinity_mask():
    out = run_python("import os, pyrt; print(pyrt.get_num_threads(), "
                     "len(os.sched_getaffinity(0)))")
    assert out.returncode == 0, out.stderr
    got, want = out.stdout.split()
    assert got == want


def test_default_follows_a_narrower_affinity_mask():
    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs an affinity mask of two CPUs or more")
    cpu = min(os.sched_getaffinity(0))
    out = run_python(f"import os; os.sched_setaffinity(0, {{{cpu}}}); import pyrt; "
                     "print(pyrt.get_num_threads())")
    assert out.stdout.strip() == "1", out.stderr


def test_env_var_sets_the_count():
    out = run_python("import pyrt; print(pyrt.get_num_threads())", {"PYRT_NUM_THREADS": "3"})
    assert out.stdout.strip() == "3", out.stderr


@pytest.mark.parametrize("name", ["PYRT_NUM_THREADS", "PYRT_CPUS"])
@pytest.mark.parametrize("value", ["0", "-2", "abc", "2.5", "100000", "2_0", "\uff12", "0x2"])
def test_bad_env_var_gives_clear_error(name, value):
    out = run_python("import pyrt", {name: value})
    assert out.returncode != 0
    assert name in out.stderr and "expected an integer" in out.stderr


def test_kernels_keep_no_more_threads_awake_than_cpus():
    # 4 threads on what the pool is told is 1 CPU: the kernels cut their work for 1 thread
    # (pyrt_max_concurrency), the results are those of 1 thread, bitwise, and the count
    # itself stays as set
    code = """
    import numpy as np, pyrt
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((300, 200), np.float32), rng.standard_normal((200, 500), np.float32)
    x = rng.standard_normal(1 << 20).astype(np.float32)
    def run():
        return pyrt.ops.matmul(a, b), pyrt.ops.sum(x), pyrt.ops.exp(x)
    with pyrt.num_threads(1):
        want = run()
    print(pyrt.get_num_threads(), pyrt.max_concurrency(), pyrt.cpu_count())
    got = run()
    print(all(np.array_equal(g, w) for g, w in zip(got, want)))
    """
    out = run_python(code, {"PYRT_NUM_THREADS": "4", "PYRT_CPUS": "1"})
    assert out.returncode == 0, out.stderr
    counts, same = out.stdout.split("\n")[:2]
    threads, concurrency, cpus = map(int, counts.split())
    assert (threads, concurrency) == (4, 1) and cpus >= 1
    assert same == "True"
    # unset, the CPUs of the affinity mask (or a smaller quota) cap it
    out = run_python("import pyrt; pyrt.set_num_threads(64); "
                     "print(pyrt.max_concurrency(), pyrt.cpu_count())")
    concurrency, cpus = map(int, out.stdout.split())
    assert 1 <= concurrency <= cpus


def test_set_returns_previous_and_takes_effect():
    original = pyrt.get_num_threads()
    try:
        assert pyrt.set_num_threads(3) == original
        assert pyrt.get_num_threads() == 3
        assert pyrt.set_num_threads(1) == 3
        assert pyrt.get_num_threads() == 1
    finally:
        pyrt.set_num_threads(original)


def test_context_manager_restores_even_on_error():
    original = pyrt.get_num_threads()
    with pytest.raises(KeyError):
        with pyrt.num_threads(5):
            assert pyrt.get_num_threads() == 5
            raise KeyError
    assert pyrt.get_num_threads() == original


@pytest.mark.parametrize("bad, error", [
    (0, ValueError), (-1, ValueError), (10**6, ValueError),
    (2.5, TypeError), ("4", TypeError), (None, TypeError), (True, TypeError)])
def test_bad_counts_raise(bad, error):
    # a count out of range is a ValueError, anything but an integer a TypeError (as torch)
    with pytest.raises(error, match="n must be an integer from 1"):
        pyrt.set_num_threads(bad)
    with pytest.raises(error):
        with pyrt.num_threads(bad):
            pass


def test_threadpoolctl_lists_and_limits_pyrt():
    info = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "pyrt"]
    assert len(info) == 1
    assert info[0]["num_threads"] == pyrt.get_num_threads()
    assert info[0]["version"] == pyrt.__version__
    original = pyrt.get_num_threads()
    with threadpoolctl.threadpool_limits(1):
        assert pyrt.get_num_threads() == 1
    assert pyrt.get_num_threads() == original
    with threadpoolctl.threadpool_limits(limits=2, user_api="pyrt"):
        assert pyrt.get_num_threads() == 2
    assert pyrt.get_num_threads() == original


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="csrc/exports.map is for Linux")
def test_the_library_exports_the_c_api_only():
    # threadpoolctl reaches pyrt.h's API through ctypes; the runtime's internals stay local, so
    # that the library's calls among them are direct (pyrt/_build.py)
    from pyrt import _pyrt_cffi

    lib = ctypes.CDLL(_pyrt_cffi.__file__)
    assert lib.pyrt_get_num_threads() == pyrt.get_num_threads()
    for internal in ("g_num_threads", "futex_wait", "gemm_kernel_get"):
        with pytest.raises(AttributeError):
            getattr(lib, internal)


def test_blas_is_limited_to_one_thread_inside_bodies():
    blas = threadpoolctl.ThreadpoolController().select(user_api=["blas", "openmp"])
    if not blas.lib_controllers:
        pytest.skip("no BLAS/OpenMP library loaded")
    seen = []

    def body(a, b):
        seen.extend(c.num_threads for c in
                    threadpoolctl.ThreadpoolController().select(user_api="blas").lib_controllers)
        time.sleep(0.001)

    with blas.limit(limits=2):
        before = [c.num_threads for c in blas.lib_controllers]
        with pyrt.num_threads(2):
            pyrt.parallel_for(8, body, grain=1)
        after = [c.num_threads for c in
                 threadpoolctl.ThreadpoolController().select(
                     user_api=["blas", "openmp"]).lib_controllers]
    assert seen and set(seen) == {1}
    assert before == after


FORK_CHILD = """
import os, sys, numpy as np, pyrt
pyrt.set_num_threads(2)
pyrt.parallel_for(1000, lambda a, b: None, grain=10)   # the parent's pool is running
pid = os.fork()
if pid == 0:
    counts = np.zeros(5000, dtype=np.int64)
    def body(a, b):
        counts[a:b] += 1
    pyrt.parallel_for(5000, body, grain=7)
    total = pyrt.parallel_reduce(5000, lambda a, b: sum(range(a, b)), lambda x, y: x + y)
    os._exit(0 if (counts == 1).all() and total == 5000 * 4999 // 2 else 1)
_, status = os.waitpid(pid, 0)
counts = np.zeros(5000, dtype=np.int64)
def body(a, b):
    counts[a:b] += 1
pyrt.parallel_for(5000, body, grain=7)
print(os.waitstatus_to_exitcode(status), int((counts == 1).all()))
"""


def test_fork_child_gets_fresh_pool_and_parent_is_unaffected():
    out = run_python(FORK_CHILD, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "1"]


def _child_sum(n):
    return pyrt.parallel_reduce(n, lambda a, b: sum(range(a, b)), lambda x, y: x + y, grain=3)


def test_multiprocessing_fork_start_method():
    pyrt.parallel_for(100, lambda a, b: None, grain=1)  # make sure our pool exists first
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as workers:
        got = workers.map(_child_sum, [10, 100, 1000], chunksize=1)
    assert got == [45, 4950, 499500]


def test_ctrl_c_interrupts_a_long_loop_promptly():
    # the child takes Ctrl-C as a terminal would give it: a process started in the
    # background of a shell without job control inherits SIGINT ignored, and never sees it
    code = """
    import os, signal, threading, time, pyrt
    signal.signal(signal.SIGINT, signal.default_int_handler)
    pyrt.set_num_threads(2)
    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
    t0 = time.monotonic()
    try:
        pyrt.parallel_for(100000, lambda a, b: time.sleep(0.001), grain=1)
    except KeyboardInterrupt:
        print("interrupted after", round(time.monotonic() - t0, 2))
    """
    t0 = time.monotonic()
    out = run_python(code, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "interrupted after" in out.stdout
    assert float(out.stdout.split()[-1]) < 5.0
    assert time.monotonic() - t0 < 30


def test_interpreter_exits_cleanly_with_busy_pool():
    code = """
    import pyrt
    pyrt.set_num_threads(4)
    pyrt.parallel_for(10000, lambda a, b: None, grain=1)
    """
    out = run_python(code)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""


def test_sigint_goes_to_main_thread_not_workers():
    # workers block all signals, so a handler installed by the application runs as usual
    got = []
    previous = signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
    try:
        with pyrt.num_threads(4):
            pyrt.parallel_for(64, lambda a, b: time.sleep(0.001), grain=1)
            os.kill(os.getpid(), signal.SIGUSR1)
            time.sleep(0.05)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert got == [1]


def test_numpy_work_scales_correctly():
    x = np.arange(1_000_000, dtype=np.float64)
    out = np.empty_like(x)

    def body(a, b):
        np.multiply(x[a:b], 2.0, out=out[a:b])

    pyrt.parallel_for(len(x), body)
    np.testing.assert_array_equal(out, x * 2)


def test_a_small_network_never_wakes_a_worker():
    # the XOR step's kernels are each far below a chunk's worth of work: at 2 threads they
    # must run on the caller alone, with no worker started (a worker that is woken for them
    # is what makes small networks slower with more threads); the MLP's first layer, in
    # the same process, does start them
    result = run_python("""
        import numpy as np, pyrt
        from pyrt import nn, optim
        from pyrt._pyrt_cffi import lib
        from pyrt.cli.models import xor_net
        from pyrt.data import make_xor
        pyrt.manual_seed(0)
        model, crit = xor_net(), nn.BCEWithLogitsLoss()
        opt = optim.SGD(model.parameters(), lr=0.01)
        x, y = (pyrt.Tensor(a) for a in make_xor(32, seed=0))
        for _ in range(300):
            loss = crit(model(x), y); opt.zero_grad(); loss.backward(); opt.step()
        small = lib.pyrt_workers_started()
        big = nn.Linear(784, 128)
        big(pyrt.randn(256, 784)).sum().backward()
        print(small, lib.pyrt_workers_started())
    """, {"PYRT_NUM_THREADS": "2"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "1"]
