"""Whether a text may hold words in a form that does not show their letters (issue 44).

A forget finds words by their roots first (a byte look, in C), so a text that hides them (a
letter percent-encoded one by one, ``%57exbridge``; a JSON ``\\u0057`` or HTML ``&#87;`` /
``&oslash;`` escape; base64, which the redaction decodes when the text names it: "base64",
"b64", "atob", a "Basic " header) would never be read. Looking for those forms in every row at
forget time cost too much (``make bench`` forget: 5.6x to 14x the bare scan against a 5.7
target), so the transcript marks each row that holds one when it is written (its ``encoded``
column, transcript migration 010) and a forget reads those rows whatever their letters.

Here, not in the forget's package: the hook's path writes the mark, so it imports nothing
(``re`` costs a hook process about as much as starting Python: bin/wsd-hook) and looks only
at each ``%``, ``\\u`` and ``&`` a text holds. A form that shows the roots (a percent-encoded
space, camelCase, a digit join) needs no mark: the roots are found, then the text decoded
(``wsd.daemon.memory.forget.forms``); nor does an escape of a control character (a
terminal's ``\\u001b``: no letter hides in it).
"""

from __future__ import annotations

#: Base64 named as the redaction's rule for encoded secrets names it (lower-cased).
BASE64_NAMES = ("base64", "b64", "atob", "basic ")
_HEX = frozenset("0123456789abcdefABCDEF")
#: After ``&`` in an HTML character reference: ``#`` (numeric) or a name's letters then ``;``.
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def encoded(text: str | None) -> bool:
    """Whether ``text`` holds a form that may hide a word's letters (see the module)."""
    if not text:
        return False
    lowered = text.lower()
    if any(name in lowered for name in BASE64_NAMES):
        return True
    return (
        ("%" in text and _escapes(text, "%", 2))
        or ("\\u" in lowered and _escapes(lowered, "\\u", 4))
        or ("&" in text and _reference(text))
    )


def any_encoded(*texts: str | None) -> int:
    """1 if any of ``texts`` is :func:`encoded`, else 0 (the column's value)."""
    return int(any(encoded(t) for t in texts))


def _escapes(text: str, lead: str, digits: int) -> bool:
    """Whether ``lead`` is followed somewhere by ``digits`` hex digits naming a letter or a
    digit (ASCII), or a byte or character past ASCII (a UTF-8 byte of an accented letter)."""
    at = text.find(lead)
    while at >= 0:
        code = text[at + len(lead) : at + len(lead) + digits]
        if len(code) == digits and all(c in _HEX for c in code):
            value = int(code, 16)
            if value >= 0x80 or chr(value).isalnum():
                return True
        at = text.find(lead, at + 1)
    return False


def _reference(text: str) -> bool:
    """Whether an ``&`` starts an HTML character reference (``&#…``, ``&name;``)."""
    at = text.find("&")
    while at >= 0:
        rest = text[at + 1 : at + 34]
        if rest[:1] == "#":
            return True
        name = 0
        while name < len(rest) and rest[name] in _NAME_CHARS:
            name += 1
        if name >= 2 and rest[name : name + 1] == ";":
            return True
        at = text.find("&", at + 1)
    return False


#: SQL over a text column ``{c}`` true for (at least) every text :func:`encoded` is true for:
#: what transcript migration 010 marks the rows written before it with, and what a forget
#: reads a table without the column with. Broader (any %, \, &, "64"): it only makes a forget
#: read more rows.
SQL_MAYBE_ENCODED = (
    "(instr({c}, '%') OR instr({c}, '\\') OR instr({c}, '&') OR {c} LIKE '%64%'"
    " OR {c} LIKE '%atob%' OR {c} LIKE '%asic %')"
)
