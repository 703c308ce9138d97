"""Secrets found by their shape or by the construct that holds them, not by a vendor's rule.

Issue 46: 69 of 139 forms drawn from real scanners' detector lists (trufflehog, Nosey Parker,
Kingfisher, betterleaks, GitHub secret scanning; ``tests/secrets_beyond.py``) that gitleaks'
default rules do not list were stored in clear. A rule per vendor is always one vendor behind,
so these detectors judge what a secret looks like and where it sits instead:

* a token with a vendor-like prefix and a generated body (``bkua_…``, ``SWMTKN-1-…``,
  ``os_v2_app_…``): :func:`_prefixed`;
* a value after a secret-like command-line flag (``--token X``, ``-Dsonar.login=X``), a value
  fed to a login command (``echo X | docker login --password-stdin``, ``login <<< X``), a
  generated value in a call named for a secret (``TokenSession("…")``) or in a table row after
  a secret's label (``Access Token     …``): :func:`_flags`;
* a value on the lines after a secret-like key: HCL heredocs, YAML block and plain scalars,
  TOML multi-line strings, ``.properties`` continuations, a formatter's parenthesised
  string, JSON-escaped line breaks: :func:`_blocks`, :func:`_escaped`;
* a key wrapped over lines (a run of equal-width lines of token characters, or one such line
  after a line naming a secret): :func:`_wrapped`;
* a token split by concatenation (``"ghp_" + "…"``, implicit and shell adjacency, a joined
  array, template pieces): the pieces are joined and the whole redactor judges the result:
  :func:`_joined`;
* password hashes (crypt(3) and PHC strings), URL parameters named for a signature, token or
  key (presigned S3 and GCS URLs, CloudFront), an automation vendor's webhook path, a keypair
  as an array of 64 (or, named, 32) byte values, a passphrase of ordinary words after a
  passphrase's name, and the line a secret-named file printed: the other detectors.

Each detector is gated on a cheap substring test and compiles its regexes on first use; all
of them are bounded (no nested unbounded repetition; blocks read at most :data:`MAX_LINES`).
Imports only :mod:`wsd.redact.shape` (the redactor itself comes in as a callback).
"""

from __future__ import annotations

from itertools import pairwise

