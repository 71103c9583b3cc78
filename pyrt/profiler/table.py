"""EventList.table(): torch's text table of a profile, column for column.

The columns: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg, # of Calls;
then Input Shapes when the events have shapes (record_shapes, grouped by them) and Source
Location when they have stacks (with_stack). Percentages are of the sum of self times, so the
self column adds up to 100%. torch's device columns appear only when some event has device
time, which pyrt does not measure.
"""

from pyrt.profiler.events import format_time

__all__ = ["build_table"]

_COLUMN_WIDTH = 12
_SPACING = 2
_SORT_KEYS = ("cpu_time", "cpu_time_total", "self_cpu_time_total", "count",
              "device_time", "device_time_total", "self_device_time_total",
              "cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage",
              "self_device_memory_usage", "flops")


def _share(time_us, total_us):
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def _in_unit(time_us, time_unit):
    if time_unit == "s":
        return f"{time_us / 1e6:.3f}s"
    if time_unit == "ms":
        return f"{time_us / 1e3:.3f}ms"
    if time_unit == "us":
        return f"{time_us:.3f}us"
    return format_time(time_us)


def _trim_path(path, width):
    """The end of `path` that fits in `width`, its first three characters made "..."."""
    if len(path) > width:
        path = path[len(path) - width:]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


def build_table(events, sort_by=None, row_limit=100, max_src_column_width=75,
                max_name_column_width=55, max_shapes_column_width=80, header=None,
                top_level_events_only=False, time_unit=None):
    """The table of `events` (FunctionEvents or FunctionEventAvgs) as one string."""
    if time_unit not in (None, "s", "ms", "us"):
        raise ValueError(f"time_unit must be one of 's', 'ms', 'us' or None, got {time_unit!r}")
    if len(events) == 0:
        return ""
    if sort_by is not None:
        attribute = sort_by.replace("cuda", "device").replace("xpu", "device")
        if attribute not in _SORT_KEYS:
            raise ValueError(f"sort_by must be one of {', '.join(_SORT_KEYS)} (or their cuda_ "
                             f"forms), got {sort_by!r}")
        events = sorted(events, key=lambda event: getattr(event, attribute), reverse=True)

    has_shapes = any(event.input_shapes for event in events)
    stacks = [event.stack for event in events if event.stack]

    name_width = max(len(event.key) for event in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
               "# of Calls"]
    widths = [name_width] + [_COLUMN_WIDTH] * (len(headers) - 1)
    aligns = [">"] * len(headers)
    if has_shapes:
        shapes_width = max(len(str(event.input_shapes)) for event in events) + 4
        if max_shapes_column_width is not None:
            shapes_width = min(shapes_width, max_shapes_column_width)
        headers.append("Input Shapes")
        widths.append(shapes_width)
        aligns.append(">")
    if stacks:
        src_width = max(len(entry) for stack in stacks for entry in stack) + 4
        if max_src_column_width is not None:
            src_width = min(src_width, max_src_column_width)
        headers.append("Source Location")
        widths.append(src_width)
        aligns.append("<")

    # each column right-aligned (the source left-aligned) and followed by two spaces
    row_format = "".join(f"{{: {a}{w}}}" + " " * _SPACING for a, w in zip(aligns, widths))
    separator = "".join("-" * w + " " * _SPACING for w in widths)
    line_length = sum(widths) + _SPACING * (len(widths) - 1)

    lines = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_events_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [separator, row_format.format(*headers), separator]

    total_self = sum(event.self_cpu_time_total for event in events)
    shown = 0
    for event in events:
        if shown == row_limit:
            break
        if top_level_events_only and event.cpu_parent is not None:
            continue
        shown += 1
        name = event.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        row = [name,
               _share(event.self_cpu_time_total, total_self),
               _in_unit(event.self_cpu_time_total, time_unit),
               _share(event.cpu_time_total, total_self),
               _in_unit(event.cpu_time_total, time_unit),
               _in_unit(event.cpu_time, time_unit),
               event.count]
        if has_shapes:
            row.append(str(event.input_shapes)[:widths[len(row)]])
        if stacks:
            row.append(_trim_path(event.stack[0], widths[-1]) if event.stack else "")
        lines.append(row_format.format(*row))
        if stacks:
            blank = [""] * (len(headers) - 1)
            for entry in event.stack[1:]:
                lines.append(row_format.format(*blank, _trim_path(entry, widths[-1])))
            lines.append(row_format.format(*blank, ""))
    lines += [separator, f"Self CPU time total: {_in_unit(total_self, time_unit)}"]
    return "".join(line + "\n" for line in lines)
