"""The redactor: :func:`redact`, and the secret spans of a text for :mod:`wsd.redact.text`.

Reads each match of the table (:mod:`wsd.redact.table`) and judges it, merges the spans of the
provider rules and the entropy net (:mod:`wsd.redact.rules`), and reads fullwidth and other
look-alike punctuation as ASCII first. Standard library only, and ``re`` is imported and the
tables compiled only when some text could hold a secret. Imports only the modules below it.

Contract: :func:`redact` replaces each recognised secret with ``[REDACTED:<kind>]`` and leaves
everything else as it was.
"""

from __future__ import annotations

from wsd.redact import constructs
from wsd.redact.rules import find, kind_of, merge
from wsd.redact.shape import (
    classes,
    name_before,
    names_a_value,
    plausible_secret,
    uuid_kept,
)
from wsd.redact.table import PEM_BODY, compiled, worth_scanning

# typing costs milliseconds to import; mypy treats any TYPE_CHECKING name as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Iterator

#: (start, end, replacement): one secret's span in a text and what replaces it.
Span = tuple[int, int, str]


def _random_enough(s: str) -> bool:
    """Generated credentials mix character classes; words like ``sk-learn-…`` do not."""
    return classes(s) >= 2


def _url_password(value: str) -> bool:
    """A URL's password, not a template (``${DB_PASSWORD}``, ``%s``) nor a port and path
    (``host:8080/a@b``)."""
    if value[0] in "$<{*" or value.startswith("[REDACTED"):
        return False
    if value[0] == "%" and not (len(value) > 2 and value[1] in _HEX and value[2] in _HEX):
        return False  # %s, %(password)s; but %40 is an encoded "@"
    cut = min((i for i in (value.find(c) for c in "/?#") if i >= 0), default=-1)
    return cut < 0 or not value[:cut].isdigit()


_HEX = frozenset("0123456789abcdefABCDEF")


def specific_kind(value: str, default: str) -> str:
    """The kind of a known token form when ``value`` is exactly one, else ``default``."""
    c = compiled()
    m = c.secret.search(value)
    if m is not None and m.lastgroup is not None and m.end() == len(value):
        i = int(m.lastgroup[1:])
        if m.start() == c.back[i]:
            return c.kinds[i]
    return kind_of(value) or default


def _redaction(m: re.Match[str]) -> Span | None:
    """(start, end, replacement) for one match of the combined regex; None if not a secret."""
    c = compiled()
    group = m.lastgroup or "g0"
    i = int(group[1:])
    kind, check = c.kinds[i], c.checks[i]
    text, end = m.string, m.end()
    start = max(0, m.start() - c.back[i])
    vs, ve = m.span(f"{group}v") if c.has_value[i] else (start, end)
    if check == "assign":  # the match ends at the separator: read the value on
        found = c.value.match(text, end)
        if found is None:
            return None
        vs, ve = found.span("v")
        end = ve
        if not found.group("q") and text[ve : ve + 1] in ("(", "["):
            return None  # password = input(...), key = names[0]: an expression, not a value
    value = text[vs:ve]
    ok = True
    if check == "random":
        ok = _random_enough(value)
    elif check == "assign":
        name = name_before(text, start) + text[start:vs]
        # Not a value's name (``password_file``, ``secretName``, ``PublicKey``), nor a UUID
        # under a name that is not a password's (``idempotency_key``): issue 46's kept text.
        ok = plausible_secret(value, name) and names_a_value(name.strip("\"'`:=>,.+?\t "))
        ok = ok and not uuid_kept(value, name)
        if "secretaccesskey" in name.lower().replace("_", "").replace("-", ""):
            kind = "aws_secret_key"
        kind = specific_kind(value, kind) if ok else kind
    elif check == "auth":
        scheme = (m.group(f"{group}s") or "").strip().lower()
        kind = "basic_auth" if scheme == "basic" else specific_kind(value, kind)
        ok = scheme == "basic" or kind != "bearer_token" or _random_enough(value)
    elif check == "url":
        ok = _url_password(value)
    if ok:
        return start, end, f"{text[start:vs]}[REDACTED:{kind}]{text[ve:end]}"
    if check != "assign" and ve - vs < end - start:
        # Not a secret by itself, but the span the regex consumed may still hold one (an
        # assignment's value is not consumed: the scan goes on into it by itself).
        inner = redact(value)
        if inner != value:
            return start, end, f"{text[start:vs]}{inner}{text[ve:end]}"
    return None


