"""What a person asked to forget, found the way the memory index finds words, and cut.

A forget names words: a word or a phrase. They match as the index tokenizes (SQLite's porter
over unicode61, diacritics removed: :mod:`wsd.schema.stems`): case-insensitively, whole words,
"school" also matching "schools". A phrase matches its words in order, adjacent.

Finding them in every row of two databases must be fast (issue 33: 100,000 turns and
100,000 learnings in seconds), and tokenizing a kilobyte costs ~35 us. So a text is first
searched for each word's *root* (its stem less the two letters porter may have rewritten:
"happy" stems to "happi", "hoping" to "hope"), letter by letter case- and
accent-insensitively (~2 us a kilobyte); only a text holding every root is tokenized.

Granularity (issue 33): a learning, an md line or an action holding the words goes whole;
in a turn the *sentence* holding them is replaced by :data:`MARK`, the rest stays. In JSON
(a tool call, a raw event) every string (and key) is cut the same way, and the JSON
re-encoded.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from wsd.daemon.memory.forget import forms
from wsd.schema.encoded import SQL_MAYBE_ENCODED, encoded
from wsd.schema.stems import fold, stems
from wsd.schema.stems import spans as token_spans

#: What stands where a sentence holding forgotten words was.
MARK = "[forgotten]"
#: What stands where the transcript retention erased a turn's text.
RETENTION_MARK = "[erased by retention]"
#: A word this short is refused (it would match too much to be what the person meant).
MIN_WORD_CHARS = 2

# The end of a sentence: ., ! or ? (or a run of them) then space, or a line break.
_SENTENCE_END = re.compile(r"[.!?。！？]+[\"')\]]*\s+|\n+")


class BadWords(ValueError):
    """Words that cannot be forgotten as given; the message says why and what to do."""


#: The Latin letters :func:`_letter_class` looks through (a letter with an accent), whose
#: accent-free form may be an ASCII letter.
_FOLDING_RANGES = ((0xC0, 0x250), (0x1E00, 0x1F00))
#: Every byte but the UTF-8 lead bytes of those letters (C3-C9, E1): a text left with none
#: shows an ASCII root only as its ASCII letters (a lead byte never continues a character).
_NOT_FOLDING = bytes(b for b in range(256) if not (0xC3 <= b <= 0xC9 or b == 0xE1))


@functools.cache
def _letter_class(base: str) -> str:
    """A regex class of every Latin letter whose accent-free form is ``base``."""
    variants = {base, base.upper()}
    for code in (c for a, b in _FOLDING_RANGES for c in range(a, b)):
        char = chr(code)
        stripped = "".join(
            c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c)
        )
        if stripped.lower() == base:
            variants.add(char)
    if len(variants) == 1:
        return re.escape(base)
    return "[" + "".join(re.escape(v) for v in sorted(variants)) + "]"


def _root(stem: str) -> str:
    """The part of ``stem`` every word with that stem shows on its surface (checked over
    the model's 22,500-word vocabulary: porter rewrites at most a word's last two letters)."""
    return stem[:1] if len(stem) <= 2 else stem[: max(2, len(stem) - 2)]


def _root_pattern(stem: str) -> str:
    """A regex for :func:`_root` of ``stem``, letter by letter case- and accent-insensitive."""
    root = _root(stem)
    return "".join(_letter_class(c) if c.isascii() and c.isalpha() else re.escape(c) for c in root)


@dataclass(frozen=True)
class Phrase:
    """One forget's words: their stems in order, and the cheap roots every match shows."""

    text: str
    stems: tuple[str, ...]

    @classmethod
    def parse(cls, words: str) -> Phrase:
        """The phrase for ``words``; :class:`BadWords` if it names no word a person could
        mean (empty, punctuation, one letter)."""
        text = " ".join(words.split())
        found = tuple(stems(text))
        if not found:
            raise BadWords(f"{words!r} holds no word to forget")
        if len(found) == 1 and len(found[0]) < MIN_WORD_CHARS:
            raise BadWords(f"{words!r} is a single letter: name what to forget in words")
        return cls(text, found)

    @functools.cached_property
    def _roots(self) -> list[re.Pattern[str]]:
        return [re.compile(_root_pattern(s), re.IGNORECASE) for s in set(self.stems)]

    @functools.cached_property
    def ascii_roots(self) -> list[str] | None:
        """The roots as lower-case ASCII strings (what an ASCII text must contain), or None
        when a root is not ASCII (no ASCII text can hold the phrase)."""
        roots = sorted({_root(s) for s in self.stems})
        return roots if all(r.isascii() for r in roots) else None

    def sql_maybe(self, column: str, flag: str | None = None) -> tuple[str, list[str]]:
        """An SQL condition true for every row whose ``column`` may hold the phrase: a text
        that is not all ASCII (judged in Python), one holding every root (SQLite's ``lower``
        folds ASCII, all an ASCII text has), or one that may hide them (:mod:`.forms`): the
        row's ``flag`` column, set by its writer, or else a broad look at the text. The cheap
        first look, in C."""
        roots = self.ascii_roots
        not_ascii = f"length({column}) != length(CAST({column} AS BLOB))"
        if roots is None:
            return not_ascii, []
        found = " AND ".join(f"instr(lower({column}), ?) > 0" for _ in roots)
        # A form that hides the roots. The transcript's rows carry a mark written with them:
        # looking for each form in every text at forget time took make bench forget from
        # 5.1x the bare scan to 5.6x-14x (target 5.7, issue 44).
        hidden = f"{flag} = 1" if flag else SQL_MAYBE_ENCODED.format(c=column)
        return f"({not_ascii} OR ({found}) OR {hidden})", list(roots)

    def maybe_in(self, text: str) -> bool:
        """False only if ``text`` cannot hold the phrase: its roots are not all there, in
        it or in the forms it may hide them in (:mod:`.forms`)."""
        if self._roots_in(text):
            return True
        if not encoded(text):
            return False
        plain = forms.decoded(text)
        return plain is not None and self._roots_in(plain)

    def _roots_in(self, text: str) -> bool:
        """False only if ``text`` shows not all of the roots.

        A text with no accented Latin letter shows an ASCII root only as its ASCII letters: a
        byte look, in C. Measured (issue 44, 20,000 turns of ``make bench`` forget): a
        quarter of the turns hold a truncated output's "…", and the letter-by-letter look
        took 80 us for each 4 KB, a third of a forget's time."""
        roots = self.ascii_roots
        text = fold(text)  # "Łódź" shows the root of "lodz" only folded, as the index folds
        if roots is not None:
            data = text.encode("utf-8", "surrogatepass")
            if not data.translate(None, _NOT_FOLDING):
                lowered = data.lower()
                return all(root.encode() in lowered for root in roots)
        return all(root.search(text) for root in self._roots)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Character spans ``(start, end)`` of every match of the phrase in ``text``: its
        words as tokens, and each whole sentence whose decoded form holds them (a URL's
        ``Ana%20Wexbridge``, ``WexbridgeSchool``, an escape, base64: :mod:`.forms`)."""
        if not text or not self.maybe_in(text):
            return []
        found = self._token_spans(text)
        if not forms.maybe_encoded(text):
            return found
        for start, end in _sentences(text):
            if any(a < end and b > start for a, b in found):
                continue
            plain = forms.decoded(text[start:end])
            if plain is not None and self._token_spans(plain):
                found.append((start, end))
        return sorted(found)

    def _token_spans(self, text: str) -> list[tuple[int, int]]:
        """Character spans ``(start, end)`` of every match of the phrase in ``text``."""
        if not text or not self._roots_in(text):
            return []
        data = text.encode("utf-8", "surrogatepass")
        tokens = token_spans(text)
        found = []
        n = len(self.stems)
        words = [t[2] for t in tokens]
        for i in range(len(tokens) - n + 1):
            if tuple(words[i : i + n]) == self.stems:
                start = len(data[: tokens[i][0]].decode("utf-8", "surrogatepass"))
                end = len(data[: tokens[i + n - 1][1]].decode("utf-8", "surrogatepass"))
                found.append((start, end))
        return found

    def holds(self, text: object) -> bool:
        """True if ``text`` (a string, or JSON-shaped data) holds the phrase."""
        if isinstance(text, str):
            return bool(self.spans(text))
        if isinstance(text, dict):
            return any(self.holds(k) or self.holds(v) for k, v in text.items())
        if isinstance(text, list):
            return any(self.holds(v) for v in text)
        return False


class JsonCut:
    """Cutting JSON (a tool call, a raw event) string by string, for a matcher's ``cut``."""

    def maybe_in(self, text: str) -> bool:
        raise NotImplementedError

    def cut(self, text: str) -> str:
        raise NotImplementedError

    def cut_key(self, key: str) -> str:
        return self.cut(key)

    def cut_json_text(self, raw: str) -> str:
        """A JSON document with every string (and key) cut; ``raw`` itself cut as text if it
        is not JSON."""
        if not self.maybe_in(raw):
            return raw
        try:
            value = json.loads(raw)
        except ValueError:
            return self.cut(raw)
        return json.dumps(self.cut_value(value), ensure_ascii=False, separators=(",", ":"))

    def cut_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.cut(value)
        if isinstance(value, list):
            return [self.cut_value(v) for v in value]
        if isinstance(value, dict):
            return {self.cut_key(str(k)): self.cut_value(v) for k, v in value.items()}
        return value


