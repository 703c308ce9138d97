"""What a query word stands for in one index: statistics, and the word's other forms.

:class:`ConceptBase` holds the steps before ranking (search/rank.py ranks):

* statistics: document frequencies exact from fts5vocab when cheap, else estimated from the
  most recent rows;
* concepts: each query word plus the index words sharing its first letters
  (marriage/married, typos), scored as one.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import apsw

if TYPE_CHECKING:  # search/tail.py builds on this module
    from wsd.daemon.memory.search.tail import Tail

#: Most recent rows sampled to estimate a common word's document frequency cheaply.
DF_SAMPLE = 5000
#: Variants of long query words: minimum length, shared prefix, how many, relative weight.
VARIANT_MIN = 6
VARIANT_PREFIX = 5
VARIANT_LIMIT = 8
VARIANT_WEIGHT = 0.5
#: Words in more than this share of the documents get no variants.
VARIANT_MAX_SHARE = 0.05


@dataclass(frozen=True)
class IndexSpec:
    """One searchable table and how its neighbours are found."""

    prefix: str
    table: str
    fts: str
    vocab: str
    text_sql: str  # the indexed text, with {a} for the table alias
    neighbour_share: float
    neighbours_sql: str  # (id, previous, next) of the ids in json_each(?); {f} = filters


@dataclass
class IndexState:
    """One index's statistics, concepts, candidates and scores for one query.

    With a tail (the turns not indexed yet, search/tail.py) the collection is the index and
    the tail: ``n``, ``max_id`` and ``df`` are the index's (what FTS5 is asked about),
    :meth:`total` and :meth:`doc_freq` count both, and ``avgdl`` is over both. A tail turn is
    keyed by minus its id in ``docs``, ``scores`` and ``direct``.
    """

    spec: IndexSpec
    n: int
    avgdl: float
    max_id: int
    tail: Tail | None = None
    df: dict[str, int] = field(default_factory=dict)
    phrase: dict[str, str] = field(default_factory=dict)  # stem -> FTS5 string that finds it
    group: dict[str, str] = field(default_factory=dict)  # form -> the query stem it stands for
    weights: dict[str, float] = field(default_factory=dict)
    docs: dict[int, tuple[Counter[str], int]] = field(default_factory=dict)
    scores: dict[int, float] = field(default_factory=dict)
    #: The documents holding a word of the question (or a form of one); the others owe
    #: their score to feedback words (never a hit) or to a neighbour (fusion.py: MIN_INDIRECT).
    direct: set[int] = field(default_factory=set)
    #: The documents only a session neighbour's share of its score brought in.
    lent: set[int] = field(default_factory=set)

    @property
    def total(self) -> int:
        """Documents in the collection: the index's and the tail's."""
        return self.n + (self.tail.n if self.tail is not None else 0)

    def doc_freq(self, stem: str) -> int:
        """Documents holding ``stem``, in the index and the tail."""
        return self.df.get(stem, 0) + (self.tail.df(stem) if self.tail is not None else 0)

    def idf(self, stem: str) -> float:
        df = self.doc_freq(stem)
        return math.log((self.total - df + 0.5) / (df + 0.5) + 1.0)


def phrase(word: str) -> str:
    """A word as an FTS5 string: quoted, so no operator or syntax can slip in."""
    return '"' + word.replace('"', '""') + '"'


class ConceptBase:
    """Statistics and concepts of one index, on one open connection."""

    def __init__(self, conn: apsw.Connection, tok: apsw.FTS5Tokenizer) -> None:
        self.conn = conn
        self.tok = tok

    def _doc_freqs(self, state: IndexState, keys: list[str]) -> None:
        """Document frequencies: exact when cheap, else estimated from the recent rows.

        fts5vocab counts a word's documents by walking its whole posting list (milliseconds
        for a word in most of a million rows); a rowid-window count is cheap and close.
        """
        fts = state.spec.fts
        for key in keys:
            if key in state.df or key not in state.phrase:
                continue
            if state.n > DF_SAMPLE:
                (seen,) = self._one(
                    f"SELECT count(*) FROM (SELECT 1 FROM {fts} WHERE {fts} MATCH ? AND rowid > ?)",
                    (state.phrase[key], state.max_id - DF_SAMPLE),
                )
                if int(seen) >= 20:
                    state.df[key] = min(state.n, round(int(seen) * state.n / DF_SAMPLE))
                    continue
            state.df[key] = self._vocab_df(state, key)

    def _vocab_df(self, state: IndexState, stem: str) -> int:
        row = self.conn.execute(
            f"SELECT doc FROM {state.spec.vocab} WHERE term = ?", (stem,)
        ).fetchone()
        return int(row[0]) if row else 0

    def _one(self, sql: str, args: tuple[Any, ...]) -> tuple[Any, ...]:
        row = self.conn.execute(sql, args).fetchone()
        return tuple(row) if row is not None else (0,)

    # -- concepts --------------------------------------------------------------------------

    def _add_form(
        self,
        state: IndexState,
        key: str,
        found: str,
        weight: float,
        df: int | None,
        query_stem: str,
    ) -> None:
        if key in state.weights:
            return
        state.weights[key] = weight
        state.phrase[key] = found
        state.group[key] = query_stem
        if df is not None:
            state.df[key] = df

    def _variants(self, state: IndexState) -> None:
        """Index words sharing a long query word's first letters, at a reduced weight.

        Porter misses many derivations (married/marriage, compete/competition,
        photo/photography) and every typo; a shared five-letter prefix, or a shorter known
        stem the word extends ("educaton" -> "educ"), catches most of them. Only the index
        vocabulary is consulted, so every variant exists somewhere.
        """
        for stem, weight in list(state.weights.items()):
            if len(stem) < VARIANT_MIN or stem.isdigit() or stem in state.group:
                continue
            if state.doc_freq(stem) > state.total * VARIANT_MAX_SHARE:
                continue  # a common word matches plenty as it is
            head = stem[:VARIANT_PREFIX]
            # fts5vocab walks each term's postings, so the word itself (maybe common) is
            # left out of the scan: the ranges below it and above it.
            found: dict[str, int] = {}  # variant -> its document frequency in the index
            for low, high in ((head, stem), (stem + "\x00", head[:-1] + chr(ord(head[-1]) + 1))):
                for term, doc in self.conn.execute(
                    f"SELECT term, doc FROM {state.spec.vocab} WHERE term >= ? AND term < ?"
                    " ORDER BY doc DESC LIMIT ?",
                    (low, high, VARIANT_LIMIT),
                ):
                    found[str(term)] = as_int(doc)
                if state.tail is not None:  # the tail's words are the collection's too
                    for term, _ in state.tail.forms(low, high, VARIANT_LIMIT):
                        found.setdefault(term, 0)
            tail = state.tail
            in_all = {t: df + (tail.df(t) if tail is not None else 0) for t, df in found.items()}
            best = sorted(in_all, key=lambda t: -in_all[t])[:VARIANT_LIMIT]
            # A shorter known stem the word extends ("educaton" -> "educ").
            short = stem[: VARIANT_PREFIX - 1]
            df = self._vocab_df(state, short)
            if df or (tail is not None and tail.df(short)):
                found[short] = df
                best.append(short)
            # Each variant is matched as itself (a prefix query would also match the common
            # words sharing the prefix, which the postings budget would not see coming).
            # Porter leaves a stem as it is, so the quoted stem finds exactly that term.
            for term in best:
                if term != stem:
                    self._add_form(
                        state, term, phrase(term), weight * VARIANT_WEIGHT, found[term], stem
                    )


def as_int(value: object) -> int:
    """An integer column value (typed loosely by apsw)."""
    return int(value) if isinstance(value, int | float | str) else 0
