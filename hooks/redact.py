"""Secret redaction for captured text: the pattern table and :func:`redact`.

Split from :mod:`hooks.hygiene` (which applies it, with truncation and span
removal, to every field). Same constraints: standard library only, and ``re``
is imported and the table compiled only when some text could hold a secret.

Contract: :func:`redact` replaces each recognised secret with
``[REDACTED:<kind>]`` and leaves everything else as it was.
"""

from __future__ import annotations

from wsd.hooks import redact_rules
from wsd.hooks.secret_shape import classes as _classes  # shared with the provider rules
from wsd.hooks.secret_shape import plausible_secret as _plausible_secret

# typing costs milliseconds to import; mypy treats any TYPE_CHECKING name as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Iterator

#: The tag the daemon wraps injected boot context in (removed like <private> spans, whose
#: small patterns live here with the secret table).
BOOT_CONTEXT_TAG = "workspace-memory"

_PEM_BODY = 10_000  # longest terminated PEM block matched; bounds every other match too
_UNSAFE = _PEM_BODY + 512  # edge zone of a window where a cut secret may hide unrecognised
_MARGIN = 16_384  # window length beyond the kept head/tail; must exceed _UNSAFE

# fmt: off
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
    ("stripe_key", "_", "[sr]k", 2, True, r"(?:live|test|prod)_[A-Za-z0-9]{10,250}", ""),
    ("stripe_key", "_", "whsec", 5, True, r"[A-Za-z0-9+/=]{20,100}", ""),
    ("github_token", "_", "gh[pousr]", 3, True, r"[A-Za-z0-9]{36,255}", ""),
    ("github_token", "_", "github", 6, True, r"pat_[A-Za-z0-9_]{22,255}", ""),
    ("huggingface_token", "_", "hf", 2, True, r"[A-Za-z0-9]{30,40}(?![A-Za-z0-9])", ""),
    ("npm_token", "_", "npm", 3, True, r"[A-Za-z0-9]{36}(?![A-Za-z0-9])", ""),
    ("aws_access_key", "A", "", 0, True, r"(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16}(?![A-Za-z0-9])", ""),
    ("google_api_key", "A", "", 0, True, r"Iza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])", ""),
    ("gitlab_token", "g", "", 0, True, r"l(?:pat|dt|rt|ptt|cbt|ft|imt|agent|oas|soat|ffct)-"
                                       r"[A-Za-z0-9_.-]{20,200}", ""),
    ("gitlab_token", "G", "", 0, True, r"R1348941[A-Za-z0-9_-]{20,64}", ""),
    ("sendgrid_key", "G", "S", 1, True, r"\.[A-Za-z0-9_=.-]{66}(?![A-Za-z0-9_=.-])", ""),
    ("slack_token", "x", "", 0, True, r"(?:ox[abposre]-[A-Za-z0-9-]{10,250}|app-\d-[A-Za-z0-9-]"
                                      r"{10,250})", ""),
    ("slack_webhook", ":", "https", 5, False, r"//hooks\.slack\.com/(?:services|workflows"
                                              r"|triggers)/[A-Za-z0-9/_-]{10,300}", ""),
    # The password may hold "/", "?", "#" and "%40" (and, unencoded, "@" when more follow).
    ("url_password", ":", "", 0, False, r"//[^\s:/?#@\[\]\\]{0,100}:(?P<v>[^\s@\"'`<>]{1,200}"
                                         r"(?:@[^\s@/?#\"'`<>]{1,100}(?=@))*)@", "url"),
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
    "_": ("k_live_", "k_test_", "k_prod_", "whsec_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_",
          "github_pat_", "hf_", "npm_"),
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


def _random_enough(s: str) -> bool:
    """Generated credentials mix character classes; words like ``sk-learn-…`` do not."""
    return _classes(s) >= 2


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


def _specific_kind(value: str, default: str) -> str:
    """The kind of a known token form when ``value`` is exactly one, else ``default``."""
    c = _re()
    m = c.secret.search(value)
    if m is not None and m.lastgroup is not None and m.end() == len(value):
        i = int(m.lastgroup[1:])
        if m.start() == c.back[i]:
            return c.kinds[i]
    return redact_rules.kind_of(value) or default


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


def _redactions(text: str) -> list[tuple[int, int, str]]:
    """Non-overlapping (start, end, replacement) of the secrets in ``text``, left to right:
    this table's and those of the provider rules and the entropy net (:mod:`redact_rules`),
    matched on :func:`_folded` text (a replacement's kept context is in that form)."""
    folded = _folded(text)
    mine = list(_table_redactions(folded))
    theirs = redact_rules.find(folded, redact)
    spans = redact_rules.merge(mine + theirs) if theirs else mine
    if folded is text or not spans:
        return spans
    out: list[tuple[int, int, str]] = []  # the context a replacement keeps, as written
    for start, end, rep in spans:
        i, j = rep.find("[REDACTED:"), rep.rfind("]") + 1
        if i >= 0 and rep[:i] == folded[start : start + i]:
            rep = text[start : start + i] + rep[i:]
        if 0 < j < len(rep) and rep[j:] == folded[end - (len(rep) - j) : end]:
            rep = rep[:j] + text[end - (len(rep) - j) : end]
        out.append((start, end, rep))
    return out


def _table_redactions(text: str) -> Iterator[tuple[int, int, str]]:
    """Non-overlapping (start, end, replacement) of this module's table, left to right."""
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
