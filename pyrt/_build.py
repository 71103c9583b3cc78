"""cffi builder (out-of-line, API mode) for pyrt's C runtime.

The cdef is csrc/pyrt.h exactly as it is, plus the callbacks through which C calls Python.
setup.py names this file in ``cffi_modules``.
"""

import glob
import os
import platform
import sys
import sysconfig

from cffi import FFI

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSRC = os.path.join(ROOT, "csrc")

# C calls these to run Python loop bodies; pyrt/runtime.py defines them.
PYTHON_CALLBACKS = """
extern "Python" int pyrt_py_range(void *ctx, int64_t start, int64_t stop);
extern "Python" int pyrt_py_leaf(void *ctx, int64_t start, int64_t stop, void *acc);
extern "Python" int pyrt_py_combine(void *ctx, void *left, const void *right);
"""

# Built into a shared library, the runtime would otherwise reach its own functions through the
# PLT, its globals through the GOT and its thread-locals through calls of __tls_get_addr, one
# of which gave parallel_for's fast path a stack frame. On Linux:
#   csrc/exports.map      exports the module's init function and pyrt.h's API only, and
#   -Bsymbolic            binds the library's calls of its own API to itself, so calls and
#                         globals inside are direct;
#   -mtls-dialect=gnu2    thread-locals through TLS descriptors (x86-64): the resolver clobbers
#                         no register, so the fast path saves none.
# Loaded with dlopen, as Python loads it, a 64-element parallel_for (10.5 ns on one thread) took
# 2.3-2.5 ns longer on two threads than on one (its cost-table lookup), against 4.4-4.8 ns
# built without them.
COMPILE_ARGS = ["-O3", "-std=gnu11", "-pthread", "-fno-math-errno"]
LINK_ARGS = ["-pthread"]
if sys.platform.startswith("linux"):
    LINK_ARGS += ["-Wl,--version-script=" + os.path.join(CSRC, "exports.map"), "-Wl,-Bsymbolic"]
    # GCC's flag (clang took it only from version 19 on)
    compiler = os.environ.get("CC") or sysconfig.get_config_var("CC") or ""
    if platform.machine().lower() in ("x86_64", "amd64") and "clang" not in compiler:
        COMPILE_ARGS.append("-mtls-dialect=gnu2")

ffibuilder = FFI()
with open(os.path.join(CSRC, "pyrt.h")) as header:
    ffibuilder.cdef(header.read() + PYTHON_CALLBACKS)

ffibuilder.set_source(
    "pyrt._pyrt_cffi",
    "#include <stddef.h>\n#include <stdint.h>\n#include \"pyrt.h\"\n",
    # setuptools wants paths relative to the project root
    sources=sorted(
        os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(CSRC, "**", "*.c"), recursive=True)
        if os.sep + "tests" + os.sep not in p
    ),
    include_dirs=[os.path.relpath(CSRC, ROOT)],
    extra_compile_args=COMPILE_ARGS,
    extra_link_args=LINK_ARGS,
)

if __name__ == "__main__":
    # Development build in place (run from the project root): pyrt/_pyrt_cffi.*.so
    ffibuilder.compile(tmpdir=ROOT, verbose=False)
