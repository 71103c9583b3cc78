"""The C benchmark programs of a source checkout: where they are, and how they are built.

benchmarks/runtime/ holds small C programs that time pyrt's scheduler beside a serial
baseline, OpenMP (libgomp) and oneTBB; benchmarks/kernels/stream_triad.c and
benchmarks/runtime/sum/stream_read.c are the STREAM-style ceilings of the memory-bound kernels.
They exist only in a source checkout (an installed pyrt has no benchmarks/): source_root()
says whether there is one.

Each program prints one JSON line on stdout and exits with 1 when its own check of the result
fails. The thread count reaches it through PYRT_NUM_THREADS, OMP_NUM_THREADS or
TBB_NUM_THREADS (which benchmarks/runtime/tbb_threads.h passes to tbb::global_control).
"""

import subprocess
import sys
from pathlib import Path

from pyrt.bench.runner import kill_group

__all__ = ["CFLAGS", "CXXFLAGS", "PROGRAMS", "STREAM_FLAGS", "STREAM_PROGRAMS", "build",
           "build_stream", "build_with_stream", "cflags", "cxxflags", "have_tbb", "source_root"]

# Flags of every runtime program; -I paths are added by cflags()/cxxflags().
CFLAGS = ["-O2", "-std=gnu11", "-pthread", "-Wall", "-Wextra"]
CXXFLAGS = ["-O2", "-std=c++17", "-pthread", "-Wall", "-Wextra"]

# The STREAM-style ceilings are compiled as STREAM is: for this CPU, with OpenMP threads.
STREAM_FLAGS = ("-O3", "-march=native", "-fopenmp")

# Program name -> (source under benchmarks/runtime/, kind). The kind picks the compiler and
# libraries: serial and pyrt with gcc (pyrt linking csrc/runtime in), omp with -fopenmp,
# tbb with g++ and -ltbb.
PROGRAMS = {
    "fib_serial": ("fib/fib_serial.c", "serial"),
    "fib_pyrt": ("fib/fib_pyrt.c", "pyrt"),
    "fib_omp": ("fib/fib_omp.c", "omp"),
    "fib_tbb": ("fib/fib_tbb.cpp", "tbb"),
    "loop_serial": ("loop/loop_serial.c", "serial"),
    "loop_pyrt": ("loop/loop_pyrt.c", "pyrt"),
    "loop_paired": ("loop/loop_paired.c", "pyrt"),
    "loop_omp": ("loop/loop_omp.c", "omp"),
    "loop_tbb": ("loop/loop_tbb.cpp", "tbb"),
    "sum_serial": ("sum/sum_serial.c", "serial"),
    "sum_pyrt": ("sum/sum_pyrt.c", "pyrt"),
    "sum_omp": ("sum/sum_omp.c", "omp"),
    "stream_read": ("sum/stream_read.c", "omp"),
    "idle_pyrt": ("idle/idle_pyrt.c", "pyrt"),
    "idle_omp": ("idle/idle_omp.c", "omp"),
    "idle_tbb": ("idle/idle_tbb.cpp", "tbb"),
}

# The STREAM-style ceilings: name -> (source under benchmarks/, include folder under
# benchmarks/ or None). build_with_stream() builds them with STREAM_FLAGS; run_runtime.py
# builds its own -O2 copy of stream_read through build().
STREAM_PROGRAMS = {
    "stream_read": ("runtime/sum/stream_read.c", "runtime"),
    "stream_triad": ("kernels/stream_triad.c", None),
}


def source_root():
    """The source checkout pyrt runs from (the folder holding csrc/ and benchmarks/), or
    None when pyrt is installed without it."""
    root = Path(__file__).resolve().parents[2]
    if (root / "csrc" / "runtime").is_dir() and (root / "benchmarks" / "runtime").is_dir():
        return root
    return None


def cflags(root):
    return [*CFLAGS, f"-I{root / 'benchmarks' / 'runtime'}", f"-I{root / 'csrc'}"]


def cxxflags(root):
    return [*CXXFLAGS, f"-I{root / 'benchmarks' / 'runtime'}"]


