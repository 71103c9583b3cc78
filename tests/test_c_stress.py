"""C-level stress tests of the scheduler and the kernels, plain and under the sanitizers.

Each csrc/tests/stress_*.c is a self-checking program (see csrc/tests/stress.h) built with the
runtime sources; each csrc/tests/kernels_*.c (see csrc/tests/kernels_check.h) calls the float32
kernels at 1, 2 and 4 threads against references in double and is built with the runtime and
kernel sources (csrc/kernels, as pyrt/_build.py compiles them). Every program is built in three
configurations, the sources once per configuration, and run as a subprocess:

- plain ``-O2``: the full amount of work, checking results only;
- ThreadSanitizer: data races, lock-order inversions and misuse of atomics in the runtime, and
  races between the tasks of a kernel (on smaller sizes: STRESS_SCALE below 1);
- AddressSanitizer + UBSan: use-after-free of task frames and loop contexts, out-of-bounds
  copies of reduction accumulators, leaks of a stopped pool, kernels reading or writing past
  an operand (each one is a malloc block of its exact size), undefined behaviour.

A test fails on a nonzero exit, a timeout, or any sanitizer report in the output, and shows the
output (the first report first). It is skipped only when gcc is missing or a sanitizer's runtime
cannot build or run a trivial threaded program here.
"""

import os
import platform
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CSRC = REPO / "csrc"
PROGRAMS = sorted((CSRC / "tests").glob("stress_*.c")) + sorted(
    (CSRC / "tests").glob("kernels_*.c"))
# The kernels as the extension builds them (pyrt/_build.py), their own tests/ folders aside.
KERNEL_SOURCES = sorted(p for p in (CSRC / "kernels").rglob("*.c") if "tests" not in p.parts)

COMMON_CFLAGS = ["-std=gnu11", "-pthread", "-g", "-fno-omit-frame-pointer", "-Wall", f"-I{CSRC}"]
# -fno-var-tracking: the intrinsics-heavy kernels build twice as fast under the sanitizers
# without the debugger's variable locations; reports keep their file:line stack traces.
KERNEL_CFLAGS = ["-fno-math-errno", "-fno-var-tracking"]
# GCC's ThreadSanitizer instruments the resolver that target_clones generates, and the dynamic
# loader runs resolvers before the TSan runtime has started: the program dies at load. Sources
# with target_clones are built without the function entry/exit hooks (which only give reports
# their stack traces); their memory accesses are still checked.
TSAN_IFUNC_CFLAGS = ["--param", "tsan-instrument-func-entry-exit=0"]

# What a sanitizer prints when it found something; any of these in the output fails the test,
# whatever the exit status.
REPORT_MARKERS = (
    "WARNING: ThreadSanitizer",
    "ERROR: AddressSanitizer",
    "ERROR: LeakSanitizer",
    "runtime error:",
)

# Sanitizer runtimes fix where their shadow memory lies. A kernel that randomises mmap with more
# bits than the runtime expects (vm.mmap_rnd_bits = 32 on x86-64, the default of some
# distributions' 6.x kernels, against 28 that older TSan/ASan runtimes allow for) can place a
# library inside that range, and the program dies at start with one of these messages. Running
# it with address-space randomisation off (`setarch <arch> -R`) avoids the clash without root
# access to the sysctl; the tests do that only after seeing the failure.
MAPPING_FAILURES = (
    "unexpected memory mapping",
    "Shadow memory range interleaves",
)

