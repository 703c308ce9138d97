"""``search_memory``: ranked, read-only full-text search over learnings and past turns.

Contracts:

* Read-only: memory.db is opened with ``SQLITE_OPEN_READONLY``. A missing database, or one
  migrated before the turn index existed, gives fewer results, never an error.
* Any query is safe: whatever the text (quotes, FTS5 operators, ``C++``, ``NEAR(``, ``*``, NUL
  bytes, lone surrogates, 10 kB, "") it is reduced to words that are quoted before they reach
  FTS5, so it returns hits or ``[]`` and never raises. Only a bad ``type`` or ``since`` (the
  caller's mistake, not the query's) raises ValueError.
* Each :class:`Hit` carries an id (``L<n>`` a learning, ``T<n>`` a turn, ``N<n>`` a turn
  the turn index does not hold yet: search/tail.py), its type, date, a
  snippet around the matched words, and its source: the import ``ref`` unchanged; for a
  curated learning the turn it came from, by its turn id (``from turn T<n> (date)``, which
  search/turn.py opens), or its session when the turn index does not hold that turn; for a
  turn, its session and place in it.

Ranking, by method (nothing here knows any data set; details in search/rank.py). Each step
is kept because switching it off alone lowers recall on both development conversations
(``python -m bench memory_ablation``); steps that helped only one were cut.

1. The question goes through the index's own tokenizer (Porter stems). Stop words are
   dropped and the rest are ORed: ANDing every word of a natural question finds almost nothing.
2. Each long word brings the index words sharing its first letters (marriage/married, typos).
3. Candidates come from FTS5's bm25 over the rarer words within a budget of postings, so a
   query of common words over a million learnings stays fast.
4. They are re-scored: BM25 weighted per word, times coordination (the share of the question
   a document covers), then pseudo-relevance feedback adds a few words of the best documents.
5. A share of each score goes to the session neighbours (the next turn often answers the
   previous one).
6. Learnings and turns are merged on scores normalised by the query's ideal score in each
   index, so neither crowds the other out by scale alone; turns count a little less, so for
   equally good matches the curated learning comes first.
7. With the [semantic] extra, the daemon is asked (over its socket, while the words are
   ranked here) for the memories nearest in meaning, and the two orders are merged by
   reciprocal rank; without an answer in time, the words alone decide (search/fusion.py, with
   the floor below which nothing is shown and the order of superseded learnings).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import apsw

from wsd import schema
from wsd.daemon.memory.search.concepts import IndexSpec
from wsd.daemon.memory.search.fusion import DENSE_K, Candidate, fuse, lineage, order
from wsd.daemon.memory.search.rank import LEARNINGS, TURNS, Ranker
from wsd.daemon.memory.search.tail import NOT_INDEXED, TAIL, Tail, read_tail, workspace_of
from wsd.daemon.memory.search.text import (
    analyze,
    clean_query,
    make_snippet,
    session_label,
    tokenizer,
)
from wsd.daemon.memory.semantic import client
from wsd.daemon.runtime.dates import display_date, parse_since
from wsd.daemon.store import LEARNING_TYPES
from wsd.schema.layout import FollowedLayout, Layout

TURN_TYPE = "turn"
TYPES = (*LEARNING_TYPES, TURN_TYPE)
MAX_LIMIT = 100
#: Turn scores count for a little less than learnings': for matches equally good, the
#: curated note (distilled, checked by the curator) reads better than the raw turn.
TURN_DISCOUNT = 0.8


@dataclass(frozen=True)
class Hit:
    """One search result. ``ref`` is the import reference, carried back unchanged."""

    id: str
    type: str
    date: str
    created_at: float
    snippet: str
    source: str
    ref: str | None
    session_id: str | None
    turn: int | None
    score: float = 0.0
    #: The learning that replaced this one (``L<n>``), when the curator said so.
    superseded_by: str | None = None
    #: The turn a learning came from (``T<n>``), when the turn index holds it.
    source_turn: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON object ``wsd search --json`` prints for this hit."""
        return {
            "id": self.id,
            "type": self.type,
            "date": self.date,
            "created_at": self.created_at,
            "snippet": self.snippet,
            "source": self.source,
            "ref": self.ref,
            "session_id": self.session_id,
            "turn": self.turn,
            "score": round(self.score, 4),
            "superseded_by": self.superseded_by,
            "source_turn": self.source_turn,
        }


