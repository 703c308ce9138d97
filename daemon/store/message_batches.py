"""The economy lane's remote batches in transcript.db (``005_remote_batches.sql`` says why
there): what was sent to the Bridge as a Message Batch, what to poll, which turns a pending
request holds, and which turns go back to the prompt lane.

Each verb takes an open transcript.db connection (the store opens one per call). None of
this decides whether a turn is curated: the ledger in memory.db does (``commit_batch``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import apsw

from wsd import schema
from wsd.daemon.store.verbs import Facet, reads, uses

#: Request outcomes (see the migration).
APPLIED, COVERED, RELEASED = "applied", "covered", "released"


@dataclass(frozen=True)
class BatchRequest:
    """One curator request in a Message Batch, as recorded before the create call."""

    custom_id: str
    position: int
    turn_ids: tuple[int, ...]
    offered: tuple[int, ...]
    actions: tuple[int, ...]
    request_chars: int
    started_at: float
    charge_id: int | None = None
    #: Of ``request_chars``, those its cache breakpoint covers (0: none).
    cached_chars: int = 0


@dataclass(frozen=True)
class MessageBatch:
    """A Message Batch not settled yet."""

    id: int
    message_batch_id: str | None
    identity: str
    status: str
    created_at: float
    submitted_at: float | None
    polls: int
    next_poll_at: float | None
    fetches: int
    misses: int
    error: str | None
    base_json: str


_BATCH_COLS = (
    "id, message_batch_id, transcript_identity, status, created_at, submitted_at, polls,"
    " next_poll_at, fetches, misses, error, base_json"
)


def record(
    t: apsw.Connection, identity: str, base_json: str, requests: Sequence[BatchRequest], now: float
) -> int:
    """Record a batch about to be created (status ``submitting``) with its requests and the
    turns they hold; its row id."""
    with schema.write_txn(t):
        t.execute(
            "INSERT INTO message_batches (transcript_identity, status, created_at, base_json)"
            " VALUES (?, 'submitting', ?, ?)",
            (identity, now, base_json),
        )
        rid = int(t.last_insert_rowid())
        t.executemany(
            "INSERT INTO message_batch_requests (message_batch_row, custom_id, position, turn_ids,"
            " offered_json, actions_json, request_chars, started_at, charge_id, cached_chars)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    rid,
                    r.custom_id,
                    r.position,
                    json.dumps(list(r.turn_ids)),
                    json.dumps(list(r.offered)),
                    json.dumps(list(r.actions)),
                    r.request_chars,
                    r.started_at,
                    r.charge_id,
                    r.cached_chars,
                )
                for r in requests
            ],
        )
        t.executemany(
            "INSERT INTO in_flight_turns (observation_id, message_batch_row, custom_id)"
            " VALUES (?, ?, ?) ON CONFLICT (observation_id) DO UPDATE SET"
            " message_batch_row = excluded.message_batch_row, custom_id = excluded.custom_id",
            [(oid, rid, r.custom_id) for r in requests for oid in r.turn_ids],
        )
        t.execute(
            "DELETE FROM released_turns WHERE observation_id IN"
            " (SELECT observation_id FROM in_flight_turns WHERE message_batch_row = ?)",
            (rid,),
        )
    return rid


def submitted(
    t: apsw.Connection, rid: int, message_batch_id: str, now: float, next_poll: float
) -> None:
    """The Bridge accepted the batch as ``message_batch_id``: poll it from ``next_poll``."""
    with schema.write_txn(t):
        t.execute(
            "UPDATE message_batches SET message_batch_id = ?, status = 'in_flight',"
            " submitted_at = ?, next_poll_at = ? WHERE id = ?",
            (message_batch_id, now, next_poll, rid),
        )


def discard(t: apsw.Connection, rid: int) -> None:
    """Drop a batch whose create call never got an id (refused, or cut by a crash): its
    turns are free to be sent again."""
    with schema.write_txn(t):
        t.execute("DELETE FROM in_flight_turns WHERE message_batch_row = ?", (rid,))
        t.execute("DELETE FROM message_batch_requests WHERE message_batch_row = ?", (rid,))
        t.execute("DELETE FROM message_batches WHERE id = ?", (rid,))


def open_batches(t: apsw.Connection) -> list[MessageBatch]:
    """Every batch not settled, oldest first."""
    rows = schema.rows(
        t,
        f"SELECT {_BATCH_COLS} FROM message_batches WHERE status != 'settled' ORDER BY id",
    )
    return [MessageBatch(*r) for r in rows]


def pending_requests(t: apsw.Connection, rid: int) -> list[BatchRequest]:
    """The requests of batch ``rid`` without an outcome yet, in claim order."""
    rows = schema.rows(
        t,
        "SELECT custom_id, position, turn_ids, offered_json, actions_json, request_chars,"
        " started_at, charge_id, cached_chars FROM message_batch_requests"
        " WHERE message_batch_row = ? AND outcome IS NULL ORDER BY position",
        (rid,),
    )
    return [
        BatchRequest(
            str(cid),
            int(pos),
            _ids(turns),
            _ids(offered),
            _ids(acts),
            int(chars),
            float(started),
            None if charge is None else int(charge),
            int(cached),
        )
        for cid, pos, turns, offered, acts, chars, started, charge, cached in rows
    ]


def custom_ids(t: apsw.Connection, rid: int) -> set[str]:
    """Every request's custom id in batch ``rid``, with an outcome or not."""
    rows = schema.rows(
        t, "SELECT custom_id FROM message_batch_requests WHERE message_batch_row = ?", (rid,)
    )
    return {str(r[0]) for r in rows}