from wsd.redact.shape import (
    NAME_WORDS,
    NOT_SECRET_PREFIXES,
    classes,
    entropy,
    hex_digits,
    lenient_name,
    names_a_value,
    plausible_secret,
    split_name,
    uuid_shaped,
    wordy,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Callable

    Redactor = Callable[[str], str]

Span = tuple[int, int, str]

#: Lines a multi-line value is read for at most (a heredoc, a YAML block): bounds the work.
MAX_LINES = 60
#: A prefixed token's body needs this many characters (ids of vendors' objects, which are not
#: secrets, are shorter: Anthropic's msg_/toolu_ 24, Stripe's cus_/pi_ 14-24, OpenAI's
#: chatcmpl- 29); :data:`PREFIX_BODY_NAMED` where the prefix holds a word of a secret's.
PREFIX_BODY = 32
PREFIX_BODY_NAMED = 20
#: Prefix words that make a shorter body a token (``ak_live_``, ``Column("live_…")``).
_SECRET_PREFIX_WORDS = frozenset(
    {"live", "prod", "secret", "sk", "key", "apikey", "api", "token", "pat", "oauth", "auth",
     "pw", "pwd", "pass", "priv", "private", "sess", "session", "access", "refresh", "app"}
)  # fmt: skip
#: Prefix words naming a digest, whose hex body is a checksum, not a secret.
_DIGEST_WORDS = frozenset({"sha", "sha1", "sha256", "sha384", "sha512", "md5", "h1", "commit",
                           "git", "rev", "hash", "digest", "id", "uuid", "build", "cache", "etag",
                           "arn"})  # fmt: skip
#: Words a passphrase of ordinary words does not hold (a sentence about a password does).
_FUNCTION_WORDS = frozenset(
    {"the", "you", "and", "for", "with", "what", "your", "from", "that", "this", "are", "was",
     "not", "must", "should", "will", "have", "has", "can", "set", "its", "our", "his", "her",
     "they", "them", "been", "into", "when", "where", "which", "while", "than", "then", "also",
     "but", "all", "any", "only", "just", "stored", "during", "used", "same", "please", "here",
     "there", "about", "like", "some", "every", "each", "least", "most", "characters", "long"}
)  # fmt: skip

_cache: dict[str, re.Pattern[str]] = {}


def _rx(source: str) -> re.Pattern[str]:
    found = _cache.get(source)
    if found is None:
        import re

        found = _cache[source] = re.compile(source)
    return found


def _looks_generated(value: str, least: int = 16) -> bool:
    """A value a machine made: long enough, random enough, not a path, URL, word run or UUID."""
    v = value.strip("\"'`")
    return (
        len(v) >= least
        and entropy(v) >= 3.5
        and classes(v) >= 2
        and not v.startswith(NOT_SECRET_PREFIXES)
        and not (wordy(v) and not _holds_token(v))
        and not uuid_shaped(v)
        and " " not in v
    )


def _holds_token(v: str) -> bool:
    """A piece of 16 or more mixed characters: a token behind a word (``sqco_…``, ``…-NRMA``),
    which :func:`wordy` alone would take for a run of words."""
    for sep in "-./":
        v = v.replace(sep, "_")
    return any(len(p) >= 16 and classes(p) >= 2 for p in v.split("_"))


def _judged(value: str, name: str) -> bool:
    """Whether ``value`` is the secret its ``name`` says it is."""
    v = value.strip("\"'`")
    if not plausible_secret(v, "password" if lenient_name(name) else name):
        return False
    if lenient_name(name) or "passphrase" in name.lower():
        return not v.startswith(NOT_SECRET_PREFIXES) and not uuid_shaped(v)
    return _looks_generated(v, 12)


# -- a vendor-like prefix and a generated body ----------------------------------------------------

_PREFIXED = (
    r"(?<![A-Za-z0-9_+/.$:@%-])(\$?[A-Za-z][A-Za-z0-9]{0,14}(?:[_-][A-Za-z0-9]{1,12}){0,3}[_:-])"
    r"([A-Za-z0-9_][A-Za-z0-9_+/.:!-]{15,300}={0,2})(?![A-Za-z0-9_+/=.:!-])"
)


def _prefixed(text: str, _redact: Redactor) -> list[Span]:
    if "_" not in text and "-" not in text and ":" not in text:
        return []
    spans = []
    rx, pos = _rx(_PREFIXED), 0
    for word in text.split():  # the rule only inside the long words (split is C speed)
        if len(word) >= 21 and ("_" in word or "-" in word or ":" in word):
            at = text.find(word, pos)
            pos = at + len(word)
            spans += _prefixed_in(text, rx, at, pos)
    return spans


def _prefixed_in(text: str, rx: re.Pattern[str], lo: int, hi: int) -> list[Span]:
    spans = []
    for m in rx.finditer(text, lo, hi):
        prefix, body = m.group(1), m.group(2)
        words = [w for w in split_name(prefix.lower()) if w]
        first = _pieces(prefix)[0]  # the vendor's word stays readable, the rest goes
        keep = len(first) if first.strip("_:-$").isalpha() else 0
        secret = prefix[keep:] + body
        body = secret.rstrip(".:")
        named = any(w in _SECRET_PREFIX_WORDS for w in words)
        least = PREFIX_BODY_NAMED if named else PREFIX_BODY
        if words and words[0] in _DIGEST_WORDS:
            continue
        if hex_digits(body.replace("-", "")) and not named:
            continue  # a checksum after a label (``node-modules-<sha256>``)
        if body.replace("-", "").replace("_", "").isdigit():
            continue
        if "/" in body or "::" in body:  # a path or a resource name unless one piece is a token
            body_piece = max(body.replace("::", "/").split("/"), key=len)
            if not _looks_generated(body_piece, PREFIX_BODY_NAMED):
                continue
        if len(body) >= least and _looks_generated(body, least) and not uuid_shaped(body):
            start = m.start(1) + keep
            spans.append((start, start + len(body), "[REDACTED:prefixed_token]"))
    return spans


def _pieces(prefix: str) -> list[str]:
    """``sk_live_`` -> ``["sk_", "live_"]``: each word with the separator after it."""
    out, cur = [], ""
    for c in prefix:
        cur += c
        if c in "_:-":
            out.append(cur)
            cur = ""
    return [*out, cur] if cur else out


# -- flags, calls, login input, table rows --------------------------------------------------------

_VALUE = r"(\"[^\"\n]{4,300}\"|'[^'\n]{4,300}'|[^\s\"'|;&<>()]{4,300})"
#: A flag and what separates it from its value; its name is judged before its value is read.
_FLAG = r"(?<![\w-])(--?[A-Za-z][\w.-]{0,50})(?:[ \t]+|=)(?!-)"
_FLAG_WORDS = ("token", "secret", "pass", "pwd", "key", "login", "auth", "cred", "session",
               "signature", "cookie", "private", "signing")  # fmt: skip
_SHORT_FLAGS = frozenset({"-k", "-p", "-a", "-t", "-P", "-K", "-T"})
_CALL_VALUE = r"\(\s*(?:[A-Za-z_]\w{0,30}\s*=\s*)?(\"[^\"\n]{8,300}\"|'[^'\n]{8,300}')\s*[,)]"
_CALL_WORDS = ("token", "secret", "passw", "apikey", "api_key", "credential", "auth", "session",
               "key")  # fmt: skip
_LOGIN_INPUT = (
    r"\becho[ \t]+(?:-n[ \t]+)?(\"[^\"\n]{6,300}\"|'[^'\n]{6,300}'|[^\s\"'|]{6,300})[ \t]*\|"
    r"[^\n]{0,200}?(?:password-stdin|\blogin\b)"
    r"|\blogin\b[^\n]{0,200}?<<<[ \t]*(\"[^\"\n]{6,300}\"|'[^'\n]{6,300}'|\S{6,300})"
)
_AUTH_SCHEME = (
    r"(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?[A-Za-z][\w.-]{1,40}[ \t]+(\S{16,400})"
)
#: A table row's value after a secret's label and a column gap (``Access Token     …``).
_LABEL_WORDS = ("token", "secret", "password", "api key", "apikey", "api_key")
_LABEL_GAP = r"[ \t]{2,}(\S{16,400})"


def _flags(text: str, _redact: Redactor) -> list[Span]:
    spans: list[Span] = []
    low = text.lower()
    if "-" in text and (
        any(c + w in low for w in _FLAG_WORDS for c in "-._")
        or any(f in text for f in (" -k ", " -p ", " -a ", " -t ", " -P ", " -K ", " -T "))
    ):
        for m in _rx(_FLAG).finditer(text):
            name = m.group(1)
            short = name in _SHORT_FLAGS
            if not short and not names_a_value(name.lstrip("-")):
                continue
            found = _rx(_VALUE).match(text, m.end())
            if found is None:
                continue
            value = found.group(1)
            if short:
                ok = _looks_generated(value, 20) and not hex_digits(value.strip("\"'"))
            else:
                ok = _judged(value, name)
            if ok:
                spans.append(
                    _inside_quotes(found.start(1), found.end(1), value, "secret_assignment")
                )
    if "(" in text:
        spans += _calls(text, low)
    if "login" in low and ("<<<" in text or ("echo" in low and "|" in text)):
        for m in _rx(_LOGIN_INPUT).finditer(text):
            group = 1 if m.group(1) else 2
            value = m.group(group)
            if plausible_secret(value.strip("\"'"), "password"):
                spans.append(_inside_quotes(m.start(group), m.end(group), value, "password"))
    at = low.find("authorization")
    while at >= 0:  # whatever the scheme (``Zoho-oauthtoken 1000.…``)
        auth = _rx(_AUTH_SCHEME).match(text, at)
        at = low.find("authorization", at + 13)
        if auth is not None:
            value = auth.group(1).rstrip("\"',;")
            if (
                len(value) >= 16
                and entropy(value) >= 3.0
                and not value.startswith(NOT_SECRET_PREFIXES)
            ):
                spans.append((auth.start(1), auth.start(1) + len(value), "[REDACTED:bearer_token]"))
    if "  " in text or "\t" in text:
        for word in _LABEL_WORDS:
            at = low.find(word)
            while at >= 0:
                end = at + len(word)
                found = (
                    _rx(_LABEL_GAP).match(text, end) if not text[end : end + 1].isalnum() else None
                )
                if found and _looks_generated(found.group(1), 16):
                    spans.append((found.start(1), found.end(1), "[REDACTED:secret_assignment]"))
                at = low.find(word, end)
    return spans


def _calls(text: str, low: str) -> list[Span]:
    """A generated value handed to a call named for a secret (``TokenSession("…")``)."""
    spans, seen = [], set()
    for word in _CALL_WORDS:
        at = low.find(word)
        while at >= 0:
            end = _rx(r"\w*").match(text, at + len(word)).end()  # type: ignore[union-attr]
            if end < len(text) and text[end] == "(" and end not in seen:
                start = at
                while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
                    start -= 1
                seen.add(end)
                found = _rx(_CALL_VALUE).match(text, end)
                if (
                    found
                    and names_a_value(text[start:end])
                    and _looks_generated(found.group(1), 12)
                ):
                    value = found.group(1)
                    spans.append(
                        _inside_quotes(found.start(1), found.end(1), value, "secret_assignment")
                    )
            at = low.find(word, end)
    return spans


def _inside_quotes(start: int, end: int, value: str, kind: str) -> Span:
    if len(value) > 2 and value[0] in "\"'" and value[-1] == value[0]:
        start, end = start + 1, end - 1
    return start, end, f"[REDACTED:{kind}]"


# -- values on the lines after a secret-like key --------------------------------------------------

_BLOCK_KEY = (
    r"(?m)^([ \t]*)(?:-[ \t]+)?([\"']?[A-Za-z_][\w.\-]{0,60}[\"']?)[ \t]*(?:=|:)[ \t]*"
    r"(<<-?[ \t]*[\"']?([A-Za-z_]\w{0,20})[\"']?|[|>][+-]?[0-9]?|\"\"\"|'''|\(|\\)?"
    r"[ \t]*(?:#[^\n]*)?\r?\n"
)


def _blocks(text: str, _redact: Redactor) -> list[Span]:
    if "\n" not in text:
        return []
    spans: list[Span] = []
    for m in _rx(_BLOCK_KEY).finditer(text):
        name = m.group(2).strip("\"'")
        if not names_a_value(name):
            continue
        opener, indent = m.group(3) or "", len(m.group(1).expandtabs())
        lines = _block_lines(text, m.end(), opener, m.group(4), indent)
        if not lines:
            continue
        value = "".join(text[s:e] for s, e in lines)
        several_words = any(" " in text[s:e] for s, e in lines)
        if several_words and not (lenient_name(name) or "passphrase" in name.lower()):
            continue  # a sentence under a key that names a token: not a token
        if _judged(value, name) or (len(lines) > 1 and _looks_generated(value, 16)):
            spans += [(s, e, "[REDACTED:secret_assignment]") for s, e in lines]
    return spans


def _block_lines(
    text: str, pos: int, opener: str, tag: str | None, indent: int
) -> list[tuple[int, int]]:
    """The (start, end) of each line's content of the value that starts at ``pos``."""
    out: list[tuple[int, int]] = []
    for _ in range(MAX_LINES):
        if pos >= len(text):
            break
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        raw = text[pos:end].rstrip("\r")
        body = raw.strip()
        if tag is not None:  # a heredoc: up to its tag
            if body == tag:
                break
        elif opener in ('"""', "'''"):
            close = raw.find(opener)
            if close >= 0:
                raw, body = raw[:close], raw[:close].strip()
                if body:
                    out.append(_content(text, pos, raw))
                break
        elif opener == "(":
            if body.startswith(")"):
                break
        elif opener == "\\":
            if body:
                out.append(_content(text, pos, raw))
            if not raw.rstrip().endswith("\\"):
                break
            pos = end + 1
            continue
        else:  # YAML: the lines indented under the key
            lead = len(raw) - len(raw.lstrip())
            if not body or lead <= indent:
                break
            if not opener and (": " in body or body.endswith(":") or body.startswith("- ")):
                return []  # a mapping or a list under the key, not its value
        if body:
            out.append(_content(text, pos, raw))
        pos = end + 1
    return out


def _content(text: str, pos: int, raw: str) -> tuple[int, int]:
    """A line's value without its indent, quotes, trailing comma or continuation."""
    start, end = pos + len(raw) - len(raw.lstrip()), pos + len(raw.rstrip())
    while end > start and text[end - 1] in "\\,":
        end -= 1
    while end > start and text[end - 1] in " \t":
        end -= 1
    if end - start >= 2 and text[start] in "\"'" and text[end - 1] == text[start]:
        start, end = start + 1, end - 1
    return start, end


_ESCAPED = (
    r"([\"']?[A-Za-z_][\w.\-]{0,60}[\"']?)[ \t]*[:=][ \t]*\"((?:[^\"\\\n]|\\[^\n]){24,8000})\""
)


def _escaped(text: str, _redact: Redactor) -> list[Span]:
    """A quoted value wrapped with escaped line breaks (``"…\\n…"``, a key's base64 in JSON)."""
    if "\\n" not in text:
        return []
    spans = []
    for m in _rx(_ESCAPED).finditer(text):
        value = m.group(2)
        if "\\n" not in value or not names_a_value(m.group(1).strip("\"'")):
            continue
        joined = value.replace("\\r", "").replace("\\n", "")
        if " " not in joined and _looks_generated(joined, 24):
            spans.append((m.start(2), m.end(2), "[REDACTED:secret_assignment]"))
    return spans


# -- a key wrapped over lines ---------------------------------------------------------------------

_LINE = r"(?m)^[ \t]*([A-Za-z0-9+/_=.-]{24,120})[ \t]*\\?[ \t]*\r?$"
_SECRET_WORDS_NEAR = ("token", "secret", "key", "password", "passphrase", "credential")


def _wrapped(text: str, redact: Redactor) -> list[Span]:
    if "\n" not in text:
        return []
    lines = [(m.start(1), m.end(1)) for m in _rx(_LINE).finditer(text)]
    spans: list[Span] = []
    i = 0
    while i < len(lines):
        run = [lines[i]]
        width = lines[i][1] - lines[i][0]
        while (
            i + len(run) < len(lines)
            and width >= 32
            and _next_line(text, run[-1][1], lines[i + len(run)][0])
            and lines[i + len(run)][1] - lines[i + len(run)][0] <= width
        ):
            run.append(lines[i + len(run)])
            if run[-1][1] - run[-1][0] < width:
                break
        i += len(run)
        joined = "".join(text[s:e] for s, e in run)
        before = text[max(0, run[0][0] - 200) : run[0][0]]
        told = any(w in before.lower() for w in _SECRET_WORDS_NEAR)
        if len(run) < 2 and not (told and _looks_generated(joined, 24)):
            continue
        after = text[run[-1][1] : run[-1][1] + 120]
        if "-----" in before[-80:] or "-----END" in after or _public(joined):
            continue  # armour's body (the PEM rule's) or a certificate, an image
        if redact(joined) != joined or (
            _looks_generated(joined, 32) and classes(joined) == 3 and not hex_digits(joined)
        ):
            spans += [(s, e, "[REDACTED:wrapped_secret]") for s, e in run]
    return spans


def _next_line(text: str, end: int, start: int) -> bool:
    """Whether ``start`` begins the line right after the one ending at ``end``."""
    gap = text[end:start]
    return gap.count("\n") == 1 and not gap.replace("\n", "").replace("\r", "").strip(" \t\\")


def _public(joined: str) -> bool:
    """Base64 of what is meant to be read: an image, a document, an archive, a certificate."""
    if joined.startswith(NOT_SECRET_PREFIXES):
        return True
    import base64
    import binascii

    try:
        raw = base64.b64decode(joined + "=" * (-len(joined) % 4), altchars=None, validate=False)
    except (binascii.Error, ValueError):
        return False
    magic = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"%PDF", b"PK\x03\x04", b"\x1f\x8b")
    return raw.startswith(magic) or (raw[:1] == b"\x30" and b"\x55\x04\x03" in raw[:600])


