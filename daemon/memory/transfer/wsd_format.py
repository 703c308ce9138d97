"""Our own JSON lines: what ``wsd export --format jsonl`` writes and ``wsd import`` reads back.

One JSON object a line. The first says what the file is::

    {"kind": "wsd-export", "version": 1, "exported_at": 1780000000.0, "transcript": "<id>",
     "learnings": 1200, "retracted_not_exported": 3}

then, in this order:

* ``{"kind": "learning", "id", "type", "content", "created_at", "session_id", "confidence",
  "ref", "sources": [{"transcript", "turn", "cited"}], "superseded_by", "superseded_at"}``:
  every learning that is not retracted or forgotten (those are gone from memory.db), current
  or superseded; ``id`` is its id in the exporting workspace, which ``superseded_by`` and an
  action's ``learning`` name (an import keeps it where this workspace never gave it);
  ``sources`` are the turns it came from (a turn is its transcript's identity and its
  observation id there);
* ``{"kind": "action", "id", "content", "priority", "status", "source", "created_at",
  "updated_at", "dedup_key", "learning"}``: open and closed actions (``id``: its ``#n``);
* ``{"kind": "md", "file", "content"}``: each curated memory file as it is now (files.md: the
  notes a person or the curator wrote; its inventory is the workspace's own);
* with ``--history``, ``{"kind": "revision", "file", "content", "created_at", "source"}``:
  every revision, oldest first.

Dates are Unix seconds (floats, as stored: an export loses nothing). A line without ``kind``
is a learning in the older import format (``type``, ``content``, optional ``created_at``,
``session_id``, ``confidence``, ``ref``, ``turns``), which ``wsd import`` has always read.
"""

from __future__ import annotations

import functools
import json
import os
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any, TextIO

from wsd.daemon.memory.transfer import parallel
from wsd.daemon.memory.transfer.inputs import BadInput, epoch, json_object, json_value, lines
from wsd.daemon.runtime.dates import parse_since
from wsd.daemon.store import (
    LEARNING_TYPES,
    ActionIn,
    Incoming,
    LearningIn,
    RevisionIn,
    sources_of,
)
from wsd.redact import clean_text
from wsd.schema.layout import CURATED_FILES

KIND = "wsd-export"
VERSION = 1
#: An md file's text in an export: its limits (200 lines) keep it far below.
MD_MAX_CHARS = 200_000
ACTION_MAX_CHARS = 2_000
PRIORITIES = (0, 1, 2)
STATUSES = ("pending", "completed", "dismissed")


def header(exported_at: float, transcript: str | None, learnings: int, retracted: int) -> str:
    return json.dumps(
        {
            "kind": KIND,
            "version": VERSION,
            "exported_at": exported_at,
            "transcript": transcript,
            "learnings": learnings,
            "retracted_not_exported": retracted,
        }
    )


def learning_line(row: tuple[Any, ...]) -> str:
    """A ``learning`` line of a snapshot's learning row (see the store's snapshot)."""
    lid, kind, content, created, session, confidence, ref, by, at, sources = row
    return json.dumps(
        {
            "kind": "learning",
            "id": lid,
            "type": kind,
            "content": content,
            "created_at": created,
            "session_id": session,
            "confidence": confidence,
            "ref": ref,
            "sources": [
                {"transcript": t, "turn": o, "cited": c} for t, o, c in sources_of(sources)
            ],
            "superseded_by": by,
            "superseded_at": at,
        },
        ensure_ascii=False,
    )


def action_line(row: tuple[Any, ...]) -> str:
    content, priority, status, source, created, updated, key, learning, action_id = row
    return json.dumps(
        {
            "kind": "action",
            "id": action_id,
            "content": content,
            "priority": priority,
            "status": status,
            "source": source,
            "created_at": created,
            "updated_at": updated,
            "dedup_key": key,
            "learning": learning,
        },
        ensure_ascii=False,
    )


def md_line(name: str, content: str) -> str:
    return json.dumps({"kind": "md", "file": name, "content": content}, ensure_ascii=False)


def revision_line(row: tuple[Any, ...]) -> str:
    name, content, created, source = row
    return json.dumps(
        {"kind": "revision", "file": name, "content": content, "created_at": created,
         "source": source},
        ensure_ascii=False,
    )  # fmt: skip


def write(out: TextIO, lines_: Iterable[str]) -> int:
    """Write each line with its end; how many."""
    n = 0
    for line in lines_:
        out.write(line + "\n")
        n += 1
    return n


