"""SQL verbs for data hygiene and health: checkpoints, retention, vacuum, integrity, backup.

Each verb takes an open connection to one of the two databases; the :class:`Maintenance`
facet at the end (``store.maintenance``) runs them for the worker's periodic maintenance and
for ``wsd doctor`` / ``wsd backup``.
"""

from __future__ import annotations

import os
import re

import apsw

from wsd import schema
from wsd.daemon.store import message_batches
from wsd.daemon.store.connections import Connections
from wsd.daemon.store.verbs import Facet, uses
from wsd.schema.errors import describe

DAY = 86_400.0
#: What makes a missing database, said wherever one is found missing (status, doctor, search…).
MADE_BY = (
    "the daemon creates it on its next start (or `wsd init` now); a new memory.db is filled by"
    " re-curating every turn of the transcript"
)
#: What :meth:`unready` says of a database that is not there, or has no schema yet.
NOT_MADE = ("is missing", "has no schema yet")


#: What SQLite says when the machine, not the file, is in the way: a full disk, an I/O error,
#: a lock, a permission (issue 45: on a full disk status and search said "memory.db is
#: derived: move it aside", the database was fine and read again once space was freed, and
#: following the advice lost its revisions and cost a re-curation).
_MACHINE = re.compile(
    r"disk I/O error|disk is full|database or disk|locked|busy|read-?only|unable to open"
    r"|permission|access|No space|quota",
    re.IGNORECASE,
)
#: Below this much free space the disk is named as the likely cause.
LOW_DISK_BYTES = 64 << 20


def remedy(kind: str, why: str, folder: str | None = None) -> str:
    """What a person does about database ``kind`` in the state ``why`` (of ``unready``): a
    missing one is made, a damaged one is not ("the daemon creates it" was the advice for a
    memory.db of random bytes, which the daemon cannot open either), and one the machine
    keeps from being read (a full disk, an I/O error, a lock: :data:`_MACHINE`; ``folder``:
    where its free space is measured) is left as it is."""
    return remedies({kind: why}, folder)[0]


def remedies(unready: dict[str, str], folder: str | None = None) -> list[str]:
    """:func:`remedy` for several databases, each cause said once (issue 45: on a full disk
    status gave the same disk advice twice, once per database)."""
    free = _free_bytes(folder) if folder else None
    low = free is not None and free < LOW_DISK_BYTES
    said: dict[str, None] = {}
    machine = [
        k for k, why in unready.items() if why not in NOT_MADE and (low or _MACHINE.search(why))
    ]
    again = "it reads again by itself" if len(machine) == 1 else "they read again by themselves"
    disk = (
        f"its disk has {free >> 20} MiB free: free space and {again}"
        if free is not None and low
        else "this is the machine, not the file: once the disk, lock or permission is fixed"
        f" {again}"
    )
    names = " or ".join(f"{k}.db" for k in machine)
    for kind, why in unready.items():
        if why in NOT_MADE:
            said[MADE_BY] = None
        elif kind in machine:  # one line for all of them, where the first one is
            said[f"{disk}; do not move {names} aside (wsd doctor names the cause)"] = None
        elif kind == "memory":
            said[
                "memory.db is derived: move it aside and the daemon makes a new one from the"
                " transcript (or restore it from a backup); wsd doctor checks it"
            ] = None
        else:
            said[
                "transcript.db holds every turn: restore it from a backup; wsd doctor checks it"
            ] = None
    return list(said)


def _free_bytes(folder: str) -> int | None:
    try:
        found = os.statvfs(folder)
    except OSError:
        return None
    return found.f_bavail * found.f_frsize


def checkpoint(conn: apsw.Connection, truncate: bool) -> tuple[int, int, int]:
    """Checkpoint the WAL: (busy, wal pages, checkpointed pages). PASSIVE never waits for (or
    blocks) a hook's write; TRUNCATE also shrinks the WAL file to zero when no reader is in
    the way."""
    mode = "TRUNCATE" if truncate else "PASSIVE"
    busy, log, done = schema.one(conn, f"PRAGMA wal_checkpoint({mode})")
    return int(busy), int(log), int(done)