def polled(
    t: apsw.Connection,
    rid: int,
    *,
    next_poll: float,
    error: str | None = None,
    missing: bool = False,
    ended_at: float | None = None,
    fetched: bool = False,
) -> None:
    """One poll of batch ``rid`` done: when to look again, what went wrong (None: nothing),
    whether the Bridge said it has no such batch (counted in a row), when it ended, whether
    its results were read."""
    with schema.write_txn(t):
        t.execute(
            "UPDATE message_batches SET polls = polls + 1, next_poll_at = ?, error = ?,"
            " misses = CASE WHEN ? THEN misses + 1 ELSE 0 END,"
            " ended_at = coalesce(ended_at, ?), fetches = fetches + ? WHERE id = ?",
            (next_poll, error, int(missing), ended_at, int(fetched), rid),
        )


def settle_request(
    t: apsw.Connection, rid: int, custom_id: str, outcome: str, detail: str | None, now: float
) -> None:
    """Give request ``custom_id`` its outcome; its turns stop being held, and go to the
    prompt lane when it was ``released``. The batch is settled with its last request."""
    with schema.write_txn(t):
        settle_request_in(t, rid, custom_id, outcome, detail, now)


def settle_request_in(
    t: apsw.Connection, rid: int, custom_id: str, outcome: str, detail: str | None, now: float
) -> None:
    """:func:`settle_request` inside the caller's write transaction."""
    t.execute(
        "UPDATE message_batch_requests SET outcome = ?, detail = ?"
        " WHERE message_batch_row = ? AND custom_id = ? AND outcome IS NULL",
        (outcome, None if detail is None else detail[:500], rid, custom_id),
    )
    if outcome == RELEASED:
        # A request released unread (a forget while it was out, found by the soak) may still
        # be billed by the Bridge: its charge keeps its estimate, settled here in the same
        # transaction so no crash leaves it ``asked``. The lane's own releases settled it
        # already (``status = 'asked'`` makes this a no-op for them).
        t.execute(
            "UPDATE charges SET status = 'estimated', answered_at = ?,"
            " note = 'released unread: its estimate kept' WHERE status = 'asked' AND id ="
            " (SELECT charge_id FROM message_batch_requests"
            " WHERE message_batch_row = ? AND custom_id = ?)",
            (now, rid, custom_id),
        )
        t.execute(
            "INSERT INTO released_turns (observation_id, reason, at)"
            " SELECT observation_id, ?, ? FROM in_flight_turns"
            " WHERE message_batch_row = ? AND custom_id = ?"
            " ON CONFLICT (observation_id) DO UPDATE SET reason = excluded.reason",
            ((detail or "released")[:300], now, rid, custom_id),
        )
    t.execute(
        "DELETE FROM in_flight_turns WHERE message_batch_row = ? AND custom_id = ?",
        (rid, custom_id),
    )
    t.execute(
        "UPDATE message_batches SET status = 'settled', settled_at = ?, next_poll_at = NULL"
        " WHERE id = ? AND NOT EXISTS (SELECT 1 FROM message_batch_requests"
        " WHERE message_batch_row = ? AND outcome IS NULL)",
        (now, rid, rid),
    )


