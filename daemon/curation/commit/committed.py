"""Committing a judged batch: its ledger record (:func:`record`), the one transaction that
commits it (:func:`commit`, the exactly-once point: turns another commit covered meanwhile
are refused, and nothing is written), and what was committed (:class:`Committed`), handed
to ``on_commit``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from wsd.daemon.curation.bridge.answer import Reply
from wsd.daemon.curation.bridge.spend import price
from wsd.daemon.curation.judging import Judged, erosion
from wsd.daemon.curation.judging.reply import ParsedReply
from wsd.daemon.runtime.config import Config
from wsd.daemon.store import AlreadyCovered, BatchRecord, CommitResult, Lane, Store, Turn


@dataclass(frozen=True)
class Committed:
    """One commit of the pipeline: a curated batch, or a parked one (``parsed`` is None)."""

    turns: Sequence[Turn]
    record: BatchRecord
    #: None when the turns were covered by another commit meanwhile (nothing was written).
    result: CommitResult | None
    parsed: ParsedReply | None = None
    reply: Reply | None = None

    @property
    def batch_id(self) -> int:
        return 0 if self.result is None else self.result.batch_id

    @property
    def parked(self) -> bool:
        return self.record.status == "failed"


OnCommit = Callable[["Committed"], None]
"""What is called with each commit as it is made (the loop's bookkeeping, a rebuild's count)."""


def record(
    turns: Sequence[Turn],
    judged: Judged,
    reply: Reply,
    started: float,
    config: Config,
    message_batch: tuple[str, str] | None = None,
) -> BatchRecord:
    """The ledger record of a judged reply to a request started at ``started``: what may be
    committed, every refusal, the call's usage and price (half for an economy-lane result:
    ``message_batch`` is its Message Batch id and custom id)."""
    checked = judged.checked
    cost = price(
        config,
        reply.input_tokens,
        reply.output_tokens,
        reply.cache_read_tokens,
        reply.cache_write_tokens,
    )
    return BatchRecord(
        turns=turns,
        learnings=checked.learnings,
        actions=checked.actions,
        closed_actions=checked.closed_actions,
        md_updates=checked.md_updates,
        forgets=list(judged.forgets),
        refused=judged.refused,
        ungrounded=judged.grounded.ungrounded,
        refusal_kinds=judged.refusal_kinds,
        model=reply.model,
        stop_reason=reply.stop_reason,
        attempts=reply.attempts,
        input_tokens=reply.input_tokens,
        output_tokens=reply.output_tokens,
        cache_read_tokens=reply.cache_read_tokens,
        cache_write_tokens=reply.cache_write_tokens,
        cost_usd=cost if message_batch is None else cost * config.economy_price_factor,
        latency_ms=reply.latency_ms,
        started_at=started,
        state=dict(erosion.state_row(e, started) for e in judged.eroding),
        lane=Lane.PROMPT if message_batch is None else Lane.ECONOMY,
        message_batch_id=None if message_batch is None else message_batch[0],
        custom_id=None if message_batch is None else message_batch[1],
    )


def commit(
    store: Store,
    identity: str,
    made: BatchRecord,
    finished: float,
    on_commit: OnCommit,
    replaces: Sequence[int] = (),
    judged: Judged | None = None,
    reply: Reply | None = None,
) -> Committed:
    """Commit ``made`` (its rows dated ``finished``) in one memory.db transaction, in place
    of the parked batches ``replaces`` names (``wsd retry``); hand what was committed to
    ``on_commit``. Turns another commit covered meanwhile commit nothing (``result`` None)."""
    try:
        result: CommitResult | None = store.ledger.commit_batch(
            identity, made, finished, replaces=replaces
        )
    except AlreadyCovered:
        result = None
    parsed = judged.parsed if judged is not None else None
    done = Committed(made.turns, made, result, parsed, reply)
    on_commit(done)
    return done
