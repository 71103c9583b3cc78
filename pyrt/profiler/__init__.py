"""pyrt.profiler: where the time of a program goes, with torch.profiler's interface.

    with pyrt.profiler.profile(record_shapes=True) as prof:
        with pyrt.profiler.record_function("train_step"):
            step()
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")  # chrome://tracing, Perfetto

Recorded: record_function ranges, module calls, optimizer steps and zero_grad, and backward
passes, each with its CPU (wall) time; nothing costs anything while no profile records
(pyrt/profiler/instrument.py). pyrt.autograd.profiler is the older interface
(pyrt/profiler/legacy.py).
"""

import sys

from pyrt import autograd as _autograd
from pyrt.profiler import legacy
from pyrt.profiler.events import EventList, FunctionEvent, FunctionEventAvg
from pyrt.profiler.profiler import (
    ProfilerActivity,
    profile,
    supported_activities,
    tensorboard_trace_handler,
)
from pyrt.profiler.recorder import record_function
from pyrt.profiler.schedule import ProfilerAction, schedule

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "ProfilerAction",
           "ProfilerActivity", "profile", "record_function", "schedule",
           "supported_activities", "tensorboard_trace_handler"]

# ``import pyrt.autograd.profiler`` and ``pyrt.autograd.profiler.profile`` find the older
# interface, as torch.autograd.profiler
sys.modules["pyrt.autograd.profiler"] = legacy
_autograd.profiler = legacy