@dataclass(frozen=True)
class Forget(JsonCut):
    """Every phrase of one forget (``wsd forget`` takes one; a journal may hold several)."""

    phrases: tuple[Phrase, ...]

    @classmethod
    def of(cls, words: Iterable[str]) -> Forget:
        return cls(tuple(Phrase.parse(w) for w in words))

    def maybe_in(self, text: str) -> bool:
        return any(p.maybe_in(text) for p in self.phrases)

    def sql_maybe(self, column: str, flag: str | None = None) -> tuple[str, list[str]]:
        """An SQL condition true for every row whose ``column`` may hold a phrase."""
        parts = [p.sql_maybe(column, flag) for p in self.phrases]
        return "(" + " OR ".join(sql for sql, _a in parts) + ")", [
            a for _s, args in parts for a in args
        ]

    def fts_query(self) -> str:
        """An FTS5 query matching any of the phrases (the index tokenizes it the same way)."""
        return " OR ".join('"' + p.text.replace('"', '""') + '"' for p in self.phrases)

    def stem_lists(self) -> list[list[str]]:
        return [list(p.stems) for p in self.phrases]

    def holds(self, text: object) -> bool:
        """True if ``text`` holds any of the phrases."""
        return any(p.holds(text) for p in self.phrases)

    def spans(self, text: str) -> list[tuple[int, int]]:
        return sorted(s for p in self.phrases for s in p.spans(text))

    def cut(self, text: str) -> str:
        """``text`` with each sentence holding a phrase replaced by :data:`MARK`."""
        spans = self.spans(text)
        if not spans:
            return text
        bounds = _sentences(text)
        doomed: list[tuple[int, int]] = []
        for start, end in spans:
            first = next(b for b in bounds if b[1] > start)
            last = next(b for b in bounds if b[1] >= end)
            doomed.append((first[0], last[1]))
        out, at = [], 0
        for start, end in _merge(doomed):
            out.append(text[at:start])
            out.append(MARK + _trailing_space(text[start:end]))
            at = end
        out.append(text[at:])
        return "".join(out)

    def lines_holding(self, text: str) -> list[int]:
        """Indexes of the lines of ``text`` that hold a phrase (an md line goes whole)."""
        return [i for i, line in enumerate(text.splitlines()) if self.spans(line)]

    def without_lines(self, text: str) -> str:
        """``text`` without the lines holding a phrase (a file's trailing newline kept)."""
        doomed = set(self.lines_holding(text))
        if not doomed:
            return text
        kept = [line for i, line in enumerate(text.splitlines()) if i not in doomed]
        return "\n".join(kept) + ("\n" if kept and text.endswith("\n") else "")


