"""Every SQL verb of workspace consistency: the file index, checks, canvas map, tool events.

Paths in ``workspace_files`` and ``canvas_cards`` are relative to the workspace root, with
``/`` separators. Each verb takes an open connection (memory.db, except
:func:`tool_events`); the :class:`Workspace` facet at the end (``store.workspace``) opens
them, and raises the checks' actions through :mod:`wsd.daemon.store.actions`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import apsw

from wsd import schema
from wsd.daemon.store import actions
from wsd.daemon.store.actions import ActionRequest
from wsd.daemon.store.ledger import put_state
from wsd.daemon.store.verbs import Facet, reads, uses, writes

#: state key of the canvas cursor: the last transcript event id looked at.
CANVAS_CURSOR_KEY = "canvas_event_cursor"


@dataclass(frozen=True)
class Card:
    """One row of the canvas card <-> file map."""

    card_id: str
    title: str | None
    card_type: str | None
    path: str
    status: str
    last_synced_sha256: str | None
    last_synced_at: float | None


@dataclass(frozen=True)
class ToolEvent:
    """A PostToolUse event from transcript.db (payload still JSON text)."""

    id: int
    ts: float
    tool_name: str
    payload: str


_CARD_COLUMNS = "card_id, title, card_type, path, status, last_synced_sha256, last_synced_at"


# -- the file index ------------------------------------------------------------------------


def index_rows(m: apsw.Connection) -> Iterator[tuple[str, int, int]]:
    """Stream (path, size, mtime_ns) of the stored index (no list of 100k tuples)."""
    for path, size, mtime in m.execute("SELECT path, size, mtime_ns FROM workspace_files"):
        yield str(path), int(size), int(mtime)


def apply_index(
    m: apsw.Connection, upserts: Sequence[tuple[str, int, int]], gone: Sequence[str], now: float
) -> None:
    """Record changed files and forget gone ones, in one transaction.

    A stored hash is kept only while size and mtime are unchanged; a file
    changed in any way loses it (hashes are recomputed lazily, when needed).
    """
    with schema.write_txn(m):
        m.executemany(
            "INSERT INTO workspace_files (path, size, mtime_ns, sha256, first_seen, last_seen)"
            " VALUES (?, ?, ?, NULL, ?, ?) ON CONFLICT (path) DO UPDATE SET"
            " sha256 = CASE WHEN size = excluded.size AND mtime_ns = excluded.mtime_ns"
            "  THEN sha256 END,"
            " size = excluded.size, mtime_ns = excluded.mtime_ns,"
            " last_seen = excluded.last_seen",
            [(p, s, t, now, now) for p, s, t in upserts],
        )
        m.executemany("DELETE FROM workspace_files WHERE path = ?", [(p,) for p in gone])


def files_under(m: apsw.Connection, prefixes: Sequence[str]) -> list[tuple[str, float]]:
    """(path, first_seen) of indexed files under any of ``prefixes`` (``"ocr/"``...)."""
    out: list[tuple[str, float]] = []
    for prefix in prefixes:
        # Range on the primary key instead of LIKE: '_' and '%' are legal in names.
        rows = schema.rows(
            m,
            "SELECT path, first_seen FROM workspace_files WHERE path >= ? AND path < ?",
            (prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)),
        )
        out += [(str(p), float(f)) for p, f in rows]
    return out


def size_groups(
    m: apsw.Connection, min_size: int
) -> Iterator[list[tuple[str, int, int, str | None, float]]]:
    """Files sharing their size with another, one size at a time.

    Each group is a list of (path, size, mtime_ns, sha256, first_seen);
    streamed so that only one group is ever in memory.
    """
    group: list[tuple[str, int, int, str | None, float]] = []
    for p, s, t, h, f in m.execute(
        "SELECT path, size, mtime_ns, sha256, first_seen FROM workspace_files"
        " WHERE size IN (SELECT size FROM workspace_files WHERE size >= ? GROUP BY size"
        "  HAVING count(*) > 1) ORDER BY size, path",
        (min_size,),
    ):
        if group and group[0][1] != s:
            yield group
            group = []
        group.append((str(p), int(s), int(t), None if h is None else str(h), float(f)))
    if group:
        yield group


def set_hashes(m: apsw.Connection, hashes: Sequence[tuple[str, int, int, str]]) -> None:
    """Store (path, size, mtime_ns, sha256); ignored where the file changed meanwhile."""
    with schema.write_txn(m):
        m.executemany(
            "UPDATE workspace_files SET sha256 = ? WHERE path = ? AND size = ? AND mtime_ns = ?",
            [(h, p, s, t) for p, s, t, h in hashes],
        )


# -- canvas map ------------------------------------------------------------------------------


def card(m: apsw.Connection, card_id: str) -> Card | None:
    row = schema.first(m, f"SELECT {_CARD_COLUMNS} FROM canvas_cards WHERE card_id = ?", (card_id,))
    return None if row is None else Card(*row)


def card_paths(m: apsw.Connection) -> dict[str, str]:
    """path -> card id of every mapped card (open or closed)."""
    rows = schema.rows(m, "SELECT path, card_id FROM canvas_cards")
    return {str(p): str(c) for p, c in rows}


def open_cards(m: apsw.Connection) -> list[Card]:
    rows = schema.rows(
        m, f"SELECT {_CARD_COLUMNS} FROM canvas_cards WHERE status = 'open' ORDER BY path"
    )
    return [Card(*r) for r in rows]


def save_card(
    m: apsw.Connection, card: Card, now: float, cursor: tuple[str, int] | None = None
) -> None:
    """Insert or update one card row, and advance the event cursor in the same commit."""
    with schema.write_txn(m):
        m.execute(
            "INSERT INTO canvas_cards (card_id, title, card_type, path, status,"
            " last_synced_sha256, last_synced_at, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (card_id) DO UPDATE SET"
            " title = excluded.title, card_type = excluded.card_type, path = excluded.path,"
            " status = excluded.status, last_synced_sha256 = excluded.last_synced_sha256,"
            " last_synced_at = excluded.last_synced_at, updated_at = excluded.updated_at",
            (
                card.card_id,
                card.title,
                card.card_type,
                card.path,
                card.status,
                card.last_synced_sha256,
                card.last_synced_at,
                now,
                now,
            ),
        )
        if cursor is not None:
            put_state(m, CANVAS_CURSOR_KEY, json.dumps(list(cursor)), now)


# -- state and the transcript --------------------------------------------------------------


def canvas_cursor(m: apsw.Connection) -> tuple[str, int]:
    """(transcript identity, last event id handled); ("", 0) before the first event."""
    row = schema.first(m, "SELECT value FROM state WHERE key = ?", (CANVAS_CURSOR_KEY,))
    try:
        identity, last = json.loads(str(row[0])) if row else ("", 0)
        return str(identity), int(last)
    except (ValueError, TypeError):
        return "", 0


def set_canvas_cursor(m: apsw.Connection, identity: str, last_id: int, now: float) -> None:
    with schema.write_txn(m):
        put_state(m, CANVAS_CURSOR_KEY, json.dumps([identity, last_id]), now)


def tool_events(
    t: apsw.Connection, after_id: int, tool_names: Sequence[str], limit: int = 200
) -> tuple[str, list[ToolEvent], int]:
    """PostToolUse events of ``tool_names`` with id > ``after_id``, in id order (read from a
    read-only transcript.db connection: the agent's database is never written from here).

    Returns (transcript identity, events, scanned up to): the last id the
    caller may move its cursor to, so a transcript with no canvas events is
    not rescanned from the start on every call.
    """
    t.execute("BEGIN")  # one snapshot for the events and the max id
    identity = schema.identity(t)
    rows = schema.rows(
        t,
        "SELECT id, ts, tool_name, payload FROM events WHERE id > ?"
        " AND kind = 'PostToolUse' AND tool_name IN (SELECT value FROM json_each(?))"
        " ORDER BY id LIMIT ?",
        (after_id, json.dumps(list(tool_names)), limit),
    )
    (top,) = schema.one(t, "SELECT coalesce(max(id), 0) FROM events")
    t.execute("COMMIT")
    events = [ToolEvent(int(i), float(ts), str(n), str(p)) for i, ts, n, p in rows]
    upto = events[-1].id if len(events) >= limit else max(int(top), after_id)
    return identity, events, upto


class Workspace(Facet):
    """The file index, the checks' actions, the canvas map and the canvas tool events (see
    :mod:`wsd.daemon.store.workspace`)."""

    def index_rows(self) -> Iterator[tuple[str, int, int]]:
        """Stream (path, size, mtime_ns) of the stored index (no list of 100k tuples)."""
        with self._db.memory() as m:
            yield from index_rows(m)

    def apply_index(
        self, upserts: Sequence[tuple[str, int, int]], deletes: Iterable[str], now: float
    ) -> None:
        """Record changed files and forget gone ones, in one transaction (a changed file
        loses its stored hash)."""
        gone = list(deletes)
        if upserts or gone:
            with self._db.memory() as m:
                apply_index(m, upserts, gone, now)

    files_under = uses("memory", files_under)

    def size_groups(self, min_size: int) -> Iterator[list[tuple[str, int, int, str | None, float]]]:
        """Files sharing their size with another, one size at a time (streamed), each as
        (path, size, mtime_ns, sha256, first_seen)."""
        with self._db.memory() as m:
            yield from size_groups(m, min_size)

    def set_hashes(self, hashes: Sequence[tuple[str, int, int, str]]) -> None:
        """Store (path, size, mtime_ns, sha256); ignored where the file changed meanwhile."""
        if hashes:
            with self._db.memory() as m:
                set_hashes(m, hashes)

    def raise_actions(self, requests: Sequence[ActionRequest], source: str, now: float) -> int:
        """Raise each request unless open or acknowledged (see :func:`actions.raise_requests`);
        returns how many were inserted."""
        if not requests:
            return 0
        with self._db.memory() as m, schema.write_txn(m):
            return actions.raise_requests(m, requests, source, now)

    open_action_keys = uses("memory", actions.open_keys)

    close_actions = writes("memory", actions.close_keys)

    card = uses("memory", card)
    card_paths = reads("memory", card_paths)
    open_cards = reads("memory", open_cards)
    save_card = uses("memory", save_card)
    canvas_cursor = uses("memory", canvas_cursor)
    set_canvas_cursor = uses("memory", set_canvas_cursor)
    tool_events = reads("transcript", tool_events)