# -- reading ----------------------------------------------------------------------------------


def looks_like(first: dict[str, Any]) -> bool:
    """True if the first object of a JSON-lines file is ours (an export, or a learning line)."""
    kind = first.get("kind")
    if kind is None:
        return "content" in first and isinstance(first.get("type"), str)
    return kind in (KIND, "learning", "action", "md", "revision")


def read(path: str) -> Incoming:
    """An export (or older learnings lines) as records, parsed on every core while the
    store writes (see :mod:`.parallel`); :class:`BadInput` naming the first bad line
    (nothing is imported then)."""
    return read_lines(lines(path), os.path.basename(path))


def read_lines(numbered: Iterator[tuple[int, str]], name: str) -> Incoming:
    """:func:`read` of numbered lines (a file's, or standard input's)."""
    out = Incoming()
    parse = functools.partial(parse_lines, name)
    out.learnings = parallel.stream(parse, parallel.chunks(numbered, parallel.line_bytes), out)
    return out


def parse_lines(name: str, numbered: list[tuple[int, str]]) -> Incoming:
    """Some numbered lines of file ``name`` as records (a worker's share)."""
    out = Incoming(learnings=[])
    for number, text in numbered:
        if not text.strip():
            continue
        try:
            _line(text, out, number == 1)
        except ValueError as exc:
            raise BadInput(f"{name}:{number}: {exc}") from None
    return out


def _line(text: str, out: Incoming, first: bool) -> None:
    data = json_object(text)
    kind = data.get("kind")
    learnings = out.learnings
    assert isinstance(learnings, list)
    if kind is None:
        learnings.append(parse_import_line(data))
    elif kind == KIND:
        if not first:
            raise ValueError("a second export header (two exports joined?)")
        if data.get("version") != VERSION:
            raise ValueError(
                f"export version {data.get('version')!r:.20}: this wsd reads {VERSION}"
            )
    elif kind == "learning":
        learnings.append(_learning(data))
    elif kind == "action":
        out.actions.append(_action(data))
    elif kind == "md":
        name, content = _md(data)
        out.md[name] = content
    elif kind == "revision":
        name, content = _md(data)
        out.history.append(
            RevisionIn(name, content, _number(data, "created_at"), _text(data, "source", 40))
        )
    else:
        raise ValueError(f"kind {kind!r:.40} is not one of learning, action, md, revision")


def _learning(data: dict[str, Any]) -> LearningIn:
    base = parse_import_line(data)  # type, content, created_at, session, confidence, ref
    sources = data.get("sources") or []
    if not isinstance(sources, list) or len(sources) > 1000:
        raise ValueError("sources must be a list (of at most 1,000 turns)")
    parsed = []
    for s in sources:
        if not isinstance(s, dict):
            raise ValueError("each source must be an object {transcript, turn, cited}")
        parsed.append((_text(s, "transcript", 64), _whole(s, "turn"), bool(s.get("cited"))))
    by = data.get("superseded_by")
    return replace(
        base,
        key=_whole(data, "id"),
        superseded_by=None if by is None else _whole(data, "superseded_by"),
        superseded_at=None if data.get("superseded_at") is None
        else _number(data, "superseded_at"),
        sources=tuple(parsed),
    )  # fmt: skip


def _action(data: dict[str, Any]) -> ActionIn:
    priority = data.get("priority")
    if priority not in PRIORITIES or isinstance(priority, bool):
        raise ValueError(f"priority must be 0, 1 or 2 (got {priority!r:.20})")
    status = data.get("status")
    if status not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(STATUSES)} (got {status!r:.20})")
    content = clean_text(_text(data, "content", ACTION_MAX_CHARS * 4), ACTION_MAX_CHARS).strip()
    if not content:
        raise ValueError("content must be a non-empty string")
    learning = data.get("learning")
    return ActionIn(
        content=content,
        priority=int(priority),
        status=str(status),
        source=_text(data, "source", 40),
        created_at=_number(data, "created_at"),
        updated_at=_number(data, "updated_at"),
        dedup_key=_text(data, "dedup_key", 500),
        learning=None if learning is None else _whole(data, "learning"),
        key=None if data.get("id") is None else _whole(data, "id"),
    )


