"""Folding events into turns: in arrival order as they come, by their own time when late.

A turn is a prompt, the tool calls after it and the answer that ends it (``Stop``). Events
written directly by a hook arrive in the order they happen, so :func:`close_open` folds a
session's open events when its ``Stop`` (or the next prompt) arrives. A spooled event
arrives later, maybe after its own turn was closed and later turns were written;
:func:`place_late` puts it where its time says it belongs, among its session's events
ordered by (time, id):

* a tool call joins the turn of the prompt or tool call just before it;
* a ``Stop`` ends the turn of the event just before it: it becomes that turn's answer, and
  what came after it in that turn (folded there because this ``Stop`` was missing) is split
  off into a turn of its own;
* a prompt starts a turn: it joins the turn of the event just after it, or splits it off
  the turn that event was folded into.

A turn no curator has seen (``processed = 0``, ``claimed_at`` NULL) is folded again from
its events. One already curated or claimed by a batch in flight is never changed: the late
event becomes an *addendum*, a new observation that ``amends`` it and carries only what came
late, curated by the next batch like any turn (so still exactly once).

Every verb here runs inside the caller's write transaction.
"""

from __future__ import annotations

import apsw

from wsd.schema import first, one, rows
from wsd.schema.encoded import any_encoded
from wsd.schema.fastjson import dumps, loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Events that are part of a turn's content (the rest are bookkeeping).
CONTENT = ("UserPromptSubmit", "PostToolUse", "PostToolUseFailure")
_CONTENT_SQL = "('UserPromptSubmit', 'PostToolUse', 'PostToolUseFailure')"
_TURN_SQL = "('UserPromptSubmit', 'PostToolUse', 'PostToolUseFailure', 'Stop')"
_EVENT_COLS = "id, kind, ts, observation_id"


def _next_seq(conn: apsw.Connection, session_id: str) -> int:
    (seq,) = one(
        conn,
        "SELECT coalesce(max(sequence_num), 0) + 1 FROM observations WHERE session_id = ?",
        (session_id,),
    )
    return int(seq)


def _content(found: list[tuple[Any, ...]]) -> tuple[str | None, str, str | None, bool]:
    """(user message, tool calls JSON, answer, has a Stop) of events (id, kind, tool, payload,
    ts) in order: prompts joined, every call in order, the last Stop's message."""
    prompts: list[str] = []
    calls: list[dict[str, Any]] = []
    answer: str | None = None
    stopped = False
    for _id, kind, tool_name, payload_json, event_ts in found:
        payload = loads(str(payload_json))
        if kind == "UserPromptSubmit":
            prompt = payload.get("prompt")
            if isinstance(prompt, str) and prompt:
                prompts.append(prompt)
        elif kind == "Stop":
            stopped = True
            message = payload.get("last_assistant_message")
            answer = message if isinstance(message, str) else answer
        else:
            call: dict[str, Any] = {"name": tool_name, "input": payload.get("tool_input")}
            if kind == "PostToolUseFailure":
                call["error"] = payload.get("error")
            else:
                call["output"] = payload.get("tool_response")
            call["ts"] = event_ts
            calls.append(call)
    return ("\n\n".join(prompts) if prompts else None), dumps(calls), answer, stopped


def close_open(
    conn: apsw.Connection,
    session_id: str,
    closed_by: str,
    response: str | None,
    ts: float,
    before: tuple[float, int] | None = None,
    before_id: int | None = None,
) -> int | None:
    """Fold the session's open turn events into one observation; None if there are none.

    Only events before ``before`` (time, id) or before ``before_id`` count when given. Tool
    calls keep their order; a turn with no new activity (a second ``Stop``) produces nothing.
    """
    ts_max, id_max = before if before is not None else (float("inf"), 2**62)
    found = rows(
        conn,
        "SELECT id, kind, tool_name, payload, ts FROM events"
        f" WHERE session_id = ? AND observation_id IS NULL AND kind IN {_CONTENT_SQL}"
        "  AND id < ? AND (ts < ? OR (ts = ? AND id < ?)) ORDER BY ts, id",
        (session_id, before_id if before_id is not None else 2**62, ts_max, ts_max, id_max),
    )
    if not found:
        return None
    user, calls, _answer, _stopped = _content(found)
    obs_id = _insert(conn, session_id, ts, user, calls, response, closed_by)
    conn.executemany(
        "UPDATE events SET observation_id = ? WHERE id = ?", [(obs_id, r[0]) for r in found]
    )
    return obs_id


def _insert(
    conn: apsw.Connection,
    session_id: str,
    ts: float,
    user: str | None,
    calls: str,
    response: str | None,
    closed_by: str,
    amends: int | None = None,
) -> int:
    conn.execute(
        "INSERT INTO observations (timestamp, session_id, sequence_num, user_message,"
        " tool_calls_json, agent_response, closed_by, amends, encoded)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            ts,
            session_id,
            _next_seq(conn, session_id),
            user,
            calls,
            response,
            closed_by,
            amends,
            any_encoded(user, calls, response),
        ),
    )
    obs_id = int(conn.last_insert_rowid())
    if amends is None:  # an addendum is part of a turn, not a turn
        conn.execute(
            "UPDATE sessions SET observation_count = observation_count + 1 WHERE id = ?",
            (session_id,),
        )
    return obs_id


def fold(conn: apsw.Connection, obs_id: int, retime: bool = False) -> None:
    """Fold observation ``obs_id`` again from the events linked to it (in time order).

    Its answer is its last ``Stop``'s; without one it keeps how it was closed (``stop``
    becomes ``next_prompt``: its answer went to a turn split off it). ``retime`` dates it by
    its newest event (the turn it was split from keeps the later close time).
    """
    found = rows(
        conn,
        "SELECT id, kind, tool_name, payload, ts FROM events WHERE observation_id = ?"
        " ORDER BY ts, id",
        (obs_id,),
    )
    user, calls, answer, stopped = _content(found)
    newest = max((float(r[4]) for r in found), default=0.0)
    conn.execute(
        "UPDATE observations SET user_message = ?1, tool_calls_json = ?2, agent_response = ?3,"
        " closed_by = CASE WHEN ?4 THEN 'stop' WHEN closed_by = 'stop' THEN 'next_prompt'"
        "  ELSE closed_by END,"
        " timestamp = CASE WHEN ?5 THEN ?6 ELSE max(timestamp, ?6) END, encoded = ?8"
        " WHERE id = ?7",
        (user, calls, answer, stopped, retime, newest, obs_id, any_encoded(user, calls, answer)),
    )


# -- late events ----------------------------------------------------------------------------


class _Ev:
    """One event of the session, as placement sees it."""

    __slots__ = ("id", "kind", "obs", "ts")

    def __init__(self, row: tuple[Any, ...]) -> None:
        self.id, self.kind, self.ts, self.obs = int(row[0]), str(row[1]), float(row[2]), row[3]


def _neighbour(
    conn: apsw.Connection, session_id: str, ts: float, eid: int, after: bool, kinds: str
) -> _Ev | None:
    """The session's nearest event of ``kinds`` before (or after) the point (ts, eid)."""
    if after:
        where, order = "(ts > ?2 OR (ts = ?2 AND id > ?3))", "ts, id"
    else:
        where, order = "(ts < ?2 OR (ts = ?2 AND id < ?3))", "ts DESC, id DESC"
    row = first(
        conn,
        f"SELECT {_EVENT_COLS} FROM events WHERE session_id = ?1 AND id != ?3"
        f" AND kind IN {kinds} AND {where} ORDER BY {order} LIMIT 1",
        (session_id, ts, eid),
    )
    return None if row is None else _Ev(row)


def _members(conn: apsw.Connection, obs_id: int) -> list[_Ev]:
    return [
        _Ev(r)
        for r in rows(
            conn,
            f"SELECT {_EVENT_COLS} FROM events WHERE observation_id = ? ORDER BY ts, id",
            (obs_id,),
        )
    ]


def _open_to_refold(conn: apsw.Connection, obs_id: int) -> tuple[bool, int]:
    """(may it be folded again, the turn an addendum to it amends)."""
    processed, claimed, amends, sealed = one(
        conn,
        "SELECT processed, claimed_at, amends, origin_key FROM observations WHERE id = ?",
        (obs_id,),
    )
    # A sealed turn (a satellite's, on its way home: 013_machines.sql) is never changed.
    still = not processed and claimed is None and sealed is None
    return still, int(amends if amends is not None else obs_id)


def place_late(
    conn: apsw.Connection,
    session_id: str,
    kind: str,
    ts: float,
    eid: int,
    refolded: list[int] | None = None,
) -> None:
    """Put a spooled event (already inserted as ``eid``) into the turn its time says.

    Appends to ``refolded`` the observations folded again (their text changed).
    """
    point = (ts, eid)
    if kind == "UserPromptSubmit":
        nxt = _neighbour(conn, session_id, ts, eid, True, _TURN_SQL)
        if nxt is None or nxt.obs is None or nxt.kind == "UserPromptSubmit":
            # Its turn is still open, or wholly late (the next event starts the next turn):
            # it starts its own; what is open before it is an earlier turn, closed now.
            close_open(conn, session_id, "next_prompt", None, ts, before=point)
            _answer_open(conn, session_id, nxt)
            return
        _join_or_split(conn, int(nxt.obs), eid, point, "UserPromptSubmit", refolded)
        return
    prev = _neighbour(conn, session_id, ts, eid, False, _CONTENT_SQL)
    if kind == "Stop":
        if prev is None:
            return  # nothing before it to end
        if prev.obs is None:
            message = _stop_message(conn, eid)
            obs = close_open(conn, session_id, "stop", message, ts, before=point)
            if obs is not None:
                conn.execute("UPDATE events SET observation_id = ? WHERE id = ?", (obs, eid))
            return
        _join_or_split(conn, int(prev.obs), eid, point, "Stop", refolded)
        return
    if kind in CONTENT:  # a tool call: the turn of what came just before (or just after) it
        near = prev or _neighbour(conn, session_id, ts, eid, True, _TURN_SQL)
        if near is not None and near.obs is not None:
            _join_or_split(conn, int(near.obs), eid, point, kind, refolded)
        else:
            _answer_open(conn, session_id, _neighbour(conn, session_id, ts, eid, True, _TURN_SQL))


def _answer_open(conn: apsw.Connection, session_id: str, nxt: _Ev | None) -> None:
    """If the event after a late one is a ``Stop`` that closed nothing (its turn's content had
    not arrived yet), it closes the open events before it now."""
    if nxt is None or nxt.kind != "Stop" or nxt.obs is not None:
        return
    message = _stop_message(conn, nxt.id)
    obs = close_open(conn, session_id, "stop", message, nxt.ts, before=(nxt.ts, nxt.id))
    if obs is not None:
        conn.execute("UPDATE events SET observation_id = ? WHERE id = ?", (obs, nxt.id))


def _stop_message(conn: apsw.Connection, eid: int) -> str | None:
    (payload,) = one(conn, "SELECT payload FROM events WHERE id = ?", (eid,))
    message = loads(str(payload)).get("last_assistant_message")
    return message if isinstance(message, str) else None


