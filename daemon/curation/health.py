"""Small state machines of the loop's health: the outage backoff, wake detection, and
giving the SDK's memory back once the work is done.

Kept out of the worker so each can be read (and reasoned about) on its own.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable

from wsd.daemon.curation.bridge import sdk_loaded
from wsd.daemon.memory.semantic import model_loaded
from wsd.daemon.runtime.config import DEFAULT_ORPHAN_SECONDS
from wsd.daemon.runtime.signals import HELD_ACROSS_EXEC
from wsd.daemon.store import Store


class Backoff:
    """When the next curator call may be made after the Bridge failed, doubling each time.

    The deadline is kept on the monotonic clock, so a wall clock set back (NTP, a restored
    VM) cannot stretch a 30-second backoff into an hour, nor one set forward cut it short.
    It is persisted in memory.db (``state``) as wall time, so a long outage is remembered
    across restarts instead of hammering the Bridge on every start; read back, the time
    left is clamped to the longest backoff.
    """

    def __init__(
        self,
        store: Store,
        initial: float,
        maximum: float,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.initial = initial
        self.maximum = maximum
        self.monotonic = monotonic
        self.next_attempt_at = 0.0  # wall time, for status and restarts
        self.deadline: float | None = None  # monotonic time of the next attempt
        self.delay = initial

    def load(self, now: float) -> None:
        """Read the persisted state (start-up, at wall time ``now``)."""
        at = self.store.ledger.get_state("next_attempt_at")
        delay = self.store.ledger.get_state("backoff_seconds")
        self.next_attempt_at = float(at) if at else 0.0
        self.delay = float(delay) if delay else self.initial
        if self.next_attempt_at:
            left = min(max(self.next_attempt_at - now, 0.0), self.maximum)
            self.deadline = self.monotonic() + left

    @property
    def active(self) -> bool:
        return self.next_attempt_at > 0

    def waiting(self) -> bool:
        """True until the backoff's monotonic deadline has passed."""
        return self.deadline is not None and self.monotonic() < self.deadline

    def enter(self, now: float, hint: float | None) -> float:
        """Back off after a failure (at least ``hint``, the server's retry-after); the delay."""
        delay = max(self.delay, hint or 0.0)
        self.deadline = self.monotonic() + delay
        self.next_attempt_at = now + delay
        self.delay = min(self.delay * 2, self.maximum)
        self.store.ledger.set_state(
            {"next_attempt_at": repr(self.next_attempt_at), "backoff_seconds": repr(self.delay)},
            now,
        )
        return delay

    def clear(self, now: float) -> None:
        """Healthy again (or woken from sleep): the next call may happen at once."""
        self.next_attempt_at = 0.0
        self.deadline = None
        self.delay = self.initial
        self.store.ledger.set_state({"next_attempt_at": None, "backoff_seconds": None}, now)


