"""The rooms behind the store's one door: the archive, the vectors, the workspace tables and
maintenance, each reached from a :class:`~wsd.daemon.store.store.Store` (``store.archive``,
``store.vectors``, ``store.workspace``, ``store.maintenance``) and built by it with its
connections.

A facet's verb opens a connection for its unit of work, calls the SQL of its table module
(which takes that connection), and closes it; nothing here holds SQL.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import apsw

from wsd import schema
from wsd.daemon.store import (
    actions,
    archive,
    learnings,
    maintenance,
    remote,
    turns,
    vectors,
    workspace,
)
from wsd.daemon.store.actions import ActionRequest
from wsd.daemon.store.archive import INDEX_BATCH
from wsd.daemon.store.connections import Connections
from wsd.daemon.store.learnings import ImportReport
from wsd.daemon.store.maintenance import DAY
from wsd.daemon.store.workspace import Card, ToolEvent
from wsd.schema.errors import describe


class Archive:
    """The turn index, ``wsd import`` and ``wsd forget``, and the learnings a new session and
    the curator are shown (see :mod:`wsd.daemon.store.archive`)."""

    def __init__(self, db: Connections) -> None:
        self._db = db

    def index_new_turns(self, batch: int = INDEX_BATCH, identity: str | None = None) -> int:
        """Copy up to ``batch`` closed turns not yet in the turn index; returns how many (the
        daemon calls it every pass, ``wsd rebuild`` until it returns 0)."""
        if identity is None:
            with self._db.transcript() as t:
                identity = schema.identity(t)
        with self._db.memory() as m:
            cursor = archive.index_cursor(m, identity)
        if cursor is None:
            return 0  # memory.db not migrated yet: the daemon migrates at start
        with self._db.transcript() as t:
            rows = archive.observations_after(t, cursor, batch)
        if rows:
            with self._db.memory() as m:
                archive.add_turns(m, identity, rows)
        return len(rows)

    def unindexed_turns(
        self, limit: int, memory: apsw.Connection | None = None
    ) -> tuple[str, list[tuple[Any, ...]]]:
        """The turns not in the turn index yet, read only (:func:`archive.unindexed`); its
        high-water mark read on ``memory`` when given (search's own connection: opening
        memory.db again cost a search as much as the rest of this)."""
        with self._db.transcript(readonly=True) as t:
            if memory is not None:
                return archive.unindexed(t, memory, limit)
            with self._db.memory(readonly=True) as m:
                return archive.unindexed(t, m, limit)

    def transcript_turn(self, observation_id: int) -> tuple[str, tuple[Any, ...] | None]:
        """The transcript's identity, and the turn as the index would store it, or None."""
        with self._db.transcript(readonly=True) as t:
            found = archive.as_turns(archive.observations_by_id(t, [observation_id]))
            return schema.identity(t), found[0] if found else None

    def reindex_turns(self, ids: Iterable[int], identity: str) -> int:
        """Index these turns again (a late event folded into them changed their text); how
        many."""
        wanted = sorted(set(ids))
        with self._db.transcript() as t:
            rows = archive.observations_by_id(t, wanted)
        with self._db.memory() as m:
            return archive.replace_turns(m, identity, wanted, rows)

    def import_lines(self, lines: Iterable[str | bytes]) -> ImportReport:
        """Import learnings from JSON lines (see :func:`learnings.parse_import_line`): each bad
        line is reported with its number and skipped, the good ones kept in one transaction."""
        rows, report = learnings.parse_lines(lines)
        with self._db.memory() as m:
            learnings.add_imported(m, rows, report)
        return report

    def import_jsonl(self, path: str) -> ImportReport:
        """Import a JSON-lines file (``wsd import``)."""
        return self.import_lines(learnings.file_lines(path))

    def recent_learnings(self, since: float, limit: int) -> list[tuple[str, float, str]]:
        """(type, created_at, content) of current learnings since ``since``, newest first
        (read-only: the boot context never writes)."""
        with self._db.memory(readonly=True) as m:
            return learnings.recent_learnings(m, since, limit)

    def open_actions(self, limit: int) -> list[tuple[int, int, str]]:
        """Open pending actions as (id, priority, content), most urgent first (read-only)."""
        with self._db.memory(readonly=True) as m:
            return actions.open_list(m, limit)

    def learnings(self) -> list[tuple[str, str]]:
        """Every stored learning as (type, content), oldest first (the demo prints them)."""
        with self._db.memory(readonly=True) as m:
            return learnings.learnings(m)

    def related_learnings(
        self, text: str, limit: int, words: int = 40
    ) -> list[tuple[int, str, float, str]]:
        """Current learnings most related to ``text``, best first, as (id, type, created_at,
        content): plain FTS5 BM25 over its ``words`` most frequent words."""
        query = learnings.related_query(text, words)
        if query is None or limit <= 0:
            return []
        with self._db.memory(readonly=True) as m:
            return learnings.related_learnings(m, query, limit)

    def retracted_at(self, learning_id: int) -> float | None:
        """When learning ``learning_id`` was retracted (``wsd forget``), or None if it was not."""
        with self._db.memory(readonly=True) as m:
            return learnings.retracted_at(m, learning_id)

    def retract(self, learning_id: int, now: float, reason: str | None = None) -> bool:
        """``wsd forget`` (see :func:`learnings.retract`); False if there is no such learning."""
        with self._db.memory() as m:
            return learnings.retract(m, learning_id, now, reason)


