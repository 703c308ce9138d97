"""References for the latency rows: what the same data costs with nothing of ours in the way.

These machines differ by 2x (issue 36: search p95 9.5 ms on one, 16.3 ms on another, same
tree), so a figure in milliseconds cannot tell a regression from a slower box. Each latency
row is held to a ratio: our figure over a reference measured in the same run, on the same
data, by the bare SQLite (or Python) operation it cannot do without: a bare FTS5 query, the
files and rows read raw, a transaction of the same size, a bare WAL insert.

Ours and the reference are timed alternately (:func:`alternated`), so the load of a shared
machine falls on both alike; the milliseconds stay in the note.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import apsw

from bench import Row, percentile
from wsd import schema
from wsd.daemon.memory.search.text import STOP_WORDS


def alternated(
    items: Sequence[Any],
    ours: Callable[[Any], object],
    floor: Callable[[Any], object],
    warm: int = 20,
) -> tuple[list[float], list[float]]:
    """Milliseconds of ``ours(item)`` and ``floor(item)`` for each item, one after the other
    (the first ``warm`` items of each run untimed first, to warm the page cache)."""
    for item in items[:warm]:
        ours(item)
        floor(item)
    mine, bare = [], []
    for item in items:
        t0 = time.perf_counter()
        ours(item)
        t1 = time.perf_counter()
        floor(item)
        t2 = time.perf_counter()
        mine.append((t1 - t0) * 1000)
        bare.append((t2 - t1) * 1000)
    return mine, bare


def ratio_row(
    name: str,
    mine: Sequence[float],
    bare: Sequence[float],
    target: float | None,
    reference: str,
    pct: float = 95,
    note: str = "",
) -> Row:
    """``name``: our ``pct`` percentile over the reference's, held to ``<= target`` (None:
    shown, not held); the milliseconds of both in the note."""
    ours, floor = percentile(mine, pct), percentile(bare, pct)
    ratio = ours / floor if floor > 0 else float("nan")
    label = "p50" if pct == 50 else f"p{pct:g}"
    text = f"{ours:.3g} ms / {floor:.3g} ms ({reference}, {label}, n={len(mine)})"
    other = 95 if pct == 50 else 50  # the other figure, as a note
    mid, mid_floor = percentile(mine, other), percentile(bare, other)
    text += f"; p{other} {mid:.3g} / {mid_floor:.3g} ms = {mid / mid_floor:.3g}x"
    if note:
        text += f"; {note}"
    if target is None:
        return Row(name, ratio, "x", "-", None, text)
    return Row(name, ratio, "x", f"<= {target:g}", ratio <= target, text)


# -- the references -------------------------------------------------------------------------


def warm_file(path: str) -> None:
    """Read ``path`` once, whole, so ours and the reference both start from the page cache
    (this VM reclaims cold pages: the first full run of issue 36 found the search ratios
    a quarter higher than runs made alone)."""
    with open(path, "rb") as fh:
        while fh.read(1 << 20):
            pass


def fts_expression(question: str) -> str:
    """The question's content words, each quoted, ORed: a bare FTS5 MATCH of it."""
    words = []
    for raw in question.split():
        word = "".join(ch for ch in raw.lower() if ch.isalnum())
        if word and word not in STOP_WORDS and word not in words:
            words.append(word)
    return " OR ".join(f'"{w}"' for w in words) or '""'


def bare_fts(path: str, limit: int = 10) -> Callable[[str], object]:
    """A bare ``MATCH ... ORDER BY bm25`` over learnings_fts of ``path``, connection opened
    and closed each time as search_memory does."""

    def query(question: str) -> object:
        conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return conn.execute(
                "SELECT rowid FROM learnings_fts WHERE learnings_fts MATCH ?"
                " ORDER BY bm25(learnings_fts) LIMIT ?",
                (fts_expression(question), limit),
            ).fetchall()
        finally:
            conn.close()

    return query


