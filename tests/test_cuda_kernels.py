"""Tests of the CUDA backend that run without a GPU: every kernel source compiles with NVRTC,
as at run time (its library, from the nvidia-cuda-nvrtc wheel of the test extra, needs no GPU
and no CuPy), and with nvcc where installed; the CPU-only paths say clearly that no GPU is
there; importing pyrt does not import CuPy."""

import ctypes
import ctypes.util
import functools
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pyrt.cuda import _module

KERNELS = sorted(p.stem for p in _module.KERNEL_DIR.glob("*.cu"))
NO_NVRTC = ("NVRTC is not installed (pip install nvidia-cuda-nvrtc, which the test extra "
            "installs on Linux x86-64)")


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


def _nvrtc_paths():
    """Where libnvrtc may be: the lib folders of the NVIDIA wheels (nvidia-cuda-nvrtc puts it
    in nvidia/cu13/lib, nvidia-cuda-nvrtc-cu12 in nvidia/cuda_nvrtc/lib), then the linker's
    search path."""
    paths = []
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        paths += sorted(glob.glob(os.path.join(root, "*", "lib", "libnvrtc.so*")), reverse=True)
    found = ctypes.util.find_library("nvrtc")
    return paths + ([found] if found else [])


@functools.cache
def _nvrtc():
    """NVRTC, the compiler cupy.RawModule runs at run time, loaded with ctypes (it needs no
    GPU and no CuPy), or None."""
    for path in _nvrtc_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        major, minor = ctypes.c_int(), ctypes.c_int()
        if lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)) == 0:
            lib.nvrtcGetErrorString.restype = ctypes.c_char_p
            return lib, (major.value, minor.value)
    return None


def _nvrtc_compile(lib, source, name, options):
    """(PTX, "") for `source` compiled by NVRTC with `options`, or (None, the log)."""
    program = ctypes.c_void_p()
    rc = lib.nvrtcCreateProgram(ctypes.byref(program), source.encode(), name.encode(), 0,
                                None, None)
    assert rc == 0, lib.nvrtcGetErrorString(rc)
    try:
        opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
        if lib.nvrtcCompileProgram(program, len(options), opts) != 0:
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(program, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(program, log)
            return None, log.value.decode(errors="replace")
        size = ctypes.c_size_t()
        assert lib.nvrtcGetPTXSize(program, ctypes.byref(size)) == 0
        ptx = ctypes.create_string_buffer(size.value)
        assert lib.nvrtcGetPTX(program, ptx) == 0
        return ptx.value.decode(), ""
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(program))


def test_nvrtc_reports_a_broken_kernel():
    # the check below must be able to fail: a kernel with a type error does not compile
    nvrtc = _nvrtc()
    if nvrtc is None:
        pytest.skip(NO_NVRTC)
    ptx, log = _nvrtc_compile(nvrtc[0], 'extern "C" __global__ void k(float *x) '
                              '{ x[0] = undeclared; }', "broken.cu", [])
    assert ptx is None and "undeclared" in log


@pytest.mark.parametrize("name", KERNELS)
def test_kernel_compiles_with_nvrtc(name):
    # the compiler the kernels meet at run time: no host headers, its own builtins
    nvrtc = _nvrtc()
    if nvrtc is None:
        pytest.skip(NO_NVRTC)
    options = [f"-D{k}={v}" for k, v in _module.COMPILE_DEFINES.items()]
    source = _module.kernel_source(name)
    ptx, log = _nvrtc_compile(nvrtc[0], source, f"{name}.cu",
                              options + ["--gpu-architecture=compute_80"])
    assert ptx is not None, log
    kernels = re.findall(r'extern "C" __global__ void (\w+)\(', source)
    assert kernels
    for kernel in kernels:
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
    # a finder first on sys.meta_path records every attempt to import cupy, so the check
    # holds where CuPy is not installed too (there, 'cupy' in sys.modules is always False)
    code = """if True:
        import sys
        tried = []

        class Watch:
            def find_spec(self, name, path=None, target=None):
                if name.partition(".")[0] == "cupy":
                    tried.append(name)
                return None

        sys.meta_path.insert(0, Watch())
        import pyrt, pyrt.nn, pyrt.optim, pyrt.ops, pyrt.cuda
        pyrt.Tensor([1.0]).to("cpu")
        print(tried)
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


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


def test_router_finds_a_device_array_in_any_argument():
    # once the backend loads, each pyrt.ops name routes by its arguments; a device array in
    # third place or in out= must reach the device op, which refuses a mix of devices
    from pyrt.ops._routing import _router

    class DeviceArray:
        pass

    def add(*args, **kwargs):
        return "cpu"

    op = _router(add, lambda *args, **kwargs: "cuda", DeviceArray)
    d = DeviceArray()
    assert op.__name__ == "add" and op.__wrapped__ is add
    assert op(1.0, 2.0) == "cpu"
    assert op(1.0, 2.0, alpha=3.0, out=None) == "cpu"
    assert op(d, 2.0) == "cuda"
    assert op(1.0, d) == "cuda"
    assert op(1.0, 2.0, d) == "cuda"
    assert op(1.0, 2.0, out=d) == "cuda"