PROBE_SOURCE = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static int counter;
static void *bump(void *arg)
{
    (void)arg;
    __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
    return NULL;
}
int main(void)
{
    pthread_t t;
    void *leak_free = malloc(16);
    pthread_create(&t, NULL, bump, NULL);
    pthread_join(t, NULL);
    free(leak_free);
    printf("%d\n", counter);
    return counter == 1 ? 0 : 1;
}
"""


@dataclass
class Config:
    name: str
    cflags: list
    env: dict = field(default_factory=dict)
    scale: float = 1.0  # STRESS_SCALE: the sanitizers are 5-15x slower, so they run less work
    timeout: float = 300.0


# The programs ask for up to 8 threads (STRESS_MAX_THREADS), more than a small machine has
# CPUs. The pool keeps no more threads awake than CPUs (csrc/README.md: more threads than CPUs);
# the plain and ASan builds tell it there are 8 (PYRT_CPUS) so that all the threads run and are
# preempted at arbitrary points, and ThreadSanitizer checks the pool as it runs by default, with
# the surplus workers going to sleep and being woken all the time.
ALL_AWAKE = {"PYRT_CPUS": "8"}
CONFIGS = [
    Config("plain", ["-O2"], env=ALL_AWAKE, scale=1.0, timeout=120.0),
    Config(
        "tsan",
        ["-fsanitize=thread", "-O1"],
        env={"TSAN_OPTIONS": "halt_on_error=1 second_deadlock_stack=1"},
        scale=0.3,
    ),
    Config(
        "asan-ubsan",
        ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-O1"],
        env={
            **ALL_AWAKE,
            "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=1",
            "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
        },
        scale=1.0,
    ),
]


@dataclass
class Build:
    config: Config
    directory: Path
    objects: list
    prefix: list  # command prefix to run a program with (setarch when needed)
    kernel_objects: list = None  # compiled on first use


def needs_kernels(program):
    return program.stem.startswith("kernels_")


def run_env(config):
    env = dict(os.environ)
    env.pop("PYRT_NUM_THREADS", None)  # the programs check the C default, the CPU count
    env.pop("PYRT_CPUS", None)
    env.update(config.env)
    user_scale = float(os.environ.get("STRESS_SCALE", "1"))
    env["STRESS_SCALE"] = repr(config.scale * user_scale)
    return env


def gcc(args, cwd):
    return subprocess.run(["gcc", *args], cwd=cwd, capture_output=True, text=True)


def needs_setarch(output):
    return any(marker in output for marker in MAPPING_FAILURES)


def setarch_prefix():
    if shutil.which("setarch") is None:
        return None
    return ["setarch", platform.machine(), "-R"]


def probe(config, directory):
    """Build and run a trivial threaded program; return the run prefix or skip the test."""
    source = directory / "probe.c"
    source.write_text(PROBE_SOURCE)
    built = gcc([*COMMON_CFLAGS, *config.cflags, str(source), "-o", "probe"], directory)
    if built.returncode != 0:
        pytest.skip(f"gcc cannot build with {' '.join(config.cflags)}: {built.stderr[-500:]}")
    prefix = []
    env = run_env(config)
    ran = subprocess.run(["./probe"], cwd=directory, env=env, capture_output=True, text=True,
                         timeout=60)
    if ran.returncode != 0 and needs_setarch(ran.stderr) and setarch_prefix():
        prefix = setarch_prefix()
        ran = subprocess.run([*prefix, "./probe"], cwd=directory, env=env, capture_output=True,
                             text=True, timeout=60)
    if ran.returncode != 0:
        pytest.skip(f"the {config.name} runtime does not run here: {ran.stderr[-500:]}")
    return prefix


_builds = {}


@pytest.fixture(scope="session")
def stress_root(tmp_path_factory):
    return tmp_path_factory.mktemp("c_stress")


def get_build(config, root):
    """Probe the toolchain, then compile the runtime once per configuration."""
    if config.name in _builds:
        build = _builds[config.name]
        if isinstance(build, str):
            pytest.skip(build)
        return build
    if shutil.which("gcc") is None:
        _builds[config.name] = "gcc is not installed"
        pytest.skip(_builds[config.name])
    directory = root / config.name
    directory.mkdir(exist_ok=True)
    try:
        prefix = probe(config, directory)
    except pytest.skip.Exception as skip:
        _builds[config.name] = str(skip)
        raise
    sources = sorted((CSRC / "runtime").glob("*.c"))
    assert sources, f"no runtime sources in {CSRC / 'runtime'}"
    built = gcc([*COMMON_CFLAGS, *config.cflags, "-c", *map(str, sources)], directory)
    assert built.returncode == 0, f"runtime does not compile ({config.name}):\n{built.stderr}"
    objects = [str(directory / (s.stem + ".o")) for s in sources]
    _builds[config.name] = Build(config, directory, objects, prefix)
    return _builds[config.name]


def kernel_objects(build):
    """Compile the kernel sources for this configuration once, one gcc per core."""
    if build.kernel_objects is not None:
        return build.kernel_objects
    assert KERNEL_SOURCES, f"no kernel sources in {CSRC / 'kernels'}"
    out_dir = build.directory / "kernels"
    out_dir.mkdir(exist_ok=True)
    # objects named by path (gemm/tasks.c and a kernel called tasks.c must not collide)
    jobs = [(s, out_dir / ("_".join(s.relative_to(CSRC / "kernels").with_suffix("").parts)
                           + ".o")) for s in KERNEL_SOURCES]
    tsan = "-fsanitize=thread" in build.config.cflags

    def compile_one(job):
        source, obj = job
        ifunc = tsan and "target_clones" in source.read_text()
        return gcc([*COMMON_CFLAGS, *KERNEL_CFLAGS, *build.config.cflags,
                    *(TSAN_IFUNC_CFLAGS if ifunc else []), "-c", str(source), "-o", str(obj)],
                   build.directory)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        failures = [done.stderr for done in pool.map(compile_one, jobs) if done.returncode]
    assert not failures, (f"kernels do not compile ({build.config.name}):\n"
                          + "\n".join(failures))
    build.kernel_objects = [str(obj) for _, obj in jobs]
    return build.kernel_objects


def first_report(output):
    """The output from the first sanitizer report or stress failure on, else its tail."""
    markers = (*REPORT_MARKERS, "STRESS FAILURE", "SUMMARY:")
    starts = [output.find(m) for m in markers if m in output]
    if not starts:
        return output[-6000:]
    start = output.rfind("\n", 0, min(starts)) + 1
    return output[max(0, start - 2000):start + 8000]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_c_stress(config, program, stress_root):
    build = get_build(config, stress_root)
    exe = build.directory / program.stem
    objects = [*build.objects, *(kernel_objects(build) if needs_kernels(program) else [])]
    built = gcc([*COMMON_CFLAGS, *config.cflags, str(program), *objects, "-lm",
                 "-o", str(exe)], build.directory)
    assert built.returncode == 0, f"{program.name} does not build ({config.name}):\n{built.stderr}"

    def run(prefix):
        command = [*prefix, str(exe)]
        try:
            done = subprocess.run(command, cwd=build.directory, env=run_env(config),
                                  capture_output=True, text=True, timeout=config.timeout)
        except subprocess.TimeoutExpired as expired:
            out = expired.stdout or ""
            err = expired.stderr or ""
            out = out.decode(errors="replace") if isinstance(out, bytes) else out
            err = err.decode(errors="replace") if isinstance(err, bytes) else err
            pytest.fail(f"{' '.join(command)} ran past {config.timeout:.0f} s (hang?)\n"
                        f"--- stdout ---\n{out[-3000:]}\n--- stderr ---\n{first_report(err)}")
        return command, done

    command, done = run(build.prefix)
    if done.returncode != 0 and not build.prefix and needs_setarch(done.stderr):
        prefix = setarch_prefix()
        if prefix:
            command, done = run(prefix)

    reports = [m for m in REPORT_MARKERS if m in done.stderr or m in done.stdout]
    if done.returncode != 0 or reports:
        why = f"exit status {done.returncode}" if done.returncode else "exit status 0"
        if reports:
            why += ", sanitizer reported: " + ", ".join(reports)
        pytest.fail(f"{' '.join(command)} failed ({config.name}): {why}\n"
                    f"--- stdout ---\n{done.stdout[-3000:]}\n"
                    f"--- stderr ---\n{first_report(done.stderr)}")
    assert "ok in" in done.stdout, f"{program.stem} did not finish:\n{done.stdout[-3000:]}"
