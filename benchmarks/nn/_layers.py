"""pyrt.nn layers beside PyTorch's on the same weights and inputs: what bench_sequence.py and
bench_volumes.py share. A workload is (name, torch.nn / pyrt.nn class name, keyword arguments,
input shape); each is timed as its forward call under no_grad ("forward") and a training step
("step": forward with autograd, the loss sum(out * w) for a fixed random w, zero_grad and
backward), with pyrt's module loaded with the torch module's state_dict and its output and
gradients checked against torch's.
"""

import sys

import numpy as np

import benchmarks._harness as harness
import pyrt
from pyrt import nn
from pyrt.bench.report import markdown_table

PAUSE_S = 0.005


def first_output(module_name, out):
    """The tensor a loss reads: the sequence output of a recurrent layer ((output, state)),
    the attention output of MultiheadAttention ((output, weights)), else the output."""
    return out[0] if isinstance(out, tuple) else out


def call(module_name, module, x):
    if module_name == "MultiheadAttention":
        return module(x, x, x, need_weights=False)
    return module(x)


def variants(rng, module_name, kwargs, shape, torch):
    """{variant: (forward, step, results)}: the two timed calls, and a call giving the output
    and every parameter's gradient to check."""
    torch.manual_seed(0)
    theirs = getattr(torch.nn, module_name)(**kwargs)
    mine = getattr(nn, module_name)(**kwargs)
    mine.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = rng.standard_normal(shape).astype(np.float32)
    w = None  # the loss weights, of the output's shape, drawn on the first call

    def runs(lib, module, tensor):
        nonlocal w
        xs = tensor(x)
        with lib.no_grad():
            out_shape = tuple(first_output(module_name, call(module_name, module, xs)).shape)
        if w is None:
            w = rng.standard_normal(out_shape).astype(np.float32)
        wt = tensor(w)
        params = list(module.parameters())

        def forward():
            with lib.no_grad():
                return call(module_name, module, xs)

        def step():
            for p in params:
                p.grad = None
            out = first_output(module_name, call(module_name, module, xs))
            loss = (out * wt).sum()
            loss.backward()
            return out

        def results():
            out = step().detach().numpy()
            return [out] + [p.grad.numpy().copy() for p in params]

        return forward, step, results

    return {"pyrt": runs(pyrt, mine, pyrt.tensor),
            "torch": runs(torch, theirs, lambda a: torch.from_numpy(a.copy()))}


def check(name, runs, args, torch, notes):
    """pyrt's output and gradients against torch's, at the first thread count."""
    pyrt.set_num_threads(args.threads[0])
    torch.set_num_threads(args.threads[0])
    mine, theirs = runs["pyrt"][2](), runs["torch"][2]()
    for k, (a, b) in enumerate(zip(mine, theirs)):
        if not np.allclose(a, b, rtol=1e-3, atol=1e-4 * (1 + np.abs(b).max())):
            what = "output" if k == 0 else f"gradient {k - 1}"
            notes.append(f"pyrt {name}: {what} differs from torch")


def report_markdown(report, title, workloads):
    info, settings = report["machine"], report["settings"]
    med = {(r["workload"], r["variant"], r["pass"], r["threads"]): r["median_s"]
           for r in report["summary"]}
    cells = []
    for name, *_ in workloads:
        for threads in settings["threads"]:
            row = [med.get((name, v, p, threads)) for p in ("forward", "step")
                   for v in ("pyrt", "torch")]
            if None in row:
                continue
            cells.append([name, threads] + [f"{s * 1e6:.0f}" for s in row]
                         + [f"{row[0] / row[1]:.2f}", f"{row[2] / row[3]:.2f}"])
    table = markdown_table(["workload", "threads", "pyrt fwd", "torch fwd", "pyrt step",
                            "torch step", "fwd pyrt/torch", "step pyrt/torch"], cells)
    method = (f"Median time per call in microseconds, of {harness.timing_phrase(settings)}. "
              "`fwd` is the forward call under no_grad; `step` the forward with autograd, the "
              "loss, zero_grad and backward. pyrt/torch is pyrt's time over torch's at the "
              "same thread count (below 1: pyrt is faster).")
    return harness.markdown_report(
        report, title, f"NumPy {info['numpy']}; PyTorch {info['torch']}", method, [table],
        load_at_end=True)


def main(argv, doc, script, out_name, title, workloads):
    """The run of a benchmark of `workloads`: out/<out_name>.json and .md titled `title`."""
    args = harness.parse_options(argv, doc, repeat=9, sample_ms=50.0)
    notes = []
    torch = harness.optional_import("torch", notes, "PyTorch is not installed")
    if torch is None:
        sys.exit(f"{out_name} compares pyrt with PyTorch: install torch to run it")
    info = harness.machine_info({"numpy": np.__version__, "torch": harness.version(torch)})
    rng = np.random.default_rng(0)

    results = {"summary": [], "samples": []}
    for name, module_name, kwargs, shape in workloads:
        runs = variants(rng, module_name, kwargs, shape, torch)
        check(name, runs, args, torch, notes)
        samples = harness.pyrt_torch_passes(runs, ("forward", "step"), args, torch, PAUSE_S)
        key_names = ("variant", "pass", "threads")
        results["summary"] += harness.median_rows(samples, key_names, workload=name)
        results["samples"] += harness.sample_records(samples, key_names, workload=name)
        print(f"done {name}", flush=True)

    def markdown(report):
        return report_markdown(report, title, workloads)

    settings = harness.run_settings(script, argv, args)
    harness.write_report(args.out, out_name, info, settings, notes, results, markdown)
