"""The loop's SQL verbs: turns and the backlog, the batch ledger, state, md revisions.

The exactly-once rule lives in :meth:`Store.commit_batch`: a batch commits only
if none of its turns is already covered by the ledger, and the transcript's
``processed`` markers are a cache re-derived from that ledger.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import apsw

from wsd import schema
from wsd.daemon.store import actions
from wsd.daemon.store.base import Databases
from wsd.daemon.store.charges import Charges
from wsd.daemon.store.flushes import Flushes
from wsd.daemon.store.records import (
    AlreadyCovered,
    Backlog,
    BatchRecord,
    CommitResult,
    Turn,
    content_key,
    learning_key,
    sha256,
)
from wsd.daemon.store.revisions import Revisions
from wsd.schema.transcript import Event, close_stale_turns, record


class Store(Charges, Flushes, Revisions, Databases):
    """Both databases of one workspace: turns, the ledger, charges, state, revisions, actions."""

    def migrate(self) -> dict[schema.Kind, tuple[int, int]]:
        """Create/upgrade both databases; (version before, after) of each. Raises
        schema.SchemaError on a database newer than this code."""
        self.layout.ensure_system_dirs()
        with self._transcript() as t:
            transcript = schema.migrate(t, "transcript", self.layout.transcript_db)
        with self._memory() as m:
            memory = schema.migrate(m, "memory", self.layout.memory_db)
        return {"transcript": transcript, "memory": memory}

    # -- transcript side -----------------------------------------------------

    def transcript_identity(self) -> str:
        with self._transcript() as t:
            return schema.identity(t)

    def record_event(
        self, event: Event, via: str = "spool", refolded: list[int] | None = None
    ) -> bool:
        """Record one (spooled) event; the turns it folded again are appended to ``refolded``."""
        with self._transcript() as t:
            return record(t, event, via=via, refolded=refolded)

    def close_stale_turns(self, quiet_before: float) -> list[int]:
        with self._transcript() as t:
            return close_stale_turns(t, quiet_before)

    def backlog(self) -> Backlog:
        with self._transcript() as t:
            # The oldest pending turn by id uses the partial index on pending
            # turns; min(timestamp) would read every pending row.
            (pending,) = schema.one(t, "SELECT count(*) FROM observations WHERE processed = 0")
            first = schema.first(
                t, "SELECT timestamp FROM observations WHERE processed = 0 ORDER BY id LIMIT 1"
            )
            oldest = first[0] if first else None
            (last_activity,) = schema.one(t, "SELECT max(last_event_at) FROM sessions")
            (flush_upto,) = schema.one(
                t, "SELECT max(id) FROM flush_requests WHERE handled_at IS NULL"
            )
            (last_turn,) = schema.one(t, "SELECT coalesce(max(id), 0) FROM observations")
            identity = schema.identity(t)
        return Backlog(int(pending), oldest, last_activity, flush_upto, identity, int(last_turn))

    def pending_turns(self, limit: int, settled_before: float | None = None) -> list[Turn]:
        """The oldest unprocessed turns, in id order; with ``settled_before``, a turn holding
        a spooled event is left out until its newest event is older than that: the rest of
        a burst spooled with it is then in (ingested and placed), not on its way."""
        unsettled = "" if settled_before is None else f" AND NOT {_SETTLING.format(n=2)}"
        with self._transcript() as t:
            rows = schema.rows(
                t,
                f"SELECT {_TURN_COLS} FROM observations o WHERE processed = 0{unsettled}"
                " ORDER BY id LIMIT ?1",
                (limit,) if settled_before is None else (limit, settled_before),
            )
        return [_turn(r) for r in rows]

    def claim_turns(self, ids: Sequence[int], now: float) -> list[Turn]:
        """Mark these turns as taken into a batch and read them, in one transaction: from
        now on a late event never folds into them (it becomes an addendum), so what the
        curator is sent is what gets curated."""
        with self._transcript() as t, schema.write_txn(t):
            t.execute(
                "UPDATE observations SET claimed_at = ? WHERE claimed_at IS NULL"
                " AND id IN (SELECT value FROM json_each(?))",
                (now, json.dumps(list(ids))),
            )
            rows = schema.rows(
                t,
                f"SELECT {_TURN_COLS} FROM observations"
                " WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id",
                (json.dumps(list(ids)),),
            )
        return [_turn(r) for r in rows]

    def turns_by_id(self, ids: Sequence[int]) -> list[Turn]:
        with self._transcript() as t:
            rows = schema.rows(
                t,
                f"SELECT {_TURN_COLS} FROM observations"
                " WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id",
                (json.dumps(list(ids)),),
            )
        return [_turn(r) for r in rows]

    def turn_ids(self, settled_before: float | None = None) -> list[int]:
        """Every turn's id, oldest first (``wsd rebuild`` re-curates them all); with
        ``settled_before``, a turn not curated yet that holds a spooled event newer than that
        is left out (as :meth:`pending_turns` does: the daemon curates it once settled)."""
        settling = f"processed = 0 AND {_SETTLING.format(n=1)}"
        unsettled = "" if settled_before is None else f" WHERE NOT ({settling})"
        args = () if settled_before is None else (settled_before,)
        with self._transcript() as t:
            rows = schema.rows(t, f"SELECT id FROM observations o{unsettled} ORDER BY id", args)
        return [int(r[0]) for r in rows]

    def mark_processed(self, ids: Sequence[int]) -> None:
        with self._transcript() as t, schema.write_txn(t):
            t.execute(
                "UPDATE observations SET processed = 1"
                " WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps(list(ids)),),
            )

    def rederive_processed(self, identity: str) -> tuple[int, int]:
        """Make the ``processed`` markers agree with the ledger; returns (set, cleared).

        Run at start-up: a crash between the memory.db commit and the marker
        update leaves covered turns unmarked; a deleted memory.db leaves marked
        turns that nothing covers any more (they are curated again).
        """
        with self._transcript() as t:
            t.execute("ATTACH DATABASE ? AS mem", (self.layout.memory_db,))
            try:
                with schema.write_txn(t):
                    covered = (
                        "SELECT observation_id FROM mem.batch_turns WHERE transcript_identity = ?"
                    )
                    t.execute(
                        "UPDATE observations SET processed = 1"
                        f" WHERE processed = 0 AND id IN ({covered})",
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

    # -- memory side ---------------------------------------------------------

    def get_state(self, key: str) -> str | None:
        with self._memory() as m:
            row = schema.first(m, "SELECT value FROM state WHERE key = ?", (key,))
        return None if row is None else str(row[0])

    def set_state(self, values: dict[str, str | None], now: float) -> None:
        """Set (or, for None, delete) state keys in one transaction."""
        with self._memory() as m, schema.write_txn(m):
            for key, value in values.items():
                if value is None:
                    m.execute("DELETE FROM state WHERE key = ?", (key,))
                else:
                    _set_state(m, key, value, now)

    def covered(self, identity: str, ids: Sequence[int]) -> set[int]:
        with self._memory() as m:
            rows = schema.rows(
                m,
                "SELECT observation_id FROM batch_turns WHERE transcript_identity = ?"
                " AND observation_id IN (SELECT value FROM json_each(?))",
                (identity, json.dumps(list(ids))),
            )
        return {int(r[0]) for r in rows}

    # -- pending actions -------------------------------------------------------------

    def open_actions(self, limit: int = 50) -> list[tuple[int, int, str]]:
        """Open pending actions as (id, priority, content), most urgent first."""
        with self._memory() as m:
            return actions.open_list(m, limit)

    def list_actions(self, include_closed: bool = False) -> list[dict[str, Any]]:
        """Pending actions, most urgent first (with ``include_closed``, closed ones after)."""
        with self._memory() as m:
            return actions.listing(m, include_closed)

    def set_action_status(self, action_id: int, status: str, now: float) -> bool:
        """Close an open action as ``completed`` or ``dismissed``; False if none was open."""
        with self._memory() as m, schema.write_txn(m):
            return actions.set_status(m, action_id, status, now)

    def commit_batch(
        self, identity: str, batch: BatchRecord, now: float, replaces: Sequence[int] = ()
    ) -> CommitResult:
        """Commit one batch and all it produced atomically (the exactly-once point).

        Raises AlreadyCovered if any turn is covered by a batch other than the
        parked ones listed in ``replaces`` (a ``wsd retry``).
        """
        ids = [t.id for t in batch.turns]
        with self._memory() as m, schema.write_txn(m):
            rows = schema.rows(
                m,
                "SELECT observation_id, batch_id FROM batch_turns WHERE transcript_identity = ?"
                " AND observation_id IN (SELECT value FROM json_each(?))",
                (identity, json.dumps(ids)),
            )
            clash = [oid for oid, bid in rows if bid not in replaces]
            if clash:
                raise AlreadyCovered(f"turns already curated: {clash[:10]}")
            batch_id = _insert_batch(m, identity, batch, now)
            if replaces:
                m.execute(
                    "UPDATE batches SET status = 'retried' WHERE id IN"
                    " (SELECT value FROM json_each(?)) AND status = 'failed'",
                    (json.dumps(list(replaces)),),
                )
            m.executemany(
                "INSERT INTO batch_turns (transcript_identity, observation_id, batch_id)"
                " VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET batch_id = excluded.batch_id",
                [(identity, oid, batch_id) for oid in ids],
            )
            added, repeated, superseded = _add_learnings(m, identity, batch, batch_id, now)
            opened = sum(
                actions.add(m, text, prio, "curator", content_key("action", text), now, batch_id)
                for text, prio in batch.actions
            )
            closed = sum(
                actions.set_status(m, action_id, "completed", now)
                for action_id in batch.closed_actions
            )
            for name, content in sorted(batch.md_updates.items()):
                m.execute(
                    "INSERT INTO md_revisions (file, content, sha256, created_at, batch_id, source)"
                    " VALUES (?, ?, ?, ?, ?, 'curator')",
                    (name, content, sha256(content), now, batch_id),
                )
            for key, value in batch.state.items():
                _set_state(m, key, value, now)
            refused = list(batch.refused)
            if repeated:
                refused.append(f"{repeated} learnings already stored (or retracted)")
            if refused:
                m.execute(
                    "UPDATE batches SET refused = ? WHERE id = ?",
                    (json.dumps(refused, ensure_ascii=False), batch_id),
                )
        files = tuple(sorted(batch.md_updates))
        return CommitResult(batch_id, added, opened, closed, files, repeated, superseded)

    def batch_groups(self, identity: str) -> list[tuple[float, float, list[int]]]:
        """How this ledger grouped the turns of ``identity``: (started_at, finished_at, turn
        ids) per batch, in the order they were curated (``wsd rebuild`` follows it)."""
        with self._memory() as m:
            rows = schema.rows(
                m,
                "SELECT b.started_at, b.finished_at, json_group_array(t.observation_id)"
                " FROM batches b JOIN batch_turns t ON t.batch_id = b.id"
                " WHERE t.transcript_identity = ? GROUP BY b.id ORDER BY b.id",
                (identity,),
            )
        return [(float(s), float(f), sorted(json.loads(ids))) for s, f, ids in rows]

    def parked_since(self, since: float) -> list[tuple[int, str | None]]:
        """Batches parked (failed, not retried since) that ended at or after ``since``, as
        (batch id, error), oldest first (read-only)."""
        with self._memory(readonly=True) as m:
            rows = schema.rows(
                m,
                "SELECT id, error FROM batches WHERE status = 'failed' AND finished_at >= ?"
                " ORDER BY id",
                (since,),
            )
        return [(int(b), None if e is None else str(e)) for b, e in rows]

    def failed_batches(self) -> list[tuple[int, list[int], str | None]]:
        """Parked batches as (batch id, turn ids, error)."""
        with self._memory() as m:
            rows = schema.rows(
                m,
                "SELECT b.id, b.error, json_group_array(t.observation_id) FROM batches b"
                " JOIN batch_turns t ON t.batch_id = b.id WHERE b.status = 'failed'"
                " GROUP BY b.id ORDER BY b.id",
            )
        return [(int(b), sorted(json.loads(ids)), err) for b, err, ids in rows]

    def stats(self) -> dict[str, Any]:
        """Ledger totals for ``wsd status``."""
        with self._memory() as m:
            row = schema.one(
                m,
                "SELECT count(*), coalesce(sum(status = 'done'), 0),"
                " coalesce(sum(status = 'failed'), 0), coalesce(sum(input_tokens), 0),"
                " coalesce(sum(output_tokens), 0), coalesce(sum(cache_read_tokens), 0),"
                " coalesce(sum(cost_usd), 0) FROM batches",
            )
            last = schema.first(
                m, "SELECT id, status, turns, finished_at, error FROM batches ORDER BY id DESC"
            )
            (learnings,) = schema.one(m, "SELECT count(*) FROM learnings")
            open_actions = actions.open_count(m)
        keys = (
            "batches",
            "done",
            "parked",
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cost_usd",
        )
        out: dict[str, Any] = dict(zip(keys, row, strict=True))
        out["learnings"] = learnings
        out["open_actions"] = open_actions
        out["last_batch"] = (
            None
            if last is None
            else dict(zip(("id", "status", "turns", "finished_at", "error"), last, strict=True))
        )
        return out


#: A turn still settling: it holds a spooled event and its newest event is newer than ?n.
_SETTLING = (
    "(EXISTS (SELECT 1 FROM events e WHERE e.observation_id = o.id AND e.via = 'spool')"
    " AND (SELECT max(ts) FROM events e WHERE e.observation_id = o.id) >= ?{n})"
)
_TURN_COLS = (
    "id, session_id, sequence_num, timestamp, user_message, tool_calls_json, agent_response,"
    " closed_by, amends"
)


def _turn(row: tuple[Any, ...]) -> Turn:
    oid, session, seq, ts, user, calls, response, closed_by, amends = row
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
    )


def _set_state(m: apsw.Connection, key: str, value: str, now: float) -> None:
    m.execute(
        "INSERT INTO state (key, value, updated_at) VALUES (?, ?, ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        (key, value, now),
    )


def _insert_batch(m: apsw.Connection, identity: str, batch: BatchRecord, now: float) -> int:
    """The ledger row of one batch; its id."""
    ids = [t.id for t in batch.turns]
    m.execute(
        "INSERT INTO batches (transcript_identity, first_observation_id,"
        " last_observation_id, turns, status, attempts, error, model, stop_reason,"
        " input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd,"
        " latency_ms, started_at, finished_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            identity,
            min(ids),
            max(ids),
            len(ids),
            batch.status,
            batch.attempts,
            batch.error,
            batch.model,
            batch.stop_reason,
            batch.input_tokens,
            batch.output_tokens,
            batch.cache_read_tokens,
            batch.cache_write_tokens,
            batch.cost_usd,
            batch.latency_ms,
            batch.started_at or now,
            now,
        ),
    )
    return int(m.last_insert_rowid())


def _add_learnings(
    m: apsw.Connection, identity: str, batch: BatchRecord, batch_id: int, now: float
) -> tuple[int, int, int]:
    """Store the batch's learnings; (added, repeats not stored, older ones superseded).

    A learning whose key is stored already, or was retracted by a person, is not stored.
    Each links to its source turns: the turn it cites, or all the batch's turns. One that
    replaces a stored, current learning marks it superseded (kept, searchable, flagged).
    """
    by_id = {t.id: t for t in batch.turns}
    added = repeated = superseded = 0
    for item in batch.learnings:
        key = learning_key(item.content)
        sources = [by_id[item.cited]] if item.cited in by_id else list(batch.turns)
        if schema.first(m, "SELECT 1 FROM retractions WHERE content_key = ?", (key,)):
            repeated += 1
            continue
        m.execute(
            "INSERT INTO learnings (created_at, session_id, type, content, content_key,"
            " source_observation_id, batch_id) VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (content_key) DO NOTHING",
            (now, sources[-1].session_id, item.kind, item.content, key, sources[-1].id, batch_id),
        )
        if not m.changes():
            repeated += 1
            continue
        added += 1
        learning_id = int(m.last_insert_rowid())
        m.executemany(
            "INSERT INTO learning_sources (learning_id, transcript_identity, observation_id)"
            " VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            [(learning_id, identity, t.id) for t in sources],
        )
        if item.replaces is not None and item.replaces != learning_id:
            m.execute(
                "UPDATE learnings SET superseded_by = ?, superseded_at = ?"
                " WHERE id = ? AND superseded_by IS NULL",
                (learning_id, now, item.replaces),
            )
            superseded += m.changes()
    return added, repeated, superseded
