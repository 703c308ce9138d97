"""Hygiene for every captured field: safe text, private spans removed, secrets redacted, bounded.

Runs inside the agent process on every hook call, *before* anything is written anywhere, so it
uses only the standard library, compiles its regexes lazily on first use (``import re`` included)
and never runs a regex over more than a window of a huge input.

Contracts:

* :func:`clean_text` output always encodes to UTF-8, holds no C0 control character except
  ``\\n \\r \\t``, no ``<private>`` / ``<workspace-memory>`` span, no recognised secret
  (each becomes ``[REDACTED:<kind>]``) and is at most ``max_chars`` long (``""`` if <= 0).
* A secret anywhere in a huge input, even straddling a window or truncation edge, never leaves
  12 or more consecutive characters of itself in the output.
* :func:`clean_value` never raises and returns JSON-ready data (str keys, finite floats) whose
  serialised size stays within a small multiple of ``max_chars``.
"""

from __future__ import annotations

import math

# typing costs milliseconds to import; mypy treats any TYPE_CHECKING name as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Iterator
    from typing import Any

__all__ = [
    "BOOT_CONTEXT_TAG",
    "DEFAULT_MAX_CHARS",
    "clean_bytes",
    "clean_text",
    "clean_value",
    "redact",
]

DEFAULT_MAX_CHARS = 2000
BOOT_CONTEXT_TAG = "workspace-memory"

_PEM_BODY = 10_000  # longest terminated PEM block matched; bounds every other match too
_UNSAFE = _PEM_BODY + 512  # edge zone of a window where a cut secret may hide unrecognised
_MARGIN = 16_384  # window length beyond the kept head/tail; must exceed _UNSAFE
_MAX_DEPTH = 32
_MAX_ITEMS = 100
_BUDGET_FACTOR = 3  # clean_value keeps about this many max_chars of content in total
_OMITTED = "…"

# fmt: off
_PLACEHOLDERS = frozenset({"none", "null", "nil", "true", "false", "undefined", "str", "string",
                           "bytes", "int", "optional", "any", "required", "redacted", "hidden"})
_REFERENCES = ("os.", "process.env", "env.", "getenv", "self.", "args.", "config.", "settings.")
_LENIENT_WORDS = ("secret", "passw", "passphrase", "authorization", "cookie")
_SENSITIVE_KEY_WORDS = ("key", "token", *_LENIENT_WORDS)
# fmt: on

# Value of a NAME=value assignment: quoted (spaces allowed) or a bare run up to a delimiter.
_VALUE = r"""(?P<q>\\?["'`])?(?P<v>(?(q)[^"'`\\\n]{1,512}|[^\s"'`\\,;&<>(){}\[\]]{1,512}))"""
_SEP = r"""[A-Za-z0-9_.-]{0,40}+(?:\\?["'`])?[ \t]{0,4}(?:=>|:=|[:=])[ \t]{0,4}"""
_PEM_LABEL = r"(?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?-----"
_B64URL = "[A-Za-z0-9_-]"