def holds_words(query: object) -> bool:
    """Whether ``query`` holds a letter or a digit: one that does not (blank, punctuation,
    FTS5 syntax, controls) has nothing to search for, and both surfaces say so instead of
    "nothing matches", which blames the memory (`wsd search '?!'`: issue 45)."""
    return any(ch.isalnum() for ch in clean_query(query).decode("utf-8", "replace"))


def search_memory(
    layout: Layout | str,
    query: object,
    limit: int = 10,
    type: str | None = None,
    since: float | str | None = None,
    *,
    semantic: bool = True,
    semantic_timeout: float | None = None,
) -> list[Hit]:
    """Hits for ``query``, best first, at most ``limit`` (capped at 100); only those that
    match by words or by meaning (search/fusion.py), so possibly none.

    ``layout`` is a workspace Layout or the path of a memory.db. ``type`` is a learning type
    or ``"turn"``; ``since`` an epoch, an ISO date/time, or an age such as ``"7d"``.
    ``semantic=False`` ranks by words alone without asking the daemon; ``semantic_timeout``
    is how long to wait for it (default client.TIMEOUT).
    """
    if type is not None and type not in TYPES:
        raise ValueError(f"unknown type {type!r}: use one of {', '.join(TYPES)}")
    since_ts = parse_since(since)
    try:
        limit = max(0, min(int(limit), MAX_LIMIT))
    except (TypeError, ValueError):
        limit = 10
    if isinstance(layout, Layout):  # a satellite reads its copy of home's memory.db
        layout = layout.reading()
        semantic = semantic and not isinstance(layout, FollowedLayout)
    path = layout.memory_db if isinstance(layout, Layout) else layout
    if limit == 0 or not os.path.exists(path):
        return []
    text = clean_query(query).decode("utf-8", "replace")
    if not holds_words(text):
        return []
    # The semantic half is asked of the daemon while the words are ranked here (None: not
    # running, no extra, too slow).
    answer: list[client.Dense | None] = [None]

    def ask() -> None:
        answer[0] = client.dense(
            _workspace(layout), text, type, since_ts, DENSE_K, semantic_timeout
        )

    asking = threading.Thread(target=ask, daemon=True) if semantic else None
    if asking is not None:
        asking.start()

    def near() -> client.Dense | None:
        if asking is not None:
            asking.join()
        return answer[0]

    conn = schema.connect(path, "memory", readonly=True)
    try:
        return _Search(conn, type, since_ts, workspace_of(layout)).run(query, limit, near)
    finally:
        conn.close()
        near()  # never leave the thread behind


def _workspace(layout: Layout | str) -> Layout:
    """The workspace of a memory.db path (``<root>/.os/memory/memory.db``)."""
    if isinstance(layout, Layout):
        return layout
    return Layout(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(layout)))))


#: What the agent reads when nothing clears the floor (search/fusion.py): one line, no
#: padding with weak matches, and what to try next.
NOTHING = (
    "Nothing in memory matches this well. Try other words (a name, a specific term),"
    " a shorter question, or `since` to look at a period."
)


def format_hits(hits: Sequence[Hit]) -> str:
    """Compact text an agent reads: a header line and a snippet line per hit."""
    if not hits:
        return NOTHING
    lines = []
    for hit in hits:
        replaced = f" · superseded by {hit.superseded_by}" if hit.superseded_by else ""
        lines.append(f"[{hit.id}] {hit.type} · {hit.date} · {hit.source}{replaced}")
        lines.append(f"  {hit.snippet}")
    return "\n".join(lines)


