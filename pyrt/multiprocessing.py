"""torch.multiprocessing: Python's multiprocessing re-exported (Process, Queue, Pool,
get_context, set_start_method, ...), with torch's sharing-strategy switches and ``spawn``.

pyrt's tensors pickle their arrays, so a tensor sent through a Queue arrives as a copy: the
sharing strategy (how torch shares tensor memory between processes) is kept and reported but
changes nothing. ``spawn(fn, args, nprocs)`` runs ``fn(i, *args)`` in `nprocs` processes, as
torch's does, and raises if any of them fails.
"""

import multiprocessing
import sys
import traceback
from multiprocessing import *  # noqa: F403

__all__ = ["ProcessContext", "ProcessExitedException", "ProcessRaisedException",
           "get_all_sharing_strategies", "get_sharing_strategy", "set_sharing_strategy",
           "spawn", *multiprocessing.__all__]

# torch's: file descriptors are Linux's default, macOS has only the file system
_STRATEGIES = {"file_system"} if sys.platform == "darwin" else {"file_descriptor", "file_system"}
_strategy = "file_system" if sys.platform == "darwin" else "file_descriptor"


def get_all_sharing_strategies():
    """The sharing strategies this platform has, as a set."""
    return set(_STRATEGIES)


def get_sharing_strategy():
    """The current sharing strategy."""
    return _strategy


def set_sharing_strategy(new_strategy):
    """Set the sharing strategy: one of get_all_sharing_strategies()."""
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"set_sharing_strategy: expected one of {sorted(_STRATEGIES)}, got "
                         f"{new_strategy!r}")
    _strategy = new_strategy


class ProcessRaisedException(ProcessError):  # noqa: F405
    """A process that spawn() started raised: the message holds its traceback."""

    def __init__(self, msg, error_index, error_pid):
        super().__init__(msg)
        self.error_index, self.pid = error_index, error_pid


class ProcessExitedException(ProcessError):  # noqa: F405
    """A process that spawn() started exited with a nonzero code (killed, or os._exit)."""

    def __init__(self, msg, error_index, error_pid, exit_code):
        super().__init__(msg)
        self.error_index, self.pid, self.exit_code = error_index, error_pid, exit_code


def _run(fn, i, args, errors):
    """The body of spawned process i: fn(i, *args), its traceback sent back on failure."""
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:  # noqa: BLE001  (whatever fn raises is reported to the parent)
        errors.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes spawn() started: ``join()`` waits for them and raises the first
    failure."""

    def __init__(self, processes, error_queues):
        self.processes, self.error_queues = processes, error_queues

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None):
        """True once every process has ended well; False while some still run (after
        `timeout` seconds); raises for the first one that failed, ending the others."""
        for p in self.processes:
            p.join(timeout)
        for i, p in enumerate(self.processes):
            if p.exitcode is None or p.exitcode == 0:
                continue
            for other in self.processes:
                if other.is_alive():
                    other.terminate()
            if not self.error_queues[i].empty():
                raise ProcessRaisedException(
                    f"\n\n-- Process {i} terminated with the following error:\n"
                    f"{self.error_queues[i].get()}", i, p.pid)
            raise ProcessExitedException(f"process {i} terminated with exit code {p.exitcode}",
                                         i, p.pid, p.exitcode)
        return all(p.exitcode == 0 for p in self.processes)


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run ``fn(i, *args)`` for i in range(nprocs), each in a process of its own; with
    `join`, wait for them all (raising as ProcessContext.join does), else return their
    ProcessContext."""
    context = multiprocessing.get_context(start_method)
    queues, processes = [], []
    for i in range(nprocs):
        errors = context.SimpleQueue()
        process = context.Process(target=_run, args=(fn, i, args, errors), daemon=daemon)
        process.start()
        queues.append(errors)
        processes.append(process)
    spawned = ProcessContext(processes, queues)
    if not join:
        return spawned
    spawned.join()
    return None
