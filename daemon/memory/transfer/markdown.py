"""``wsd export --format markdown``: Claude Code's auto-memory layout, which Claude Code and
any Markdown tool read.

``DEST/MEMORY.md`` is the index (a line a memory, linking its file, grouped by type); each
current learning is one file ``DEST/<type>-<id>-<words>.md`` with YAML frontmatter
(``name``, ``description``, ``metadata.type``, plus ``created`` and ``source``) and the
statement as its body; the curated memory files (user.md, context.md, tools.md, files.md)
sit beside the index. Superseded learnings are left out (a reader would take them for
current; the JSON-lines export keeps them). ``metadata.wsd_type`` keeps our own type, so
``wsd import`` of the folder gives each learning its type back.
"""

from __future__ import annotations

import json
import re
import unicodedata
from datetime import UTC, datetime
from typing import Any

#: Our types as Claude Code's: who the person is and how they work (user), what to do or not
#: do (feedback), what is so (project), where a tool lives (reference).
THEIRS = {
    "preference": "user",
    "pattern": "user",
    "correction": "feedback",
    "fact": "project",
    "tool_install": "reference",
}
DESCRIPTION_CHARS = 150
EXPORT_MARK = "<!-- written by wsd export"
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def file_name(lid: int, kind: str, content: str) -> str:
    """``fact-0012-prefers-tabs-over-spaces.md``: unique by id, readable by its words."""
    ascii_ = unicodedata.normalize("NFKD", content).encode("ascii", "ignore").decode()
    words = _NOT_SLUG.sub("-", ascii_.lower()).strip("-")[:40].rstrip("-") or "learning"
    return f"{kind.replace('_', '-')}-{lid:04d}-{words}.md"


def description(content: str) -> str:
    line = " ".join(content.split())
    return line if len(line) <= DESCRIPTION_CHARS else line[: DESCRIPTION_CHARS - 1] + "…"


def memory_file(row: tuple[Any, ...], turns: list[str]) -> tuple[str, str, str]:
    """(file name, its text, its index line) of one learning row of a snapshot.

    The frontmatter's values are JSON strings: a JSON string is a YAML double-quoted
    scalar, so any YAML reader reads them back exactly, and writing them costs a tenth of
    a YAML dumper's time (155,000 files: 83 s with yaml.safe_dump)."""
    lid, kind, content, created, _session, _conf, ref, _by, _at, _sources = row
    name = file_name(lid, kind, content)
    source = f"wsd learning #{lid}"
    if turns:
        source += f", from turns {', '.join(turns[:10])}"
    if ref:
        source += f", imported from {ref}"
    when = datetime.fromtimestamp(created, UTC).isoformat(timespec="seconds")
    about = description(content)

    def q(value: str) -> str:
        return json.dumps(value, ensure_ascii=False)

    text = (
        f"---\nname: {q(name[:-3])}\ndescription: {q(about)}\nmetadata:\n"
        f"  type: {THEIRS.get(kind, 'project')}\n  wsd_type: {kind}\ncreated: {q(when)}\n"
        f"source: {q(source)}\n---\n{content.strip()}\n"
    )
    link_text = about.replace("[", "\\[").replace("]", "\\]")
    return name, text, f"- [{link_text}]({name})"


def index(lines_by_type: dict[str, list[str]], now: float, curated: list[str]) -> str:
    when = datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds")
    out = [
        "# Memory",
        f"{EXPORT_MARK} at {when}: one file a learning, the curated memory files beside it -->",
        "",
    ]
    for theirs in ("user", "feedback", "project", "reference"):
        if lines_by_type.get(theirs):
            out += [f"## {theirs}", *lines_by_type[theirs], ""]
    if curated:
        out += ["## curated memory files", *[f"- [{n}]({n})" for n in curated], ""]
    return "\n".join(out)
