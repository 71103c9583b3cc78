"""Stop a loop at a step boundary on Ctrl-C (so that it can save a checkpoint), or turn other
stop signals into KeyboardInterrupt."""

import signal
import threading

__all__ = ["InterruptOn", "StopOnInterrupt"]


class StopOnInterrupt:
    """Inside ``with StopOnInterrupt() as stop:``, a first Ctrl-C (SIGINT) only sets
    ``stop.requested``; the loop checks it after each step, so the weights and the optimizer
    state it then saves belong to one completed step. A second Ctrl-C raises
    KeyboardInterrupt at once, as usual. `signals` may add others that mean "stop" (SIGTERM
    from kill or timeout, SIGHUP when the terminal closes), handled the same way. Outside the
    main thread, where Python cannot handle signals, it does nothing."""

    def __init__(self, signals=(signal.SIGINT,)):
        self.requested = False
        self._signals = signals
        self._previous = {}

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __enter__(self):
        self.requested = False
        if threading.current_thread() is threading.main_thread():
            for sig in self._signals:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc):
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous = {}
        return False


class InterruptOn:
    """Inside ``with InterruptOn(signals):``, each of `signals` raises KeyboardInterrupt, as
    SIGINT does by default: a SIGTERM (kill, timeout) or SIGHUP (the terminal closed) then
    unwinds like a Ctrl-C, through the same cleanup, instead of ending the process where it
    stands. Outside the main thread it does nothing."""

    def __init__(self, signals):
        self._signals = signals
        self._previous = {}

    @staticmethod
    def _handle(signum, frame):
        raise KeyboardInterrupt

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in self._signals:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc):
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous = {}
        return False
