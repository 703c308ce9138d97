"""A pass's failures: counted, kept as ``last_error`` in the heartbeat, logged with a stack
the first time, then rate-limited per key (house style 5)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wsd.daemon.curation.bridge.failure import problem
from wsd.daemon.runtime.heartbeat import StatusFile
from wsd.daemon.runtime.log import ErrorThrottle


class Failures:
    """A pass's failures (the loop's, the spool intake's): counted and kept as ``last_error``
    in the heartbeat, logged with a stack the first time, then rate-limited per key."""

    def __init__(self, status: StatusFile, log: Any, clock: Callable[[], float]) -> None:
        self.status = status
        self.log = log
        self.clock = clock
        #: Shared with the Bridge's outage and recovery lines (one "recovered" per outage).
        self.throttle = ErrorThrottle()
        self._said: str | None = None

    def record(self, key: str, exc: BaseException) -> None:
        self.status.count(errors=1)
        self._said = problem(exc)
        self.status.update(last_error=self._said, force=True)
        suppressed = self.throttle.failed(key, self.clock())
        if suppressed is not None:
            self.log.error(
                "pass_failed",
                error=problem(exc),
                suppressed=suppressed,
                exc_info=suppressed == 0,
            )

    def passed(self, key: str) -> None:
        """``key`` worked again: one "recovered" line after its failures, and their error
        leaves the heartbeat (it said a full disk's error after space was freed)."""
        failures = self.throttle.recovered(key)
        if failures is not None:
            self.log.info(f"{key}_recovered", failures=failures)
            if self.status.data.get("last_error") == self._said:  # not the Bridge's since
                self.status.update(last_error=None, force=True)
