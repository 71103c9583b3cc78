"""Sum of 1e8 float32: pyrt.ops.sum beside a STREAM-style read, np.sum and torch.sum.

The question is whether pyrt's deterministic reduction runs at memory bandwidth. The ceiling
is benchmarks/runtime/sum/stream_read.c, compiled here with `gcc -O3 -march=native -fopenmp`
and run in its own process (OpenMP threads, STREAM's first-touch placement). In this process:
pyrt.ops.sum at each thread count (pyrt.num_threads), np.sum (always one thread: NumPy's sum
uses no BLAS) and torch.sum (torch.set_num_threads) when PyTorch is installed.

The data are those of stream_read.c (multiples of 1/512 in (-0.5, 0.5) from a hash of the
index), so every float sum is exact in any order: each result is checked against the exact
sum, and pyrt's must be bitwise identical at every thread count. Repetitions are interleaved
across variants, with a short pause between runs so that one library's spinning threads do not
eat into the next one's time. GB/s = 4n bytes / median seconds.

    python benchmarks/kernels/bench_sum.py                    # n = 1e8, threads 1 and 2
    python benchmarks/kernels/bench_sum.py --threads 1,2,4 --repeat 21
    python benchmarks/kernels/bench_sum.py --quick --out /tmp/sum   # smoke test

Writes kernels_sum.json (machine, settings, every sample) and kernels_sum.md (medians, GB/s,
ratios) under --out (default benchmarks/results).
"""

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import benchmarks._harness as harness  # noqa: E402
from pyrt.bench.kernels import SUM_PYRT, sum_values, sum_variants  # noqa: E402

STREAM_SRC = ROOT / "benchmarks" / "runtime" / "sum" / "stream_read.c"
STREAM, MINE = "STREAM read", SUM_PYRT  # the ceiling's and pyrt's labels in the report
PAUSE_S = 0.02


def markdown(report):
    n, info = report["settings"]["n"], report["machine"]
    method = (f"n = {n} float32 ({4 * n / 1e6:.0f} MB), median of "
              f"{harness.timing_phrase(report['settings'], stream=True)}. "
              + harness.bandwidth_legend(STREAM, MINE, one_thread="np.sum"))
    libraries = f"NumPy {info['numpy']}; PyTorch {info['torch'] or 'not installed'}"
    table = harness.bandwidth_table(report["summary"], STREAM, MINE, ms_digits=2)
    return harness.markdown_report(report, f"Sum of float32: {MINE} against memory bandwidth",
                                   libraries, method, [table])


def main(argv=None):
    args = harness.parse_options(argv, __doc__, repeat=10, n=100_000_000,
                                 n_help="number of floats", quick_n=2_000_000)
    notes = []
    torch = harness.optional_import("torch", notes, "torch.sum skipped: PyTorch is not installed.")
    info = harness.machine_info({"numpy": np.__version__, "torch": harness.version(torch)})
    n = args.n
    x = sum_values(n)
    exact = float(np.sum(x, dtype=np.float64))  # exact: every partial sum is a float

    results = {}
    variants = sum_variants(x, args.threads, torch)
    for key, setup, run in variants:  # warm-up: the pool, the pages, torch's threads
        setup()
        results[key] = [float(run())]
        time.sleep(PAUSE_S)
    samples, stream_runs = harness.passes_beside_stream(
        variants, args.repeat, PAUSE_S,
        (STREAM_SRC, STREAM, n, args.threads, notes, "its sum is not exact",
         STREAM_SRC.parent.parent),
        on_result=lambda key, value: results[key].append(float(value)))
    if torch is not None:
        torch.set_num_threads(max(args.threads))

    for (label, t), values in results.items():
        if any(v != exact for v in values):
            notes.append(f"{label} threads={t}: result {values[0]!r} differs from the exact "
                         f"sum {exact!r}")
    pyrt_bits = {np.float32(v).tobytes() for (label, _), vs in results.items()
                 if label == MINE for v in vs}
    deterministic = len(pyrt_bits) == 1
    if not deterministic:
        notes.append(f"{MINE} is not bitwise identical across thread counts")

    settings = harness.run_settings(__file__, argv, args,
                                    stream_flags=" ".join(harness.STREAM_FLAGS))
    harness.write_report(args.out, "kernels_sum", info, settings, notes, {
        "exact_sum": exact, "pyrt_bitwise_identical_across_threads": deterministic,
        "summary": harness.bandwidth_rows(samples, n, bytes_per_element=4),
        "samples": harness.sample_records(samples, ("variant", "threads")),
        "stream_runs": stream_runs,
    }, markdown)


if __name__ == "__main__":
    main()
