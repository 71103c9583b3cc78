"""scaling.png: speedup against threads, a panel per workload, with matplotlib (the optional
extra `plot`: pip install 'pyrt[plot]').

Every curve is a speedup over pyrt's one-thread time (pyrt.bench.report), so one panel shows
both how each library scales and how it compares with pyrt: the ideal line is t, a peer below
pyrt's curve is slower than pyrt. A variant that runs on one thread only is a flat dotted line.
"""

import math
import textwrap

__all__ = ["write_plot"]

COLUMNS = 4


def write_plot(path, summary, workloads, threads):
    """Draw the figure into `path`; return None, or a note saying why there is no figure."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return (f"{path.name} skipped: matplotlib is not installed "
                "(pip install 'pyrt[plot]' or pip install matplotlib).")
    drawn = [(w, s) for w, s in zip(workloads, summary) if len(s["rows"]) > 0]
    if not drawn:
        return f"{path.name} skipped: no workload has a pyrt figure."
    cols = min(COLUMNS, len(drawn))
    rows = math.ceil(len(drawn) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.8 * cols, 3.3 * rows), squeeze=False)
    for ax, (w, s) in zip(axes.flat, drawn):
        _panel(ax, w, s, threads)
    for ax in list(axes.flat)[len(drawn):]:
        ax.axis("off")
    fig.suptitle("Speedup over pyrt at 1 thread (higher is faster; dashed: ideal)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def _panel(ax, workload, summary, threads):
    ts = [r["threads"] for r in summary["rows"]]
    ax.plot(threads, threads, "k--", linewidth=0.8, label="ideal")
    ax.plot(ts, [r["speedup"] for r in summary["rows"]], "o-", linewidth=2.2, label="pyrt")
    for v in workload.variants:
        if v.is_pyrt:
            continue
        points = [(r["threads"], r["others"][v.label]["speedup"]) for r in summary["rows"]
                  if v.label in r["others"]]
        if not points:
            continue
        if v.threaded:
            ax.plot(*zip(*points), "s-", linewidth=1.2, markersize=4, label=v.label)
        else:
            ax.plot(threads, [points[0][1]] * len(threads), ":", linewidth=1.2,
                    label=f"{v.label} (1 thread)")
    ax.set_title(textwrap.fill(workload.title, 40), fontsize=9)
    ax.set_xlabel("threads", fontsize=8)
    ax.set_xticks(threads)
    if len(threads) > 2:
        ax.set_xscale("log", base=2)
        ax.set_xticks(threads, [str(t) for t in threads])
    ax.set_ylim(bottom=0)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, loc="best")
