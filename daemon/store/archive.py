"""The turn index's SQL verbs: the closed turns of transcript.db that search_memory reaches.

Each verb takes an open connection (the :class:`Archive` facet at the end opens them, one per
unit of work). The turn index copies closed turns of transcript.db into memory.db's ``turns``
table (and so into ``turns_fts``), oldest first, in bounded steps (:func:`index_cursor`,
:func:`observations_after`, :func:`add_turns`). Memory tool calls are left out of the copy,
so the archive never holds what the archive said. The learnings (``wsd import``, what a new
session and the curator are shown, ``wsd forget``) are in :mod:`wsd.daemon.store.learnings`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import apsw

from wsd import schema
from wsd.daemon.store.verbs import Facet
from wsd.hooks.capture import is_memory_call
from wsd.schema.layout import FollowedLayout

#: Turns copied per call (one short write transaction each).
INDEX_BATCH = 500
#: Characters kept per part of a turn in the index (a tool's output is mostly noise to search).
PROMPT_CHARS = 4000
RESPONSE_CHARS = 4000
TOOL_INPUT_CHARS = 300
TOOL_OUTPUT_CHARS = 300


def index_cursor(m: apsw.Connection, identity: str) -> int | None:
    """The highest observation id of ``identity`` in the turn index (0: none yet); None when
    memory.db has no turn index (not migrated yet: the daemon migrates at start).

    Per identity, so a recreated transcript.db starts its own sequence and older turns stay
    searchable.
    """
    if not _has_turns(m):
        return None
    row = m.execute(
        "SELECT coalesce(max(observation_id), 0) FROM turns WHERE transcript_identity = ?",
        (identity,),
    ).fetchone()
    return int(row[0]) if row else 0


def observations_after(t: apsw.Connection, cursor: int, limit: int) -> list[tuple[Any, ...]]:
    """Up to ``limit`` observations with an id above ``cursor``, in id order, as the index
    reads them."""
    return t.execute(
        f"{_OBSERVATIONS} WHERE id > ? ORDER BY id LIMIT ?", (cursor, limit)
    ).fetchall()


def unindexed(
    t: apsw.Connection, m: apsw.Connection, limit: int, followed: bool = False
) -> tuple[str, list[tuple[Any, ...]]]:
    """The transcript's identity and its newest ``limit`` observations the turn index does not
    hold yet (above its high-water mark), oldest first, as the index reads them (its text:
    :func:`as_turns`); none when memory.db has no turn index. ``followed`` (``m`` is a
    satellite's copy of home's memory): the newest of its turns home has not curated."""
    identity = schema.identity(t)
    if followed:  # a satellite: home's index holds what home curated, the rest is its own
        return identity, t.execute(
            f"SELECT * FROM ({_OBSERVATIONS} WHERE processed = 0 ORDER BY id DESC LIMIT ?)"
            " ORDER BY id",
            (max(0, limit),),
        ).fetchall()
    cursor = index_cursor(m, identity)
    if cursor is None:
        return identity, []
    return identity, t.execute(
        f"SELECT * FROM ({_OBSERVATIONS} WHERE id > ? ORDER BY id DESC LIMIT ?) ORDER BY id",
        (cursor, max(0, limit)),
    ).fetchall()


def as_turns(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Observations (of :func:`observations_after`) as (observation id, session, sequence,
    created_at, prompt, response, tools): the text the turn index would store for them."""
    return [row[1:] for row in _index_rows("", rows)]


def observations_by_id(t: apsw.Connection, ids: Iterable[int]) -> list[tuple[Any, ...]]:
    """These observations, as the index reads them."""
    wanted = json.dumps(sorted(set(ids)))
    return t.execute(
        f"{_OBSERVATIONS} WHERE id IN (SELECT value FROM json_each(?))", (wanted,)
    ).fetchall()


def add_turns(m: apsw.Connection, identity: str, rows: list[tuple[Any, ...]]) -> None:
    """Index these observations (of :func:`observations_after`); one already in is kept."""
    with schema.write_txn(m):
        m.executemany(f"{_INSERT_TURN} ON CONFLICT DO NOTHING", _index_rows(identity, rows))


def replace_turns(
    m: apsw.Connection, identity: str, ids: Iterable[int], rows: list[tuple[Any, ...]]
) -> int:
    """Index turns ``ids`` again as these observations (of :func:`observations_by_id`: a late
    event folded into them changed their text); how many (0 when memory.db has no turn index
    yet)."""
    if not rows or not _has_turns(m):
        return 0
    with schema.write_txn(m):
        m.execute(
            "DELETE FROM turns WHERE transcript_identity = ?"
            " AND observation_id IN (SELECT value FROM json_each(?))",
            (identity, json.dumps(sorted(set(ids)))),
        )
        m.executemany(_INSERT_TURN, _index_rows(identity, rows))
    return len(rows)


