"""SGEMM: pyrt.ops.matmul beside NumPy (OpenBLAS) and torch.matmul, at equal thread counts.

The question is how close pyrt's packed, cache-blocked GEMM comes to (or how far it passes)
the BLAS everyone uses, on square products and on the products a small network trains with:

    square      64^3, 256^3, 1024^3
    MLP         784-128-10 at batch 64: forward X W^T, input gradient dY W, weight gradient
                dY^T X of each layer (trans flags as the layers use them)
    CNN         conv as GEMM at batch 64: conv1 (8 filters of 1x3x3 over 28x28) and conv2
                (16 filters of 8x3x3 over 14x14): forward W col, weight gradient dY col^T,
                column gradient W^T dY
    few rows    a vector and four rows times a matrix, x W (inference at batch 1 and 4 with
                the weight stored [in, out]): B is read once, so memory bound

In this process, each writing into a preallocated output:

    pyrt.ops.linalg.matmul(a, b, trans_a=, trans_b=, out=c)    pyrt.set_num_threads(t)
    np.matmul(op(a), op(b), out=c)                              threadpoolctl BLAS limit t
    torch.matmul(op(a), op(b), out=c)                           torch.set_num_threads(t)

and in a child process, np.matmul as above with OPENBLAS_CORETYPE=Haswell: OpenBLAS's AVX2
kernel, the peer the GEMM targets were first set against. NumPy in this process runs the
kernel OpenBLAS picks for the CPU (SkylakeX, AVX-512, on a Xeon with AVX-512); the kernel
cannot change once the library is loaded, hence the second process. The child times its own
samples, in turn with the others (blas_child.py); it is left out, with a note, when NumPy's
BLAS is not OpenBLAS or already runs that kernel. torch is skipped, with a note, when it is
not installed.

Each sample times enough calls to take about --sample-ms; variants are interleaved sample by
sample, so drift on a shared machine spreads over all of them, with a pause between samples
(PAUSE_S, PEER_PAUSE_S after a peer on several threads) so that a library's spinning threads
are gone before the next one runs, and an untimed quarter of a sample before each sample.
GFLOP/s = 2 m n k / median seconds per call; the machine's multiply-add peak on as many
threads (benchmarks/kernels/fma_peak.c, built with gcc -O3 -march=native -fopenmp) is measured
before and after the products, the ceiling no product can pass. pyrt's results are checked
against float64 and for bitwise equality across thread counts.

    python benchmarks/kernels/bench_gemm.py                  # threads 1 and 2
    python benchmarks/kernels/bench_gemm.py --threads 1,2,4 --repeat 15
    python benchmarks/kernels/bench_gemm.py --quick --out /tmp/gemm   # smoke test

Writes kernels_gemm.json (machine, settings, every sample) and kernels_gemm.md (medians,
GFLOP/s, ratios) under --out (default benchmarks/results).
"""

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
from threadpoolctl import ThreadpoolController

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import benchmarks._harness as harness  # noqa: E402
from benchmarks.kernels.blas_child import BlasChild  # noqa: E402
from pyrt.bench.kernels import MLP_GEMMS, gemm_close, gemm_operands, gemm_variants  # noqa: E402
from pyrt.ops.linalg import sgemm_kernel  # noqa: E402

# Between two timed samples: libgomp's threads keep spinning for a few milliseconds after a
# call, and OpenBLAS's for 2^28 cycles, about 0.1 s here, which would eat into the next
# library's time on 2 threads (pyrt's 2-thread samples of the fc2 products, which run on the
# calling thread alone, were 3.6-4.3 us against 2.7-3.0 with a pause of 0.1 s after every
# sample). After a peer's sample on several threads the pause is longer.
PAUSE_S = 0.1
PEER_PAUSE_S = 0.3


def pause_after(key):
    label, threads = key
    return PEER_PAUSE_S if threads > 1 and label != "pyrt" else PAUSE_S

# (group, name, m, n, k, trans_a, trans_b)
SHAPES = [
    ("square", "64^3", 64, 64, 64, False, False),
    ("square", "256^3", 256, 256, 256, False, False),
    ("square", "1024^3", 1024, 1024, 1024, False, False),
    *(("MLP", *shape) for shape in MLP_GEMMS),
    ("CNN", "conv1 forward W col", 8, 64 * 28 * 28, 9, False, False),
    ("CNN", "conv1 dW = dY col^T", 8, 9, 64 * 28 * 28, False, True),
    ("CNN", "conv1 dcol = W^T dY", 9, 64 * 28 * 28, 8, True, False),
    ("CNN", "conv2 forward W col", 16, 64 * 14 * 14, 72, False, False),
    ("CNN", "conv2 dW = dY col^T", 16, 72, 64 * 14 * 14, False, True),
    ("CNN", "conv2 dcol = W^T dY", 72, 64 * 14 * 14, 16, True, False),
    ("few rows", "x W (1 row)", 1, 2048, 512, False, False),
    ("few rows", "X W (4 rows)", 4, 2048, 512, False, False),
]
QUICK_SHAPES = {"64^3", "256^3", "fc1 forward X W1^T", "conv2 dW = dY col^T"}


