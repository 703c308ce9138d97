"""The vectors of semantic matching: which memories still need one, writing them, and the
reads the daemon's dense search makes (schema/sql/memory/004_vectors.sql).

Rows are (kind, id): kind ``L`` a learning, ``T`` a turn. The text embedded for a turn is
what the person and the agent said (its tool calls only when it has nothing else: commands
and their output drown the meaning); the model reads only the first 256 word pieces. Each
verb takes an open memory.db connection (one that predates the vector tables reads as empty);
the :class:`Vectors` facet at the end (``store.vectors``) opens them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

import apsw

from wsd import schema
from wsd.daemon.store.verbs import Facet, reads, uses

KINDS = ("L", "T")
_TABLE = {"L": ("learning_vectors", "learning_id"), "T": ("turn_vectors", "turn_id")}
_TEXT = {
    "L": "SELECT d.id, d.content FROM learnings d",
    "T": "SELECT d.id, CASE WHEN d.prompt = '' AND d.response = '' THEN d.tools"
    " ELSE d.prompt || char(10) || d.response END FROM turns d",
}
_MODEL_KEY = "vectors_model"
_EPOCH_KEY = "vectors_epoch"


def _has_vectors(conn: apsw.Connection) -> bool:
    return bool(
        conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'learning_vectors'"
        ).fetchone()
    )


def use_model(m: apsw.Connection, model: str) -> bool:
    """Make ``model`` the one stored vectors belong to; vectors of another are deleted.
    False when memory.db predates the vector tables."""
    if not _has_vectors(m):
        return False
    row = m.execute("SELECT value FROM meta WHERE key = ?", (_MODEL_KEY,)).fetchone()
    if row is not None and row[0] == model:
        return True
    with schema.write_txn(m):
        m.execute("DELETE FROM learning_vectors")
        m.execute("DELETE FROM turn_vectors")
        for key, value in ((_MODEL_KEY, model), (_EPOCH_KEY, uuid.uuid4().hex)):
            m.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
    return True


def pending(m: apsw.Connection, limit: int) -> list[tuple[str, int, str]]:
    """Up to ``limit`` memories without a vector, learnings first, newest first."""
    out: list[tuple[str, int, str]] = []
    if not _has_vectors(m):
        return out
    for kind in KINDS:
        table, key = _TABLE[kind]
        out += [
            (kind, int(i), str(text or ""))
            for i, text in m.execute(
                f"{_TEXT[kind]} WHERE NOT EXISTS"
                f" (SELECT 1 FROM {table} v WHERE v.{key} = d.id) ORDER BY d.id DESC LIMIT ?",
                (limit - len(out),),
            )
        ]
        if len(out) >= limit:
            break
    return out


def texts(m: apsw.Connection, kind: str, limit: int) -> list[str]:
    """The texts of up to ``limit`` memories of ``kind`` as they are embedded (vector or not)."""
    return [str(text or "") for _i, text in m.execute(f"{_TEXT[kind]} LIMIT ?", (limit,))]


def counts(m: apsw.Connection) -> tuple[int, int]:
    """(memories with a vector, memories) over learnings and turns."""
    if not _has_vectors(m):
        return 0, 0
    row = m.execute(
        "SELECT (SELECT count(*) FROM learning_vectors) + (SELECT count(*) FROM turn_vectors),"
        " (SELECT count(*) FROM learnings) + (SELECT count(*) FROM turns)"
    ).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def newest(m: apsw.Connection) -> tuple[str, int, int]:
    """The vectors' epoch and the newest learning and turn ids: a cheap sign that something
    new needs a vector (a rebuilt memory.db renews the epoch even when its ids end alike)."""
    row = m.execute(
        "SELECT (SELECT value FROM meta WHERE key = ?),"
        " (SELECT coalesce(max(id), 0) FROM learnings),"
        " (SELECT coalesce(max(id), 0) FROM turns)",
        (_EPOCH_KEY,),
    ).fetchone()
    return (str(row[0] or ""), int(row[1]), int(row[2])) if row else ("", 0, 0)


def write(m: apsw.Connection, rows: Sequence[tuple[str, int, bytes]]) -> int:
    """Store vectors (kind, id, 384 int8 bytes); a memory deleted meanwhile is skipped."""
    written = 0
    with schema.write_txn(m):
        for kind, doc_id, vector in rows:
            table, key = _TABLE[kind]
            source = "learnings" if kind == "L" else "turns"
            m.execute(
                f"INSERT OR REPLACE INTO {table} ({key}, vector)"
                f" SELECT ?, ? WHERE EXISTS (SELECT 1 FROM {source} WHERE id = ?)",
                (doc_id, vector, doc_id),
            )
            written += m.changes()
    return written


def newer(
    m: apsw.Connection, after: dict[str, int]
) -> tuple[str, dict[str, tuple[int, list[tuple[int, bytes]]]]]:
    """What a cache of the vectors needs, in one read: the epoch (it changes whenever the
    stored vectors start afresh: another model, a rebuilt memory.db), and per kind the
    highest id and the (id, vector) rows above ``after[kind]``, in id order."""
    out: dict[str, tuple[int, list[tuple[int, bytes]]]] = {}
    if not _has_vectors(m):
        return "", {kind: (0, []) for kind in KINDS}
    row = m.execute("SELECT value FROM meta WHERE key = ?", (_EPOCH_KEY,)).fetchone()
    for kind in KINDS:
        table, key = _TABLE[kind]
        (top,) = m.execute(f"SELECT coalesce(max({key}), 0) FROM {table}").fetchone() or (0,)
        rows = m.execute(
            f"SELECT {key}, vector FROM {table} WHERE {key} > ? ORDER BY {key}",
            (after.get(kind, 0),),
        )
        out[kind] = (int(top), [(int(i), bytes(v)) for i, v in rows])
    return ("" if row is None else str(row[0])), out


def fetch(
    m: apsw.Connection,
    kind: str,
    ids: Sequence[int],
    kind_filter: str | None,
    since_ts: float | None,
) -> list[tuple[int, bytes]]:
    """(id, vector) of ``ids`` that still exist and pass the search filters (a learning
    type, an epoch)."""
    table, key = _TABLE[kind]
    source = "learnings" if kind == "L" else "turns"
    sql = (
        f"SELECT v.{key}, v.vector FROM {table} v JOIN {source} d ON d.id = v.{key}"
        f" WHERE v.{key} IN (SELECT value FROM json_each(?))"
    )
    args: list[Any] = [json.dumps(list(ids))]
    if kind == "L" and kind_filter is not None:
        sql += " AND d.type = ?"
        args.append(kind_filter)
    if since_ts is not None:
        sql += " AND d.created_at >= ?"
        args.append(since_ts)
    return [(int(i), bytes(v)) for i, v in m.execute(sql, args)]


class Vectors(Facet):
    """The vectors of semantic matching (see :mod:`wsd.daemon.store.vectors`)."""

    use_model = uses("memory", use_model)
    pending = reads("memory", pending)
    texts = reads("memory", texts)
    counts = reads("memory", counts)
    newest = reads("memory", newest)
    write = uses("memory", write)
    newer = reads("memory", newer)
    fetch = reads("memory", fetch)
