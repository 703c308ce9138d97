"""The turns the turn index does not hold yet (the tail), searched with it.

The daemon copies each closed turn into memory.db's turn index on its pass, so while it is
stopped (or between two passes) the newest turns are in transcript.db only, and a search
would not find what was said ten minutes ago. Search therefore reads them too: through the
store, read-only (``store.archive.unindexed_turns``: the observations above the index's
high-water mark for this transcript, the newest :data:`TAIL_MAX`, as the index would store
them, memory tool calls left out), and ranks them with the indexed turns as one collection
(search/rank.py): the index's own tokenizer on their text; BM25's N, average length and
document frequencies counting both; prefix variants from both vocabularies; candidates,
feedback and neighbour lending over both. Normally the tail is empty or a few turns: the
daemon indexes every pass. A process that searches again (the agent's tool) reuses the text
and stems of the turns it read while their rows are unchanged.

A tail turn has no ``T<n>`` yet: its hit is ``N<observation id>`` and its source says "not
indexed yet"; ``search_memory(turn="N<n>")`` opens it from transcript.db (search/turn.py),
or as ``T<n>`` once the index holds it. A turn the daemon indexes is found once, by its
``T<n>``: the tail starts above the high-water mark, and a tail hit the index took in while
the query ran is dropped. The semantic half has no vectors for the tail: words alone.
"""

from __future__ import annotations

import bisect
import json
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import apsw

from wsd.daemon.memory.search.concepts import IndexSpec, as_int
from wsd.daemon.memory.search.text import stems
from wsd.daemon.store import Store, as_turns
from wsd.schema.layout import Layout

#: The most tail turns read per search (the newest): a daemon stopped for days must not make
#: every search read and tokenize its whole backlog.
TAIL_MAX = 2000
PREFIX = "N"
#: What a tail hit's source adds to its session and place.
NOT_INDEXED = ", not indexed yet"
#: A tail turn as a candidate (search/fusion.py): it has no table, FTS index or vocabulary in
#: memory.db (it is read from transcript.db through the store), so those fields are empty.
TAIL = IndexSpec(PREFIX, "", "", "", "", 0.0, "")


@dataclass(frozen=True)
class TailTurn:
    """One turn of the tail, as the turn index would store it."""

    id: int  # its observation id in transcript.db
    session_id: str
    sequence: int
    created_at: float
    prompt: str
    response: str
    tools: str

    @property
    def text(self) -> str:
        """The indexed text (rank.TURNS.text_sql: prompt, response, tools on lines)."""
        return f"{self.prompt}\n{self.response}\n{self.tools}"


@dataclass(frozen=True)
class _Read:
    """One tail turn as read (a hash of its observation row), its text and its stems."""

    row: int
    turn: TailTurn
    counts: Counter[str]
    length: int


#: Per transcript identity, the tail the last search of this process read: the agent's tool
#: searches again and again while the daemon is stopped, and the text and stems of a turn
#: already read are reused while its row is unchanged, the whole Tail while no row changed
#: (turning a thousand turns into text and stems was nine tenths of such a search).
_SEEN: dict[str, tuple[dict[int, _Read], Tail]] = {}
_SEEN_IDENTITIES = 4