class Vectors:
    """The vectors of semantic matching (see :mod:`wsd.daemon.store.vectors`)."""

    def __init__(self, db: Connections) -> None:
        self._db = db

    def use_model(self, model: str) -> bool:
        """Make ``model`` the one stored vectors belong to; vectors of another are deleted.
        False when memory.db predates the vector tables."""
        with self._db.memory() as m:
            return vectors.use_model(m, model)

    def pending(self, limit: int) -> list[tuple[str, int, str]]:
        """Up to ``limit`` memories without a vector, learnings first, newest first."""
        with self._db.memory(readonly=True) as m:
            return vectors.pending(m, limit)

    def counts(self) -> tuple[int, int]:
        """(memories with a vector, memories) over learnings and turns."""
        with self._db.memory(readonly=True) as m:
            return vectors.counts(m)

    def newest(self) -> tuple[str, int, int]:
        """The vectors' epoch and the newest learning and turn ids (see
        :func:`vectors.newest`)."""
        with self._db.memory(readonly=True) as m:
            return vectors.newest(m)

    def write(self, rows: Sequence[tuple[str, int, bytes]]) -> int:
        """Store vectors (kind, id, 384 int8 bytes); a memory deleted meanwhile is skipped."""
        with self._db.memory() as m:
            return vectors.write(m, rows)

    def newer(
        self, after: dict[str, int]
    ) -> tuple[str, dict[str, tuple[int, list[tuple[int, bytes]]]]]:
        """What a cache of the vectors needs, in one read (see :func:`vectors.newer`)."""
        with self._db.memory(readonly=True) as m:
            return vectors.newer(m, after)

    def fetch(
        self, kind: str, ids: Sequence[int], kind_filter: str | None, since_ts: float | None
    ) -> list[tuple[int, bytes]]:
        """(id, vector) of ``ids`` that still exist and pass the search filters."""
        with self._db.memory(readonly=True) as m:
            return vectors.fetch(m, kind, ids, kind_filter, since_ts)


class Workspace:
    """The file index, the checks' actions, the canvas map and the canvas tool events (see
    :mod:`wsd.daemon.store.workspace`)."""

    def __init__(self, db: Connections) -> None:
        self._db = db

    def index_rows(self) -> Iterator[tuple[str, int, int]]:
        """Stream (path, size, mtime_ns) of the stored index (no list of 100k tuples)."""
        with self._db.memory() as m:
            yield from workspace.index_rows(m)

    def apply_index(
        self, upserts: Sequence[tuple[str, int, int]], deletes: Iterable[str], now: float
    ) -> None:
        """Record changed files and forget gone ones, in one transaction (a changed file
        loses its stored hash)."""
        gone = list(deletes)
        if upserts or gone:
            with self._db.memory() as m:
                workspace.apply_index(m, upserts, gone, now)

    def files_under(self, prefixes: Sequence[str]) -> list[tuple[str, float]]:
        """(path, first_seen) of indexed files under any of ``prefixes`` (``"ocr/"``...)."""
        with self._db.memory() as m:
            return workspace.files_under(m, prefixes)

    def size_groups(self, min_size: int) -> Iterator[list[tuple[str, int, int, str | None, float]]]:
        """Files sharing their size with another, one size at a time (streamed), each as
        (path, size, mtime_ns, sha256, first_seen)."""
        with self._db.memory() as m:
            yield from workspace.size_groups(m, min_size)

    def set_hashes(self, hashes: Sequence[tuple[str, int, int, str]]) -> None:
        """Store (path, size, mtime_ns, sha256); ignored where the file changed meanwhile."""
        if hashes:
            with self._db.memory() as m:
                workspace.set_hashes(m, hashes)

    def raise_actions(self, requests: Sequence[ActionRequest], source: str, now: float) -> int:
        """Raise each request unless open or acknowledged (see :func:`actions.raise_requests`);
        returns how many were inserted."""
        if not requests:
            return 0
        with self._db.memory() as m, schema.write_txn(m):
            return actions.raise_requests(m, requests, source, now)

    def open_action_keys(self, prefix: str) -> dict[str, int]:
        """Open actions whose key starts with ``prefix``: key -> id."""
        with self._db.memory() as m:
            return actions.open_keys(m, prefix)

    def close_actions(self, keys: Iterable[str], now: float) -> int:
        """Mark the open actions with these keys completed (the problem is resolved)."""
        with self._db.memory() as m, schema.write_txn(m):
            return actions.close_keys(m, keys, now)

    def card(self, card_id: str) -> Card | None:
        with self._db.memory() as m:
            return workspace.card(m, card_id)

    def card_paths(self) -> dict[str, str]:
        """path -> card id of every mapped card (open or closed)."""
        with self._db.memory(readonly=True) as m:
            return workspace.card_paths(m)

    def open_cards(self) -> list[Card]:
        with self._db.memory(readonly=True) as m:  # (wsd doctor reads it: never create the file)
            return workspace.open_cards(m)

    def save_card(self, card: Card, now: float, cursor: tuple[str, int] | None = None) -> None:
        """Insert or update one card row, and advance the event cursor in the same commit."""
        with self._db.memory() as m:
            workspace.save_card(m, card, now, cursor)

    def canvas_cursor(self) -> tuple[str, int]:
        """(transcript identity, last event id handled); ("", 0) before the first event."""
        with self._db.memory() as m:
            return workspace.canvas_cursor(m)

    def set_canvas_cursor(self, identity: str, last_id: int, now: float) -> None:
        with self._db.memory() as m:
            workspace.set_canvas_cursor(m, identity, last_id, now)

    def tool_events(
        self, after_id: int, tool_names: Sequence[str], limit: int = 200
    ) -> tuple[str, list[ToolEvent], int]:
        """PostToolUse events of ``tool_names`` with id > ``after_id``, in id order, and how
        far the caller may move its cursor (see :func:`workspace.tool_events`). Read-only:
        the agent's database is never written from here."""
        with self._db.transcript(readonly=True) as t:
            return workspace.tool_events(t, after_id, tool_names, limit)


