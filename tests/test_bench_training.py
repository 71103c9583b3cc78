"""The training benchmarks' own pieces: the hand-written NumPy XOR step is the same network
and update as pyrt's, and the paired run times what it says it times."""

import numpy as np
import pytest
from pyrt._pyrt_cffi import lib

import pyrt
from pyrt import nn, optim
from pyrt.bench import training
from pyrt.ops import linalg


def test_the_numpy_xor_step_trains_the_same_network_as_pyrt():
    # the reference row of the XOR benchmark: 20 steps of the same batches from the same
    # weights give the same losses (to float32 rounding) as pyrt's model, loss and SGD
    batches = training._xor_batches()[:20]
    numpy_step = training._numpy_xor_step()
    model = training._pyrt_xor_model(0)
    step = training._training_step(model, nn.BCEWithLogitsLoss(),
                                   optim.SGD(model.parameters(), lr=0.01))
    for x, y in batches:
        want = float(numpy_step(x, y))
        got = float(step(pyrt.Tensor(x), pyrt.Tensor(y)).item())
        assert got == pytest.approx(want, rel=1e-5, abs=1e-6)


def test_xor_paired_gives_every_variant_a_block_per_round():
    with pyrt.num_threads(3):
        times = training.xor_paired([1, 2], rounds=3, block=4)
        assert pyrt.get_num_threads() == 3  # the caller's count is given back
    assert sorted(times) == ["numpy", "pyrt@1", "pyrt@2"]
    for blocks in times.values():
        assert len(blocks) == 3 and all(np.isfinite(b) and b > 0 for b in blocks)


def _profile_step_module():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parent.parent / "benchmarks" / "nn" / "profile_step.py"
    spec = importlib.util.spec_from_file_location("profile_step", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_profile_step_times_every_c_call_of_a_step_and_puts_the_library_back():
    profile_step = _profile_step_module()
    before = pyrt.get_num_threads()
    result = profile_step.profile("cnn", [1, 2], steps=4, rounds=1)
    assert pyrt.get_num_threads() == before
    for t in (1, 2):
        r = result[t]
        assert r["step_us_median"] > 0 and r["wrapped_step_us"] > 0
        # the CNN's two convolutions each way, its ReLUs, the linear layer's three products
        # and the SGD update of its six parameters, per step
        assert r["calls"]["pyrt_conv2d_forward"] == 2
        assert r["calls"]["pyrt_conv2d_backward"] == 2
        assert r["calls"]["pyrt_sgemm"] == 3
        assert r["calls"]["pyrt_sgd_step"] == 6
        assert all(us > 0 for us in r["c_us"].values())
        assert sum(r["c_us"].values()) < r["wrapped_step_us"]
    # the wrappers are gone: the modules call the library itself again
    assert linalg.lib is lib and linalg._sgemm is lib.pyrt_sgemm
