"""The transcript side of the loop: turns waiting to be curated, claiming them, and the
``processed`` markers (a cache of the ledger, see :func:`rederive_processed`).

Each verb takes an open transcript.db connection (the :class:`Turns` facet at the end,
``store.turns``, opens one per call).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import apsw

from wsd import schema
from wsd.daemon.store.flushes import WAITS_ON_TURNS
from wsd.daemon.store.records import Backlog, Take, Turn, Uncurated
from wsd.daemon.store.verbs import Facet, reads, uses
from wsd.schema.transcript import Event, close_stale_turns, record

#: A turn still settling: it holds a spooled event and its newest event is newer than ?n.
_SETTLING = (
    "(EXISTS (SELECT 1 FROM events e WHERE e.observation_id = o.id AND e.via = 'spool')"
    " AND (SELECT max(ts) FROM events e WHERE e.observation_id = o.id) >= ?{n})"
)
_TURN_COLS = (
    "id, session_id, sequence_num, timestamp, user_message, tool_calls_json, agent_response,"
    " closed_by, amends, origin_machine, origin_key"
)


def backlog(t: apsw.Connection) -> Backlog:
    """What is waiting to be curated."""
    # The oldest pending turn by id uses the partial index on pending
    # turns; min(timestamp) would read every pending row.
    (pending,) = schema.one(t, "SELECT count(*) FROM observations WHERE processed = 0")
    first = schema.first(
        t, "SELECT timestamp FROM observations WHERE processed = 0 ORDER BY id LIMIT 1"
    )
    oldest = first[0] if first else None
    (last_activity,) = schema.one(t, "SELECT max(last_event_at) FROM sessions")
    (flush_upto,) = schema.one(t, "SELECT max(id) FROM flush_requests WHERE handled_at IS NULL")
    (last_turn,) = schema.one(t, "SELECT coalesce(max(id), 0) FROM observations")
    identity = schema.identity(t)
    (in_flight,) = schema.one(
        t,
        "SELECT count(*) FROM in_flight_turns r JOIN observations o ON o.id = r.observation_id"
        " WHERE o.processed = 0",
    )
    # A flush wants the turns pending when it was asked for, no more: the turns closed after
    # it go by the usual triggers and lanes (found by the soak: one `wsd flush` held open until
    # the backlog was empty sent every later turn through the prompt lane, at twice the price).
    urgent = waiting = None
    answerable = 0
    if flush_upto is not None:  # nothing to read on the idle path
        urgent, waiting, answerable = schema.one(
            t,
            "SELECT max(CASE WHEN waits AND reason IN ('precompact', 'cli') THEN id END),"
            " max(CASE WHEN waits THEN id END), count(*) - total(waits)"
            f" FROM (SELECT f.id, f.reason, {WAITS_ON_TURNS} AS waits"
            " FROM flush_requests f WHERE f.handled_at IS NULL)",
        )
    return Backlog(
        int(pending),
        oldest,
        last_activity,
        flush_upto,
        identity,
        int(last_turn),
        in_flight=int(in_flight),
        urgent_flush=urgent,
        waiting_flush=waiting,
        answerable_flushes=int(answerable),
    )


def uncurated(t: apsw.Connection, limit: int, chars: int) -> Uncurated:
    """How many turns are not yet curated, since when, and the person's words (their first
    ``chars`` characters) in the newest ``limit`` of them that have any, newest first.

    Read in one snapshot, and cheap on any backlog: every statement walks the partial index
    on pending turns (the count reads nothing else; the words are read for at most ``limit``
    rows, plus the tool-only turns met on the way). Turns an economy request in flight holds
    (``in_flight_turns``), or a batch has claimed, count like any other: until their result has
    landed (``processed = 1``) they are not memory yet.
    """
    with t:  # a savepoint: one read snapshot for the three reads (writes nothing)
        (total,) = schema.one(t, "SELECT count(*) FROM observations WHERE processed = 0")
        first = schema.first(
            t, "SELECT timestamp FROM observations WHERE processed = 0 ORDER BY id LIMIT 1"
        )
        rows = schema.rows(
            t,
            "SELECT timestamp, substr(user_message, 1, ?2) FROM observations"
            " WHERE processed = 0 AND length(trim(user_message)) > 0 ORDER BY id DESC LIMIT ?1",
            (limit, chars),
        )
    return Uncurated(
        int(total),
        None if first is None else float(first[0]),
        [(float(ts), str(words)) for ts, words in rows],
    )


#: Turns in flight (a pending request of a Message Batch carries them), and turns released
#: (handed back to the prompt lane).
_NOT_IN_FLIGHT = "o.id NOT IN (SELECT observation_id FROM in_flight_turns)"
_NOT_RELEASED = "o.id NOT IN (SELECT observation_id FROM released_turns)"


#: What each take leaves out of the pending turns.
_TAKE_WHERE = {
    Take.URGENT: "",
    Take.FREE: f" AND {_NOT_IN_FLIGHT}",
    Take.NEW: f" AND {_NOT_IN_FLIGHT} AND {_NOT_RELEASED}",
    Take.RELEASED: f" AND {_NOT_IN_FLIGHT} AND NOT {_NOT_RELEASED}",
}


def next_turns(
    t: apsw.Connection,
    limit: int,
    settled_before: float,
    take: Take = Take.URGENT,
    after: int = 0,
) -> tuple[list[Turn], bool]:
    """The oldest ``limit`` unprocessed turns in id order, in one read, and whether any
    of them is still settling (holds a spooled event newer than ``settled_before``: the
    rest of a burst spooled with it may still be on its way). ``take``: ``URGENT`` reads
    every pending turn (a flush takes those in flight too: the later result is then
    discarded as covered); ``NEW`` leaves out the turns in flight and those released to the
    prompt lane; ``FREE`` leaves out only those in flight; ``RELEASED`` reads only those
    released (the prompt lane takes them, the economy lane
    the rest: found by the soak, stale marks sent a whole re-pended backlog direct).
    ``after``: only turns with a greater id (the next page of a backlog)."""
    where = _TAKE_WHERE[take]
    rows = schema.rows(
        t,
        f"SELECT {_TURN_COLS}, {_SETTLING.format(n=2)} FROM observations o"
        f" WHERE processed = 0 AND o.id > ?3{where} ORDER BY id LIMIT ?1",
        (limit, settled_before, after),
    )
    return [_turn(r[:-1]) for r in rows], any(r[-1] for r in rows)


def claim_turns(t: apsw.Connection, ids: Sequence[int], now: float) -> list[Turn]:
    """Mark these turns as taken into a batch and read them, in one transaction: from
    now on a late event never folds into them (it becomes an addendum), so what the
    curator is sent is what gets curated."""
    with schema.write_txn(t):
        _mark_claimed(t, ids, now)
        return turns_by_id(t, ids)


def _mark_claimed(t: apsw.Connection, ids: Sequence[int], now: float) -> None:
    t.execute(
        "UPDATE observations SET claimed_at = ? WHERE claimed_at IS NULL"
        " AND id IN (SELECT value FROM json_each(?))",
        (now, json.dumps(list(ids))),
    )


def claim_unchanged(t: apsw.Connection, read: Sequence[Turn], now: float) -> list[Turn] | None:
    """:func:`claim_turns` for turns already ``read``: None when they read the same in the
    claiming transaction, else them as they are now (fewer when some went). Compared a row
    at a time: a Message Batch's turns read twice over held ~8 MB more at the daemon's
    peak (issue 45)."""
    ids = [turn.id for turn in read]
    with schema.write_txn(t):
        _mark_claimed(t, ids, now)
        now_read = t.execute(
            f"SELECT {_TURN_COLS} FROM observations"
            " WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id",
            (json.dumps(ids),),
        )
        # The ids are given: no row comes that was not read, and a missing one is a change.
        same = sum(1 for row, was in zip(now_read, read, strict=False) if _turn(row) == was)
        if same == len(read):
            return None
        return turns_by_id(t, ids)


def turns_by_id(t: apsw.Connection, ids: Sequence[int]) -> list[Turn]:
    rows = schema.rows(
        t,
        f"SELECT {_TURN_COLS} FROM observations"
        " WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id",
        (json.dumps(list(ids)),),
    )
    return [_turn(r) for r in rows]


def turn_ids(t: apsw.Connection, settled_before: float | None = None) -> list[int]:
    """Every turn's id, oldest first (``wsd rebuild`` re-curates them all); with
    ``settled_before``, a turn not curated yet that holds a spooled event newer than that
    is left out (as :func:`next_turns` tells the loop: the daemon curates it once settled)."""
    settling = f"processed = 0 AND {_SETTLING.format(n=1)}"
    unsettled = "" if settled_before is None else f" WHERE NOT ({settling})"
    args = () if settled_before is None else (settled_before,)
    rows = schema.rows(t, f"SELECT id FROM observations o{unsettled} ORDER BY id", args)
    return [int(r[0]) for r in rows]


def mark_processed(t: apsw.Connection, ids: Sequence[int]) -> None:
    with schema.write_txn(t):
        t.execute(
            "UPDATE observations SET processed = 1 WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(ids)),),
        )


def rederive_processed(t: apsw.Connection, memory_db: str, identity: str) -> tuple[int, int]:
    """Make the ``processed`` markers agree with the ledger in ``memory_db``; returns (set,
    cleared).

    Run at start-up: a crash between the memory.db commit and the marker
    update leaves covered turns unmarked; a deleted memory.db leaves marked
    turns that nothing covers any more (they are curated again).
    """
    t.execute("ATTACH DATABASE ? AS mem", (memory_db,))
    try:
        with schema.write_txn(t):
            covered = "SELECT observation_id FROM mem.batch_turns WHERE transcript_identity = ?"
            t.execute(
                f"UPDATE observations SET processed = 1 WHERE processed = 0 AND id IN ({covered})",
                (identity,),
            )
            marked = t.changes()
            t.execute(
                "UPDATE observations SET processed = 0"
                f" WHERE processed = 1 AND id NOT IN ({covered})",
                (identity,),
            )
            cleared = t.changes()
    finally:
        t.execute("DETACH DATABASE mem")
    return marked, cleared


def take_probe(t: apsw.Connection, session_id: str) -> int:
    """Remove the probe session ``wsd doctor`` had a hook write (its events and its row);
    how many events it had (0: the probe never reached transcript.db)."""
    with schema.write_txn(t):
        (count,) = schema.one(t, "SELECT count(*) FROM events WHERE session_id = ?", (session_id,))
        t.execute("DELETE FROM events WHERE session_id = ?", (session_id,))
        t.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
    return int(count or 0)


def _turn(row: tuple[Any, ...]) -> Turn:
    oid, session, seq, ts, user, calls, response, closed_by, amends, machine, key = row
    try:
        parsed = json.loads(calls) if calls else []
    except ValueError:
        parsed = []
    return Turn(
        int(oid),
        str(session),
        int(seq),
        float(ts),
        user,
        parsed if isinstance(parsed, list) else [],
        response,
        str(closed_by),
        None if amends is None else int(amends),
        # Only home's ingested rows have a machine (a satellite's own sealed turns have a key).
        None if machine is None or key is None else (str(machine), str(key)),
    )


class Turns(Facet):
    """The loop's turns in transcript.db: what waits, claiming it, the ``processed`` markers
    (``store.turns``; the markers' re-derivation from the ledger spans both databases and is
    :meth:`~wsd.daemon.store.store.Store.rederive_processed`)."""

    def record_event(
        self, event: Event, via: str = "spool", refolded: list[int] | None = None
    ) -> bool:
        """Record one (spooled) event; the turns it folded again are appended to ``refolded``."""
        with self._db.transcript() as t:
            return record(t, event, via=via, refolded=refolded)

    close_stale_turns = uses("transcript", close_stale_turns)

    backlog = uses("transcript", backlog)
    uncurated = reads("transcript", uncurated)

    def pending_turns(self, limit: int) -> list[Turn]:
        """The oldest unprocessed turns, in id order."""
        return self.next_turns(limit, float("inf"))[0]

    next_turns = uses("transcript", next_turns)
    claim_turns = uses("transcript", claim_turns)
    claim_unchanged = uses("transcript", claim_unchanged)
    turns_by_id = uses("transcript", turns_by_id)
    turn_ids = uses("transcript", turn_ids)
    mark_processed = uses("transcript", mark_processed)
    take_probe = uses("transcript", take_probe)
