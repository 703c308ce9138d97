"""Reading another tool's SQLite database, read-only: claude-mem's (``wsd import``).

The database is a person's, and may be in use by its own program (claude-mem's worker keeps
it open). It is opened read-only and never changed: a WAL database with no ``-wal`` file
beside it (checkpointed: all of it is in the main file) is opened ``immutable``, so that no
``-shm`` file is left beside it; one with a ``-wal`` is read through SQLite's own locking.
Reads happen in one read transaction (a consistent view while its program writes). A file
that is not SQLite, is locked by a writer past the busy timeout, or lacks the tables is a
:class:`ForeignError` saying so.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import apsw

#: How long a reader waits for a writer's lock before saying the database is locked.
BUSY_MS = 2000
SQLITE_MAGIC = b"SQLite format 3\x00"


class ForeignError(Exception):
    """The database cannot be read (not SQLite, locked, not the expected tables)."""


def _open(path: str) -> apsw.Connection:
    with open(path, "rb") as fh:
        head = fh.read(100)
    if not head.startswith(SQLITE_MAGIC):
        raise ForeignError("not a SQLite database")
    wal = len(head) >= 20 and head[18] == 2 and head[19] == 2
    immutable = wal and not os.path.exists(path + "-wal")
    uri = f"file:{quote(os.path.abspath(path))}?mode=ro" + ("&immutable=1" if immutable else "")
    try:
        conn = apsw.Connection(
            uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI | apsw.SQLITE_OPEN_NOFOLLOW
        )
    except apsw.Error as exc:
        raise ForeignError(f"cannot be opened ({type(exc).__name__})") from None
    conn.set_busy_timeout(BUSY_MS)
    return conn


def _columns(conn: apsw.Connection, table: str) -> list[str]:
    return [str(row[1]) for row in conn.execute(f"PRAGMA table_info({table})")]


def claude_mem_rows(path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every observation (``("observations", row)``) then every session summary
    (``("session_summaries", row)``) of a claude-mem database, each row a dict of the
    columns it has (older versions lack some: ``sdk_session_id`` before
    ``memory_session_id``, ``text`` before titles and narratives)."""
    conn = _open(path)
    try:
        try:
            conn.execute("BEGIN")
            tables = {str(n) for (n,) in conn.execute("SELECT name FROM sqlite_master")}
        except apsw.BusyError:
            raise ForeignError(
                f"is locked by a program writing it (waited {BUSY_MS / 1000:.0f} s):"
                " try again when it is idle"
            ) from None
        except apsw.NotADBError:
            raise ForeignError("not a SQLite database (or damaged)") from None
        if "observations" not in tables:
            raise ForeignError("has no observations table: not a claude-mem database")
        for table in ("observations", "session_summaries"):
            if table not in tables:
                continue
            names = _columns(conn, table)
            listed = ", ".join(f'"{n}"' for n in names)
            for row in conn.execute(f'SELECT {listed} FROM "{table}" ORDER BY id'):
                yield table, dict(zip(names, row, strict=True))
    except apsw.Error as exc:
        raise ForeignError(f"cannot be read ({type(exc).__name__}: {exc})"[:300]) from None
    finally:
        conn.close()
