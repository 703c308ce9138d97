"""Claude Code's auto memory, and plain Markdown (CLAUDE.md style).

An auto-memory folder holds ``MEMORY.md``, an index (a line a memory, linking its file), and
one ``.md`` file a memory, YAML frontmatter first::

    ---
    name: prefers-bullets
    description: Ada wants answers as bullet points
    metadata:
      type: feedback
    ---
    Answer in bullet points, not prose. See [[project-heron]].

Each memory file becomes one learning: its body (with the description before it when the
body does not already say it), ``[[links]]`` kept as text. Its type: ``user`` (who the person
is, what they like) is a ``preference``; ``feedback`` (how to work, what to stop doing) a
``correction``; ``project`` and ``reference`` are ``fact``; a ``metadata.wsd_type`` (our own
markdown export writes one) is taken as it is. Its date: ``created`` (or ``date``) in the
frontmatter, else the file's modification time. The index's link lines are not imported
again (their files are); its other lines are, as facts.

A ``.md`` file without frontmatter (CLAUDE.md, notes) gives a fact a line: headings, blank
lines, code blocks, tables' rules and HTML comments are passed over, list markers taken off.
Unknown frontmatter keys are ignored; a YAML alias, or nesting past 16 levels, is refused
(see :func:`_loader`). In a folder, a file that cannot be read as above (a link, a huge
file, broken or refused frontmatter) is skipped and said, and the rest imported; the
folder our markdown export writes (its ``MEMORY.md`` says so) gives its curated files back
as memory files, not as facts.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from wsd.daemon.memory.transfer.inputs import MAX_EPOCH, BadInput, read_text, walk
from wsd.daemon.memory.transfer.markdown import EXPORT_MARK
from wsd.daemon.store import LEARNING_TYPES, Incoming, LearningIn
from wsd.redact import clean_text
from wsd.schema.layout import CURATED_FILES

MAX_CHARS = 4000
#: Claude Code's memory types, as ours.
TYPES = {"user": "preference", "feedback": "correction", "project": "fact", "reference": "fact"}
#: The frontmatter of one memory file at most (a description is a line).
FRONTMATTER_MAX = 64 * 1024
#: Lists and maps a frontmatter may nest: Claude Code's is flat ``key: value`` with one
#: ``metadata`` map (2 levels). PyYAML's composer recurses a level at a time and met Python's
#: recursion limit (a RecursionError traceback) at ~1,000.
FRONTMATTER_DEPTH = 16
INDEX = "MEMORY.md"
# A title may hold escaped brackets (our export escapes them: "\\[REDACTED:…\\]").
_LINK_LINE = re.compile(r"^\s*[-*+]\s*\[(?:\\.|[^\]\\])*\]\(([^)\s]+\.md)\)")
_LIST = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?")
_RULE = re.compile(r"^\s*(?:[-*_]\s*){3,}$|^\s*\|?\s*:?-{3,}")


@dataclass
class Folder:
    """A folder import's records, and the files it skipped with why."""

    incoming: Incoming = field(default_factory=Incoming)
    files: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)


def read_folder(folder: str) -> Folder:
    """Every Markdown file below ``folder`` (see the module); never raises for one file.

    A folder below it holding its own ``MEMORY.md`` is a memory folder of its own: its index
    and whether our export wrote it are judged there (issue 45: ``wsd import exp`` of a
    folder holding a markdown export in ``md/`` made a fact of every index line and of each
    line of the exported user.md, each learning twice)."""
    out = Folder()
    learnings: list[LearningIn] = []
    out.incoming.learnings = learnings
    roots: dict[str, tuple[bool, set[str]] | None] = {}

    def root_of(rel: str) -> tuple[str, bool, set[str]]:
        """The memory folder ``rel`` is in (its deepest folder holding a MEMORY.md)."""
        parts = rel.split("/")[:-1]
        for depth in range(len(parts), -1, -1):
            base = "/".join(parts[:depth])
            if base not in roots:
                roots[base] = _index(os.path.join(folder, base) if base else folder)
            found = roots[base]
            if found is not None:
                return base, *found
        return "", False, set()

    for rel, why in walk(folder):
        if why is not None:
            out.skipped.append((rel, why))
            continue
        if not rel.lower().endswith((".md", ".markdown")):
            out.skipped.append((rel, NOT_MARKDOWN))
            continue
        path = os.path.join(folder, rel)
        base, exported, linked = root_of(rel)
        inner = rel[len(base) + 1 :] if base else rel
        try:
            if exported and inner in CURATED_FILES:
                out.incoming.md[inner] = _curated(read_text(path))
            else:
                skip = linked if inner == INDEX else set()
                learnings.extend(read_file(path, rel, skip_links=skip))
            out.files += 1
        except BadInput as exc:
            why = str(exc)
            for prefix in (f"{path}: ", f"{rel}: ", path):
                why = why.removeprefix(prefix)
            out.skipped.append((rel, why.strip()))
    return out


#: Why a folder's file that is not Markdown is not read as Markdown.
NOT_MARKDOWN = "not a Markdown file"


def _index(folder: str) -> tuple[bool, set[str]] | None:
    """(whether our export wrote it, the files its link lines name) of ``folder``'s
    MEMORY.md; None without one."""
    index = os.path.join(folder, INDEX)
    if not os.path.isfile(index) or os.path.islink(index):
        return None
    try:
        text = read_text(index)
    except BadInput:
        return False, set()  # said when the index itself is read
    return EXPORT_MARK in text, {m.group(1) for m in map(_LINK_LINE.match, text.splitlines()) if m}


def read_file(path: str, ref: str, skip_links: set[str] | None = None) -> list[LearningIn]:
    """One Markdown file's learnings; :class:`BadInput` if it cannot be read as one."""
    text = read_text(path)
    mtime = os.lstat(path).st_mtime
    if text.startswith("---\n") or text.startswith("---\r\n"):
        return [_memory(text, ref, mtime)]
    return _lines(text, ref, mtime, skip_links or set())


class _Refused(Exception):
    """Frontmatter built to hurt: what it does, where (the 0-based line of the frontmatter,
    and what is there)."""

    def __init__(self, what: str, line: int, at: str = "") -> None:
        super().__init__(what)
        self.what, self.line, self.at = what, line, at


@functools.cache
def _loader() -> Any:
    """YAML's safe loader without aliases and nested at most :data:`FRONTMATTER_DEPTH` deep.

    An alias is refused outright: Claude Code's frontmatter never holds one (nor does our
    export's), and nine of them nine deep (a "billion laughs") are 387 million items once
    anything walks the value (``str`` of it ran 51 s, then a MemoryError). Without aliases a
    value is no bigger than its text (:data:`FRONTMATTER_MAX`)."""
    import yaml  # only here: the hook path and the daemon never read YAML

    class Loader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent: Any, index: int) -> Any:
            event = self.peek_event()  # type: ignore[no-untyped-call]
            if isinstance(event, yaml.AliasEvent):
                line = event.start_mark.line if event.start_mark else 0
                raise _Refused("frontmatter uses a YAML alias", line, f"*{event.anchor}, ")
            nests = isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent)
            if nests:
                self.depth += 1
                if self.depth > FRONTMATTER_DEPTH:
                    what = f"frontmatter nested deeper than {FRONTMATTER_DEPTH} levels"
                    raise _Refused(what, event.start_mark.line if event.start_mark else 0)
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1 if nests else 0

        def construct_object(self, node: Any, deep: bool = False) -> Any:
            # A value YAML's resolver takes for a date or a number that Python then refuses
            # (month 13, a 5,000-digit integer) raised ValueError, not a YAML error: a
            # traceback that ended the whole folder's import.
            try:
                return super().construct_object(node, deep)
            except (ValueError, OverflowError) as exc:
                raise yaml.constructor.ConstructorError(
                    None, None, str(exc).split(":")[0][:80], node.start_mark
                ) from None

    return Loader


