"""The eager training step of the pyrt that `import pyrt` finds, beside PyTorch's, in turns in
one process: for comparing two builds of pyrt (each on PYTHONPATH in its own processes,
alternated), each against the same PyTorch run.

For each of the MNIST-shaped CNN and MLP (batch 64, SGD with momentum, random data): 7
rounds of 200 pyrt steps then 200 PyTorch steps, each timed on the host clock with both
devices synchronised; prints one JSON line with the medians and the median of the rounds'
ratios (pyrt / torch).

    PYTHONPATH=BUILD python benchmarks/cuda/eager_pair.py LABEL
"""

import json
import statistics
import sys
import time
from pathlib import Path

import cupy
import torch

import pyrt

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_cuda

from pyrt import nn
from pyrt.cli.models import cnn, mlp

ROUNDS, STEPS = 7, 200


def _sync():
    torch.cuda.synchronize()
    cupy.cuda.Device().synchronize()


def main():
    bench_cuda._require()
    result = {"label": sys.argv[1] if len(sys.argv) > 1 else "pyrt", "pyrt": pyrt.__file__}
    for name, build in (("cnn", cnn), ("mlp", mlp)):
        x, y = bench_cuda._batch((1, 28, 28), 10, 64)
        ours, _ = bench_cuda.pyrt_step(build, x, y, nn.CrossEntropyLoss(), False)
        theirs = bench_cuda.torch_step(name, x, y)
        for _ in range(50):
            ours()
            theirs()
        times = {"pyrt": [], "torch": []}
        for _ in range(ROUNDS):
            for key, step in (("pyrt", ours), ("torch", theirs)):
                _sync()
                start = time.perf_counter()
                for _ in range(STEPS):
                    step()
                _sync()
                times[key].append((time.perf_counter() - start) / STEPS * 1e6)
        result[name] = {"pyrt_us": statistics.median(times["pyrt"]),
                        "torch_us": statistics.median(times["torch"]),
                        "ratio": statistics.median(p / t for p, t in
                                                   zip(times["pyrt"], times["torch"]))}
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
