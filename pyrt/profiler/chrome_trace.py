"""The Chrome trace of a profile: the JSON object format that chrome://tracing, Perfetto and
TensorBoard's profiler plugin read, laid out as torch.profiler writes it.

Each range is one complete event (``"ph": "X"``) with its start ``ts`` and duration ``dur`` in
microseconds, the process id as ``pid`` and the thread's native id as ``tid``; metadata events
(``"ph": "M"``) name the process and its threads. A path ending in ".gz" is written
gzip-compressed.
"""

import gzip
import json
import os
import socket
import threading

__all__ = ["write_chrome_trace"]


def _event(event, pid):
    args = {"Record function id": event.id, **event.trace_args}
    if event.input_shapes:
        args["Input Dims"] = event.input_shapes
    return {"ph": "X", "cat": event.trace_category, "name": event.trace_name, "pid": pid,
            "tid": event.thread, "ts": round(event.time_range.start, 3),
            "dur": round(event.time_range.elapsed_us(), 3), "args": args}


def _metadata(pid, threads):
    main = threading.main_thread().native_id
    rows = [{"ph": "M", "name": "process_name", "ts": 0, "pid": pid, "tid": 0,
             "args": {"name": "python"}},
            {"ph": "M", "name": "process_labels", "ts": 0, "pid": pid, "tid": 0,
             "args": {"labels": "CPU"}}]
    for tid in sorted(threads):
        label = "python" if tid == main else "python thread"
        rows.append({"ph": "M", "name": "thread_name", "ts": 0, "pid": pid, "tid": tid,
                     "args": {"name": f"thread {tid} ({label})"}})
    return rows


def write_chrome_trace(events, path):
    """Write `events` (FunctionEvents) to `path` as a Chrome trace."""
    pid = os.getpid()
    trace = {
        "schemaVersion": 1,
        "deviceProperties": [],
        "host_name": socket.gethostname(),
        "displayTimeUnit": "ms",
        "traceEvents": (_metadata(pid, {event.thread for event in events})
                        + [_event(event, pid) for event in events]),
        "traceName": os.fspath(path),
    }
    text = json.dumps(trace)
    if os.fspath(path).endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
