"""pyrt.profiler and pyrt.autograd.profiler: schedules, ranges and their times, the table,
the Chrome trace, on_trace_ready, and that nothing is left behind (or costs a call) after a
profile stops. Checked against torch.profiler where torch is installed, and against
written-out expectations."""

import cProfile
import gzip
import json
import os
import pstats
import re
import socket
import threading
import time
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.profiler as profiler
from pyrt import nn, optim
from pyrt.nn.layers import Sequential
from pyrt.optim.optimizer import Optimizer
from pyrt.optim.sgd import SGD
from pyrt.profiler import ProfilerAction, record_function
from pyrt.tensor import Tensor

try:
    import torch
    import torch.profiler as torch_profiler
except ImportError:  # pragma: no cover
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")

A = ProfilerAction


def _by_name(events):
    """name -> the list of events of that name."""
    out = {}
    for event in events:
        out.setdefault(event.name, []).append(event)
    return out


def _xor():
    pyrt.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    x = pyrt.tensor(np.array([[0, 0], [0, 1], [1, 0], [1, 1]], np.float32))
    y = pyrt.tensor(np.array([[0], [1], [1], [0]], np.float32))
    return model, nn.BCEWithLogitsLoss(), optim.SGD(model.parameters(), lr=0.1), x, y


def _xor_step(model, criterion, opt, x, y):
    loss = criterion(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


# ---- schedule ------------------------------------------------------------------------------


def _expected_actions(wait, warmup, active, repeat, skip_first, skip_first_wait, steps):
    """The schedule written out: skip_first NONEs, then the cycles laid end to end (the first
    without its wait with skip_first_wait), then NONE for ever once `repeat` cycles ran."""
    cycle = [A.NONE] * wait + [A.WARMUP] * warmup + [A.RECORD] * (active - 1)
    cycle.append(A.RECORD_AND_SAVE)
    out = [A.NONE] * skip_first
    first = cycle[wait:] if skip_first_wait else cycle
    out += first
    done = 1
    while len(out) < steps and (repeat == 0 or done < repeat):
        out += cycle
        done += 1
    out += [A.NONE] * max(0, steps - len(out))
    return out[:steps]


def test_schedule_written_out():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn = profiler.schedule(wait=1, warmup=1, active=2, repeat=1, skip_first=1)
    assert [fn(i) for i in range(7)] == [A.NONE, A.NONE, A.WARMUP, A.RECORD,
                                         A.RECORD_AND_SAVE, A.NONE, A.NONE]
    fn = profiler.schedule(wait=0, warmup=1, active=1, repeat=0)
    assert [fn(i) for i in range(4)] == [A.WARMUP, A.RECORD_AND_SAVE] * 2


_schedules = st.tuples(st.integers(0, 4), st.integers(0, 3), st.integers(1, 4),
                       st.integers(0, 3), st.integers(0, 5), st.integers(0, 1))


@settings(max_examples=20, deadline=None)
@given(_schedules)
def test_schedule_matches_reference(args):
    wait, warmup, active, repeat, skip_first, skip_first_wait = args
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn = profiler.schedule(wait=wait, warmup=warmup, active=active, repeat=repeat,
                               skip_first=skip_first, skip_first_wait=skip_first_wait)
    assert [fn(i) for i in range(60)] == _expected_actions(*args, 60)


@needs_torch
@settings(max_examples=20, deadline=None)
@given(_schedules)
def test_schedule_matches_torch(args):
    wait, warmup, active, repeat, skip_first, skip_first_wait = args
    kwargs = dict(wait=wait, warmup=warmup, active=active, repeat=repeat,
                  skip_first=skip_first, skip_first_wait=skip_first_wait)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = profiler.schedule(**kwargs), torch_profiler.schedule(**kwargs)
    assert [ours(i).name for i in range(60)] == [theirs(i).name for i in range(60)]
    assert [a.value for a in A] == [getattr(torch_profiler.ProfilerAction, a.name).value
                                    for a in A]


@pytest.mark.parametrize("kwargs, name", [
    (dict(wait=-1, warmup=1, active=1), "wait=-1"),
    (dict(wait=0, warmup=-1, active=1), "warmup=-1"),
    (dict(wait=0, warmup=1, active=0), "active=0"),
    (dict(wait=0, warmup=1, active=1, repeat=-2), "repeat=-2"),
    (dict(wait=0, warmup=1, active=1, skip_first=-1), "skip_first=-1"),
])
def test_schedule_rejects_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=f"Invalid profiler schedule arguments. Got .*{name}"):
        profiler.schedule(**kwargs)


