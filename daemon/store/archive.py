"""The archive's SQL verbs: the turn index search_memory reaches, ``wsd import``, and the
boot context's recent learnings.

* :func:`index_new_turns` copies closed turns of transcript.db into memory.db's ``turns``
  table (and so into ``turns_fts``), oldest first, in bounded steps: the daemon calls it every
  pass, ``wsd rebuild`` until it returns 0. Memory tool calls are left out of the copy, so the
  archive never holds what the archive said.
* :func:`import_jsonl` loads learnings from JSON lines; each bad line is reported with its
  line number and skipped, the good ones are kept (one transaction for the whole file).
* :func:`recent_learnings` and :func:`open_actions` read what a new session starts with
  (read-only connections: the boot context never writes).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import apsw

from wsd import schema
from wsd.daemon.runtime.dates import parse_since
from wsd.daemon.store import actions
from wsd.daemon.store.base import Databases
from wsd.daemon.store.records import LEARNING_TYPES, learning_key
from wsd.hooks.capture import is_memory_call
from wsd.redact import clean_text

#: Turns copied per call (one short write transaction each).
INDEX_BATCH = 500
#: Characters kept per part of a turn in the index (a tool's output is mostly noise to search).
PROMPT_CHARS = 4000
RESPONSE_CHARS = 4000
TOOL_INPUT_CHARS = 300
TOOL_OUTPUT_CHARS = 300
#: An imported learning may be longer than a curated one (1,000): it may be a whole note.
IMPORT_MAX_CHARS = 4000


def index_new_turns(store: Databases, batch: int = INDEX_BATCH, identity: str | None = None) -> int:
    """Copy up to ``batch`` closed turns not yet in the turn index; returns how many.

    The cursor is the highest observation id indexed for this transcript's identity, so a
    recreated transcript.db starts its own sequence and older turns stay searchable.
    """
    if identity is None:
        with store._transcript() as t:
            identity = schema.identity(t)
    with store._memory() as m:
        if not _has_turns(m):
            return 0  # memory.db not migrated yet: the daemon migrates at start
        row = m.execute(
            "SELECT coalesce(max(observation_id), 0) FROM turns WHERE transcript_identity = ?",
            (identity,),
        ).fetchone()
        cursor = row[0] if row else 0
    with store._transcript() as t:
        rows = t.execute(
            "SELECT id, session_id, sequence_num, timestamp, user_message, tool_calls_json,"
            " agent_response FROM observations WHERE id > ? ORDER BY id LIMIT ?",
            (cursor, batch),
        ).fetchall()
    if not rows:
        return 0
    values = [
        (identity, oid, sid, seq, ts, *turn_text(user, calls, response))
        for oid, sid, seq, ts, user, calls, response in rows
    ]
    with store._memory() as m, schema.write_txn(m):
        m.executemany(
            "INSERT INTO turns (transcript_identity, observation_id, session_id, sequence_num,"
            " created_at, prompt, response, tools) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT DO NOTHING",
            values,
        )
    return len(rows)


def reindex_turns(store: Databases, ids: Iterable[int], identity: str) -> int:
    """Index these turns again (a late event folded into them changed their text); how many."""
    wanted = json.dumps(sorted(set(ids)))
    with store._transcript() as t:
        rows = t.execute(
            "SELECT id, session_id, sequence_num, timestamp, user_message, tool_calls_json,"
            " agent_response FROM observations WHERE id IN (SELECT value FROM json_each(?))",
            (wanted,),
        ).fetchall()
    with store._memory() as m:
        if not rows or not _has_turns(m):
            return 0
        with schema.write_txn(m):
            m.execute(
                "DELETE FROM turns WHERE transcript_identity = ?"
                " AND observation_id IN (SELECT value FROM json_each(?))",
                (identity, wanted),
            )
            m.executemany(
                "INSERT INTO turns (transcript_identity, observation_id, session_id, sequence_num,"
                " created_at, prompt, response, tools) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (identity, oid, sid, seq, ts, *turn_text(user, calls, response))
                    for oid, sid, seq, ts, user, calls, response in rows
                ],
            )
    return len(rows)


def _has_turns(conn: apsw.Connection) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'turns'"
        ).fetchone()
        is not None
    )


def turn_text(user: object, calls_json: object, response: object) -> tuple[str, str, str]:
    """(prompt, response, tools) of one observation as the index stores them."""
    try:
        calls = json.loads(calls_json) if isinstance(calls_json, str) and calls_json else []
    except ValueError:
        calls = []
    lines = []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        name = str(call.get("name") or "?")
        if is_memory_call(name, call.get("input")):
            continue  # searching must never find searching
        inp = _compact(call.get("input"), TOOL_INPUT_CHARS)
        out = _compact(
            call.get("error") if "error" in call else call.get("output"), TOOL_OUTPUT_CHARS
        )
        lines.append(f"{name} {inp}" + (f" -> {out}" if out else ""))
    return (
        _compact(user, PROMPT_CHARS),
        _compact(response, RESPONSE_CHARS),
        "\n".join(lines),
    )


def _compact(value: Any, limit: int) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- import -----------------------------------------------------------------------------------


@dataclass
class ImportReport:
    """What ``import_jsonl`` did: learnings added, exact duplicates skipped, bad lines."""

    added: int = 0
    duplicates: int = 0
    errors: list[tuple[int, str]] = field(default_factory=list)


_IMPORT_KEYS = ("type", "content", "created_at", "session_id", "confidence", "ref")


def parse_import_line(raw: str) -> tuple[Any, ...]:
    """One JSON line as a learnings row; raises ValueError saying what is wrong."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    kind = data.get("type")
    if kind not in LEARNING_TYPES:
        raise ValueError(f"type must be one of {', '.join(LEARNING_TYPES)} (got {kind!r:.40})")
    content = data.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ValueError("content must be a non-empty string")
    content = clean_text(content, IMPORT_MAX_CHARS).strip()
    created = data.get("created_at")
    if created is None:
        created_at = time.time()
    elif isinstance(created, bool) or not isinstance(created, int | float | str):
        raise ValueError("created_at must be an epoch number or an ISO date/time")
    else:
        try:
            created_at = float(parse_since(created) or 0.0)
        except ValueError:
            raise ValueError(f"created_at {str(created)[:40]!r} is not a date") from None
    session = data.get("session_id")
    if session is not None and not isinstance(session, str | int):
        raise ValueError("session_id must be a string")
    confidence = data.get("confidence", 1.0)
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not 0.0 <= float(confidence) <= 1.0
    ):
        raise ValueError("confidence must be a number from 0 to 1")
    ref = data.get("ref")
    if ref is not None and not isinstance(ref, str):
        ref = json.dumps(ref, ensure_ascii=False)  # a list of ids is a fine reference too
    return (
        created_at,
        None if session is None else clean_text(str(session), 256),
        kind,
        content,
        learning_key(content),
        float(confidence),
        None if ref is None else clean_text(ref, 1000),
    )