def compile_step(cmd, notes, echo=True):
    """Run one compiler command; echo its diagnostics (with `echo`); return True on success,
    else add a note saying what failed."""
    # in a process group of its own, so that an interrupt stops the compiler's own children
    # (cc1, as) with it, not only the driver
    proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        err = proc.communicate()[1]
    except BaseException:
        kill_group(proc)
        raise
    if echo and err.strip():
        print(err.rstrip(), file=sys.stderr)
    if proc.returncode != 0:
        notes.append(f"build failed: {' '.join(map(str, cmd))}: "
                     f"{(err.strip().splitlines() or ['?'])[0]}")
        return False
    return True


def have_tbb():
    """Whether g++ finds the oneTBB headers."""
    probe = "#include <oneapi/tbb/task_group.h>\n"
    try:
        proc = subprocess.run(["g++", "-x", "c++", "-E", "-", "-o", "/dev/null"], check=False,
                              input=probe, capture_output=True, text=True)
    except FileNotFoundError:
        return False
    return proc.returncode == 0


def build(needed, notes, root, build_dir, echo=True):
    """Build the programs named in `needed` from the checkout `root` into `build_dir`; return
    the set of names that built. What did not build gets a note saying why."""
    build_dir.mkdir(parents=True, exist_ok=True)
    src = root / "benchmarks" / "runtime"
    kinds = {PROGRAMS[p][1] for p in needed}
    tbb_ok = "tbb" in kinds and have_tbb()
    if "tbb" in kinds and not tbb_ok:
        notes.append("TBB variants skipped: oneTBB headers not found (install libtbb-dev).")

    # The runtime is compiled once into objects that every pyrt program links.
    runtime_objs = []
    runtime_ok = "pyrt" in kinds
    if runtime_ok:
        sources = sorted((root / "csrc" / "runtime").glob("*.c"))
        if not sources:
            notes.append("pyrt variants skipped: no csrc/runtime/*.c")
            runtime_ok = False
        objdir = build_dir / "pyrt"
        objdir.mkdir(exist_ok=True)
        for old in objdir.glob("*.o"):
            old.unlink()
        for source in sources:
            obj = objdir / (source.stem + ".o")
            if not compile_step(["gcc", *cflags(root), "-c", source, "-o", obj], notes, echo):
                runtime_ok = False
                break
            runtime_objs.append(obj)

    built = set()
    for name in sorted(needed):
        source, kind = PROGRAMS[name]
        exe = build_dir / name
        if (kind == "pyrt" and not runtime_ok) or (kind == "tbb" and not tbb_ok):
            continue
        if kind == "tbb":
            cmd = ["g++", *cxxflags(root), src / source, "-o", exe, "-ltbb"]
        else:
            extra = ["-fopenmp"] if kind == "omp" else []
            cmd = ["gcc", *cflags(root), *extra, src / source,
                   *(runtime_objs if kind == "pyrt" else []), "-o", exe, "-lm"]
        if compile_step(cmd, notes, echo):
            built.add(name)
    return built


def build_stream(source, build_dir, notes, include=None):
    """Build the STREAM-style program `source` with STREAM_FLAGS into `build_dir`; return the
    executable's path, or None (with a note saying why) when it does not build."""
    build_dir.mkdir(parents=True, exist_ok=True)
    exe = build_dir / Path(source).stem
    cmd = ["gcc", *STREAM_FLAGS, "-std=gnu11", *([f"-I{include}"] if include else []),
           str(source), "-o", str(exe)]
    return exe if compile_step(cmd, notes, echo=False) else None


def build_with_stream(needed, notes, root, build_dir):
    """build() for the names of PROGRAMS in `needed`, build_stream() for those of
    STREAM_PROGRAMS; return the set of names that built. Compiler output goes into the notes
    only (a progress bar owns the terminal)."""
    built = build({p for p in needed if p not in STREAM_PROGRAMS}, notes, root, build_dir,
                  echo=False)
    for name in sorted(set(needed) & set(STREAM_PROGRAMS)):
        source, include = STREAM_PROGRAMS[name]
        benchmarks = root / "benchmarks"
        exe = build_stream(benchmarks / source, build_dir, notes,
                           benchmarks / include if include else None)
        if exe is not None:
            built.add(name)
    return built