class Tail:
    """The tail's turns, tokenized as the index tokenizes (stems and their counts per turn,
    document frequencies); the turns holding a stem and the sorted vocabulary are worked
    out when first asked (a query asks about a few dozen stems, of thousands)."""

    def __init__(self, identity: str, read: list[_Read]) -> None:
        self.identity = identity
        self.turns = {r.turn.id: r.turn for r in read}
        self.docs: dict[int, tuple[Counter[str], int]] = {}
        self._df: Counter[str] = Counter()
        for r in read:
            self.docs[r.turn.id] = (r.counts, r.length)
            self._df.update(r.counts.keys())
        turns = list(self.turns.values())
        self.n = len(self.docs)
        self.tokens = sum(length for _, length in self.docs.values())
        self._holding: dict[str, list[int]] = {}
        self._vocab: list[str] | None = None
        self._sessions: dict[str, list[tuple[int, int]]] = {}
        for turn in sorted(turns, key=lambda t: (t.sequence, t.id)):
            self._sessions.setdefault(turn.session_id, []).append((turn.sequence, turn.id))

    def df(self, stem: str) -> int:
        """How many tail turns hold ``stem``."""
        return self._df.get(stem, 0)

    def forms(self, low: str, high: str, limit: int) -> list[tuple[str, int]]:
        """(stem, document frequency) of the tail's stems from ``low`` up to ``high``, the
        ``limit`` most frequent (the prefix variants' range, as fts5vocab is asked)."""
        if self._vocab is None:
            self._vocab = sorted(self._df)
        vocab = self._vocab
        found = vocab[bisect.bisect_left(vocab, low) : bisect.bisect_left(vocab, high)]
        return sorted(((s, self.df(s)) for s in found), key=lambda f: -f[1])[:limit]

    def holding(self, stems_: Iterable[str]) -> set[int]:
        """The tail turns holding any of these stems."""
        out: set[int] = set()
        for stem in stems_:
            ids = self._holding.get(stem)
            if ids is None:
                ids = [i for i, (c, _) in self.docs.items() if stem in c] if self.df(stem) else []
                self._holding[stem] = ids
            out.update(ids)
        return out

    def links(
        self,
        conn: apsw.Connection,
        rows: list[tuple[int, int | None, int | None]],
        lenders: list[int],
        filters: tuple[str, list[object]],
    ) -> list[tuple[int, int | None, int | None]]:
        """Neighbour links (doc, previous, next) over the index and the tail, tail turns keyed
        by minus their id (as in IndexState.docs): ``rows`` are the index's (the last indexed
        turn of a session gets its next from the tail), ``lenders`` the tail's keys."""
        last = [r[0] for r in rows if r[2] is None]
        places = {}
        if last:
            places = {
                as_int(i): (str(s), as_int(q))
                for i, s, q in conn.execute(
                    "SELECT id, session_id, sequence_num FROM turns"
                    " WHERE id IN (SELECT value FROM json_each(?))",
                    (json.dumps(last),),
                )
            }
        out = [
            (
                doc,
                before,
                after if after is not None or doc not in places else self._next(*places[doc]),
            )
            for doc, before, after in rows
        ]
        sql, args = filters
        for key in lenders:
            turn = self.turns[-key]
            before = self._previous(turn.session_id, turn.sequence)
            if before is None:
                row = conn.execute(
                    "SELECT n.id FROM turns n WHERE n.session_id = ? AND n.sequence_num < ?"
                    f"{sql.format(a='n')} ORDER BY n.sequence_num DESC LIMIT 1",
                    (turn.session_id, turn.sequence, *args),
                ).fetchone()
                before = None if row is None else as_int(row[0])
            out.append((key, before, self._next(turn.session_id, turn.sequence)))
        return out

    def _next(self, session: str, sequence: int) -> int | None:
        later = [i for seq, i in self._sessions.get(session, ()) if seq > sequence]
        return -later[0] if later else None

    def _previous(self, session: str, sequence: int) -> int | None:
        earlier = [i for seq, i in self._sessions.get(session, ()) if seq < sequence]
        return -earlier[-1] if earlier else None

    def indexed_now(self, conn: apsw.Connection, ids: list[int]) -> set[int]:
        """Which of these tail turns the turn index holds by now (the daemon's pass ran while
        the query did): their T<n> is what is found, never both."""
        return {
            as_int(r[0])
            for r in conn.execute(
                "SELECT observation_id FROM turns WHERE transcript_identity = ?"
                " AND observation_id IN (SELECT value FROM json_each(?))",
                (self.identity, json.dumps(ids)),
            )
        }


def workspace_of(layout: Layout | str) -> Layout | None:
    """The workspace of ``layout`` (a workspace, or the path of its memory.db); None for a
    memory.db outside a workspace (a copy, a benchmark's file): it has no transcript."""
    if isinstance(layout, Layout):
        return layout
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(layout))))
    found = Layout(root)
    same = os.path.realpath(found.memory_db) == os.path.realpath(layout)
    return found if same else None


def read_tail(
    layout: Layout, conn: apsw.Connection, tok: apsw.FTS5Tokenizer, since: float | None
) -> Tail | None:
    """The tail of ``layout`` past the turn index of ``conn`` (memory.db, read-only), from
    ``since`` on; None when it is empty or transcript.db cannot be read (not created yet:
    then there is nothing to find in it)."""
    try:
        identity, rows = Store(layout).archive.unindexed_turns(TAIL_MAX, conn)
    except apsw.Error:
        return None
    seen, last = _SEEN.pop(identity, ({}, None))
    fresh: dict[int, _Read] = {}
    changed = len(rows) != len(seen)
    for row in rows:
        oid, fingerprint = as_int(row[0]), hash(row)
        known = seen.get(oid)
        if known is None or known.row != fingerprint:
            turn = _turn(as_turns([row])[0])
            found = stems(tok, turn.text)
            known, changed = _Read(fingerprint, turn, Counter(found), len(found)), True
        fresh[oid] = known
    everything = last if last is not None and not changed else Tail(identity, list(fresh.values()))
    _SEEN[identity] = (fresh, everything)
    while len(_SEEN) > _SEEN_IDENTITIES:
        del _SEEN[next(iter(_SEEN))]
    if since is None:
        return everything if fresh else None
    read = [r for r in fresh.values() if r.turn.created_at >= since]
    return Tail(identity, read) if read else None


def _turn(row: tuple[Any, ...]) -> TailTurn:
    """A turn of :func:`archive.as_turns` as a TailTurn."""
    oid, sid, seq, ts, prompt, response, tools = row
    return TailTurn(
        as_int(oid), str(sid), as_int(seq), float(ts), str(prompt), str(response), str(tools)
    )


def opened(layout: Layout, number: int) -> tuple[str, TailTurn] | None:
    """The transcript's identity and its turn ``number`` (an observation id, as ``N<n>``
    names it), or None when there is no such turn or transcript.db cannot be read."""
    try:
        identity, row = Store(layout).archive.transcript_turn(number)
    except apsw.Error:
        return None
    return None if row is None else (identity, _turn(row))
