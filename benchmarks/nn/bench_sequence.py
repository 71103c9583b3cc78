"""Sequence layers: pyrt.nn beside PyTorch on the same modules, weights and inputs.

The workloads are small and medium recurrent and attention layers, as a character model or a
small translation model has them:

    lstm          nn.LSTM(64, 128), x [32 steps, batch 16, 64]
    lstm 2x bi    nn.LSTM(64, 128, num_layers=2, bidirectional=True), same x
    gru           nn.GRU(64, 128), same x
    mha           nn.MultiheadAttention(128, 4, batch_first=True), self-attention of
                  x [16, 64, 128]
    encoder       nn.TransformerEncoderLayer(128, 4, 512, dropout=0, batch_first=True),
                  x [16, 64, 128]

each timed as two passes, in this process: the forward call alone under no_grad ("forward"),
and a training step ("step": forward with autograd, the loss sum(out * w) for a fixed
random w, zero_grad and backward). pyrt's module is loaded with the torch module's
state_dict, so that both compute the same function, and its output and gradients are
checked against torch's.

Thread counts are set with pyrt.set_num_threads(t) and torch.set_num_threads(t). Each sample
times enough calls to take about --sample-ms; variants are interleaved sample by sample, so
drift on a shared machine spreads over all of them. The report gives medians and pyrt's time
over torch's (below 1: pyrt is faster).

    python benchmarks/nn/bench_sequence.py                  # threads 1 and 2
    python benchmarks/nn/bench_sequence.py --threads 1,2,4 --repeat 15
    python benchmarks/nn/bench_sequence.py --quick --out /tmp/seq   # smoke test

Writes nn_sequence.json (machine, settings, every sample) and nn_sequence.md (medians, ratios)
under --out (default benchmarks/results).
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.nn import _layers  # noqa: E402

X_RNN = (32, 16, 64)  # [steps, batch, features]
X_ATTENTION = (16, 64, 128)  # [batch, sequence, d_model]

# (name, module constructor name, keyword arguments, input shape)
WORKLOADS = [
    ("lstm", "LSTM", {"input_size": 64, "hidden_size": 128}, X_RNN),
    ("lstm 2x bi", "LSTM", {"input_size": 64, "hidden_size": 128, "num_layers": 2,
                            "bidirectional": True}, X_RNN),
    ("gru", "GRU", {"input_size": 64, "hidden_size": 128}, X_RNN),
    ("mha", "MultiheadAttention", {"embed_dim": 128, "num_heads": 4, "batch_first": True},
     X_ATTENTION),
    ("encoder", "TransformerEncoderLayer", {"d_model": 128, "nhead": 4,
                                            "dim_feedforward": 512, "dropout": 0.0,
                                            "batch_first": True}, X_ATTENTION),
]


def main(argv=None):
    _layers.main(argv, __doc__, __file__, "nn_sequence", "Sequence layers: pyrt.nn against PyTorch",
                 WORKLOADS)


if __name__ == "__main__":
    main()