def to_purge(t: apsw.Connection) -> list[tuple[int, str]]:
    """Settled batches whose results must be deleted at the Bridge: (id, Message Batch id)."""
    return [
        (int(i), str(r))
        for i, r in schema.rows(
            t,
            "SELECT id, message_batch_id FROM message_batches WHERE purge = 1"
            " AND status = 'settled' AND message_batch_id IS NOT NULL ORDER BY id",
        )
    ]


def purged(t: apsw.Connection, rid: int) -> None:
    with schema.write_txn(t):
        t.execute("UPDATE message_batches SET purge = 2 WHERE id = ?", (rid,))


def released_pending(t: apsw.Connection) -> bool:
    """Whether a turn not curated yet was handed back to the prompt lane."""
    row = schema.first(
        t,
        "SELECT 1 FROM released_turns p JOIN observations o ON o.id = p.observation_id"
        " WHERE o.processed = 0",
    )
    return row is not None


def prune(t: apsw.Connection, before: float) -> int:
    """Delete settled batches that settled before ``before`` and prompt-lane marks of
    curated turns; how many batches went."""
    with schema.write_txn(t):
        # One whose results must still be deleted at the Bridge is kept until they are.
        t.execute(
            "DELETE FROM message_batch_requests WHERE message_batch_row IN (SELECT id FROM"
            " message_batches WHERE status = 'settled' AND settled_at < ? AND purge != 1)",
            (before,),
        )
        t.execute(
            "DELETE FROM message_batches WHERE status = 'settled' AND settled_at < ?"
            " AND purge != 1",
            (before,),
        )
        gone = t.changes()
        t.execute(
            "DELETE FROM released_turns WHERE observation_id IN"
            " (SELECT id FROM observations WHERE processed = 1)"
        )
    return gone


def summary(t: apsw.Connection) -> list[dict[str, object]]:
    """Open batches for ``wsd status`` and ``wsd doctor``: id, Message Batch id, status, created,
    requests and turns still pending, polls, last error."""
    rows = schema.rows(
        t,
        "SELECT b.id, b.message_batch_id, b.status, b.created_at, b.submitted_at, b.polls, b.error,"
        " (SELECT count(*) FROM message_batch_requests r WHERE r.message_batch_row = b.id"
        "  AND r.outcome IS NULL),"
        " (SELECT count(*) FROM in_flight_turns u WHERE u.message_batch_row = b.id)"
        " FROM message_batches b WHERE b.status != 'settled' ORDER BY b.id",
    )
    keys = (
        "id",
        "message_batch_id",
        "status",
        "created_at",
        "submitted_at",
        "polls",
        "error",
        "requests",
        "turns",
    )
    return [dict(zip(keys, r, strict=True)) for r in rows]


def _ids(raw: object) -> tuple[int, ...]:
    try:
        parsed = json.loads(str(raw))
    except ValueError:
        return ()
    if not isinstance(parsed, list):
        return ()
    return tuple(int(x) for x in parsed if type(x) is int)


class MessageBatches(Facet):
    """The economy lane's Message Batches at the Bridge (this module's verbs):
    all in transcript.db."""

    record = uses("transcript", record)
    submitted = uses("transcript", submitted)
    discard = uses("transcript", discard)
    open_batches = uses("transcript", open_batches)
    pending_requests = uses("transcript", pending_requests)
    custom_ids = reads("transcript", custom_ids)
    polled = uses("transcript", polled)
    settle_request = uses("transcript", settle_request)
    released_pending = reads("transcript", released_pending)
    to_purge = reads("transcript", to_purge)
    purged = uses("transcript", purged)
    prune = uses("transcript", prune)
    summary = reads("transcript", summary)
