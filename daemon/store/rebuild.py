"""The SQL of ``wsd rebuild``: a memory.db built aside, what it carries over, and the swap.

The aside database (``memory.rebuild.db``) is a :class:`~wsd.daemon.store.store.Store`
whose memory.db path is redirected, so the loop's own verbs (``commit_batch``, the turn
index) fill it. What curation does not produce is carried over from the live database:
imported learnings, non-curator actions and revisions, daemon state, the watcher's tables,
and the closed status of curator actions (matched by their de-duplication key).

The swap copies the aside database over the live one with SQLite's backup API, in one
write transaction: readers see the old database or the new one, never a mix, and the WAL
stays consistent (renaming a file under a WAL database would not be safe).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import apsw

from wsd import schema
from wsd.daemon.runtime.pause import pause_path, pause_requested
from wsd.daemon.store import actions, learnings
from wsd.daemon.store.connections import Connections, Opener
from wsd.daemon.store.store import Store
from wsd.daemon.store.workspace import CANVAS_CURSOR_KEY
from wsd.schema.layout import Layout

ASIDE_NAME = "memory.rebuild.db"
#: Tables (or their rows) that curation does not produce, copied from the live database.
CARRY_SQL = (
    "INSERT INTO main.meta SELECT * FROM live.meta WHERE key NOT IN (SELECT key FROM main.meta)",
    "INSERT INTO main.state SELECT * FROM live.state",
    "INSERT INTO main.workspace_files SELECT * FROM live.workspace_files",
    "INSERT INTO main.canvas_cards SELECT * FROM live.canvas_cards",
    "INSERT INTO main.learnings SELECT * FROM live.learnings WHERE batch_id IS NULL",
    # The turns an imported learning names (its id is kept above).
    "INSERT INTO main.learning_sources SELECT * FROM live.learning_sources WHERE learning_id IN"
    " (SELECT id FROM live.learnings WHERE batch_id IS NULL)",
    "INSERT INTO main.retractions SELECT * FROM live.retractions",
    # What was forgotten stays forgotten (issue 33): the marks and their key, the log.
    "UPDATE main.meta SET value = (SELECT value FROM live.meta WHERE key = 'forget_key')"
    " WHERE key = 'forget_key' AND EXISTS (SELECT 1 FROM live.meta WHERE key = 'forget_key')",
    "INSERT INTO main.forget_marks SELECT * FROM live.forget_marks",
    "INSERT INTO main.forgets SELECT * FROM live.forgets",
    "INSERT INTO main.forget_journal SELECT * FROM live.forget_journal",
)


#: Rows the watcher writes while a rebuild runs (it holds them back while the pause file is
#: live, but one write may land between the pause and the first carry): carried again
#: right before the swap, so the swap loses none of them.
RECARRY_SQL = (
    "DELETE FROM main.workspace_files",
    "INSERT INTO main.workspace_files SELECT * FROM live.workspace_files",
    "DELETE FROM main.canvas_cards",
    "INSERT INTO main.canvas_cards SELECT * FROM live.canvas_cards",
    f"DELETE FROM main.state WHERE key = '{CANVAS_CURSOR_KEY}'",
    f"INSERT INTO main.state SELECT * FROM live.state WHERE key = '{CANVAS_CURSOR_KEY}'",
)


class MemoryReplaced(Exception):
    """The live memory.db is no longer the database the rebuild started from: deleted and
    recreated, or restored from a backup, while the rebuild ran (its identity differs)."""

    def __init__(self, expected: str, found: str) -> None:
        super().__init__(f"memory.db {found or '(no identity)'} is not {expected}")
        self.expected = expected
        self.found = found


def check_identity(m: apsw.Connection, expected: str) -> None:
    """Raise :class:`MemoryReplaced` unless ``m``'s memory.db carries ``expected``."""
    found = schema.identity(m)
    if found != expected:
        raise MemoryReplaced(expected, found)


def aside_path(layout: Layout) -> str:
    return os.path.join(layout.memory_dir, ASIDE_NAME)


def leftovers(layout: Layout) -> list[str]:
    """Files a rebuild that died left behind (none while a rebuild is alive)."""
    if pause_requested(layout):
        return []
    base = aside_path(layout)
    paths = [base + s for s in ("", "-wal", "-shm", "-journal")] + [pause_path(layout)]
    return [p for p in paths if os.path.lexists(p)]


def open_aside(layout: Layout) -> Store:
    """A fresh aside database (any old one removed), migrated, with the live database's
    uncurated rows carried over; returned as a Store that writes into it."""
    path = aside_path(layout)
    remove(path)
    with _aside(layout).memory() as m:
        schema.migrate(m, "memory", path)
        with _attached(m, layout.memory_db), schema.write_txn(m):
            for sql in CARRY_SQL:
                m.execute(sql)
            actions.carry_uncurated(m)
    return Store(layout, opener=_redirect(layout))


def _redirect(layout: Layout) -> Opener:
    """``schema.connect`` with the live memory.db's path redirected to the aside database."""
    live, path = layout.memory_db, aside_path(layout)

    def opener(target: str, kind: schema.Kind, **kwargs: Any) -> apsw.Connection:
        return schema.connect(path if target == live else target, kind, **kwargs)

    return opener


def _aside(layout: Layout) -> Connections:
    """Connections whose memory.db is the aside database."""
    return Connections(layout, opener=_redirect(layout))


