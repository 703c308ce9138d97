"""The batch ledger in memory.db, the truth of what was curated, and the daemon's state.

The exactly-once rule lives in :func:`commit_batch`: a batch commits only if none of its
turns is already covered by the ledger, and the transcript's ``processed`` markers are a
cache re-derived from that ledger (:func:`wsd.daemon.store.turns.rederive_processed`).
Each verb takes an open memory.db connection (the :class:`Ledger` facet at the end,
``store.ledger``, opens one per call).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import apsw

from wsd import schema
from wsd.daemon.store import actions
from wsd.daemon.store.erasure import Marks
from wsd.daemon.store.records import (
    AlreadyCovered,
    BatchRecord,
    CommitResult,
    content_key,
    learning_key,
    sha256,
)
from wsd.daemon.store.verbs import Facet, reads, uses, writes


def get_state(m: apsw.Connection, key: str) -> str | None:
    row = schema.first(m, "SELECT value FROM state WHERE key = ?", (key,))
    return None if row is None else str(row[0])


def set_state(m: apsw.Connection, values: dict[str, str | None], now: float) -> None:
    """Set (or, for None, delete) state keys (in the caller's transaction)."""
    for key, value in values.items():
        if value is None:
            m.execute("DELETE FROM state WHERE key = ?", (key,))
        else:
            put_state(m, key, value, now)


def put_state(m: apsw.Connection, key: str, value: str, now: float) -> None:
    """Set one state key (in the caller's transaction)."""
    m.execute(
        "INSERT INTO state (key, value, updated_at) VALUES (?, ?, ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        (key, value, now),
    )


def covered(m: apsw.Connection, identity: str, ids: Sequence[int]) -> set[int]:
    """Which of these turns of ``identity`` the ledger covers."""
    rows = schema.rows(
        m,
        "SELECT observation_id FROM batch_turns WHERE transcript_identity = ?"
        " AND observation_id IN (SELECT value FROM json_each(?))",
        (identity, json.dumps(list(ids))),
    )
    return {int(r[0]) for r in rows}


def commit_batch(
    m: apsw.Connection, identity: str, batch: BatchRecord, now: float, replaces: Sequence[int] = ()
) -> CommitResult:
    """Commit one batch and all it produced atomically (the exactly-once point).

    Raises AlreadyCovered if any turn is covered by a batch other than the
    parked ones listed in ``replaces`` (a ``wsd retry``).
    """
    ids = [t.id for t in batch.turns]
    with schema.write_txn(m):
        batch, forgotten = _without_forgotten(m, batch)
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
        _machine_turns(m, batch, batch_id, now)
        added, repeated, superseded = _add_learnings(m, identity, batch, batch_id, now)
        opened = sum(
            actions.add(m, text, prio, "curator", content_key("action", text), now, batch_id)
            for text, prio in batch.actions
        )
        closed = sum(
            actions.set_status(m, action_id, "completed", now) for action_id in batch.closed_actions
        )
        for name, content in sorted(batch.md_updates.items()):
            m.execute(
                "INSERT INTO md_revisions (file, content, sha256, created_at, batch_id, source)"
                " VALUES (?, ?, ?, ?, ?, 'curator')",
                (name, content, sha256(content), now, batch_id),
            )
        for key, value in batch.state.items():
            put_state(m, key, value, now)
        # The person's own request to forget: run by the daemon after this commit (or, when
        # it would erase much, once they confirm).
        m.executemany(
            "INSERT INTO forget_requests (words, created_at, batch_id, status, said, asked_in,"
            " reason) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    "" if f.refused else f.words,
                    now,
                    batch_id,
                    "refused" if f.refused else "new",
                    int(f.said),
                    f.asked_in,
                    f.refused,
                )
                for f in batch.forgets
            ],
        )
        refused = list(batch.refused)
        if repeated:
            refused.append(f"{repeated} learnings already stored (or retracted)")
        if forgotten:
            refused.append(f"{forgotten} items held words the person asked to forget")
        if refused:
            m.execute(
                "UPDATE batches SET refused = ? WHERE id = ?",
                (json.dumps(refused, ensure_ascii=False), batch_id),
            )
    files = tuple(sorted(batch.md_updates))
    return CommitResult(batch_id, added, opened, closed, files, repeated, superseded)


