"""The SQL foundation shared by hooks and daemon: one connection factory and migrations.

Every connection to either database comes from :func:`connect`, so the pragmas
(WAL, busy timeout, foreign keys, synchronous level) are set in exactly one place.
Migrations are the numbered ``sql/<db>/NNN_name.sql`` files inside this package,
applied in order inside one ``BEGIN IMMEDIATE`` transaction that also records
``PRAGMA user_version`` — so a crash mid-migration leaves the old version intact.

Import cost matters: the command hook imports this module on every agent event,
so only ``os`` and ``apsw`` are imported at run time (typing only for mypy).
"""

from __future__ import annotations

import os

import apsw

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any, Literal

    Kind = Literal["transcript", "memory"]

KINDS: tuple[Kind, ...] = ("transcript", "memory")

#: Hooks must never make the agent wait: past this they spool instead.
HOOK_BUSY_TIMEOUT_MS = 250
#: The daemon can afford to wait for a hook's short write.
DAEMON_BUSY_TIMEOUT_MS = 5000

_SQL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sql")

# transcript.db is written by hooks on the agent's hot path: NORMAL keeps each
# commit to one WAL append (durable against process crashes, which is what a
# hook must survive). memory.db is FULL: no md file may be materialised from a
# commit that could still roll back after a power cut.
_SYNCHRONOUS: dict[Kind, str] = {"transcript": "NORMAL", "memory": "FULL"}


class SchemaError(Exception):
    """The database's schema cannot be used by this code (message says why)."""


class Migration:
    """One numbered migration file."""

    __slots__ = ("name", "path", "version")

    def __init__(self, version: int, name: str, path: str) -> None:
        self.version = version
        self.name = name
        self.path = path


_migrations_cache: dict[Kind, list[Migration]] = {}


def migrations(kind: Kind) -> list[Migration]:
    """The migrations of one database, in order; versions must be 1..N without gaps."""
    cached = _migrations_cache.get(kind)
    if cached is not None:
        return cached
    folder = os.path.join(_SQL_DIR, kind)
    found: list[Migration] = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".sql"):
            continue
        prefix = name.split("_", 1)[0]
        if not prefix.isdigit():
            raise SchemaError(f"migration file {name!r} in {folder} lacks an NNN_ prefix")
        found.append(Migration(int(prefix), name, os.path.join(folder, name)))
    for expected, step in enumerate(found, start=1):
        if step.version != expected:
            raise SchemaError(
                f"migrations for {kind}.db must be numbered 1..N without gaps; "
                f"found {step.name!r} where version {expected} was expected"
            )
    _migrations_cache[kind] = found
    return found


def latest_version(kind: Kind) -> int:
    """The schema version this code writes for ``kind``."""
    return len(migrations(kind))


def connect(
    path: str | os.PathLike[str],
    kind: Kind,
    *,
    busy_timeout_ms: int = DAEMON_BUSY_TIMEOUT_MS,
    readonly: bool = False,
    create: bool = True,
) -> apsw.Connection:
    """Open ``path`` with the project's pragmas.

    A new database file is created with mode 0600 (SQLite gives its -wal and
    -shm files the same mode). ``readonly`` connections never write, which the
    boot-context loader and ``search_memory`` rely on.
    """
    path = os.fspath(path)
    if readonly:
        flags = apsw.SQLITE_OPEN_READONLY
    else:
        flags = apsw.SQLITE_OPEN_READWRITE
        if create:
            flags |= apsw.SQLITE_OPEN_CREATE
            if not os.path.exists(path):
                # Create it ourselves so the permissions are 0600 from the first byte.
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    conn = apsw.Connection(path, flags=flags)
    try:
        conn.set_busy_timeout(busy_timeout_ms)
        if not readonly:
            # journal_mode is persistent; asking again is a cheap no-op read.
            (mode,) = conn.execute("PRAGMA journal_mode=WAL").fetchone() or ("?",)
            if str(mode).lower() != "wal":
                raise SchemaError(f"{path}: could not enable WAL (journal_mode={mode})")
        conn.execute(f"PRAGMA synchronous={_SYNCHRONOUS[kind]}")
        conn.execute("PRAGMA foreign_keys=ON")
        if not readonly:
            # What is deleted is zeroed, in its page and in a freed page (issue 33: a forget
            # leaves no byte of the words; without it only a VACUUM of the whole file could
            # say so, 13 s for a 900 MB transcript).
            conn.execute("PRAGMA secure_delete=ON")
        # Checkpoint-on-close stays on (SQLite's default) although every hook
        # and daemon step opens its own connection: with it off, the WAL
        # outlives the last connection and the next open must rebuild the WAL
        # index by reading the whole WAL (measured: backlog drain 10x slower).
    except BaseException:
        conn.close()
        raise
    return conn