#: What people and the CLI wrote to the live database while the rebuild ran (``wsd import``,
#: ``wsd forget``, a watcher action): carried right before the swap. (A person's revisions,
#: a hand edit or a restore, are replayed as changes by the rebuild itself: see
#: :mod:`wsd.daemon.curation.rebuild.replay`.)
LATE_CARRY_SQL = (
    # Learnings imported meanwhile (the rebuild may have curated the same one: kept once).
    "INSERT INTO main.learnings (created_at, session_id, type, content, content_key,"
    " source_observation_id, confidence, batch_id, ref)"
    " SELECT created_at, session_id, type, content, content_key, source_observation_id,"
    " confidence, batch_id, ref FROM live.learnings WHERE batch_id IS NULL"
    " AND content_key NOT IN (SELECT content_key FROM main.learnings) ORDER BY id",
    # ... and the turns they name (ids differ: matched by their key).
    "INSERT OR IGNORE INTO main.learning_sources (learning_id, transcript_identity,"
    " observation_id, cited) SELECT m.id, s.transcript_identity, s.observation_id, s.cited"
    " FROM live.learning_sources s JOIN live.learnings l ON l.id = s.learning_id"
    " JOIN main.learnings m ON m.content_key = l.content_key AND m.batch_id IS NULL"
    " WHERE l.batch_id IS NULL",
    # Forgotten meanwhile: recorded, and gone from the rebuilt learnings as wsd forget does.
    "INSERT INTO main.retractions SELECT * FROM live.retractions"
    " WHERE learning_id NOT IN (SELECT learning_id FROM main.retractions)",
    "UPDATE main.learnings SET superseded_by = NULL, superseded_at = NULL"
    " WHERE superseded_by IN (SELECT id FROM main.learnings"
    "   WHERE content_key IN (SELECT content_key FROM main.retractions))",
    "UPDATE main.pending_actions SET source_learning_id = NULL WHERE source_learning_id IN"
    " (SELECT id FROM main.learnings WHERE content_key IN"
    "   (SELECT content_key FROM main.retractions))",
    "DELETE FROM main.learnings WHERE content_key IN (SELECT content_key FROM main.retractions)",
)


#: The sentence vectors of what the rebuild made again word for word (a learning with the
#: same key, a turn with the same id), taken from the live database: the rebuild need not
#: embed them again. The daemon embeds the rest in the background after the swap (found by
#: an attack: a rebuild of 329 turns took 142 s, 134.5 s of it embedding, with curation
#: paused all along).
VECTOR_SQL = (
    "INSERT OR IGNORE INTO main.learning_vectors (learning_id, vector)"
    " SELECT m.id, v.vector FROM main.learnings m"
    " JOIN live.learnings l ON l.content_key = m.content_key"
    " JOIN live.learning_vectors v ON v.learning_id = l.id",
    "INSERT OR IGNORE INTO main.turn_vectors (turn_id, vector)"
    " SELECT m.id, v.vector FROM main.turns m JOIN live.turns l"
    " ON l.transcript_identity = m.transcript_identity AND l.observation_id = m.observation_id"
    " JOIN live.turn_vectors v ON v.turn_id = l.id",
    # Ids changed: a reader's cache of the vectors by id must start afresh.
    "UPDATE main.meta SET value = lower(hex(randomblob(16))) WHERE key = 'vectors_epoch'",
)


def finish(layout: Layout) -> None:
    """Carry what the live database gained meanwhile (:data:`LATE_CARRY_SQL`), the live
    closed status of curator actions, the vectors it can reuse and the watcher's rows again
    into the aside database, and leave no WAL behind (the swap follows at once)."""
    with _aside(layout).memory() as m:
        with _attached(m, layout.memory_db), schema.write_txn(m):
            for sql in LATE_CARRY_SQL:
                m.execute(sql)
            actions.carry_late(m)
            actions.carry_closed_status(m)
            actions.keep_ids(m)
            learnings.keep_ids(m)
            for sql in VECTOR_SQL:
                m.execute(sql)
            for sql in RECARRY_SQL:
                m.execute(sql)
        m.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def swap(layout: Layout, identity: str) -> None:
    """Copy the aside database over the live one in a single write transaction, if the live
    one is still the database with this identity (the one the rebuild started from; else
    :class:`MemoryReplaced`, and the live one is left as it is).

    Found by the soak (issue 30): memory.db deleted mid-rebuild, the restarted daemon
    adopted the md files into a fresh one with a person's edits, and the swap put the
    rebuild over it, edits and all. The check is on the connection that then copies (a
    memory.db deleted after it is not the file this connection writes to)."""
    with _aside(layout).memory(readonly=True) as source, Connections(layout).memory() as dest:
        check_identity(dest, identity)
        with dest.backup("main", source, "main") as backup:
            backup.step(-1)
        dest.execute("PRAGMA wal_checkpoint(PASSIVE)")


def remove(path: str) -> None:
    """Delete a database file and its WAL, shared-memory and journal files."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + suffix)


@contextmanager
def _attached(conn: apsw.Connection, path: str) -> Iterator[apsw.Connection]:
    """``ATTACH path AS live`` for the block."""
    conn.execute("ATTACH DATABASE ? AS live", (path,))
    try:
        yield conn
    finally:
        conn.execute("DETACH DATABASE live")
