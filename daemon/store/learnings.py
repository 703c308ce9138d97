"""The learnings' SQL verbs outside curation: ``wsd import``, the learnings a new session and
the curator are shown, and ``wsd forget``.

Each verb takes an open connection (the :class:`Learnings` facet at the end,
``store.learnings``, opens them, one per unit of work):

* an import parses JSON lines (:func:`parse_lines`); each bad line is reported with its line
  number and skipped, the good ones are kept (:func:`add_imported`, one transaction).
* :func:`recent_learnings` reads what a new session starts with, :func:`related_learnings`
  what the curator is shown beside a batch.
* :func:`retract` forgets a learning for good.
"""

from __future__ import annotations

import json
import os
import re
import stat
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import apsw

from wsd import schema
from wsd.daemon.runtime.dates import parse_since
from wsd.daemon.runtime.fsio import UnsafeFile, kind_of
from wsd.daemon.store.connections import Connections
from wsd.daemon.store.records import LEARNING_TYPES
from wsd.daemon.store.transfer import Incoming, LearningIn, import_incoming
from wsd.redact import clean_text

#: An imported learning may be longer than a curated one (1,000): it may be a whole note.
IMPORT_MAX_CHARS = 4000


# -- import -----------------------------------------------------------------------------------


@dataclass
class ImportReport:
    """What ``import_jsonl`` did: learnings added, exact duplicates skipped, bad lines."""

    added: int = 0
    duplicates: int = 0
    errors: list[tuple[int, str]] = field(default_factory=list)
    #: Turn ids named by imported learnings that the turn index does not hold.
    unknown_turns: list[int] = field(default_factory=list)


_IMPORT_KEYS = ("type", "content", "created_at", "session_id", "confidence", "ref", "turns")
#: Turns one imported learning may name as its sources.
IMPORT_MAX_TURNS = 100


def parse_import_line(raw: str | dict[str, Any]) -> LearningIn:
    """One JSON line (or the object it holds) as a learning to import; raises ValueError
    saying what is wrong."""
    try:
        data = json.loads(raw) if isinstance(raw, str) else raw
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
    if not content:  # it was all markup the capture hooks strip (a <workspace-memory> echo)
        raise ValueError("content holds nothing once cleaned")
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
    turns = _import_turns(data.get("turns"))
    return LearningIn(
        type=kind,
        content=content,
        created_at=created_at,
        ref=None if ref is None else clean_text(ref, 1000),
        session_id=None if session is None else clean_text(str(session), 256),
        confidence=float(confidence),
        turns=turns,
    )


def _import_turns(value: Any) -> tuple[int, ...]:
    """An import line's ``turns``: the turns (``T12`` or 12, as search_memory names them) the
    learning came from; ValueError saying what is wrong."""
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > IMPORT_MAX_TURNS:
        raise ValueError(f"turns must be a list of at most {IMPORT_MAX_TURNS} turn ids")
    out = []
    for item in value:
        text = str(item) if isinstance(item, int) and not isinstance(item, bool) else item
        match = re.fullmatch(r"[Tt]?([0-9]{1,18})", text) if isinstance(text, str) else None
        if match is None or int(match.group(1)) < 1:
            raise ValueError(f"turns: {str(item)[:40]!r} is not a turn id (T12 or 12)")
        out.append(int(match.group(1)))
    return tuple(dict.fromkeys(out))


def parse_lines(lines: Iterable[str | bytes]) -> tuple[list[LearningIn], ImportReport]:
    """JSON lines as learnings to import (see :func:`parse_import_line`), and a report holding the
    bad lines, each with its number."""
    report = ImportReport()
    rows: list[LearningIn] = []
    for number, raw in enumerate(lines, start=1):
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError:
            report.errors.append((number, "not valid UTF-8"))
            continue
        if not text.strip():
            continue
        try:
            rows.append(parse_import_line(text))
        except ValueError as exc:
            report.errors.append((number, str(exc)))
    return rows, report


def add_imported(m: apsw.Connection, rows: list[LearningIn], report: ImportReport) -> None:
    """Store the rows of :func:`parse_lines` in one transaction (as every import is stored:
    :func:`wsd.daemon.store.transfer.import_incoming`), counting in ``report`` the learnings
    added and the duplicates skipped (a retracted or forgotten one counts as skipped too)."""
    added, _changed = import_incoming(m, Incoming(learnings=rows), time.time(), line_limits={})
    report.added += added.learnings
    report.duplicates += added.duplicates + added.retracted + added.forgotten
    report.unknown_turns.extend(added.unknown_turns)


