"""cffi builder (out-of-line, API mode) for pyrt's C runtime.

The cdef is csrc/pyrt.h exactly as it is, plus the callbacks through which C calls Python.
setup.py names this file in ``cffi_modules``.
"""

import glob
import os

from cffi import FFI

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSRC = os.path.join(ROOT, "csrc")

# C calls these to run Python loop bodies; pyrt/runtime.py defines them.
PYTHON_CALLBACKS = """
extern "Python" int pyrt_py_range(void *ctx, int64_t start, int64_t stop);
extern "Python" int pyrt_py_leaf(void *ctx, int64_t start, int64_t stop, void *acc);
extern "Python" int pyrt_py_combine(void *ctx, void *left, const void *right);
"""

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
    extra_compile_args=["-O3", "-std=gnu11", "-pthread", "-fno-math-errno"],
    extra_link_args=["-pthread"],
)

if __name__ == "__main__":
    # Development build in place (run from the project root): pyrt/_pyrt_cffi.*.so
    ffibuilder.compile(tmpdir=ROOT, verbose=False)
