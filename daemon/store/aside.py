"""The SQL of ``wsd rebuild``: a memory.db built aside, what it carries over, and the swap.

The aside database (``memory.rebuild.db``) is a :class:`~wsd.daemon.store.ledger.Store`
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
from wsd.daemon.store import actions
from wsd.daemon.store.ledger import Store
from wsd.schema.layout import Layout

ASIDE_NAME = "memory.rebuild.db"
#: Tables (or their rows) that curation does not produce, copied from the live database.
CARRY_SQL = (
    "INSERT INTO main.meta SELECT * FROM live.meta WHERE key NOT IN (SELECT key FROM main.meta)",
    "INSERT INTO main.state SELECT * FROM live.state",
    "INSERT INTO main.workspace_files SELECT * FROM live.workspace_files",
    "INSERT INTO main.canvas_cards SELECT * FROM live.canvas_cards",
    "INSERT INTO main.learnings SELECT * FROM live.learnings WHERE batch_id IS NULL",
    "INSERT INTO main.retractions SELECT * FROM live.retractions",
    "INSERT INTO main.md_revisions SELECT * FROM live.md_revisions"
    " WHERE source != 'curator' AND batch_id IS NULL",
)


def aside_path(layout: Layout) -> str:
    return os.path.join(layout.memory_dir, ASIDE_NAME)


def open_aside(layout: Layout) -> Store:
    """A fresh aside database (any old one removed), migrated, with the live database's
    uncurated rows carried over; returned as a Store that writes into it."""
    path = aside_path(layout)
    remove(path)
    live = layout.memory_db

    def opener(target: str, kind: schema.Kind, **kwargs: Any) -> apsw.Connection:
        return schema.connect(path if target == live else target, kind, **kwargs)

    aside = Store(layout, opener=opener)
    with aside._memory() as m:
        schema.migrate(m, "memory", path)
        with _attached(m, live), schema.write_txn(m):
            for sql in CARRY_SQL:
                m.execute(sql)
            actions.carry_uncurated(m)
    return aside


def finish(aside: Store) -> None:
    """Carry the live closed status of curator actions, and leave no WAL behind."""
    with aside._memory() as m:
        with _attached(m, aside.layout.memory_db), schema.write_txn(m):
            actions.carry_closed_status(m)
        m.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def swap(layout: Layout) -> None:
    """Copy the aside database over the live one in a single write transaction."""
    source = schema.connect(aside_path(layout), "memory", readonly=True)
    try:
        dest = schema.connect(layout.memory_db, "memory")
        try:
            with dest.backup("main", source, "main") as backup:
                backup.step(-1)
            dest.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            dest.close()
    finally:
        source.close()


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
