"""Text handling for search_memory: query analysis, snippets and session labels.

The query goes through the same tokenizer as the index (FTS5 ``porter unicode61
remove_diacritics 2``, called through apsw), so a query word and the words of
the documents meet as the same stem. Words, not syntax, reach FTS5: each kept
word is later quoted, which is what makes every input safe.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import cast

import apsw

from wsd.schema.stems import fold, fold_bytes

#: The index's tokenizer arguments (schema/sql/memory: learnings_fts, turns_fts).
TOKENIZER = ("porter", ["unicode61", "remove_diacritics", "2"])
#: Longer input is cut here: a question is short, and a pasted page needs only its start.
MAX_QUERY_CHARS = 4000
#: Distinct terms kept from one query (the OR query and the re-scoring stay bounded).
MAX_TERMS = 24


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# English function words (the common IR stop list): they carry no topic. Checked against
# the lower-cased word and its stem ("s" and "t" are what "it's" and "don't" leave behind).
STOP_WORDS = _words("""
a about above after again against all am an and any are aren as at be because been before being
below between both but by can couldn could d did didn do does doesn doing don down during each
few for from further had hadn has hasn have haven having he her here hers herself him himself
his how i if in into is isn it its itself just ll m ma me mightn more most mustn my myself
needn no nor not now o of off on once only or other our ours ourselves out over own re s same
shan she should shouldn so some such t than that the their theirs them themselves then there
these they this those through to too under until up ve very was wasn we were weren what when
where which while who whom why will with would wouldn y you your yours yourself yourselves
another else every may might must shall whose yet
""")


@dataclass(frozen=True)
class Term:
    """One query word: the surface word (what FTS5 is asked for) and its stem."""

    word: str
    stem: str


def tokenizer(conn: apsw.Connection) -> apsw.FTS5Tokenizer:
    """The index's tokenizer, bound to ``conn``."""
    return conn.fts5_tokenizer(TOKENIZER[0], list(TOKENIZER[1]))


def spans(tok: apsw.FTS5Tokenizer, data: bytes, query: bool = False) -> list[tuple[int, int, str]]:
    """(start byte, end byte, stem) of each token of UTF-8 ``data`` (its letters folded as
    the index folds them: :func:`wsd.schema.stems.fold`; the offsets are ``data``'s)."""
    flags = apsw.FTS5_TOKENIZE_QUERY if query else apsw.FTS5_TOKENIZE_DOCUMENT
    folded, origin = fold_bytes(data)
    out = []
    for item in tok(folded, flags, None, include_colocated=False):
        if isinstance(item, tuple) and len(item) >= 3:
            a, b = int(item[0]), int(item[1])
            out.append(
                (a, b, str(item[2])) if origin is None else (origin[a], origin[b], str(item[2]))
            )
    return out


def stems(tok: apsw.FTS5Tokenizer, text: str) -> list[str]:
    """The stems of ``text`` in order, as the index stores them."""
    data = fold(text).encode("utf-8", "replace")
    found = tok(
        data, apsw.FTS5_TOKENIZE_DOCUMENT, None, include_offsets=False, include_colocated=False
    )
    # Without offsets or colocated tokens apsw gives the tokens themselves, strings: copying
    # them one by one was a third of tokenizing a thousand turns.
    return cast(list[str], found)


def clean_query(query: object) -> bytes:
    """Any object as bounded UTF-8 without NULs (lone surrogates become '?')."""
    text = query if isinstance(query, str) else ("" if query is None else str(query))
    # Folded as the index is: the quoted words reach FTS5, which does not fold them.
    return fold(text[:MAX_QUERY_CHARS]).replace("\x00", " ").encode("utf-8", "replace")


def analyze(tok: apsw.FTS5Tokenizer, query: object) -> list[Term]:
    """The content words of a natural-language query, once each, in order."""
    data = clean_query(query)
    terms: dict[str, Term] = {}
    for start, end, stem in spans(tok, data, query=True):
        word = data[start:end].decode("utf-8", "replace").lower()
        if not stem or word in STOP_WORDS or stem in STOP_WORDS or stem in terms:
            continue
        if len(terms) >= MAX_TERMS:
            break
        terms[stem] = Term(word, stem)
    return list(terms.values())


def make_snippet(
    tok: apsw.FTS5Tokenizer, text: str, weights: dict[str, float], width: int = 240
) -> str:
    """The stretch of ``text`` (about ``width`` characters) richest in query words, with
    those words inside it and some context before them."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    data = flat.encode("utf-8")
    found = spans(tok, data)
    best, best_value = 0, -1.0
    for i, (start, _, _) in enumerate(found):
        seen: set[str] = set()
        value = 0.0
        for _, end, stem in found[i:]:
            if end - start > width:
                break
            if stem in weights and stem not in seen:
                seen.add(stem)
                value += weights[stem]
        if value > best_value:
            best, best_value = i, value
    begin = _opening(found, best, weights, width)
    chunk = data[begin:].decode("utf-8", "ignore")
    cut = chunk[:width]
    if len(chunk) > width and " " in cut[width // 2 :]:
        cut = cut[: cut.rfind(" ")]
    prefix = "…" if begin else ""
    suffix = "…" if len(chunk) > len(cut) else ""
    return f"{prefix}{cut.strip()}{suffix}"


def _opening(
    found: list[tuple[int, int, str]], best: int, weights: dict[str, float], width: int
) -> int:
    """Where the snippet opens (a byte offset) to show the query words of the stretch that
    starts at token ``best``: a third of the room left beside them goes before them, so they
    read in context. (It opened three words before the stretch and cut it at ``width``: a
    stretch whose one query word came last lost that word, and a hit that holds the word
    read as unrelated.)"""
    if not found:
        return 0
    start = found[best][0]
    inside = [(s, e) for s, e, stem in found[best:] if e - start <= width and stem in weights]
    if not inside:
        return found[max(0, best - 3)][0]
    first, last = inside[0][0], inside[-1][1]
    target = first - (width - (last - first)) // 3
    return next((s for s, _, _ in found if s >= target), first)


def session_label(session: object, seq: object) -> str:
    """A session, and the turn's place in it: ``session 3f2b9c1e…, turn 3``."""
    return f"session {short_session(session)}" + ("" if seq is None else f", turn {seq}")


#: A session id up to this long is shown whole; a longer one is cut, and says so ("…").
SESSION_CHARS = 24
_UUID = re.compile(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", re.IGNORECASE)


def short_session(session: object) -> str:
    """A session id as a hit shows it (the whole id stays in the hit's JSON, session_id)."""
    text = str(session)
    if _UUID.fullmatch(text):
        # Its first 8 hex digits tell sessions apart in a result list; the mark says there
        # is more (an id cut silently reads as the whole id, and is searched for as such).
        return text[:8] + "…"
    return text if len(text) <= SESSION_CHARS else text[: SESSION_CHARS - 1] + "…"