# -- concatenation --------------------------------------------------------------------------------

_LITERAL = r"([\"'`])((?:(?!\1)[^\\\n]|\\[^\n]){1,300})\1"
_JOINERS = frozenset({"", "+", ","})
#: What a text holds where pieces of a string are joined: an operator, adjacent quotes,
#: a template, a join call, a quote ending a line (implicit concatenation over lines).
_JOIN_SIGNS = ("+", '""', "''", "${", ".join(", '"\n', "'\n", '" "', "' '")
_TEMPLATE = r"\b([A-Za-z][\w-]{1,15})\$\{[ \t]*([\"'])([^\"'\n]{8,300})\2[ \t]*\}"


def _joined(text: str, redact: Redactor) -> list[Span]:
    """The pieces of a string split by concatenation, judged joined."""
    if not any(q in text for q in "\"'`"):
        return []
    spans: list[Span] = []
    spans += _runs(text, _LITERAL, redact)
    if "`" in text:  # the pieces inside a template literal: `${'dapi'}${'…'}`
        spans += _runs(text, _LITERAL.replace("\"'`", "\"'"), redact)
    if "${" in text:
        for m in _rx(_TEMPLATE).finditer(text):
            spans += _judge_run(text, [m.span(1), m.span(3)], redact)
    return spans


