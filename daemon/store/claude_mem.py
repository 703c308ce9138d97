"""Reading another tool's SQLite database, read-only: claude-mem's (``wsd import``).

The database is a person's, and may be in use by its own program (claude-mem's worker keeps
it open). It is never changed and nothing is made beside it:

* a WAL database with no ``-wal`` file beside it (checkpointed: all of it is in the main
  file) is opened ``immutable``, so that no ``-shm`` is made;
* one with a ``-wal`` and no ``-shm`` (no program has it open: a copy, a backup) is read
  through :class:`ReadOnlyVFS`, which holds the WAL's index in this process's memory
  instead of a ``-shm`` beside it (SQLite made one there before) and can open no other file;
* one with both, or in rollback mode, is read through SQLite's own locking (its program may
  be writing: a consistent snapshot needs it).

A ``-wal``, ``-shm`` or ``-journal`` beside it that is not a regular file (a FIFO, a link) is
refused. Reads happen in one read transaction (a consistent view while its program writes).

Nothing a foreign database holds is put into SQL: the tables and columns read are ours
(:data:`COLUMNS`), each read only when the database's own list of its columns holds that name
as a plain column, and an authorizer refuses any statement but those reads. A view or a
virtual table where claude-mem keeps a table is refused (a view can compute without end).
SQLite's own time on the database is budgeted (:data:`READ_SECONDS`), as are its rows
(:data:`MAX_ROWS`) and the size of a row (:data:`MAX_ROW_BYTES`). A file that is not SQLite,
is locked by a writer past the busy timeout, lacks the tables or passes a bound is a
:class:`ForeignError` saying so.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import apsw

from wsd.daemon.runtime.fsio import kind_of

#: How long a reader waits for a writer's lock before saying the database is locked.
BUSY_MS = 2000
SQLITE_MAGIC = b"SQLite format 3\x00"
#: What is read of each table: the columns the importer turns into learnings
#: (``wsd.daemon.memory.transfer.claude_mem``), and nothing else (the FTS tables, tool
#: calls, prompts and sync columns are claude-mem's working, not what it learned).
COLUMNS = {
    "observations": ("id", "project", "type", "title", "narrative", "facts", "text",
                     "created_at", "created_at_epoch"),
    "session_summaries": ("id", "project", "request", "learned", "completed", "next_steps",
                          "created_at", "created_at_epoch"),
}  # fmt: skip
#: SQLite's own seconds on a database (the time inside its steps, not the importer's while
#: it parses and stores rows) at most: this plus READ_SECONDS_PER_GIB of the file and its
#: -wal. Measured (claude-mem's schema, 100,000 observations): 193 MiB took 0.32 s of
#: SQLite's time from the page cache and 1.0 s from disk; 649 MiB of long observations
#: 0.55 s and 4.7 s (~140 MiB/s). 60 s a GiB is a disk at 17 MiB/s (a slow SD card), so
#: no real database is stopped; the base is its schema and first pages on such a disk.
READ_SECONDS = 2.0
READ_SECONDS_PER_GIB = 60.0
#: Rows read at most (both tables): 10 times the largest database measured (100,000
#: observations), and as many as the largest JSON-lines file we read holds (512 MiB).
MAX_ROWS = 1_000_000
#: One row's columns read at most, as one line of our JSON lines (a learning is 4,000
#: characters: a row a thousand times that is not one). Past it SQLite stops before it reads
#: the row (SQLITE_LIMIT_LENGTH): never a whole huge value in memory.
MAX_ROW_BYTES = 4 * 1024 * 1024
#: Virtual-machine steps between two looks at the budget (~1 ms of SQLite's work).
PROGRESS_STEPS = 10_000
BESIDE = ("-wal", "-shm", "-journal")


class ForeignError(Exception):
    """The database cannot be read (not SQLite, locked, not the expected tables, a bound)."""


class ReadOnlyVFS(apsw.VFS):
    """SQLite's own files, read-only, for a WAL database no program has open (a ``-wal``
    beside it and no ``-shm``): the database and its ``-wal`` open read-only and no other
    file at all (no ``-shm``: the connection is in exclusive locking mode, so SQLite keeps
    the WAL's index in memory), nothing written, truncated or deleted (SQLite deletes an
    empty ``-wal`` on close otherwise), and no lock taken (a read-only descriptor cannot
    hold the exclusive lock that mode takes; no program has the files open, or there would
    be a ``-shm``)."""

    NAME = "wsd-foreign-readonly"

    def __init__(self) -> None:
        super().__init__(self.NAME, base="")
        self.allowed: set[str] = set()

    def xOpen(self, name: Any, flags: list[int]) -> apsw.VFSFile:
        path = name if isinstance(name, str) or name is None else name.filename()
        if path is None:  # SQLite's own temporary file (a sort), deleted when closed
            return apsw.VFSFile("", name, flags)
        if path not in self.allowed:
            raise apsw.CantOpenError(f"{path}: not opened (a foreign database reads itself only)")
        flags[0] = (flags[0] & ~(apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE)) | (
            apsw.SQLITE_OPEN_READONLY
        )
        return _ReadOnlyFile(name, flags)

    def xDelete(self, name: str, syncdir: bool) -> None:
        raise apsw.ReadOnlyError(f"{name}: not deleted (a foreign database)")


class _ReadOnlyFile(apsw.VFSFile):
    def __init__(self, name: Any, flags: list[int]) -> None:
        super().__init__("", name, flags)

    def xWrite(self, data: bytes, offset: int) -> None:
        raise apsw.ReadOnlyError("a foreign database is not written")

    def xTruncate(self, newsize: int) -> None:
        raise apsw.ReadOnlyError("a foreign database is not written")

    def xSync(self, flags: int) -> None:
        return None

    def xLock(self, level: int) -> None:
        return None

    def xUnlock(self, level: int) -> None:
        return None

    def xCheckReservedLock(self) -> bool:
        return False


_vfs: ReadOnlyVFS | None = None


def _readonly_vfs() -> ReadOnlyVFS:
    """The one :class:`ReadOnlyVFS` (registered with SQLite on first use, by name)."""
    global _vfs
    if _vfs is None:
        _vfs = ReadOnlyVFS()
    return _vfs


def _header(path: str) -> tuple[bytes, int]:
    """The first 100 bytes of the regular file at ``path``, and its size (no link followed,
    no blocking open: a FIFO is refused, never waited on)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ForeignError(f"cannot be opened ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ForeignError("not a regular file")
        return os.pread(fd, 100, 0), st.st_size
    finally:
        os.close(fd)


def _beside(path: str) -> dict[str, int]:
    """The size of each of SQLite's files beside ``path`` that exists; ForeignError for one
    that is not a regular file (a FIFO -wal kept SQLite reading; a link leads elsewhere)."""
    found = {}
    for suffix in BESIDE:
        try:
            st = os.lstat(path + suffix)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise ForeignError(f"{suffix[1:]} file beside it: {exc.strerror}") from None
        name = os.path.basename(path) + suffix
        if stat.S_ISLNK(st.st_mode):
            raise ForeignError(f"{name} is a symlink: not followed")
        if not stat.S_ISREG(st.st_mode):
            raise ForeignError(f"{name} is {kind_of(st.st_mode)}: not read")
        found[suffix] = st.st_size
    return found


def _open(path: str) -> tuple[apsw.Connection, int]:
    """A read-only connection to ``path`` (see the module) and the bytes it may read."""
    head, size = _header(path)
    if not head.startswith(SQLITE_MAGIC):
        raise ForeignError("not a SQLite database")
    beside = _beside(path)
    wal_mode = len(head) >= 20 and head[18] == 2 and head[19] == 2
    full = os.path.abspath(path)
    uri = f"file:{quote(full)}?mode=ro"
    vfs = None
    if wal_mode and not beside.get("-wal"):
        uri += "&immutable=1"
    elif wal_mode and "-shm" not in beside:
        vfs = _readonly_vfs()
        vfs.allowed.update((full, full + "-wal"))
    flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI | apsw.SQLITE_OPEN_NOFOLLOW
    try:
        conn = apsw.Connection(uri, flags=flags, vfs=vfs.NAME if vfs else None)
        if vfs is not None:
            conn.execute("PRAGMA locking_mode = EXCLUSIVE")
    except apsw.Error as exc:
        raise ForeignError(f"cannot be opened ({type(exc).__name__})") from None
    conn.set_busy_timeout(BUSY_MS)
    conn.limit(apsw.SQLITE_LIMIT_LENGTH, MAX_ROW_BYTES)
    conn.limit(apsw.SQLITE_LIMIT_ATTACHED, 0)
    conn.authorizer = _authorize
    return conn, size + beside.get("-wal", 0)


#: What a statement of ours may do: read (never through a view or a trigger), and ask the
#: one pragma it asks; an ATTACH, a function, a recursive query or anything else is refused.
_ALLOWED = {apsw.SQLITE_SELECT, apsw.SQLITE_READ, apsw.SQLITE_TRANSACTION}


def _authorize(op: int, one: str | None, two: str | None, db: str | None, via: str | None) -> int:
    if via is None and (op in _ALLOWED or (op == apsw.SQLITE_PRAGMA and one == "table_xinfo")):
        return apsw.SQLITE_OK
    return apsw.SQLITE_DENY


class _Budget:
    """SQLite's seconds on one database: counted only while one of its steps runs (the
    importer's own time between rows is not SQLite's), looked at by a progress handler."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.spent = 0.0
        self.since: float | None = None

    def over(self) -> bool:
        """True (ending the step) once the steps so far and this one pass the budget."""
        now = time.monotonic()
        return self.since is not None and self.spent + (now - self.since) > self.seconds

    def step(self, rows: Iterator[Any]) -> Any:
        """The next row of ``rows`` (None after the last), timed."""
        self.since = time.monotonic()
        try:
            return next(rows, None)
        finally:
            self.spent += time.monotonic() - self.since
            self.since = None


def _kind(conn: apsw.Connection, budget: _Budget, table: str) -> str | None:
    """ "table", "view" or "virtual" for ``table`` in the database's schema; None if absent."""
    # Names are compared as SQLite resolves them (OBSERVATIONS is observations).
    found = budget.step(
        conn.execute("SELECT type, sql FROM sqlite_schema WHERE name = ? COLLATE NOCASE", (table,))
    )
    if found is None:
        return None
    kind, sql = found
    if kind == "table" and str(sql or "").lstrip().upper().startswith("CREATE VIRTUAL"):
        return "virtual"
    return str(kind)


def _columns(conn: apsw.Connection, budget: _Budget, table: str) -> tuple[str, ...]:
    """Which of our :data:`COLUMNS` of ``table`` the database has as plain columns, compared
    by name (a generated column, computed on every read, is not read)."""
    theirs = conn.execute("SELECT name, hidden FROM pragma_table_xinfo(?)", (table,))
    plain = set()
    while (row := budget.step(theirs)) is not None:
        if row[1] == 0:
            plain.add(row[0])
    return tuple(name for name in COLUMNS[table] if name in plain)


def claude_mem_rows(path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every observation (``("observations", row)``) then every session summary
    (``("session_summaries", row)``) of a claude-mem database, each row a dict of those of
    :data:`COLUMNS` it has (older versions lack some: ``text`` before titles and
    narratives)."""
    conn, size = _open(path)
    budget = _Budget(READ_SECONDS + READ_SECONDS_PER_GIB * size / (1 << 30))
    conn.set_progress_handler(budget.over, PROGRESS_STEPS)
    table, last, count = "", None, 0
    try:
        try:
            conn.execute("BEGIN")
            kinds = {t: _kind(conn, budget, t) for t in COLUMNS}
        except apsw.BusyError:
            raise ForeignError(
                f"is locked by a program writing it (waited {BUSY_MS / 1000:.0f} s):"
                " try again when it is idle"
            ) from None
        except apsw.NotADBError:
            raise ForeignError("not a SQLite database (or damaged)") from None
        if kinds["observations"] is None:
            raise ForeignError("has no observations table: not a claude-mem database")
        for table, kind in kinds.items():
            if kind is None:
                continue
            if kind != "table":
                article = "an" if kind[0] in "aeiou" else "a"
                raise ForeignError(f"{table} is {article} {kind}, not a table: not claude-mem's")
            names = _columns(conn, budget, table)
            if "id" not in names:
                raise ForeignError(f"{table} has no id column: not claude-mem's")
            # Our names only, each one the database was found to have (never one of its own).
            listed = ", ".join(f'"{n}"' for n in names)
            rows = conn.execute(f'SELECT {listed} FROM "{table}" ORDER BY "id"')
            last = None
            while (row := budget.step(rows)) is not None:
                count += 1
                if count > MAX_ROWS:
                    raise ForeignError(f"holds over {MAX_ROWS:,} rows: more than claude-mem keeps")
                values = dict(zip(names, row, strict=True))
                last = values["id"]
                yield table, values
    except apsw.InterruptError:
        raise ForeignError(
            f"took over {budget.seconds:.3g} s of SQLite's time to read: not what claude-mem writes"
        ) from None
    except apsw.TooBigError:
        after = f" (after row {last})" if last is not None else " (its first)"
        raise ForeignError(f"{table}: a row over {MAX_ROW_BYTES:,} bytes{after}") from None
    except apsw.Error as exc:
        raise ForeignError(f"cannot be read ({type(exc).__name__}: {exc})"[:300]) from None
    finally:
        conn.close()
