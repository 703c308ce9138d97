"""The write verbs of transcript.db: recording hook events and closing turns.

Shared by the hooks (one :func:`record` per hook call) and the daemon (spool
ingestion, closing turns whose agent never sent ``Stop``). Every verb runs in a
single ``BEGIN IMMEDIATE`` transaction, so an event and the turn it closes
commit together or not at all.
"""

from __future__ import annotations

import apsw

from wsd.schema import rows, write_txn
from wsd.schema.encoded import any_encoded
from wsd.schema.fastjson import dumps, loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Hook events the capture layer records (the SDK helper registers exactly these).
HOOK_EVENTS = (
    "UserPromptSubmit",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "PreCompact",
    "SessionStart",
    "SessionEnd",
)
#: Anything else is not captured.
KNOWN_EVENTS = frozenset(HOOK_EVENTS)
#: Events that are part of a turn's content (the rest are bookkeeping).
TURN_EVENTS = ("UserPromptSubmit", "PostToolUse", "PostToolUseFailure")
FLUSH_EVENTS = {"PreCompact": "precompact", "SessionEnd": "session_end"}
#: A flush request records the newest turn: with its time, what it waits for (see
#: ``006_flush_upto_turn.sql``).
NEWEST_TURN = "(SELECT max(id) FROM observations)"


class Event:
    """One sanitised hook call, ready to be written (or spooled). Treat as immutable."""

    __slots__ = ("kind", "payload", "session_id", "tool_name", "ts", "uid")

    def __init__(
        self,
        uid: str,
        ts: float,
        session_id: str,
        kind: str,
        tool_name: str | None,
        payload: dict[str, Any],
    ) -> None:
        self.uid = uid
        self.ts = ts
        self.session_id = session_id
        self.kind = kind
        self.tool_name = tool_name
        self.payload = payload

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Event) and self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Event({self.kind} {self.session_id} {self.uid})"

    def to_json(self) -> str:
        """The spool line for this event."""
        return dumps(
            {
                "uid": self.uid,
                "ts": self.ts,
                "session_id": self.session_id,
                "kind": self.kind,
                "tool_name": self.tool_name,
                "payload": self.payload,
            }
        )

    @classmethod
    def from_json(cls, line: str) -> Event:
        """Parse a spool line; raises ValueError/TypeError/KeyError on a damaged one.

        Only a line :meth:`to_json` could have written passes: a uid and a session id that
        are non-empty strings, a known kind, a finite time (a number of seconds since the
        epoch), a payload object. Anything else (``"ts": "NaN"``, a list for a session id)
        could never be recorded and would be retried for ever.
        """
        raw = loads(line)
        if not isinstance(raw, dict) or not isinstance(raw.get("payload"), dict):
            raise ValueError("spool line is not an event object")
        uid, session, kind, tool = raw["uid"], raw["session_id"], raw["kind"], raw.get("tool_name")
        if not isinstance(uid, str) or not 0 < len(uid) <= 200:
            raise ValueError("bad uid")
        if not isinstance(session, str) or not 0 < len(session) <= 1024:
            raise ValueError("bad session_id")
        if kind not in KNOWN_EVENTS:
            raise ValueError(f"unknown kind {str(kind)[:40]!r}")
        if tool is not None and not isinstance(tool, str):
            raise ValueError("bad tool_name")
        return cls(uid, event_time(raw["ts"]), session, kind, tool, raw["payload"])


#: Event times outside [0, this) are not times (the year 5138 and beyond, or garbage).
MAX_TS = 1e11
#: How far apart a copy of an event from a second wiring of the hook may be recorded.
SAME_EVENT_SECONDS = 2.0


