"""Noticing that the process was frozen (VM sleep, SIGSTOP) between two passes, and how
much wall time the freeze took (the orphan timeout does not count it)."""

from __future__ import annotations

import time
from collections.abc import Callable

from wsd.daemon.runtime.config import DEFAULT_ORPHAN_SECONDS


class WakeDetector:
    """Notices that the process was frozen (VM sleep, SIGSTOP) between two passes.

    Either the wall clock moved far more (or far less: set back) than the monotonic
    clock (a suspended VM: CLOCK_MONOTONIC stops; a clock corrected by NTP or a restored
    VM), or the monotonic gap far exceeds the wait the loop asked for (a stopped
    process: both clocks run on). Either way connections and deadlines may be stale.
    """

    def __init__(
        self,
        jump_seconds: float,
        remember_seconds: float = DEFAULT_ORPHAN_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.monotonic = monotonic
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

    def check(self, wall: float) -> tuple[float, float] | None:
        """(wall gap, monotonic gap) if a wake happened since the last check (the wall clock
        read ``wall``), else None."""
        mono = self.monotonic()
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

    def suspended(self) -> float:
        """Wall seconds the machine spent suspended (or its clock stepped forward) within
        the last ``remember_seconds`` of monotonic time, net of the steps back that undid them.

        Why: a VM frozen mid-turn freezes its agent too, so on the thaw the open turn looks
        hours quiet although its agent is about to carry on; the loop adds this to its
        orphan timeout (found by the soak: each forward jump closed every open turn, and
        their remaining tool calls became turns of their own)."""
        mono = self.monotonic()
        self._jumps = [(m, s) for m, s in self._jumps if mono - m <= self.remember]
        return sum(s for _, s in self._jumps)
