"""Tests of the CUDA backend that run without a GPU: every kernel source compiles with nvcc
and, where CuPy and NVRTC are installed (pip install cupy-cuda12x nvidia-cuda-nvrtc-cu12),
with NVRTC as at run time; the CPU-only paths say clearly that no GPU is there; importing
pyrt does not import CuPy."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pyrt.cuda import _module

KERNELS = sorted(p.stem for p in _module.KERNEL_DIR.glob("*.cu"))


def test_every_kernel_file_is_listed():
    assert {"bias_grad", "conv", "elementwise", "loss", "optim", "pool"} <= set(KERNELS)


@pytest.mark.parametrize("name", KERNELS)
def test_kernel_compiles_with_nvcc(name, tmp_path):
    nvcc = shutil.which("nvcc") or ("/usr/local/bin/nvcc"
                                    if Path("/usr/local/bin/nvcc").exists() else None)
    if nvcc is None:
        pytest.skip("no nvcc on this machine")
    # the source exactly as NVRTC gets it at run time, with the same defines
    source = tmp_path / f"{name}.cu"
    source.write_text(_module.kernel_source(name))
    defines = [f"-D{k}={v}" for k, v in _module.COMPILE_DEFINES.items()]
    result = subprocess.run([nvcc, "-ptx", "-arch=compute_80", *defines, "-o",
                             str(tmp_path / f"{name}.ptx"), str(source)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    ptx = (tmp_path / f"{name}.ptx").read_text()
    kernels = re.findall(r'extern "C" __global__ void (\w+)\(', source.read_text())
    assert kernels
    for kernel in kernels:
        assert f".entry {kernel}(" in ptx


def _nvrtc():
    """CuPy's binding of NVRTC, the compiler RawModule uses at run time, or a skip."""
    try:
        from cupy_backends.cuda.libs import nvrtc

        nvrtc.getVersion()
    except Exception as exc:  # noqa: BLE001 (no CuPy, or no libnvrtc: say which)
        pytest.skip(f"NVRTC is not usable here ({type(exc).__name__}: {exc})")
    return nvrtc


@pytest.mark.parametrize("name", KERNELS)
def test_kernel_compiles_with_nvrtc(name):
    # the compiler the kernels meet at run time: no host headers, its own builtins
    nvrtc = _nvrtc()
    options = [f"-D{k}={v}" for k, v in _module.COMPILE_DEFINES.items()]
    program = nvrtc.createProgram(_module.kernel_source(name), f"{name}.cu", (), ())
    try:
        try:
            nvrtc.compileProgram(program, options + ["--gpu-architecture=compute_80"])
        except Exception:  # noqa: BLE001 (the log says what failed)
            pytest.fail(nvrtc.getProgramLog(program))
        ptx = nvrtc.getPTX(program)
    finally:
        nvrtc.destroyProgram(program)
    ptx = ptx.decode() if isinstance(ptx, bytes) else ptx
    for kernel in re.findall(r'extern "C" __global__ void (\w+)\(', _module.kernel_source(name)):
        assert f".entry {kernel}(" in ptx


@pytest.mark.parametrize("name", KERNELS)
def test_kernel_source_needs_no_host_header(name):
    # nvcc pulls in <math.h> and the CUDA runtime headers; NVRTC, which compiles these at
    # run time, has neither: their macros and any #include <...> would fail only on a GPU
    source = _module.kernel_source(name)
    for word in ("INFINITY", "NAN", "HUGE_VAL", "HUGE_VALF", "FLT_MAX", "M_PI"):
        assert not re.search(rf"\b{word}\b", source), word
    assert "#include" not in source


def test_import_pyrt_does_not_import_cupy():
    code = ("import sys, pyrt, pyrt.nn, pyrt.optim, pyrt.ops, pyrt.cuda; "
            "pyrt.Tensor([1.0]).to('cpu'); print('cupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def _no_gpu():
    from pyrt import cuda

    if cuda.is_available():
        pytest.skip("a CUDA device is present: the no-GPU messages do not apply")


def test_tensor_on_cuda_without_gpu_raises_clear_error():
    _no_gpu()
    import pyrt

    with pytest.raises(RuntimeError, match="device 'cuda' is not available: .*(CuPy|GPU)"):
        pyrt.tensor([1.0, 2.0], device="cuda")
    with pytest.raises(RuntimeError, match="not available"):
        pyrt.zeros(2).to("cuda")


def test_is_available_never_raises():
    from pyrt import cuda

    assert cuda.is_available() in (True, False)


def test_cli_device_cuda_without_gpu_exits_2():
    _no_gpu()
    out = subprocess.run([sys.executable, "-m", "pyrt", "train", "xor", "--device", "cuda",
                          "--limit-steps", "2"], capture_output=True, text=True, check=False)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "--device cuda is not usable" in lines[0]
    assert "Traceback" not in out.stderr


def test_cli_cuda_graph_needs_device_cuda():
    out = subprocess.run([sys.executable, "-m", "pyrt", "train", "xor", "--cuda-graph",
                          "--limit-steps", "2"], capture_output=True, text=True, check=False)
    assert out.returncode == 2 and "--cuda-graph needs --device cuda" in out.stderr