def _sentences(text: str) -> list[tuple[int, int]]:
    """Spans of the sentences of ``text`` (each with the space after it), covering it all."""
    bounds, at = [], 0
    for m in _SENTENCE_END.finditer(text):
        bounds.append((at, m.end()))
        at = m.end()
    if at < len(text) or not bounds:
        bounds.append((at, len(text)))
    return bounds


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _trailing_space(sentence: str) -> str:
    return sentence[len(sentence.rstrip()) :]


class Everything(JsonCut):
    """A whole turn forgotten (``wsd forget T88``, ``--session``, ``--between``): every text
    of the rows in scope is replaced by :data:`MARK` (JSON keeps its shape: its strings
    go)."""

    phrases: tuple[Phrase, ...] = ()

    def __init__(self, mark: str = MARK) -> None:
        self.mark = mark

    def maybe_in(self, text: str) -> bool:
        return bool(text)

    def holds(self, text: object) -> bool:
        return bool(text) and (not isinstance(text, str) or bool(text.strip()))

    def sql_maybe(self, column: str, flag: str | None = None) -> tuple[str, list[str]]:
        return f"({column} IS NOT NULL AND {column} != '')", []

    def cut(self, text: str) -> str:
        return self.mark if text and text.strip() else text

    def cut_key(self, key: str) -> str:
        return key  # the JSON keeps its shape: a turn's fields, not its words

    def lines_holding(self, text: str) -> list[int]:
        return list(range(len(text.splitlines())))

    def fts_query(self) -> str:
        return '""'

    def stem_lists(self) -> list[list[str]]:
        return []
