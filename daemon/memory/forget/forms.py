"""The other forms words take in text, which a forget looks through (issue 44).

After forgetting "Wexbridge", a new user found `Ana%20Wexbridge%20school` (a URL's query),
`WexbridgeSchool`, `Wexbridge2024`, a JSON `\\u0057exbridge` escape and the base64 of a
sentence holding it still in both databases, a backup and the replica: the tokenizer makes
other tokens of them (`20wexbridge`, `wexbridgeschool`), so neither search nor the forget saw
what a byte scan finds.

:func:`decoded` is a text as those forms say it: percent-decoded, JSON ``\\uXXXX`` and HTML
character references resolved, a camelCase or digit join split into words, and each base64
run that decodes to text added after it. A forget matches a sentence when it or its decoded
form holds the words, and cuts the whole sentence, in the text as stored.

The cheap look before tokenizing (:data:`MARKERS`, in SQL) lets through a text that may
hold a form whose letters do not show the words' roots: an escape (``\\u00``, ``&#``) or a
base64 run the text names as such ("base64", as the redaction's rule for encoded secrets is
gated). The forms that show the roots (a percent-encoded space, a camelCase or digit join)
need no marker. Each marker is one LIKE at every text (instr cost twice as much, measured on
20,000 turns), and ``make bench`` forget at 100,000 turns measured what each costs: three
markers 5.1x the bare scan (target 5.7); a fourth for letters percent-encoded one by one
(``%57exbridge``, on every ``%``) 5.6x and 6.3x; a fifth for "b64" 5.8x; one "64" for both
names of base64 14.1x. So those forms are not looked for.
"""

from __future__ import annotations

import binascii
import html
import re
import urllib.parse

#: Substrings of a text that may hold the words in a form not showing their roots.
MARKERS = ("\\u00", "&#", "ase64")

_JSON_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
_SPLIT = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])")
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/_-]{16,}={0,2}(?![A-Za-z0-9+/=_-])")


def marked(text: str) -> bool:
    """Whether ``text`` holds a :data:`MARKERS` substring ("BASE64" too, as SQL's LIKE
    finds it)."""
    return any(m in text for m in MARKERS) or "ASE64" in text


def maybe_encoded(text: str) -> bool:
    """Whether ``text`` may hold words in a form :func:`decoded` resolves."""
    return marked(text) or "%" in text or bool(_SPLIT.search(text))


def decoded(text: str) -> str | None:
    """``text`` as its forms say it (see the module), or None when that is the text."""
    out = text
    if "%" in out:
        out = urllib.parse.unquote(out, errors="replace")
    if "\\u" in out:
        out = _JSON_ESCAPE.sub(lambda m: _char(int(m.group(1), 16)), out)
    if "&" in out:
        out = html.unescape(out)
    # Base64 first: the join split below would cut its runs.
    extra = [d for d in (_base64(m.group(0)) for m in _BASE64.finditer(out)) if d]
    out = " ".join([_SPLIT.sub(" ", out), *(_SPLIT.sub(" ", d) for d in extra)])
    return None if out == text else out


def _char(code: int) -> str:
    # A lone surrogate of a JSON pair stands for no letter: a space (no word is made of it).
    return " " if 0xD800 <= code <= 0xDFFF else chr(code)


def _base64(run: str) -> str | None:
    """``run`` decoded from base64 (standard or URL-safe) when it is printable UTF-8 text."""
    core = run.rstrip("=").replace("-", "+").replace("_", "/")
    try:
        text = binascii.a2b_base64(core + "=" * (-len(core) % 4)).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    return text if text.isprintable() or all(c.isprintable() or c.isspace() for c in text) else None
