"""parallel_for and parallel_reduce against sequential references, at many thread counts."""

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyrt._pyrt_cffi import lib

import pyrt

THREADS = [1, 2, 3, 4, 8]


def visit_counts(n, grain, threads):
    counts = np.zeros(n, dtype=np.int64)
    ranges = []
    lock = threading.Lock()

    def body(start, stop):
        with lock:
            ranges.append((start, stop))
        counts[start:stop] += 1

    with pyrt.num_threads(threads):
        pyrt.parallel_for(n, body, grain=grain)
    return counts, ranges


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 5000),
    grain=st.one_of(st.none(), st.integers(1, 700)),
    threads=st.sampled_from(THREADS),
)
def test_every_index_visited_once(n, grain, threads):
    counts, ranges = visit_counts(n, grain, threads)
    assert (counts == 1).all()
    for start, stop in ranges:
        assert 0 <= start < stop <= n
        if grain is not None and stop != n:
            assert stop - start >= grain


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 3000), grain=st.one_of(st.none(), st.integers(1, 400)),
       threads=st.sampled_from(THREADS))
def test_reduce_matches_sequential(n, grain, threads):
    with pyrt.num_threads(threads):
        got = pyrt.parallel_reduce(n, lambda a, b: sum(range(a, b)), lambda x, y: x + y,
                                   grain=grain)
    assert got == sum(range(n))


def test_reduce_combine_order_is_left_to_right():
    # string concatenation is not commutative: any reordering of leaves shows
    for threads in THREADS:
        with pyrt.num_threads(threads):
            got = pyrt.parallel_reduce(
                300, lambda a, b: "".join(chr(65 + i % 26) for i in range(a, b)),
                lambda x, y: x + y, grain=7)
        assert got == "".join(chr(65 + i % 26) for i in range(300))


def float32_sum(x, threads, grain=None):
    with pyrt.num_threads(threads):
        return pyrt.parallel_reduce(
            len(x), lambda a, b: np.add.reduce(x[a:b], dtype=np.float32),
            lambda u, v: np.float32(u + v), grain=grain)


@pytest.mark.parametrize("n", [1, 1000, 123_457])
def test_float_reduce_bitwise_identical_across_threads(n):
    rng = np.random.default_rng(1234)
    x = (rng.standard_normal(n) * 1e3).astype(np.float32)
    results = {float32_sum(x, t).tobytes() for t in range(1, 9) for _ in range(3)}
    assert len(results) == 1
    assert float32_sum(x, 1) == pytest.approx(float(x.astype(np.float64).sum()), rel=1e-3,
                                               abs=1e-1)


def test_reduce_of_empty_range_is_fn_of_empty_range():
    assert pyrt.parallel_reduce(0, lambda a, b: (a, b), lambda x, y: None) == (0, 0)


def test_reduce_leaf_size_depends_on_n_only():
    for t in THREADS:
        with pyrt.num_threads(t):
            assert pyrt.runtime.reduce_leaf_size(10_000) == 157
    assert pyrt.runtime.reduce_leaf_size(5, grain=2) == 2


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_nested_loops_cover_everything(threads):
    n_outer, n_inner = 13, 101
    counts = np.zeros((n_outer, n_inner), dtype=np.int64)

    def outer(a, b):
        for i in range(a, b):
            def inner(c, d, i=i):
                counts[i, c:d] += 1
            pyrt.parallel_for(n_inner, inner, grain=5)

    with pyrt.num_threads(threads):
        pyrt.parallel_for(n_outer, outer, grain=1)
    assert (counts == 1).all()


def test_nested_reduce_inside_loop():
    out = np.zeros(20, dtype=np.int64)

    def outer(a, b):
        for i in range(a, b):
            out[i] = pyrt.parallel_reduce(100 * i, lambda s, e: sum(range(s, e)),
                                          lambda x, y: x + y, grain=17)

    with pyrt.num_threads(4):
        pyrt.parallel_for(20, outer, grain=1)
    assert out.tolist() == [sum(range(100 * i)) for i in range(20)]