def _machine_turns(m: apsw.Connection, batch: BatchRecord, batch_id: int, now: float) -> None:
    """A satellite's turn is never curated twice, whatever becomes of this transcript.db
    (SPEC.md section 11): its machine and key are committed with the batch."""
    m.executemany(
        "INSERT OR IGNORE INTO machine_turns (machine, origin_key, batch_id, curated_at)"
        " VALUES (?, ?, ?, ?)",
        [(*t.origin, batch_id, now) for t in batch.turns if t.origin is not None],
    )


def _without_forgotten(m: apsw.Connection, batch: BatchRecord) -> tuple[BatchRecord, int]:
    """The batch without what holds words the person asked to forget (issue 33): a reply
    made from a turn before its erasure (a Message Batch out at the Bridge, a curator that
    remembered) cannot write them back. Learnings and actions go whole, md lines one by one."""
    marks = Marks.load(m)
    if not marks:
        return batch, 0
    learnings = [item for item in batch.learnings if not marks.holds(item.content)]
    opened = [(text, prio) for text, prio in batch.actions if not marks.holds(text)]
    md, lines = {}, 0
    for name, content in batch.md_updates.items():
        md[name], taken = marks.without_lines(content)
        lines += taken
    dropped = len(batch.learnings) - len(learnings) + len(batch.actions) - len(opened) + lines
    if not dropped:
        return batch, 0
    return replace(batch, learnings=learnings, actions=opened, md_updates=md), dropped


def batch_groups(m: apsw.Connection, identity: str) -> list[tuple[float, float, list[int], str]]:
    """How this ledger grouped the turns of ``identity``: (started_at, finished_at, turn
    ids, lane) per batch, in the order they were curated (``wsd rebuild`` follows it)."""
    rows = schema.rows(
        m,
        "SELECT b.started_at, b.finished_at, json_group_array(t.observation_id), b.lane"
        " FROM batches b JOIN batch_turns t ON t.batch_id = b.id"
        " WHERE t.transcript_identity = ? GROUP BY b.id ORDER BY b.id",
        (identity,),
    )
    return [
        (float(s), float(f), sorted(json.loads(ids)), str(lane or "prompt"))
        for s, f, ids, lane in rows
    ]


def parked_since(m: apsw.Connection, since: float) -> list[tuple[int, str | None]]:
    """Batches parked (failed, not retried since) that ended at or after ``since``, as
    (batch id, error), oldest first."""
    rows = schema.rows(
        m,
        "SELECT id, error FROM batches WHERE status = 'failed' AND finished_at >= ? ORDER BY id",
        (since,),
    )
    return [(int(b), None if e is None else str(e)) for b, e in rows]


def failed_batches(m: apsw.Connection) -> list[tuple[int, list[int], str | None, str]]:
    """Parked batches as (batch id, turn ids, error, lane)."""
    rows = schema.rows(
        m,
        "SELECT b.id, b.error, json_group_array(t.observation_id), b.lane FROM batches b"
        " JOIN batch_turns t ON t.batch_id = b.id WHERE b.status = 'failed'"
        " GROUP BY b.id ORDER BY b.id",
    )
    return [
        (int(b), sorted(json.loads(ids)), err, str(lane or "prompt")) for b, err, ids, lane in rows
    ]


def stats(m: apsw.Connection) -> dict[str, Any]:
    """Ledger totals for ``wsd status``."""
    row = schema.one(
        m,
        "SELECT count(*), coalesce(sum(status = 'done'), 0),"
        " coalesce(sum(status = 'failed'), 0), coalesce(sum(input_tokens), 0),"
        " coalesce(sum(output_tokens), 0), coalesce(sum(cache_read_tokens), 0),"
        " coalesce(sum(cost_usd), 0), coalesce(sum(ungrounded), 0) FROM batches",
    )
    last = schema.first(
        m, "SELECT id, status, turns, finished_at, error FROM batches ORDER BY id DESC"
    )
    (learnings,) = schema.one(m, "SELECT count(*) FROM learnings")
    keys = (
        "batches",
        "done",
        "parked",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cost_usd",
        "ungrounded",
    )
    out: dict[str, Any] = dict(zip(keys, row, strict=True))
    out["learnings"] = learnings
    out["open_actions"] = actions.open_count(m)
    out["last_batch"] = (
        None
        if last is None
        else dict(zip(("id", "status", "turns", "finished_at", "error"), last, strict=True))
    )
    return out


