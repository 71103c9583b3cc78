"""The profiler's schedule: which steps are skipped, warmed up and recorded.

A schedule maps a step number to a ProfilerAction. schedule(wait, warmup, active, repeat,
skip_first) skips the first `skip_first` steps, then repeats cycles of `wait` idle steps,
`warmup` steps and `active` recorded steps, the last of which is RECORD_AND_SAVE (the trace
is handed to on_trace_ready after it); after `repeat` cycles (0: no limit) every step is NONE.
"""

import enum
import warnings

__all__ = ["ProfilerAction", "schedule"]


class ProfilerAction(enum.Enum):
    """What the profiler does during a step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """The schedule function of these cycles (torch.profiler.schedule). With skip_first_wait,
    the first cycle starts without its wait."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), "
            f"warmup={warmup} (need >= 0), active={active} (need > 0), repeat={repeat} "
            f"(need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    cycle = wait + warmup + active

    def schedule_fn(step):
        if step < 0:
            raise ValueError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait  # (as though the first wait had passed)
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        at = step % cycle
        if at < wait:
            return ProfilerAction.NONE
        if at < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if at < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def default_schedule(step):
    """Without a schedule the profiler records every step."""
    return ProfilerAction.RECORD
