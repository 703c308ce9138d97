"""The SQL behind ``wsd memory why|blame``: the turns each learning and each curator batch
came from, and the words of those turns.

A learning's sources are ``learning_sources`` rows (the turns it cited, ``cited`` 1, or all
of its batch's turns); a curator revision's batch is ``md_revisions.batch_id``, its turns
``batch_turns``. The words are read from memory.db's turn index (``turns``), which holds
each closed turn's prompt and answer; a turn no longer there (its transcript replaced) is
returned without words, never skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import apsw

from wsd import schema
from wsd.daemon.store.verbs import Facet, uses

#: Learnings a text query returns at most.
MATCH_LIMIT = 10


@dataclass(frozen=True)
class SourceTurn:
    """A transcript turn something came from, with its words when the turn index has it."""

    identity: str
    observation_id: int
    cited: bool = False
    turn_id: int | None = None  # the turn index id search_memory names (T<n>)
    created_at: float | None = None
    prompt: str = ""
    response: str = ""
    #: The turn's tool calls as the index keeps them (what was done and what came back).
    tools: str = ""


@dataclass
class LearningTrace:
    """A learning and the turns it came from (cited ones first)."""

    id: int
    type: str
    content: str
    created_at: float
    batch_id: int | None
    superseded_by: int | None
    ref: str | None
    sources: list[SourceTurn] = field(default_factory=list)


@dataclass
class BatchTrace:
    """A curator batch: when it ran, its learnings, and all of its turns."""

    id: int
    finished_at: float
    learnings: list[LearningTrace]
    turns: list[SourceTurn]


_LEARNING_COLS = "id, type, content, created_at, batch_id, superseded_by, ref"


def _learning(row: Sequence[object]) -> LearningTrace:
    lid, kind, content, created, batch, superseded, ref = row
    return LearningTrace(
        int(str(lid)),
        str(kind),
        str(content),
        float(str(created)),
        None if batch is None else int(str(batch)),
        None if superseded is None else int(str(superseded)),
        None if ref is None else str(ref),
    )


def _with_words(m: apsw.Connection, turns: Iterable[SourceTurn]) -> list[SourceTurn]:
    """``turns`` with their turn index id, date and words (where the index has them)."""
    wanted = list(turns)
    keys = json.dumps([[t.identity, t.observation_id] for t in wanted])
    found = {
        (str(r[0]), int(r[1])): r[2:]
        for r in schema.rows(
            m,
            "SELECT transcript_identity, observation_id, id, created_at, prompt, response, tools"
            " FROM turns WHERE (transcript_identity, observation_id) IN"
            " (SELECT value ->> 0, value ->> 1 FROM json_each(?))",
            (keys,),
        )
    }
    out = []
    for t in wanted:
        hit = found.get((t.identity, t.observation_id))
        if hit is None:
            out.append(t)
            continue
        tid, created, prompt, response, tools = hit
        out.append(
            SourceTurn(
                t.identity,
                t.observation_id,
                t.cited,
                int(str(tid)),
                float(str(created)),
                str(prompt),
                str(response),
                str(tools),
            )
        )
    return out


def _sources(m: apsw.Connection, learnings: list[LearningTrace]) -> None:
    """Fill each learning's sources, cited turns first, oldest first."""
    by_id = {x.id: x for x in learnings}
    rows = schema.rows(
        m,
        "SELECT learning_id, transcript_identity, observation_id, cited FROM learning_sources"
        " WHERE learning_id IN (SELECT value FROM json_each(?))"
        " ORDER BY learning_id, cited DESC, observation_id",
        (json.dumps(list(by_id)),),
    )
    plain = [
        (int(lid), SourceTurn(str(ident), int(obs), bool(cited))) for lid, ident, obs, cited in rows
    ]
    worded = _with_words(m, [t for _lid, t in plain])
    for (lid, _t), turn in zip(plain, worded, strict=True):
        by_id[lid].sources.append(turn)


def batch_trace(m: apsw.Connection, batch_id: int) -> BatchTrace | None:
    """A curator batch's learnings (with their sources) and turns; None when the ledger has
    no such batch (memory.db rebuilt or restored from an older backup)."""
    row = schema.first(m, "SELECT finished_at FROM batches WHERE id = ?", (batch_id,))
    if row is None:
        return None
    learnings = [
        _learning(r)
        for r in schema.rows(
            m, f"SELECT {_LEARNING_COLS} FROM learnings WHERE batch_id = ? ORDER BY id", (batch_id,)
        )
    ]
    _sources(m, learnings)
    turns = [
        SourceTurn(str(ident), int(obs))
        for ident, obs in schema.rows(
            m,
            "SELECT transcript_identity, observation_id FROM batch_turns WHERE batch_id = ?"
            " ORDER BY observation_id",
            (batch_id,),
        )
    ]
    return BatchTrace(batch_id, float(row[0]), learnings, _with_words(m, turns))


def learnings_matching(
    m: apsw.Connection, text: str, limit: int = MATCH_LIMIT
) -> list[LearningTrace]:
    """Learnings whose words match every word of ``text`` (the full-text index, best match
    first), with their sources."""
    words = [w for w in "".join(c if c.isalnum() else " " for c in text).split() if w][:16]
    if not words:
        return []
    query = " ".join('"' + w.replace('"', '""') + '"' for w in words)
    learnings = [
        _learning(r)
        for r in schema.rows(
            m,
            f"SELECT {', '.join('l.' + c.strip() for c in _LEARNING_COLS.split(','))}"
            " FROM learnings_fts f JOIN learnings l ON l.id = f.rowid"
            " WHERE learnings_fts MATCH ? ORDER BY bm25(learnings_fts) LIMIT ?",
            (query, limit),
        )
    ]
    _sources(m, learnings)
    return learnings


class Lineage(Facet):
    """Where memory came from, for ``wsd memory why|blame`` (see the module docstring)."""

    batch = uses("memory", batch_trace)
    learnings_matching = uses("memory", learnings_matching)
