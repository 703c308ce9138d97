"""Giving the SDK's memory back once the work is done: the process re-executed in place."""

from __future__ import annotations

import gc
import os
import signal
import sys
from collections.abc import Callable

from wsd.daemon.curation.bridge.client import sdk_loaded
from wsd.daemon.curation.loop.outcome import PassResult, Step
from wsd.daemon.memory.semantic import model_loaded
from wsd.daemon.runtime import heap
from wsd.daemon.runtime.signals import BLOCKED_ACROSS_EXEC

#: Passes that only looked (nothing pending, waiting out a trigger, a backoff or the cap):
#: they free nothing worth giving back.
LOOKED = frozenset({Step.IDLE, Step.WAITING, Step.BACKOFF, Step.BUDGET, Step.PAUSED})
#: A give-back waits until this many times its last one's cost has passed: a full
#: collection costs 30-45 ms with the SDK loaded, so at most ~2% of the loop's time (the
#: stand-in's ~50 ms batches would feel one per pass; the Bridge's seconds would not).
SPACING = 50.0


class HeapKeeper:
    """After a pass that worked (curated, submitted, applied a Message Batch's results,
    failed), the pass's freed memory goes back to the system: a full collection (which
    also empties CPython's free lists, the last holders of many of its arenas) and a
    :func:`wsd.daemon.runtime.heap.trim`. Measured on a 5,000-turn economy backlog: the
    daemon's peak 124 MB without it, 124 MB with a trim alone, 120 MB with both; it ended at
    111 MB instead of 118 MB (issue 45)."""

    def __init__(
        self,
        monotonic: Callable[[], float],
        trim: Callable[[], bool] = heap.trim,
        collect: Callable[[], int] = gc.collect,
    ) -> None:
        self.monotonic = monotonic
        self.trim = trim
        self.collect = collect
        self._next = 0.0

    def __call__(self, result: PassResult) -> None:
        if result.action in LOOKED or self.monotonic() < self._next:
            return
        began = self.monotonic()
        self.collect()
        self.trim()
        ended = self.monotonic()
        self._next = ended + SPACING * (ended - began)


class MemoryShedder:
    """Re-executes the program in place (same PID) to give back the SDK's memory.

    The anthropic SDK costs ~55 MB resident once imported and Python cannot unload
    it; a daemon with nothing to curate should not carry it. The loop calls
    :meth:`busy` whenever work is pending or done, and :meth:`due` between passes.
    """

    def __init__(self, seconds: float, monotonic: Callable[[], float]) -> None:
        self.seconds = seconds
        self.monotonic = monotonic
        self._busy_at = monotonic()

    def busy(self) -> None:
        self._busy_at = self.monotonic()

    def due(self) -> bool:
        """The SDK or the embedding model is loaded and nothing was pending for ``seconds``
        (0 disables)."""
        return (
            bool(self.seconds)
            and (sdk_loaded() or model_loaded())
            and self.monotonic() - self._busy_at >= self.seconds
        )

    def reexec(self, stopping: Callable[[], bool], before: Callable[[], None]) -> OSError | None:
        """Replace this process image; returns only if it did not (the error, or None when
        ``stopping()`` turned true). ``before`` runs just before, with no way back.

        Nothing may be held at this point (no database or HTTP connection);
        supervisord sees the same process throughout.
        """
        # A SIGTERM between execv and the new image's handlers would kill it by the default
        # action (exit -15, not 0); so would a SIGUSR1 asking for a stack dump. Blocked
        # signals stay pending across execv; the new image unblocks them once its handlers
        # are in (daemon/runtime/signals.py), then stops cleanly or dumps its stacks.
        signal.pthread_sigmask(signal.SIG_BLOCK, BLOCKED_ACROSS_EXEC)
        if stopping():  # a signal came just before the block: stop instead
            signal.pthread_sigmask(signal.SIG_UNBLOCK, BLOCKED_ACROSS_EXEC)
            return None
        before()
        try:
            os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])
        except OSError as exc:  # e.g. the venv is being replaced: carry on as we are
            signal.pthread_sigmask(signal.SIG_UNBLOCK, BLOCKED_ACROSS_EXEC)
            self.busy()
            return exc
        return None  # pragma: no cover - execv does not return