def _join_or_split(
    conn: apsw.Connection,
    obs_id: int,
    eid: int,
    point: tuple[float, int],
    kind: str,
    refolded: list[int] | None,
) -> None:
    """Add event ``eid`` to turn ``obs_id``; a prompt or a Stop may split the turn there."""
    members = _members(conn, obs_id)
    before = [m for m in members if (m.ts, m.id) < point]
    after = [m for m in members if (m.ts, m.id) > point]
    if kind == "Stop" and any(m.kind == "Stop" for m in before):
        return  # a second Stop for a turn already answered: recorded, not folded
    # A prompt starts a turn, a Stop ends one: what this turn holds on the other side of
    # the new event belongs to another turn (folded here because this event was missing).
    if kind == "UserPromptSubmit":
        split = list(after) if any(m.kind in CONTENT for m in before) else []
    elif kind == "Stop":
        split = after if any(m.kind in CONTENT for m in after) else []
    else:
        split = []
    refoldable, root = _open_to_refold(conn, obs_id)
    if not refoldable:
        _addendum(conn, root, eid, kind)
        return
    if split:
        _split(conn, obs_id, split, eid if kind == "UserPromptSubmit" else None)
    if kind != "UserPromptSubmit" or not split:
        conn.execute("UPDATE events SET observation_id = ? WHERE id = ?", (obs_id, eid))
    fold(conn, obs_id, retime=bool(split))
    _whole_turn_is_no_addendum(conn, obs_id)
    if refolded is not None:
        refolded.append(obs_id)


def _whole_turn_is_no_addendum(conn: apsw.Connection, obs_id: int) -> None:
    """An addendum that has gathered a whole turn, its prompt first and its ``Stop`` last
    with no other turn's event between them, is a turn that came late (its prompt arrived
    before its other events, and was placed by a curated turn's events): it amends nothing.

    Found by the soak: turns spooled while a later turn's events, written directly, were
    folded and curated; each late whole turn was sent to the curator as "the rest of" that
    later turn.
    """
    (amends,) = one(conn, "SELECT amends FROM observations WHERE id = ?", (obs_id,))
    if amends is None:
        return
    members = _members(conn, obs_id)
    if len(members) < 2 or members[0].kind != "UserPromptSubmit" or members[-1].kind != "Stop":
        return
    (session_id,) = one(conn, "SELECT session_id FROM observations WHERE id = ?", (obs_id,))
    (between,) = one(
        conn,
        "SELECT count(*) FROM events WHERE session_id = ?1 AND observation_id != ?2"
        f" AND kind IN {_TURN_SQL} AND (ts > ?3 OR (ts = ?3 AND id > ?4))"
        " AND (ts < ?5 OR (ts = ?5 AND id < ?6))",
        (session_id, obs_id, members[0].ts, members[0].id, members[-1].ts, members[-1].id),
    )
    if not between:
        conn.execute("UPDATE observations SET amends = NULL WHERE id = ?", (obs_id,))


def _split(conn: apsw.Connection, obs_id: int, moved: list[_Ev], prompt: int | None) -> None:
    """Move ``moved`` (and a late ``prompt`` starting them) out of ``obs_id`` into a new turn
    dated and closed as ``obs_id`` was."""
    ts, session_id, closed_by = one(
        conn, "SELECT timestamp, session_id, closed_by FROM observations WHERE id = ?", (obs_id,)
    )
    new = _insert(conn, str(session_id), float(ts), None, "[]", None, str(closed_by))
    ids = [m.id for m in moved] + ([prompt] if prompt is not None else [])
    conn.executemany("UPDATE events SET observation_id = ? WHERE id = ?", [(new, i) for i in ids])
    fold(conn, new)


def _addendum(conn: apsw.Connection, amends: int, eid: int, kind: str) -> None:
    """A new observation carrying only event ``eid``, amending curated turn ``amends``."""
    found = rows(conn, "SELECT id, kind, tool_name, payload, ts FROM events WHERE id = ?", (eid,))
    user, calls, answer, _stopped = _content(found)
    session_id, closed_by = one(
        conn, "SELECT session_id, closed_by FROM observations WHERE id = ?", (amends,)
    )
    obs = _insert(
        conn,
        str(session_id),
        float(found[0][4]),
        user,
        calls,
        answer,
        "stop" if kind == "Stop" else str(closed_by),
        amends=amends,
    )
    conn.execute("UPDATE events SET observation_id = ? WHERE id = ?", (obs, eid))
