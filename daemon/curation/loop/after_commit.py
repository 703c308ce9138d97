"""What follows each commit in the loop, and the parked batches: in an object of its own so
that ``wsd retry`` runs the parked batches again without a loop.

After a commit (:class:`~wsd.daemon.curation.commit.committed.Committed`) the md files it
updated are written, its turns marked processed, the day's spend put in the heartbeat and one
log line written; a batch parked for good is remembered until the next flush is answered (a
flush waiting on it did not curate it: ``wsd flush --wait`` must say so); a batch that went
through ends an outage (one "recovered" line)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wsd.daemon.curation.commit.committed import Committed
from wsd.daemon.curation.loop.gate import Gate
from wsd.daemon.curation.pipeline import Pipeline
from wsd.daemon.curation.request.batch import Batch
from wsd.daemon.curation.request.rendering import rendering_for
from wsd.daemon.memory.md.sync import MdSync
from wsd.daemon.runtime.heartbeat import StatusFile
from wsd.daemon.store import Store


@dataclass(eq=False)
class AfterCommit:
    """The follow-up of each commit, the parked batches and their retry; every dependency is
    handed in (:mod:`wsd.daemon.ops.wiring`)."""

    store: Store
    pipeline: Pipeline
    md: MdSync
    status: StatusFile
    log: Any
    #: The outage backoff a commit ends, and the day's spend it puts in the heartbeat.
    gate: Gate
    clock: Callable[[], float]
    #: What triggered the batch in hand (``threshold``, ``flush``, ``economy``...: its log line).
    reason: str = ""
    #: Batches parked since flushes were last answered: a flush waiting on them did not
    #: curate them (``wsd flush --wait`` said "flush done" for a parked turn).
    parked: list[tuple[int, str]] = field(default_factory=list)

    def committed(self, done: Committed) -> None:
        """What follows each commit: md files, markers, logs, heartbeat."""
        ids = [t.id for t in done.turns]
        if done.result is None:
            why = f"{len(ids)} turns already curated: {ids[:10]}"  # how many, not ten alone
            self.log.warning("batch_discarded", reason=why)
            self.store.turns.mark_processed(ids)
            return
        now = self.clock()
        if done.parked:
            self.parked.append((done.batch_id, done.record.error or "rejected"))
            self.store.turns.mark_processed(ids)
            self.gate.remember_spend(now)  # a rejected call may still be billed
            self.log.error(
                "batch_parked", batch_id=done.batch_id, turn=ids[0], error=done.record.error
            )
            self.status.update(
                last_batch={"id": done.batch_id, "turns": len(ids), "at": now, "outcome": "parked"}
            )
            return
        reply_problems(self.log, done)
        if done.result.files_updated:
            self.md.write(done.result.files_updated)
        self.store.turns.mark_processed(ids)
        self.gate.remember_spend(now)
        self.gate.recovered()
        batch(self.log, self.status, done, self.reason, now)

    def flush_error(self) -> str | None:
        """What a flush answered now could not do: md files not written, batches parked."""
        md_error = self.md.error()
        problems = [md_error] if md_error else []
        if self.parked:
            batch_id, error = self.parked[0]
            problems.append(
                f"{len(self.parked)} batch(es) parked, not curated (batch {batch_id}: "
                f"{error[:200]}); wsd status shows them, wsd retry runs them again"
            )
        return "; ".join(problems) or None

    def retry_parked(self) -> list[Committed]:
        """Re-run every parked batch (``wsd retry``) from the transcript.db there is now;
        what each retry committed (a batch the Bridge still rejects is parked again, in
        place of the old one)."""
        self.reason = "retry"
        self.pipeline.identity = self.store.transcript_identity()
        done: list[Committed] = []
        for batch_id, ids, _error, lane in self.store.ledger.failed_batches():
            turns = self.store.turns.turns_by_id(ids)
            if turns:  # rendered as its lane rendered it
                batch = Batch.of(turns, rendering_for(lane))
                done += self.pipeline.curate(batch, self.committed, [batch_id])
        return done


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
