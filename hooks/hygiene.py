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

from wsd.hooks.redact import (  # package-internal helpers shared with the redactor
    _MARGIN,
    _UNSAFE,
    BOOT_CONTEXT_TAG,
    _drop_orphan_pem,
    _redactions,
    _sm,
    _specific_kind,
    redact,
)
from wsd.hooks.redact_rules import _VALUE_KEYS, _named_secret
from wsd.hooks.secret_shape import SENSITIVE_KEY_WORDS as _SENSITIVE_KEY_WORDS
from wsd.hooks.secret_shape import plausible_secret as _plausible_secret

# typing costs milliseconds to import; mypy treats any TYPE_CHECKING name as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
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

_MAX_DEPTH = 32
_MAX_ITEMS = 100
_BUDGET_FACTOR = 3  # clean_value keeps about this many max_chars of content in total
_OMITTED = "…"

_CONTROL = bytes(i for i in range(32) if i not in (9, 10, 13))
_INF = float("inf")  # (math.isfinite without importing math: the hook's start-up counts)


# -- terminal colour codes and JSON's escaped slash -------------------------------------------
# A token printed in colour (``\x1b[32mghp_…``) is preceded by the ``m`` of the escape sequence,
# which defeats the word boundary a secret rule starts with; a Slack webhook inside a JSON
# document reads ``https:\/\/hooks.slack.com\/…``. So before anything is matched, ANSI escape
# sequences go, real or spelled out (``\x1b[``, ``\033[``, ``\u001b[``, ``\e[``, ``^[[``), and
# ``\/`` becomes ``/`` (the same JSON string). No ``re``: this runs on every field.

#: How a CSI sequence's introducer may be written: the real one and its common spellings.
_CSI = ("\x1b[", "\\x1b[", "\\033[", "\\u001b[", "\\e[", "^[[")
_PARAMS = frozenset("0123456789;:?<=>")
_INTERMEDIATE = frozenset(" !\"#$%&'()*+,-./")


def _plain(text: str) -> str:
    """``text`` without ANSI escape sequences, with ``\\/`` as ``/`` (see the module docstring)."""
    if "\\/" in text:
        text = text.replace("\\/", "/")
    if "\x1b" in text or ("[" in text and any(s in text for s in _CSI[1:])):
        text = _strip_escapes(text)
    return text


def _strip_escapes(text: str) -> str:
    for intro in _CSI:
        if intro in text:
            text = _strip_csi(text, intro)
    if "\x1b" in text:
        text = _strip_other(text)
    return text


def _strip_csi(text: str, intro: str) -> str:
    """Remove every ``intro`` params intermediates final-byte sequence (a lone intro stays)."""
    out: list[str] = []
    pos = 0
    n = len(text)
    while True:
        i = text.find(intro, pos)
        if i < 0:
            break
        j = i + len(intro)
        while j < n and j - i < 64 and text[j] in _PARAMS:
            j += 1
        while j < n and j - i < 64 and text[j] in _INTERMEDIATE:
            j += 1
        if j < n and "@" <= text[j] <= "~":
            out.append(text[pos:i])
            pos = j + 1
        else:  # not a sequence after all: keep it
            out.append(text[pos : i + len(intro)])
            pos = i + len(intro)
    out.append(text[pos:])
    return "".join(out)


def _strip_other(text: str) -> str:
    """Remove OSC sequences (ESC ] … BEL or ESC \\) and two-character escapes (ESC x)."""
    out: list[str] = []
    pos = 0
    while True:
        i = text.find("\x1b", pos)
        if i < 0 or i + 1 >= len(text):
            break
        out.append(text[pos:i])
        if text[i + 1] == "]":
            ends = [e for e in (text.find("\x07", i, i + 512), text.find("\x1b\\", i + 1, i + 512))]
            found = [e for e in ends if e >= 0]
            end = min(found) if found else i + 1
            pos = end + (2 if text.startswith("\x1b\\", end) else 1)
        else:
            pos = i + 2
    out.append(text[pos:])
    return "".join(out)


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
    window = _drop_orphan_pem(_safe(_plain(text[: ws + 1 if ws >= 0 else end])))
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
    window = _safe(_plain(text[min(breaks) + 1 if breaks else start :]))
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
    text = redact(_remove_spans(_safe(_plain(text))))
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
            if isinstance(src, float) and not -_INF < src < _INF:  # NaN fails too
                return str(float(src))
            return src
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
        named = _named_secret(src) if isinstance(src, dict) else ""
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
                if named and low.endswith(_VALUE_KEYS):  # {"name": "API_TOKEN", "value": …}
                    hint = named
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