class Budget:
    """The daily spend cap: no curator call once the UTC day's cost reaches ``cap``.

    Read from the ledgers (charges booked before each call, the cost of every batch finished
    today), never below what was seen earlier that day (the heartbeat keeps it across a
    restore from a backup); ``cap`` 0 turns the cap off.
    """

    def __init__(self, store: Store, cap: float) -> None:
        self.store = store
        self.cap = cap
        self.spent = 0.0
        #: The UTC day the cap was last reached on, while it still holds.
        self.reached_on: int | None = None
        #: (UTC day, spent) as last seen, kept in the heartbeat file: restoring transcript.db
        #: and memory.db from a backup takes the day's charges back with them (a new user's
        #: restore took $0.0098 down to $0.0044), and the day's spend must never go down.
        self.floor: tuple[int, float] = (-1, 0.0)

    def remember(self, seen: object, paused: object = None) -> None:
        """What the previous process's heartbeat said: the floor from ``spent_today``
        ({"day", "usd"}), and whether curation was paused by the cap (``budget``, with
        ``resumes_at``), so a restart with a higher cap logs ``budget_resumed`` (it logged
        nothing). Anything else (missing, damaged, not a finite amount) is ignored."""
        if isinstance(seen, dict):
            day, usd = seen.get("day"), seen.get("usd")
            if isinstance(day, int) and isinstance(usd, int | float) and 0 <= usd <= 1e6:
                self.floor = (day, float(usd))
        resumes = paused.get("resumes_at") if isinstance(paused, dict) else None
        if isinstance(resumes, int | float) and 0 < resumes < 1e11:
            self.reached_on = int(resumes // 86400) - 1

    def spent_today(self, now: float) -> float:
        """The UTC day's spend: the ledgers', never less than was seen earlier that day."""
        day = int(now // 86400)
        spent = self.store.charges.spent_since(day * 86400.0)
        if self.floor[0] == day:
            spent = max(spent, self.floor[1])
        self.floor = (day, spent)
        return spent

    def exhausted(self, now: float) -> bool:
        """True if today's curator cost has reached the cap (``now``: wall clock)."""
        if self.cap <= 0:
            return False
        self.spent = self.spent_today(now)
        return self.spent >= self.cap

    @staticmethod
    def resumes_at(now: float) -> float:
        """When a cap reached at ``now`` stops holding: the next UTC midnight."""
        return (int(now // 86400) + 1) * 86400.0


class WakeDetector:
    """Notices that the process was frozen (VM sleep, SIGSTOP) between two passes.

    Either the wall clock moved far more (or far less: set back) than the monotonic
    clock (a suspended VM: CLOCK_MONOTONIC stops; a clock corrected by NTP or a restored
    VM), or the monotonic gap far exceeds the wait the loop asked for (a stopped
    process: both clocks run on). Either way connections and deadlines may be stale.
    """

    def __init__(
        self, jump_seconds: float, remember_seconds: float = DEFAULT_ORPHAN_SECONDS
    ) -> None:
        self.jump = jump_seconds
        self.remember = remember_seconds
        self._wall: float | None = None
        self._mono = 0.0
        self._expected = 0.0
        #: (monotonic time seen, wall seconds unexplained by the monotonic clock) per jump.
        self._jumps: list[tuple[float, float]] = []

    def expect_wait(self, seconds: float) -> None:
        """The loop is about to wait this long: not a sign of sleep."""
        self._expected = seconds

    def check(self, wall: float, mono: float) -> tuple[float, float] | None:
        """(wall gap, monotonic gap) if a wake happened since the last check, else None."""
        woke = None
        if self._wall is not None:
            wall_gap, mono_gap = wall - self._wall, mono - self._mono
            if abs(wall_gap - mono_gap) > self.jump or mono_gap - self._expected > self.jump * 5:
                woke = (wall_gap, mono_gap)
                if abs(wall_gap - mono_gap) > self.jump:
                    self._leapt(mono, wall_gap - mono_gap)
        self._wall, self._mono, self._expected = wall, mono, 0.0
        return woke

    def _leapt(self, mono: float, seconds: float) -> None:
        """Remember a forward leap; a step back cancels the latest forward leaps it undoes.

        A step back kept as an entry of its own outlived the leap it undid (each expires
        ``remember_seconds`` after it was seen), and then cancelled the credit of the next
        leap: found by the soak, +1 h, back 5 s later, +90 s 17 s after that: every turn
        open during the +90 s was closed as an orphan. A step back with no leap left to undo
        (an NTP correction) needs no credit: it makes turns look younger, not older.
        """
        if seconds > 0:
            self._jumps.append((mono, seconds))
            return
        back = -seconds
        while back > 0 and self._jumps:
            seen, leap = self._jumps.pop()
            if leap > back:
                self._jumps.append((seen, leap - back))
            back -= leap

    def suspended(self, mono: float) -> float:
        """Wall seconds the machine spent suspended (or its clock stepped forward) within
        the last ``remember_seconds`` of monotonic time, net of the steps back that undid them.

        Why: a VM frozen mid-turn freezes its agent too, so on the thaw the open turn looks
        hours quiet although its agent is about to carry on; the loop adds this to its
        orphan timeout (found by the soak: each forward jump closed every open turn, and
        their remaining tool calls became turns of their own)."""
        self._jumps = [(m, s) for m, s in self._jumps if mono - m <= self.remember]
        return sum(s for _, s in self._jumps)


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
        signal.pthread_sigmask(signal.SIG_BLOCK, HELD_ACROSS_EXEC)
        if stopping():  # a signal came just before the block: stop instead
            signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD_ACROSS_EXEC)
            return None
        before()
        try:
            os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])
        except OSError as exc:  # e.g. the venv is being replaced: carry on as we are
            signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD_ACROSS_EXEC)
            self.busy()
            return exc
        return None  # pragma: no cover - execv does not return