def test_schedule_errors_and_warning():
    fn = profiler.schedule(wait=0, warmup=1, active=1)
    with pytest.raises(ValueError, match="Step must be non-negative. Got -1."):
        fn(-1)
    with pytest.warns(UserWarning, match="Profiler won't be using warmup"):
        profiler.schedule(wait=0, warmup=0, active=1)


# ---- ranges and their times ----------------------------------------------------------------


def test_nested_ranges_self_and_total_times():
    with profiler.profile() as prof:
        with record_function("outer"):
            time.sleep(0.004)
            for _ in range(2):
                with record_function("inner"):
                    time.sleep(0.003)
    events = _by_name(prof.events())
    (outer,), inner = events["outer"], events["inner"]
    assert len(inner) == 2
    assert outer.cpu_time_total >= 4000 + 2 * 3000
    assert all(e.cpu_time_total >= 3000 for e in inner)
    # self time: the total less the children's totals, so the sleeps of inner are not in it
    assert outer.cpu_children == inner and all(e.cpu_parent is outer for e in inner)
    assert outer.self_cpu_time_total == pytest.approx(
        outer.cpu_time_total - sum(e.cpu_time_total for e in inner))
    assert 4000 <= outer.self_cpu_time_total <= outer.cpu_time_total - 6000
    # children lie inside their parent
    for e in inner:
        assert outer.time_range.start <= e.time_range.start <= e.time_range.end \
            <= outer.time_range.end
    averages = {a.key: a for a in prof.key_averages()}
    assert averages["inner"].count == 2 and averages["outer"].count == 1
    assert averages["inner"].cpu_time_total == pytest.approx(
        sum(e.cpu_time_total for e in inner))
    assert averages["inner"].cpu_time == pytest.approx(averages["inner"].cpu_time_total / 2)
    total = prof.key_averages().total_average()
    assert total.key == "Total" and total.count == 3
    # the self times add up to the outermost range's total
    assert total.self_cpu_time_total == pytest.approx(outer.cpu_time_total)


def test_record_function_as_decorator_recursion_and_args():
    @record_function("fib")
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    with profiler.profile() as prof:
        assert fib(5) == 5
        with record_function("tagged", "some args"):
            pass
    events = _by_name(prof.events())
    assert len(events["fib"]) == 15  # calls of fib(5)
    assert sum(e.cpu_parent is None for e in events["fib"]) == 1
    assert events["tagged"][0].trace_args == {"args": "some args"}


def test_record_function_outside_a_profile_records_nothing():
    with profiler.profile() as prof:
        pass
    with record_function("after"):
        pass
    assert len(prof.events()) == 0


def test_record_function_rejects_bad_arguments():
    with pytest.raises(TypeError, match="name must be a str, got int"):
        record_function(3)
    with pytest.raises(TypeError, match="args must be a str or None, got dict"):
        record_function("a", {})


