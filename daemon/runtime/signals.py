"""Stop signals: which thread takes them, what they do, and how they survive a re-exec.

* Only the main thread runs Python signal handlers, so every background thread blocks
  the stop signals (:func:`background`): the kernel then always delivers them to the main
  thread, never to a thread about to vanish in an ``execv``.
* The handler only sets a flag; the loop does the work (:class:`SignalPolicy`).
* Before the memory-shedding re-exec the main thread blocks them too; a signal sent
  meanwhile stays pending across ``execv`` and :func:`install` delivers it to the new
  image's handler (see daemon/health.py, MemoryShedder).
"""

from __future__ import annotations

import faulthandler
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

#: The signals that stop the daemon (first graceful, second abort).
STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT})


class SignalPolicy:
    """First SIGTERM/SIGINT: ask the loop to stop after its step. Second: abort now.

    The handler only sets a flag (the loop does the work); the abort raises
    SystemExit in the main thread, whose finally blocks and ``with`` blocks
    roll back any open transaction, so even an abort leaves nothing half-done.
    """

    def __init__(self, request_stop: Callable[[], None]) -> None:
        self.request_stop = request_stop
        self.count = 0

    def __call__(self, signum: int, _frame: FrameType | None) -> None:
        self.count += 1
        if self.count > 1:
            raise SystemExit(128 + signum)
        self.request_stop()


#: The signal that writes every thread's stack to stderr (the daemon's log under
#: supervisord): what a daemon slow to stop, or stuck, is doing, without stopping it.
DUMP_SIGNAL = signal.SIGUSR1
#: Held back across the memory-shedding re-exec: each would kill by its default action
#: before the new image handles it; pending, it is delivered once :func:`install` ran.
BLOCKED_ACROSS_EXEC = STOP_SIGNALS | {DUMP_SIGNAL}


def install(request_stop: Callable[[], None]) -> SignalPolicy:
    """Handle the stop signals in this (main) thread; deliver any held across a re-exec;
    :data:`DUMP_SIGNAL` dumps the threads' stacks (faulthandler: it works even when the main
    thread is stuck in C, where no Python handler would run)."""
    faulthandler.register(DUMP_SIGNAL, all_threads=True)
    policy = SignalPolicy(request_stop)
    for signum in STOP_SIGNALS:
        signal.signal(signum, policy)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, BLOCKED_ACROSS_EXEC)
    return policy


@contextmanager
def blocked() -> Iterator[None]:
    """Stop signals blocked in this thread for the block (then delivered as usual).

    For work in the main thread that may start native threads (numpy's BLAS pool,
    tokenizers' Rust pool): they inherit this mask, so they never take a stop signal either,
    and none is lost when such a thread vanishes in the re-exec's ``execv``.
    """
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def background(target: Callable[..., Any], name: str, *args: Any) -> threading.Thread:
    """Start a daemon thread that never takes the stop signals (nor do threads it starts)."""

    def run() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        target(*args)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread
