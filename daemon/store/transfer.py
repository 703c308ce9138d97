"""Memory that moves (``wsd import``, ``wsd export``): a snapshot of memory.db read in one
transaction, and a parsed import written in one.

The formats (ours, the MCP memory server's, Claude Code's, claude-mem's) are read and written
in :mod:`wsd.daemon.memory.transfer`; here is only what touches the database. An import is
all or nothing: one ``BEGIN IMMEDIATE`` holds every learning, action and md revision of it,
and a dry run is the same transaction rolled back (so its counts are exactly what the real
one would add). What a person retracted or forgot is never stored again by an import: a
learning whose statement was retracted, or that holds a forgotten phrase, is counted and
left out, and so is a memory-file line that holds one. A date in the future (a clock ahead,
or a hostile file) is taken as the import's time: it would pin its learning to the top of
every boot context ("the last 48 hours", newest first) for as long as it lies ahead.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import apsw

from wsd import schema
from wsd.daemon.store.erasure import Marks
from wsd.daemon.store.records import learning_key
from wsd.daemon.store.revisions import add_revision, latest_md
from wsd.daemon.store.verbs import Facet

#: The source an imported action gets when its own was the curator: curation in this
#: workspace did not make it, and ``wsd rebuild`` carries only what curation does not make.
IMPORTED = "import"


@dataclass(frozen=True)
class LearningIn:
    """One learning to import. ``key`` is its id in the source (an export's learning id), so
    that supersession and actions can point at it; ``sources`` are the turns it came from as
    (transcript identity, observation id, cited); ``turns`` are turn ids of this workspace's
    index (``T12``, the old import format)."""

    type: str
    content: str
    created_at: float
    ref: str | None = None
    session_id: str | None = None
    confidence: float = 1.0
    key: int | None = None
    superseded_by: int | None = None
    superseded_at: float | None = None
    sources: tuple[tuple[str, int, bool], ...] = ()
    turns: tuple[int, ...] = ()


@dataclass(frozen=True)
class ActionIn:
    """One pending action to import (open or closed)."""

    content: str
    priority: int
    status: str
    source: str
    created_at: float
    updated_at: float
    dedup_key: str
    learning: int | None = None  # the source key of the learning it came from
    key: int | None = None  # its id in the source (kept here when free)


@dataclass(frozen=True)
class RevisionIn:
    """One md revision of an export's history (``--history``)."""

    file: str
    content: str
    created_at: float
    source: str


@dataclass
class Incoming:
    """Everything one import would add. ``md``: the curated files' text to merge in (their
    lines not already there are appended); ``history``: revisions to record for files that
    have none yet."""

    #: Consumed once, first (it may be a stream a parallel parse fills: the other fields
    #: are complete once it is exhausted).
    learnings: Iterable[LearningIn] = field(default_factory=list)
    actions: list[ActionIn] = field(default_factory=list)
    md: dict[str, str] = field(default_factory=dict)
    history: list[RevisionIn] = field(default_factory=list)
    #: A person's edits of the curated files not adopted yet: recorded first (source
    #: ``hand``), so that the merge adds to them and never writes over them.
    hand: dict[str, str] = field(default_factory=dict)


@dataclass
class Added:
    """What an import added (or, dry, would add), and what it left out and why."""

    learnings: int = 0
    duplicates: int = 0
    retracted: int = 0
    forgotten: int = 0
    actions: int = 0
    action_duplicates: int = 0
    md_lines: dict[str, int] = field(default_factory=dict)
    md_forgotten: int = 0
    revisions: int = 0
    unknown_turns: list[int] = field(default_factory=list)
    samples: list[str] = field(default_factory=list)
    #: Learnings and actions whose source id was in use here, given new ones.
    renumbered: int = 0


class TooLong(ValueError):
    """A merged memory file would pass its line limit: the import adds nothing."""


def import_incoming(
    m: apsw.Connection,
    incoming: Incoming,
    now: float,
    *,
    line_limits: dict[str, int],
    dry_run: bool = False,
    samples: int = 5,
) -> tuple[Added, dict[str, str]]:
    """Write ``incoming`` in one transaction (rolled back when ``dry_run``); what was added,
    and the curated files that changed (their new text, for the caller to write to disk).
    Raises :class:`TooLong` (nothing written) when a merged file would pass its limit."""
    added = Added()
    changed: dict[str, str] = {}
    m.execute("BEGIN IMMEDIATE")
    try:
        # FTS5 merges its segments in the page cache: 64 MiB (not 2) saves a tenth of a
        # 100,000-learning import; this connection is closed after it.
        m.execute("PRAGMA cache_size = -65536")
        marks = Marks.load(m)
        with _indexed_after(m):
            free = FreeIds(m, "learnings")
            ids, replaced = _learnings(m, incoming.learnings, marks, added, samples, now, free)
        _supersession(m, replaced, ids)
        _actions(m, incoming.actions, ids, marks, added, now, FreeIds(m, "pending_actions"))
        recorded = _history(m, incoming.history, marks, added)
        if incoming.md:
            for name, text in sorted(incoming.hand.items()):
                add_revision(m, name, text, "hand", now, own_txn=False)
        changed = _md(m, incoming.md, marks, added, now, line_limits)
        latest = latest_md(m) if recorded else {}
        for name in recorded - set(changed):  # a history's last revision is the file now
            changed[name] = latest[name]
    except BaseException:
        m.execute("ROLLBACK")
        raise
    m.execute("ROLLBACK" if dry_run else "COMMIT")
    return added, changed


#: Learnings written by one executemany (its RETURNING names those it added).
INSERT_CHUNK = 500
#: An id past this was made by no workspace (a hostile file): given a new one.
KEPT_ID_MAX = 2**31


class FreeIds:
    """The ids an import may give its rows as they were in the source (issue 45: a re-imported
    export renumbered every learning, so the ``L5`` the agent was shown, and a
    ``[replaces L5]``, named nothing or another statement): only ids this workspace never
    gave (past its ``sqlite_sequence`` high-water mark and every id in the table when the
    import began) and this import has not given yet. Into a fresh workspace every id is
    kept; into one with memory of its own, the source's ids it already used are new ones."""

    def __init__(self, m: apsw.Connection, table: str) -> None:
        self.high = max(
            int(schema.one(m, f"SELECT coalesce(max(id), 0) FROM {table}")[0]),
            int(
                schema.one(
                    m, "SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = ?", (table,)
                )[0]
            ),
        )
        self.given: set[int] = set()

    def take(self, key: int | None) -> int | None:
        """``key`` when it is free (now taken), else None (the table gives the next id)."""
        if key is None or not self.high < key < KEPT_ID_MAX or key in self.given:
            return None
        self.given.add(key)
        return key

    def gave(self, row_id: int) -> None:
        """The table gave ``row_id`` itself: no later row takes it."""
        self.given.add(row_id)


#: The trigger that indexes each new learning for full-text search (001_initial.sql).
FTS_TRIGGER = "learnings_ai"


@contextmanager
def _indexed_after(m: apsw.Connection) -> Iterator[None]:
    """Index the learnings added in the block for full-text search in one statement at its
    end, not a row at a time through the trigger: measured on 5,500 claude-mem rows (960
    characters each), 1.19 s through the trigger, 0.71 s so. The trigger is dropped for the
    block and made again from its own stored SQL, inside the import's transaction (a
    failure rolls the DDL back with the rows)."""
    found = schema.first(
        m, "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", (FTS_TRIGGER,)
    )
    if found is None:  # not this schema: index as it does
        yield
        return
    top = int(schema.one(m, "SELECT coalesce(max(id), 0) FROM learnings")[0])
    m.execute(f"DROP TRIGGER {FTS_TRIGGER}")
    yield
    m.execute(
        "INSERT INTO learnings_fts (rowid, content, type)"
        " SELECT id, content, type FROM learnings_folded WHERE id > ? ORDER BY id",
        (top,),
    )
    m.execute(str(found[0]))


def _learnings(
    m: apsw.Connection,
    rows: Iterable[LearningIn],
    marks: Marks,
    added: Added,
    samples: int,
    now: float,
    free: FreeIds,
) -> tuple[dict[int, int], list[LearningIn]]:
    """Insert the new learnings; {source key: learning id} of those added or already there,
    and the rows that name a learning that replaced them."""
    ids: dict[int, int] = {}
    replaced: list[LearningIn] = []
    retracted = {str(k) for (k,) in m.execute("SELECT content_key FROM retractions")}
    chunk: list[tuple[str, LearningIn]] = []
    for row in rows:
        if row.superseded_by is not None:
            replaced.append(row)
        key = learning_key(row.content)
        if key in retracted:
            added.retracted += 1
        elif marks and marks.holds(row.content):
            added.forgotten += 1
        else:
            chunk.append((key, row))
            if len(chunk) >= INSERT_CHUNK:
                _insert(m, chunk, ids, added, samples, now, free)
                chunk = []
    _insert(m, chunk, ids, added, samples, now, free)
    return ids, replaced


def _insert(
    m: apsw.Connection,
    chunk: list[tuple[str, LearningIn]],
    ids: dict[int, int],
    added: Added,
    samples: int,
    now: float,
    free: FreeIds,
) -> None:
    """One executemany for a chunk (per-row statements cost a 55,000-row import a sixth of
    its time), then each added row's sources. Rows that keep their source id go first, so
    that none of the others is given an id one of them holds."""
    if not chunk:
        return
    wanted = {id(r): free.take(r.key) for _key, r in chunk if r.key is not None}
    ordered = sorted(chunk, key=lambda kr: wanted.get(id(kr[1])) is None)
    new = dict(
        m.executemany(
            "INSERT INTO learnings (id, created_at, session_id, type, content, content_key,"
            " confidence, ref) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (content_key) DO NOTHING RETURNING content_key, id",
            [
                (
                    wanted.get(id(r)),
                    min(r.created_at, now),
                    r.session_id,
                    r.type,
                    r.content,
                    key,
                    r.confidence,
                    r.ref,
                )
                for key, r in ordered
            ],
        )
    )
    for given in new.values():
        free.gave(int(given))
    for key, row in chunk:
        learning_id = new.pop(key, None)  # popped: a repeat in the same chunk is a duplicate
        if learning_id is None:
            added.duplicates += 1
            if row.key is not None:
                found = schema.first(m, "SELECT id FROM learnings WHERE content_key = ?", (key,))
                if found is not None:
                    ids[row.key] = int(found[0])
            continue
        added.learnings += 1
        added.renumbered += row.key is not None and int(learning_id) != row.key
        if len(added.samples) < samples:
            added.samples.append(f"{row.type}: {row.content[:120]}")
        if row.key is not None:
            ids[row.key] = int(learning_id)
        for identity, observation, cited in row.sources:
            m.execute(
                "INSERT INTO learning_sources (learning_id, transcript_identity, observation_id,"
                " cited) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (learning_id, identity, observation, int(cited)),
            )
        for turn in row.turns:
            found = schema.first(
                m, "SELECT transcript_identity, observation_id FROM turns WHERE id = ?", (turn,)
            )
            if found is None:
                added.unknown_turns.append(turn)
                continue
            m.execute(
                "INSERT INTO learning_sources (learning_id, transcript_identity,"
                " observation_id, cited) VALUES (?, ?, ?, 1) ON CONFLICT DO NOTHING",
                (learning_id, found[0], found[1]),
            )


def _supersession(m: apsw.Connection, rows: list[LearningIn], ids: dict[int, int]) -> None:
    """A learning the source says was replaced by another is so here too (both imported)."""
    for row in rows:
        if row.key is None or row.superseded_by is None:
            continue
        old, new = ids.get(row.key), ids.get(row.superseded_by)
        if old is None or new is None or old == new:
            continue
        m.execute(
            "UPDATE learnings SET superseded_by = ?, superseded_at = ?"
            " WHERE id = ? AND superseded_by IS NULL AND batch_id IS NULL",
            (new, row.superseded_at if row.superseded_at is not None else row.created_at, old),
        )


def _actions(
    m: apsw.Connection,
    rows: list[ActionIn],
    ids: dict[int, int],
    marks: Marks,
    added: Added,
    now: float,
    free: FreeIds,
) -> None:
    for row in rows:
        if marks and marks.holds(row.content):
            added.forgotten += 1
            continue
        created = min(row.created_at, now)
        # A closed action is the same when its date is; one dated ahead was stored at its
        # import's time, so it is the same by its words (a second import finds it again).
        if schema.first(
            m,
            "SELECT 1 FROM pending_actions WHERE dedup_key = ?1 AND (status = 'pending'"
            " OR (status = ?2 AND (created_at = ?3 OR (?4 AND content = ?5))))",
            (row.dedup_key, row.status, row.created_at, row.created_at > now, row.content),
        ):
            added.action_duplicates += 1
            continue
        source = IMPORTED if row.source == "curator" else row.source
        learning = ids.get(row.learning) if row.learning is not None else None
        kept = free.take(row.key)
        m.execute(
            "INSERT INTO pending_actions (id, created_at, updated_at, content, priority, status,"
            " source, dedup_key, source_learning_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                kept,
                created,
                min(row.updated_at, now),
                row.content,
                row.priority,
                row.status,
                source,
                row.dedup_key,
                learning,
            ),
        )
        free.gave(m.last_insert_rowid())
        added.actions += 1
        added.renumbered += row.key is not None and kept is None


def _history(m: apsw.Connection, rows: list[RevisionIn], marks: Marks, added: Added) -> set[str]:
    """An export's revisions, for each file that has none here yet (a fresh workspace); the
    files given a history."""
    had = {str(f) for (f,) in m.execute("SELECT DISTINCT file FROM md_revisions")}
    recorded: set[str] = set()
    for row in rows:
        if row.file in had:
            continue
        content, gone = marks.without_lines(row.content) if marks else (row.content, 0)
        added.md_forgotten += gone
        # Its source as it was (issue 45: every one became "import"); no batch here made
        # it, which is what ``wsd rebuild`` asks of a revision it replays.
        add_revision(m, row.file, content, row.source, row.created_at, own_txn=False)
        added.revisions += 1
        recorded.add(row.file)
    return recorded


def _md(
    m: apsw.Connection,
    files: dict[str, str],
    marks: Marks,
    added: Added,
    now: float,
    line_limits: dict[str, int],
) -> dict[str, str]:
    """Merge each file's lines into its latest revision (appended, in order, unless the
    file has the line already); a new revision (source ``import``) where lines were added."""
    latest = latest_md(m)
    changed: dict[str, str] = {}
    for name, text in sorted(files.items()):
        text, gone = marks.without_lines(text) if marks else (text, 0)
        added.md_forgotten += gone
        merged, new = merge_lines(latest.get(name, ""), text)
        if not new:
            continue
        lines = len(merged.splitlines())
        if lines > line_limits[name]:
            raise TooLong(
                f"{name} would have {lines} lines with the {new} imported, over its limit of"
                f" {line_limits[name]}: make room in it (or import into a fresh workspace)"
            )
        add_revision(m, name, merged, IMPORTED, now, own_txn=False)
        added.md_lines[name] = new
        changed[name] = merged
    return changed


