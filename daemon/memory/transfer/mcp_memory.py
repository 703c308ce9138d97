"""The MCP reference memory server's ``memory.jsonl`` (``@modelcontextprotocol/server-memory``).

The server keeps a knowledge graph, one JSON object a line, rewritten whole on each change::

    {"type":"entity","name":"Ada Moreau","entityType":"person","observations":["allergic to x"]}
    {"type":"relation","from":"Ada Moreau","to":"Project Heron","relationType":"leads"}

What each becomes (a learning is a statement that stands alone, so each names its entity):

* each observation of an entity, the learning "Ada Moreau: allergic to hazelnuts". Its type
  is ``preference`` when the entity is one (``entityType`` "preference") or the observation
  says one ("prefers", "likes", "dislikes", "would rather", "wants"), else ``fact``;
* each relation, the fact "Ada Moreau leads Project Heron" (``works_at`` reads "works at"),
  a preference when its relation says one ("Ada Moreau prefers Dark mode");
* an entity without observations adds nothing of its own (its relations name it).

The file keeps no dates: every learning is dated when the file was last written (its
modification time), the most the source says of its age. ``ref`` is ``memory.jsonl:LINE``.
Older server versions wrote extra keys, or no ``observations``: extra keys are ignored, a
missing list is an empty one; anything else that is not as above is an error naming the line.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any

from wsd.daemon.memory.transfer import parallel
from wsd.daemon.memory.transfer.inputs import BadInput, json_object, lines
from wsd.daemon.store import Incoming, LearningIn
from wsd.redact import clean_text

#: A learning's length at most (as the import of our own lines).
MAX_CHARS = 4000
#: The line types the server writes (every version: read in its source, 0.6.2 to 2026.8.31).
TYPES = ("entity", "relation")
_PREFERS = re.compile(r"\b(prefer|prefers|preferred|likes?|dislikes?|would rather|wants?)\b", re.I)


def looks_like(first: dict[str, Any]) -> bool:
    """True if the first object of a JSON-lines file is one the server writes."""
    return first.get("type") in TYPES and ("name" in first or "from" in first)


def read(path: str, mtime: float) -> Incoming:
    """The graph as learnings (parsed on every core, see :mod:`.parallel`);
    :class:`BadInput` naming the first bad line."""
    out = Incoming()
    parse = functools.partial(parse_lines, os.path.basename(path), mtime)
    out.learnings = parallel.stream(parse, parallel.chunks(lines(path), parallel.line_bytes), out)
    return out


def parse_lines(name: str, mtime: float, numbered: list[tuple[int, str]]) -> Incoming:
    """Some numbered lines of file ``name`` as learnings (a worker's share)."""
    learnings: list[LearningIn] = []
    for number, text in numbered:
        if not text.strip():
            continue
        try:
            learnings.extend(_line(text, f"{name}:{number}", mtime))
        except ValueError as exc:
            raise BadInput(f"{name}:{number}: {exc}") from None
    return Incoming(learnings=learnings)


def _line(text: str, ref: str, mtime: float) -> list[LearningIn]:
    data = json_object(text, "a JSON object (an entity or a relation)")
    kind = data.get("type")
    if kind == "entity":
        entity = _name(data, "name")
        entity_type = data.get("entityType", "")
        if not isinstance(entity_type, str):
            raise ValueError("entityType must be a string")
        observations = data.get("observations", [])
        if not isinstance(observations, list) or not all(isinstance(o, str) for o in observations):
            raise ValueError("observations must be a list of strings")
        preference = entity_type.strip().lower() == "preference"
        out = []
        for observation in observations:
            content = _clean(f"{entity}: {observation.strip()}")
            if content and observation.strip():
                kind_ = "preference" if preference or _PREFERS.search(observation) else "fact"
                out.append(LearningIn(type=kind_, content=content, created_at=mtime, ref=ref))
        return out
    if kind == "relation":
        relation = _name(data, "relationType").replace("_", " ")
        content = _clean(f"{_name(data, 'from')} {relation} {_name(data, 'to')}")
        kind_ = "preference" if _PREFERS.search(relation) else "fact"
        return [LearningIn(type=kind_, content=content, created_at=mtime, ref=ref)]
    raise ValueError(f"type {kind!r:.40} is neither entity nor relation (not a memory.jsonl line?)")


def _name(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{key} must be a non-empty string")
    return " ".join(value.split())


def _clean(text: str) -> str:
    return clean_text(" ".join(text.split()), MAX_CHARS).strip()