def prune_events(t: apsw.Connection, before: float, charges_before: float | None) -> int:
    """Delete raw events older than ``before`` whose content lives on in an observation
    (and handled flush requests as old; charges older than ``charges_before``).

    Observations and learnings are never touched: only events already
    folded into a processed turn, and bookkeeping events, are removed.
    """
    with schema.write_txn(t):
        t.execute(
            "DELETE FROM events WHERE ts < ? AND ("
            " observation_id IN (SELECT id FROM observations WHERE processed = 1)"
            " OR kind IN ('SessionStart', 'SessionEnd', 'PreCompact'))",
            (before,),
        )
        pruned = t.changes()
        t.execute("DELETE FROM flush_requests WHERE handled_at IS NOT NULL AND ts < ?", (before,))
        if charges_before is not None:
            t.execute("DELETE FROM charges WHERE asked_at < ?", (charges_before,))
    return int(pruned)


def vacuum_if_sparse(conn: apsw.Connection, min_free_ratio: float, min_pages: int) -> bool:
    """VACUUM the database if its free pages exceed the ratio (rare; blocks writers
    briefly); whether it did."""
    (pages,) = schema.one(conn, "PRAGMA page_count")
    (free,) = schema.one(conn, "PRAGMA freelist_count")
    if int(pages) >= min_pages and int(free) >= min_free_ratio * int(pages):
        conn.execute("VACUUM")
        return True
    return False


def journal_mode(conn: apsw.Connection) -> str:
    """The database's journal mode (asking never sets it)."""
    return str(schema.one(conn, "PRAGMA journal_mode")[0])


def integrity(conn: apsw.Connection) -> list[str]:
    """Problems found by quick_check and the FTS integrity checks (empty: healthy)."""
    problems: list[str] = []
    result = [str(r[0]) for r in schema.rows(conn, "PRAGMA quick_check")]
    if result != ["ok"]:
        problems += result[:5]
    for table in _fts_tables(conn):
        try:
            conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
        except apsw.Error as exc:
            problems.append(f"{table}: {exc}")
    return problems


def rebuild_fts(m: apsw.Connection) -> list[str]:
    """Rebuild every FTS index of the database from its content table; their names."""
    rebuilt = []
    with schema.write_txn(m):
        for table in _fts_tables(m):
            m.execute(f"INSERT INTO {table} ({table}) VALUES ('rebuild')")
            rebuilt.append(table)
    return rebuilt


def backup(source: apsw.Connection, target_path: str) -> int:
    """A consistent online copy of the database at ``target_path`` (SQLite backup API, the
    copy readable by its owner only); how many pages."""
    target = apsw.Connection(target_path)
    try:
        with target.backup("main", source, "main") as step:
            while not step.done:
                step.step(256)
            pages = int(step.pagecount)
    finally:
        target.close()
    os.chmod(target_path, 0o600)
    return pages


_FTS5 = re.compile(r"USING\s+fts5\s*\(", re.IGNORECASE)


def id_marks(conn: apsw.Connection) -> dict[str, int]:
    """Per table, the highest id it ever gave (``sqlite_sequence``: AUTOINCREMENT tables)."""
    if schema.first(conn, "SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'") is None:
        return {}
    return {str(n): int(s) for n, s in conn.execute("SELECT name, seq FROM sqlite_sequence")}


def ids_past(conn: apsw.Connection, marks: dict[str, int]) -> dict[str, int]:
    """Make each table's next id pass ``marks`` (another copy's :func:`id_marks`), for the
    tables this database has; the tables raised, with their old mark. One transaction."""
    raised: dict[str, int] = {}
    with schema.write_txn(conn):
        have = id_marks(conn)
        tables = {str(n) for (n,) in conn.execute("SELECT name FROM sqlite_master")}
        for name, mark in sorted(marks.items()):
            if name not in tables or have.get(name, 0) >= mark:
                continue
            raised[name] = have.get(name, 0)
            if name in have:
                conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = ?", (mark, name))
            else:
                conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (name, mark))
    return raised


def _fts_tables(conn: apsw.Connection) -> list[str]:
    """Names of the FTS5 tables (not fts5vocab views, which have no integrity command)."""
    found = schema.rows(conn, "SELECT name, sql FROM sqlite_master WHERE type = 'table'")
    return [str(name) for name, sql in found if sql and _FTS5.search(str(sql))]