class _Search:
    """One query against one open, read-only memory.db."""

    def __init__(
        self,
        conn: apsw.Connection,
        type_: str | None,
        since: float | None,
        workspace: Layout | None,
    ) -> None:
        self.conn = conn
        self.type = type_
        # Virtual tables are listed as tables too; an older schema simply lacks some.
        self.tables = {
            str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if "learnings_fts" in self.tables and "learnings_vocab" not in self.tables:
            # A memory.db from before migration 002: a temp vocabulary needs no write access.
            conn.execute(
                "CREATE VIRTUAL TABLE temp.learnings_vocab"
                " USING fts5vocab(main, learnings_fts, 'row')"
            )
            self.tables.add("learnings_vocab")
        self.tok = tokenizer(conn)
        sql, args = "", list[Any]()
        if type_ is not None and type_ != TURN_TYPE:
            sql += " AND {a}.type = ?"
            args.append(type_)
        if since is not None:
            sql += " AND {a}.created_at >= ?"
            args.append(since)
        self.filters: tuple[str, list[Any]] = (sql, args)
        self.workspace, self.since = workspace, since
        self.tail: Tail | None = None

    def _read_tail(self) -> Tail | None:
        """The turns past the turn index (search/tail.py), when turns are searched."""
        if self.workspace is None or TURNS not in self._indexes():
            return None
        return read_tail(self.workspace, self.conn, self.tok, self.since)

    def run(self, query: object, limit: int, near: Callable[[], client.Dense | None]) -> list[Hit]:
        terms = analyze(self.tok, query)
        lexical: list[Candidate] = []
        weights: dict[str, float] = {}
        self.tail = self._read_tail() if terms else None
        ranker = Ranker(self.conn, self.tok, self.filters, self.tail)
        for spec in self._indexes() if terms else []:
            state = ranker.score(spec, terms)
            if state is not None:
                factor = TURN_DISCOUNT if spec is TURNS else 1.0
                for i, s in state.scores.items():
                    if s > 0:  # a tail turn is keyed by minus its id (see IndexState)
                        kind, direct = TAIL if i < 0 else spec, i in state.direct
                        lent = i in state.lent
                        lexical.append(
                            Candidate(
                                kind, abs(i), s * factor, s * factor, direct=direct, lent=lent
                            )
                        )
                for key, weight in state.weights.items():
                    weights[key] = max(weight, weights.get(key, 0.0))
        wanted = {spec.prefix for spec in self._indexes()}
        answer = near()
        dense = [h for h in answer.hits if h[0] in wanted] if answer is not None else None
        ranked = lineage(self.conn, fuse(order(lexical), dense), self.filters)
        # A few more than asked: a turn erased whole is dropped when its text is read.
        shown = [c for c in ranked if not c.weak][: limit + STUB_SLACK]
        return self._hits(shown, weights)[:limit]

    def _indexes(self) -> list[IndexSpec]:
        wanted = []
        if self.type != TURN_TYPE and "learnings_vocab" in self.tables:
            wanted.append(LEARNINGS)
        if self.type in (None, TURN_TYPE) and "turns_vocab" in self.tables:
            wanted.append(TURNS)
        return wanted

    def _hits(self, ranked: list[Candidate], weights: dict[str, float]) -> list[Hit]:
        found: dict[tuple[str, int], Hit] = {}
        for spec in (LEARNINGS, TURNS):
            ids = [c.id for c in ranked if c.spec is spec]
            if ids:
                for doc_id, hit in self._fetch(spec, ids, weights):
                    found[(spec.prefix, doc_id)] = hit
        found.update(self._tail_hits([c.id for c in ranked if c.spec is TAIL], weights))
        out = []
        for c in ranked:
            known = found.get(c.key)
            if known is not None:
                after = None if c.superseded_by is None else f"L{c.superseded_by}"
                out.append(replace(known, score=c.score, superseded_by=after))
        return out

    def _fetch(
        self, spec: IndexSpec, ids: list[int], weights: dict[str, float]
    ) -> Iterator[tuple[int, Hit]]:
        args = (json.dumps(ids),)
        if spec is LEARNINGS:
            cited = self._cited(ids)
            for lid, kind, ts, content, ref, session, imported in self.conn.execute(
                "SELECT id, type, created_at, content, ref, session_id,"
                " batch_id IS NULL"  # no curator batch: it came in by `wsd import`
                " FROM learnings WHERE id IN (SELECT value FROM json_each(?))",
                args,
            ):
                source = cited.get(int(lid))
                yield (
                    int(lid),
                    Hit(
                        f"L{lid}",
                        str(kind),
                        display_date(ts),
                        float(ts),
                        make_snippet(self.tok, str(content), weights),
                        _learning_source(ref, session, bool(imported), source),
                        None if ref is None else str(ref),
                        None if session is None else str(session),
                        None if source is None else source.sequence,
                        source_turn=None if source is None else source.id,
                    ),
                )
            return
        for tid, ts, session, seq, prompt, response, tools in self.conn.execute(
            "SELECT id, created_at, session_id, sequence_num, prompt, response, tools FROM turns"
            " WHERE id IN (SELECT value FROM json_each(?))",
            args,
        ):
            if erased_whole(prompt, response, tools):
                continue
            yield (
                int(tid),
                Hit(
                    f"T{tid}",
                    TURN_TYPE,
                    display_date(ts),
                    float(ts),
                    self._turn_snippet(str(prompt), str(response), str(tools), weights),
                    session_label(session, seq),
                    None,
                    str(session),
                    int(seq),
                ),
            )

    def _tail_hits(
        self, ids: list[int], weights: dict[str, float]
    ) -> Iterator[tuple[tuple[str, int], Hit]]:
        """Hits of these tail turns, but those the index took in while the query ran."""
        if not ids or self.tail is None:
            return
        indexed = self.tail.indexed_now(self.conn, ids)
        for oid in ids:
            t = self.tail.turns[oid]
            if oid not in indexed and not erased_whole(t.prompt, t.response, t.tools):
                yield (
                    (TAIL.prefix, oid),
                    Hit(
                        f"{TAIL.prefix}{oid}",
                        TURN_TYPE,
                        display_date(t.created_at),
                        t.created_at,
                        self._turn_snippet(t.prompt, t.response, t.tools, weights),
                        session_label(t.session_id, t.sequence) + NOT_INDEXED,
                        None,
                        t.session_id,
                        t.sequence,
                    ),
                )

    def _turn_snippet(
        self, prompt: str, response: str, tools: str, weights: dict[str, float]
    ) -> str:
        parts = [
            f"{label}: {text}"
            for label, text in (("user", prompt), ("agent", response), ("tools", tools))
            if text
        ]
        return make_snippet(self.tok, " | ".join(parts), weights)

    def _cited(self, ids: list[int]) -> dict[int, _Cited]:
        """For each of these learnings whose source turns the turn index holds, the first of
        them (by observation id: the order they were recorded) and how many it holds."""
        if "turns" not in self.tables:
            return {}
        has_links = "learning_sources" in self.tables
        # A learning stored before learning_sources existed has no links: its one source
        # turn is source_observation_id of its session (learnings do not name the transcript).
        parts = [
            "SELECT l.id AS lid, t.id AS tid, t.observation_id AS oid FROM learnings l"
            " JOIN turns t"
            " ON t.observation_id = l.source_observation_id AND t.session_id = l.session_id"
            " WHERE l.id IN (SELECT value FROM json_each(?1))"
            + (
                " AND NOT EXISTS (SELECT 1 FROM learning_sources s WHERE s.learning_id = l.id)"
                if has_links
                else ""
            )
        ]
        if has_links:  # the turn it cites, or every turn of its batch
            parts.append(
                "SELECT s.learning_id, t.id, t.observation_id FROM learning_sources s"
                " JOIN turns t ON t.transcript_identity = s.transcript_identity"
                " AND t.observation_id = s.observation_id"
                " WHERE s.learning_id IN (SELECT value FROM json_each(?1))"
            )
        found: dict[int, _Cited] = {}
        for lid, tid, ts, seq in self.conn.execute(
            "SELECT c.lid, t.id, t.created_at, t.sequence_num FROM"
            f" ({' UNION '.join(parts)}) AS c"
            " JOIN turns t ON t.id = c.tid ORDER BY c.lid, c.oid, t.id",
            (json.dumps(ids),),
        ):
            first = found.get(int(lid))
            if first is None:
                found[int(lid)] = _Cited(f"T{tid}", display_date(ts), int(seq), 1)
            else:
                found[int(lid)] = replace(first, turns=first.turns + 1)
        return found


@dataclass(frozen=True)
class _Cited:
    """The first turn a learning came from that the turn index holds (``id`` ``T<n>``, its
    date and place in its session) and how many of its source turns the index holds."""

    id: str
    date: str
    sequence: int
    turns: int


#: Candidates read beyond the limit, for the erased turns dropped among them.
STUB_SLACK = 5
#: What stands where a forget or the retention erased a turn's text (forget/words.py).
_MARKS = ("[forgotten]", "[erased by retention]")


def erased_whole(*texts: object) -> bool:
    """Whether a turn's texts hold nothing but erasure marks (issue 45: `user: [forgotten]`
    stubs of erased turns padded search results): never a hit."""
    rest = " ".join(str(t) for t in texts if t)
    for mark in _MARKS:
        rest = rest.replace(mark, " ")
    return not rest.strip(' \n\t.[]{}",:')


def _learning_source(ref: object, session: object, imported: bool, cited: _Cited | None) -> str:
    """Where a learning came from: its import reference; else the turn it came from, by the
    id the agent can open (``and N more`` when the curator named no one turn and it stands
    for its whole batch); else its session (the turn not indexed, or an older memory.db).
    One imported with neither ref nor session says so (it was shown as "curated")."""
    if ref is not None and str(ref):
        return str(ref)
    if cited is not None:
        more = f" and {cited.turns - 1} more" if cited.turns > 1 else ""
        return f"from turn {cited.id} ({cited.date}){more}"
    if session is None:
        return "imported" if imported or ref is not None else "curated"
    return session_label(session, None)