class Boom(Exception):
    pass


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("where", ["first", "last", "all"])
def test_exception_from_any_chunk_reaches_caller(threads, where):
    n = 200
    bad = {"first": {0}, "last": {n - 1}, "all": set(range(n))}[where]

    def body(a, b):
        for i in range(a, b):
            if i in bad:
                raise Boom(i)

    with pyrt.num_threads(threads):
        with pytest.raises(Boom) as info:
            pyrt.parallel_for(n, body, grain=3)
        assert info.value.args[0] in bad
        assert info.traceback[-1].name == "body"  # the traceback reaches into the chunk
        # the pool is still usable afterwards
        counts, _ = visit_counts(1000, 10, threads)
        assert (counts == 1).all()


def test_exception_stops_remaining_chunks():
    calls = []

    def body(a, b):
        calls.append(a)
        raise Boom()

    with pyrt.num_threads(1):
        with pytest.raises(Boom):
            pyrt.parallel_for(1000, body, grain=1)
    assert calls == [0]


@pytest.mark.parametrize("side", ["leaf_left", "leaf_right", "combine"])
def test_reduce_exception_from_either_side(side):
    def fn(a, b):
        if (side == "leaf_left" and a == 0) or (side == "leaf_right" and b == 1000):
            raise Boom(side)
        return b - a

    def combine(x, y):
        if side == "combine":
            raise Boom(side)
        return x + y

    for threads in (1, 2, 4):
        with pyrt.num_threads(threads):
            with pytest.raises(Boom, match=side):
                pyrt.parallel_reduce(1000, fn, combine, grain=10)
            assert pyrt.parallel_reduce(1000, lambda a, b: b - a, lambda x, y: x + y) == 1000


def test_exception_in_nested_loop_propagates_through_outer():
    def outer(a, b):
        pyrt.parallel_for(50, lambda c, d: (_ for _ in ()).throw(Boom("inner")), grain=1)

    with pyrt.num_threads(2):
        with pytest.raises(Boom, match="inner"):
            pyrt.parallel_for(10, outer, grain=1)


def test_base_exceptions_propagate():
    def body(a, b):
        raise SystemExit(3)

    with pytest.raises(SystemExit):
        pyrt.parallel_for(10, body, grain=1)


