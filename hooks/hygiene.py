"""Hygiene for every captured field: safe text, private spans removed, secrets redacted, bounded.

Runs inside the agent process on every hook call, *before* anything is written anywhere, so it
uses only the standard library, compiles its regexes lazily on first use (``import re`` included)
and never runs a regex over more than a window of a huge input.

Contracts:

* :func:`clean_text` output always encodes to UTF-8, holds no C0 control character except
  ``\\n \\r \\t``, no ``<private>`` / ``<workspace-memory>`` span, no recognised secret (each becomes
  ``[REDACTED:<kind>]``) and is at most ``max_chars`` long (``max_chars <= 0`` gives ``""``).
* A secret anywhere in a huge input, even straddling a window or truncation edge, never leaves
  12 or more consecutive characters of itself in the output.
* :func:`clean_value` never raises and returns JSON-ready data (str keys, finite floats) whose
  serialised size stays within a small multiple of ``max_chars``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import re

__all__ = ["BOOT_CONTEXT_TAG", "DEFAULT_MAX_CHARS", "clean_bytes", "clean_text", "clean_value",
           "redact"]

DEFAULT_MAX_CHARS = 2000
BOOT_CONTEXT_TAG = "workspace-memory"

_PEM_BODY = 10_000  # longest terminated PEM block matched; bounds every other match too
_UNSAFE = _PEM_BODY + 512  # edge zone of a window where a cut secret may hide unrecognised
_MARGIN = 16_384  # window length beyond the kept head/tail; must exceed _UNSAFE
_MAX_DEPTH = 32
_MAX_ITEMS = 100
_BUDGET_FACTOR = 3  # clean_value keeps about this many max_chars of content in total
_OMITTED = "…"

# Cheap substring test on the lower-cased text: no trigger, no secret regex at all.
_TRIGGERS = ("key", "secret", "token", "passw", "passphrase", "bearer", "authorization", "://",
             "sk-", "sk_", "rk_", "whsec_", "akia", "asia", "abia", "acca", "aiza", "gh", "gl",
             "gr1348941", "xox", "xapp-", "eyj", "private key", "npm_", "hf_", "sg.", "pypi-")
_PLACEHOLDERS = frozenset({"none", "null", "nil", "true", "false", "undefined", "str", "string",
                           "bytes", "int", "optional", "any", "required", "redacted", "hidden"})
_REFERENCES = ("os.", "process.env", "env.", "getenv", "self.", "args.", "config.", "settings.")
_LENIENT_WORDS = ("secret", "passw", "passphrase", "authorization", "cookie")
_SENSITIVE_KEY_WORDS = ("key", "token", *_LENIENT_WORDS)

# Value of a NAME=value assignment: quoted (spaces allowed) or a bare run up to a delimiter.
_VALUE = (r"""(?P<q>\\?["'`])?(?P<v>(?(q)[^"'`\\\n]{1,512}|[^\s"'`\\,;&<>(){}\[\]]{1,512}))""")
_SEP = r"""(?:\\?["'`])?[ \t]{0,4}(?:=>|:=|[:=])[ \t]{0,4}"""
_PEM_LABEL = r"(?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?-----"
_TOKEN = r"[A-Za-z0-9._~+/=-]"

# (kind, first characters, rest, boundary, check). Every alternative starts with a plain literal
# and puts its group after it, so sre's BRANCH skips non-matching alternatives in one compare.
# ``boundary`` forbids a letter or digit just before the literal (no match inside a word).
_ALTERNATIVES: tuple[tuple[str, str, str, bool, str], ...] = (
    ("private_key", "-", rf"----BEGIN {_PEM_LABEL}(?:[\s\S]{{0,{_PEM_BODY}}}?-----END "
                         rf"{_PEM_LABEL}|[\s\S]*)", False, ""),
    ("secret_assignment", "-", r"-[A-Za-z0-9-]{0,30}?(?i:password|passwd|passphrase|secret|token"
                               r"|key)(?:=|[ \t]{1,4})" + _VALUE, False, "assign"),
    ("anthropic_key", "s", r"k-ant-(?:api|admin|sid|oat)\d\d-[A-Za-z0-9_-]{20,300}", True, ""),
    ("openai_key", "s", r"k-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,300}", True, "random"),
    ("stripe_key", "sr", r"k_(?:live|test)_[A-Za-z0-9]{10,250}", True, ""),
    ("stripe_key", "w", r"hsec_[A-Za-z0-9+/=]{20,100}", True, ""),
    ("aws_access_key", "A", r"(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16}(?![A-Za-z0-9])", True, ""),
    ("google_api_key", "A", r"Iza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])", True, ""),
    ("github_token", "g", r"(?:h[pousr]_[A-Za-z0-9]{36,255}|ithub_pat_[A-Za-z0-9_]{22,255})",
     True, ""),
    ("gitlab_token", "g", r"l(?:pat|dt|rt|ptt|cbt|ft|imt|agent|oas|soat|ffct)-[A-Za-z0-9_.-]"
                          r"{20,200}", True, ""),
    ("gitlab_token", "G", r"R1348941[A-Za-z0-9_-]{20,64}", True, ""),
    ("slack_token", "x", r"(?:ox[abposre]-[A-Za-z0-9-]{10,250}|app-\d-[A-Za-z0-9-]{10,250})",
     True, ""),
    ("slack_webhook", "h", r"ttps://hooks\.slack\.com/(?:services|workflows|triggers)/"
                           r"[A-Za-z0-9/_-]{10,300}", False, ""),
    ("huggingface_token", "h", r"f_[A-Za-z0-9]{30,40}(?![A-Za-z0-9])", True, "random"),
    ("npm_token", "n", r"pm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", True, ""),
    ("sendgrid_key", "S", r"G\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", True, ""),
    ("pypi_token", "p", r"ypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,300}", True, ""),
    ("jwt", "e", r"yJ[A-Za-z0-9_-]{5,3000}\.[A-Za-z0-9_-]{5,3000}\.[A-Za-z0-9_-]{0,3000}", True,
     ""),
    ("bearer_token", "Aa", r"(?i:uthorization)(?:\\?[\"'])?[ \t]{0,4}[:=][ \t]{0,4}(?:\\?[\"'])?"
                           rf"(?P<s>(?i:basic|bearer|token)[ \t]{{1,4}})?(?P<v>{_TOKEN}{{8,4096}})",
     False, "auth"),
    ("bearer_token", "Bb", rf"(?:earer|EARER)[ \t]{{1,4}}(?P<v>{_TOKEN}{{16,4096}})", False,
     "random"),
    ("url_password", ":", r"//[^\s:/?#@]{0,100}:(?P<v>[^\s/?#]{1,200})@", False, "url"),
    ("secret_assignment", "kK", r"(?i:ey)[A-Za-z0-9_.-]{0,40}" + _SEP + _VALUE, False, "assign"),
    ("secret_assignment", "sS", r"(?i:ecret)[A-Za-z0-9_.-]{0,40}" + _SEP + _VALUE, False, "assign"),
    ("secret_assignment", "tT", r"(?i:oken)[A-Za-z0-9_.-]{0,40}" + _SEP + _VALUE, False, "assign"),
    ("secret_assignment", "pP", r"(?i:ass(?:wor)?d|assphrase)[A-Za-z0-9_.-]{0,40}" + _SEP + _VALUE,
     False, "assign"),
)


class _Compiled:
    """The regexes, compiled once per process on first use (import stays cheap)."""

    def __init__(self) -> None:
        import re

        parts: list[str] = []
        self.kinds: list[str] = []
        self.checks: list[str] = []
        for kind, firsts, rest, boundary, check in _ALTERNATIVES:
            for first in firsts:
                i = len(self.kinds)
                guard = f"(?<![A-Za-z0-9]{re.escape(first)})" if boundary else ""
                body = rest.replace("(?P<", f"(?P<g{i}").replace("(?(", f"(?(g{i}")
                parts.append(f"{re.escape(first)}{guard}(?P<g{i}>{body})")
                self.kinds.append(kind)
                self.checks.append(check)
        self.secret = re.compile("|".join(parts))
        self.orphan_pem = re.compile(
            rf"(?:[A-Za-z0-9+/=\s:,\\]|-(?!----)){{0,{_PEM_BODY}}}-----END {_PEM_LABEL}")
        self.control = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")
        self.tags = {tag: re.compile(rf"<\s*(/?)\s*{tag}(?:\s[^<>]{{0,200}})?\s*>", re.I)
                     for tag in ("private", BOOT_CONTEXT_TAG)}


_compiled: _Compiled | None = None


def _re() -> _Compiled:
    global _compiled
    if _compiled is None:
        _compiled = _Compiled()
    return _compiled


def _classes(s: str) -> int:
    """How many of lower case, upper case and digits occur in ``s``."""
    return (s.upper() != s) + (s.lower() != s) + any(c.isdigit() for c in s)


def _random_enough(s: str) -> bool:
    """Generated credentials mix character classes; words like ``sk-learn-…`` do not."""
    return _classes(s) >= 2 or len(s) >= 32


def _plausible_secret(value: str, name: str) -> bool:
    """Whether the value of a sensitive-looking name is worth redacting (see module docs).

    ``KEY``/``TOKEN`` names are common in code (``key=lambda``, ``max_tokens=4096``), so their
    values must look generated; ``PASSWORD``/``SECRET`` values only must not be placeholders.
    """
    low = value.lower()
    if len(value) < 4 or low in _PLACEHOLDERS or value.startswith("[REDACTED"):
        return False
    if value[0] in "$%<{[(*#" or value.count(value[0]) == len(value) or low.startswith(_REFERENCES):
        return False  # a reference, template or mask, not a value
    ident = value.replace(".", "_").isidentifier() and not any(c.isdigit() for c in value)
    if ident and any(w in low for w in _SENSITIVE_KEY_WORDS):
        return False  # password=password, token=self.token: passing a variable along
    if any(w in name.lower() for w in _LENIENT_WORDS):
        return True
    return len(value) >= 8 and (_classes(value) >= 2 or len(value) >= 24)


def _specific_kind(value: str, default: str) -> str:
    """The kind of a known token form when ``value`` is exactly one, else ``default``."""
    m = _re().secret.fullmatch(value)
    if m is not None and m.lastgroup is not None:
        return _re().kinds[int(m.lastgroup[1:])]
    return default


def _redaction(m: re.Match[str]) -> str | None:
    """Replacement text for one match of the combined regex; None when it is not a secret."""
    c = _re()
    group = m.lastgroup or "g0"
    i = int(group[1:])
    kind, check = c.kinds[i], c.checks[i]
    text, start, end = m.string, m.start(), m.end()
    vs, ve = m.span(f"{group}v") if check else (start, end)
    value, before = text[vs:ve], text[start:vs]
    ok = True
    if check == "random":
        ok = _random_enough(value)
    elif check == "assign":
        ok = _plausible_secret(value, before)
        if "secretaccesskey" in before.lower().replace("_", "").replace("-", ""):
            kind = "aws_secret_key"
        kind = _specific_kind(value, kind) if ok else kind
    elif check == "auth":
        scheme = (m.group(f"{group}s") or "").strip().lower()
        kind = "basic_auth" if scheme == "basic" else _specific_kind(value, kind)
        ok = scheme == "basic" or kind != "bearer_token" or _random_enough(value)
    elif check == "url":
        ok = value[0] not in "$%<{*" and not value.startswith("[REDACTED")
    if ok:
        return f"{before}[REDACTED:{kind}]{text[ve:end]}"
    if ve - vs < end - start:
        # Not a secret by itself, but a span we consumed may still hold one: redact inside it.
        inner = redact(value)
        if inner != value:
            return f"{before}{inner}{text[ve:end]}"
    return None


def _may_hold_secret(text: str) -> bool:
    low = text.lower()
    return any(t in low for t in _TRIGGERS)


def redact(text: str) -> str:
    """Replace every recognised secret in ``text`` by ``[REDACTED:<kind>]``.

    Keeps the context that is not secret (``export API_KEY=``, ``Authorization: Bearer ``, the
    user and host of a URL). Linear-time regexes, but callers should bound the input:
    :func:`clean_text` never passes more than a window of a huge field.
    """
    if not _may_hold_secret(text):
        return text
    c = _re()
    out = c.secret.sub(lambda m: _redaction(m) or m.group(0), text)
    if "PRIVATE KEY-----" in out:  # an orphan block tail at the start (a cut happened upstream)
        m = c.orphan_pem.match(out)
        if m is not None:
            out = "[REDACTED:private_key]" + out[m.end():]
    return out


def _safe(text: str) -> str:
    """Make ``text`` encodable: lone surrogates become U+FFFD, C0 controls but \\t\\n\\r go."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Valid surrogate pairs re-join into one code point; lone halves become U+FFFD.
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    control = _re().control
    return control.sub("", text) if control.search(text) else text