_OBSERVATIONS = (
    "SELECT id, session_id, sequence_num, timestamp, user_message, tool_calls_json,"
    " agent_response FROM observations"
)
_INSERT_TURN = (
    "INSERT INTO turns (transcript_identity, observation_id, session_id, sequence_num,"
    " created_at, prompt, response, tools) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


def _index_rows(identity: str, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [
        (identity, oid, sid, seq, ts, *turn_text(user, calls, response))
        for oid, sid, seq, ts, user, calls, response in rows
    ]


def _has_turns(conn: apsw.Connection) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'turns'"
        ).fetchone()
        is not None
    )


def turn_text(user: object, calls_json: object, response: object) -> tuple[str, str, str]:
    """(prompt, response, tools) of one observation as the index stores them."""
    try:
        calls = json.loads(calls_json) if isinstance(calls_json, str) and calls_json else []
    except ValueError:
        calls = []
    lines = []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        name = str(call.get("name") or "?")
        if is_memory_call(name, call.get("input")):
            continue  # searching must never find searching
        inp = _compact(call.get("input"), TOOL_INPUT_CHARS)
        out = _compact(
            call.get("error") if "error" in call else call.get("output"), TOOL_OUTPUT_CHARS
        )
        lines.append(f"{name} {inp}" + (f" -> {out}" if out else ""))
    return (
        _compact(user, PROMPT_CHARS),
        _compact(response, RESPONSE_CHARS),
        "\n".join(lines),
    )


def _compact(value: Any, limit: int) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Archive(Facet):
    """The turn index (``store.archive``): what search reaches of the turns."""

    def index_new_turns(self, batch: int = INDEX_BATCH, identity: str | None = None) -> int:
        """Copy up to ``batch`` closed turns not yet in the turn index; returns how many (the
        daemon calls it every pass, ``wsd rebuild`` until it returns 0)."""
        if identity is None:
            with self._db.transcript() as t:
                identity = schema.identity(t)
        with self._db.memory() as m:
            cursor = index_cursor(m, identity)
        if cursor is None:
            return 0  # memory.db not migrated yet: the daemon migrates at start
        with self._db.transcript() as t:
            rows = observations_after(t, cursor, batch)
        if rows:
            with self._db.memory() as m:
                add_turns(m, identity, rows)
        return len(rows)

    def unindexed_turns(
        self, limit: int, memory: apsw.Connection | None = None
    ) -> tuple[str, list[tuple[Any, ...]]]:
        """The turns not in the turn index yet, read only (:func:`unindexed`); its
        high-water mark read on ``memory`` when given (search's own connection: opening
        memory.db again cost a search as much as the rest of this)."""
        with self._db.transcript(readonly=True) as t:
            followed = isinstance(self._db.layout, FollowedLayout)
            if memory is not None:
                return unindexed(t, memory, limit, followed)
            with self._db.memory(readonly=True) as m:
                return unindexed(t, m, limit, followed)

    def index_ids(self, identity: str, observation_ids: Iterable[int]) -> dict[int, int]:
        """The turn index id (what search names ``T<n>``) of each of these turns that the
        index holds, by observation id."""
        keys = json.dumps(sorted(set(observation_ids)))
        with self._db.memory(readonly=True) as m:
            rows = schema.rows(
                m,
                "SELECT observation_id, id FROM turns WHERE transcript_identity = ?"
                " AND observation_id IN (SELECT value FROM json_each(?))",
                (identity, keys),
            )
        return {int(obs): int(tid) for obs, tid in rows}

    def transcript_turn(self, observation_id: int) -> tuple[str, tuple[Any, ...] | None]:
        """The transcript's identity, and the turn as the index would store it, or None."""
        with self._db.transcript(readonly=True) as t:
            found = as_turns(observations_by_id(t, [observation_id]))
            return schema.identity(t), found[0] if found else None

    def reindex_turns(self, ids: Iterable[int]) -> int:
        """Index these turns again (a late event folded into them changed their text), as
        turns of the transcript.db they were read from; how many."""
        wanted = sorted(set(ids))
        with self._db.transcript() as t:
            identity = schema.identity(t)
            rows = observations_by_id(t, wanted)
        with self._db.memory() as m:
            return replace_turns(m, identity, wanted, rows)
