"""pyrt.profiler.profile: torch.profiler's profiler, with its schedule of steps.

Each call of ``step()`` moves to the next step and the schedule's action for it; a change of
action does what torch's does: a new trace is prepared (the previous cycle's results dropped)
when a cycle begins, recording starts with the first recorded step, and after the cycle's
RECORD_AND_SAVE step recording stops and ``on_trace_ready(prof)`` is called, while the
results of that cycle can be read. With a schedule each step is itself a range,
"ProfilerStep#N". Stopping the profile while it records ends the cycle as well.
"""

import enum
import os
import socket
import time
import warnings
from functools import partial

from pyrt.profiler import legacy
from pyrt.profiler.recorder import record_function
from pyrt.profiler.schedule import ProfilerAction, default_schedule

__all__ = ["ProfilerActivity", "profile", "supported_activities",
           "tensorboard_trace_handler"]


class ProfilerActivity(enum.Enum):
    """What to profile: host (CPU) work, and work on the GPU (pyrt times it from the host)."""

    CPU = 0
    CUDA = 2


def supported_activities():
    """The activities this machine can profile: CPU, and CUDA when pyrt's CUDA backend runs."""
    from pyrt import cuda

    return {ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if cuda.is_available() else [])}


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An on_trace_ready that writes each trace into `dir_name` (made if missing) as
    "{worker_name}.{time_ns}.pt.trace.json" (".gz" with use_gzip), for TensorBoard;
    worker_name defaults to "{hostname}_{pid}"."""
    def handler_fn(prof):
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        # nanoseconds, so that traces written in quick succession have different names
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"
        if use_gzip:
            file_name += ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn


def _checked_activities(activities):
    if activities is None:
        return supported_activities()
    chosen = set()
    for activity in activities:
        if not isinstance(activity, ProfilerActivity):
            raise TypeError(f"activities must hold ProfilerActivity values, got "
                            f"{type(activity).__name__}")
        chosen.add(activity)
    if not chosen:
        raise ValueError("No valid profiler activities found")
    return chosen


class profile:
    """Profile the steps of a program: use it as a context manager (or start()/stop()) and
    call step() after each step; see the module's docstring for the schedule. The results
    of the last recorded cycle: key_averages(), events(), export_chrome_trace(path)."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
                 with_modules=False, experimental_config=None, acc_events=False,
                 use_cuda=None):
        self.activities = _checked_activities(activities)
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead",
                          FutureWarning, stacklevel=2)
            if use_cuda:
                self.activities.add(ProfilerActivity.CUDA)
            else:
                self.activities.discard(ProfilerActivity.CUDA)
        if schedule is not None and not callable(schedule):
            raise TypeError(f"schedule must be callable, got {type(schedule).__name__}")
        if on_trace_ready is not None and not callable(on_trace_ready):
            raise TypeError(f"on_trace_ready must be callable, got "
                            f"{type(on_trace_ready).__name__}")
        legacy._warn_uncounted(profile_memory, with_flops)
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.experimental_config = experimental_config
        self.acc_events = acc_events
        # with a schedule, each step is a range of its own, as torch's
        self.record_steps = schedule is not None
        self.schedule = schedule if schedule is not None else default_schedule
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self._action(0)
        self.profiler = None  # the pyrt.autograd.profiler.profile of the current cycle
        self._step_range = None

        A = ProfilerAction
        prepare, begin, end, ready = (self.prepare_trace, self.start_trace, self.stop_trace,
                                      self._trace_ready)

        def bad(text):
            return partial(warnings.warn, f"Incorrect schedule: {text}")

        # (previous action, next action; None when stopping) -> what to do, as torch's
        self._transitions = {
            (A.NONE, A.WARMUP): [prepare],
            (A.NONE, A.RECORD): [prepare, begin],
            (A.NONE, A.RECORD_AND_SAVE): [prepare, begin],
            (A.WARMUP, A.NONE): [bad("WARMUP followed by NONE"), begin, end],
            (A.WARMUP, A.RECORD): [begin],
            (A.WARMUP, A.RECORD_AND_SAVE): [begin],
            (A.RECORD, A.NONE): [bad("RECORD followed by NONE"), end],
            (A.RECORD, A.WARMUP): [bad("RECORD followed by WARMUP"), end],
            (A.RECORD_AND_SAVE, A.NONE): [end, ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [end, ready, prepare],
            (A.RECORD_AND_SAVE, A.RECORD): [end, ready, prepare, begin],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [end, ready, prepare, begin],
            (A.WARMUP, None): [begin, end],
            (A.RECORD, None): [end, ready],
            (A.RECORD_AND_SAVE, None): [end, ready],
        }

    def _action(self, step):
        action = self.schedule(step)
        if not isinstance(action, ProfilerAction):
            raise TypeError(f"schedule must return a ProfilerAction, got "
                            f"{type(action).__name__} for step {step}")
        return action

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    # ---- the steps -------------------------------------------------------------------------

    def start(self):
        self._transit(ProfilerAction.NONE, self.current_action)
        self._open_step()

    def stop(self):
        self._close_step()
        self._transit(self.current_action, None)

    def step(self):
        """Signal that the next step begins."""
        self._close_step()
        previous = self.current_action
        action = self._action(self.step_num + 1)
        self.step_num += 1
        self.current_action = action
        self._transit(previous, action)
        self._open_step()

    def _open_step(self):
        if self.record_steps:
            self._step_range = record_function(f"ProfilerStep#{self.step_num}")
            self._step_range.__enter__()

    def _close_step(self):
        if self._step_range is not None:
            step_range, self._step_range = self._step_range, None
            step_range.__exit__(None, None, None)

    def _transit(self, previous, action):
        for do in self._transitions.get((previous, action), ()):
            do()

    def _trace_ready(self):
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # ---- the trace (torch's _KinetoProfile) --------------------------------------------------

    def prepare_trace(self):
        """A new trace, empty (with acc_events the events of earlier cycles are kept)."""
        if self.profiler is None or not self.acc_events:
            self.profiler = legacy.profile(
                use_device="cuda" if ProfilerActivity.CUDA in self.activities else None,
                record_shapes=self.record_shapes, with_stack=self.with_stack,
                with_modules=self.with_modules, acc_events=self.acc_events)

    def start_trace(self):
        if self.profiler is None:
            self.prepare_trace()
        self.profiler._start()

    def stop_trace(self):
        if self.profiler is not None and self.profiler._recording is not None:
            self.profiler._stop()

    def _results(self):
        if self.profiler is None or self.profiler._function_events is None:
            raise RuntimeError("profile has no results yet: they are there once a recorded "
                               "cycle (or the profile) has ended")
        return self.profiler

    def events(self):
        """The ranges of the last recorded cycle (FunctionEvents, in the order they started)."""
        return self._results().function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        """The ranges of the last recorded cycle summed by name (and by input shapes or the
        innermost `group_by_stack_n` stack entries), as an EventList: ``.table()``."""
        return self._results().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path):
        """Write the last recorded cycle to `path` as a Chrome trace (JSON; gzip for .gz)."""
        self._results().export_chrome_trace(path)
