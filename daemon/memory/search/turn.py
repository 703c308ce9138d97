"""Opening one turn of the archive by its id (``T<n>``): what ``search_memory`` returns for
``turn``, so the agent can read the words a learning's hit cites; or a turn not indexed
yet (``N<n>``, its observation id: search/tail.py), read from transcript.db.

Contracts:

* Read-only, as search: memory.db's turn index (``turns``) opened with
  ``SQLITE_OPEN_READONLY``; an ``N<n>`` through the store's read-only verb, and as its
  ``T<n>`` once the index holds it. No database, no turn index, or no such id is None,
  never an error.
* :func:`format_turn` is the turn whole when it fits in :data:`TURN_CHARS`, else bounded: each
  tool call in short (:data:`CALL_CHARS`, at most :data:`CALLS_SHOWN`), and the person's words
  and the answer sharing what is left, each clipped to its head and tail.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from wsd import schema
from wsd.daemon.memory.search.core import TURN_TYPE
from wsd.daemon.memory.search.tail import NOT_INDEXED, PREFIX, opened, workspace_of
from wsd.daemon.memory.search.text import session_label
from wsd.daemon.runtime.dates import display_date
from wsd.schema.layout import Layout

#: The most an opened turn takes of the agent's context (about a page): a turn is mostly
#: short, and the few long ones are long answers, whose head and tail say what they did.
TURN_CHARS = 4000
#: A tool call in short: the call and the start and end of what it returned.
CALL_CHARS = 200
#: Tool calls shown of one turn; the rest are counted.
CALLS_SHOWN = 8
GAP = " … "


@dataclass(frozen=True)
class ArchivedTurn:
    """One turn as the turn index holds it (memory tool calls already left out)."""

    id: str
    created_at: float
    session_id: str
    sequence: int
    prompt: str
    response: str
    #: One line per tool call: ``name input -> result`` (each part already clipped).
    tools: str
    #: False for a turn read from transcript.db (``N<n>``): the index does not hold it yet.
    indexed: bool = True

    @property
    def date(self) -> str:
        return display_date(self.created_at)

    def to_json(self) -> dict[str, Any]:
        """The JSON object ``wsd search --turn T<n> --json`` prints."""
        return {
            "id": self.id,
            "type": TURN_TYPE,
            "date": self.date,
            "created_at": self.created_at,
            "session_id": self.session_id,
            "turn": self.sequence,
            "prompt": self.prompt,
            "tools": self.tools.splitlines(),
            "response": self.response,
        }


def open_turn(layout: Layout | str, turn: int | str) -> ArchivedTurn | None:
    """Turn ``turn`` of ``layout`` (a workspace or a memory.db path): ``T<n>`` (or ``n``) of
    the turn index, ``N<n>`` a turn not indexed yet; None when there is none (no such id, or
    no memory.db or turn index yet)."""
    ref = turn if isinstance(turn, str) else f"T{turn}"
    number = int(ref[1:])
    if isinstance(layout, Layout):
        layout = layout.reading()
    path = layout.memory_db if isinstance(layout, Layout) else layout
    if not os.path.exists(path):
        return None
    if ref[0] == PREFIX:
        workspace = workspace_of(layout)
        found = None if workspace is None else opened(workspace, number)
        if found is None:
            return None
        identity, t = found
        indexed = _indexed(path, "transcript_identity = ? AND observation_id = ?", identity, t.id)
        if indexed is not None:
            return indexed  # the daemon indexed it since: as the index holds it, by T<n>
        return ArchivedTurn(
            f"{PREFIX}{t.id}",
            t.created_at,
            t.session_id,
            t.sequence,
            t.prompt,
            t.response,
            t.tools,
            indexed=False,
        )
    return _indexed(path, "id = ?", number)


def _indexed(path: str, where: str, *args: object) -> ArchivedTurn | None:
    """The indexed turn ``where`` picks, or None (none, or no turn index yet)."""
    conn = schema.connect(path, "memory", readonly=True)
    try:
        if not schema.first(conn, "SELECT 1 FROM sqlite_master WHERE name = 'turns'"):
            return None  # a memory.db migrated before the turn index existed
        row = schema.first(
            conn,
            "SELECT id, created_at, session_id, sequence_num, prompt, response, tools"
            f" FROM turns WHERE {where}",
            args,
        )
    finally:
        conn.close()
    if row is None:
        return None
    tid, ts, session, seq, prompt, response, tools = row
    return ArchivedTurn(
        f"T{tid}", float(ts), str(session), int(seq), str(prompt), str(response), str(tools)
    )


def format_turn(turn: ArchivedTurn, limit: int = TURN_CHARS) -> str:
    """The turn as the agent reads it, within ``limit`` characters: a header line as a hit's
    (``[T88] turn · date · session 3f2b9c1e…, turn 3``), then ``user:``, the tool calls and
    ``agent:``; a part it does not have is left out."""
    place = session_label(turn.session_id, turn.sequence) + ("" if turn.indexed else NOT_INDEXED)
    header = f"[{turn.id}] {TURN_TYPE} · {turn.date} · {place}"
    calls = [c for c in turn.tools.splitlines() if c.strip()]
    shown = [f"  {clip(c, CALL_CHARS)}" for c in calls[:CALLS_SHOWN]]
    if len(calls) > CALLS_SHOWN:
        shown.append(f"  ({len(calls) - CALLS_SHOWN} more calls)")
    tools = "\n".join(["tools:", *shown]) if shown else ""
    user, agent = "user: ", "agent: "
    fixed = len(header) + len(tools) + len(user) + len(agent) + 3  # the line breaks
    room = max(limit - fixed, 2 * len(GAP) + 2)
    ask, answer = _share(len(turn.prompt), len(turn.response), room)
    lines = [header]
    if turn.prompt:
        lines.append(user + clip(turn.prompt, ask))
    if tools:
        lines.append(tools)
    if turn.response:
        lines.append(agent + clip(turn.response, answer))
    return "\n".join(lines)


def _share(first: int, second: int, room: int) -> tuple[int, int]:
    """Room for two texts of these lengths: both whole when they fit; else the shorter whole
    when it takes at most half, the longer the rest; else half each."""
    if first + second <= room:
        return first, second
    half = room // 2
    if first <= half:
        return first, room - first
    if second <= half:
        return room - second, second
    return half, room - half


def clip(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters: whole, or its head (two thirds) and its tail
    around " … " (where a turn's text says what was asked, and how it ended)."""
    if len(text) <= limit:
        return text
    head = max(limit * 2 // 3 - len(GAP), 1)
    tail = max(limit - head - len(GAP), 0)
    return f"{text[:head]}{GAP}{text[len(text) - tail :]}" if tail else text[:head] + GAP.rstrip()
