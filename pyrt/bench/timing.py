"""Timing passes in one process: samples of back-to-back calls, variants interleaved."""

import time

__all__ = ["calls_per_sample", "timed_passes"]


def calls_per_sample(run, sample_s):
    """How many calls of run() make one sample of about sample_s seconds (at least 1)."""
    run()
    t0 = time.perf_counter()
    run()
    one = max(time.perf_counter() - t0, 1e-7)
    return max(1, int(sample_s / one))


def timed_passes(variants, repeat, pause_s, *, sample_s=None, untimed=True, on_result=None,
                 show_passes=False):
    """Time `variants`, (key, setup, run) triples, in `repeat` interleaved passes; return
    {key: [seconds per call of run(), one per pass]}.

    A pass takes every variant in turn, so drift on a shared machine (other jobs, clock
    changes) spreads over all of them instead of landing on one. A variant's sample is:
    setup() (untimed: it sets the library's thread count); with `untimed`, a quarter of the
    sample's calls (at least one) untimed, so that the library's threads are awake and its data
    in cache, as in STREAM's back-to-back loops; the sample's calls of run(), timed together,
    divided by their number; on_result(key, value of the last call), if given; then a sleep of
    pause_s (a number of seconds, or a function of the variant's key that gives it), so that
    threads a library leaves spinning after a call have gone to sleep before the next variant
    runs. A sample is one call, or with `sample_s`, as many calls as take
    about sample_s seconds (counted once per variant, after its setup(), before the passes).
    show_passes prints "pass i/n" after each pass.

    A variant may be a quadruple (key, setup, run, sampler) instead, for work that runs
    elsewhere (a child process): sampler(calls, untimed_calls) takes a sample there, timed
    there, and returns its seconds per call; run() is one call (for the count of calls per
    sample), and on_result gets None.
    """
    calls = {}
    for key, setup, run, *_ in variants:
        if sample_s is None:
            calls[key] = 1
        else:
            setup()
            calls[key] = calls_per_sample(run, sample_s)
    samples = {}
    for rep in range(repeat):
        for key, setup, run, *sampler in variants:
            setup()
            n = calls[key]
            ahead = max(1, n // 4) if untimed else 0
            value = None
            if sampler:
                seconds = sampler[0](n, ahead)
            else:
                for _ in range(ahead):
                    run()
                t0 = time.perf_counter()
                for _ in range(n):
                    value = run()
                seconds = (time.perf_counter() - t0) / n
            samples.setdefault(key, []).append(seconds)
            if on_result is not None:
                on_result(key, value)
            time.sleep(pause_s(key) if callable(pause_s) else pause_s)
        if show_passes:
            print(f"pass {rep + 1}/{repeat}", flush=True)
    return samples
