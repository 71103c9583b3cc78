"""What ``python -m pyrt bench scaling`` runs: the workloads, their variants and their sizes.

A workload is one piece of work timed several ways: pyrt's, its peers' (the libraries a user
would reach for instead, each selected by a --peers name) and the references it is measured
against (a serial C baseline, a STREAM-style bandwidth ceiling), which always run. A variant is
either a C program of the source checkout (benchmarks/runtime/, benchmarks/kernels/), run
with its arguments, or Python code that pyrt.bench.worker runs by the workload's name and the
variant's label.

Sizes come in two sets: the full ones, and --quick ones that make the whole sweep a smoke test
of a few seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyrt.bench.kernels import MLP_GEMMS

__all__ = ["NAMES", "SUITE_OF", "Variant", "Workload", "catalogue", "sizes"]

# Problem sizes: (full, --quick).
SIZES = {
    "fib_n": (30, 20),
    "fib_reps": (3, 1),
    "loop64_calls": (1_000_000, 20_000),
    "loop_large_n": (1 << 20, 1 << 14),
    "loop_large_calls": (2_000, 50),
    "loop_max_seconds": (0.5, 0.05),
    "sum_n": (100_000_000, 1_000_000),
    "addcmul_n": (10_000_000, 100_000),
    "stream_reps": (5, 2),
    "gemm_n": (1024, 128),
    "conv_batch": (64, 8),
    "xor_steps": (2000, 100),
    "synthetic_steps": (200, 10),  # epochs on synthetic data, when Fashion-MNIST is absent
    "sample_s": (0.2, 0.005),  # length of a timed sample of back-to-back kernel calls
}

# XOR steps timed together in a run of them: a run's figure is the median of its blocks.
XOR_BLOCK = 100


def xor_block(steps):
    """Steps timed together in a run of `steps`: XOR_BLOCK, or a tenth of the run if fewer."""
    return min(XOR_BLOCK, max(1, steps // 10))


# Workload name -> suite, in the order the report lists them.
SUITE_OF = {
    "fib": "runtime", "loop64": "runtime", "loop_large": "runtime",
    "sum": "kernels", "addcmul": "kernels", "gemm1024": "kernels", "gemm_mlp": "kernels",
    "conv": "kernels",
    "xor": "train", "mlp_epoch": "train", "cnn_epoch": "train",
}
NAMES = tuple(SUITE_OF)


@dataclass(frozen=True)
class Variant:
    label: str  # as the tables and the plot name it
    peer: str | None = None  # the --peers name that selects it; None: pyrt or a reference
    program: str | None = None  # a C program of pyrt.bench.programs; None: Python code
    args: tuple = ()  # the C program's arguments
    threaded: bool = True  # False: runs on one thread only, whatever --threads says
    reference: bool = False  # a serial baseline or a bandwidth ceiling: runs whatever --peers

    @property
    def is_pyrt(self):
        return self.peer is None and not self.reference


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    what: str  # a sentence for the report: what one timed call does
    variants: tuple
    rate: tuple | None = None  # (unit, amount per call): the table shows amount / seconds
    notes: tuple = field(default_factory=tuple)  # said in the report beside the table

    @property
    def suite(self):
        return SUITE_OF[self.name]

    @property
    def pyrt(self):
        return next(v for v in self.variants if v.is_pyrt)


GEMM_VARIANTS = (Variant("pyrt.ops.matmul"), Variant("np.matmul", peer="numpy"),
                 Variant("torch.matmul", peer="torch"))


def sizes(quick):
    """The problem sizes, full or --quick."""
    return {key: pair[1] if quick else pair[0] for key, pair in SIZES.items()}


def _runtime(size):
    n, reps = size["fib_n"], size["fib_reps"]
    fib_tasks = 2 * _fib(n + 1) - 1
    fib = Workload(
        "fib", f"fib({n}), one task per call",
        f"Naive recursion with a task spawned per call: {fib_tasks} tasks; the time of one "
        f"fib({n}) (the median of {reps} inside each run).",
        (Variant("pyrt", program="fib_pyrt", args=(n, reps)),
         Variant("serial C", program="fib_serial", args=(n, reps), threaded=False,
                 reference=True),
         Variant("omp task", peer="omp", program="fib_omp", args=(n, reps)),
         Variant("tbb task_group", peer="tbb", program="fib_tbb", args=(n, reps))),
        rate=("M tasks/s", fib_tasks * 1e-6))
    loops = []
    for name, elems, calls, tbb in (
            ("loop64", 64, size["loop64_calls"], "simple"),
            ("loop_large", size["loop_large_n"], size["loop_large_calls"], "auto")):
        common = (elems, calls, size["loop_max_seconds"])
        loops.append(Workload(
            name, f"{elems}-element parallel_for",
            f"`y[i] = y[i]*a + x[i]` over {elems} floats, the whole loop called back to back "
            "in batches (of 1000 calls, or a hundredth of the calls if fewer); the time of one "
            "call, the median over the batches. pyrt with its automatic grain, TBB with the "
            f"{'simple partitioner and grain 32' if tbb == 'simple' else 'auto partitioner'}.",
            (Variant("pyrt", program="loop_pyrt", args=(*common, 0, "main")),
             Variant("serial C", program="loop_serial", args=common, threaded=False,
                     reference=True),
             Variant("omp parallel for", peer="omp", program="loop_omp", args=common),
             Variant(f"tbb ({tbb})", peer="tbb", program="loop_tbb", args=(*common, tbb))),
            rate=("G iterations/s", elems * 1e-9)))
    return [fib, *loops]


def _bandwidth(name, title, what, variants, n, reps, bytes_per_element):
    """A memory-bound workload on n float32, rated in GB/s: pyrt's variant first, then the
    STREAM-style ceiling as (label, program), run on the same n, then the peers."""
    mine, (label, program), *peers = variants
    return Workload(name, title.replace("e+0", "e"), what,
                    (Variant(mine), Variant(label, program=program, args=(n, reps),
                                            reference=True), *peers),
                    rate=("GB/s", bytes_per_element * 1e-9 * n))


def _kernels(size):
    reps, n_sum, n_addcmul = size["stream_reps"], size["sum_n"], size["addcmul_n"]
    sum_ = _bandwidth(
        "sum", f"sum of {n_sum:.0e} float32",
        f"pyrt.ops.sum of {n_sum} float32 ({4e-6 * n_sum:.0f} MB), against the STREAM-style "
        "read of the same bytes (benchmarks/runtime/sum/stream_read.c, OpenMP, -O3 "
        "-march=native).",
        ("pyrt.ops.sum", ("STREAM read", "stream_read"),
         Variant("np.sum", peer="numpy", threaded=False), Variant("torch.sum", peer="torch")),
        n_sum, reps, 4)
    addcmul = _bandwidth(
        "addcmul", f"a * b + c on {n_addcmul:.0e} float32",
        f"pyrt.ops.addcmul into a preallocated output, {n_addcmul} float32 per array, against "
        "the STREAM triad (benchmarks/kernels/stream_triad.c); 16 bytes move per element.",
        ("pyrt.ops.addcmul", ("STREAM triad", "stream_triad"),
         Variant("NumPy multiply+add", peer="numpy", threaded=False),
         Variant("numexpr", peer="numexpr"), Variant("torch.addcmul", peer="torch")),
        n_addcmul, reps, 16)
    g = size["gemm_n"]
    gemm = Workload(
        "gemm1024", f"sgemm {g}^3",
        f"pyrt.ops.matmul of two {g}x{g} float32 matrices into a preallocated output; NumPy's "
        "BLAS limited with threadpoolctl.",
        GEMM_VARIANTS, rate=("GFLOP/s", 2e-9 * g ** 3))
    mlp_flops = sum(2e-9 * m * n * k for _, m, n, k, _, _ in MLP_GEMMS)
    gemm_mlp = Workload(
        "gemm_mlp", "sgemm, the MLP's six products",
        "One call of each product of a training step of the 784-128-10 MLP at batch 64 "
        "(forward, input and weight gradients of both layers, with their transposes).",
        GEMM_VARIANTS, rate=("GFLOP/s", mlp_flops))
    batch = size["conv_batch"]
    conv = Workload(
        "conv", f"conv2d forward+backward, the CNN's two layers at batch {batch}",
        f"3x3 convolutions with padding 1 of [{batch}, 1, 28, 28] to 8 channels and of "
        f"[{batch}, 8, 14, 14] to 16: forward, then all three gradients; torch through the "
        "aten kernels autograd runs.",
        (Variant("pyrt.ops.conv2d"), Variant("torch", peer="torch")))
    return [sum_, addcmul, gemm, gemm_mlp, conv]


def _train(size, data, quick):
    steps = size["xor_steps"]
    xor = Workload(
        "xor", "XOR training step (Arraymancer #485)",
        "One step (forward, loss, zero_grad, backward, SGD step) of the bias-free 2-3-1 ReLU "
        f"network at batch 32: {steps} steps after a warm-up, timed in blocks of "
        f"{xor_block(steps)}, the median block's time per step; NumPy: the same "
        "step written by hand.",
        (Variant("pyrt"), Variant("torch", peer="torch"),
         Variant("NumPy by hand", peer="numpy", threaded=False)))
    if data is None or quick:
        images = 64 * size["synthetic_steps"]
        why = "--quick" if quick else "Fashion-MNIST was not found"
        source = f"{size['synthetic_steps']} steps ({images} images) of synthetic data ({why})"
        notes = ((f"Synthetic data ({why}): an epoch is {size['synthetic_steps']} steps on "
                  "random images; its accuracy means nothing."),)
    else:
        images = 60000
        source = f"one epoch of the 60000 images in {data}"
        notes = ()
    epochs = []
    for name, model in (("mlp_epoch", "MLP 784-128-10"),
                        ("cnn_epoch", "CNN (conv 8, pool, conv 16, pool, linear)")):
        epochs.append(Workload(
            name, f"Fashion-MNIST {model}, one epoch",
            f"Training time of {source}: batch 64, SGD lr 0.1 momentum 0.9, torch starting from "
            "pyrt's initial weights and seeing the same batches.",
            (Variant("pyrt"), Variant("torch", peer="torch")),
            rate=("images/s", images), notes=notes))
    return [xor, *epochs]


def catalogue(quick, data):
    """Every workload at the full or --quick sizes, in report order. `data` is the folder of
    Fashion-MNIST, or None: the epochs then run a fixed number of steps on synthetic data, as
    they do with --quick."""
    size = sizes(quick)
    return _runtime(size) + _kernels(size) + _train(size, data, quick)


def _fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
