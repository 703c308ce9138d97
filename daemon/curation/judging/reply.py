"""Reading a curator reply: untrusted text in, what it asks for out (nothing applied here).

The format (SPEC.md section 5), one item per line:

* ``NONE``; ``FACT:`` ``PATTERN:`` ``CORRECTION:`` ``PREFERENCE:`` ``TOOL_INSTALL:`` a
  learning, optionally ending with ``[turn N]`` (its source) and ``[replaces ID]`` (an older
  learning, offered in the request with its id, that it supersedes);
* ``ACTION: [urgent|high|normal] text`` (brackets optional); ``ACTION_DONE: ID``;
* ``FORGET: words [turn N]``: the person asked, in turn N, to forget these words (issue 33;
  run only when they stand in that turn's prompt: see the curation's grounding);
* md edits, addressed by the line numbers the request showed: ``user.md +3: text`` (add
  after line 3; ``+0`` is the top, ``+$`` or ``+end`` the end), ``user.md ~5: text``
  (replace line 5), ``user.md -7`` or ``user.md -7..9`` (delete);
* the older full-file blocks ``USER_MD_UPDATE:`` ... (then the whole file), accepted from
  older prompts and other models; they pass the same guards as edits.

Models slip, so the reading is forgiving where it cannot be ambiguous: a bullet or bold
around a keyword or file name, ``line``/``L``/``#`` before a number, the words ``ADD AFTER``,
``REPLACE``, ``DELETE`` for the symbols, a code fence around everything, trailing spaces,
and a line echoing its ``N|`` number prefix. Anything else is reported as unknown and
ignored. Only the four curated files can be named: nothing else can ever be written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from wsd.daemon.curation.judging.edits import MAX_LINE_CHARS, Edit
from wsd.daemon.memory.boot import visible
from wsd.daemon.store import Learning
from wsd.redact import clean_text

UPDATE_HEADERS = {
    "TOOLS_MD_UPDATE": "tools.md",
    "FILES_MD_UPDATE": "files.md",
    "USER_MD_UPDATE": "user.md",
    "CONTEXT_MD_UPDATE": "context.md",
}
LEARNING_HEADERS = {
    "FACT": "fact",
    "PATTERN": "pattern",
    "CORRECTION": "correction",
    "PREFERENCE": "preference",
    "TOOL_INSTALL": "tool_install",
}
MAX_LEARNING_CHARS = 1000
#: What one reply is read for at most; the rest is counted (``ParsedReply.dropped``), not
#: read. A reply within ``max_tokens`` is far smaller; one larger is a Bridge or a model gone
#: wrong, and must not cost the daemon time or memory.db space (found by an attack: a 300 KB
#: reply of ``user.md -1..200`` lines became 4 million refusals and a 21 s flush).
MAX_REPLY_LINES = 5000
MAX_EDITS_PER_FILE = 500
MAX_REWRITE_LINES = 1000
MAX_ITEMS = 200
MAX_UNKNOWN_LINES = 20
PRIORITIES = {"urgent": 0, "p0": 0, "high": 1, "p1": 1, "normal": 2, "p2": 2}


@dataclass
class ParsedReply:
    """What a curator reply asks for, after validation of its form."""

    learnings: list[Learning] = field(default_factory=list)
    actions: list[tuple[str, int]] = field(default_factory=list)
    #: The turns each action cites, in the order of ``actions`` (its ``[turn N]`` is parsed
    #: out of its text, as every item's is: a citation is never judged as words).
    action_turns: list[tuple[int, ...]] = field(default_factory=list)
    closed_actions: list[int] = field(default_factory=list)
    #: FORGET items: (words, the turns cited).
    forgets: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    #: Line-addressed edits per curated file, in reply order.
    edits: dict[str, list[Edit]] = field(default_factory=dict)
    #: Full-file blocks per curated file (their lines).
    rewrites: dict[str, list[str]] = field(default_factory=dict)
    unknown_lines: list[str] = field(default_factory=list)
    said_none: bool = False
    #: Lines not read: past MAX_REPLY_LINES, or items past their caps.
    dropped: int = 0

    def unknown(self, raw: str) -> None:
        """Note a line that is no item of the format (the first few kept, the rest counted)."""
        if len(self.unknown_lines) < MAX_UNKNOWN_LINES:
            self.unknown_lines.append(raw[:200])
        else:
            self.dropped += 1


_DECOR = r"\s*(?:[-*+]\s+)?(?:\*\*|__)?"
_HEADER = re.compile(
    rf"^{_DECOR}(?P<key>NONE|FACT|PATTERN|CORRECTION|PREFERENCE|TOOL_INSTALL|ACTION_DONE|ACTION"
    r"|FORGET"
    r"|TOOLS_MD_UPDATE|FILES_MD_UPDATE|USER_MD_UPDATE|CONTEXT_MD_UPDATE)(?:\*\*|__)?"
    r"\s*(?:\[(?P<tag>[^\]]*)\])?\s*(?::(?P<rest>.*))?$"
)
_NUM = r"(?:line\s*|l|#)?(\d+|\$|end)"
_EDIT = re.compile(
    rf"^{_DECOR}(?P<file>tools|files|user|context)\.md(?:\*\*|__)?\s*:?\s*"
    r"(?:(?P<sym>[-+~=])\s*" + _NUM + r"(?:\s*(?:\.\.|-|to)\s*(\d+))?"
    r"|(?P<word>add after|add at|insert after|add|replace|delete|remove)\s*"
    + _NUM
    + r"(?:\s*(?:\.\.|-|to)\s*(\d+))?)"
    r"(?:\*\*|__)?(?:\s*:|\s+(?=\S)|\s*$)(?P<text>.*)$",
    re.IGNORECASE,
)
_CITE = re.compile(r"\s*[\[(]turns?\s+(#?\d+(?:\s*(?:,|and)\s*#?\d+)*)[\])]\s*$", re.IGNORECASE)
#: Turns one learning may cite (more is not a citation, it is the batch).
MAX_CITED = 10
_REPLACES = re.compile(r"\s*[\[(]\s*(?:replaces|supersedes)\s+#?(\d+)\s*[\])]\s*$", re.I)
_PRIORITY = re.compile(r"^\s*[\[(](urgent|high|normal|p[012])[\])]\s*", re.IGNORECASE)
#: ``ACTION: high Water the plants``: a bare priority word, written as the format has it (lower
#: case, or all capitals); "High school reunion" is an action's text, not a priority.
_BARE_PRIORITY = re.compile(
    r"^\s*(urgent|high|normal|p[012]|URGENT|HIGH|NORMAL|P[012])\s*[:-]?\s+(?=\S)"
)
_FENCE = re.compile(r"^\s*```")
_ECHOED_NUMBER = re.compile(r"^\s*\d{1,4}\|\s?")
_OPS = {"+": "add", "~": "replace", "=": "replace", "-": "delete"}
_WORDS = {
    "add": "add",
    "insert": "add",
    "replace": "replace",
    "delete": "delete",
    "remove": "delete",
}


def parse_reply(
    text: str, turn_ids: Sequence[int] = (), open_action_ids: Sequence[int] = ()
) -> ParsedReply:
    """Read a reply line by line (see the module docstring)."""
    out = ParsedReply()
    valid_turns, open_ids = set(turn_ids), set(open_action_ids)
    block: str | None = None
    lines = text.splitlines()
    out.dropped = max(0, len(lines) - MAX_REPLY_LINES)
    for raw in lines[:MAX_REPLY_LINES]:
        # No line of the format is longer. Invisible characters go before anything is read
        # (a bidi override or a zero-width space shows a person one text and the agent
        # another; gone first, none splits a keyword or hides a secret from redaction).
        raw = visible(raw[: MAX_LEARNING_CHARS * 4])
        header = _HEADER.match(raw)
        edit = _EDIT.match(raw) if header is None else None
        if block is not None and header is None and edit is None:
            if len(out.rewrites[block]) < MAX_REWRITE_LINES:
                out.rewrites[block].append(raw)
            else:
                out.dropped += 1
            continue
        block = None
        if edit is not None:
            _edit(out, edit, raw, valid_turns)
        elif header is None or (
            header.group("rest") is None and not header.group("key").endswith(("_UPDATE", "NONE"))
        ):
            if raw.strip() and not _FENCE.match(raw):
                out.unknown(raw)
        elif header.group("key").endswith("_MD_UPDATE"):
            block = UPDATE_HEADERS[header.group("key")]
            rest = (header.group("rest") or "").strip()
            out.rewrites[block] = [rest] if rest else []
        else:
            _item(out, header, raw, valid_turns, open_ids)
    for name, lines in out.rewrites.items():
        out.rewrites[name] = _unfence(lines)
    return out


def _item(
    out: ParsedReply, m: re.Match[str], raw: str, valid_turns: set[int], open_ids: set[int]
) -> None:
    key, rest, tag = m.group("key"), (m.group("rest") or "").strip(), m.group("tag") or ""
    if len(out.learnings) + len(out.actions) + len(out.closed_actions) >= MAX_ITEMS:
        out.dropped += key != "NONE"
        return
    if key == "NONE":
        out.said_none = True
    elif key in LEARNING_HEADERS:
        rest = f"{rest} [{tag}]" if tag else rest  # FACT [replaces 4]: text
        content, cited, replaces = _strip_refs(rest, valid_turns)
        content = clean_text(content, MAX_LEARNING_CHARS).strip()
        if content:
            out.learnings.append(Learning(LEARNING_HEADERS[key], content, cited, replaces))
        else:
            out.unknown(raw)
    elif key == "ACTION":
        priority = PRIORITIES.get(tag.strip().lower(), 2)
        prio = _PRIORITY.match(rest) or _BARE_PRIORITY.match(rest)
        if prio:
            priority = PRIORITIES[prio.group(1).lower()]
            rest = rest[prio.end() :]
        text, cited, _replaces = _strip_refs(rest, valid_turns)
        content = clean_text(text, MAX_LEARNING_CHARS).strip()
        if content:
            out.actions.append((content, priority))
            out.action_turns.append(cited)
        else:
            out.unknown(raw)
    elif key == "FORGET":
        words, cited, _replaces = _strip_refs(f"{rest} [{tag}]" if tag else rest, valid_turns)
        words = " ".join(words.strip().strip("\"'“”").split())[:MAX_LEARNING_CHARS]
        if words:
            out.forgets.append((words, cited))
        else:
            out.unknown(raw)
    elif key == "ACTION_DONE":
        digits = re.sub(r"[^0-9]", "", rest.split()[0] if rest.split() else "")
        if digits and int(digits) in open_ids:
            out.closed_actions.append(int(digits))
        else:
            out.unknown(raw)


def _strip_refs(content: str, valid_turns: set[int]) -> tuple[str, tuple[int, ...], int | None]:
    """The content without its trailing ``[turn N]`` (or ``[turns N, M]``) and
    ``[replaces ID]`` (either order); the cited turns are those of the batch, in order."""
    cited: tuple[int, ...] = ()
    replaces = None
    for _ in range(2):
        if m := _CITE.search(content):
            numbers = [int(n) for n in re.findall(r"\d+", m.group(1))[:MAX_CITED]]
            cited = tuple(dict.fromkeys(n for n in numbers if n in valid_turns))
            content = content[: m.start()]
        elif m := _REPLACES.search(content):
            replaces = int(m.group(1))
            content = content[: m.start()]
    return content, cited, replaces


def _edit(out: ParsedReply, m: re.Match[str], raw: str, valid_turns: set[int]) -> None:
    name = m.group("file").lower() + ".md"
    sym, word = m.group("sym"), (m.group("word") or "").lower()
    op = _OPS[sym] if sym else _WORDS[word.split()[0]]
    where, to = (m.group(3), m.group(4)) if sym else (m.group(6), m.group(7))
    # "user.md +$: - Prefers tabs [turn 3]": the citation is the edit's, not the line's.
    said, cited, _replaces = _strip_refs(m.group("text"), valid_turns)
    text = _line_text(said) if said.strip() else None
    if where.lower() in ("$", "end"):
        if op != "add":
            out.unknown(raw)
            return
        line: int | None = None
    else:
        line = int(where)
    edits = out.edits.setdefault(name, [])
    if op == "delete":
        last = int(to) if to else line
        if line is None or last is None or last < line or last - line > 200:
            out.unknown(raw)
            return
        if len(edits) + last - line + 1 > MAX_EDITS_PER_FILE:
            out.dropped += 1
            return
        edits += [Edit("delete", n, cited=cited) for n in range(line, last + 1)]
    elif to or (op == "replace" and text is None):
        out.unknown(raw)  # a range to add or replace, or no text: unclear
    elif len(edits) >= MAX_EDITS_PER_FILE:
        out.dropped += 1
    else:
        edits.append(Edit(op, line, text or "", cited))  # type: ignore[arg-type]


def _line_text(text: str | None) -> str | None:
    """One md line from an edit: made safe, redacted, its echoed ``N|`` prefix dropped."""
    if text is None:
        return None
    text = _ECHOED_NUMBER.sub("", text.strip("\n"), count=1)
    if text.startswith(" "):  # "user.md +3: - x": the space after the colon is not content
        text = text[1:]
    return clean_text(text, MAX_LINE_CHARS * 2).rstrip()


def _unfence(lines: list[str]) -> list[str]:
    """A full-file block's lines without surrounding blank lines or a code fence."""
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    if len(lines) >= 2 and _FENCE.match(lines[0]) and _FENCE.match(lines[-1]):
        lines = lines[1:-1]
    return [clean_text(line, MAX_LINE_CHARS * 2).rstrip() for line in lines]