# (kind, anchor, prefix, prefix width, word boundary, rest, check). A match starts at its anchor,
# a single character chosen to be rare in prose and code (``J`` of ``eyJ``, ``_`` of ``ghp_``),
# so the scan enters few positions and sre's BRANCH rejects other alternatives in one compare.
# The ``prefix`` before the anchor is checked by a lookbehind and added back to the span; with
# ``boundary`` no letter or digit may precede it. Each bounded match is under _UNSAFE chars.
# fmt: off
_ALTERNATIVES: tuple[tuple[str, str, str, int, bool, str, str], ...] = (
    ("private_key", "-", "", 0, False, rf"----BEGIN {_PEM_LABEL}(?:[\s\S]{{0,{_PEM_BODY}}}?"
                                       rf"-----END {_PEM_LABEL}|[\s\S]*)", ""),
    ("secret_assignment", "-", "", 0, False, r"-[A-Za-z][A-Za-z0-9-]{0,30}?(?i:password|passwd"
                                             r"|secret|passphrase|token|key)(?:=|[ \t]{1,4})",
     "assign"),
    ("anthropic_key", "-", "sk", 2, True, r"ant-(?:api|admin|sid|oat)\d\d-[A-Za-z0-9_-]{20,300}",
     ""),
    ("openai_key", "-", "sk", 2, True, r"(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,300}",
     "random"),
    ("pypi_token", "-", "pypi", 4, True, r"AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,300}", ""),
    ("stripe_key", "_", "[sr]k", 2, True, r"(?:live|test)_[A-Za-z0-9]{10,250}", ""),
    ("stripe_key", "_", "whsec", 5, True, r"[A-Za-z0-9+/=]{20,100}", ""),
    ("github_token", "_", "gh[pousr]", 3, True, r"[A-Za-z0-9]{36,255}", ""),
    ("github_token", "_", "github", 6, True, r"pat_[A-Za-z0-9_]{22,255}", ""),
    ("huggingface_token", "_", "hf", 2, True, r"[A-Za-z0-9]{30,40}(?![A-Za-z0-9])", "random"),
    ("npm_token", "_", "npm", 3, True, r"[A-Za-z0-9]{36}(?![A-Za-z0-9])", ""),
    ("aws_access_key", "A", "", 0, True, r"(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16}(?![A-Za-z0-9])", ""),
    ("google_api_key", "A", "", 0, True, r"Iza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])", ""),
    ("gitlab_token", "g", "", 0, True, r"l(?:pat|dt|rt|ptt|cbt|ft|imt|agent|oas|soat|ffct)-"
                                       r"[A-Za-z0-9_.-]{20,200}", ""),
    ("gitlab_token", "G", "", 0, True, r"R1348941[A-Za-z0-9_-]{20,64}", ""),
    ("sendgrid_key", "G", "S", 1, True, r"\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", ""),
    ("slack_token", "x", "", 0, True, r"(?:ox[abposre]-[A-Za-z0-9-]{10,250}|app-\d-[A-Za-z0-9-]"
                                      r"{10,250})", ""),
    ("slack_webhook", ":", "https", 5, False, r"//hooks\.slack\.com/(?:services|workflows"
                                              r"|triggers)/[A-Za-z0-9/_-]{10,300}", ""),
    ("url_password", ":", "", 0, False, r"//[^\s:/?#@\[\]]{0,100}:(?P<v>[^\s/?#]{1,200})@", "url"),
    ("jwt", "J", "ey", 2, True, rf"{_B64URL}{{3,3000}}\.{_B64URL}{{5,3000}}\.{_B64URL}{{0,3000}}",
     ""),
    *(("bearer_token", anchor, "[Aa][Uu][Tt][Hh][Oo][Rr][Ii]", 7, False,
     r"""(?i:ation)(?:\\?["'])?[ \t]{0,4}[:=][ \t]{0,4}(?:\\?["'])?"""
     r"(?P<s>(?i:basic|bearer|token)[ \t]{1,4})?(?P<v>[A-Za-z0-9._~+/=-]{8,4096})", "auth")
      for anchor in "zZ"),
    *(("bearer_token", anchor, "", 0, False,
       r"(?:earer|EARER)[ \t]{1,4}(?P<v>[A-Za-z0-9._~+/=-]{16,4096})", "random")
      for anchor in "Bb"),
    # NAME=value: the anchor is the k of key/token, the c of secret or the p of password; the
    # start of the name is read back and the value read on by _redaction (one small regex each
    # instead of six copies of the value pattern to compile).
    *(("secret_assignment", anchor, "", 0, False, rf"(?i:{word}){_SEP}", "assign")
      for anchor, word in (("k", "(?<=k)ey|(?<=tok)en"), ("K", "(?<=k)ey|(?<=tok)en"),
                           ("c", "(?<=sec)ret"), ("C", "(?<=sec)ret"),
                           ("p", "ass(?:wor)?d|assphrase"), ("P", "ass(?:wor)?d|assphrase"))),
)