def _insert_batch(m: apsw.Connection, identity: str, batch: BatchRecord, now: float) -> int:
    """The ledger row of one batch; its id."""
    ids = [t.id for t in batch.turns]
    m.execute(
        "INSERT INTO batches (transcript_identity, first_observation_id,"
        " last_observation_id, turns, status, attempts, error, model, stop_reason,"
        " input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd,"
        " latency_ms, started_at, finished_at, lane, message_batch_id, custom_id, ungrounded,"
        " refusal_kinds)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
            batch.lane,
            batch.message_batch_id,
            batch.custom_id,
            batch.ungrounded,
            _kinds_json(batch.refusal_kinds),
        ),
    )
    return int(m.last_insert_rowid())


def _kinds_json(kinds: dict[str, int]) -> str | None:
    kept = {k: int(n) for k, n in sorted(kinds.items()) if n}
    return json.dumps(kept) if kept else None


def metrics(m: apsw.Connection) -> dict[str, Any]:
    """Ledger totals per lane for ``wsd metrics``: batches by status, retried attempts,
    tokens, and refusals by kind (all counted since the ledger began)."""
    lanes = schema.rows(
        m,
        "SELECT lane, status, count(*), coalesce(sum(max(attempts - 1, 0)), 0),"
        " coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0),"
        " coalesce(sum(cache_read_tokens), 0), coalesce(sum(cache_write_tokens), 0),"
        " coalesce(sum(cost_usd), 0) FROM batches GROUP BY lane, status",
    )
    kinds = schema.rows(
        m,
        "SELECT b.lane, j.key, sum(j.value) FROM batches b, json_each(b.refusal_kinds) j"
        " WHERE b.refusal_kinds IS NOT NULL AND json_valid(b.refusal_kinds)"
        " GROUP BY b.lane, j.key",
    )
    ungrounded = schema.rows(
        m, "SELECT lane, sum(ungrounded) FROM batches WHERE ungrounded > 0 GROUP BY lane"
    )
    return {
        "batches": [
            {
                "lane": str(lane),
                "status": str(status),
                "count": int(n),
                "retries": int(retries),
                "tokens": {
                    "input": int(i),
                    "output": int(o),
                    "cache_read": int(cr),
                    "cache_write": int(cw),
                },
                "cost_usd": float(cost),
            }
            for lane, status, n, retries, i, o, cr, cw, cost in lanes
        ],
        "refusals": [(str(lane), str(kind), int(n)) for lane, kind, n in kinds]
        + [(str(lane), "ungrounded", int(n)) for lane, n in ungrounded],
    }


def _add_learnings(
    m: apsw.Connection, identity: str, batch: BatchRecord, batch_id: int, now: float
) -> tuple[int, int, int]:
    """Store the batch's learnings; (added, repeats not stored, older ones superseded).

    A learning whose key is stored already, or was retracted by a person, is not stored.
    Each links to its source turns: the turns of the batch it cites (``cited`` 1), or all
    the batch's turns (``cited`` 0: it cites none, or only turns outside the batch). One
    that replaces a stored, current learning marks it superseded (kept, searchable, flagged).
    """
    by_id = {t.id: t for t in batch.turns}
    added = repeated = superseded = 0
    for item in batch.learnings:
        key = learning_key(item.content)
        cited = [by_id[n] for n in item.cited if n in by_id]
        sources = cited or list(batch.turns)
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
            "INSERT INTO learning_sources (learning_id, transcript_identity, observation_id,"
            " cited) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [(learning_id, identity, t.id, int(bool(cited))) for t in sources],
        )
        if item.replaces is not None and item.replaces != learning_id:
            m.execute(
                "UPDATE learnings SET superseded_by = ?, superseded_at = ?"
                " WHERE id = ? AND superseded_by IS NULL",
                (learning_id, now, item.replaces),
            )
            superseded += m.changes()
    return added, repeated, superseded


def newest_batch(m: apsw.Connection) -> int:
    """The newest batch's id (0: none); a new batch, a retry's too, changes it."""
    return int(schema.one(m, "SELECT coalesce(max(id), 0) FROM batches")[0])


class Ledger(Facet):
    """The batch ledger and the daemon's state in memory.db (``store.ledger``)."""

    get_state = uses("memory", get_state)
    set_state = writes("memory", set_state)
    covered = uses("memory", covered)
    commit_batch = uses("memory", commit_batch)
    batch_groups = uses("memory", batch_groups)
    parked_since = reads("memory", parked_since)
    failed_batches = uses("memory", failed_batches)
    stats = uses("memory", stats)

    newest_id = reads("memory", newest_batch)

    metrics = reads("memory", metrics)