class Maintenance:
    """Data hygiene and health checks of both databases (used by the worker and ``wsd
    doctor``; see :mod:`wsd.daemon.store.maintenance`)."""

    def __init__(self, db: Connections) -> None:
        self._db = db
        self._maintained_at = 0.0

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
        """Checkpoint both WALs (PASSIVE, or TRUNCATE); (busy, wal pages, checkpointed
        pages) per database."""
        out: dict[str, tuple[int, int, int]] = {}
        for kind in schema.KINDS:
            with self._db.open(kind) as conn:
                out[kind] = maintenance.checkpoint(conn, truncate)
        return out

    def prune_events(self, before: float, charges_before: float | None = None) -> int:
        """Delete raw events older than ``before`` already folded into a processed turn (see
        :func:`maintenance.prune_events`); how many. Settled Message Batches as old go too."""
        with self._db.transcript() as t:
            pruned = maintenance.prune_events(t, before, charges_before)
            remote.prune(t, before)
            return pruned

    def vacuum_if_sparse(self, min_free_ratio: float = 0.5, min_pages: int = 2048) -> list[str]:
        """VACUUM a database whose free pages exceed the ratio; the ones vacuumed."""
        done: list[str] = []
        for kind in schema.KINDS:
            with self._db.open(kind) as conn:
                if maintenance.vacuum_if_sparse(conn, min_free_ratio, min_pages):
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
                out[kind] = maintenance.NOT_MADE[0]
                continue
            try:
                if self.schema_version(kind) == 0:
                    out[kind] = maintenance.NOT_MADE[1]
            except (apsw.Error, schema.SchemaError) as exc:
                out[kind] = f"cannot be read ({describe(exc)})"
        return out

    def journal_mode(self, kind: schema.Kind) -> str:
        """The database's journal mode, read only (asking never sets it)."""
        with self._db.open(kind, readonly=True) as conn:
            return maintenance.journal_mode(conn)

    def integrity(self, kind: schema.Kind) -> list[str]:
        """Problems found by quick_check and the FTS integrity checks (empty: healthy)."""
        with self._db.open(kind) as conn:
            return maintenance.integrity(conn)

    def rebuild_fts(self) -> list[str]:
        """Rebuild every FTS index of memory.db from its content table."""
        with self._db.memory() as m:
            return maintenance.rebuild_fts(m)

    def backup(self, dest_dir: str) -> dict[str, int]:
        """Consistent online copies of both databases into ``dest_dir`` (SQLite backup API)."""
        pages: dict[str, int] = {}
        for kind in schema.KINDS:
            with self._db.open(kind) as source:
                target = os.path.join(dest_dir, os.path.basename(self._db.path(kind)))
                pages[kind] = maintenance.backup(source, target)
        return pages

    def oldest_pending_age(self, now: float) -> float | None:
        """How long the oldest turn not curated yet has waited, in seconds (None: none)."""
        with self._db.transcript() as t:
            oldest = turns.backlog(t).oldest_ts
        return None if oldest is None else now - float(oldest)