# the machine's multiply-add peak, measured before and after the products (fma_peak.c)
PEAK_SRC = ROOT / "benchmarks" / "kernels" / "fma_peak.c"


def fma_peak(exe, threads, reps):
    """GFLOP/s of fma_peak.c's passes on `threads` threads: the per-pass figures."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    proc = subprocess.run([str(exe), str(reps)], check=True, env=env, capture_output=True,
                          text=True, timeout=600)
    run = json.loads(proc.stdout.strip().splitlines()[-1])
    flops = run["gflop_per_s"] * statistics.median(run["samples"])
    return [flops / s for s in run["samples"]]


# OPENBLAS_CORETYPE of the second NumPy peer, and the label of its results
AVX2_CORETYPE = "Haswell"
AVX2_LABEL = "numpy-avx2"


def measure(shape, args, blas, torch, child, rng, notes, pyrt_results):
    _, name, m, n, k, trans_a, trans_b = shape
    a, b = gemm_operands(rng, m, n, k, trans_a, trans_b)
    c = np.empty((m, n), np.float32)
    samples = {}
    if child is not None and not child.shape(m, n, k, trans_a, trans_b):
        notes.append(f"{AVX2_LABEL} {name}: wrong result")
    for threads in args.threads:
        vs = gemm_variants(a, b, c, trans_a, trans_b, threads, blas, torch)
        for (label, _), setup, run in vs:  # warm-up, and every library's result checked
            setup()
            run()
            if not gemm_close(c, a, b, trans_a, trans_b):
                notes.append(f"{label} {name} threads={threads}: wrong result")
            if label == "pyrt":
                pyrt_results.setdefault(name, []).append(c.copy())
        if child is not None:
            vs.append(child.variant((AVX2_LABEL, threads), threads))
        samples.update(harness.timed_passes(vs, args.repeat, pause_after,
                                            sample_s=args.sample_ms / 1e3))
    return samples


def blas_libraries(controller):
    """"openblas 0.3.x (Haswell)" for each BLAS threadpoolctl finds loaded."""
    return [f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')})"
            for i in controller.info() if i.get("user_api") == "blas"]


def avx2_child(controller, notes):
    """A BlasChild on OpenBLAS's AVX2 kernel, or None (with a note) where it adds nothing or
    cannot be had."""
    blas = [i for i in controller.info() if i.get("user_api") == "blas"]
    if not blas or blas[0].get("internal_api") != "openblas":
        notes.append(f"{AVX2_LABEL} skipped: NumPy's BLAS is not OpenBLAS.")
        return None
    if blas[0].get("architecture") == AVX2_CORETYPE:
        notes.append(f"{AVX2_LABEL} skipped: NumPy's OpenBLAS already runs its "
                     f"{AVX2_CORETYPE} kernel (the numpy columns).")
        return None
    child = BlasChild(AVX2_CORETYPE)
    if child.architecture != AVX2_CORETYPE:
        notes.append(f"{AVX2_LABEL} skipped: OPENBLAS_CORETYPE={AVX2_CORETYPE} gave "
                     f"{child.architecture}.")
        child.close()
        return None
    return child


def paired_speed(samples, shape, threads, peer):
    """pyrt's speed over `peer`'s, pass by pass: the median over the passes of the peer's
    sample over pyrt's sample of the same pass (None when either is missing). The passes take
    the variants in turn, so the two samples of a pass meet the same moment of the machine,
    whose speed drifts by more than the gap between libraries from one pass to the next."""
    mine = samples.get((shape, "pyrt", threads))
    theirs = samples.get((shape, peer, threads))
    if not mine or not theirs:
        return None
    return statistics.median(t / p for p, t in zip(mine, theirs))


def markdown(report):
    info, rows = report["machine"], report["summary"]
    index = {(r["shape"], r["variant"], r["threads"]): r for r in rows}
    samples = {(r["shape"], r["variant"], r["threads"]): r["seconds"]
               for r in report.get("samples", [])}
    cells = []
    peak = {int(t): statistics.median(v) for t, v in report.get("fma_peak", {}).items()}
    for shape, threads in dict.fromkeys((r["shape"], r["threads"]) for r in rows):
        mine = index.get((shape, "pyrt", threads))
        np_row = index.get((shape, "numpy", threads))
        t_row = index.get((shape, "torch", threads))
        v_row = index.get((shape, AVX2_LABEL, threads))
        flags = ("T" if mine["trans_a"] else "") + "·" + ("T" if mine["trans_b"] else "")
        paired = paired_speed(samples, shape, threads, "torch")
        cells.append([
            mine["group"], shape, f"{mine['m']}, {mine['n']}, {mine['k']} ({flags})", threads,
            f"{mine['gflop_per_s']:.1f}",
            f"{np_row['gflop_per_s']:.1f}" if np_row else "-",
            f"{t_row['gflop_per_s']:.1f}" if t_row else "-",
            f"{v_row['gflop_per_s']:.1f}" if v_row else "-",
            f"{np_row['median_s'] / mine['median_s']:.2f}" if np_row else "-",
            f"{t_row['median_s'] / mine['median_s']:.2f}" if t_row else "-",
            f"{paired:.2f}" if paired is not None else "-",
            f"{v_row['median_s'] / mine['median_s']:.2f}" if v_row else "-",
            *([" / ".join(f"{r['gflop_per_s'] / peak[threads]:.0%}" if r else "-"
                          for r in (mine, np_row, t_row))] if peak else [])])
    table = harness.markdown_table(
        ["group", "product", "m, n, k", "threads", "pyrt GFLOP/s", "numpy GFLOP/s",
         "torch GFLOP/s", "OpenBLAS AVX2 GFLOP/s", "÷ numpy", "÷ torch", "÷ torch, paired",
         "÷ AVX2",
         *(["÷ peak: pyrt / numpy / torch"] if peak else [])], cells)
    method = (f"GFLOP/s = 2mnk / median time per call, median of "
              f"{harness.timing_phrase(report['settings'])}. `÷ numpy`, `÷ torch` and `÷ AVX2` "
              "are pyrt's speed over theirs at the same thread count (above 1: pyrt is "
              "faster); `OpenBLAS AVX2` is np.matmul in a child process with "
              f"OPENBLAS_CORETYPE={AVX2_CORETYPE}. `÷ torch, paired` is the median over the "
              "passes of torch's sample over pyrt's in the same pass, which the machine's drift "
              "between passes moves less than the ratio of the medians. Shapes are (m, n, k) of "
              "op(A) [m, k] times op(B) [k, n]; T marks a transposed operand.")
    if peak:
        method += (" `÷ peak` is each library's GFLOP/s over the machine's multiply-add peak "
                   "(benchmarks/kernels/fma_peak.c: chains of vector FMAs on registers, on "
                   "every thread at once, median of passes before and after the products): "
                   + ", ".join(f"{v:.0f} GFLOP/s at {t} thread{'s' if t > 1 else ''}"
                               for t, v in sorted(peak.items()))
                   + ". No SGEMM can pass it; a peer at more than 1/r of it cannot be beaten "
                   "r times.")
    avx2 = info.get("blas_avx2")
    libraries = (f"NumPy {info['numpy']} with {', '.join(info['blas']) or 'no BLAS found'}"
                 f"{f' (and {avx2} in the child)' if avx2 else ''}; "
                 f"PyTorch {info['torch'] or 'not installed'}; "
                 f"pyrt kernel {info['pyrt_sgemm_kernel']}")
    return harness.markdown_report(
        report, "SGEMM: pyrt.ops.matmul against OpenBLAS (NumPy) and PyTorch", libraries, method,
        [table], load_at_end=True)


def main(argv=None):
    args = harness.parse_options(argv, __doc__, repeat=7, sample_ms=10.0,
                                 quick_help="4 shapes, 3 short samples")
    notes = []
    torch = harness.optional_import("torch", notes,
                                    "torch.matmul skipped: PyTorch is not installed.")
    controller = ThreadpoolController()
    blas = controller if any(i.get("user_api") == "blas" for i in controller.info()) else None
    if blas is None:
        notes.append("np.matmul skipped: threadpoolctl finds no BLAS to limit.")
    child = avx2_child(controller, notes)
    info = harness.machine_info({"numpy": np.__version__, "blas": blas_libraries(controller),
                                 "blas_avx2": child and f"OpenBLAS ({child.architecture})",
                                 "torch": harness.version(torch),
                                 "pyrt_sgemm_kernel": sgemm_kernel()})
    rng = np.random.default_rng(0)
    shapes = [s for s in SHAPES if not args.quick or s[1] in QUICK_SHAPES]

    peak_exe = harness.build_stream(PEAK_SRC, harness.KERNELS_BUILD, notes)
    peak = {t: [] for t in args.threads} if peak_exe is not None else {}
    for t, runs in peak.items():
        runs += fma_peak(peak_exe, t, args.repeat)
    results, pyrt_results = {"summary": [], "samples": []}, {}
    for shape in shapes:
        group, name, m, n, k, trans_a, trans_b = shape
        samples = measure(shape, args, blas, torch, child, rng, notes, pyrt_results)
        rows = harness.median_rows(samples, ("variant", "threads"), group=group, shape=name,
                                   m=m, n=n, k=k, trans_a=trans_a, trans_b=trans_b)
        results["summary"] += [dict(r, gflop_per_s=2e-9 * m * n * k / r["median_s"])
                               for r in rows]
        results["samples"] += harness.sample_records(samples, ("variant", "threads"), shape=name)
        print(f"done {name}", flush=True)
    for t, runs in peak.items():
        runs += fma_peak(peak_exe, t, args.repeat)
    results["fma_peak"] = peak
    if child is not None:
        child.close()
    for name, outputs in pyrt_results.items():
        if not all(np.array_equal(c, outputs[0]) for c in outputs):
            notes.append(f"pyrt {name}: results differ across thread counts")

    settings = harness.run_settings(__file__, argv, args)
    harness.write_report(args.out, "kernels_gemm", info, settings, notes, results, markdown)


if __name__ == "__main__":
    main()