def _runs(text: str, literal: str, redact: Redactor) -> list[Span]:
    spans: list[Span] = []
    literals = [(m.start(2), m.end(2)) for m in _rx(literal).finditer(text)]
    run: list[tuple[int, int]] = []
    for lit in [*literals, (-1, -1)]:
        if run and lit[0] >= 0 and _joins(text[run[-1][1] + 1 : lit[0] - 1]) and len(run) < 20:
            run.append(lit)
            continue
        if len(run) >= 2 and _joined_as_one(text, run):
            spans += _judge_run(text, run, redact)
        run = [lit]
    return spans


def _joined_as_one(text: str, run: list[tuple[int, int]]) -> bool:
    """Pieces separated by commas are one string only as an array that is joined
    (``["glpat", "-", …].join("")``); a JSON object's values are not."""
    gaps = ["".join(text[a[1] + 1 : b[0] - 1].split()) for a, b in pairwise(run)]
    if "," not in gaps:
        return True
    after = "".join(text[run[-1][1] + 1 : run[-1][1] + 20].split())
    return all(g == "," for g in gaps) and after.startswith(("].join(", ")"))


def _joins(gap: str) -> bool:
    """What may sit between two pieces of one string: ``+``, ``,``, nothing, white space
    (implicit concatenation, over lines too), a template's ``}${``."""
    if len(gap) > 40:
        return False
    squeezed = "".join(gap.split())
    return squeezed in _JOINERS or squeezed == "}${"