def test_concurrent_callers_from_eight_threads():
    errors = []
    results = {}

    def caller(k):
        try:
            for rep in range(15):
                n = 500 + 37 * k + rep
                counts = np.zeros(n, dtype=np.int64)

                def body(a, b, counts=counts):
                    counts[a:b] += 1

                pyrt.parallel_for(n, body, grain=1 + k)
                assert (counts == 1).all()
                total = pyrt.parallel_reduce(n, lambda a, b: sum(range(a, b)),
                                             lambda x, y: x + y, grain=9)
                assert total == n * (n - 1) // 2
            results[k] = True
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    with pyrt.num_threads(2):
        threads = [threading.Thread(target=caller, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not any(t.is_alive() for t in threads), "a caller deadlocked"
    assert not errors, errors
    assert len(results) == 8


def test_loop_uses_workers_when_asked_and_only_the_caller_at_one_thread():

    def where(threads):
        seen = set()
        lock = threading.Lock()

        def body(a, b):
            time.sleep(0.002)  # releases the GIL, so workers can take chunks
            with lock:
                seen.add(threading.get_ident())

        with pyrt.num_threads(threads):
            pyrt.parallel_for(64, body, grain=1)
        return seen

    assert where(1) == {threading.get_ident()}
    assert len(where(4)) > 1


def test_parallel_speedup_for_gil_releasing_work():
    # sleeping bodies release the GIL: 4 threads must overlap them

    def run(threads):
        with pyrt.num_threads(threads):
            t0 = time.perf_counter()
            pyrt.parallel_for(16, lambda a, b: time.sleep(0.01 * (b - a)), grain=1)
            return time.perf_counter() - t0

    assert run(4) < 0.75 * run(1)


@pytest.mark.parametrize("bad_n", [-1, -100])
def test_negative_n_raises_value_error(bad_n):
    with pytest.raises(ValueError, match=r"n must be from 0 to 2\*\*63 - 1"):
        pyrt.parallel_for(bad_n, lambda a, b: None)
    with pytest.raises(ValueError, match=r"n must be from 0 to 2\*\*63 - 1"):
        pyrt.parallel_reduce(bad_n, lambda a, b: 0, lambda x, y: x)


@pytest.mark.parametrize("bad", [1.5, "3", None, True])
def test_non_integer_n_raises_type_error(bad):
    with pytest.raises(TypeError, match="n must be an integer"):
        pyrt.parallel_for(bad, lambda a, b: None)


@pytest.mark.parametrize("bad", [0, -3])
def test_bad_grain_raises_value_error(bad):
    with pytest.raises(ValueError, match="grain"):
        pyrt.parallel_for(10, lambda a, b: None, grain=bad)


def test_non_callable_raises_type_error():
    with pytest.raises(TypeError, match="fn must be callable"):
        pyrt.parallel_for(10, 3)
    with pytest.raises(TypeError, match="combine must be callable"):
        pyrt.parallel_reduce(10, lambda a, b: 0, None)


def test_numpy_integers_accepted():
    counts = np.zeros(10, dtype=np.int64)
    pyrt.parallel_for(np.int64(10), lambda a, b: counts.__setitem__(slice(a, b), 1),
                      grain=np.int32(3))
    assert counts.sum() == 10


def test_workers_sleep_when_idle():

    with pyrt.num_threads(4):
        pyrt.parallel_for(100, lambda a, b: time.sleep(0.001), grain=1)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if lib.pyrt_workers_sleeping() >= 3:
                break
            time.sleep(0.01)
        assert lib.pyrt_workers_sleeping() >= 3


@pytest.mark.parametrize("threads", [1, 2])
def test_huge_counts_and_grains_are_exact_not_overflowed(threads):
    # n + grain - 1 and 3 * grain overflow int64 here: leaf counts and split tests must not
    big = 2**63 - 1
    with pyrt.num_threads(threads):
        assert pyrt.parallel_reduce(10, lambda a, b: [(a, b)], lambda x, y: x + y,
                                    grain=big) == [(0, 10)]
        leaves = pyrt.parallel_reduce(big, lambda a, b: [(a, b)], lambda x, y: x + y,
                                      grain=2**62)
        assert leaves == [(0, 2**62), (2**62, big)]
        seen = []
        pyrt.parallel_for(100, lambda a, b: seen.append((a, b)), grain=big - 50)
        assert seen == [(0, 100)]
        seen = []
        pyrt.parallel_for(big, lambda a, b: seen.append((a, b)), grain=big // 2)
        assert sorted(seen)[0][0] == 0 and max(b for _, b in seen) == big
    for bad in (2**63, -(2**63)):
        with pytest.raises(ValueError, match="n must be from 0 to"):
            pyrt.parallel_for(bad, lambda a, b: None)
        with pytest.raises(ValueError, match="grain must be from 0 to"):
            pyrt.parallel_reduce(4, lambda a, b: 0, lambda x, y: x, grain=bad)


def _raise_on_entry(name):
    """A profile hook raising KeyboardInterrupt as the callback `name` starts, before its
    body's try: what a Ctrl-C arriving at that moment does."""
    def hook(frame, event, arg):
        if event == "call" and frame.f_code.co_name == name:
            sys.setprofile(None)
            raise KeyboardInterrupt
    return hook


@pytest.mark.parametrize("callback", ["pyrt_py_range", "pyrt_py_leaf", "pyrt_py_combine"])
def test_an_exception_escaping_a_callback_reaches_the_caller(callback):
    # it must fail the chunk (not pass for a success that skipped the body) and be raised
    ran = []
    with pyrt.num_threads(1), pytest.raises(KeyboardInterrupt):
        sys.setprofile(_raise_on_entry(callback))
        try:
            if callback == "pyrt_py_range":
                pyrt.parallel_for(10, lambda a, b: ran.append((a, b)), grain=1)
            else:
                pyrt.parallel_reduce(8, lambda a, b: ran.append((a, b)) or a,
                                     lambda x, y: x, grain=1)
        finally:
            sys.setprofile(None)
    assert pyrt.parallel_reduce(8, lambda a, b: b - a, lambda x, y: x + y, grain=1) == 8


def _workers_asleep(count):
    """Wait until `count` workers sleep: a worker that has just finished a task is for a moment
    neither asleep nor looking for work, and a loop starting then is offered to nobody (it
    runs whole on its caller, which is correct but not what these tests look at)."""
    import time

    pyrt.parallel_for(count + 1, lambda a, b: time.sleep(0.001), grain=1)  # started, if not
    deadline = time.monotonic() + 20
    while lib.pyrt_workers_sleeping() < count and time.monotonic() < deadline:
        time.sleep(0.001)


def test_two_heavy_chunks_run_on_two_threads():
    # a Python body costs more than waking a worker: two chunks are worth two threads. Each
    # chunk waits (GIL released) for the other to start, which only two threads can do; the
    # long timeout leaves room for a slow wake-up on a busy machine
    seen = {}
    lock = threading.Lock()
    both = threading.Barrier(2, timeout=20)

    def body(a, b):
        both.wait()
        with lock:
            seen[(a, b)] = threading.get_ident()

    with pyrt.num_threads(2):
        _workers_asleep(1)
        pyrt.parallel_for(2, body, grain=1)
        assert sorted(seen) == [(0, 1), (1, 2)] and len(set(seen.values())) == 2
        seen.clear()
        both.reset()
        _workers_asleep(1)
        pyrt.parallel_reduce(2, lambda a, b: body(a, b) or 0, lambda x, y: x, grain=1)
        assert len(set(seen.values())) == 2


def _blas_threads():
    from threadpoolctl import threadpool_info

    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_other_pools_are_limited_only_while_the_loop_can_run_in_parallel():
    outside = _blas_threads()
    if not outside or max(outside) == 1:
        pytest.skip("no multi-threaded BLAS to limit")
    inside = []
    with pyrt.num_threads(2):
        pyrt.parallel_for(1, lambda a, b: inside.append(_blas_threads()), grain=1)
        assert inside == [outside]  # one range: it runs alone, BLAS keeps its threads
        inside.clear()
        pyrt.parallel_for(2, lambda a, b: inside.append(_blas_threads()), grain=1)
        assert inside and all(t == [1] * len(outside) for t in inside)
    assert _blas_threads() == outside


def test_a_fork_during_a_loop_gives_the_child_its_blas_threads_back():
    outside = _blas_threads()
    if not outside or max(outside) == 1:
        pytest.skip("no multi-threaded BLAS to limit")
    from pyrt.runtime import _other_pools

    _other_pools.enter()  # as a loop in another thread would have
    try:
        pid = os.fork()
        if pid == 0:
            os._exit(0 if _blas_threads() == outside else 1)
        assert os.waitpid(pid, 0)[1] == 0
    finally:
        _other_pools.leave()


def test_exit_does_not_wait_for_a_loop_in_a_daemon_thread():
    code = """if True:
        import threading, time, pyrt
        pyrt.set_num_threads(2)
        body = lambda a, b: time.sleep(0.01)
        threading.Thread(target=lambda: pyrt.parallel_for(10**6, body, grain=1),
                         daemon=True).start()
        time.sleep(0.3)
        print("exiting", flush=True)
    """
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.stdout == "exiting\n", proc.stderr[-2000:]


@pytest.mark.parametrize("threads", [1, 2])
def test_bodies_run_in_the_callers_grad_mode_on_every_thread(threads):
    seen = set()
    lock = threading.Lock()
    # on 2 threads the first two chunks wait for each other (GIL released), so a worker
    # certainly runs one of them however slowly it wakes
    started = threading.Barrier(threads, timeout=20)

    def record(a, b):
        with lock:
            seen.add((threading.get_ident(), pyrt.is_grad_enabled()))

    def body(a, b):
        started.wait()
        record(a, b)

    with pyrt.num_threads(threads):
        with pyrt.no_grad():
            _workers_asleep(threads - 1)
            pyrt.parallel_for(threads, body, grain=1)
            pyrt.parallel_for(16, record, grain=1)
            assert pyrt.parallel_reduce(8, lambda a, b: pyrt.is_grad_enabled(),
                                        lambda x, y: x or y, grain=1) is False
        assert {mode for _, mode in seen} == {False}
        assert len({t for t, _ in seen}) == threads  # the workers' chunks were checked too
        seen.clear()
        started.reset()
        _workers_asleep(threads - 1)
        pyrt.parallel_for(threads, body, grain=1)
        assert {mode for _, mode in seen} == {True}
    assert pyrt.is_grad_enabled()