def _memory(text: str, ref: str, mtime: float) -> LearningIn:
    import yaml

    end = re.search(r"^---[ \t]*\r?$", text[4:], re.M)
    if end is None:
        raise BadInput(f"{ref}: frontmatter has no closing ---")
    raw, body = text[4 : 4 + end.start()], text[4 + end.end() :]
    if len(raw) > FRONTMATTER_MAX:
        raise BadInput(f"{ref}: frontmatter over {FRONTMATTER_MAX:,} bytes")
    # Line numbers are the file's: the frontmatter starts on its line 2.
    try:
        meta = yaml.load(raw, Loader=_loader())
    except _Refused as exc:
        raise BadInput(f"{ref}: {exc.what} ({exc.at}line {exc.line + 2})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = exc.problem if isinstance(exc, yaml.constructor.ConstructorError) else None
        said = f": {problem}" if problem else ""
        where = f" (line {mark.line + 2}{said})" if mark is not None else ""
        raise BadInput(f"{ref}: frontmatter is not YAML{where}") from None
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise BadInput(f"{ref}: frontmatter is not a mapping of keys")
    found = meta.get("metadata")
    metadata: dict[str, Any] = found if isinstance(found, dict) else {}
    kind = _type(meta, metadata, ref)
    description = _plain(meta.get("description"))
    body = " ".join(body.split())
    if not body:
        content = description or _plain(meta.get("name"))
    # A description cut short ("…", as our export cuts one) says only its head.
    elif description and description.lower().rstrip(".…") not in body.lower():
        content = f"{description.rstrip('.')}: {body}"
    else:
        content = body
    content = clean_text(content, MAX_CHARS).strip()
    if not content:
        raise BadInput(f"{ref}: holds no text (no body, description or name)")
    when = _date(meta.get("created", meta.get("date")), mtime)
    return LearningIn(type=kind, content=content, created_at=when, ref=ref)


def _type(meta: dict[str, Any], metadata: dict[str, Any], ref: str) -> str:
    ours = metadata.get("wsd_type")
    if isinstance(ours, str) and ours in LEARNING_TYPES:
        return ours
    theirs = metadata.get("type", meta.get("type"))
    if theirs is None:
        return "fact"
    if not isinstance(theirs, str) or theirs.strip().lower() not in TYPES:
        raise BadInput(f"{ref}: type {str(theirs)[:40]!r} is not one of {', '.join(TYPES)}")
    return TYPES[theirs.strip().lower()]


def _plain(value: Any) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _date(value: Any, fallback: float) -> float:
    """A frontmatter date (YAML reads ``2026-01-09`` as a date): UTC when it names no zone;
    ``fallback`` when it is not a date, or not one from 1970 to 5138 (as our lines' dates)."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return fallback
    if isinstance(value, datetime):
        when = (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    elif isinstance(value, date):
        when = datetime(value.year, value.month, value.day, tzinfo=UTC).timestamp()
    else:
        return fallback
    return when if 0 <= when < MAX_EPOCH else fallback


def _lines(text: str, ref: str, mtime: float, skip_links: set[str]) -> list[LearningIn]:
    out = []
    fenced = False
    comment = False
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if comment:
            comment = "-->" not in stripped
            continue
        if stripped.startswith("<!--"):
            comment = "-->" not in stripped
            continue
        if fenced or not stripped or stripped.startswith("#") or _RULE.match(stripped):
            continue
        link = _LINK_LINE.match(line)
        if link is not None and link.group(1) in skip_links:
            continue  # the index's line of a memory file, imported from the file itself
        content = clean_text(" ".join(_LIST.sub("", line).split()), MAX_CHARS).strip()
        if content:
            out.append(LearningIn(type="fact", content=content, created_at=mtime,
                                  ref=f"{ref}:{number}"))  # fmt: skip
    return out


def _curated(text: str) -> str:
    return "\n".join(clean_text(line, 2000) for line in text.split("\n"))
