"""What a profile holds, as torch.autograd.profiler_util names it: FunctionEvent (one recorded
range), FunctionEventAvg (the ranges of one key summed) and EventList (a list of either, with
key_averages(), table() and export_chrome_trace()).

Times are microseconds (floats). A range's self time is its total less the totals of the
ranges opened directly inside it on the same thread. pyrt measures CPU (wall) time only: the
device fields are there, zero, so that code reading torch's names runs.
"""

from collections import defaultdict

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "Interval"]


def format_time(time_us):
    """torch's: seconds, milliseconds or microseconds, with 3 decimals."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


class _FormattedTimes:
    """The *_str forms of the time attributes, as torch's FormattedTimesMixin."""

    @property
    def cpu_time_str(self):
        return format_time(self.cpu_time)

    @property
    def cpu_time_total_str(self):
        return format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self):
        return format_time(self.self_cpu_time_total)

    @property
    def cpu_time(self):
        """The average total time of one call."""
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    # no device time is measured: torch's names read zero
    device_time = device_time_total = self_device_time_total = 0.0
    cuda_time = cuda_time_total = self_cuda_time_total = 0.0
    cpu_memory_usage = self_cpu_memory_usage = 0
    device_memory_usage = self_device_memory_usage = 0
    flops = 0


class Interval:
    """A range's start and end, microseconds since the profile started."""

    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        return self.end - self.start


class FunctionEvent(_FormattedTimes):
    """One recorded range: its name, thread, times, CPU parent and children, and (with
    record_shapes / with_stack) its input shapes and the Python stack where it opened."""

    count = 1
    node_id = -1
    is_async = False
    is_legacy = False
    is_remote = False
    device_type = "cpu"
    overload_name = ""
    use_device = None

    def __init__(self, id, name, thread, start_us, end_us, input_shapes=None, stack=None,
                 cpu_parent=None, trace_category="user_annotation"):
        self.id = id
        # the steps sum up as one key, "ProfilerStep*"; the trace keeps each step's name
        self.name = "ProfilerStep*" if name.startswith("ProfilerStep#") else name
        self.trace_name = name
        self.thread = thread
        self.time_range = Interval(start_us, end_us)
        self.input_shapes = [] if input_shapes is None else input_shapes
        self.stack = [] if stack is None else stack
        self.cpu_parent = cpu_parent
        self.cpu_children = []
        self.trace_category = trace_category
        self.trace_args = {}
        self.kernels = []

    @property
    def key(self):
        return self.name

    @property
    def is_user_annotation(self):
        return self.trace_category == "user_annotation"

    @property
    def cpu_time_total(self):
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} "
                f"cpu_time={self.cpu_time_str} start_us={self.time_range.start:.3f} "
                f"end_us={self.time_range.end:.3f} "
                f"cpu_children={[c.id for c in self.cpu_children]} "
                f"thread={self.thread} input_shapes={self.input_shapes}>")


class FunctionEventAvg(_FormattedTimes):
    """The ranges of one key (a name, with its input shapes or stack if grouped by them)
    summed: count, total and self times; cpu_time is the average total of one call."""

    node_id = -1
    is_async = False
    is_legacy = False
    is_remote = False
    device_type = "cpu"
    overload_name = ""
    use_device = None

    def __init__(self):
        self.key = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.input_shapes = None
        self.stack = None
        self.is_user_annotation = False
        # the first event's, as torch's (so that top_level_events_only reads the first's)
        self.cpu_parent = None
        self.cpu_children = None

    def add(self, other):
        """Add `other` (a FunctionEvent or FunctionEventAvg) of the same key in."""
        if self.key is None:
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.is_user_annotation = other.is_user_annotation
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        return self

    __iadd__ = add

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str}"
                f" cpu_time={self.cpu_time_str} input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of FunctionEvents (or their averages) with torch's summaries."""

    def __init__(self, *args, profile_memory=False, with_flops=False):
        super().__init__(*args)
        self._profile_memory = profile_memory
        self._with_flops = with_flops

    @property
    def self_cpu_time_total(self):
        return sum(event.self_cpu_time_total for event in self)

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0):
        """The events summed by name (and by input shapes, and by the innermost
        `group_by_stack_n` stack entries, when asked), in the order keys first appear."""
        stats = defaultdict(FunctionEventAvg)
        for event in self:
            key = [event.key]
            if group_by_input_shapes:
                key.append(str(event.input_shapes))
            if group_by_stack_n > 0:
                key += event.stack[:group_by_stack_n]
            stats[tuple(key)].add(event)
        averages = EventList(stats.values(), profile_memory=self._profile_memory,
                             with_flops=self._with_flops)
        for average in averages:
            average.stack = average.stack[:group_by_stack_n]
            if not group_by_input_shapes:
                average.input_shapes = ""
        return averages

    def total_average(self):
        """All events summed into one, with the key "Total"."""
        total = FunctionEventAvg()
        for event in self:
            total.add(event)
        total.key = "Total"
        return total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        """The events as torch's text table, sorted by the attribute `sort_by` (largest
        first; "cpu_time_total", "self_cpu_time_total", "count", ...) or in their order."""
        from pyrt.profiler.table import build_table

        return build_table(self, sort_by=sort_by, row_limit=row_limit,
                           max_src_column_width=max_src_column_width,
                           max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width, header=header,
                           top_level_events_only=top_level_events_only, time_unit=time_unit)

    def export_chrome_trace(self, path):
        """Write the events as a Chrome trace (JSON) to `path`."""
        from pyrt.profiler.chrome_trace import write_chrome_trace

        write_chrome_trace(self, path)

    def __str__(self):
        return self.table()
