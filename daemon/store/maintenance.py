"""SQL verbs for data hygiene and health: checkpoints, retention, vacuum, integrity, backup.

Part of the store layer (the only place besides ``schema/`` that holds SQL);
used by the worker's periodic maintenance and by ``wsd doctor`` / ``wsd backup``.
"""

from __future__ import annotations

import os
import re
from typing import Any

import apsw

from wsd import schema
from wsd.daemon.store.ledger import Store

DAY = 86_400.0
#: What makes a missing database, said wherever one is found missing (status, doctor, search…).
MADE_BY = (
    "the daemon creates it on its next start (or `wsd init` now); a new memory.db is filled by"
    " re-curating every turn of the transcript"
)


class Maintenance:
    """SQL verbs for data hygiene and health checks (used by the worker and ``wsd doctor``)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._maintained_at = 0.0

    def _both(self) -> tuple[tuple[str, Any], ...]:
        return (("transcript", self.store._transcript), ("memory", self.store._memory))

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
        self.checkpoint(truncate=True)
        return pruned, vacuumed

    def checkpoint(self, truncate: bool = False) -> dict[str, tuple[int, int, int]]:
        """Checkpoint both WALs; PASSIVE never waits for (or blocks) a hook's write.

        Returns (busy, wal pages, checkpointed pages) per database. TRUNCATE
        also shrinks the WAL file to zero when no reader is in the way.
        """
        mode = "TRUNCATE" if truncate else "PASSIVE"
        out = {}
        for name, opener in (
            ("transcript", self.store._transcript),
            ("memory", self.store._memory),
        ):
            with opener() as conn:
                busy, log, done = schema.one(conn, f"PRAGMA wal_checkpoint({mode})")
                out[name] = (int(busy), int(log), int(done))
        return out

    def prune_events(self, before: float, charges_before: float | None = None) -> int:
        """Delete raw events older than ``before`` whose content lives on in an observation
        (and handled flush requests as old; charges older than ``charges_before``).

        Observations and learnings are never touched: only events already
        folded into a processed turn, and bookkeeping events, are removed.
        """
        with self.store._transcript() as t, schema.write_txn(t):
            t.execute(
                "DELETE FROM events WHERE ts < ? AND ("
                " observation_id IN (SELECT id FROM observations WHERE processed = 1)"
                " OR kind IN ('SessionStart', 'SessionEnd', 'PreCompact'))",
                (before,),
            )
            pruned = t.changes()
            t.execute(
                "DELETE FROM flush_requests WHERE handled_at IS NOT NULL AND ts < ?", (before,)
            )
            if charges_before is not None:
                t.execute("DELETE FROM charges WHERE asked_at < ?", (charges_before,))
        return int(pruned)

    def vacuum_if_sparse(self, min_free_ratio: float = 0.5, min_pages: int = 2048) -> list[str]:
        """VACUUM a database whose free pages exceed the ratio (rare; blocks writers briefly)."""
        done = []
        for name, opener in (
            ("transcript", self.store._transcript),
            ("memory", self.store._memory),
        ):
            with opener() as conn:
                (pages,) = schema.one(conn, "PRAGMA page_count")
                (free,) = schema.one(conn, "PRAGMA freelist_count")
                if int(pages) >= min_pages and int(free) >= min_free_ratio * int(pages):
                    conn.execute("VACUUM")
                    done.append(name)
        return done

    def schema_version(self, kind: schema.Kind) -> int:
        """The schema version of an existing database (read-only); SchemaError if too new."""
        opener = self.store._transcript if kind == "transcript" else self.store._memory
        with opener(readonly=True) as conn:
            path = (
                self.store.layout.transcript_db
                if kind == "transcript"
                else self.store.layout.memory_db
            )
            return schema.check_version(conn, kind, path)

    def unready(self) -> dict[str, str]:
        """Per database that cannot be read yet, why: missing, or a file with no schema (read
        only: nothing is created or changed). Empty when both are ready."""
        out = {}
        for kind, path in (
            ("transcript", self.store.layout.transcript_db),
            ("memory", self.store.layout.memory_db),
        ):
            if not os.path.exists(path):
                out[kind] = "is missing"
                continue
            try:
                if self.schema_version(kind) == 0:  # type: ignore[arg-type]
                    out[kind] = "has no schema yet"
            except (apsw.Error, schema.SchemaError) as exc:
                out[kind] = str(exc)
        return out

    def journal_mode(self, kind: schema.Kind) -> str:
        """The database's journal mode, read only (asking never sets it)."""
        opener = self.store._transcript if kind == "transcript" else self.store._memory
        with opener(readonly=True) as conn:
            return str(schema.one(conn, "PRAGMA journal_mode")[0])

    def integrity(self, kind: schema.Kind) -> list[str]:
        """Problems found by quick_check and the FTS integrity checks (empty: healthy)."""
        opener = self.store._transcript if kind == "transcript" else self.store._memory
        problems: list[str] = []
        with opener() as conn:
            result = [str(r[0]) for r in schema.rows(conn, "PRAGMA quick_check")]
            if result != ["ok"]:
                problems += result[:5]
            fts = _fts_tables(conn)
            for table in fts:
                try:
                    conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
                except apsw.Error as exc:
                    problems.append(f"{table}: {exc}")
        return problems

    def rebuild_fts(self) -> list[str]:
        """Rebuild every FTS index of memory.db from its content table."""
        rebuilt = []
        with self.store._memory() as m, schema.write_txn(m):
            for table in _fts_tables(m):
                m.execute(f"INSERT INTO {table} ({table}) VALUES ('rebuild')")
                rebuilt.append(table)
        return rebuilt

    def backup(self, dest_dir: str) -> dict[str, int]:
        """Consistent online copies of both databases into ``dest_dir`` (SQLite backup API)."""
        pages = {}
        for name, opener, path in (
            ("transcript", self.store._transcript, "transcript.db"),
            ("memory", self.store._memory, "memory.db"),
        ):
            target_path = os.path.join(dest_dir, path)
            with opener() as source:
                target = apsw.Connection(target_path)
                try:
                    with target.backup("main", source, "main") as step:
                        while not step.done:
                            step.step(256)
                        pages[name] = int(step.pagecount)
                finally:
                    target.close()
            os.chmod(target_path, 0o600)
        return pages

    def oldest_pending_age(self, now: float) -> float | None:
        backlog = self.store.backlog()
        return None if backlog.oldest_ts is None else now - float(backlog.oldest_ts)


_FTS5 = re.compile(r"USING\s+fts5\s*\(", re.IGNORECASE)


def _fts_tables(conn: apsw.Connection) -> list[str]:
    """Names of the FTS5 tables (not fts5vocab views, which have no integrity command)."""
    found = schema.rows(conn, "SELECT name, sql FROM sqlite_master WHERE type = 'table'")
    return [str(name) for name, sql in found if sql and _FTS5.search(str(sql))]