class write_txn:
    """A write transaction that takes the write lock up front: ``with write_txn(conn):``.

    ``BEGIN IMMEDIATE`` waits (busy timeout) for the lock before reading, where
    a deferred transaction that reads then writes can fail at once with
    SQLITE_BUSY_SNAPSHOT when another writer committed in between. (A class,
    not @contextmanager: contextlib costs the command hook milliseconds.)
    """

    __slots__ = ("conn",)

    def __init__(self, conn: apsw.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> apsw.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            try:
                self.conn.execute("COMMIT")
                return
            except BaseException:
                if not self.conn.get_autocommit():
                    self.conn.execute("ROLLBACK")
                raise
        if not self.conn.get_autocommit():
            self.conn.execute("ROLLBACK")


def one(conn: apsw.Connection, sql: str, args: tuple[Any, ...] = ()) -> tuple[Any, ...]:
    """The single row a query must return (aggregates, lookups by key that must exist)."""
    row = conn.execute(sql, args).fetchone()
    if row is None:
        raise LookupError(f"query returned no row: {sql[:80]}")
    return tuple(row)


def first(conn: apsw.Connection, sql: str, args: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
    """The first row of a query, or None."""
    row = conn.execute(sql, args).fetchone()
    return None if row is None else tuple(row)


def rows(conn: apsw.Connection, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """All rows of a query, as plain tuples of Python values."""
    return [tuple(r) for r in conn.execute(sql, args)]


def columns(conn: apsw.Connection, table: str) -> set[str]:
    """The column names of ``table`` (none for a table that is not there)."""
    return {str(r[1]) for r in conn.execute("SELECT * FROM pragma_table_info(?)", (table,))}


def user_version(conn: apsw.Connection) -> int:
    """``PRAGMA user_version`` of ``conn``'s main database."""
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0]) if row else 0


def check_version(conn: apsw.Connection, kind: Kind, path: str = "") -> int:
    """Return the current schema version, refusing one newer than this code."""
    current = user_version(conn)
    target = latest_version(kind)
    if current > target:
        where = f" at {path}" if path else ""
        raise SchemaError(
            f"{kind}.db{where} has schema version {current}, newer than this code "
            f"supports ({target}): deploy the newer code or restore a matching backup"
        )
    return current


def migrate(conn: apsw.Connection, kind: Kind, path: str = "") -> tuple[int, int]:
    """Bring ``conn`` to the latest schema; return (version before, version after).

    Idempotent and safe under concurrency: the version is re-read under the
    write lock, so two processes migrating at once apply each step once.
    """
    before = check_version(conn, kind, path)
    target = latest_version(kind)
    if before == target:
        return before, target
    with write_txn(conn):
        current = check_version(conn, kind, path)
        for step in migrations(kind):
            if step.version > current:
                with open(step.path, encoding="utf-8") as fh:
                    conn.execute(fh.read())
        # user_version lives in the database header, so it commits (or rolls
        # back) together with the DDL above.
        conn.execute(f"PRAGMA user_version = {target:d}")
    # Report what we found under the lock: another process may have migrated
    # between our first look and our lock, in which case we applied nothing.
    return current, target


def identity(conn: apsw.Connection) -> str:
    """The UUID a database carries in its ``meta`` table ("" if it has none yet)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'identity'").fetchone()
    return str(row[0]) if row else ""
