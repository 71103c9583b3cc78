"""A whole training step (forward, backward, optimizer) captured once into a CUDA graph and
replayed per batch: one graph launch instead of dozens of kernel launches, for small networks
where launch overhead dominates.

What capture allows and how this respects it (CuPy's Stream.begin_capture, relaxed mode):
- capture runs on a non-default stream, and a captured graph writes to fixed addresses: the
  batch is copied into static input buffers before each replay, and the loss is read from
  the static array the captured step produced;
- no device-to-host copy or synchronisation may happen inside the step: the step reads no
  device value on the host (losses stay on the device, Adam's step count would be baked in,
  so only SGD is captured);
- kernels are compiled, cuBLAS is initialised, and every cached table and work buffer
  (optimizer pointer tables, momentum buffers, bias-gradient workspaces) is created by
  eager warm-up steps before capture;
- the step's arrays come from a memory pool of its own, so that memory the graph writes on
  each replay is never handed to anything else.
A batch of another shape (the last, partial one) runs eagerly on the same stream.
"""

import cupy

from pyrt.tensor import Tensor

__all__ = ["CapturedStep"]

WARMUP_STEPS = 2


class CapturedStep:
    """``step(x, y) -> loss`` (a detached device tensor) for CPU batches x, y, training
    `model` with `criterion` and `optimizer` (SGD) on the GPU."""

    def __init__(self, model, criterion, optimizer):
        if type(optimizer).__name__ != "SGD":
            raise ValueError("CUDA-graph capture supports SGD only: Adam's step count "
                             "would be fixed into the graph")
        self.model, self.criterion, self.optimizer = model, criterion, optimizer
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.pool = cupy.cuda.MemoryPool()
        self.graph = None
        self.shape = None  # the batch shape the graph was captured for
        self.warmed = 0
        self.x = self.y = self.loss = None

    def _step(self, x, y):
        loss = self.criterion(self.model(x), y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def _eager(self, x, y):
        with self.stream, cupy.cuda.using_allocator(self.pool.malloc):
            return self._step(x.to("cuda"), y.to("cuda"))

    def __call__(self, x, y):
        shape = (x.shape, y.shape)
        if self.graph is None and self.warmed < WARMUP_STEPS:
            self.warmed += 1
            self.shape = shape
            return self._eager(x, y)
        if shape != self.shape:
            return self._eager(x, y)
        if self.graph is None:
            self._capture(x, y)
        self.x.set(x.numpy(), stream=self.stream)
        self.y.set(y.numpy(), stream=self.stream)
        self.graph.launch(stream=self.stream)
        with self.stream:
            return Tensor(self.loss.copy())

    def _capture(self, x, y):
        with self.stream, cupy.cuda.using_allocator(self.pool.malloc):
            self.x = cupy.asarray(x.numpy())
            self.y = cupy.asarray(y.numpy())
            self.stream.synchronize()
            self.stream.begin_capture()
            try:
                loss = self._step(Tensor(self.x), Tensor(self.y))
            finally:
                graph = self.stream.end_capture()
            self.loss = loss.data
            self.graph = graph
