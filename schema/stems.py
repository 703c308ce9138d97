"""Words as the memory index stems them: SQLite's own porter tokenizer over unicode61, the
tokenizer ``learnings_fts`` and ``turns_fts`` are declared with (sql/memory/001, 002), so code
that compares words (the curator's grounding, issue 32) agrees with search on what a word is."""

from __future__ import annotations

import functools
from typing import Any

import apsw

#: As the FTS5 tables declare it: ``tokenize = 'porter unicode61 remove_diacritics 2'``.
TOKENIZER = ("porter", ["unicode61", "remove_diacritics", "2"])


@functools.cache
def _tokenizer() -> Any:
    # An in-memory database of its own, holding no data: FTS5's tokenizers hang off a
    # connection (one per process, made on first use).
    conn = apsw.Connection(":memory:")
    return conn.fts5_tokenizer(*TOKENIZER)


def _tokens(text: str, offsets: bool, errors: str) -> Any:
    return _tokenizer()(
        text.encode("utf-8", errors),
        apsw.FTS5_TOKENIZE_DOCUMENT,
        None,
        include_offsets=offsets,
        include_colocated=False,
    )


def stems(text: str) -> list[str]:
    """The tokens of ``text``, lower-cased, accents removed, porter-stemmed, in order."""
    return [str(t) for t in _tokens(text, False, "replace") if t]


def spans(text: str) -> list[tuple[int, int, str]]:
    """Each token of ``text`` as (start, end, stem): UTF-8 byte offsets into ``text``."""
    return [(int(a), int(b), str(t)) for a, b, t in _tokens(text, True, "surrogatepass")]