def _judge_run(text: str, run: list[tuple[int, int]], redact: Redactor) -> list[Span]:
    pieces = [text[s:e] for s, e in run]
    joined = "".join(pieces)
    if len(joined) < 16 or len(joined) > 4000 or any(c.isspace() for c in joined):
        return []  # a token has no white space: ``"Hello, " + name`` is not one
    done = redact(joined)
    if done == joined or any(redact(p) != p for p in pieces if len(p) >= 16):
        return []  # nothing found joined, or a piece holds a secret by itself (the rules')
    head = 0
    while head < min(len(done), len(joined)) and done[head] == joined[head]:
        head += 1
    tail = 0
    while tail < min(len(done), len(joined)) - head and done[-1 - tail] == joined[-1 - tail]:
        tail += 1
    lo, hi = head, len(joined) - tail  # what the redactor changed, in the joined string
    out, at = [], 0
    for (s, _e), piece in zip(run, pieces, strict=True):
        a, b = max(lo, at), min(hi, at + len(piece))
        if a < b:
            out.append((s + a - at, s + b - at, "[REDACTED:split_secret]"))
        at += len(piece)
    return out


# -- hashes, URLs, byte arrays, passphrases, printed files ----------------------------------------

_HASH = (
    r"(?<![\w$])(\$(?:2[abxy]?|1|5|6|7|y|gy|apr1|md5|sha1|argon2(?:id|i|d)|scrypt|pbkdf2(?:-sha\d+)?"
    r"|bcrypt(?:-sha256)?)\$[A-Za-z0-9./+=,$-]{16,400})"
)