# What any match of _ALTERNATIVES must contain: until the regex is compiled, text without any of
# these skips it, so a short-lived hook process whose fields hold no candidate never pays for
# ``import re`` and the compile (~7 ms). Keep this a superset when editing the table.
_BY_CHAR = {
    "_": ("k_live_", "k_test_", "whsec_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
          "hf_", "npm_"),
    "-": ("PRIVATE KEY", "sk-", "pypi-", "xox", "xapp-", "glpat-", "gldt-", "glrt-", "glptt-",
          "glcbt-", "glft-", "glimt-", "glagent-", "gloas-", "glsoat-", "glffct-"),
    "A": ("AKIA", "ASIA", "ABIA", "ACCA", "AIza"),
}
_ALWAYS = ("://", "eyJ", "SG.", "GR1348941")
# fmt: on


def _may_hold_secret(text: str) -> bool:
    """False only when no alternative of the secret regex can match ``text`` (see _BY_CHAR)."""
    low = text.lower()
    if "authoriz" in low or "bearer" in low:
        return True
    if ("=" in text or ":" in text or "--" in text) and (
        "key" in low or "token" in low or "secret" in low or "passw" in low or "passphrase" in low
    ):
        return True
    if any(f in text for f in _ALWAYS):
        return True
    return any(c in text and any(f in text for f in frags) for c, frags in _BY_CHAR.items())


class _Compiled:
    """The regexes, compiled once per process on first use (import stays cheap)."""

    def __init__(self) -> None:
        import re

        parts: list[str] = []
        self.kinds: list[str] = []
        self.checks: list[str] = []
        self.back: list[int] = []
        self.has_value: list[bool] = []  # a (?P<v>…) group marks the part to replace
        for i, (kind, anchor, prefix, width, boundary, rest, check) in enumerate(_ALTERNATIVES):
            guard = f"(?<={prefix}{anchor})" if prefix else ""
            guard += f"(?<![A-Za-z0-9]{prefix}{anchor})" if boundary else ""
            body = rest.replace("(?P<", f"(?P<g{i}")
            parts.append(f"{anchor}{guard}(?P<g{i}>{body})")
            self.kinds.append(kind)
            self.checks.append(check)
            self.back.append(width)
            self.has_value.append("(?P<v>" in rest)
        # ASCII: (?i) must not fold non-ASCII letters (the prefilter relies on str.lower()).
        self.secret = re.compile("|".join(parts), re.ASCII)
        self.value = re.compile(_VALUE)
        # Base64 lines, read backwards from an END line: the last one short, the first one
        # possibly cut (or one word of prose); "\\n" too, for a block inside JSON text.
        # (A base64 char before a backslash, read backwards, is the n of an escaped "\\n".)
        line, nl = r"(?:[A-Za-z0-9+/=](?!\\))", r"(?:\s|[rn]\\){1,4}"
        self.pem_end = re.compile(rf"-----END {_PEM_LABEL}")
        self.pem_body_reversed = re.compile(
            rf"(?:{nl})?{line}{{0,100}}(?:{nl}{line}{{16,100}}){{0,200}}(?:{nl}{line}{{1,100}})?",
            re.ASCII,
        )


class _Small:
    """The span-tag regexes, compiled apart from the big one: only text with a tag needs them."""

    def __init__(self) -> None:
        import re

        self.tags = {
            tag: re.compile(rf"<\s*(/?)\s*{tag}(?:\s[^<>]{{0,200}})?\s*>", re.I | re.A)
            for tag in ("private", BOOT_CONTEXT_TAG)
        }


_compiled: _Compiled | None = None
_small: _Small | None = None


def _re() -> _Compiled:
    global _compiled
    if _compiled is None:
        _compiled = _Compiled()
    return _compiled


def _sm() -> _Small:
    global _small
    if _small is None:
        _small = _Small()
    return _small


def _classes(s: str) -> int:
    """How many of lower case, upper case and digits occur in ``s``."""
    return (s.upper() != s) + (s.lower() != s) + any(d in s for d in "0123456789")


