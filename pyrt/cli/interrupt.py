"""Stop a loop at a step boundary on Ctrl-C (so that it can save a checkpoint), or turn other
stop signals into KeyboardInterrupt."""

import signal
import threading

__all__ = ["InterruptOn", "StopOnInterrupt"]


class _Handlers:
    """Inside ``with``, self._handle handles each of `signals`; the previous handlers come
    back on the way out. Outside the main thread, where Python cannot handle signals, it
    does nothing."""

    def __init__(self, signals):
        self._signals = signals
        self._previous = {}

    def _handle(self, signum, frame):
        raise NotImplementedError

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


class StopOnInterrupt(_Handlers):
    """Inside ``with StopOnInterrupt() as stop:``, a first Ctrl-C (SIGINT) only sets
    ``stop.requested``; the loop checks it after each step, so the weights and the optimizer
    state it then saves belong to one completed step. A second Ctrl-C raises
    KeyboardInterrupt at once, as usual. `signals` may add others that mean "stop" (SIGTERM
    from kill or timeout, SIGHUP when the terminal closes), handled the same way."""

    def __init__(self, signals=(signal.SIGINT,)):
        super().__init__(signals)
        self.requested = False
        self.signum = None  # the signal that asked for the stop

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        self.signum = signum

    def __enter__(self):
        self.requested = False
        self.signum = None
        return super().__enter__()


class InterruptOn(_Handlers):
    """Inside ``with InterruptOn(signals):``, each of `signals` raises KeyboardInterrupt, as
    SIGINT does by default: a SIGTERM (kill, timeout) or SIGHUP (the terminal closed) then
    unwinds like a Ctrl-C, through the same cleanup, instead of ending the process where it
    stands."""

    def _handle(self, signum, frame):
        raise KeyboardInterrupt
