"""3-d layers: pyrt.nn beside PyTorch on the same modules, weights and inputs.

The workloads are layers of a small volumetric network (video or medical images):

    conv3d 3->16     nn.Conv3d(3, 16, 3, padding=1), x [4, 3, 16, 64, 64]
    conv3d 16->32    nn.Conv3d(16, 32, 3, padding=1), x [8, 16, 16, 32, 32]
    conv3d 32->32    nn.Conv3d(32, 32, 3, padding=1), x [16, 32, 8, 16, 16]
    convT3d 32->16   nn.ConvTranspose3d(32, 16, 2, stride=2), x [8, 32, 8, 16, 16]
    batchnorm3d      nn.BatchNorm3d(16) in training, x [8, 16, 16, 32, 32]

each timed as two passes, in this process: the forward call alone under no_grad ("forward"),
and a training step ("step": forward with autograd, the loss sum(out * w) for a fixed
random w, zero_grad and backward), with pyrt's module loaded with the torch module's
state_dict and its output and gradients checked against torch's (benchmarks/nn/_layers.py).

    python benchmarks/nn/bench_volumes.py                  # threads 1 and 2
    python benchmarks/nn/bench_volumes.py --quick --out /tmp/vol   # smoke test

Writes nn_volumes.json and nn_volumes.md under --out (default benchmarks/results).
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.nn import _layers  # noqa: E402

# (name, module constructor name, keyword arguments, input shape)
WORKLOADS = [
    ("conv3d 3->16", "Conv3d", {"in_channels": 3, "out_channels": 16, "kernel_size": 3,
                                "padding": 1}, (4, 3, 16, 64, 64)),
    ("conv3d 16->32", "Conv3d", {"in_channels": 16, "out_channels": 32, "kernel_size": 3,
                                 "padding": 1}, (8, 16, 16, 32, 32)),
    ("conv3d 32->32", "Conv3d", {"in_channels": 32, "out_channels": 32, "kernel_size": 3,
                                 "padding": 1}, (16, 32, 8, 16, 16)),
    ("convT3d 32->16", "ConvTranspose3d", {"in_channels": 32, "out_channels": 16,
                                           "kernel_size": 2, "stride": 2}, (8, 32, 8, 16, 16)),
    ("batchnorm3d", "BatchNorm3d", {"num_features": 16}, (8, 16, 16, 32, 32)),
]


def main(argv=None):
    _layers.main(argv, __doc__, __file__, "nn_volumes", "3-d layers: pyrt.nn against PyTorch",
                 WORKLOADS)


if __name__ == "__main__":
    main()