def merge_lines(base: str, incoming: str) -> tuple[str, int]:
    """``base`` with each non-blank line of ``incoming`` it lacks appended, in order; the text
    and how many lines were added. A line is the same with other spacing at its ends."""
    have = {line.strip() for line in base.splitlines()}
    new = []
    for line in incoming.splitlines():
        if line.strip() and line.strip() not in have:
            have.add(line.strip())
            new.append(line.rstrip())
    if not new:
        return base, 0
    body = base.rstrip("\n")
    return (body + "\n" if body else "") + "\n".join(new) + "\n", len(new)


# -- export: one read transaction -----------------------------------------------------------


def snapshot_rows(m: apsw.Connection, history: bool) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """Every row an export writes, as (kind, row), read in one read transaction (a
    consistent snapshot: WAL readers never block the daemon's writes). The first is
    ("snapshot", (learnings, retracted, erasures unfinished)); then "learning"
    (id, type, content, created_at, session_id, confidence, ref, superseded_by,
    superseded_at, sources JSON), "action" rows, "md" (file, content) and, with
    ``history``, "revision" (file, content, created_at, source) rows."""
    m.execute("BEGIN")
    try:
        count = int(schema.one(m, "SELECT count(*) FROM learnings")[0])
        retracted = int(schema.one(m, "SELECT count(*) FROM retractions")[0])
        unfinished = int(schema.one(m, "SELECT count(*) FROM forget_journal")[0])
        yield "snapshot", (count, retracted, unfinished)
        for row in m.execute(
            "SELECT l.id, l.type, l.content, l.created_at, l.session_id, l.confidence, l.ref,"
            " l.superseded_by, l.superseded_at,"
            " (SELECT json_group_array(json_array(s.transcript_identity, s.observation_id,"
            "   s.cited)) FROM learning_sources s WHERE s.learning_id = l.id)"
            " FROM learnings l ORDER BY l.id"
        ):
            yield "learning", row
        for row in m.execute(
            "SELECT content, priority, status, source, created_at, updated_at, dedup_key,"
            " source_learning_id, id FROM pending_actions ORDER BY id"
        ):
            yield "action", row
        for name, content in sorted(latest_md(m).items()):
            yield "md", (name, content)
        if history:
            for row in m.execute(
                "SELECT file, content, created_at, source FROM md_revisions ORDER BY id"
            ):
                yield "revision", row
    finally:
        m.execute("COMMIT")


def sources_of(value: Any) -> tuple[tuple[str, int, bool], ...]:
    """The ``sources`` JSON of :func:`snapshot_rows` as tuples."""
    if not value:
        return ()
    return tuple((str(i), int(o), bool(c)) for i, o, c in json.loads(value))


class Transfer(Facet):
    """``wsd import`` and ``wsd export`` (``store.transfer``)."""

    def add(
        self,
        incoming: Incoming,
        now: float,
        *,
        line_limits: dict[str, int],
        dry_run: bool = False,
    ) -> tuple[Added, dict[str, str]]:
        """See :func:`import_incoming`."""
        with self._db.memory() as m:
            return import_incoming(m, incoming, now, line_limits=line_limits, dry_run=dry_run)

    def snapshot(self, history: bool = False) -> Iterator[tuple[str, tuple[Any, ...]]]:
        """See :func:`snapshot_rows` (read-only; the connection is closed when the
        iteration ends)."""
        with self._db.memory(readonly=True) as m:
            yield from snapshot_rows(m, history)
