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

Which texts are read for those forms at all: one whose letters show the words' roots (a
percent-encoded space, a camelCase or digit join), or one the writer marked as holding a form
that hides them (:mod:`wsd.schema.encoded`: a letter percent-encoded one by one, an escape,
base64 named as the redaction names it).
"""

from __future__ import annotations

import binascii
import html
import re
import urllib.parse

from wsd.schema.encoded import encoded

_JSON_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
_SPLIT = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])")
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/_-]{16,}={0,2}(?![A-Za-z0-9+/=_-])")


def maybe_encoded(text: str) -> bool:
    """Whether ``text`` may hold words in a form :func:`decoded` resolves."""
    return encoded(text) or bool(_SPLIT.search(text))


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
