"""Whether the loop may call the curator now: not while the Bridge's outage backoff runs,
not once the day's spend reached the cap; and the lines and heartbeat fields that say so,
once when it closes and once when it opens again."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from wsd.daemon.curation.bridge import outage, spend
from wsd.daemon.curation.bridge.client import Outage
from wsd.daemon.curation.bridge.outage import Backoff
from wsd.daemon.curation.bridge.spend import Budget
from wsd.daemon.runtime.heartbeat import StatusFile
from wsd.daemon.runtime.log import ErrorThrottle


@dataclass(eq=False)
class Gate:
    """The outage backoff and the daily cap, shared by the loop (which asks before a call)
    and the commit follow-up (a call that went through ends the outage; the day's spend goes
    to the heartbeat)."""

    backoff: Backoff
    budget: Budget
    status: StatusFile
    log: Any
    #: Shared with the pass's failures (one "recovered" line per outage).
    throttle: ErrorThrottle
    clock: Callable[[], float]

    def load(self, now: float, heartbeat: Mapping[str, Any]) -> None:
        """Start-up: the backoff kept in memory.db, and what the previous process's last
        heartbeat said of the day's spend (it never goes down) and of the cap."""
        self.backoff.load(now)
        self.budget.remember(heartbeat.get("spent_today"), heartbeat.get("budget"))

    def backing_off(self) -> bool:
        """True until the outage backoff's deadline has passed."""
        return self.backoff.waiting()

    def over_budget(self, now: float) -> bool:
        """True while today's curator spend has reached the cap (said once each way)."""
        exhausted = self.budget.exhausted(now)
        spend.budget(self.log, self.status, self.budget, exhausted, now)
        return exhausted

    def failed(self, exc: Outage, now: float) -> None:
        """The Bridge failed past the retries: back off (at least its retry-after)."""
        delay = self.backoff.enter(now, exc.retry_after)
        outage.outage(self.log, self.status, self.throttle, exc, delay, now)

    def recovered(self) -> None:
        """A call went through: end the outage, if there was one (one "recovered" line)."""
        if outage.recovered(self.log, self.status, self.throttle, self.backoff.active):
            self.backoff.clear(self.clock())

    def woke(self, now: float) -> None:
        """The VM woke: connections and deadlines may be stale, so a backoff ends now."""
        if self.backoff.active:
            self.backoff.clear(now)

    def remember_spend(self, now: float) -> None:
        """The day's spend into the heartbeat, where a restore from a backup cannot lower it."""
        spent = self.budget.spent_today(now)
        self.status.update(spent_today={"day": int(now // 86400), "usd": spent})
