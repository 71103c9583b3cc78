"""pyrt.backends: torch's switches with torch's defaults and type checks, remembered; the
queries say what pyrt has."""

import numpy as np
import pytest

import pyrt
from pyrt import backends, global_state

try:
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")

CUDNN_SWITCHES = ("enabled", "benchmark", "deterministic", "allow_tf32")


@needs_torch
def test_defaults_match_torch():
    for name in CUDNN_SWITCHES:
        assert getattr(backends.cudnn, name) == getattr(torch.backends.cudnn, name), name
    for name in ("allow_tf32", "allow_fp16_reduced_precision_reduction",
                 "allow_bf16_reduced_precision_reduction"):
        assert getattr(backends.cuda.matmul, name) == getattr(torch.backends.cuda.matmul,
                                                              name), name
    assert backends.mps.is_available() == torch.backends.mps.is_available()


def test_switches_are_remembered_and_restored_by_flags():
    cudnn = backends.cudnn
    cudnn.benchmark = True
    try:
        assert cudnn.benchmark is True
        with cudnn.flags(enabled=False, deterministic=True):
            assert cudnn.enabled is False and cudnn.deterministic is True
            assert cudnn.benchmark is False
        assert cudnn.enabled is True and cudnn.deterministic is False and cudnn.benchmark
        cudnn.deterministic = np.bool_(True)
        assert cudnn.deterministic is True
    finally:
        cudnn.benchmark = False
        cudnn.deterministic = False
    assert not cudnn.is_available() and cudnn.version() is None
    assert not cudnn.is_acceptable(pyrt.ones(1))


@pytest.mark.parametrize("name,setter", [("enabled", "set_enabled_cudnn"),
                                         ("benchmark", "set_benchmark_cudnn"),
                                         ("deterministic", "set_deterministic_cudnn"),
                                         ("allow_tf32", "set_allow_tf32_cublas")])
def test_cudnn_switches_refuse_non_bools_as_torch(name, setter):
    with pytest.raises(RuntimeError, match=f"{setter} expects a bool, but got int"):
        setattr(backends.cudnn, name, 1)
    if torch is not None:
        with pytest.raises(RuntimeError, match=f"{setter} expects a bool, but got int"):
            setattr(torch.backends.cudnn, name, 1)


def test_matmul_allow_tf32_is_the_matmul_precision():
    matmul = backends.cuda.matmul
    try:
        matmul.allow_tf32 = True
        assert global_state.get_float32_matmul_precision() == "high"
        global_state.set_float32_matmul_precision("medium")
        assert matmul.allow_tf32 is True
        matmul.allow_tf32 = False
        assert global_state.get_float32_matmul_precision() == "highest"
        assert matmul.allow_tf32 is False
    finally:
        global_state.set_float32_matmul_precision("highest")
    with pytest.raises(RuntimeError, match="set_allow_tf32_cublas expects a bool, but got str"):
        matmul.allow_tf32 = "yes"


def test_matmul_reduction_switches_and_unknown_names():
    matmul = backends.cuda.matmul
    try:
        matmul.allow_fp16_reduced_precision_reduction = (False, True)
        assert matmul.allow_fp16_reduced_precision_reduction is False
        matmul.allow_bf16_reduced_precision_reduction = False
        assert matmul.allow_bf16_reduced_precision_reduction is False
    finally:
        matmul.allow_fp16_reduced_precision_reduction = True
        matmul.allow_bf16_reduced_precision_reduction = True
    with pytest.raises(TypeError, match="allow_fp16_reduced_precision_reduction expects a "
                                        "bool or a tuple/list of bools, but got <class 'str'>"):
        matmul.allow_fp16_reduced_precision_reduction = "x"
    with pytest.raises(AttributeError, match="Unknown attribute foo"):
        matmul.foo = 1
    with pytest.raises(AttributeError, match="Unknown attribute foo"):
        matmul.foo  # noqa: B018


def test_queries():
    assert backends.cpu.get_cpu_capability() in ("AVX512", "AVX2", "DEFAULT")
    from pyrt.ops import sgemm_kernel

    assert backends.cpu.get_cpu_capability().lower() in (sgemm_kernel(), "default")
    assert backends.mps.is_available() is False and backends.mps.is_built() is False
    assert backends.mkldnn.is_available() is False and backends.mkl.is_available() is False
    assert backends.openmp.is_available() is False
    assert backends.cuda.is_built() in (True, False)
    backends.mkldnn.enabled = False
    assert backends.mkldnn.enabled is False
    backends.mkldnn.enabled = True
    with pytest.raises(RuntimeError, match="set_enabled_mkldnn expects a bool, but got str"):
        backends.mkldnn.enabled = "no"