def test_ranges_per_thread():
    def work(name):
        with record_function(name):
            with record_function(name + ".child"):
                time.sleep(0.002)

    with profiler.profile() as prof:
        threads = [threading.Thread(target=work, args=(f"t{i}",)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    events = _by_name(prof.events())
    for i in range(3):
        (parent,), (child,) = events[f"t{i}"], events[f"t{i}.child"]
        assert child.cpu_parent is parent and parent.cpu_parent is None
        assert child.thread == parent.thread
    assert len({events[f"t{i}"][0].thread for i in range(3)}) == 3


def test_range_left_open_is_dropped_and_its_children_kept():
    with profiler.profile() as prof:
        open_range = record_function("never_closed").__enter__()
        with record_function("child"):
            pass
    assert [e.name for e in prof.events()] == ["child"]
    assert prof.events()[0].cpu_parent is None
    open_range.__exit__(None, None, None)  # after the profile: nothing happens


def test_one_profile_records_at_a_time():
    with profiler.profile():
        with pytest.raises(RuntimeError, match="a profiler is already recording"):
            with profiler.profile():
                pass
    with profiler.profile() as prof:  # the first one's stop left nothing behind
        with record_function("x"):
            pass
    assert [e.name for e in prof.events()] == ["x"]


# ---- modules, optimizers, backward ---------------------------------------------------------


def test_module_optimizer_and_backward_events():
    model, criterion, opt, x, y = _xor()
    with profiler.profile(record_shapes=True) as prof:
        _xor_step(model, criterion, opt, x, y)
    events = _by_name(prof.events())
    assert set(events) == {"nn.Module: Sequential_0", "nn.Module: Linear_0",
                           "nn.Module: ReLU_0", "nn.Module: Linear_1",
                           "nn.Module: BCEWithLogitsLoss_0", "Optimizer.zero_grad#SGD.zero_grad",
                           "autograd::backward", "Optimizer.step#SGD.step"}
    sequential = events["nn.Module: Sequential_0"][0]
    assert [c.name for c in sequential.cpu_children] == [
        "nn.Module: Linear_0", "nn.Module: ReLU_0", "nn.Module: Linear_1"]
    assert events["nn.Module: Linear_0"][0].input_shapes == [[4, 2]]
    assert events["nn.Module: BCEWithLogitsLoss_0"][0].input_shapes == [[4, 1], [4, 1]]
    assert events["nn.Module: ReLU_0"][0].trace_category == "python_function"


def test_profiled_step_computes_the_same_numbers():
    plain, profiled = _xor(), _xor()
    for _ in range(3):
        a = _xor_step(*plain)
        with profiler.profile():
            b = _xor_step(*profiled)
        np.testing.assert_allclose(a._data, b._data, rtol=1e-6)
    for p, q in zip(plain[0].parameters(), profiled[0].parameters()):
        np.testing.assert_allclose(p._data, q._data, rtol=1e-6, atol=1e-7)


def test_subclass_step_calling_its_parent_is_one_range():
    class MySGD(SGD):
        def step(self, closure=None):
            return super().step(closure)

    model, criterion, _, x, y = _xor()
    opt = MySGD(model.parameters(), lr=0.1)
    with profiler.profile() as prof:
        _xor_step(model, criterion, opt, x, y)
    names = [e.name for e in prof.events()]
    assert names.count("Optimizer.step#MySGD.step") == 1


def test_nothing_left_after_stop():
    originals = (Optimizer.__dict__["zero_grad"], SGD.__dict__["step"],
                 Tensor.__dict__["backward"], Sequential.__dict__["_fuse"],
                 nn.Module.__dict__["__call__"])
    model, criterion, opt, x, y = _xor()
    with profiler.profile() as prof:
        assert nn.Module.__dict__["__call__"] is not originals[-1]
        _xor_step(model, criterion, opt, x, y)
    assert (Optimizer.__dict__["zero_grad"], SGD.__dict__["step"], Tensor.__dict__["backward"],
            Sequential.__dict__["_fuse"], nn.Module.__dict__["__call__"]) == originals
    before = len(prof.events())
    _xor_step(model, criterion, opt, x, y)
    with record_function("late"):
        pass
    assert len(prof.events()) == before


def _python_calls(step):
    step()  # (warm: a Sequential plans its steps on its first call)
    counter = cProfile.Profile()
    counter.enable()
    step()
    counter.disable()
    return pstats.Stats(counter).total_calls


def test_no_extra_calls_after_a_profile():
    model, criterion, opt, x, y = _xor()
    never = _python_calls(lambda: _xor_step(model, criterion, opt, x, y))
    with profiler.profile():
        _xor_step(model, criterion, opt, x, y)
    after = _python_calls(lambda: _xor_step(model, criterion, opt, x, y))
    assert after == never
    with profiler.profile():  # a profile does make calls (the check above can fail)
        profiled = _python_calls(lambda: _xor_step(model, criterion, opt, x, y))
    assert profiled > never


# ---- the table ----------------------------------------------------------------------------


def _two_level_ranges(record, outer="outer", inner="inner"):
    with record(outer):
        for _ in range(2):
            with record(inner):
                time.sleep(0.001)


def _table_layout(table):
    """The separator line, the header line and the data rows' count."""
    lines = table.splitlines()
    return lines[0], lines[1], len(lines)


def test_table_columns():
    with profiler.profile() as prof:
        _two_level_ranges(record_function)
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=10)
    lines = table.splitlines()
    assert re.split(r"\s{2,}", lines[1].strip()) == [
        "Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
        "# of Calls"]
    assert lines[0] == lines[2] == lines[-2]
    assert [w for w in lines[0].split(" ") if w] == ["-" * len("outer    "), *["-" * 12] * 6]
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[3:-2]]
    assert [r[0] for r in rows] == ["outer", "inner"]  # by total time
    assert rows[0][-1] == "1" and rows[1][-1] == "2"
    assert rows[0][3] == "100.00%"
    assert lines[-1].startswith("Self CPU time total: ")
    # self CPU % adds up to 100
    assert sum(float(r[1].rstrip("%")) for r in rows) == pytest.approx(100, abs=0.02)