_HASH_HEADS = ("$1$", "$2", "$5$", "$6$", "$7$", "$y$", "$gy$", "$apr1$", "$md5", "$sha1$",
               "$argon2", "$scrypt$", "$pbkdf2", "$bcrypt")  # fmt: skip


def _hashes(text: str, _redact: Redactor) -> list[Span]:
    if "$" not in text or not any(h in text for h in _HASH_HEADS):
        return []
    spans = []
    for m in _rx(_HASH).finditer(text):
        value = m.group(1).rstrip(".,")
        last = value.rsplit("$", 1)[-1]
        if value.count("$") >= 3 and len(last) >= 16 and entropy(last) >= 3.0:
            spans.append((m.start(1), m.start(1) + len(value), "[REDACTED:password_hash]"))
    return spans


_PARAM = r"[?&;]([A-Za-z][\w.-]{0,40})=([^&\s\"'#<>]{8,2048})"
_NOT_SECRET_PARAMS = ("page", "next", "cursor", "continuation", "algorithm", "credential",
                      "signedheaders", "date", "expires", "redirect", "callback",
                      "state")  # fmt: skip


def _url_params(text: str, _redact: Redactor) -> list[Span]:
    if "=" not in text or ("?" not in text and "&" not in text):
        return []
    spans = []
    for m in _rx(_PARAM).finditer(text):
        name, value = m.group(1).lower(), m.group(2)
        if any(w in name for w in _NOT_SECRET_PARAMS) or value.startswith("[REDACTED"):
            continue
        if "sig" in name:  # a signature: whatever its alphabet (SigV4's is hex)
            ok = len(value) >= 16 and entropy(value) >= 3.0
        else:
            ok = names_a_value(name) and _judged(value, name)
        if ok:
            spans.append((m.start(2), m.end(2), "[REDACTED:url_secret]"))
    return spans


