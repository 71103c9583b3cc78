"""a * b + c on 1e7 float32: pyrt.ops.addcmul beside a STREAM triad, NumPy, numexpr and torch.

The question is whether pyrt's elementwise kernels run at memory bandwidth. The ceiling is
benchmarks/kernels/stream_triad.c (out[i] = a[i] * b[i] + c[i]), compiled here with
`gcc -O3 -march=native -fopenmp` and run in its own process (OMP_NUM_THREADS, STREAM's
first-touch placement). In this process, each writing into a preallocated output:

    pyrt.ops.addcmul(c, a, b, out=o)                      pyrt.set_num_threads(t)
    np.multiply(a, b, out=o); np.add(o, c, out=o)          one thread, two passes
    numexpr.evaluate("a*b+c", out=o)                       numexpr.set_num_threads(t)
    torch.addcmul(c, a, b, out=o)                          torch.set_num_threads(t)

numexpr and torch are skipped, with a note, when they are not installed. Every variant's
result is checked against float64 (within two roundings). Repetitions are interleaved across
variants, with a short pause between runs so that one library's spinning threads do not eat
into the next one's time. GB/s = 16 n bytes (three arrays read, one written) / median seconds,
for everyone, NumPy's two passes included.

    python benchmarks/kernels/bench_elementwise.py                 # n = 1e7, threads 1 and 2
    python benchmarks/kernels/bench_elementwise.py --threads 1,2,4 --repeat 31
    python benchmarks/kernels/bench_elementwise.py --quick --out /tmp/ew   # smoke test

Writes kernels_elementwise.json (machine, settings, every sample) and kernels_elementwise.md
(medians, GB/s, ratios) under --out (default benchmarks/results).
"""

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import benchmarks._harness as harness  # noqa: E402
from pyrt.bench.kernels import ADDCMUL_PYRT, addcmul_close, addcmul_variants  # noqa: E402

TRIAD_SRC = ROOT / "benchmarks" / "kernels" / "stream_triad.c"
STREAM, MINE = "STREAM triad", ADDCMUL_PYRT  # the ceiling's and pyrt's labels
PAUSE_S = 0.02
BYTES_PER_ELEMENT = 16  # three arrays read, one written


def markdown(report):
    n, info = report["settings"]["n"], report["machine"]
    method = (f"n = {n} float32 per array (4 arrays of {4 * n / 1e6:.0f} MB), median of "
              f"{harness.timing_phrase(report['settings'], stream=True)}. GB/s counts "
              f"{BYTES_PER_ELEMENT} bytes per element for every variant. "
              + harness.bandwidth_legend(STREAM, MINE, one_thread="NumPy"))
    libraries = (f"NumPy {info['numpy']}; numexpr {info['numexpr'] or 'not installed'}; "
                 f"PyTorch {info['torch'] or 'not installed'}")
    table = harness.bandwidth_table(report["summary"], STREAM, MINE, ms_digits=3)
    return harness.markdown_report(report, f"a * b + c on float32: {MINE} against memory "
                                   "bandwidth", libraries, method, [table])


def main(argv=None):
    args = harness.parse_options(argv, __doc__, repeat=21, n=10_000_000,
                                 n_help="floats per array", quick_n=200_000)
    notes = []
    numexpr = harness.optional_import("numexpr", notes, "numexpr skipped: it is not installed.")
    torch = harness.optional_import("torch", notes,
                                    "torch.addcmul skipped: PyTorch is not installed.")
    info = harness.machine_info({"numpy": np.__version__, "numexpr": harness.version(numexpr),
                                 "torch": harness.version(torch)})
    n = args.n
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
    ref = a.astype(np.float64) * b + c

    variants = addcmul_variants(a, b, c, args.threads, numexpr, torch)
    for (label, t), setup, run, out in variants:  # warm-up: pools, pages, first-call costs
        setup()
        run()
        if not addcmul_close(out, ref, a, b, c):
            notes.append(f"{label} threads={t}: result differs from a * b + c in float64")
        time.sleep(PAUSE_S)
    samples, triad_runs = harness.passes_beside_stream(
        [v[:3] for v in variants], args.repeat, PAUSE_S,
        (TRIAD_SRC, STREAM, n, args.threads, notes, "its result did not check", None))
    if torch is not None:
        torch.set_num_threads(max(args.threads))

    rows = harness.bandwidth_rows(samples, n, BYTES_PER_ELEMENT)
    index = {(r["variant"], r["threads"]): r for r in rows}
    pyrt_vs_stream = {t: index[MINE, t]["gb_per_s"] / index[STREAM, t]["gb_per_s"]
                      for t in args.threads if (STREAM, t) in index}
    settings = harness.run_settings(__file__, argv, args, bytes_per_element=BYTES_PER_ELEMENT,
                                    stream_flags=" ".join(harness.STREAM_FLAGS))
    harness.write_report(args.out, "kernels_elementwise", info, settings, notes, {
        "pyrt_over_stream": pyrt_vs_stream, "summary": rows,
        "samples": harness.sample_records(samples, ("variant", "threads")),
        "stream_runs": triad_runs,
    }, markdown)


if __name__ == "__main__":
    main()