@needs_torch
def test_table_layout_matches_torch():
    with profiler.profile() as ours:
        _two_level_ranges(record_function)
    with torch_profiler.profile(activities=[torch_profiler.ProfilerActivity.CPU]) as theirs:
        _two_level_ranges(torch_profiler.record_function)
    for kwargs in ({}, {"sort_by": "self_cpu_time_total"}, {"header": "title"},
                   {"top_level_events_only": True}, {"row_limit": 1}):
        a = ours.key_averages().table(**kwargs).splitlines()
        b = theirs.key_averages().table(**kwargs).splitlines()
        skip = 2 if "header" in kwargs or "top_level_events_only" in kwargs else 0
        assert a[:skip + 3] == b[:skip + 3]  # separators and headers, the same to the char
        assert len(a) == len(b)
        assert [r.split()[0] for r in a[skip + 3:-2]] == [r.split()[0] for r in b[skip + 3:-2]]


def test_table_shapes_and_stack_columns():
    model, *_, x, _ = _xor()
    with profiler.profile(record_shapes=True, with_stack=True) as prof:
        model(x)
    table = prof.key_averages(group_by_input_shape=True, group_by_stack_n=5).table(
        time_unit="ms")
    header = re.split(r"\s{2,}", table.splitlines()[1].strip())
    assert header[-2:] == ["Input Shapes", "Source Location"]
    assert "[[4, 2]]" in table and "test_profiler.py" in table
    assert "ms" in table.splitlines()[3]
    by_stack = prof.key_averages(group_by_stack_n=1)
    assert all(len(a.stack) == 1 for a in by_stack)
    # without grouping, the shapes are not shown
    assert "Input Shapes" not in prof.key_averages().table()


def test_table_top_level_and_errors():
    with profiler.profile() as prof:
        _two_level_ranges(record_function)
    rows = prof.events().table(top_level_events_only=True).splitlines()
    assert rows[1] == "This report only display top-level ops statistics"
    assert [r.split()[0] for r in rows[5:-2]] == ["outer"]
    with pytest.raises(ValueError, match="sort_by must be one of .*got 'wall'"):
        prof.key_averages().table(sort_by="wall")
    with pytest.raises(ValueError, match="time_unit must be one of 's', 'ms', 'us' or None, "
                                         "got 'h'"):
        prof.key_averages().table(time_unit="h")
    assert prof.key_averages().table(sort_by="cuda_time_total")  # torch's names, zero
    with profiler.profile() as empty:
        pass
    assert empty.key_averages().table() == ""


