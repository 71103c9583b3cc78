"""The memory of the ops' results: large arrays come from pyrt's buffer cache, which keeps a
freed block for the next array of its size (csrc/runtime/buffers.c, pyrt/ops/_memory.py)."""

import gc
import os
import pickle
import threading

import numpy as np
import pytest
from pyrt._pyrt_cffi import lib

import pyrt
from pyrt import ops
from pyrt.ops._memory import empty

LARGE = (512, 1024)  # 2 MiB of float32: well above PYRT_BUFFER_MIN_BYTES
NBYTES = 512 * 1024 * 4


def idle():
    return lib.pyrt_buffer_idle_bytes()


@pytest.fixture(autouse=True)
def empty_cache_and_no_collection_meanwhile():
    """Each test starts from an empty cache, so that the blocks earlier tests left idle
    cannot take it to its cap (a freed block would then go back to the system, not to the
    cache); and garbage left in cycles, collected in the middle of a test, would return
    blocks to the cache and change the counts these tests read: it is collected first and
    the collector held off until the test is done."""
    gc.collect()
    pyrt.empty_cache()
    gc.disable()
    yield
    gc.enable()


@pytest.fixture
def x():
    return np.random.default_rng(0).standard_normal(LARGE).astype(np.float32)


def test_a_dropped_result_is_kept_and_reused(x):
    y = ops.relu(x)
    before = idle()
    del y
    assert idle() >= before + NBYTES
    kept = idle()
    y = ops.relu(x)  # the same size class: the kept block
    assert idle() <= kept - NBYTES
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_a_view_keeps_its_block(x):
    y = ops.exp(x)
    view = y[100:200].reshape(-1)
    expected = np.exp(x[100:200]).reshape(-1)
    before = idle()
    del y
    assert idle() == before
    z = ops.neg(x)  # must not land on the block the view still reads
    np.testing.assert_allclose(view, expected, rtol=1e-6)
    np.testing.assert_array_equal(z, -x)
    del view
    assert idle() >= before + NBYTES


def test_results_are_ordinary_arrays(x):
    y = ops.mul(x, 2.0)
    assert y.dtype == np.float32 and y.shape == LARGE
    assert y.flags.c_contiguous and y.flags.writeable and y.flags.aligned
    y[0, 0] = 7.0
    assert y[0, 0] == 7.0
    copy = pickle.loads(pickle.dumps(y))
    np.testing.assert_array_equal(copy, y)
    assert not np.shares_memory(copy, y)
    assert np.shares_memory(y[3:], y)


def test_small_results_come_from_numpy():
    y = ops.relu(np.ones((4, 4), np.float32))
    assert y.base is None and y.flags.owndata


def test_empty_cache_gives_the_idle_blocks_back(x):
    y = ops.relu(x)
    del y
    assert idle() >= NBYTES
    freed = pyrt.empty_cache()
    assert freed >= NBYTES
    assert idle() == 0


def test_empty_takes_any_dtype_and_rejects_bad_shapes():
    a = empty((300, 300), np.dtype(np.int64))
    assert a.dtype == np.int64 and a.shape == (300, 300) and a.base is not None
    with pytest.raises(ValueError, match="negative dimensions"):
        empty((-1, 70000))
    with pytest.raises(ValueError, match="too big"):
        empty((1 << 62, 8))


def test_concurrent_callers_get_separate_blocks():
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal((256 + 16 * i, 512)).astype(np.float32) for i in range(4)]
    errors = []

    def work(a):
        try:
            for _ in range(30):
                y = ops.mul(a, 3.0)
                z = ops.add(y, 1.0)
                np.testing.assert_array_equal(z, a * np.float32(3.0) + np.float32(1.0))
        except AssertionError as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(a,)) for a in inputs * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_forked_child_allocates(x):
    y = ops.relu(x)
    del y  # the parent holds an idle block when it forks
    pid = os.fork()
    if pid == 0:  # the child: must allocate, compute and free without hanging
        try:
            ok = all(np.array_equal(ops.relu(x), np.maximum(x, 0)) for _ in range(3))
            os._exit(0 if ok else 1)
        except BaseException:  # noqa: BLE001 (any failure: the child's exit status says so)
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
