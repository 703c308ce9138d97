"""The SQL of forgetting (issue 33): find every row holding words, erase them, leave no byte.

What a forget matches is decided outside the store (:class:`Matcher`, implemented by
:mod:`wsd.daemon.memory.forget.words`); here is where the words can be, in both databases,
and how each kind goes:

* learnings, pending actions: whole rows (their FTS entries by trigger, their vectors by
  cascade);
* md revisions: the lines holding the words go, every revision rewritten (its sha256 too),
  ``erased`` counting the lines taken out (history shows that an erasure happened, never
  what);
* turns (the transcript's observations and raw events, the turn index in memory.db): the
  sentence holding the words is cut; the index row is re-written through its FTS table (it
  has no update trigger) and its vector dropped;
* the rest where text can land (a batch's error and refusals, card titles, Message Batch
  records and their base files, charge notes, flush reasons): cut.

Bytes: every erasure runs with ``secure_delete`` (freed cells and pages are zeroed), then the
FTS5 indexes are merged (``optimize``: the old segments, which still held the terms, are
deleted), and the WAL checkpointed and truncated. Every connection deletes with
``secure_delete`` (:func:`wsd.schema.connect`); a database whose free pages predate it is
vacuumed once.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import apsw

from wsd import schema
from wsd.daemon.store import message_batches
from wsd.daemon.store.records import sha256
from wsd.daemon.store.verbs import Facet, reads, uses
from wsd.schema.stems import spans, stems

#: How many samples of each kind a dry run shows.
SAMPLES = 3
SAMPLE_CHARS = 100


class Matcher(Protocol):
    """What to forget, as the store needs it (see :mod:`wsd.daemon.memory.forget.words`)."""

    def maybe_in(self, text: str) -> bool: ...
    def holds(self, text: object) -> bool: ...
    def cut(self, text: str) -> str: ...
    def cut_json_text(self, raw: str) -> str: ...
    def lines_holding(self, text: str) -> list[int]: ...
    def fts_query(self) -> str: ...
    def sql_maybe(self, column: str, flag: str | None = None) -> tuple[str, list[str]]: ...


@dataclass
class Items:
    """What one kind of item a forget reaches: the ids, and a few samples to show."""

    ids: list[Any] = field(default_factory=list)
    samples: list[str] = field(default_factory=list)

    def add(self, item: Any, text: str) -> None:
        self.ids.append(item)
        if len(self.samples) < SAMPLES:
            one = " ".join(text.split())
            self.samples.append(one if len(one) <= SAMPLE_CHARS else one[: SAMPLE_CHARS - 1] + "…")


@dataclass
class Found:
    """Everything one database holds of the words (a dry run, and what an erasure erases)."""

    kinds: dict[str, Items] = field(default_factory=dict)

    def kind(self, name: str) -> Items:
        return self.kinds.setdefault(name, Items())

    def counts(self) -> dict[str, int]:
        return {name: len(k.ids) for name, k in self.kinds.items() if k.ids}


# -- memory.db -----------------------------------------------------------------------------

_MEMORY_TEXT = (
    # (table, key column, text columns): cut in place.
    ("batches", "id", ("error", "refused")),
    ("canvas_cards", "card_id", ("title",)),
    # A retraction made by the older `wsd forget L12` kept the learning's words as its key.
    ("retractions", "learning_id", ("content_key", "reason")),
    ("state", "key", ("value",)),
)


def find_memory(
    m: apsw.Connection,
    match: Matcher,
    scope: Scope | None = None,
    turns_of: tuple[str, Sequence[int]] | None = None,
) -> Found:
    """Every row of memory.db holding the words (no write); with a ``scope``, the index
    rows of its turns and the learnings that came from them alone. ``turns_of``: the
    transcript's identity and the turns found holding the words there, whose index rows are
    read too (a form the index tokenizes apart, ``WexbridgeSchool``, no index query finds)."""
    if scope is not None:
        return _find_scoped(m, scope)
    found = Found()
    learnings = found.kind("learnings")
    # Every learning the cheap look lets through, not only what the index finds: a form
    # of the words (forms.py) is a token of its own there.
    maybe, args = match.sql_maybe("content")
    for lid, content in schema.rows(
        m, f"SELECT id, content FROM learnings WHERE {maybe} ORDER BY id", tuple(args)
    ):
        if match.holds(content):
            learnings.add(lid, content)
    actions = found.kind("actions")
    for aid, content in schema.rows(m, "SELECT id, content FROM pending_actions ORDER BY id"):
        if match.holds(content):
            actions.add(aid, content)
    lines, revisions = found.kind("md_lines"), found.kind("revisions")
    seen_lines: set[tuple[str, str]] = set()
    for rid, name, content in schema.rows(
        m, "SELECT id, file, content FROM md_revisions ORDER BY id DESC"
    ):
        if not match.maybe_in(content):
            continue
        hit = match.lines_holding(content)
        if not hit:
            continue
        revisions.add(rid, f"{name} revision {rid}")
        text_lines = content.splitlines()
        for i in hit:
            key = (name, text_lines[i].strip())
            if key not in seen_lines:
                seen_lines.add(key)
                lines.add(key, f"{name}: {text_lines[i]}")
    turns = found.kind("turns_indexed")
    candidates = schema.rows(
        m,
        "SELECT t.id, t.prompt, t.response, t.tools FROM turns_fts f JOIN turns t"
        " ON t.id = f.rowid WHERE turns_fts MATCH ? ORDER BY t.id",
        (match.fts_query(),),
    )
    if turns_of is not None and turns_of[1]:
        candidates += schema.rows(
            m,
            "SELECT id, prompt, response, tools FROM turns WHERE transcript_identity = ?"
            " AND observation_id IN (SELECT value FROM json_each(?)) ORDER BY id",
            (turns_of[0], json.dumps(sorted(turns_of[1]))),
        )
    seen: set[int] = set()
    for tid, prompt, response, tools in candidates:
        if tid in seen:
            continue
        seen.add(tid)
        if match.holds(prompt) or match.holds(response) or match.holds(tools):
            turns.add(tid, prompt or response or tools)
    other = found.kind("memory_other")
    for table, key_column, columns in _MEMORY_TEXT:
        for row in schema.rows(m, f"SELECT {key_column}, {', '.join(columns)} FROM {table}"):
            if any(isinstance(v, str) and match.holds(v) for v in row[1:]):
                other.add((table, row[0]), f"{table} {row[0]}")
    return found


def _find_scoped(m: apsw.Connection, scope: Scope) -> Found:
    found = Found()
    keys = (scope.identity, json.dumps(sorted(scope.observations)))
    learnings = found.kind("learnings")
    for lid, content in (
        []
        if not scope.derived
        else schema.rows(
            m,
            "SELECT l.id, l.content FROM learnings l WHERE EXISTS (SELECT 1 FROM learning_sources"
            " s WHERE s.learning_id = l.id) AND NOT EXISTS (SELECT 1 FROM learning_sources s"
            " WHERE s.learning_id = l.id AND NOT (s.transcript_identity = ?1 AND"
            " s.observation_id IN (SELECT value FROM json_each(?2)))) ORDER BY l.id",
            keys,
        )
    ):
        learnings.add(lid, content)
    turns = found.kind("turns_indexed")
    for tid, prompt in schema.rows(
        m,
        "SELECT id, prompt FROM turns WHERE transcript_identity = ?1 AND observation_id IN"
        " (SELECT value FROM json_each(?2)) ORDER BY id",
        keys,
    ):
        turns.add(tid, prompt)
    if scope.derived:
        _scoped_md_lines(m, keys, found)
    return found


def _scoped_md_lines(m: apsw.Connection, keys: tuple[str, str], found: Found) -> None:
    """The md lines the turns in scope alone put there: each line a batch of only those
    turns added to a file (headings aside: they are the file's frame), and every revision
    holding one of them."""
    batches = {
        int(b)
        for (b,) in schema.rows(
            m,
            "SELECT DISTINCT batch_id FROM batch_turns bt WHERE NOT EXISTS (SELECT 1 FROM"
            " batch_turns o WHERE o.batch_id = bt.batch_id AND NOT (o.transcript_identity = ?1"
            " AND o.observation_id IN (SELECT value FROM json_each(?2))))",
            keys,
        )
    }
    if not batches:
        return
    doomed: dict[str, set[str]] = {}
    before: dict[str, set[str]] = {}
    for _rid, name, content, batch in schema.rows(
        m, "SELECT id, file, content, batch_id FROM md_revisions ORDER BY id"
    ):
        lines = {ln.strip() for ln in str(content).splitlines() if ln.strip()}
        if batch in batches:
            added = lines - before.get(name, set())
            doomed.setdefault(name, set()).update(ln for ln in added if not ln.startswith("#"))
        before[name] = lines
    md_lines, revisions = found.kind("md_lines"), found.kind("revisions")
    for name, texts in sorted(doomed.items()):
        for text in sorted(texts):
            md_lines.add((name, text), f"{name}: {text}")
    for rid, name, content in schema.rows(m, "SELECT id, file, content FROM md_revisions"):
        if any(ln.strip() in doomed.get(name, ()) for ln in str(content).splitlines()):
            revisions.add(rid, f"{name} revision {rid}")


def erase_memory(
    m: apsw.Connection,
    match: Matcher,
    scope: Scope | None = None,
    turns_of: tuple[str, Sequence[int]] | None = None,
) -> Found:
    """Erase what :func:`find_memory` finds, in one transaction; what was erased."""
    with schema.write_txn(m):
        found = find_memory(m, match, scope, turns_of)
        ids = found.kind("learnings").ids
        key = forget_key(m)
        for lid in ids:
            # Recorded as retracted (``wsd forget L12`` twice says so), its key a keyed hash:
            # the retraction never holds the words.
            m.execute(
                "INSERT OR IGNORE INTO retractions (learning_id, type, content_key, batch_id,"
                " created_at, retracted_at, reason) SELECT id, type, ?, batch_id, created_at,"
                " ?, 'forgotten at the person''s request' FROM learnings WHERE id = ?",
                ("forgotten:" + mark_digest(key, stems(_content(m, lid))), time.time(), lid),
            )
            m.execute(
                "UPDATE learnings SET superseded_by = NULL, superseded_at = NULL"
                " WHERE superseded_by = ?",
                (lid,),
            )
            m.execute(
                "UPDATE pending_actions SET source_learning_id = NULL WHERE source_learning_id = ?",
                (lid,),
            )
            m.execute("DELETE FROM learnings WHERE id = ?", (lid,))
        for aid in found.kind("actions").ids:
            m.execute("DELETE FROM pending_actions WHERE id = ?", (aid,))
        doomed_lines: dict[str, set[str]] = {}
        for name, text in found.kind("md_lines").ids if scope is not None else ():
            doomed_lines.setdefault(name, set()).add(text)
        for rid in found.kind("revisions").ids:
            row = schema.first(m, "SELECT file, content FROM md_revisions WHERE id = ?", (rid,))
            name, content = (str(row[0]), str(row[1])) if row else ("", "")
            if scope is not None:
                kept, taken = _without_texts(content, doomed_lines.get(name, set()))
            else:
                kept, taken = _without_lines(content, match)
            m.execute(
                "UPDATE md_revisions SET content = ?, sha256 = ?, erased = erased + ? WHERE id = ?",
                (kept, sha256(kept), taken, rid),
            )
        for tid in found.kind("turns_indexed").ids:
            old = schema.first(m, "SELECT prompt, response, tools FROM turns WHERE id = ?", (tid,))
            assert old is not None
            new = tuple(match.cut(str(v)) for v in old)
            # The index holds the folded words (its view: memory migration 015).
            m.execute(
                "INSERT INTO turns_fts (turns_fts, rowid, prompt, response, tools)"
                " SELECT 'delete', id, prompt, response, tools FROM turns_folded WHERE id = ?",
                (tid,),
            )
            m.execute(
                "UPDATE turns SET prompt = ?, response = ?, tools = ? WHERE id = ?", (*new, tid)
            )
            m.execute(
                "INSERT INTO turns_fts (rowid, prompt, response, tools)"
                " SELECT id, prompt, response, tools FROM turns_folded WHERE id = ?",
                (tid,),
            )
            m.execute("DELETE FROM turn_vectors WHERE turn_id = ?", (tid,))
        if found.kind("learnings").ids or found.kind("turns_indexed").ids:
            # A reader's cache of the vectors by id (the semantic matcher's) starts afresh:
            # the erased rows' vectors are gone from its memory too.
            m.execute(
                "UPDATE meta SET value = lower(hex(randomblob(16))) WHERE key = 'vectors_epoch'"
            )
        for table, key in found.kind("memory_other").ids:
            columns = next(c for t, _k, c in _MEMORY_TEXT if t == table)
            _cut_row(m, table, (dict(_MEMORY_TEXT_KEYS)[table], key), columns, match)
    return found


def _content(m: apsw.Connection, learning_id: int) -> str:
    row = schema.first(m, "SELECT content FROM learnings WHERE id = ?", (learning_id,))
    return str(row[0]) if row else ""


_MEMORY_TEXT_KEYS = [(t, k) for t, k, _c in _MEMORY_TEXT]


def _without_lines(content: str, match: Matcher) -> tuple[str, int]:
    lines = content.splitlines()
    doomed = set(match.lines_holding(content))
    kept = [line for i, line in enumerate(lines) if i not in doomed]
    text = "\n".join(kept)
    if kept and content.endswith("\n"):
        text += "\n"
    return text, len(doomed)


def _without_texts(content: str, texts: set[str]) -> tuple[str, int]:
    lines = content.splitlines()
    kept = [line for line in lines if line.strip() not in texts]
    text = "\n".join(kept) + ("\n" if kept and content.endswith("\n") else "")
    return text, len(lines) - len(kept)


def _cut_row(
    conn: apsw.Connection,
    table: str,
    key: tuple[str, Any],
    columns: Sequence[str],
    match: Matcher,
    json_columns: Sequence[str] = (),
) -> None:
    row = schema.first(
        conn, f"SELECT {', '.join(columns)} FROM {table} WHERE {key[0]} = ?", (key[1],)
    )
    if row is None:
        return
    new = [
        (match.cut_json_text(v) if c in json_columns else match.cut(v)) if isinstance(v, str) else v
        for c, v in zip(columns, row, strict=True)
    ]
    sets = ", ".join(f"{c} = ?" for c in columns)
    conn.execute(f"UPDATE {table} SET {sets} WHERE {key[0]} = ?", (*new, key[1]))


# -- transcript.db ------------------------------------------------------------------------

#: (table, key column, text columns, of which JSON): every place transcript.db keeps text.
_TRANSCRIPT_TEXT: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "observations",
        "id",
        ("user_message", "tool_calls_json", "agent_response"),
        ("tool_calls_json",),
    ),
    ("events", "id", ("payload",), ("payload",)),
    ("message_batches", "id", ("base_json", "error"), ("base_json",)),
    ("message_batch_requests", "rowid", ("detail",), ()),
    ("charges", "id", ("note",), ()),
    ("flush_requests", "id", ("reason", "error"), ()),
    ("released_turns", "observation_id", ("reason",), ()),
    ("sessions", "id", ("cwd",), ()),
)


def find_transcript(
    t: apsw.Connection,
    match: Matcher,
    scope: Scope | None = None,
    only: Mapping[str, Sequence[Any]] | None = None,
) -> Found:
    """Every row of transcript.db holding the words (no write). A full scan, each text
    first searched for the words' roots (cheap), only a hit tokenized. With a ``scope``,
    only its turns and their raw events; with ``only``, only the rows of these keys of each
    kind (what an erasure wrote, read back)."""
    found = Found()
    for table, key, columns, json_columns in _TRANSCRIPT_TEXT:
        name = "turns" if table == "observations" else table
        kind = found.kind(name)
        if only is not None and not only.get(name):
            continue
        # The cheap look first, in SQLite: only rows that may hold the words come back.
        flag = _ENCODED_FLAG if _ENCODED_FLAG in schema.columns(t, table) else None
        maybe = [match.sql_maybe(c, flag) for c in columns]
        where = " WHERE (" + " OR ".join(sql for sql, _a in maybe) + ")"
        args: list[Any] = [a for _s, more in maybe for a in more]
        if scope is not None:
            if table not in _SCOPED:
                continue
            where += f" AND {_SCOPED[table]} IN (SELECT value FROM json_each(?))"
            args.append(json.dumps(sorted(scope.observations)))
        if only is not None:
            where += f" AND {key} IN (SELECT value FROM json_each(?))"
            args.append(json.dumps(sorted(only[name])))
        for row in t.execute(f"SELECT {key}, {', '.join(columns)} FROM {table}{where}", args):
            texts = [v for v in row[1:] if isinstance(v, str) and v and match.maybe_in(v)]
            if not texts:
                continue
            if any(
                _holds(match, v, c in json_columns)
                for c, v in zip(columns, row[1:], strict=True)
                if isinstance(v, str) and v
            ):
                kind.add(row[0], texts[0] if table == "observations" else f"{table} {row[0]}")
    return found


#: The column a row's writer marks a form hiding words' letters in (wsd.schema.encoded); a
#: backup taken before transcript migration 010 has none (its rows are looked at whole).
_ENCODED_FLAG = "encoded"

#: The kinds of item transcript.db's rows are counted as (a report's names).
TRANSCRIPT_KINDS = tuple("turns" if t == "observations" else t for t, *_r in _TRANSCRIPT_TEXT)

#: The column naming the turn, in the tables a turn scope reaches.
_SCOPED = {"observations": "id", "events": "observation_id"}


@dataclass(frozen=True)
class Scope:
    """Whole turns to forget (``wsd forget T88``, ``--session``, ``--between``): their
    observation ids in the transcript whose identity is ``identity``."""

    identity: str
    observations: frozenset[int]
    #: What the turns alone produced (learnings, md lines) goes too: a person's forget. The
    #: transcript retention keeps it (its learnings' source reads as erased).
    derived: bool = True


def _holds(match: Matcher, text: str, is_json: bool) -> bool:
    if is_json:
        try:
            return match.holds(json.loads(text))
        except ValueError:
            pass
    return match.holds(text)


def erase_transcript(
    t: apsw.Connection, match: Matcher, scope: Scope | None = None, now: float | None = None
) -> Found:
    """Cut every sentence holding the words in transcript.db, in one transaction."""
    now = time.time() if now is None else now
    with schema.write_txn(t):
        found = find_transcript(t, match, scope)
        if scope is not None:
            t.execute(
                "UPDATE observations SET erased_at = ? WHERE erased_at IS NULL AND id IN"
                " (SELECT value FROM json_each(?))",
                (now, json.dumps(sorted(scope.observations))),
            )
        for table, key, columns, json_columns in _TRANSCRIPT_TEXT:
            name = "turns" if table == "observations" else table
            for item in found.kind(name).ids:
                _cut_row(t, table, (key, item), columns, match, json_columns)
        # A request still out at the Bridge built on a turn that held the words: its result
        # is never applied (the curator may have paraphrased them); the turns it held go to
        # the prompt lane, curated again from what is left of them.
        cut = json.dumps(found.kind("turns").ids)
        for rid, custom_id in schema.rows(
            t,
            "SELECT DISTINCT r.message_batch_row, r.custom_id FROM message_batch_requests r,"
            " json_each(r.turn_ids) j WHERE r.outcome IS NULL AND j.value IN"
            " (SELECT value FROM json_each(?))",
            (cut,),
        ):
            message_batches.settle_request_in(
                t,
                rid,
                custom_id,
                message_batches.RELEASED,
                "its turns held words now forgotten",
                now,
            )
        # A Message Batch whose requests held the words (its turns, or the files it was
        # built on): its results are deleted at the Bridge once it has ended.
        t.execute(
            "UPDATE message_batches SET purge = 1 WHERE purge = 0 AND (id IN"
            " (SELECT value FROM json_each(?)) OR id IN (SELECT r.message_batch_row FROM"
            " message_batch_requests r, json_each(r.turn_ids) j WHERE j.value IN"
            " (SELECT value FROM json_each(?))))",
            (json.dumps(found.kind("message_batches").ids), cut),
        )
        at_bridge = found.kind("at_bridge")
        for (rid,) in schema.rows(t, "SELECT id FROM message_batches WHERE purge = 1"):
            at_bridge.add(rid, f"Message Batch {rid}")
    return found


# -- the bytes -----------------------------------------------------------------------------


def scrub(conn: apsw.Connection, fts_tables: Iterable[str]) -> None:
    """Leave no byte of what was erased: merge the FTS5 indexes (their old segments held the
    terms), and checkpoint the WAL into the database, truncating it. Run with
    ``secure_delete`` on (every connection is: :func:`wsd.schema.connect`), so a deleted
    cell and a freed page are zeroed; a database whose free pages predate that (meta
    ``free_pages_zeroed`` missing) is vacuumed once."""
    for table in fts_tables:
        with schema.write_txn(conn):
            conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
    if schema.first(conn, "SELECT 1 FROM meta WHERE key = 'free_pages_zeroed'") is None:
        conn.execute("VACUUM")
        with schema.write_txn(conn):
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('free_pages_zeroed', '1')"
            )
    checkpoint_truncate(conn)


def checkpoint_truncate(conn: apsw.Connection, seconds: float = 10.0) -> None:
    """Checkpoint the whole WAL and truncate it to zero bytes; a reader holding an old
    snapshot (a hook, the daemon) is waited for, up to ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        busy, _log, _done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone() or (1, 0, 0)
        if not busy:
            return
        if time.monotonic() > deadline:
            raise apsw.BusyError("the WAL could not be truncated: a reader held it")
        time.sleep(0.05)


def secure(conn: apsw.Connection) -> None:
    """Zero what this connection deletes (cells and pages)."""
    conn.execute("PRAGMA secure_delete = ON")


# -- the log, the journal and the marks ------------------------------------------------------


def forget_key(m: apsw.Connection) -> bytes:
    row = schema.first(m, "SELECT value FROM meta WHERE key = 'forget_key'")
    return bytes.fromhex(str(row[0])) if row else b""


def mark_digest(key: bytes, words: Sequence[str]) -> str:
    """The keyed hash that recognises a phrase (its stems, in order) without holding it."""
    return hmac.new(key, " ".join(words).encode("utf-8"), hashlib.sha256).hexdigest()


def journal_open(m: apsw.Connection, phrases: Any, by: str, now: float) -> int:
    """Record an erasure about to run (its words in the journal until it is done); its id."""
    with schema.write_txn(m):
        m.execute("INSERT INTO forgets (started_at, by) VALUES (?, ?)", (now, by))
        fid = int(m.last_insert_rowid())
        m.execute(
            "INSERT INTO forget_journal (forget_id, words_json) VALUES (?, ?)",
            (fid, json.dumps(phrases, ensure_ascii=False)),
        )
    return fid


def journal_pending(m: apsw.Connection) -> list[tuple[int, str, Any]]:
    """Erasures begun and not finished (a forget killed midway): (id, by, what: a list of
    phrases, or ``{"scope": ...}`` for whole turns)."""
    return [
        (int(fid), str(by), json.loads(words))
        for fid, by, words in schema.rows(
            m,
            "SELECT j.forget_id, f.by, j.words_json FROM forget_journal j"
            " JOIN forgets f ON f.id = j.forget_id ORDER BY j.forget_id",
        )
    ]


def drop_pending(m: apsw.Connection, match: Matcher) -> int:
    """In a copy (a backup): the forgets pending when it was taken whose words ``match``
    holds (a journal row, a person's request) deleted; how many. Nothing finishes them in
    the copy, and they spell out the very words just erased from it."""
    dropped = 0
    with schema.write_txn(m):
        for table, key, column in (
            ("forget_journal", "forget_id", "words_json"),
            ("forget_requests", "id", "words"),
        ):
            for row_id, words in schema.rows(m, f"SELECT {key}, {column} FROM {table}"):
                if match.holds(str(words)):
                    m.execute(f"DELETE FROM {table} WHERE {key} = ?", (row_id,))
                    dropped += 1
    return dropped


def journal_close(
    m: apsw.Connection,
    fid: int,
    phrases: Sequence[Sequence[str]],
    counts: dict[str, Any],
    now: float,
) -> None:
    """The erasure is done: its marks kept, its words gone from the journal, its counts
    logged."""
    key = forget_key(m)
    with schema.write_txn(m):
        for words in phrases:
            m.execute(
                "INSERT OR IGNORE INTO forget_marks (digest, words) VALUES (?, ?)",
                (mark_digest(key, words), len(words)),
            )
        m.execute("DELETE FROM forget_journal WHERE forget_id = ?", (fid,))
        m.execute(
            "UPDATE forgets SET finished_at = ?, counts_json = ? WHERE id = ?",
            (now, json.dumps(counts, sort_keys=True), fid),
        )


def marks(m: apsw.Connection) -> tuple[bytes, dict[int, set[str]]]:
    """The key and the marks of every forgotten phrase, by its number of words."""
    by_len: dict[int, set[str]] = {}
    for digest, n in schema.rows(m, "SELECT digest, words FROM forget_marks"):
        by_len.setdefault(int(n), set()).add(str(digest))
    return forget_key(m), by_len


def marked_phrases(key: bytes, by_len: dict[int, set[str]], text: str) -> list[str]:
    """The phrases of ``text`` (as written there) that a forget mark recognises: how a
    machine that holds only the marks finds the words it must erase in its own copies."""
    if not by_len or not text:
        return []
    tokens = spans(text)
    raw = text.encode("utf-8", "surrogatepass")
    words = [t for _, _, t in tokens]
    found: set[str] = set()
    for n, digests in by_len.items():
        for i in range(len(words) - n + 1):
            if mark_digest(key, words[i : i + n]) in digests:
                start, end = tokens[i][0], tokens[i + n - 1][1]
                found.add(raw[start:end].decode("utf-8", "replace"))
    return sorted(found)


def marked(key: bytes, by_len: dict[int, set[str]], text: str) -> bool:
    """True if ``text`` holds a forgotten phrase (its stems hashed, compared with the marks)."""
    if not by_len or not text:
        return False
    words = stems(text)
    for n, digests in by_len.items():
        for i in range(len(words) - n + 1):
            if mark_digest(key, words[i : i + n]) in digests:
                return True
    return False


class Marks:
    """The forgotten phrases as keyed hashes: what recognises them in new text (a curator
    reply, a Message Batch result that arrives after the forget) without holding them."""

    def __init__(self, key: bytes, by_len: dict[int, set[str]]) -> None:
        self.key, self.by_len = key, by_len

    @classmethod
    def load(cls, m: apsw.Connection) -> Marks:
        return cls(*marks(m))

    def __bool__(self) -> bool:
        return bool(self.by_len)

    def holds(self, text: str) -> bool:
        return marked(self.key, self.by_len, text)

    def without_lines(self, content: str) -> tuple[str, int]:
        """``content`` without the lines holding a forgotten phrase; how many went."""
        lines = content.splitlines()
        kept = [line for line in lines if not self.holds(line)]
        if len(kept) == len(lines):
            return content, 0
        text = "\n".join(kept) + ("\n" if kept and content.endswith("\n") else "")
        return text, len(lines) - len(kept)


def last_forget(m: apsw.Connection) -> dict[str, Any] | None:
    """The last erasure finished: when, by whom, how much (never what)."""
    row = schema.first(
        m,
        "SELECT id, started_at, finished_at, by, counts_json, still_json FROM forgets"
        " WHERE finished_at IS NOT NULL ORDER BY id DESC LIMIT 1",
    )
    if row is None:
        return None
    fid, started, finished, by, counts, still = row
    return {
        "id": fid,
        "started_at": started,
        "finished_at": finished,
        "by": by,
        "counts": json.loads(counts),
        # Every copy read back after the erasure (null: not read back), and what still held
        # the words, by kind.
        "read_back": still is not None,
        "still_holding": json.loads(still) if still is not None else None,
    }


def record_read_back(m: apsw.Connection, fid: int, still: dict[str, int]) -> None:
    """What the read-back after erasure ``fid`` still found (how many of each kind)."""
    with schema.write_txn(m):
        m.execute(
            "UPDATE forgets SET still_json = ? WHERE id = ?",
            (json.dumps(still, sort_keys=True), fid),
        )


def record_backup(m: apsw.Connection, path: str, now: float) -> None:
    """A backup taken (in transcript.db: memory.db may be deleted and re-derived)."""
    with schema.write_txn(m):
        m.execute(
            "INSERT INTO backups (path, taken_at) VALUES (?, ?)"
            " ON CONFLICT (path) DO UPDATE SET taken_at = excluded.taken_at",
            (path, now),
        )


def backups(m: apsw.Connection) -> list[tuple[str, float]]:
    return [(str(p), float(t)) for p, t in schema.rows(m, "SELECT path, taken_at FROM backups")]


def record_export(m: apsw.Connection, path: str, fmt: str, now: float) -> None:
    """An export written (``fmt``: jsonl, markdown), recorded before it is placed."""
    with schema.write_txn(m):
        m.execute(
            "INSERT INTO exports (path, format, taken_at) VALUES (?, ?, ?)"
            " ON CONFLICT (path) DO UPDATE SET format = excluded.format,"
            " taken_at = excluded.taken_at",
            (path, fmt, now),
        )


def exports(m: apsw.Connection) -> list[tuple[str, str, float]]:
    """Every export recorded: (path, format, when)."""
    return [
        (str(p), str(f), float(t))
        for p, f, t in schema.rows(m, "SELECT path, format, taken_at FROM exports ORDER BY path")
    ]


def backups_in(path: str) -> list[tuple[str, float]]:
    """The backups the transcript.db at ``path`` recorded, read only ([] when it cannot be
    read): ``wsd restore`` carries them into the restored one."""
    if not os.path.exists(path):
        return []
    try:
        conn = schema.connect(path, "transcript", readonly=True, create=False)
    except apsw.Error:
        return []
    try:
        return backups(conn)
    except apsw.Error:
        return []
    finally:
        conn.close()


@dataclass(frozen=True)
class Asked:
    """A request to forget from conversation, as recorded (``forget_requests``)."""

    id: int
    words: str
    #: new (to run), confirm (waiting for the person's yes), refused (kept to be told).
    status: str
    #: The status of the action that asks the person to confirm, if there is one.
    action: str | None
    #: Whether the person's own request said the words (else the person is asked first).
    said: bool
    #: Where the person asked (``T12``).
    asked_in: str
    #: Why a refused one was refused.
    reason: str | None
    created_at: float


def requests(m: apsw.Connection) -> list[Asked]:
    """Every request to forget from conversation, oldest first (the refused ones too)."""
    rows = schema.rows(
        m,
        "SELECT r.id, r.words, r.status, a.status, r.said, r.asked_in, r.reason, r.created_at"
        " FROM forget_requests r LEFT JOIN pending_actions a ON a.id = r.action_id"
        " ORDER BY r.id",
    )
    return [
        Asked(int(i), str(w), str(s), None if a is None else str(a), bool(d), str(n), r, float(c))
        for i, w, s, a, d, n, r, c in rows
    ]


def learnings_matching(m: apsw.Connection, match: Matcher) -> int:
    """How many learnings hold the words."""
    return sum(
        1
        for (content,) in m.execute(
            "SELECT l.content FROM learnings_fts f JOIN learnings l ON l.id = f.rowid"
            " WHERE learnings_fts MATCH ?",
            (match.fts_query(),),
        )
        if match.holds(content)
    )


def learnings_count(m: apsw.Connection) -> int:
    """How many learnings memory.db holds."""
    return int(schema.one(m, "SELECT count(*) FROM learnings")[0])


def workspace_paths(m: apsw.Connection, maybe: Callable[[str], bool]) -> list[str]:
    """Indexed workspace paths that may hold the words (their names)."""
    return [str(p) for (p,) in m.execute("SELECT path FROM workspace_files") if maybe(p)]


def path_words(path: str) -> str:
    """A workspace path as the words its name says ("kids/Wexbridge-school_2.pdf": kids
    Wexbridge school 2 pdf), for a forget's match."""
    return path.replace("/", " ").replace("-", " ").replace("_", " ")


def unlist_paths(m: apsw.Connection, paths: Sequence[str]) -> int:
    """Indexed workspace paths dropped from the file index (a forget of words their names
    hold; the files stay on disk, the person's); how many."""
    with schema.write_txn(m):
        for path in paths:
            m.execute("DELETE FROM workspace_files WHERE path = ?", (path,))
    return len(paths)


class Erasure(Facet):
    """``store.erasure``: the verbs of forgetting over one workspace's databases."""

    def find(
        self,
        match: Matcher,
        scope: Scope | None = None,
        only: Mapping[str, Sequence[Any]] | None = None,
    ) -> tuple[Found, Found]:
        """(memory.db, transcript.db) rows holding the words; nothing written. ``only``
        limits transcript.db to these keys of each kind (an erasure's rows, read back)."""
        with self._db.transcript(readonly=True) as t:
            tra = find_transcript(t, match, scope, only)
            turns_of = (schema.identity(t), list(tra.kind("turns").ids))
        with self._db.memory(readonly=True) as m:
            return find_memory(m, match, scope, turns_of), tra

    def erase(
        self,
        match: Matcher,
        say: Callable[[str], None] = lambda _s: None,
        scope: Scope | None = None,
    ) -> tuple[Found, Found]:
        """Erase the words from both databases and leave no byte of them (see module)."""
        with self._db.transcript() as t:
            secure(t)
            tra = erase_transcript(t, match, scope)
            say("transcript.db: erased")
            scrub(t, ())
            turns_of = (schema.identity(t), list(tra.kind("turns").ids))
        with self._db.memory() as m:
            secure(m)
            mem = erase_memory(m, match, scope, turns_of)
            say("memory.db: erased")
            scrub(m, ("learnings_fts", "turns_fts"))
        return mem, tra

    def drop_pending(self, match: Matcher) -> int:
        """See :func:`drop_pending` (for a backup's copy only)."""
        with self._db.memory() as m:
            secure(m)
            dropped = drop_pending(m, match)
            scrub(m, ())
            return dropped

    journal_open = uses("memory", journal_open)
    journal_pending = reads("memory", journal_pending)

    def journal_close(
        self, fid: int, phrases: Sequence[Sequence[str]], counts: dict[str, Any], now: float
    ) -> None:
        with self._db.memory() as m:
            secure(m)
            journal_close(m, fid, phrases, counts, now)
            checkpoint_truncate(m)

    def scope(
        self,
        *,
        index_ids: Sequence[int] = (),
        observation_ids: Sequence[int] = (),
        session: str | None = None,
        between: tuple[float, float] | None = None,
    ) -> Scope:
        """The turns a ``wsd forget T88 / N12 / --session / --between`` names (in the
        transcript as it is now); LookupError naming an id that is no turn."""
        with self._db.transcript(readonly=True) as t:
            identity = schema.identity(t)
            wanted: set[int] = set()
            for oid in observation_ids:
                if schema.first(t, "SELECT 1 FROM observations WHERE id = ?", (oid,)) is None:
                    raise LookupError(f"no turn N{oid}")
                wanted.add(oid)
            if session is not None:
                wanted |= {
                    int(o)
                    for (o,) in schema.rows(
                        t, "SELECT id FROM observations WHERE session_id = ?", (session,)
                    )
                }
            if between is not None:
                wanted |= {
                    int(o)
                    for (o,) in schema.rows(
                        t, "SELECT id FROM observations WHERE timestamp BETWEEN ? AND ?", between
                    )
                }
        with self._db.memory(readonly=True) as m:
            for tid in index_ids:
                row = schema.first(
                    m,
                    "SELECT observation_id FROM turns WHERE id = ? AND transcript_identity = ?",
                    (tid, identity),
                )
                if row is None:
                    raise LookupError(f"no turn T{tid} (see `wsd search`)")
                wanted.add(int(row[0]))
        return Scope(identity, frozenset(wanted))

    def waiting(self) -> tuple[bool, bool]:
        """(an erasure is unfinished, a request from conversation waits): one look a pass."""
        with self._db.memory(readonly=True) as m:
            row = schema.first(
                m,
                "SELECT EXISTS (SELECT 1 FROM forget_journal),"
                " EXISTS (SELECT 1 FROM forget_requests WHERE status != 'refused')",
            )
        return (bool(row[0]), bool(row[1])) if row else (False, False)

    requests = reads("memory", requests)

    def ask_to_confirm(self, request_id: int, text: str, now: float) -> None:
        """Open the pending action that asks the person to confirm a large FORGET."""
        with self._db.memory() as m, schema.write_txn(m):
            m.execute(
                "INSERT INTO pending_actions (created_at, updated_at, content, priority,"
                " source, dedup_key) VALUES (?, ?, ?, 1, 'forget', ?)",
                (now, now, text, f"forget:{request_id}"),
            )
            m.execute(
                "UPDATE forget_requests SET status = 'confirm', action_id = ? WHERE id = ?",
                (m.last_insert_rowid(), request_id),
            )

    def drop_request(self, request_id: int) -> None:
        """A request run or declined: gone (its words zeroed)."""
        with self._db.memory() as m:
            secure(m)
            with schema.write_txn(m):
                m.execute("DELETE FROM forget_requests WHERE id = ?", (request_id,))

    def retention_scope(self, before: float, limit: int = 5000) -> Scope:
        """Curated turns older than ``before`` not erased yet (the oldest ``limit``): what
        the transcript retention erases next, keeping what they taught."""
        with self._db.transcript(readonly=True) as t:
            rows = schema.rows(
                t,
                "SELECT id FROM observations WHERE processed = 1 AND erased_at IS NULL"
                " AND timestamp < ? ORDER BY timestamp LIMIT ?",
                (before, limit),
            )
            return Scope(schema.identity(t), frozenset(int(r[0]) for r in rows), derived=False)

    def erased_turns(self) -> int:
        """Turns erased whole (a forget, the retention): no rebuild can read them again."""
        with self._db.transcript(readonly=True) as t:
            row = schema.first(t, "SELECT count(*) FROM observations WHERE erased_at IS NOT NULL")
        return int(row[0]) if row else 0

    def started_at(self, forget_id: int) -> float | None:
        with self._db.memory(readonly=True) as m:
            row = schema.first(m, "SELECT started_at FROM forgets WHERE id = ?", (forget_id,))
        return None if row is None else float(row[0])

    marks = reads("memory", marks)
    last_forget = reads("memory", last_forget)
    record_read_back = uses("memory", record_read_back)
    record_backup = uses("transcript", record_backup)
    backups = reads("transcript", backups)
    record_export = uses("transcript", record_export)
    exports = reads("transcript", exports)

    @staticmethod
    def backups_in(path: str) -> list[tuple[str, float]]:
        """The backups another transcript.db recorded (``wsd restore`` carries them over)."""
        return backups_in(path)

    learnings_matching = reads("memory", learnings_matching)

    learnings_count = reads("memory", learnings_count)

    workspace_paths = reads("memory", workspace_paths)
    unlist_paths = uses("memory", unlist_paths)
