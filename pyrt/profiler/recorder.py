"""The recording of time ranges: record_function, and what a profiler collects while it records.

A range is opened on the calling thread (pushed on that thread's stack of open ranges) and
closed by the same thread; the range open below it at opening time is its CPU parent. A range
is kept only once closed, and only by the recording it was opened in: one entered before a
profiler started, or left open when it stopped, leaves nothing behind.

While no profiler records, ``_recording`` is None and nothing else of pyrt calls in here: the
profiler instruments modules, optimizers and backward only while it records
(pyrt/profiler/instrument.py). record_function itself then costs one test of that global.
"""

import functools
import itertools
import os
import sys
import threading
import time

from pyrt.profiler.events import FunctionEvent

__all__ = ["record_function"]

# the Recording that collects ranges now, or None
_recording = None

# each thread's open ranges, innermost last
_threads = threading.local()

_PROFILER_DIR = os.path.dirname(os.path.abspath(__file__))


class Recording:
    """The ranges closed between start() and stop(), with the options that say what a range
    holds (input shapes, the Python stack where it opened)."""

    def __init__(self, record_shapes=False, with_stack=False):
        self.record_shapes = bool(record_shapes)
        self.with_stack = bool(with_stack)
        self.events = []  # closed ranges, in the order they closed
        self.origin_ns = 0  # event times are microseconds since start()
        self._ids = itertools.count()
        self.module_names = {}  # id(module) -> "nn.Module: Linear_0" (with the module, kept)
        self._class_counts = {}

    def start(self):
        global _recording
        if _recording is not None:
            raise RuntimeError("a profiler is already recording: stop it before starting "
                               "another one")
        self.origin_ns = time.perf_counter_ns()
        _recording = self

    def stop(self):
        """Stop collecting; a range still open (and so never closed here) leaves its children
        at the top level."""
        global _recording
        if _recording is self:
            _recording = None
        self.module_names.clear()  # (no module stays alive for the profiler's sake)
        kept = set(map(id, self.events))
        for event in self.events:
            if event.cpu_parent is not None and id(event.cpu_parent) not in kept:
                event.cpu_parent = None

    def module_name(self, module):
        """torch's name of a module's calls: the class name and the module's rank among the
        modules of its class that this recording saw, as "nn.Module: Linear_0"."""
        entry = self.module_names.get(id(module))
        if entry is None:
            cls = type(module).__name__
            rank = self._class_counts.get(cls, 0)
            self._class_counts[cls] = rank + 1
            entry = self.module_names[id(module)] = (module, f"nn.Module: {cls}_{rank}")
        return entry[1]


def _stack():
    stack = getattr(_threads, "stack", None)
    if stack is None:
        stack = _threads.stack = []
    return stack


def _python_stack():
    """The calling Python frames, innermost first, as torch writes them: "file(line): name";
    the profiler's own frames left out."""
    entries = []
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if not code.co_filename.startswith(_PROFILER_DIR):
            entries.append(f"{code.co_filename}({frame.f_lineno}): {code.co_name}")
        frame = frame.f_back
    return entries


def _shapes(args):
    """torch's input_shapes: one list per argument, the shape of a tensor (any object with a
    shape) and [] for anything else."""
    return [list(a.shape) if hasattr(a, "shape") else [] for a in args]


def open_range(recording, name, args=(), kind="user_annotation"):
    """Open a range named `name` on this thread, in `recording`; `args` are the call's
    arguments (their shapes are kept with record_shapes). Returns the range, to close."""
    stack = _stack()
    parent = stack[-1] if stack and stack[-1].recording is recording else None
    event = FunctionEvent(
        id=next(recording._ids), name=name, thread=threading.get_native_id(),
        start_us=0.0, end_us=0.0,
        input_shapes=_shapes(args) if recording.record_shapes else [],
        stack=_python_stack() if recording.with_stack else [],
        cpu_parent=parent, trace_category=kind)
    event.recording = recording
    stack.append(event)
    event.start_ns = time.perf_counter_ns()
    return event


def close_range(event):
    """Close `event` (and any range opened inside it that was left open) and keep it, if its
    recording still records."""
    end_ns = time.perf_counter_ns()
    stack = _stack()
    if event in stack:
        while stack.pop() is not event:
            pass  # (a range entered inside this one and never exited: dropped)
    recording = event.recording
    if recording is not _recording:
        return
    event.time_range.start = (event.start_ns - recording.origin_ns) / 1000.0
    event.time_range.end = (end_ns - recording.origin_ns) / 1000.0
    if event.cpu_parent is not None:
        event.cpu_parent.cpu_children.append(event)
    recording.events.append(event)


def innermost_name():
    """The name of this thread's innermost open range, or None."""
    stack = _stack()
    return stack[-1].trace_name if stack else None


class record_function:
    """Label a block of code (a context manager) or every call of a function (a decorator)
    with `name`; the range appears in the profile with its own and its total time. `args`,
    a string, is kept with the range and shown in the trace. Outside a profile it records
    nothing."""

    def __init__(self, name, args=None):
        if not isinstance(name, str):
            raise TypeError(f"record_function(): name must be a str, got {type(name).__name__}")
        if args is not None and not isinstance(args, str):
            raise TypeError(f"record_function(): args must be a str or None, got "
                            f"{type(args).__name__}")
        self.name = name
        self.args = args
        self._range = None

    def __enter__(self):
        recording = _recording
        if recording is not None:
            self._range = open_range(recording, self.name)
            if self.args is not None:
                self._range.trace_args["args"] = self.args
        return self

    def __exit__(self, *exc):
        if self._range is not None:
            close_range(self._range)
            self._range = None
        return False

    def __call__(self, fn):
        """Decorate `fn`: each call runs in a range of its own (calls may nest or overlap
        across threads)."""
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapped
