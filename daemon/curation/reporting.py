"""The loop's log lines and heartbeat fields for what a batch did (one summary line per
batch, SPEC.md section 5), kept apart from the loop's decisions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wsd.daemon.curation.bridge import Outage
from wsd.daemon.curation.health import Budget
from wsd.daemon.curation.pipeline import Committed
from wsd.daemon.curation.problems import problem
from wsd.daemon.runtime.heartbeat import StatusFile
from wsd.daemon.runtime.log import ErrorThrottle


def batch(log: Any, status: StatusFile, done: Committed, reason: str, now: float) -> None:
    """The summary line of one committed batch, and the heartbeat's counters."""
    result, record, turns = done.result, done.record, done.turns
    assert result is not None
    log.info(
        "batch",
        batch_id=result.batch_id,
        reason=reason,
        turns=len(turns),
        first_turn=turns[0].id,
        last_turn=turns[-1].id,
        learnings=result.learnings_added,
        learnings_repeated=result.learnings_repeated,
        superseded=result.superseded,
        actions=result.actions_added,
        actions_closed=result.actions_closed,
        files_updated=list(result.files_updated),
        refused=len(record.refused),
        ungrounded=record.ungrounded,
        input_tokens=record.input_tokens,
        output_tokens=record.output_tokens,
        cached_tokens=record.cache_read_tokens,
        cost_usd=round(record.cost_usd, 6),
        latency_ms=round(record.latency_ms, 1),
        attempts=record.attempts,
        stop_reason=record.stop_reason,
    )
    status.count(batches=1, turns=len(turns), learnings=result.learnings_added)
    status.update(
        last_batch={"id": result.batch_id, "turns": len(turns), "at": now, "outcome": "done"}
    )


def reply_problems(log: Any, done: Committed) -> None:
    """What of the reply was not understood, and what the guards refused: counted, never
    quoted. A reply's lines and the refusals (which quote what they refused) hold the
    person's words and the curator's; the log is the operator's, the ledger row the person's
    (``wsd memory history``, the batch's ``refused``)."""
    parsed = done.parsed
    if parsed is not None and parsed.unknown_lines:
        log.warning("reply_lines_ignored", batch_id=done.batch_id, count=len(parsed.unknown_lines))
    if done.record.refused:
        log.warning("reply_refused", batch_id=done.batch_id, count=len(done.record.refused))


def budget(log: Any, status: StatusFile, cap: Budget, exhausted: bool, now: float) -> None:
    """One line when the daily cap is reached, one when curation resumes; the heartbeat
    says so meanwhile (``wsd status``; its state is the pass's, ``budget``)."""
    day = int(now // 86400)
    if exhausted and cap.reached_on != day:
        cap.reached_on = day
        resumes = cap.resumes_at(now)
        log.warning(
            "budget_reached", spent_usd=round(cap.spent, 6), cap_usd=cap.cap, resumes_at=resumes
        )
        status.update(
            budget={"spent_usd": round(cap.spent, 6), "cap_usd": cap.cap, "resumes_at": resumes}
        )
    elif not exhausted and cap.reached_on is not None:
        cap.reached_on = None
        log.info("budget_resumed", spent_usd=round(cap.spent, 6), cap_usd=cap.cap)
        status.update(budget=None)


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