_URL = r"https?://([A-Za-z0-9.-]{1,253})(/[^\s\"'<>)\]}`]{0,600})"
_HOOK_SEGMENTS = frozenset({"webhook", "webhooks", "hooks", "hook", "catch", "key", "trigger"})


def _webhooks(text: str, _redact: Redactor) -> list[Span]:
    """The path of an automation vendor's webhook: the part after ``/webhook/``, ``/hooks/``,
    ``/catch/``, ``/key/`` (or all of it on a ``hook.`` host) that is not words."""
    if "hook" not in text.lower() and "/key/" not in text:
        return []
    spans = []
    for m in _rx(_URL).finditer(text):
        host, path = m.group(1).lower(), m.group(2).split("?", 1)[0].split("#", 1)[0]
        segments, at = [], m.start(2)
        for seg in path.split("/"):
            segments.append((at, seg))
            at += len(seg) + 1
        marks = [i for i, (_a, s) in enumerate(segments) if s.lower() in _HOOK_SEGMENTS]
        first = marks[-1] + 1 if marks else (1 if host.startswith("hook") else None)
        if first is None:
            continue
        for a, seg in segments[first:]:
            token = len(seg) >= 6 and not seg.isdigit() and not wordy(seg) and classes(seg) >= 2
            if token or uuid_shaped(seg):
                spans.append((a, a + len(seg), "[REDACTED:webhook]"))
    return spans


_BYTES = r"\[[ \t\r\n]*((?:\d{1,3}[ \t\r\n]*,[ \t\r\n]*){31,63}\d{1,3})[ \t\r\n]*,?[ \t\r\n]*\]"
_KEY_WORDS_NEAR = ("key", "seed", "secret", "private", "signer", "wallet", "payer", "authority")


def _byte_arrays(text: str, _redact: Redactor) -> list[Span]:
    """A keypair as 64 byte values; 32 of them where a key's word is near (a seed)."""
    if "," not in text or "[" not in text:
        return []
    spans = []
    for m in _rx(_BYTES).finditer(text):
        values = [int(v) for v in m.group(1).replace(" ", "").split(",") if v.strip().isdigit()]
        if any(v > 255 for v in values) or len(values) not in (32, 64):
            continue
        if max(values) < 128 or len(set(values)) < 20:
            continue  # a key's bytes are uniform over 0-255; pixels and counts are not
        near = text[max(0, m.start() - 120) : m.start()].lower()
        if len(values) == 64 or any(w in near for w in _KEY_WORDS_NEAR):
            spans.append((m.start(1), m.end(1), "[REDACTED:private_key]"))
    return spans


_PHRASE_LINE = (
    r"(?i)[ \t]*[\w.-]*(?:passphrase|pass_phrase|password|passwd|secret)[\w.-]*[ \t]*[:=][ \t]*"
    r"([a-z]{3,10}(?:[ \t]+[a-z]{3,10}){2,9})[ \t]*(?:#[^\n]*)?$"
)
_PHRASE_PROSE = (
    r"(?i:\b(?:passphrase|pass phrase|password|seed phrase))\b[^\n]{0,80}?\b(?:is|:)[ \t]+"
    r"((?:[a-z]{3,10}[ \t]+){2,8}[a-z]{3,10})(?=[ \t]*(?:[,.;!?)]|$))"
)
#: A command printing a file, the file's name, and the one line it printed.
_PRINTED = r"[ \t]+(\S{1,200})[ \t]*\r?\n([^\n$#>]{4,200}?)[ \t]*(?:\r?\n|\r?$)"
_PRINTERS = ("cat", "type", "head", "more", "less", "get-content")
_PRINTED_WORDS = ("pass", "secret", "token", "key", "cred")