def _outside(span: Span, taken: list[Span]) -> list[Span]:
    """``span`` if no span of ``taken`` overlaps it, else its parts none covers, each of at
    least 8 characters (what a shape detector saw beyond a named rule's secret: more lines,
    another piece)."""
    start, end, rep = span
    if not any(s < end and e > start for s, e, _r in taken):
        return [span]
    kind = rep[rep.find("[REDACTED:") :]
    out, pos = [], start
    for s, e, _r in taken:
        if e <= pos or s >= end:
            continue
        if s - pos >= 8:
            out.append((pos, s, kind))
        pos = max(pos, e)
    if end - pos >= 8:
        out.append((pos, end, kind if pos > start else rep))
    return out


_fold: dict[int, int] = {}


def _folded(text: str) -> str:
    """``text`` with fullwidth ASCII (``：``, ``＝``, ``ｋｅｙ``), other colons and equals signs
    and no-break or ideographic spaces read as their ASCII form: one character for one, so a
    match's span in the result is its span in ``text``."""
    if not text or max(text) < "\xa0":
        return text
    if not _fold:
        _fold.update({c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)})
        _fold.update(dict.fromkeys((0xA0, 0x2007, 0x202F, 0x3000), 0x20))
        _fold.update(dict.fromkeys((0xFE13, 0xFE55, 0xA789, 0x2236, 0x02D0), 0x3A))
        _fold.update(dict.fromkeys((0xFE66, 0x207C, 0x208C, 0x2261), 0x3D))
    return text.translate(_fold)


def redactions(text: str) -> list[Span]:
    """Non-overlapping (start, end, replacement) of the secrets in ``text``, left to right:
    the table's and those of the provider rules and the entropy net (:mod:`wsd.redact.rules`),
    matched on :func:`_folded` text (a replacement's kept context is in that form).

    The rules are handed :func:`redact` itself, the one call that goes back up: a text hidden
    inside a match (base64) is looked at by the whole redactor, not by the rules alone."""
    folded = _folded(text)
    mine = list(_table_redactions(folded))
    theirs = find(folded, redact)
    spans = merge(mine + theirs) if theirs else mine
    shaped = constructs.find(folded, redact)
    if shaped:  # a named rule's span keeps its kind; a construct adds only what it left
        spans = merge(spans + [p for s in shaped for p in _outside(s, spans)])
    if folded is text or not spans:
        return spans
    out: list[Span] = []  # the context a replacement keeps, as written
    for start, end, rep in spans:
        i, j = rep.find("[REDACTED:"), rep.rfind("]") + 1
        if i >= 0 and rep[:i] == folded[start : start + i]:
            rep = text[start : start + i] + rep[i:]
        if 0 < j < len(rep) and rep[j:] == folded[end - (len(rep) - j) : end]:
            rep = rep[:j] + text[end - (len(rep) - j) : end]
        out.append((start, end, rep))
    return out


def _table_redactions(text: str) -> Iterator[Span]:
    """Non-overlapping (start, end, replacement) of the table's matches, left to right."""
    if not worth_scanning(text):
        return
    last = 0
    for m in compiled().secret.finditer(text):
        if m.start() < last:  # inside a value read on past the previous match
            continue
        found = _redaction(m)
        if found is not None:
            start, end, rep = found
            start = max(start, last)  # its prefix may overlap the previous secret: already gone
            last = end
            yield start, end, rep


def redact(text: str) -> str:
    """Replace every recognised secret in ``text`` by ``[REDACTED:<kind>]``.

    Keeps the context that is not secret (``export API_KEY=``, ``Authorization: Bearer ``, the
    user and host of a URL). Linear-time regexes, but callers should bound the input:
    :func:`wsd.redact.text.clean_text` never passes more than a window of a huge field.
    """
    parts: list[str] = []
    pos = 0
    for start, end, rep in redactions(text):
        parts += (text[pos:start], rep)
        pos = end
    return drop_orphan_pem("".join(parts) + text[pos:] if parts else text)


def drop_orphan_pem(text: str) -> str:
    """Redact PEM body lines left before an ``-----END … PRIVATE KEY-----`` without their BEGIN
    (cut upstream, e.g. by an earlier truncation); complete blocks are left to the main regex."""
    if "PRIVATE KEY-----" not in text:
        return text
    c = compiled()
    out: list[str] = []
    pos = 0
    for m in c.pem_end.finditer(text):
        # Match the lines backwards (on the reversed text): anchored, so linear, and bounded.
        lo = max(pos, m.start() - PEM_BODY - 256)
        body = c.pem_body_reversed.match(text[lo : m.start()][::-1])
        start = m.start() - (body.end() if body else 0)
        if text.rfind("-----BEGIN", max(lo, start - 200), start) < 0:
            out += (text[pos:start], "[REDACTED:private_key]")
            pos = m.end()
    return "".join(out) + text[pos:] if out else text
