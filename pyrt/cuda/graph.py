"""A whole training step (forward, backward, optimizer) captured once into a CUDA graph and
replayed per batch: one graph launch instead of dozens of kernel launches, for small networks
where launch overhead dominates.

What capture allows and how this respects it (CuPy's Stream.begin_capture, relaxed mode):
- capture runs on a stream of its own, and a captured graph writes to fixed addresses: the
  batch is copied into static input buffers before each replay, and the loss is read from
  the static array the captured step produced. A batch on the host is uploaded the way
  ``cupy.asarray`` does it, through CuPy's pool of page-locked staging buffers (an
  asynchronous copy; a copy straight from pageable memory may make the host wait for the
  stream), then copied into the input buffer on the step's stream;
- no device-to-host copy or synchronisation may happen inside the step: the step reads no
  device value on the host (losses stay on the device, Adam's step count would be baked in,
  so only SGD is captured);
- kernels are compiled, cuBLAS is initialised on the capture stream, and every cached table
  and work buffer (optimizer pointer tables, momentum buffers, bias-gradient workspaces) is
  created by eager warm-up steps before capture;
- the arrays allocated during capture (activations, gradients, the loss) come from a memory
  pool that nothing else allocates from, so that the memory a replay writes is never handed
  to another array, even after those arrays are freed;
- the step's stream waits for the caller's stream before each step, and the caller's stream
  for the step, through events: the caller reads parameters and losses in order without the
  host waiting.
A batch of another shape (the last, partial one) runs eagerly on the same stream. The
optimizer's hyper-parameters are kernel arguments, fixed in the graph: a change of any (a
learning-rate schedule) is seen before the next replay and the step is captured again. A
capture that fails (an op CUDA cannot capture) is reported once, as a RuntimeWarning, and
the training goes on with eager steps; it is not tried again.
"""

import warnings

import cupy

from pyrt.tensor import Tensor

__all__ = ["CapturedStep"]

WARMUP_STEPS = 2


class CapturedStep:
    """``step(x, y) -> loss`` (a detached device tensor) for batches x, y on the CPU or the
    GPU, training `model` with `criterion` and `optimizer` (SGD) on the GPU."""

    def __init__(self, model, criterion, optimizer):
        if type(optimizer).__name__ != "SGD":
            raise ValueError("CUDA-graph capture supports SGD only: Adam's step count "
                             "would be fixed into the graph")
        self.model, self.criterion, self.optimizer = model, criterion, optimizer
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.caller_done = cupy.cuda.Event(disable_timing=True)
        self.step_done = cupy.cuda.Event(disable_timing=True)
        self.pool = cupy.cuda.MemoryPool()  # allocations made during capture, and only those
        self.graph = None
        self.shape = None  # the batch shape the graph was captured for
        self.hyper = None  # the optimizer's hyper-parameters it was captured with
        self.warmed = 0
        self.failed = None  # the exception of a failed capture: eager steps from then on
        self.x = self.y = self.loss = None
        self.grads = ()  # (parameter, its gradient tensor) as the captured step left them
        self.keep = ()  # device tables the graph reads by address, kept alive with it

    def _step(self, x, y):
        loss = self.criterion(self.model(x), y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def _enter(self):
        """Order the step's stream after the caller's; returns the caller's stream."""
        caller = cupy.cuda.get_current_stream()
        self.stream.wait_event(caller.record(self.caller_done))
        return caller

    def _leave(self, caller):
        caller.wait_event(self.stream.record(self.step_done))

    def _eager(self, x, y):
        caller = self._enter()
        with self.stream:
            loss = self._step(x.to("cuda"), y.to("cuda"))
        self._leave(caller)
        return loss

    def __call__(self, x, y):
        shape = (x.shape, y.shape)
        if self.graph is None and self.warmed < WARMUP_STEPS:
            self.warmed += 1
            self.shape = shape
            return self._eager(x, y)
        if shape != self.shape or self.failed is not None:
            return self._eager(x, y)
        hyper = self._hyperparameters()
        if self.graph is not None and hyper != self.hyper:
            # lr and the rest are kernel arguments frozen in the graph: a change (a schedule)
            # needs a new capture, or the replays would go on with the old values
            self.graph = None
        if self.graph is None:
            try:
                self._capture(x, y)
            except Exception as exc:  # noqa: BLE001 (any failure: reported, then eager)
                self.failed = exc
                warnings.warn(f"CUDA-graph capture of the training step failed "
                              f"({type(exc).__name__}: {exc}); training goes on without "
                              "capture", RuntimeWarning, stacklevel=2)
                return self._eager(x, y)
            self.hyper = hyper
        caller = self._enter()
        self._upload(x._data, y._data)
        self.graph.launch(stream=self.stream)
        self._leave(caller)
        for p, grad in self.grads:  # the gradients this replay wrote
            p.grad = grad
        return Tensor(self.loss.copy())  # on the caller's stream, after the replay

    def _upload(self, x, y):
        """Copy the batch into the graph's input buffers, on the step's stream; a batch on
        the host goes up through a page-locked buffer (cupy.asarray), so the host never
        waits for the copy."""
        with self.stream:
            for buffer, batch in ((self.x, x), (self.y, y)):
                cupy.copyto(buffer, batch if isinstance(batch, cupy.ndarray)
                            else cupy.asarray(batch))

    def _hyperparameters(self):
        return [{k: v for k, v in group.items() if k != "params"}
                for group in self.optimizer.param_groups]

    def _capture(self, x, y):
        with self.stream, cupy.cuda.using_allocator(self.pool.malloc):
            self.x = cupy.empty(x.shape, x.dtype)
            self.y = cupy.empty(y.shape, y.dtype)
            self.stream.begin_capture()
            try:
                loss = self._step(Tensor(self.x), Tensor(self.y))
            except BaseException:
                try:  # leave the stream out of capture mode, whatever state it is in
                    self.stream.end_capture()
                except Exception:  # noqa: BLE001 (the step's own error is the one to raise)
                    pass
                raise
            graph = self.stream.end_capture()
        self.loss = loss._data
        self.grads = tuple((p, p.grad) for group in self.optimizer.param_groups
                           for p in group["params"] if p.grad is not None)
        # the optimizer's device tables, which the graph reads by address, live as long as it
        self.keep = tuple(self.optimizer._device_tables.values())
        self.graph = graph