def _random_enough(s: str) -> bool:
    """Generated credentials mix character classes; words like ``sk-learn-…`` do not."""
    return _classes(s) >= 2


def _plausible_secret(value: str, name: str) -> bool:
    """Whether the value of a sensitive-looking name is worth redacting.

    Never: under 4 chars, placeholders (``None``, ``str``, ``****``), references (``$VAR``,
    ``${{…}}``, ``os.environ``, ``self.token``), already redacted. ``KEY``/``TOKEN`` names are
    common in code (``key=lambda``, ``max_tokens=4096``), so their values must also look
    generated (8+ chars mixing two of lower/upper/digits, not a path); ``PASSWORD``/``SECRET``/
    ``Authorization``/``Cookie`` values need nothing more.
    """
    low = value.lower()
    if len(value) < 4 or low in _PLACEHOLDERS or value.startswith("[REDACTED"):
        return False
    if (
        value[0] in "$%<{[(*#)]},;"
        or value.count(value[0]) == len(value)
        or low.startswith(_REFERENCES)
    ):
        return False  # a reference, template or mask, not a value
    ident = value.replace(".", "_").isidentifier() and not any(d in value for d in "0123456789")
    if ident and any(w in low for w in _SENSITIVE_KEY_WORDS):
        return False  # password=password, token=self.token: passing a variable along
    if any(w in name.lower() for w in _LENIENT_WORDS):
        return True
    return len(value) >= 8 and _classes(value) >= 2 and not value.startswith(("/", "~/", "./"))


def _specific_kind(value: str, default: str) -> str:
    """The kind of a known token form when ``value`` is exactly one, else ``default``."""
    c = _re()
    m = c.secret.search(value)
    if m is not None and m.lastgroup is not None and m.end() == len(value):
        i = int(m.lastgroup[1:])
        if m.start() == c.back[i]:
            return c.kinds[i]
    return default


def _name_before(text: str, start: int) -> str:
    """The identifier (and its quote) that ends at ``start``: the NAME of ``NAME=value``."""
    i = start
    while i > 0 and start - i < 64 and (text[i - 1].isalnum() or text[i - 1] in "_.-\"'`\\"):
        i -= 1
    return text[i:start]


def _redaction(m: re.Match[str]) -> tuple[int, int, str] | None:
    """(start, end, replacement) for one match of the combined regex; None if not a secret."""
    c = _re()
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
        name = _name_before(text, start) + text[start:vs]
        ok = _plausible_secret(value, name)
        if "secretaccesskey" in name.lower().replace("_", "").replace("-", ""):
            kind = "aws_secret_key"
        kind = _specific_kind(value, kind) if ok else kind
    elif check == "auth":
        scheme = (m.group(f"{group}s") or "").strip().lower()
        kind = "basic_auth" if scheme == "basic" else _specific_kind(value, kind)
        ok = scheme == "basic" or kind != "bearer_token" or _random_enough(value)
    elif check == "url":
        ok = value[0] not in "$%<{*" and not value.startswith("[REDACTED")
    if ok:
        return start, end, f"{text[start:vs]}[REDACTED:{kind}]{text[ve:end]}"
    if check != "assign" and ve - vs < end - start:
        # Not a secret by itself, but the span the regex consumed may still hold one (an
        # assignment's value is not consumed: the scan goes on into it by itself).
        inner = redact(value)
        if inner != value:
            return start, end, f"{text[start:vs]}{inner}{text[ve:end]}"
    return None