def file_lines(path: str) -> Iterator[bytes]:
    """The lines of a JSON-lines file, without their line ends (``wsd import FILE``).

    Only a regular file: a FIFO with no writer would hold the command forever (found by
    tests/test_cli_misuse.py), a device never ends. Raises :class:`UnsafeFile` for those,
    saying how to import from a pipe (``-``, standard input, where waiting is the shell's).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise UnsafeFile(f"{path} is a folder: give a JSON-lines file")
        if not stat.S_ISREG(mode):
            raise UnsafeFile(
                f"{path} is {kind_of(mode)}, not a file: to import from a pipe, give -"
                " and redirect it (wsd import - < PIPE)"
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as fh:
        for line in fh:
            yield line.rstrip(b"\r\n")


# -- what a new session and the curator are shown ---------------------------------------------


def recent_learnings(m: apsw.Connection, since: float, limit: int) -> list[tuple[str, float, str]]:
    """(type, created_at, content) of current learnings since ``since``, newest first
    (a superseded learning is left out: its successor says it better)."""
    rows = schema.rows(
        m,
        "SELECT type, created_at, content FROM learnings WHERE created_at >= ?"
        " AND superseded_by IS NULL ORDER BY created_at DESC, id DESC LIMIT ?",
        (since, max(0, limit)),
    )
    return [(str(kind), float(ts), str(text)) for kind, ts, text in rows]


def learnings(m: apsw.Connection) -> list[tuple[str, str]]:
    """Every stored learning as (type, content), oldest first (the demo prints them)."""
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


def related_query(text: str, words: int) -> str | None:
    """The FTS5 query of :func:`related_learnings` for ``text``: its ``words`` most frequent
    words (the common ones left out), or None if it has none."""
    counts: dict[str, int] = {}
    for word in _WORD.findall(text.lower()):
        if word not in _COMMON:
            counts[word] = counts.get(word, 0) + 1
    top = sorted(counts, key=lambda w: (-counts[w], w))[:words]
    return " OR ".join(f'"{w}"' for w in top) if top else None


def related_learnings(
    m: apsw.Connection, query: str, limit: int
) -> list[tuple[int, str, float, str]]:
    """Current (not superseded) learnings matching ``query`` (of :func:`related_query`), best
    first, as (id, type, created_at, content): plain FTS5 BM25.

    What the curator is shown so it can say a new learning replaces an old one; plain BM25
    on purpose: it reads the database it is given (a rebuild's aside database too).
    """
    rows = schema.rows(
        m,
        "SELECT l.id, l.type, l.created_at, l.content FROM learnings_fts f"
        " JOIN learnings l ON l.id = f.rowid"
        " WHERE learnings_fts MATCH ? AND l.superseded_by IS NULL"
        " ORDER BY bm25(learnings_fts) LIMIT ?",
        (query, limit),
    )
    return [(int(i), str(k), float(ts), str(c)) for i, k, ts, c in rows]


def retracted_at(m: apsw.Connection, learning_id: int) -> float | None:
    """When learning ``learning_id`` was retracted (``wsd forget``), or None if it was not."""
    row = schema.first(
        m, "SELECT max(retracted_at) FROM retractions WHERE learning_id = ?", (learning_id,)
    )
    return None if row is None or row[0] is None else float(row[0])


def retract(m: apsw.Connection, learning_id: int, now: float, reason: str | None) -> bool:
    """``wsd forget``: delete a learning (and so its FTS entry and source links), keeping in
    ``retractions`` that it was, when, and its key, so it is never stored again (by curation
    or a rebuild). False if there is no such learning."""
    with schema.write_txn(m):
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


class Learnings:
    """``wsd import`` and ``wsd forget``, and the learnings a new session and the curator
    are shown (``store.learnings``)."""

    def __init__(self, db: Connections) -> None:
        self._db = db

    def import_lines(self, lines: Iterable[str | bytes]) -> ImportReport:
        """Import learnings from JSON lines (see :func:`parse_import_line`): each bad
        line is reported with its number and skipped, the good ones kept in one transaction."""
        rows, report = parse_lines(lines)
        with self._db.memory() as m:
            add_imported(m, rows, report)
        return report

    def import_jsonl(self, path: str) -> ImportReport:
        """Import a JSON-lines file (``wsd import``)."""
        return self.import_lines(file_lines(path))

    def recent_learnings(self, since: float, limit: int) -> list[tuple[str, float, str]]:
        """(type, created_at, content) of current learnings since ``since``, newest first
        (read-only: the boot context never writes)."""
        with self._db.memory(readonly=True) as m:
            return recent_learnings(m, since, limit)

    def learnings(self) -> list[tuple[str, str]]:
        """Every stored learning as (type, content), oldest first (the demo prints them)."""
        with self._db.memory(readonly=True) as m:
            return learnings(m)

    def related_learnings(
        self, text: str, limit: int, words: int = 40
    ) -> list[tuple[int, str, float, str]]:
        """Current learnings most related to ``text``, best first, as (id, type, created_at,
        content): plain FTS5 BM25 over its ``words`` most frequent words."""
        query = related_query(text, words)
        if query is None or limit <= 0:
            return []
        with self._db.memory(readonly=True) as m:
            return related_learnings(m, query, limit)

    def retracted_at(self, learning_id: int) -> float | None:
        """When learning ``learning_id`` was retracted (``wsd forget``), or None if it was not."""
        with self._db.memory(readonly=True) as m:
            return retracted_at(m, learning_id)

    def content_of(self, learning_id: int) -> str | None:
        """Learning ``learning_id``'s statement, or None if there is no such learning."""
        with self._db.memory(readonly=True) as m:
            row = schema.first(m, "SELECT content FROM learnings WHERE id = ?", (learning_id,))
        return None if row is None else str(row[0])

    def retract(self, learning_id: int, now: float, reason: str | None = None) -> bool:
        """``wsd forget`` (see :func:`retract`); False if there is no such learning."""
        with self._db.memory() as m:
            return retract(m, learning_id, now, reason)