# ---- the Chrome trace and on_trace_ready ---------------------------------------------------


def test_chrome_trace(tmp_path):
    with profiler.profile(record_shapes=True) as prof:
        _two_level_ranges(record_function)
        model, *_ = _xor()
        model(pyrt.ones(4, 2))
    for name in ("trace.json", "trace.json.gz"):
        path = tmp_path / name
        prof.export_chrome_trace(str(path))
        opener = gzip.open if name.endswith(".gz") else open
        with opener(path, "rt") as f:
            trace = json.load(f)
        complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
        assert len(complete) == len(prof.events())
        for e in complete:
            assert {"ts", "dur", "ph", "name", "pid", "tid", "cat"} <= set(e)
            assert e["pid"] == os.getpid() and e["tid"] == threading.get_native_id()
            assert e["dur"] >= 0
        outer = next(e for e in complete if e["name"] == "outer")
        inner = [e for e in complete if e["name"] == "inner"]
        assert len(inner) == 2
        for e in inner:  # drawn inside outer
            assert outer["ts"] <= e["ts"] and e["ts"] + e["dur"] <= outer["ts"] + outer["dur"]
        linear = next(e for e in complete if e["name"] == "nn.Module: Linear_0")
        assert linear["args"]["Input Dims"] == [[4, 2]]
        assert any(e["ph"] == "M" and e["name"] == "thread_name" for e in trace["traceEvents"])


def _cycles(make_profiler, schedule_kwargs, steps, record):
    """Run `steps` steps under a schedule: the step numbers at which on_trace_ready ran, and
    the count of each key in the trace it was given (the steps: "ProfilerStep*")."""
    seen = []

    def ready(prof):
        seen.append((prof.step_num, {a.key: a.count for a in prof.key_averages()}))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with make_profiler(schedule_kwargs, ready) as prof:
            for _ in range(steps):
                with record("work"):
                    pass
                prof.step()
    return seen


def _pyrt_profile(kwargs, ready):
    return profiler.profile(schedule=profiler.schedule(**kwargs), on_trace_ready=ready)


_cycle_cases = [
    (dict(wait=1, warmup=1, active=2), 9),
    (dict(wait=1, warmup=1, active=2, repeat=1), 9),
    (dict(wait=0, warmup=0, active=1, repeat=3), 6),
    (dict(wait=2, warmup=1, active=3, skip_first=2), 12),
    (dict(wait=1, warmup=1, active=2, repeat=2), 5),  # stopped inside the second cycle
]


@pytest.mark.parametrize("kwargs, steps", _cycle_cases)
def test_on_trace_ready_written_out(kwargs, steps):
    seen = _cycles(_pyrt_profile, kwargs, steps, record_function)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn = profiler.schedule(**kwargs)
    # called on leaving each cycle's last step, and on stopping within a recorded step
    expected = [n + 1 for n in range(steps) if fn(n) is A.RECORD_AND_SAVE]
    if fn(steps) in (A.RECORD, A.RECORD_AND_SAVE):
        expected.append(steps)
    assert [s for s, _ in seen] == expected
    # each trace holds the recorded steps since the previous one; stopping closes the step
    # it is in (which ran no work) and ends its trace
    begin = 0
    for end, counts in seen:
        last = end if end == steps else end - 1
        recorded = [n for n in range(begin, last + 1) if fn(n) in (A.RECORD, A.RECORD_AND_SAVE)]
        assert counts == {"ProfilerStep*": len(recorded),
                          "work": sum(n < steps for n in recorded)}
        begin = end


@needs_torch
@pytest.mark.parametrize("kwargs, steps", _cycle_cases)
def test_on_trace_ready_matches_torch(kwargs, steps):
    def torch_profile(kwargs, ready):
        return torch_profiler.profile(activities=[torch_profiler.ProfilerActivity.CPU],
                                      schedule=torch_profiler.schedule(**kwargs),
                                      on_trace_ready=ready)

    ours = _cycles(_pyrt_profile, kwargs, steps, record_function)
    theirs = _cycles(torch_profile, kwargs, steps, torch_profiler.record_function)
    assert ours == theirs