def _redactions(text: str) -> Iterator[tuple[int, int, str]]:
    """Non-overlapping (start, end, replacement) of the secrets in ``text``, left to right."""
    if _compiled is None and not _may_hold_secret(text):
        return
    last = 0
    for m in _re().secret.finditer(text):
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
    :func:`clean_text` never passes more than a window of a huge field.
    """
    parts: list[str] = []
    pos = 0
    for start, end, rep in _redactions(text):
        parts += (text[pos:start], rep)
        pos = end
    return _drop_orphan_pem("".join(parts) + text[pos:] if parts else text)


def _drop_orphan_pem(text: str) -> str:
    """Redact PEM body lines left before an ``-----END … PRIVATE KEY-----`` without their BEGIN
    (cut upstream, e.g. by an earlier truncation); complete blocks are left to the main regex."""
    if "PRIVATE KEY-----" not in text:
        return text
    c = _re()
    out: list[str] = []
    pos = 0
    for m in c.pem_end.finditer(text):
        # Match the lines backwards (on the reversed text): anchored, so linear, and bounded.
        lo = max(pos, m.start() - _PEM_BODY - 256)
        body = c.pem_body_reversed.match(text[lo : m.start()][::-1])
        start = m.start() - (body.end() if body else 0)
        if text.rfind("-----BEGIN", max(lo, start - 200), start) < 0:
            out += (text[pos:start], "[REDACTED:private_key]")
            pos = m.end()
    return "".join(out) + text[pos:] if out else text


_CONTROL = bytes(i for i in range(32) if i not in (9, 10, 13))


def _safe(text: str) -> str:
    """Make ``text`` encodable: lone surrogates become U+FFFD, C0 controls but \\t\\n\\r go."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        # Valid surrogate pairs re-join into one code point; lone halves become U+FFFD.
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        data = text.encode("utf-8")
    # bytes.translate is a C table lookup, far faster than a regex; in UTF-8 a byte below 0x20
    # is always that character, never part of a multi-byte sequence.
    kept = data.translate(None, _CONTROL)
    return kept.decode("utf-8") if len(kept) != len(data) else text


def _remove_spans(text: str) -> str:
    """Remove ``<private>`` spans, then boot-context spans (see :func:`_strip_spans`)."""
    if "<" not in text:
        return text
    # On small text a lower-cased copy tells cheaply whether the regex (and ``import re``) is
    # needed at all; on huge text that copy would cost more than the regex scan itself.
    low = text.lower() if len(text) < 65536 else ""
    for tag in ("private", BOOT_CONTEXT_TAG):
        if not low or tag in low:
            text = _strip_spans(text, tag)
    return text


def _strip_spans(text: str, tag: str) -> str:
    """Remove ``<tag>…</tag>`` spans (nesting counted, unterminated = to the end, stray closers
    dropped). Nesting is counted rather than non-greedy so an inner close never reveals the rest
    of an outer private span."""
    out: list[str] = []
    depth = pos = 0
    for m in _sm().tags[tag].finditer(text):
        closing = bool(m.group(1))
        if depth == 0:
            out.append(text[pos : m.start()])
            depth = 0 if closing else 1  # a stray closer is dropped, an opener starts a span
        else:
            depth += -1 if closing else 1
        pos = m.end()
    if depth == 0:
        out.append(text[pos:])
    return "".join(out)


def _marker(cut: int) -> str:
    return f"…[truncated {cut} chars]…"


def _head(text: str, need: int) -> tuple[str, int]:
    """Redacted head (≤ ``need`` chars) of a huge text, and how many input chars it covers.

    Makes safe and scans only ``need + _MARGIN`` chars (cut at whitespace when possible) and
    never emits a character from the window's last ``_UNSAFE`` chars, where a secret cut by the
    window edge could sit unrecognised; every match starting before that zone ends inside the
    window. (The count is of safe characters: exact unless control characters were dropped.)
    """
    end = need + _MARGIN
    ws = max(text.rfind(" ", end - 256, end), text.rfind("\n", end - 256, end))
    window = _drop_orphan_pem(_safe(text[: ws + 1 if ws >= 0 else end]))
    safe = len(window) - _UNSAFE
    out: list[str] = []
    have = pos = 0
    for start, stop, rep in _redactions(window):
        if start >= safe or have + start - pos >= need:
            break
        out += (window[pos:start], rep)
        have += start - pos + len(rep)
        pos = stop
    if have < need and pos < safe:
        take = min(need - have, safe - pos)
        out.append(window[pos : pos + take])
        pos += take
    return "".join(out)[:need], pos