def raw_read(md_paths: Sequence[str], memory_db: str, transcript_db: str) -> Callable[[], object]:
    """The boot context's input read raw: each md file's bytes, the 50 newest learnings, the
    newest 20 turns not curated and how many there are; no formatting, no checks."""

    def read() -> object:
        got: list[object] = []
        for path in md_paths:
            with open(path, "rb") as fh:
                got.append(fh.read())
        conn = apsw.Connection(memory_db, flags=apsw.SQLITE_OPEN_READONLY)
        try:
            got += conn.execute(
                "SELECT type, content, created_at FROM learnings ORDER BY id DESC LIMIT 50"
            ).fetchall()
        finally:
            conn.close()
        conn = apsw.Connection(transcript_db, flags=apsw.SQLITE_OPEN_READONLY)
        try:
            got += conn.execute(
                "SELECT timestamp, user_message FROM observations WHERE processed = 0"
                " ORDER BY id DESC LIMIT 20"
            ).fetchall()
            got += conn.execute(
                "SELECT count(*), min(id) FROM observations WHERE processed = 0"
            ).fetchall()
        finally:
            conn.close()
        return got

    return read


class CommitFloor:
    """The commits a curated batch cannot avoid, timed between the drain's passes (so the
    load of the machine falls on both alike): ``rows`` learnings inserted in one transaction
    of a memory.db (its FTS triggers firing, as the ledger's do), then ``rows`` turns marked
    in one of a transcript.db, each on a fresh connection with the project's pragmas, as a
    pass opens them. Scratch databases of the same schemas beside the drained ones: the
    drain's own must hold only what it curated."""

    TEXT = "a learning of typical length about a task the agent did for the person " * 2

    def __init__(self, folder: str, rows: int) -> None:
        self.memory_db = os.path.join(folder, "floor-memory.db")
        self.transcript_db = os.path.join(folder, "floor-transcript.db")
        self.rows = rows
        self.samples: list[float] = []
        for path, kind in ((self.memory_db, "memory"), (self.transcript_db, "transcript")):
            conn = schema.connect(path, kind)  # type: ignore[arg-type]
            try:
                schema.migrate(conn, kind, path)  # type: ignore[arg-type]
            finally:
                conn.close()
        conn = schema.connect(self.transcript_db, "transcript")
        try:
            with schema.write_txn(conn):
                conn.execute(
                    "INSERT INTO sessions (id, started_at, last_event_at) VALUES ('floor', 0, 0)"
                )
                conn.executemany(
                    "INSERT INTO observations (timestamp, session_id, sequence_num,"
                    " user_message, closed_by) VALUES (0, 'floor', ?, ?, 'stop')",
                    [(k, self.TEXT) for k in range(rows)],
                )
        finally:
            conn.close()

    def once(self) -> None:
        """One batch's commits, timed (milliseconds appended to ``samples``)."""
        n = len(self.samples)
        t0 = time.perf_counter()
        conn = schema.connect(self.memory_db, "memory")
        try:
            with schema.write_txn(conn):
                conn.executemany(
                    "INSERT INTO learnings (created_at, session_id, type, content, content_key)"
                    " VALUES (?, 'floor', 'fact', ?, ?)",
                    [
                        (time.time(), f"{self.TEXT} {n}.{k}", f"floor:{n}:{k}")
                        for k in range(self.rows)
                    ],
                )
        finally:
            conn.close()
        conn = schema.connect(self.transcript_db, "transcript")
        try:
            with schema.write_txn(conn):
                conn.execute("UPDATE observations SET processed = ?", (1 - n % 2,))
        finally:
            conn.close()
        self.samples.append((time.perf_counter() - t0) * 1000)


class BareInsert:
    """One autocommit INSERT of a row of the event's size into a WAL table with the
    transcript's pragmas, on a connection kept open: the floor of writing one event."""

    def __init__(self, folder: str) -> None:
        path = os.path.join(folder, "bare-insert.db")
        self.conn = schema.connect(path, "transcript")
        self.conn.execute("CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, body TEXT)")

    def __call__(self, body: str) -> None:
        self.conn.execute("INSERT INTO rows (body) VALUES (?)", (body,))

    def close(self) -> None:
        self.conn.close()
