"""Ranking for search_memory: one index (learnings or turns) scored for one query.

The steps, all general methods (see search/core.py for the overview):

* statistics: N and the average length from FTS5's own totals; document frequencies and
  concepts (a query word with its other forms) from search/concepts.py;
* candidates: FTS5 bm25 over the rarer words, within a budget of postings;
* re-scoring: weighted BM25 times coordination, normalised by the query's ideal score;
* pseudo-relevance feedback, then a share of each score lent to session neighbours.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import apsw

from wsd.daemon.memory.search.concepts import ConceptBase, IndexSpec, IndexState, as_int, phrase
from wsd.daemon.memory.search.tail import Tail
from wsd.daemon.memory.search.text import STOP_WORDS, Term, spans, stems

# BM25's usual constants (also FTS5's own bm25()).
K1 = 1.2
B = 0.75
#: Documents re-scored per index, and those that lend score to their neighbours.
CANDIDATES = 100
LENDERS = 50
#: Postings the candidate query may visit (about 1 µs each in FTS5's bm25), rarer words first:
#: bounds the latency on a large archive; a small one never reaches it.
POSTINGS_BUDGET = 1500
#: Pseudo-relevance feedback: documents, words taken, their weight against a query word.
PRF_DOCS = 3
PRF_TERMS = 10
PRF_WEIGHT = 0.3


LEARNINGS = IndexSpec(
    "L",
    "learnings",
    "learnings_fts",
    "learnings_vocab",
    "{a}.content",
    # Learnings are meant to stand alone, so their neighbours get a small share.
    0.1,
    "SELECT d.id,"
    " (SELECT max(n.id) FROM learnings n WHERE n.session_id = d.session_id AND n.id < d.id{f}),"
    " (SELECT min(n.id) FROM learnings n WHERE n.session_id = d.session_id AND n.id > d.id{f})"
    " FROM learnings d WHERE d.id IN (SELECT value FROM json_each(?))"
    " AND d.session_id IS NOT NULL",
)
TURNS = IndexSpec(
    "T",
    "turns",
    "turns_fts",
    "turns_vocab",
    "{a}.prompt || char(10) || {a}.response || char(10) || {a}.tools",
    # A turn is half a dialogue: the next one often answers it.
    0.3,
    "SELECT d.id,"
    " (SELECT n.id FROM turns n WHERE n.session_id = d.session_id"
    " AND n.sequence_num < d.sequence_num{f} ORDER BY n.sequence_num DESC LIMIT 1),"
    " (SELECT n.id FROM turns n WHERE n.session_id = d.session_id"
    " AND n.sequence_num > d.sequence_num{f} ORDER BY n.sequence_num LIMIT 1)"
    " FROM turns d WHERE d.id IN (SELECT value FROM json_each(?))",
)


class Ranker(ConceptBase):
    """Scores indexes of one open memory.db; ``filters`` is (SQL on alias ``d``, args)."""

    def __init__(
        self,
        conn: apsw.Connection,
        tok: apsw.FTS5Tokenizer,
        filters: tuple[str, list[Any]],
        tail: Tail | None = None,
    ) -> None:
        super().__init__(conn, tok)
        self.filter_sql, self.filter_args = filters
        self.asked: set[str] = set()  # the question's own stems (its concepts)
        self.tail = tail  # the turns not indexed yet, ranked with TURNS (search/tail.py)

    def score(self, spec: IndexSpec, terms: list[Term]) -> IndexState | None:
        """Scores (normalised, higher is better) of the documents worth returning."""
        state = self._open(spec, terms)
        if state is None:
            return None
        state.weights = {t.stem: 1.0 for t in terms}
        self.asked = {t.stem for t in terms}
        state.phrase.update((t.stem, phrase(t.word)) for t in terms)
        self._doc_freqs(state, list(state.weights))
        self._variants(state)
        self._candidates(state, state.weights)
        if not state.docs:
            return None
        self._rescore(state)
        expansion = self._feedback(state)
        if expansion:
            self._doc_freqs(state, list(expansion))
            state.weights.update(expansion)
            self._candidates(state, expansion, share=0.5)
            self._rescore(state)
        scored = set(state.scores)
        self._spread(state)
        # A document only a neighbour's share brought in (a next turn that answers): lent.
        state.lent = set(state.scores) - scored
        return state

    # -- statistics ------------------------------------------------------------------------

    def _open(self, spec: IndexSpec, terms: list[Term]) -> IndexState | None:
        """(N, average length) from FTS5's totals, read through one matched row (the last
        row when only the tail matches), the tail's counted in; None when no document of the
        collection holds a word of the query."""
        tail = self.tail if spec is TURNS else None
        (last,) = self._one(f"SELECT max(rowid) FROM {spec.fts}", ())
        in_tail = tail is not None and any(tail.df(t.stem) for t in terms)
        rows, tokens = 0, 0
        if last:
            words = " OR ".join(phrase(t.word) for t in terms)
            found = self._totals(spec, f"{spec.fts} MATCH ?", words)
            if found is None and in_tail:
                found = self._totals(spec, "rowid = ?", last)
            rows, tokens = found or (0, 0)
        if rows <= 0 and not in_tail:
            return None
        if tail is not None:
            tokens += tail.tokens
        state = IndexState(spec, rows, 1.0, as_int(last), tail)
        state.avgdl = max(tokens / max(state.total, 1), 1.0)
        return state

    def _totals(self, spec: IndexSpec, where: str, arg: object) -> tuple[int, int] | None:
        """(rows, tokens) of the index, from FTS5's totals, read through the first row of
        ``where`` (None when it has none)."""
        box: list[tuple[int, int]] = []

        def stats(api: apsw.FTS5ExtensionApi, *args: apsw.SQLiteValue) -> int:
            box.append((api.row_count, api.column_total_size(-1)))
            return 0

        # Registered per query: the callback closes over this query's box.
        self.conn.register_fts5_function("wsd_stats", stats)
        self.conn.execute(
            f"SELECT wsd_stats({spec.fts}) FROM {spec.fts} WHERE {where} LIMIT 1", (arg,)
        ).fetchall()
        return box[0] if box else None

    def _candidates(self, state: IndexState, weights: dict[str, float], share: float = 1.0) -> None:
        """Add the best CANDIDATES documents of FTS5's bm25 over the rarer words (``share``
        of the count and of the postings budget: feedback words get half), and every tail
        turn holding one of the words (the tail is small, and already tokenized)."""
        self._index_candidates(state, weights, share)
        if state.tail is not None:
            for doc_id in state.tail.holding(weights):
                state.docs.setdefault(-doc_id, state.tail.docs[doc_id])

    def _index_candidates(self, state: IndexState, weights: dict[str, float], share: float) -> None:
        budget = int(POSTINGS_BUDGET * share)
        spec = state.spec
        chosen: list[str] = []
        postings = 0
        for key in sorted(weights, key=lambda k: state.df.get(k, 0)):
            df = state.df.get(key, 0)
            if df == 0 or key not in state.phrase:
                continue
            if chosen and postings + df > budget:
                break
            chosen.append(key)
            postings += df
        if not chosen:
            return
        args: list[Any] = [" OR ".join(dict.fromkeys(state.phrase[k] for k in chosen))]
        window = ""
        if postings > budget:
            # Only very common words: rank among the most recent rows the budget affords.
            window = " AND f.rowid > ?"
            args.append(state.max_id - int(state.n * budget / postings))
        # Row ids first, the text of the few best after: fetching every match's text
        # before the sort would cost more than the ranking itself.
        join = f" JOIN {spec.table} d ON d.id = f.rowid" if self.filter_sql else ""
        ids = [
            as_int(r[0])
            for r in self.conn.execute(
                f"SELECT f.rowid FROM {spec.fts} f{join} WHERE {spec.fts} MATCH ?{window}"
                f"{self.filter_sql.format(a='d')} ORDER BY bm25({spec.fts}) LIMIT ?",
                (*args, *self.filter_args, int(CANDIDATES * share)),
            )
        ]
        for rowid, text in self.conn.execute(
            f"SELECT d.id, {spec.text_sql.format(a='d')} FROM {spec.table} d"
            " WHERE d.id IN (SELECT value FROM json_each(?))",
            (json.dumps([i for i in ids if i not in state.docs]),),
        ):
            found = stems(self.tok, str(text))
            state.docs[as_int(rowid)] = (Counter(found), len(found))

    def _rescore(self, state: IndexState) -> None:
        """Weighted BM25 x coordination, normalised by the query's ideal score.

        A query word and its forms are one concept: a document earns the best of them, once,
        so forms widen what matches without counting a word twice. Coordination (the share
        of the query's weight a document covers) keeps one rare word repeated from beating a
        document that answers the whole question.
        """
        concepts: dict[str, list[tuple[str, float]]] = {}
        for key, weight in state.weights.items():
            concept = state.group.get(key, key)
            concepts.setdefault(concept, []).append((key, weight * state.idf(key)))
        # A concept is worth its own word, or its best form when the word is unknown here.
        worth = {}
        for concept, forms in concepts.items():
            own = [v for k, v in forms if k == concept and state.doc_freq(k)]
            known = [v for k, v in forms if state.doc_freq(k)]
            worth[concept] = own[0] if own else max(known, default=0.0)
        ideal = sum(worth.values()) or 1.0
        info = {
            key: (concept, value) for concept, forms in concepts.items() for key, value in forms
        }
        scale = 1.0 / (ideal * (K1 + 1))
        state.scores, state.direct = {}, set()
        for doc_id, (counts, length) in state.docs.items():
            norm = K1 * (1 - B + B * length / state.avgdl)
            best: dict[str, float] = {}
            matched: dict[str, float] = {}
            for key in counts.keys() & info.keys():
                concept, value = info[key]
                tf = counts[key]
                gain = value * tf * (K1 + 1) / (tf + norm)
                if gain > best.get(concept, 0.0):
                    best[concept] = gain
                if value > matched.get(concept, 0.0):
                    matched[concept] = value
            if best:
                covered = sum(min(worth[c], v) for c, v in matched.items())
                state.scores[doc_id] = sum(best.values()) * coordination(covered, ideal) * scale
                if not self.asked.isdisjoint(best):
                    state.direct.add(doc_id)

    def _feedback(self, state: IndexState) -> dict[str, float]:
        """Words of the best documents (relevance-model weights) not in the query yet."""
        best = sorted(state.scores.items(), key=lambda kv: -kv[1])[:PRF_DOCS]
        if not best:
            return {}
        top = best[0][1]
        mass: dict[str, float] = {}
        for doc_id, score in best:
            counts, length = state.docs[doc_id]
            for key, tf in counts.items():
                if key not in state.weights and _expandable(key):
                    mass[key] = mass.get(key, 0.0) + tf / max(length, 1) * score / top
        picked = sorted(mass.items(), key=lambda kv: (-kv[1], kv[0]))[:PRF_TERMS]
        if not picked:
            return {}
        self._surface_words(state, [d for d, _ in best], {k for k, _ in picked})
        peak = picked[0][1]
        return {k: PRF_WEIGHT * m / peak for k, m in picked if k in state.phrase}

    def _surface_words(self, state: IndexState, doc_ids: list[int], wanted: set[str]) -> None:
        """A word of the documents for each stem: FTS5 is queried with words, not stems."""
        spec = state.spec
        texts = [
            str(text)
            for (text,) in self.conn.execute(
                f"SELECT {spec.text_sql.format(a='d')} FROM {spec.table} d"
                " WHERE d.id IN (SELECT value FROM json_each(?))",
                (json.dumps([i for i in doc_ids if i > 0]),),
            )
        ]
        if state.tail is not None:
            texts += [state.tail.turns[-i].text for i in doc_ids if i < 0]
        for text in texts:
            data = text.encode("utf-8", "replace")
            for start, end, stem in spans(self.tok, data):
                if stem in wanted and stem not in state.phrase:
                    state.phrase[stem] = phrase(data[start:end].decode("utf-8", "replace"))

    def _spread(self, state: IndexState) -> None:
        """Lend a share of each document's score to its neighbours in the same session."""
        share = state.spec.neighbour_share
        if not state.scores or share <= 0:
            return
        # From the best documents only: a share of a weak score cannot lift anything far
        # (nor, alone, over the floor of a hit with no word of the query: MIN_INDIRECT).
        # Only a document holding a word of the question lends (issue 45: the best hits'
        # feedback words brought in turns that lent on to their own neighbours).
        direct = [d for d in state.scores if d in state.direct]
        lenders = sorted(direct, key=state.scores.__getitem__, reverse=True)[:LENDERS]
        sql = state.spec.neighbours_sql.format(f=self.filter_sql.format(a="n"))
        args = (*self.filter_args, *self.filter_args, json.dumps([i for i in lenders if i > 0]))
        links = [
            (as_int(doc), _maybe(before), _maybe(after))
            for doc, before, after in self.conn.execute(sql, args)
        ]
        if state.tail is not None:
            filters = (self.filter_sql, self.filter_args)
            links = state.tail.links(self.conn, links, [i for i in lenders if i < 0], filters)
        lent: dict[int, float] = {}
        for doc_id, before, after in links:
            gift = share * state.scores[doc_id]
            for other in (before, after):
                if other is not None:
                    lent[other] = lent.get(other, 0.0) + gift
        for doc_id, extra in lent.items():
            state.scores[doc_id] = state.scores.get(doc_id, 0.0) + extra


def _maybe(value: object) -> int | None:
    return None if value is None else as_int(value)


def coordination(covered: float, ideal: float) -> float:
    """The share of the question's weight a document covers (1.0: every word)."""
    return covered / ideal


def _expandable(key: str) -> bool:
    """Feedback words worth adding: not numbers, fragments or function words."""
    return len(key) >= 3 and not key.isdigit() and key not in STOP_WORDS