def import_lines(store: Databases, lines: Iterable[str | bytes]) -> ImportReport:
    """Import learnings from JSON lines (see :func:`parse_import_line`); one transaction."""
    report = ImportReport()
    rows: list[tuple[int, tuple[Any, ...]]] = []
    for number, raw in enumerate(lines, start=1):
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError:
            report.errors.append((number, "not valid UTF-8"))
            continue
        if not text.strip():
            continue
        try:
            rows.append((number, parse_import_line(text)))
        except ValueError as exc:
            report.errors.append((number, str(exc)))
    with store._memory() as m, schema.write_txn(m):
        for _number, row in rows:
            m.execute(
                "INSERT INTO learnings (created_at, session_id, type, content, content_key,"
                " confidence, ref) VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (content_key) DO NOTHING",
                row,
            )
            if m.changes():
                report.added += 1
            else:
                report.duplicates += 1
    return report


def import_jsonl(store: Databases, path: str) -> ImportReport:
    """Import a JSON-lines file (``wsd import``)."""
    with open(path, "rb") as fh:
        return import_lines(store, _lines(fh))


def _lines(fh: Any) -> Iterator[bytes]:
    for line in fh:
        yield line.rstrip(b"\r\n")


# -- what a new session starts with ----------------------------------------------------------


