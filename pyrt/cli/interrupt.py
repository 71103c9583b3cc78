"""Stop a training loop at a step boundary on Ctrl-C, so that it can save a checkpoint."""

import signal
import threading

__all__ = ["StopOnInterrupt"]


class StopOnInterrupt:
    """Inside ``with StopOnInterrupt() as stop:``, a first Ctrl-C (SIGINT) only sets
    ``stop.requested``; the loop checks it after each step, so the weights and the optimizer
    state it then saves belong to one completed step. A second Ctrl-C raises
    KeyboardInterrupt at once, as usual. Outside the main thread, where Python cannot handle
    signals, it does nothing."""

    def __init__(self):
        self.requested = False
        self._previous = None

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __enter__(self):
        self.requested = False
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
        return False