def _strip_spans(text: str, tag: str) -> str:
    """Remove ``<tag>…</tag>`` spans (nesting counted, unterminated = to the end, stray closers
    dropped). Nesting is counted rather than non-greedy so an inner close never reveals the rest
    of an outer private span."""
    if "<" not in text:
        return text
    out: list[str] = []
    depth = pos = 0
    for m in _re().tags[tag].finditer(text):
        closing = bool(m.group(1))
        if depth == 0:
            out.append(text[pos:m.start()])
            pos = m.end()  # a stray closer is dropped, an opener starts a span
            depth = 0 if closing else 1
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

    Scans only ``need + _MARGIN`` chars (cut at whitespace when possible) and never emits an
    input character from the window's last ``_UNSAFE`` chars, where a secret cut by the window
    edge could sit unrecognised; every match starting before that zone ends inside the window.
    """
    end = need + _MARGIN
    ws = max(text.rfind(" ", end - 256, end), text.rfind("\n", end - 256, end))
    end = ws + 1 if ws >= 0 else end
    window, safe = text[:end], end - _UNSAFE
    out: list[str] = []
    have = pos = 0
    if _may_hold_secret(window):
        for m in _re().secret.finditer(window):
            if m.start() >= safe or have + m.start() - pos >= need:
                break
            rep = _redaction(m)
            if rep is not None:
                out += (window[pos:m.start()], rep)
                have += m.start() - pos + len(rep)
                pos = m.end()
    if have < need and pos < safe:
        take = min(need - have, safe - pos)
        out.append(window[pos:pos + take])
        pos += take
    return "".join(out)[:need], pos


def _tail(text: str, need: int) -> tuple[str, int]:
    """Redacted tail (≤ ``need`` chars) of a huge text, and how many input chars it covers.

    Mirror of :func:`_head`: the window's first ``_UNSAFE`` chars are never emitted (a match
    reaching past them shows as its marker only)."""
    start = len(text) - need - _MARGIN
    breaks = [i for i in (text.find(" ", start, start + 256), text.find("\n", start, start + 256))
              if i >= 0]
    window = text[min(breaks) + 1 if breaks else start:]
    pieces: list[tuple[str, int, bool]] = []  # (output, input chars covered, is plain text)
    pos = _UNSAFE
    if _may_hold_secret(window):
        for m in _re().secret.finditer(window):
            s, e = m.span()
            rep = None if e <= pos else _redaction(m)
            if rep is not None:
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
            out.append(piece[len(piece) - k:])
            used += k if plain else covered
            break
        out.append(piece)
        have += len(piece)
        used += covered
    return "".join(reversed(out)), used


def clean_text(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """Full hygiene of one string field: safe text, spans removed, secrets redacted, truncated.

    Truncation keeps the head and the tail around ``…[truncated N chars]…`` (N counts input
    characters left out) and the result is never longer than ``max_chars``; below room for the
    marker only the head is kept. Inputs longer than ``max_chars + 2 * _MARGIN`` are redacted in
    a head and a tail window only, never as a whole.
    """
    if not isinstance(text, str):
        text = str(text)
    elif type(text) is not str:
        text = text[:]  # a str subclass: slicing gives a plain str
    if max_chars <= 0:
        return ""
    text = _strip_spans(_strip_spans(_safe(text), "private"), BOOT_CONTEXT_TAG)
    n = len(text)
    room = max_chars - len(_marker(n))  # the marker for n is at least as long as the real one
    if n <= max_chars + 2 * _MARGIN:
        text = redact(text)
        n = len(text)
        if n <= max_chars:
            return text
        if room < 2:
            return text[:max_chars]
        head_len = room - room // 2
        return text[:head_len] + _marker(n - room) + text[n - room // 2:]
    if room < 2:
        return _head(text, max_chars)[0]
    head, head_used = _head(text, room - room // 2)
    tail, tail_used = _tail(text, room // 2)
    return head + _marker(n - head_used - tail_used) + tail


def clean_bytes(data: bytes, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """Decode ``data`` as UTF-8 (invalid bytes become U+FFFD), then :func:`clean_text`."""
    return clean_text(bytes(data).decode("utf-8", "replace"), max_chars)


class _Walker:
    """Iterative, budgeted conversion behind :func:`clean_value` (no recursion at all)."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max(max_chars, 1)
        self.budget = max(256, _BUDGET_FACTOR * max_chars)

    def text(self, s: str, limit: int) -> str:
        out = clean_text(s, max(32, min(limit, self.budget))) if self.budget > 0 else _OMITTED
        self.budget -= len(out) + 4
        return out

    def scalar(self, src: object, sensitive: str) -> object:
        """A non-container converted, or None when ``src`` is a container."""
        if src is None or isinstance(src, bool):
            return src
        if isinstance(src, int):
            self.budget -= 8
            # str() of a huge int raises (int_max_str_digits) and json.dumps with it.
            big = src.bit_length() > 1000
            value: object = f"[int of {src.bit_length()} bits]" if big else int(src)
        elif isinstance(src, float):
            self.budget -= 8
            value = float(src) if math.isfinite(src) else str(float(src))
        elif isinstance(src, bytes | bytearray | memoryview):
            return self.secret(self.text(clean_bytes(bytes(src), self.max_chars), self.max_chars),
                               sensitive)
        elif isinstance(src, str):
            return self.secret(self.text(src, self.max_chars), sensitive)
        else:
            try:
                raw = str(src)
            except Exception:
                raw = f"<unrepresentable {type(src).__name__}>"
            return self.text(raw, self.max_chars)
        if sensitive and isinstance(value, int) and _plausible_secret(str(value), sensitive):
            return "[REDACTED:secret_assignment]"
        return value

    def secret(self, value: str, sensitive: str) -> str:
        """A string under a sensitive-looking key (``"password": "…"``) is redacted whole."""
        if sensitive and _plausible_secret(value, sensitive):
            kind = "aws_secret_key" if "secretaccesskey" in sensitive.lower() else "secret_assignment"
            return f"[REDACTED:{_specific_kind(value, kind)}]"
        return value

    def container(self, src: object, depth: int, sensitive: str,
                  stack: list[tuple[object, int, Any, Any, str]]) -> object:
        if self.budget <= 0:
            return _OMITTED
        if depth >= _MAX_DEPTH:
            return "[max depth reached]"
        tasks: list[tuple[object, int, Any, Any, str]] = []
        if isinstance(src, dict):
            out: dict[str, object] = {}
            for i, (k, v) in enumerate(src.items()):
                if i >= _MAX_ITEMS or self.budget <= 0:
                    out["…"] = f"[{len(src) - i} more entries]"
                    break
                key = self.text(k if isinstance(k, str) else str(k), min(self.max_chars, 200))
                if key in out:
                    key = f"{key}#{i}"
                out[key] = None  # placeholder keeps the order; the task fills it
                words = key.lower()
                child = key if any(w in words for w in _SENSITIVE_KEY_WORDS) else ""
                tasks.append((v, depth + 1, out, key, child))
            stack.extend(reversed(tasks))
            return out
        items: list[object] = []
        assert isinstance(src, list | tuple | set | frozenset)
        for i, v in enumerate(src):
            if i >= _MAX_ITEMS or self.budget <= 0:
                items.append(f"[… {len(src) - i} more items]")
                break
            items.append(None)
            self.budget -= 4
            tasks.append((v, depth + 1, items, i, sensitive))
        stack.extend(reversed(tasks))
        return items

    def run(self, value: object) -> object:
        root: list[object] = [None]
        stack: list[tuple[object, int, Any, Any, str]] = [(value, 0, root, 0, "")]
        while stack:
            src, depth, parent, slot, sensitive = stack.pop()
            try:
                if isinstance(src, dict | list | tuple | set | frozenset):
                    parent[slot] = self.container(src, depth, sensitive, stack)
                else:
                    parent[slot] = self.scalar(src, sensitive)
            except Exception:  # a hostile __str__, a dict changing under us: keep going
                parent[slot] = f"[unconvertible {type(src).__name__}]"
        return root[0]


def clean_value(value: object, max_chars: int = DEFAULT_MAX_CHARS) -> object:
    """JSON-ready, hygienic copy of a JSON-like value (tool input / response); never raises.

    Strings (dict keys too) go through :func:`clean_text`; bytes are decoded first; ints, finite
    floats, bools and None stay; NaN/Infinity and huge ints become strings; tuples and sets
    become lists; anything else becomes its cleaned ``str()``. Containers deeper than
    32 levels become a marker, only the first 100 items of each are kept, and the total content
    is budgeted at about 3 × ``max_chars`` (what is over becomes ``…``). A string under a key
    naming a secret (``password``, ``api_key``, ``Authorization``…) is redacted whole when it
    looks like a value rather than a reference. ``json.dumps(result, allow_nan=False)`` works.
    """
    try:
        return _Walker(max_chars).run(value)
    except Exception:  # MemoryError and the like: never break the hook
        return "[unconvertible value]"
