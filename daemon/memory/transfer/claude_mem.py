"""claude-mem's database (``~/.claude-mem/claude-mem.db``), read-only.

What each row becomes (its date kept: ``created_at_epoch``, milliseconds):

* an observation, one learning: "<project>: <title>. <narrative> Facts: a; b." (the facts
  are claude-mem's atomic statements; an observation made before titles existed gives its
  ``text``). Its type: a ``bugfix`` is a ``correction`` (what was wrong and what is right), a
  ``decision`` a ``pattern`` (how things are done here), every other type (discovery,
  feature, refactor, change, a mode's own) a ``fact``;
* a session summary, one fact: "<project> session: asked: …; learned: …; completed: …;
  next: …" (investigated and notes are the session's working, not what it taught).

``ref`` names the row (``claude-mem.db:observations/7``). A row whose lists are not JSON
lists, or whose text or date is not what claude-mem writes, is an error naming the row:
nothing of the database is imported then.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from wsd.daemon.memory.transfer import parallel
from wsd.daemon.memory.transfer.inputs import MAX_EPOCH, BadInput, epoch
from wsd.daemon.store import ForeignError, Incoming, LearningIn, claude_mem_rows
from wsd.redact import clean_text

MAX_CHARS = 4000
TYPES = {"bugfix": "correction", "decision": "pattern"}
SUMMARY_PARTS = (("request", "asked"), ("learned", "learned"), ("completed", "completed"),
                 ("next_steps", "next"))  # fmt: skip


def read(path: str) -> Incoming:
    """The observations and summaries as learnings; :class:`BadInput` naming the file (and
    the row) when it cannot be read whole."""
    name = os.path.basename(path)
    out = Incoming()
    parse = functools.partial(parse_rows, name)
    out.learnings = _said(
        name, parallel.stream(parse, parallel.chunks(claude_mem_rows(path), _row_bytes), out)
    )
    return out


def _row_bytes(item: tuple[str, dict[str, Any]]) -> int:
    """A row's weight in a chunk (its text)."""
    return sum(len(v) for v in item[1].values() if isinstance(v, str | bytes))


def _said(name: str, learnings: Iterator[LearningIn]) -> Iterator[LearningIn]:
    try:
        yield from learnings
    except ForeignError as exc:
        raise BadInput(f"{name}: {exc}") from None


def parse_rows(name: str, rows: list[tuple[str, dict[str, Any]]]) -> Incoming:
    """Some rows of database ``name`` as learnings (a worker's share)."""
    learnings = []
    for table, row in rows:
        ref = f"{name}:{table}/{row.get('id')}"
        try:
            learning = _observation(row, ref) if table == "observations" else _summary(row, ref)
        except ValueError as exc:
            raise BadInput(f"{ref}: {exc}") from None
        if learning is not None:
            learnings.append(learning)
    return Incoming(learnings=learnings)


def _observation(row: dict[str, Any], ref: str) -> LearningIn | None:
    title, narrative = _str(row, "title"), _str(row, "narrative")
    facts = _list(row, "facts")
    parts = [p.rstrip(".") + "." for p in (title, narrative) if p]
    if facts:
        parts.append("Facts: " + "; ".join(facts) + ".")
    if not parts:
        legacy = _str(row, "text")
        if not legacy:
            return None  # nothing said: nothing to keep
        parts = [legacy]
    kind = _str(row, "type").lower()
    return _learning(TYPES.get(kind, "fact"), row, " ".join(parts), ref)


def _summary(row: dict[str, Any], ref: str) -> LearningIn | None:
    said = [
        f"{label}: {_str(row, key).rstrip('.')}" for key, label in SUMMARY_PARTS if _str(row, key)
    ]
    if not said:
        return None
    return _learning("fact", row, "session: " + "; ".join(said) + ".", ref)


def _learning(kind: str, row: dict[str, Any], text: str, ref: str) -> LearningIn:
    project = _str(row, "project")
    text = f"{project}: {text}" if project else text
    content = clean_text(" ".join(text.split()), MAX_CHARS).strip()
    if not content:
        raise ValueError("holds nothing once cleaned")
    return LearningIn(type=kind, content=content, created_at=_when(row), ref=ref)


def _str(row: dict[str, Any], key: str) -> str:
    value = row.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{key} is {type(value).__name__}, not text")
    return " ".join(value.split())


def _list(row: dict[str, Any], key: str) -> list[str]:
    raw = row.get(key)
    if raw is None or raw == "":
        return []
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{key} is not a JSON list of strings")
    return [" ".join(v.split()) for v in value if v.strip()]


def _when(row: dict[str, Any]) -> float:
    """``created_at_epoch`` (milliseconds, or seconds from older versions), else the ISO
    ``created_at``; a time from 1970 to 5138 or ValueError (an infinite or huge epoch was
    taken as the import's time before)."""
    stamp = row.get("created_at_epoch")
    if isinstance(stamp, int | float) and not isinstance(stamp, bool) and stamp > 0:
        try:
            return epoch(float(stamp) / 1000 if stamp >= MAX_EPOCH else float(stamp), "")
        except ValueError:
            raise ValueError(
                f"created_at_epoch {stamp!r:.24} is not a date from 1970 to 5138"
            ) from None
    text = row.get("created_at")
    if isinstance(text, str):
        try:
            when = datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
        except (ValueError, OverflowError):
            pass
        else:
            return epoch(when, "created_at")
    raise ValueError("created_at is not a date")