def _passphrases(text: str, _redact: Redactor) -> list[Span]:
    low = text.lower()
    if not any(w in low for w in ("pass", "secret", "seed", "key", "token", "cred")):
        return []
    spans: list[Span] = []
    for lo, hi in _lines_with(text, low, ("pass", "secret", "seed")):  # only those lines
        line = text[lo:hi]
        if not _three_words(line):
            continue  # no run of ordinary words for a passphrase to be
        for m in (_rx(_PHRASE_LINE).match(line), *_rx(_PHRASE_PROSE).finditer(line)):
            if m is None:
                continue
            words = m.group(1).split()
            if not any(w.lower() in _FUNCTION_WORDS for w in words):
                spans.append((lo + m.start(1), lo + m.end(1), "[REDACTED:passphrase]"))
    for word in _PRINTERS:  # a command printing a file named for a secret: its one line
        at = low.find(word)
        while at >= 0:
            ahead = text[at + len(word) : at + len(word) + 1]
            line = text[text.rfind("\n", 0, at) + 1 : at].strip()
            shell = ahead in (" ", "\t") and (not line or line[-1] in "$#>%")  # a prompt's command
            m = _rx(_PRINTED).match(text, at + len(word)) if shell else None
            at = low.find(word, at + len(word))
            if m is None or not any(w in m.group(1).lower() for w in _PRINTED_WORDS):
                continue
            name, line = m.group(1), m.group(2).strip()
            if name.endswith((".pub", ".crt")) or not plausible_secret(line, "password"):
                continue
            words = line.split()
            if len(words) == 1 or not any(w.lower() in _FUNCTION_WORDS for w in words):
                end = m.start(2) + len(m.group(2).rstrip())
                spans.append((m.start(2), end, "[REDACTED:password]"))
    return spans


def _three_words(line: str) -> bool:
    """Whether ``line`` has three lower-case words of 3 to 10 letters in a row."""
    run = 0
    for word in line.split():
        word = word.rstrip(",.;!?)")
        run = run + 1 if 3 <= len(word) <= 10 and word.isalpha() and word.islower() else 0
        if run >= 3:
            return True
    return False


def _lines_with(text: str, low: str, words: tuple[str, ...]) -> list[tuple[int, int]]:
    """(start, end) of each line of ``text`` holding one of ``words``, in order, once each."""
    found: set[tuple[int, int]] = set()
    for word in words:
        at = low.find(word)
        while at >= 0:
            lo = text.rfind("\n", 0, at) + 1
            hi = text.find("\n", at)
            hi = len(text) if hi < 0 else hi
            found.add((lo, hi))
            at = low.find(word, hi)
    return sorted(found)


def find(text: str, redact: Redactor) -> list[Span]:
    """The (start, end, replacement) of what the detectors above see in ``text``, unordered and
    maybe overlapping (the engine merges them with the rules' spans).

    Gated without ``re``: most detectors need a long run of token characters (a word of 16 or
    more), the others a name's word or their own punctuation, so a hook's ordinary field
    compiles nothing."""
    if len(text) < 12:
        return []
    low = text.lower()
    named = any(w in low for w in NAME_WORDS)
    long_word = any(len(w) >= 16 for w in text.split())
    spans: list[Span] = []
    if long_word:
        spans += _prefixed(text, redact) + _wrapped(text, redact) + _escaped(text, redact)
        spans += _url_params(text, redact) + _webhooks(text, redact)
    if named or long_word:
        spans += _flags(text, redact)
    if named:
        spans += _blocks(text, redact) + _passphrases(text, redact)
    if any(j in text for j in _JOIN_SIGNS):
        spans += _joined(text, redact)
    spans += _hashes(text, redact) + _byte_arrays(text, redact)
    # Never a marker or a part of one: redacting twice changes nothing more.
    return [s for s in spans if s[1] > s[0] and not _in_marker(text, s[0], s[1])]


def _in_marker(text: str, start: int, end: int) -> bool:
    if "[REDACTED" in text[max(0, start - 9) : end]:
        return True
    opened = text.rfind("[REDACTED:", max(0, start - 60), start)
    return opened >= 0 and "]" not in text[opened:start]
