"""After the Bridge failed: when the next curator call may be made (:class:`Backoff`,
doubling, kept across restarts), and the lines that say so once per outage and once when it
recovers."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from wsd.daemon.curation.bridge.client import Outage
from wsd.daemon.runtime.heartbeat import StatusFile
from wsd.daemon.runtime.log import ErrorThrottle
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


def outage(
    log: Any, status: StatusFile, throttle: ErrorThrottle, exc: Outage, delay: float, now: float
) -> None:
    """The Bridge failed past the retries: the heartbeat says when the next attempt is; the
    log says so once per outage (then rate-limited)."""
    status.count(bridge_errors=1)
    status.update(
        next_attempt_at=now + delay,
        last_error=str(exc)[:300],
        outage_since=status.data.get("outage_since") or now,  # how long: wsd doctor judges it
        force=True,
    )
    suppressed = throttle.failed("bridge", now)
    if suppressed is not None:
        log.error(
            "bridge_unavailable",
            error=str(exc),
            attempts=exc.attempts,
            retry_in=round(delay, 1),
            suppressed=suppressed,
        )


def recovered(log: Any, status: StatusFile, throttle: ErrorThrottle, backing_off: bool) -> bool:
    """A batch went through: one "recovered" line after failures (or a backoff kept across a
    restart), and the heartbeat stops showing the outage (``wsd status`` showed the old error
    and a past next attempt). Whether the backoff is to be cleared."""
    failures = throttle.recovered("bridge")
    if failures is not None or backing_off:
        log.info("bridge_recovered", failures=failures or 0)
    if status.data.get("next_attempt_at") or status.data.get("last_error"):
        status.update(next_attempt_at=None, last_error=None, outage_since=None, force=True)
    return failures is not None or backing_off
