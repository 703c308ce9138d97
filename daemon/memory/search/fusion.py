"""What search_memory does with its ranked candidates before they become hits:

* fusion: the lexical order and, when the daemon answers, the semantic one (nearest in
  meaning) are merged by reciprocal rank fusion, so neither scale dominates the other;
* a floor: a candidate that matches neither by words nor by meaning is left out, and a
  query with nothing above the floor gets one line saying so (see agent.py);
* lineage: a superseded learning ranks right below its successor, which is brought in when
  it was not found itself (the curator said the new one replaces the old).

The constants were chosen on LoCoMo conv-26 and checked on conv-30 (``python -m bench
memory_retrieval`` shows both; README "Search" says how).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import apsw

from wsd.daemon.memory.search.concepts import IndexSpec
from wsd.daemon.memory.search.rank import LEARNINGS, TURNS

#: Reciprocal rank fusion: 1 / (RRF_K + rank) from each list, the semantic one weighted.
RRF_K = 10
DENSE_WEIGHT = 0.5
#: Candidates asked of the daemon's semantic search.
DENSE_K = 100
#: The floor: below both, a candidate is not worth the agent's attention. ``words`` is the
#: lexical score normalised by the query's ideal (1.0: every word, well matched); ``meaning``
#: the cosine between the query's vector and the memory's.
MIN_WORDS = 0.002
MIN_MEANING = 0.35
#: The floor by words of a candidate holding no word of the question whose score a session
#: neighbour holding one lent it (30 % of the neighbour's). Under MIN_WORDS, 30 % of any weak
#: match (a name met once in a long turn, 0.02) carried both its neighbours into the hits at
#: 0.005; on LoCoMo no such candidate below 0.009 was relevant (README "Search").
MIN_INDIRECT = 0.008
#: How far a chain of successors is followed.
MAX_LINEAGE = 8


@dataclass
class Candidate:
    """One memory on its way to becoming a hit."""

    spec: IndexSpec
    id: int
    score: float  # what orders the hits
    words: float = 0.0
    meaning: float | None = None
    superseded_by: int | None = None
    #: Whether it holds a word of the question (see MIN_INDIRECT).
    direct: bool = True
    #: Whether only a session neighbour's lent score brought it (see MIN_INDIRECT).
    lent: bool = False

    @property
    def key(self) -> tuple[str, int]:
        return self.spec.prefix, self.id

    @property
    def weak(self) -> bool:
        """Matches neither by words nor by meaning (see MIN_WORDS, MIN_INDIRECT, MIN_MEANING).
        A candidate holding no word of the question is a hit by words only as the session
        neighbour of one that does (``lent``); one the best hits' words (feedback) alone
        brought is a hit only by meaning (issue 45: T60, then eight turns without
        "passport"; README "Search": LoCoMo's turns keep their recall, its facts lose 0.002)."""
        floor = MIN_WORDS if self.direct else MIN_INDIRECT if self.lent else float("inf")
        by_words = self.words >= floor
        return not by_words and (self.meaning is None or self.meaning < MIN_MEANING)


def fuse(lexical: list[Candidate], dense: list[tuple[str, int, float]] | None) -> list[Candidate]:
    """Both orders merged by reciprocal rank (lexical alone keeps its own scores)."""
    if not dense:
        return lexical
    specs = {"L": LEARNINGS, "T": TURNS}
    merged = {c.key: c for c in lexical}
    for c in merged.values():
        c.score = 0.0
    for rank, c in enumerate(lexical):
        c.score += 1.0 / (RRF_K + rank + 1)
    for rank, (kind, doc_id, cos) in enumerate(dense):
        if kind not in specs:
            continue
        c = merged.setdefault((kind, doc_id), Candidate(specs[kind], doc_id, 0.0))
        c.meaning = cos
        c.score += DENSE_WEIGHT / (RRF_K + rank + 1)
    return order(list(merged.values()))


def order(candidates: list[Candidate]) -> list[Candidate]:
    """Best first; on equal scores the learning first (the curated form of the knowledge)."""
    return sorted(candidates, key=lambda c: (-c.score, c.spec.prefix != "L", -c.id))


def lineage(
    conn: apsw.Connection, candidates: list[Candidate], filters: tuple[str, list[Any]]
) -> list[Candidate]:
    """Superseded learnings just below their current successor (added when missing and
    it passes the search's filters). Read-only; a database before 003 is left as it is."""
    columns = {str(r[1]) for r in conn.execute("PRAGMA table_info(learnings)")}
    learnings = [c.id for c in candidates if c.spec is LEARNINGS]
    if "superseded_by" not in columns or not learnings:
        return candidates
    successor = _successors(conn, learnings)
    if not successor:
        return candidates
    found = {c.key: c for c in candidates}
    for c in list(candidates):
        if c.spec is not LEARNINGS or c.id not in successor:
            continue
        c.superseded_by = successor[c.id]
        current, seen = successor[c.id], {c.id}
        while current in successor and current not in seen and len(seen) < MAX_LINEAGE:
            seen.add(current)
            current = successor[current]
        head = found.get(("L", current))
        if head is None and _passes(conn, current, filters):
            head = Candidate(LEARNINGS, current, c.score, c.words, c.meaning, direct=c.direct)
            found[head.key] = head
            candidates.append(head)
        if head is not None:
            head.score = max(head.score, c.score)
            c.score = head.score * 0.999
    return order(candidates)


def _successors(conn: apsw.Connection, ids: list[int]) -> dict[int, int]:
    """learning id -> the learning that replaced it, along whole chains."""
    successor: dict[int, int] = {}
    frontier = ids
    for _ in range(MAX_LINEAGE):
        rows = conn.execute(
            "SELECT id, superseded_by FROM learnings WHERE superseded_by IS NOT NULL"
            " AND id IN (SELECT value FROM json_each(?))",
            (json.dumps(frontier),),
        ).fetchall()
        fresh = {int(a): int(b) for a, b in rows if int(a) not in successor}  # type: ignore[arg-type]
        if not fresh:
            break
        successor.update(fresh)
        frontier = [b for b in fresh.values() if b not in successor]
    return successor


def _passes(conn: apsw.Connection, learning: int, filters: tuple[str, list[Any]]) -> bool:
    sql, args = filters
    row = conn.execute(
        f"SELECT 1 FROM learnings d WHERE d.id = ?{sql.format(a='d')}", (learning, *args)
    ).fetchone()
    return row is not None
