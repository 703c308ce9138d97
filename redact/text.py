"""Hygiene of one text field: safe text, private spans removed, secrets redacted, bounded.

The top of the redaction package with :mod:`wsd.redact.value`: it runs inside the agent
process on every hook call, *before* anything is written anywhere (and in the daemon on what
the curator writes and on what ``wsd import`` reads), so it uses only the standard library,
compiles its regexes lazily on first use (``import re`` included) and never runs a regex over
more than a window of a huge input.

Contracts:

* :func:`clean_text` output always encodes to UTF-8, holds no C0 control character except
  ``\\n \\r \\t``, no ``<private>`` / ``<workspace-memory>`` span, no recognised secret
  (each becomes ``[REDACTED:<kind>]``) and is at most ``max_chars`` long (``""`` if <= 0).
* A secret anywhere in a huge input, even straddling a window or truncation edge, never leaves
  12 or more consecutive characters of itself in the output.
"""

from __future__ import annotations

from wsd.redact.engine import drop_orphan_pem, redact, redactions
from wsd.redact.table import UNSAFE

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

#: The tag the daemon wraps injected boot context in: its spans are removed like <private> ones
#: (boot context the agent echoes is stripped, not curated again).
BOOT_CONTEXT_TAG = "workspace-memory"

#: How many characters of a field are kept when the caller names no limit.
DEFAULT_MAX_CHARS = 2000

_MARGIN = 16_384  # window length beyond the kept head/tail; must exceed UNSAFE
_CONTROL = bytes(i for i in range(32) if i not in (9, 10, 13))


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
    for m in _span_tags()[tag].finditer(text):
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


_tags: dict[str, re.Pattern[str]] = {}


def _span_tags() -> dict[str, re.Pattern[str]]:
    """The span-tag regexes, compiled on first use apart from the secret tables: only text
    with a tag needs them."""
    if not _tags:
        import re

        _tags.update(
            (tag, re.compile(rf"<\s*(/?)\s*{tag}(?:\s[^<>]{{0,200}})?\s*>", re.I | re.A))
            for tag in ("private", BOOT_CONTEXT_TAG)
        )
    return _tags


def _marker(cut: int) -> str:
    return f"…[truncated {cut} chars]…"


def _head(text: str, need: int) -> tuple[str, int]:
    """Redacted head (≤ ``need`` chars) of a huge text, and how many input chars it covers.

    Makes safe and scans only ``need + _MARGIN`` chars (cut at whitespace when possible) and
    never emits a character from the window's last ``UNSAFE`` chars, where a secret cut by the
    window edge could sit unrecognised; every match starting before that zone ends inside the
    window. (The count is of safe characters: exact unless control characters were dropped.)
    """
    end = need + _MARGIN
    ws = max(text.rfind(" ", end - 256, end), text.rfind("\n", end - 256, end))
    window = drop_orphan_pem(_safe(_plain(text[: ws + 1 if ws >= 0 else end])))
    safe = len(window) - UNSAFE
    out: list[str] = []
    have = pos = 0
    for start, stop, rep in redactions(window):
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

    Mirror of :func:`_head`: the window's first ``UNSAFE`` chars are never emitted (a match
    reaching past them shows as its marker only)."""
    start = len(text) - need - _MARGIN
    breaks = [
        i
        for i in (text.find(" ", start, start + 256), text.find("\n", start, start + 256))
        if i >= 0
    ]
    window = _safe(_plain(text[min(breaks) + 1 if breaks else start :]))
    pieces: list[tuple[str, int, bool]] = []  # (output, input chars covered, is plain text)
    pos = UNSAFE
    for s, e, rep in redactions(window):
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
        text = text[:] if isinstance(text, str) else to_str(text)  # slicing gives a plain str
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


def to_str(obj: object) -> str:
    """``str(obj)``, whatever its ``__str__`` does (raises, returns a non-str…)."""
    try:
        out = str(obj)
        return out if type(out) is str else out[:]
    except Exception:
        return f"<unrepresentable {type(obj).__name__}>"
