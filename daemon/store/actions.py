"""Every SQL verb of ``pending_actions``: the one module that writes the table.

Actions come from three places (the curator's ``ACTION:`` lines, the workspace checks and
canvas sync, and a rebuild carrying them over) and are closed from four (``ACTION_DONE``,
a check that sees the problem resolved, the agent's ``resolve_action`` tool, ``wsd pending``).
Each verb takes an open connection so that it joins the caller's transaction: a batch's
actions commit with its ledger row. At most one action per de-duplication key is open (a
partial unique index); inserting a second is a no-op. The :class:`Actions` facet at the end
(``store.actions``) opens connections for the verbs that stand alone.

Workspace checks follow one more rule (:func:`raise_requests`): a key is raised again only
if no action with that key is open and none was closed after the problem (re)appeared, so a
dismissed or answered action is not nagged back every pass, while a new occurrence is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from wsd import schema
from wsd.daemon.store.verbs import Facet, reads, uses, writes

#: What an action can be closed as.
CLOSED_STATUSES = ("completed", "dismissed")


@dataclass(frozen=True)
class ActionRequest:
    """An action to raise (see :func:`raise_requests` for ``appeared_at``)."""

    key: str
    content: str
    priority: int = 2
    appeared_at: float = 0.0


def add(
    m: apsw.Connection,
    content: str,
    priority: int,
    source: str,
    key: str,
    now: float,
    batch_id: int | None = None,
) -> int:
    """Open an action unless one with ``key`` is open; returns 1 if inserted, else 0."""
    m.execute(
        "INSERT INTO pending_actions (created_at, updated_at, content, priority, source,"
        " dedup_key, batch_id) VALUES (?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (dedup_key) WHERE status = 'pending' DO NOTHING",
        (now, now, content, priority, source, key, batch_id),
    )
    return int(m.changes())


def set_status(m: apsw.Connection, action_id: int, status: str, now: float) -> bool:
    """Close one open action as ``completed`` or ``dismissed``; False if none was open."""
    if status not in CLOSED_STATUSES:
        raise ValueError(f"status must be one of {', '.join(CLOSED_STATUSES)}")
    m.execute(
        "UPDATE pending_actions SET status = ?, updated_at = ? WHERE id = ? AND status = 'pending'",
        (status, now, int(action_id)),
    )
    return bool(m.changes())


def raise_requests(
    m: apsw.Connection, requests: Sequence[ActionRequest], source: str, now: float
) -> int:
    """Raise each request unless open or acknowledged; update an open one's text.

    Acknowledged means an action with the same key was closed (completed or dismissed, by
    anyone) at or after ``appeared_at``. Returns how many rows were inserted.
    """
    added = 0
    for req in requests:
        row = schema.first(
            m,
            "SELECT id, status, updated_at, content FROM pending_actions"
            " WHERE dedup_key = ? ORDER BY status = 'pending' DESC, id DESC LIMIT 1",
            (req.key,),
        )
        if row is not None and row[1] == "pending":
            if row[3] != req.content:
                m.execute(
                    "UPDATE pending_actions SET content = ?, updated_at = ? WHERE id = ?",
                    (req.content, now, row[0]),
                )
            continue
        if row is not None and float(row[2]) >= req.appeared_at:
            continue
        added += add(m, req.content, req.priority, source, req.key, now)
    return added


def close_keys(m: apsw.Connection, keys: Iterable[str], now: float) -> int:
    """Mark the open actions with these keys completed (their problem is resolved)."""
    wanted = sorted(set(keys))
    if not wanted:
        return 0
    m.execute(
        "UPDATE pending_actions SET status = 'completed', updated_at = ?"
        " WHERE status = 'pending' AND dedup_key IN (SELECT value FROM json_each(?))",
        (now, json.dumps(wanted)),
    )
    return int(m.changes())


def open_keys(m: apsw.Connection, prefix: str) -> dict[str, int]:
    """Open actions whose key starts with ``prefix``: key -> id."""
    rows = schema.rows(
        m,
        "SELECT dedup_key, id FROM pending_actions WHERE status = 'pending'"
        " AND substr(dedup_key, 1, ?) = ?",
        (len(prefix), prefix),
    )
    return {str(k): int(i) for k, i in rows}


def open_list(m: apsw.Connection, limit: int = 50) -> list[tuple[int, int, str]]:
    """Open actions as (id, priority, content), most urgent first."""
    rows = schema.rows(
        m,
        "SELECT id, priority, content FROM pending_actions WHERE status = 'pending'"
        " ORDER BY priority, id LIMIT ?",
        (max(0, limit),),
    )
    return [(int(i), int(p), str(c)) for i, p, c in rows]


def open_count(m: apsw.Connection) -> int:
    (count,) = schema.one(m, "SELECT count(*) FROM pending_actions WHERE status = 'pending'")
    return int(count)


def listing(m: apsw.Connection, include_closed: bool = False) -> list[dict[str, Any]]:
    """Actions as dicts, open ones most urgent first (with ``include_closed``, closed after)."""
    where = "" if include_closed else " WHERE status = 'pending'"
    rows = schema.rows(
        m,
        "SELECT id, priority, status, content, source, created_at, updated_at"
        f" FROM pending_actions{where} ORDER BY status != 'pending', priority, id",
    )
    keys = ("id", "priority", "status", "content", "source", "created_at", "updated_at")
    return [dict(zip(keys, row, strict=True)) for row in rows]


# -- wsd rebuild: carried from the live database (attached as ``live``) -----------------------


def carry_uncurated(m: apsw.Connection) -> None:
    """Copy the actions curation does not produce (checks, canvas, imports) into ``main``."""
    m.execute(
        "INSERT INTO main.pending_actions SELECT * FROM live.pending_actions"
        " WHERE source != 'curator' AND batch_id IS NULL AND (source_learning_id IS NULL"
        " OR source_learning_id IN (SELECT id FROM main.learnings))"
    )


def carry_late(m: apsw.Connection) -> None:
    """Right before the swap: the non-curator actions opened in the live database since
    :func:`carry_uncurated` ran, and the live status of those it carried."""
    m.execute(
        "UPDATE main.pending_actions AS a SET status = l.status, updated_at = l.updated_at"
        " FROM live.pending_actions AS l WHERE a.source != 'curator' AND l.id = a.id"
        " AND l.dedup_key = a.dedup_key AND l.updated_at > a.updated_at"
    )
    m.execute(
        "INSERT INTO main.pending_actions (created_at, updated_at, content, priority, status,"
        " source, dedup_key, batch_id, source_learning_id)"
        " SELECT created_at, updated_at, content, priority, status, source, dedup_key,"
        " batch_id, NULL FROM live.pending_actions AS l"
        " WHERE source != 'curator' AND batch_id IS NULL"
        " AND NOT EXISTS (SELECT 1 FROM main.pending_actions a WHERE a.dedup_key = l.dedup_key"
        "   AND a.created_at = l.created_at)"
        " AND (status != 'pending' OR NOT EXISTS (SELECT 1 FROM main.pending_actions a"
        "   WHERE a.dedup_key = l.dedup_key AND a.status = 'pending')) ORDER BY id"
    )


def carry_closed_status(m: apsw.Connection) -> None:
    """Keep the agent's and operators' decisions: a curator action closed in the live
    database stays closed when curation produces it again."""
    m.execute(
        "UPDATE main.pending_actions AS a SET status = c.status, updated_at = c.updated_at"
        " FROM (SELECT dedup_key, status, max(updated_at) AS updated_at"
        "       FROM live.pending_actions WHERE source = 'curator'"
        "       AND status != 'pending' GROUP BY dedup_key) AS c"
        " WHERE a.dedup_key = c.dedup_key AND a.status = 'pending'"
        " AND a.source = 'curator' AND NOT EXISTS (SELECT 1 FROM live.pending_actions p"
        "   WHERE p.dedup_key = a.dedup_key AND p.status = 'pending')"
    )


#: Where a rebuild's own curator actions are moved while their ids are given back.
_ASIDE_IDS = 1 << 40


def keep_ids(m: apsw.Connection) -> None:
    """Give each curator action of the rebuilt database the id it had in the live one
    (matched by its de-duplication key, the same status first): the ``#3`` the agent saw at
    boot and a forget's journal keep naming the same action (issue 45: ``wsd rebuild``
    renumbered "#3 Call Maria tomorrow" to "#1"). One the live database never had gets an id
    past every live one. Inside the caller's transaction; child rows are checked at commit."""
    m.execute("PRAGMA defer_foreign_keys = ON")
    m.execute("UPDATE main.pending_actions SET id = id + ? WHERE source = 'curator'", (_ASIDE_IDS,))
    moved = m.execute(
        "SELECT a.id, (SELECT l.id FROM live.pending_actions l WHERE l.source = 'curator'"
        "  AND l.dedup_key = a.dedup_key ORDER BY l.status != a.status, l.id DESC LIMIT 1)"
        " FROM main.pending_actions a WHERE a.id >= ? ORDER BY a.id",
        (_ASIDE_IDS,),
    ).fetchall()
    taken = {int(r[0]) for r in m.execute("SELECT id FROM main.pending_actions WHERE id < ?",
                                          (_ASIDE_IDS,))}  # fmt: skip
    (live_top,) = schema.one(m, "SELECT coalesce(max(id), 0) FROM live.pending_actions")
    top = max([int(live_top), *taken, 0])
    for aside, live in moved:
        if live is None or int(live) in taken:
            top += 1
            live = top
        taken.add(int(live))
        m.execute("UPDATE main.pending_actions SET id = ? WHERE id = ?", (int(live), aside))
    m.execute(
        "UPDATE main.sqlite_sequence SET seq = max(seq, ?) WHERE name = 'pending_actions'",
        (max([top, *taken]),),
    )


class Actions(Facet):
    """Pending actions as the loop, the boot context and ``wsd pending`` see and close them
    (``store.actions``; the workspace checks raise theirs through ``store.workspace``)."""

    open_actions = reads("memory", open_list)
    list_actions = uses("memory", listing)
    set_action_status = writes("memory", set_status)
