"""pyrt.autograd.profiler: torch.autograd.profiler's context manager, which records from
entering to leaving (no schedule), and record_function; pyrt.profiler.profile records through
it. emit_nvtx and emit_itt are accepted and do nothing (pyrt emits no NVTX or ITT ranges).
"""

import warnings

from pyrt.profiler import instrument
from pyrt.profiler.events import EventList, FunctionEvent, FunctionEventAvg
from pyrt.profiler.recorder import Recording, record_function

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "emit_itt", "emit_nvtx",
           "profile", "record_function"]


def _warn_uncounted(profile_memory, with_flops):
    for flag, what in ((profile_memory, "profile_memory"), (with_flops, "with_flops")):
        if flag:
            warnings.warn(f"pyrt's profiler measures time only: {what}=True is ignored",
                          stacklevel=3)


class profile:
    """Record the time of what runs inside the block: record_function ranges, module calls,
    optimizer steps and backward passes, on every thread. Afterwards ``key_averages()``,
    ``table()``, ``export_chrome_trace(path)`` and ``function_events`` give the results.
    With enabled=False it records nothing. use_cuda/use_device are accepted; pyrt measures
    CPU time only (work queued on the GPU is timed as the CPU sees it)."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, experimental_config=None, acc_events=False,
                 custom_trace_id_callback=None):
        self.enabled = bool(enabled)
        self.use_device = "cuda" if use_cuda and use_device is None else use_device
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.acc_events = acc_events
        self.entered = False
        self._recording = None
        self._function_events = None
        _warn_uncounted(profile_memory, with_flops)

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self._start()
        return self

    def __exit__(self, *exc):
        if self.enabled and self._recording is not None:
            self._stop()
        return False

    def _start(self):
        self.entered = True
        recording = Recording(self.record_shapes, self.with_stack)
        recording.start()  # (raises if another profile records)
        self._recording = recording
        instrument.install()

    def _stop(self):
        instrument.uninstall()
        recording, self._recording = self._recording, None
        recording.stop()
        # in the order they started (a parent before its children), as torch lists them
        ordered = sorted(recording.events,
                         key=lambda e: (e.time_range.start, -e.time_range.end))
        events = EventList(ordered, profile_memory=self.profile_memory,
                           with_flops=self.with_flops)
        if self.acc_events and self._function_events is not None:
            events = EventList([*self._function_events, *events],
                               profile_memory=self.profile_memory, with_flops=self.with_flops)
        self._function_events = events

    def _finished(self):
        if self._function_events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self._function_events

    @property
    def function_events(self):
        """The recorded ranges (FunctionEvents), in the order they started."""
        return self._finished()

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        """The ranges summed by name (and by input shapes / stack when asked)."""
        return self._finished().key_averages(group_by_input_shape, group_by_stack_n)

    def total_average(self):
        return self._finished().total_average()

    @property
    def self_cpu_time_total(self):
        """The sum of the ranges' self times (microseconds)."""
        return self._finished().self_cpu_time_total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False):
        return self._finished().table(
            sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width, header=header,
            top_level_events_only=top_level_events_only)

    table.__doc__ = EventList.table.__doc__

    def export_chrome_trace(self, path):
        """Write the ranges to `path` as a Chrome trace (JSON; gzip if it ends in ".gz")."""
        self._finished().export_chrome_trace(path)

    def __str__(self):
        if self._function_events is None:
            return "<unfinished pyrt.autograd.profile>"
        return str(self._function_events)

    def __repr__(self):
        if self._function_events is None:
            return "<unfinished pyrt.autograd.profile>"
        return repr(self._function_events)


class _NoAnnotation:
    """A context manager that does nothing: pyrt emits no NVTX or ITT ranges."""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled
        self.record_shapes = record_shapes

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class emit_nvtx(_NoAnnotation):
    """torch's NVTX annotation of every op, for nvprof / Nsight; a no-op in pyrt."""


class emit_itt(_NoAnnotation):
    """torch's ITT annotation of every op, for VTune; a no-op in pyrt."""