class Maintenance(Facet):
    """Data hygiene and health checks of both databases (used by the worker and ``wsd
    doctor``; see :mod:`wsd.daemon.store.maintenance`)."""

    def __init__(self, db: Connections) -> None:
        super().__init__(db)
        self._maintained_at = 0.0
        #: Off while litestream replicates (WSD_REPLICA_URL): its read transaction makes a
        #: TRUNCATE wait out the busy timeout holding the write lock (5 s of every hook's
        #: writes waiting), and it truncates the WAL itself (daemon/replica/litestream.py).
        self.truncate_wal = True

    def idle_pass(self, now: float, every: float, retention: float) -> tuple[int, list[str]] | None:
        """Idle-time data hygiene: bound the WALs, prune old raw events, vacuum rarely.

        Hooks never checkpoint beyond SQLite's automatic one, so the daemon keeps both
        WAL files bounded with a PASSIVE checkpoint on every idle pass (it never waits
        for, or blocks, a writer). Once per ``every`` seconds it also prunes raw events
        older than ``retention`` seconds already folded into processed turns (never
        observations or learnings), vacuums a mostly-empty file, and truncates the WALs:
        then it returns (events pruned, databases vacuumed), else None.
        """
        self.checkpoint()
        if now - self._maintained_at < every:
            return None
        self._maintained_at = now
        # Charges go with the events, but never the last two days': the daily cap sums them.
        pruned = self.prune_events(now - retention, now - max(retention, 2 * DAY))
        vacuumed = self.vacuum_if_sparse()
        self.checkpoint(truncate=self.truncate_wal)
        return pruned, vacuumed

    def checkpoint(self, truncate: bool = False) -> dict[str, tuple[int, int, int]]:
        """Checkpoint both WALs (PASSIVE, or TRUNCATE); (busy, wal pages, checkpointed
        pages) per database."""
        out: dict[str, tuple[int, int, int]] = {}
        for kind in schema.KINDS:
            with self._db.open(kind) as conn:
                out[kind] = checkpoint(conn, truncate)
        return out

    def prune_events(self, before: float, charges_before: float | None = None) -> int:
        """Delete raw events older than ``before`` already folded into a processed turn (see
        :func:`prune_events`); how many. Settled Message Batches as old go too."""
        with self._db.transcript() as t:
            pruned = prune_events(t, before, charges_before)
            message_batches.prune(t, before)
            return pruned

    def vacuum_if_sparse(self, min_free_ratio: float = 0.5, min_pages: int = 2048) -> list[str]:
        """VACUUM a database whose free pages exceed the ratio; the ones vacuumed."""
        done: list[str] = []
        for kind in schema.KINDS:
            with self._db.open(kind) as conn:
                if vacuum_if_sparse(conn, min_free_ratio, min_pages):
                    done.append(kind)
        return done

    def schema_version(self, kind: schema.Kind) -> int:
        """The schema version of an existing database (read-only); SchemaError if too new."""
        with self._db.open(kind, readonly=True) as conn:
            return schema.check_version(conn, kind, self._db.path(kind))

    def unready(self) -> dict[str, str]:
        """Per database that cannot be read yet, why: missing, or a file with no schema (read
        only: nothing is created or changed). Empty when both are ready."""
        out: dict[str, str] = {}
        for kind in schema.KINDS:
            if not os.path.exists(self._db.path(kind)):
                out[kind] = NOT_MADE[0]
                continue
            try:
                if self.schema_version(kind) == 0:
                    out[kind] = NOT_MADE[1]
            except (apsw.Error, schema.SchemaError) as exc:
                out[kind] = f"cannot be read ({describe(exc)})"
        return out

    def journal_mode(self, kind: schema.Kind) -> str:
        """The database's journal mode, read only (asking never sets it)."""
        with self._db.open(kind, readonly=True) as conn:
            return journal_mode(conn)

    def integrity(self, kind: schema.Kind) -> list[str]:
        """Problems found by quick_check and the FTS integrity checks (empty: healthy)."""
        with self._db.open(kind) as conn:
            return integrity(conn)

    rebuild_fts = uses("memory", rebuild_fts)

    def id_marks(self, kind: schema.Kind) -> dict[str, int]:
        """See :func:`id_marks` (read only)."""
        with self._db.open(kind, readonly=True) as conn:
            return id_marks(conn)

    def ids_past(self, kind: schema.Kind, marks: dict[str, int]) -> dict[str, int]:
        """See :func:`ids_past`."""
        with self._db.open(kind) as conn:
            return ids_past(conn, marks)

    def backup(self, dest_dir: str) -> dict[str, int]:
        """Consistent online copies of both databases into ``dest_dir`` (SQLite backup API)."""
        pages: dict[str, int] = {}
        for kind in schema.KINDS:
            with self._db.open(kind) as source:
                target = os.path.join(dest_dir, os.path.basename(self._db.path(kind)))
                pages[kind] = backup(source, target)
        return pages