def test_tensorboard_trace_handler(tmp_path):
    log = tmp_path / "log"
    with profiler.profile(schedule=profiler.schedule(wait=0, warmup=1, active=1, repeat=2),
                          on_trace_ready=profiler.tensorboard_trace_handler(str(log))) as p:
        for _ in range(4):
            with record_function("work"):
                pass
            p.step()
    files = sorted(os.listdir(log))
    assert len(files) == 2
    worker = f"{socket.gethostname()}_{os.getpid()}"
    for name in files:
        assert re.fullmatch(re.escape(worker) + r"\.\d+\.pt\.trace\.json", name)
        with open(log / name) as f:
            names = {e["name"] for e in json.load(f)["traceEvents"] if e["ph"] == "X"}
        assert "work" in names
    handler = profiler.tensorboard_trace_handler(str(tmp_path / "gz"), "w0", use_gzip=True)
    with profiler.profile(on_trace_ready=handler):
        pass
    (name,) = os.listdir(tmp_path / "gz")
    assert re.fullmatch(r"w0\.\d+\.pt\.trace\.json\.gz", name)


def test_tensorboard_trace_handler_directory_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    handler = profiler.tensorboard_trace_handler(str(blocker / "sub"))
    with pytest.raises(RuntimeError, match="Can't create directory: "):
        with profiler.profile(on_trace_ready=handler):
            pass


def test_acc_events_keeps_every_cycle():
    with profiler.profile(schedule=profiler.schedule(wait=0, warmup=1, active=1),
                          acc_events=True) as prof:
        for _ in range(6):
            with record_function("work"):
                pass
            prof.step()
    assert {a.key: a.count for a in prof.key_averages()}["work"] == 3


# ---- the profile's own errors, and the older interface -------------------------------------


def test_profile_argument_errors():
    with pytest.raises(TypeError, match="activities must hold ProfilerActivity values, got str"):
        profiler.profile(activities=["cpu"])
    with pytest.raises(ValueError, match="No valid profiler activities found"):
        profiler.profile(activities=[])
    with pytest.raises(TypeError, match="schedule must be callable, got int"):
        profiler.profile(schedule=3)
    with pytest.raises(TypeError, match="on_trace_ready must be callable, got str"):
        profiler.profile(on_trace_ready="x")
    with pytest.raises(TypeError, match="schedule must return a ProfilerAction, got str for "
                                        "step 0"):
        profiler.profile(schedule=lambda step: "record")
    with pytest.raises(RuntimeError, match="profile has no results yet"):
        profiler.profile().key_averages()
    with pytest.warns(UserWarning, match="profile_memory=True is ignored"):
        profiler.profile(profile_memory=True)
    with pytest.warns(FutureWarning, match="`use_cuda` is deprecated"):
        prof = profiler.profile(use_cuda=True)
    assert profiler.ProfilerActivity.CUDA in prof.activities
    assert profiler.ProfilerActivity.CPU in profiler.supported_activities()


def test_autograd_profiler_module():
    import pyrt.autograd.profiler as legacy

    assert pyrt.autograd.profiler is legacy
    assert legacy.record_function is record_function
    with legacy.profile(record_shapes=True) as prof:
        with record_function("a"):
            pass
    assert [e.name for e in prof.function_events] == ["a"]
    assert "Self CPU time total" in str(prof) and prof.self_cpu_time_total >= 0
    assert prof.key_averages()[0].key == "a" and prof.total_average().count == 1
    with legacy.profile(enabled=False) as off:
        with record_function("b"):
            pass
    with pytest.raises(RuntimeError, match="Profiler didn't finish running"):
        off.key_averages()
    unfinished = legacy.profile()
    assert str(unfinished) == "<unfinished pyrt.autograd.profile>"
    with unfinished:
        with pytest.raises(RuntimeError, match="Profiler context manager is not reentrant"):
            unfinished.__enter__()
    with legacy.emit_nvtx(), legacy.emit_itt():
        pass
