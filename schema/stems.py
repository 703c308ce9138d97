"""Words as the memory index stems them: SQLite's own porter tokenizer over unicode61, the
tokenizer ``learnings_fts`` and ``turns_fts`` are declared with (sql/memory/001, 002), so code
that compares words (the curator's grounding, issue 32) agrees with search on what a word is."""

from __future__ import annotations

import functools
from typing import Any

import apsw

#: As the FTS5 tables declare it: ``tokenize = 'porter unicode61 remove_diacritics 2'``.
TOKENIZER = ("porter", ["unicode61", "remove_diacritics", "2"])

#: Letters unicode61 keeps as they are (no accent to remove: Unicode gives them no
#: decomposition) that a person types as their plain letters: "tromso" for Tromsø, "Lodz" for
#: Łódź, "strasse" for Straße (issue 44: `wsd search tromso` and `wsd forget tromso` found
#: nothing). The index folds them first (memory migration 015: its views), and so do the
#: query and every comparison of words here.
FOLD = {
    "ø": "o", "Ø": "O", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ß": "ss", "ẞ": "SS",
    "ł": "l", "Ł": "L", "đ": "d", "Đ": "D", "ð": "d", "Ð": "D", "þ": "th", "Þ": "TH",
    "ħ": "h", "Ħ": "H", "ı": "i", "ŧ": "t", "Ŧ": "T",
}  # fmt: skip
_FOLD_TABLE = str.maketrans(FOLD)


def fold(text: str) -> str:
    """``text`` with the letters of :data:`FOLD` as their plain letters."""
    # Looked for first: a translation by table costs 200 us for 4 KB that is not all ASCII
    # (a truncated output's "…"), 21 substring looks 5 us (measured, issue 44).
    if text.isascii() or not any(letter in text for letter in FOLD):
        return text
    return text.translate(_FOLD_TABLE)


def fold_sql(expr: str) -> str:
    """The SQL expression folding ``expr`` as :func:`fold` does (the index's views)."""
    for letter, plain in FOLD.items():
        expr = f"replace({expr}, '{letter}', '{plain}')"
    return expr


def fold_bytes(data: bytes) -> tuple[bytes, list[int] | None]:
    """UTF-8 ``data`` folded, and for each byte of the result (and its end) the offset in
    ``data`` it came from (None: nothing folded, the offsets are the same)."""
    if data.isascii():  # the common case, in C: nothing to fold
        return data, None
    text = data.decode("utf-8", "surrogatepass")
    if fold(text) == text:
        return data, None
    out, origin, at = bytearray(), [], 0
    for ch in text:
        raw = ch.encode("utf-8", "surrogatepass")
        plain = FOLD.get(ch, ch).encode("utf-8", "surrogatepass")
        out += plain
        origin += [at] * len(plain)
        at += len(raw)
    origin.append(at)
    return bytes(out), origin


@functools.cache
def _tokenizer() -> Any:
    # An in-memory database of its own, holding no data: FTS5's tokenizers hang off a
    # connection (one per process, made on first use).
    conn = apsw.Connection(":memory:")
    return conn.fts5_tokenizer(*TOKENIZER)


def _tokens(data: bytes, offsets: bool) -> Any:
    return _tokenizer()(
        data,
        apsw.FTS5_TOKENIZE_DOCUMENT,
        None,
        include_offsets=offsets,
        include_colocated=False,
    )


def stems(text: str) -> list[str]:
    """The tokens of ``text``, lower-cased, accents removed, folded (:data:`FOLD`),
    porter-stemmed, in order."""
    return [str(t) for t in _tokens(fold(text).encode("utf-8", "replace"), False) if t]


def spans(text: str) -> list[tuple[int, int, str]]:
    """Each token of ``text`` as (start, end, stem): UTF-8 byte offsets into ``text``."""
    folded, origin = fold_bytes(text.encode("utf-8", "surrogatepass"))
    found = [(int(a), int(b), str(t)) for a, b, t in _tokens(folded, True)]
    return found if origin is None else [(origin[a], origin[b], t) for a, b, t in found]