def event_time(value: object) -> float:
    """A recordable event time from a number (or numeric string); ValueError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"ts is a {type(value).__name__}")
    ts = float(value)
    if not 0 <= ts < MAX_TS:  # NaN fails every comparison, inf fails the bound
        raise ValueError(f"ts {str(value)[:40]!r} is not a time")
    return ts


def _twin(conn: apsw.Connection, event: Event, payload: str) -> bool:
    """Whether ``event`` is a copy of one just recorded: the same event from a second wiring
    (the plugin and .claude/settings.json both: Claude Code runs each hook on the same input;
    issue 45 found each prompt split in two turns, one with no answer). The copy is among the
    session's events of the last seconds with no event of another kind after it (the agent
    goes on only once every hook of an event returned); two events a person or an agent
    makes differ (a tool call's id) or have another kind between them (an answer between two
    "yes", a prompt between two "Done."). A tool call without its ``tool_use_id`` is never
    a copy: two identical calls in a row (a card updated twice with the same text) are two."""
    tool = event.kind in TURN_EVENTS and event.kind != "UserPromptSubmit"
    if tool and not event.payload.get("tool_use_id"):
        return False
    for kind, other in conn.execute(
        "SELECT kind, payload FROM events WHERE session_id = ? AND ts BETWEEN ? AND ?"
        " ORDER BY id DESC",
        (event.session_id, event.ts - SAME_EVENT_SECONDS, event.ts + SAME_EVENT_SECONDS),
    ):
        if kind != event.kind:
            return False
        if other == payload:
            return True
    return False


def record(
    conn: apsw.Connection, event: Event, via: str = "direct", refolded: list[int] | None = None
) -> bool:
    """Write one event and everything it implies; False if its uid was already recorded.

    A direct event arrives as it happens: ``UserPromptSubmit`` closes any turn still open
    in the session (the agent was interrupted before ``Stop``); ``Stop`` closes the open
    turn into one observation; ``PreCompact``/``SessionEnd`` add a flush request. A spooled
    event (``via="spool"``) may come after its turn was closed: it is placed by its own time
    (see :mod:`wsd.schema.turns`), and the observations folded again are appended to
    ``refolded``.
    """
    payload = dumps(event.payload)
    row = (event.uid, event.ts, event.session_id, event.kind, event.tool_name, payload, via)
    source = event.payload.get("source") if event.kind == "SessionStart" else None
    cwd = event.payload.get("cwd")
    with write_txn(conn):
        if _twin(conn, event, payload):
            return False
        conn.execute(
            "INSERT INTO sessions (id, started_at, last_event_at, source, cwd)"
            " VALUES (?1, ?2, ?2, ?3, ?4)"
            " ON CONFLICT (id) DO UPDATE SET"
            "  started_at = min(started_at, excluded.started_at),"
            "  last_event_at = max(last_event_at, excluded.last_event_at),"
            "  source = coalesce(source, excluded.source),"
            "  cwd = coalesce(cwd, excluded.cwd)",
            (event.session_id, event.ts, source, cwd if isinstance(cwd, str) else None),
        )
        conn.execute(
            "INSERT INTO events (uid, ts, session_id, kind, tool_name, payload, via, encoded)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (uid) DO NOTHING",
            (*row, any_encoded(payload)),
        )
        if conn.changes() == 0:
            return False
        event_id = conn.last_insert_rowid()
        if event.kind == "UserPromptSubmit":
            conn.execute(
                "UPDATE sessions SET message_count = message_count + 1 WHERE id = ?",
                (event.session_id,),
            )
        # (schema.turns is imported where needed: a direct tool call, the commonest event,
        # only joins the open turn and the hook process need not load it.)
        if via == "spool" and (event.kind in TURN_EVENTS or event.kind == "Stop"):
            from wsd.schema.turns import place_late

            place_late(conn, event.session_id, event.kind, event.ts, event_id, refolded)
        elif event.kind == "UserPromptSubmit":
            from wsd.schema.turns import close_open

            close_open(conn, event.session_id, "next_prompt", None, event.ts, before_id=event_id)
        elif event.kind == "Stop":
            from wsd.schema.turns import close_open

            message = event.payload.get("last_assistant_message")
            obs = close_open(
                conn,
                event.session_id,
                "stop",
                message if isinstance(message, str) else None,
                event.ts,
            )
            if obs is not None:
                conn.execute("UPDATE events SET observation_id = ? WHERE id = ?", (obs, event_id))
        if event.kind in FLUSH_EVENTS:
            conn.execute(
                "INSERT INTO flush_requests (ts, session_id, reason, upto_turn)"
                f" VALUES (?, ?, ?, {NEWEST_TURN})",
                (event.ts, event.session_id, FLUSH_EVENTS[event.kind]),
            )
        if event.kind == "SessionEnd":
            conn.execute(
                "UPDATE sessions SET ended_at = max(coalesce(ended_at, 0), ?) WHERE id = ?",
                (event.ts, event.session_id),
            )
    return True


def close_stale_turns(conn: apsw.Connection, quiet_before: float) -> list[int]:
    """Close turns whose agent never sent ``Stop``; return the new observation ids.

    A turn is closed when its session has ended, or when its newest event is
    older than ``quiet_before`` (the agent crashed or was killed mid-turn).
    """
    # Read first, outside any transaction: the daemon calls this every pass and
    # must not take the write lock (which hooks then wait for) for nothing.
    if not _due(conn, quiet_before):
        return []
    from wsd.schema.turns import close_open

    closed: list[int] = []
    with write_txn(conn):
        for session_id, reason, last_ts in _due(conn, quiet_before):
            obs = close_open(conn, session_id, reason, None, last_ts)
            if obs is not None:
                closed.append(obs)
    return closed


def _due(conn: apsw.Connection, quiet_before: float) -> list[tuple[str, str, float]]:
    """(session, reason, newest event time) of each open turn that should be closed now."""
    due = []
    for session_id, last, ended in _stale_candidates(conn):
        last_ts = float(last)
        if ended is not None and float(ended) >= last_ts:
            due.append((str(session_id), "session_end", last_ts))
        elif last_ts < quiet_before:
            due.append((str(session_id), "quiet", last_ts))
    return due


def _stale_candidates(conn: apsw.Connection) -> list[tuple[Any, ...]]:
    """(session id, newest open-turn event time, session end) of sessions with an open turn."""
    return rows(
        conn,
        "SELECT e.session_id, max(e.ts), s.ended_at FROM events e"
        " JOIN sessions s ON s.id = e.session_id"
        " WHERE e.observation_id IS NULL"
        "  AND e.kind IN ('UserPromptSubmit', 'PostToolUse', 'PostToolUseFailure')"
        " GROUP BY e.session_id",
    )


def request_flush(conn: apsw.Connection, reason: str, ts: float) -> int:
    """Record a flush request (``wsd flush``); returns its id."""
    with write_txn(conn):
        conn.execute(
            "INSERT INTO flush_requests (ts, session_id, reason, upto_turn)"
            f" VALUES (?, NULL, ?, {NEWEST_TURN})",
            (ts, reason),
        )
        return int(conn.last_insert_rowid())
