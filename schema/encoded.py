"""Whether a text may hold words in a form that does not show their letters (issue 44).

A forget finds words by their roots first (a byte look, in C), so a text that hides them (a
letter percent-encoded one by one, ``%57exbridge``; a JSON ``\\u0057`` or HTML ``&#87;`` /
``&oslash;`` escape; base64, which the redaction decodes when the text names it: "base64",
"b64", "atob", a "Basic " header) would never be read. Looking for those forms in every row at
forget time cost too much (``make bench`` forget: 5.6x to 14x the bare scan against a 5.7
target), so the transcript marks each row that holds one when it is written (its ``encoded``
column, transcript migration 010) and a forget reads those rows whatever their letters.

Here, not in the forget's package: the hook's path writes the mark and must not load more than
``re``. A form that shows the roots (a percent-encoded space, camelCase, a digit join) needs no
mark: the roots are found, then the text decoded (``wsd.daemon.memory.forget.forms``).
"""

from __future__ import annotations

import re

#: The forms, each as short as its shortest spelling (case-insensitive).
_HIDING = re.compile(
    r"%[2-7][0-9a-f]"  # a percent-encoded printable ASCII character (letters 41-7A)
    r"|\\u[0-9a-f]{4}"  # a JSON (or JavaScript, Python) escape
    r"|&(?:#|[a-z][a-z0-9]{1,31};)"  # an HTML character reference, numeric or named
    r"|base64|b64|atob|basic ",  # base64, named as the redaction's rule gates decoding it
    re.IGNORECASE,
)
#: What each form holds (lower-cased): a text with none of them is plain.
_HOLDS = ("%", "\\", "&", "64", "atob", "basic ")


def encoded(text: str | None) -> bool:
    """Whether ``text`` holds a form of :data:`_HIDING` (so it may hide words' letters)."""
    # Lower-cased substring looks first: 9 us for 4 KB; the regex (190 us for 4 KB of prose,
    # measured) only where one is there.
    if not text:
        return False
    lowered = text.lower()
    return any(s in lowered for s in _HOLDS) and _HIDING.search(text) is not None


def any_encoded(*texts: str | None) -> int:
    """1 if any of ``texts`` is :func:`encoded`, else 0 (the column's value)."""
    return int(any(encoded(t) for t in texts))


#: SQL over a text column ``{c}`` true for (at least) every text :func:`encoded` is true for:
#: what transcript migration 010 marks the rows written before it with, and what the forget
#: reads a table without the column with. Broader than the regex (any %, \, &): it only makes a
#: forget read more rows.
SQL_MAYBE_ENCODED = (
    "(instr({c}, '%') OR instr({c}, '\\') OR instr({c}, '&') OR {c} LIKE '%64%'"
    " OR {c} LIKE '%atob%' OR {c} LIKE '%asic %')"
)
