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

    def record(self, key: str, exc: BaseException) -> None:
        self.status.count(errors=1)
        self.status.update(last_error=problem(exc), force=True)
        suppressed = self.throttle.failed(key, self.clock())
        if suppressed is not None:
            self.log.error(
                "pass_failed",
                error=problem(exc),
                suppressed=suppressed,
                exc_info=suppressed == 0,
            )