def recent_learnings(store: Databases, since: float, limit: int) -> list[tuple[str, float, str]]:
    """(type, created_at, content) of current learnings since ``since``, newest first
    (read-only; a superseded learning is left out: its successor says it better)."""
    with store._memory(readonly=True) as m:
        rows = schema.rows(
            m,
            "SELECT type, created_at, content FROM learnings WHERE created_at >= ?"
            " AND superseded_by IS NULL ORDER BY created_at DESC, id DESC LIMIT ?",
            (since, max(0, limit)),
        )
    return [(str(kind), float(ts), str(text)) for kind, ts, text in rows]


def open_actions(store: Databases, limit: int) -> list[tuple[int, int, str]]:
    """Open pending actions as (id, priority, content), most urgent first (read-only)."""
    with store._memory(readonly=True) as m:
        return actions.open_list(m, limit)


def learnings(store: Databases) -> list[tuple[str, str]]:
    """Every stored learning as (type, content), oldest first (the demo prints them)."""
    with store._memory(readonly=True) as m:
        return [
            (str(k), str(c))
            for k, c in schema.rows(m, "SELECT type, content FROM learnings ORDER BY id")
        ]


_WORD = re.compile(r"[^\W\d_]{3,}")
#: Words too common to say what a batch is about (the related-learnings query drops them).
_COMMON_WORDS = (
    "the and for you that with this are was have not but what all can your from they will"
    " one about there which when would their been has more into some could them than"
    " then its only also how our out use just like get got did does done please thanks"
    " okay yes now here need want make file files user agent turn"
)
_COMMON = frozenset(_COMMON_WORDS.split())


def related_learnings(
    store: Databases, text: str, limit: int, words: int = 40
) -> list[tuple[int, str, float, str]]:
    """Current (not superseded) learnings most related to ``text``, best first, as
    (id, type, created_at, content): plain FTS5 BM25 over its most frequent words.

    What the curator is shown so it can say a new learning replaces an old one; plain BM25
    on purpose: it reads the store it is given (a rebuild's aside database too).
    """
    counts: dict[str, int] = {}
    for word in _WORD.findall(text.lower()):
        if word not in _COMMON:
            counts[word] = counts.get(word, 0) + 1
    top = sorted(counts, key=lambda w: (-counts[w], w))[:words]
    if not top or limit <= 0:
        return []
    query = " OR ".join(f'"{w}"' for w in top)
    with store._memory(readonly=True) as m:
        rows = schema.rows(
            m,
            "SELECT l.id, l.type, l.created_at, l.content FROM learnings_fts f"
            " JOIN learnings l ON l.id = f.rowid"
            " WHERE learnings_fts MATCH ? AND l.superseded_by IS NULL"
            " ORDER BY bm25(learnings_fts) LIMIT ?",
            (query, limit),
        )
    return [(int(i), str(k), float(ts), str(c)) for i, k, ts, c in rows]


def retracted_at(store: Databases, learning_id: int) -> float | None:
    """When learning ``learning_id`` was retracted (``wsd forget``), or None if it was not."""
    with store._memory(readonly=True) as m:
        row = schema.first(
            m, "SELECT max(retracted_at) FROM retractions WHERE learning_id = ?", (learning_id,)
        )
    return None if row is None or row[0] is None else float(row[0])


def retract(store: Databases, learning_id: int, now: float, reason: str | None = None) -> bool:
    """``wsd forget``: delete a learning (and so its FTS entry and source links), keeping in
    ``retractions`` that it was, when, and its key, so it is never stored again (by curation
    or a rebuild). False if there is no such learning."""
    with store._memory() as m, schema.write_txn(m):
        row = schema.first(
            m,
            "SELECT type, content_key, batch_id, created_at FROM learnings WHERE id = ?",
            (learning_id,),
        )
        if row is None:
            return False
        m.execute(
            "INSERT INTO retractions (learning_id, type, content_key, batch_id, created_at,"
            " retracted_at, reason) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (learning_id, *row, now, reason),
        )
        # What pointed at it lets go: a learning it had replaced is current again.
        m.execute(
            "UPDATE learnings SET superseded_by = NULL, superseded_at = NULL"
            " WHERE superseded_by = ?",
            (learning_id,),
        )
        m.execute(
            "UPDATE pending_actions SET source_learning_id = NULL WHERE source_learning_id = ?",
            (learning_id,),
        )
        m.execute("DELETE FROM learnings WHERE id = ?", (learning_id,))
    return True
