"""Pausing Python's cyclic garbage collector around work that builds many long-lived objects.

Accumulating a log builds, per run, the run's state and then its RunOutput: a few dozen
containers that all stay alive until the call returns.  The collector is triggered by that net
growth, and each collection walks objects that cannot be garbage: on a log of 300 short runs, 24
young and 2 middle collections a call (12 % of the time), and with earlier results kept alive by
the caller, full collections too (30 % of a loop of such calls).  Paused, the same objects are
walked once, by the first collection after the pause.

Nothing this package builds while paused is cyclic garbage (tests/test_memory.py checks that
``gc.collect()`` finds none after accumulating every corpus stream), so a pause loses no memory.
Only the package's own work is paused, never a caller's code: see ``Api.accumulate``.

``PAUSED`` is re-entrant and shared by threads: the first ``with PAUSED`` in any thread turns
the collector off (if it was on), the last one to leave turns it back on.  A program that turns
the collector off itself from another thread while a pause is under way will find it on again
when the pause ends (the gc module has no way to tell the two apart).  A process forked while a
pause is under way starts without it (the threads that held it are not in the child): its
collector as it was before the pause, and a fresh lock.
"""

from __future__ import annotations

import gc
import os
import threading

__all__ = ["PAUSED"]


class _Paused:
    __slots__ = ("_lock", "_depth", "_restore")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._restore = False

    def __enter__(self) -> None:
        with self._lock:
            if self._depth == 0:
                self._restore = gc.isenabled()
                if self._restore:
                    gc.disable()
            self._depth += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0 and self._restore:
                gc.enable()

    def _after_fork(self) -> None:
        """In a forked child: no pause is under way there (the lock may have been held)."""
        self._lock = threading.Lock()
        if self._depth and self._restore:
            gc.enable()
        self._depth = 0


#: ``with PAUSED:`` -- the collector off meanwhile (see the module's docstring).
PAUSED = _Paused()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=PAUSED._after_fork)