def _tail(text: str, need: int) -> tuple[str, int]:
    """Redacted tail (≤ ``need`` chars) of a huge text, and how many input chars it covers.

    Mirror of :func:`_head`: the window's first ``_UNSAFE`` chars are never emitted (a match
    reaching past them shows as its marker only)."""
    start = len(text) - need - _MARGIN
    breaks = [
        i
        for i in (text.find(" ", start, start + 256), text.find("\n", start, start + 256))
        if i >= 0
    ]
    window = _safe(text[min(breaks) + 1 if breaks else start :])
    pieces: list[tuple[str, int, bool]] = []  # (output, input chars covered, is plain text)
    pos = _UNSAFE
    for s, e, rep in _redactions(window):
        if e > pos:
            if s > pos:
                pieces.append((window[pos:s], s - pos, True))
            pieces.append((rep, e - max(s, pos), False))
            pos = e
    pieces.append((window[pos:], len(window) - pos, True))
    out: list[str] = []
    have = used = 0
    for piece, covered, plain in reversed(pieces):
        if have + len(piece) >= need:
            k = need - have
            out.append(piece[len(piece) - k :])
            used += k if plain else covered
            break
        out.append(piece)
        have += len(piece)
        used += covered
    return "".join(reversed(out)), used


def clean_text(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """Full hygiene of one string field: safe text, spans removed, secrets redacted, truncated.

    Truncation keeps the head and the tail around ``…[truncated N chars]…`` (N counts the
    characters left out) and the result is never longer than ``max_chars``; below room for the
    marker only the head is kept. Inputs longer than ``max_chars + 2 * _MARGIN`` are made safe
    and redacted in a head and a tail window only, never as a whole.
    """
    if type(text) is not str:
        text = text[:] if isinstance(text, str) else _to_str(text)  # slicing gives a plain str
    if max_chars <= 0:
        return ""
    if len(text) > max_chars + 2 * _MARGIN:
        # Huge: spans go first (they need the whole text; tags are ASCII, so raw text finds the
        # same ones unless a control character sits inside a tag), then only a head and a tail
        # window are made safe and redacted.
        text = _remove_spans(text)
        if len(text) > max_chars + 2 * _MARGIN:
            n = len(text)
            room = max_chars - len(_marker(n))  # the real marker counts fewer: never longer
            if room < 2:
                return _head(text, max_chars)[0]
            head, head_used = _head(text, room - room // 2)
            tail, tail_used = _tail(text, room // 2)
            return head + _marker(n - head_used - tail_used) + tail
    text = redact(_remove_spans(_safe(text)))
    n = len(text)
    if n <= max_chars:
        return text
    room = max_chars - len(_marker(n))
    if room < 2:
        return text[:max_chars]
    return text[: room - room // 2] + _marker(n - room) + text[n - room // 2 :]


def clean_bytes(data: bytes, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """Decode ``data`` as UTF-8 (invalid bytes become U+FFFD), then :func:`clean_text`."""
    return clean_text(bytes(data).decode("utf-8", "replace"), max_chars)


def _to_str(obj: object) -> str:
    """``str(obj)``, whatever its ``__str__`` does (raises, returns a non-str…)."""
    try:
        out = str(obj)
        return out if type(out) is str else out[:]
    except Exception:
        return f"<unrepresentable {type(obj).__name__}>"


_Task = tuple[object, int, "Any", "Any", str]  # (value, depth, parent container, slot, sensitive)


class _Walker:
    """Iterative, budgeted conversion behind :func:`clean_value`: no recursion anywhere.

    The budget counts serialised characters (quotes and separators roughly included); once it
    is spent every value still to convert becomes ``…``, and no container is opened any more.
    """

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max(max_chars, 1)
        self.budget = max(256, _BUDGET_FACTOR * max_chars)

    def text(self, s: str, limit: int, sensitive: str = "") -> str:
        """Clean one string within the budget; redact it whole under a secret-naming key."""
        out = clean_text(s, min(limit, max(32, self.budget))) if self.budget > 0 else _OMITTED
        if sensitive and "[REDACTED:" not in out and _plausible_secret(out, sensitive):
            aws = "secretaccesskey" in sensitive.lower()
            kind = _specific_kind(out, "aws_secret_key" if aws else "secret_assignment")
            out = f"[REDACTED:{kind}]"
        self.budget -= len(out) + 6
        return out

    def convert(self, src: object, depth: int, sensitive: str, stack: list[_Task]) -> object:
        """``src`` made JSON-safe; a container comes back empty and its items go on ``stack``."""
        if self.budget <= 0:
            self.budget -= 6
            return _OMITTED
        if src is None or isinstance(src, bool | float):
            self.budget -= 8
            return src if not isinstance(src, float) or math.isfinite(src) else str(float(src))
        if isinstance(src, int):
            self.budget -= src.bit_length() // 3 + 6
            if src.bit_length() > 1000:  # str() of it raises (int_max_str_digits), json too
                return f"[int of {src.bit_length()} bits]"
            if "passw" in sensitive.lower() and src >= 1000:  # "password": 12345678
                return "[REDACTED:secret_assignment]"
            return int(src)
        if isinstance(src, str | bytes | bytearray | memoryview):
            raw = src if isinstance(src, str) else bytes(src).decode("utf-8", "replace")
            return self.text(raw, self.max_chars, sensitive)
        if not isinstance(src, dict | list | tuple | set | frozenset):
            return self.text(_to_str(src), self.max_chars)
        if depth >= _MAX_DEPTH:
            return self.text("[max depth reached]", 32)
        tasks: list[_Task] = []
        out: dict[str, object] | list[object] = {} if isinstance(src, dict) else []
        items = src.items() if isinstance(src, dict) else enumerate(src)
        for i, (k, v) in enumerate(items):
            if i >= _MAX_ITEMS or self.budget <= 0:
                more = f"[… {len(src) - i} more {'entries' if isinstance(src, dict) else 'items'}]"
                if isinstance(out, dict):
                    out["…"] = more
                else:
                    out.append(more)
                break
            if isinstance(out, dict):
                key = self.text(k if isinstance(k, str) else _to_str(k), min(self.max_chars, 200))
                key = f"{key}#{i}" if key in out else key
                out[key] = None  # placeholder keeps the order; the task fills it in
                low = key.lower()
                hint = key if any(w in low for w in _SENSITIVE_KEY_WORDS) else ""
                tasks.append((v, depth + 1, out, key, hint))
            else:
                out.append(None)
                self.budget -= 2
                tasks.append((v, depth + 1, out, i, sensitive))
        stack.extend(reversed(tasks))  # reversed: the first item is converted (budgeted) first
        return out

    def run(self, value: object) -> object:
        root: list[object] = [None]
        stack: list[_Task] = [(value, 0, root, 0, "")]
        while stack:
            src, depth, parent, slot, sensitive = stack.pop()
            try:
                parent[slot] = self.convert(src, depth, sensitive, stack)
            except Exception:  # a dict changing size under us and the like: keep going
                parent[slot] = f"[unconvertible {type(src).__name__}]"
        return root[0]


def clean_value(value: object, max_chars: int = DEFAULT_MAX_CHARS) -> object:
    """JSON-ready, hygienic copy of a JSON-like value (tool input / response); never raises.

    Strings (dict keys too) go through :func:`clean_text`; bytes are decoded first; ints, finite
    floats, bools and None stay; NaN/Infinity and huge ints become strings; tuples and sets
    become lists; anything else becomes its cleaned ``str()``. Containers deeper than
    32 levels become a marker, only the first 100 items of each are kept (then a marker), and
    the content is budgeted at about 3 × ``max_chars`` (anything after that becomes ``…``), so
    the JSON stays within a small multiple of ``max_chars``. A string under a key naming a
    secret (``password``, ``api_key``, ``Authorization``…) is redacted whole when it looks like
    a value rather than a reference. ``json.dumps(result, allow_nan=False)`` always works.
    """
    try:
        return _Walker(max_chars).run(value)
    except Exception:  # MemoryError and the like: never break the hook
        return "[unconvertible value]"