def _md(data: dict[str, Any]) -> tuple[str, str]:
    name = data.get("file")
    if name not in CURATED_FILES:
        raise ValueError(f"file must be one of {', '.join(CURATED_FILES)} (got {name!r:.40})")
    content = data.get("content")
    if not isinstance(content, str) or len(content) > MD_MAX_CHARS:
        raise ValueError(f"content of {name} must be a string of at most {MD_MAX_CHARS:,} chars")
    # A memory file's lines, each cleaned as captured text is (a secret pasted into a file).
    cleaned = "\n".join(clean_text(line, 2000) for line in content.split("\n"))
    return str(name), cleaned


def _text(data: dict[str, Any], key: str, limit: int) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value or len(value) > limit:
        raise ValueError(f"{key} must be a non-empty string of at most {limit} characters")
    return value


def _whole(data: dict[str, Any], key: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**62:
        raise ValueError(f"{key} must be a positive whole number (got {value!r:.20})")
    return value


def _number(data: dict[str, Any], key: str) -> float:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1e11:
        raise ValueError(f"{key} must be a Unix time in seconds (got {value!r:.20})")
    return float(value)


def export_lines(
    rows: Iterator[tuple[str, tuple[Any, ...]]], now: float, transcript: str | None
) -> Iterator[str]:
    """The lines of an export of a snapshot (see the store's ``snapshot``)."""
    for kind, row in rows:
        if kind == "snapshot":
            yield header(now, transcript, row[0], row[1])
        elif kind == "learning":
            yield learning_line(row)
        elif kind == "action":
            yield action_line(row)
        elif kind == "md":
            yield md_line(*row)
        elif kind == "revision":
            yield revision_line(row)


#: An imported learning may be longer than a curated one (1,000): it may be a whole note.
IMPORT_MAX_CHARS = 4000


#: Turns one imported learning may name as its sources.
IMPORT_MAX_TURNS = 100


def parse_import_line(raw: str | dict[str, Any]) -> LearningIn:
    """One JSON line (or the object it holds) as a learning to import; raises ValueError
    saying what is wrong."""
    data = json_value(raw) if isinstance(raw, str) else raw
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    kind = data.get("type")
    if kind not in LEARNING_TYPES:
        raise ValueError(f"type must be one of {', '.join(LEARNING_TYPES)} (got {kind!r:.40})")
    content = data.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ValueError("content must be a non-empty string")
    content = clean_text(content, IMPORT_MAX_CHARS).strip()
    if not content:  # it was all markup the capture hooks strip (a <workspace-memory> echo)
        raise ValueError("content holds nothing once cleaned")
    created = data.get("created_at")
    if created is None:
        created_at = time.time()
    elif isinstance(created, bool) or not isinstance(created, int | float | str):
        raise ValueError("created_at must be an epoch number or an ISO date/time")
    else:
        try:
            # NaN, an infinity, a negative or a huge number were stored as they were (or
            # failed the database's NOT NULL) before: a date is a time from 1970 to 5138.
            created_at = epoch(float(parse_since(created) or 0.0), "created_at")
        except (ValueError, OverflowError):
            raise ValueError(
                f"created_at {str(created)[:40]!r} is not a date from 1970 to 5138"
            ) from None
    session = data.get("session_id")
    if session is not None and not isinstance(session, str | int):
        raise ValueError("session_id must be a string")
    confidence = data.get("confidence", 1.0)
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not 0.0 <= float(confidence) <= 1.0
    ):
        raise ValueError("confidence must be a number from 0 to 1")
    ref = data.get("ref")
    if ref is not None and not isinstance(ref, str):
        ref = json.dumps(ref, ensure_ascii=False)  # a list of ids is a fine reference too
    turns = _import_turns(data.get("turns"))
    return LearningIn(
        type=kind,
        content=content,
        created_at=created_at,
        ref=None if ref is None else clean_text(ref, 1000),
        session_id=None if session is None else clean_text(str(session), 256),
        confidence=float(confidence),
        turns=turns,
    )


def _import_turns(value: Any) -> tuple[int, ...]:
    """An import line's ``turns``: the turns (``T12`` or 12, as search_memory names them) the
    learning came from; ValueError saying what is wrong."""
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > IMPORT_MAX_TURNS:
        raise ValueError(f"turns must be a list of at most {IMPORT_MAX_TURNS} turn ids")
    out = []
    for item in value:
        text = str(item) if isinstance(item, int) and not isinstance(item, bool) else item
        match = re.fullmatch(r"[Tt]?([0-9]{1,18})", text) if isinstance(text, str) else None
        if match is None or int(match.group(1)) < 1:
            raise ValueError(f"turns: {str(item)[:40]!r} is not a turn id (T12 or 12)")
        out.append(int(match.group(1)))
    return tuple(dict.fromkeys(out))
