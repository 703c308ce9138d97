"""``wsd memory why|blame``: a person questions their agent's memory.

* ``wsd memory blame FILE [--json]``: each line of the curated file (its latest revision,
  what the daemon wrote) with the revision that introduced it, its source and date.
* ``wsd memory why FILE:N [--json]``: that line's revision (a curator batch, a hand edit, a
  restore) and date; for a curator line the turns it most likely came from, each with its
  date and the person's words; for a restored line also where it first came from.
* ``wsd memory why TEXT [--json]``: the same for every line of the curated files holding
  TEXT, and every learning matching its words, with the turns each came from.

Turns are named as ``search_memory`` names them (``T<n>``: the agent can open them). Exit
codes: 0 answered; 1 nothing to answer (no such line, nothing matches, no revisions, or
the turns behind a line are gone from memory: what is known is still printed); 2 bad usage
(a file that is not curated, a line that is not a number).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from wsd.daemon.memory.lineage import Blamed, blame, likely_turns
from wsd.daemon.memory.md import files as md_files
from wsd.daemon.runtime.dates import iso_time
from wsd.daemon.store import BatchTrace, LearningTrace, Revision, SourceTurn, Store, Turn
from wsd.schema.layout import CURATED_FILES

#: The person's words shown of a turn.
WORDS_SHOWN = 200
#: Lines of the curated files ``why WORDS`` explains (the rest are counted: a person narrows
#: the words, or asks about one line).
LINES_EXPLAINED = 20
_LINE_TARGET = re.compile(r"(?P<file>[\w.-]+?)(?P<md>\.md)?:(?P<line>.*)")


class Usage(Exception):
    """A target ``why`` cannot take (exit 2)."""


def add_verbs(verbs: Any, file_type: Any) -> None:
    """``why`` and ``blame`` on the ``wsd memory`` parser."""
    why = verbs.add_parser(
        "why", help="where a line (FILE:N) or every line and learning matching TEXT came from"
    )
    why.add_argument("target", help="user.md:5 (a line), or words to look for ('tea')")
    why.add_argument("--json", action="store_true", help="machine-readable output")
    blame_p = verbs.add_parser("blame", help="each line of FILE with the revision that added it")
    blame_p.add_argument("file", type=file_type, help="user.md, context.md, tools.md or files.md")
    blame_p.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace, store: Store) -> int:
    """``wsd memory why|blame`` (memory.db checked ready by the caller)."""
    if args.verb == "blame":
        return _blame(store, args.file, args.json)
    try:
        target = _line_target(args.target)
    except Usage as exc:
        print(f"wsd memory why: {exc}", file=sys.stderr)
        return 2
    if target is None:
        return _why_text(store, args.target, args.json)
    return _why_line(store, target[0], target[1], args.json)


def _line_target(text: str) -> tuple[str, int] | None:
    """(file, line) of ``user.md:5``; None for words to look for; Usage for a file:line
    that cannot be asked (not a curated file, not a line number)."""
    match = _LINE_TARGET.fullmatch(text.strip())
    if match is None or " " in match.group("file"):
        return None
    name = match.group("file") + ".md"
    line = match.group("line").strip()
    if name not in CURATED_FILES:
        if match.group("md"):
            curated = ", ".join(CURATED_FILES)
            raise Usage(f"{name[:40]} is not a curated file (why answers for {curated})")
        return None
    if not re.fullmatch(r"[0-9]{1,9}", line) or int(line) < 1:
        raise Usage(f"{line[:20]!r} is not a line number (user.md:5 asks about line 5)")
    return name, int(line)


# -- blame -------------------------------------------------------------------------------------


def _unadopted(store: Store, name: str, latest: Revision) -> None:
    """Say so when the file on disk is not its latest revision (a hand edit the daemon has
    not adopted yet: it was stopped): the lines are numbered as in the revision."""
    disk = md_files.read_text(store.layout.md(name))
    if disk is not None and md_files.canonical(name, disk) != latest.content:
        print(
            f"note: {name} on disk differs from its latest revision #{latest.id} (a hand edit"
            f" the daemon has not adopted yet); lines are numbered as in #{latest.id}",
            file=sys.stderr,
        )


def _latest(store: Store, name: str, verb: str) -> tuple[list[Revision], list[Blamed]] | None:
    """The file's revisions and its latest one's lines blamed; None (said) when it has none."""
    revisions = store.revisions.md_history(name)
    if not revisions:
        print(f"wsd memory {verb}: {name} has no revisions yet", file=sys.stderr)
        return None
    _unadopted(store, name, revisions[-1])
    return revisions, blame(revisions)


def _blame(store: Store, name: str, as_json: bool) -> int:
    found = _latest(store, name, "blame")
    if found is None:
        return 1
    lines = found[1]
    if as_json:
        print(json.dumps([_blamed_json(b) for b in lines], indent=1, ensure_ascii=False))
        return 0
    width = len(str(len(lines)))
    for b in lines:
        print(f"{_origin_short(b.origin)}  {b.number:>{width}}| {b.text}")
    return 0


def _origin_short(rev: Revision) -> str:
    source = f"curator b{rev.batch_id}" if rev.batch_id else rev.source
    return f"#{rev.id:<5} {source:<14} {iso_time(rev.created_at)[:16]}"


def _blamed_json(b: Blamed) -> dict[str, Any]:
    return {"line": b.number, "text": b.text, **_revision_json(b.origin)}


def _revision_json(rev: Revision) -> dict[str, Any]:
    return {
        "revision": rev.id,
        "source": rev.source,
        "batch_id": rev.batch_id,
        "created_at": iso_time(rev.created_at),
    }


# -- why ---------------------------------------------------------------------------------------


def _why_line(store: Store, name: str, number: int, as_json: bool) -> int:
    latest = _latest(store, name, "why")
    if latest is None:
        return 1
    revisions, lines = latest
    if number > len(lines):
        print(
            f"wsd memory why: {name} has {len(lines)} lines (its latest revision,"
            f" #{revisions[-1].id}): no line {number}",
            file=sys.stderr,
        )
        return 1
    found = _Tracer(store).explain(name, lines[number - 1], revisions)
    _say([found], [], as_json)
    return 0 if found["traced"] else 1


def _why_text(store: Store, text: str, as_json: bool) -> int:
    needle = text.strip().casefold()
    if not needle:
        print("wsd memory why: give a line (user.md:5) or words to look for", file=sys.stderr)
        return 2
    found: list[dict[str, Any]] = []
    more = 0
    tracer = _Tracer(store)
    for name in CURATED_FILES:
        revisions = store.revisions.md_history(name)
        for b in blame(revisions):
            if needle not in b.text.casefold():
                continue
            if len(found) < LINES_EXPLAINED:
                found.append(tracer.explain(name, b, revisions))
            else:
                more += 1
    learnings = store.lineage.learnings_matching(text)
    if not found and not learnings:
        shown = text if len(text) <= 60 else text[:59] + "…"
        print(
            f"wsd memory why: no line of the curated files and no learning matches {shown!r}",
            file=sys.stderr,
        )
        return 1
    _say(found, [_learning_json(x) for x in learnings], as_json, more)
    return 0


class _Tracer:
    """Explains lines for one command, reading each curator batch and blaming each earlier
    history (behind a restore) once, however many lines share them."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.batches: dict[int, BatchTrace | None] = {}
        self.earlier: dict[tuple[str, int], dict[str, Revision]] = {}

    def explain(self, name: str, b: Blamed, revisions: list[Revision]) -> dict[str, Any]:
        """A line's origin as a dict (printed by :func:`_say` or as JSON)."""
        out: dict[str, Any] = {"file": name, "line": b.number, "text": b.text}
        out |= _revision_json(b.origin)
        out["traced"] = True
        origin = b.origin
        if origin.source == "restore":
            first = self._first_came(name, b.text, revisions, origin.id)
            if first is not None:
                out["first_came"] = _revision_json(first)
                origin = first
        if origin.source != "curator" or origin.batch_id is None:
            return out
        if origin.batch_id not in self.batches:
            self.batches[origin.batch_id] = self.store.lineage.batch(origin.batch_id)
        batch = self.batches[origin.batch_id]
        if batch is None:
            out["turns"], out["traced"] = [], False
            out["gone"] = f"batch {origin.batch_id} is no longer in the ledger"
            return out
        turns, cited = likely_turns(b.text, batch)
        out["cited"] = cited
        out["turns"] = [_turn_json(t) for t in turns]
        if turns and all(t.turn_id is None for t in turns):
            out["traced"] = False
            out["gone"] = f"the turns of batch {origin.batch_id} are no longer in memory"
        return out

    def _first_came(
        self, name: str, text: str, revisions: list[Revision], restore_id: int
    ) -> Revision | None:
        """Where a restored line first came from: its origin in the history up to the last
        revision before the restore that held it (None: none held it)."""
        earlier = [r for r in revisions if r.id < restore_id]
        holding = [i for i, r in enumerate(earlier) if text in r.content.splitlines()]
        if not holding:
            return None
        key = (name, earlier[holding[-1]].id)
        if key not in self.earlier:
            self.earlier[key] = {
                x.text: x.origin for x in reversed(blame(earlier[: holding[-1] + 1]))
            }
        return self.earlier[key][text]


def _turn_json(t: SourceTurn) -> dict[str, Any]:
    return {
        "turn": None if t.turn_id is None else f"T{t.turn_id}",
        "observation_id": t.observation_id,
        "created_at": None if t.created_at is None else iso_time(t.created_at),
        "cited": t.cited,
        "said": _clip(" ".join(t.prompt.split()), WORDS_SHOWN),
    }


def _found_in(x: LearningTrace) -> dict[str, float] | None:
    """How much of the learning each part of its turns holds (issue 32): the person's
    prompt, the agent's answer, the tools (what the index keeps of them); None when none of
    its turns is in the index (imported, or gone)."""
    from wsd.daemon.curation.judging.grounding import Grounds, unmarked

    turns = [
        Turn(i, "", 0, 0.0, t.prompt, [{"output": t.tools}] if t.tools else [], t.response, "")
        for i, t in enumerate(x.sources, 1)
        if t.turn_id is not None
    ]
    if not turns:
        return None
    cited = [i for i, t in enumerate(x.sources, 1) if t.cited and t.turn_id is not None]
    support = Grounds(turns, shown=False).support(unmarked(x.content), cited)
    return {p: round(support.of(p), 2) for p in ("person", "agent", "tool")}


def _learning_json(x: LearningTrace) -> dict[str, Any]:
    return {
        "learning": f"L{x.id}",
        "type": x.type,
        "content": x.content,
        "created_at": iso_time(x.created_at),
        "batch_id": x.batch_id,
        "superseded_by": None if x.superseded_by is None else f"L{x.superseded_by}",
        "ref": x.ref,
        "turns": [_turn_json(t) for t in x.sources[:5]],
        "more_turns": max(0, len(x.sources) - 5),
        "found_in": _found_in(x),
    }


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _say(
    lines: list[dict[str, Any]], learnings: list[dict[str, Any]], as_json: bool, more: int = 0
) -> None:
    if as_json:
        out = {"lines": lines, "more_lines": more, "learnings": learnings}
        print(json.dumps(out, indent=1, ensure_ascii=False))
        return
    for x in lines:
        print(f"{x['file']}:{x['line']}  {x['text']}")
        print(f"  {_came(x)}")
        if "first_came" in x:
            print(f"  first came with {_came(x['first_came'])}")
        if x.get("gone"):
            print(f"  ({x['gone']})")
        if x.get("turns"):
            how = "cited by its batch's learnings" if x.get("cited") else "its batch's turns"
            print(f"  most likely from ({how}):")
            for t in x["turns"]:
                _say_turn(t, "    ")
    if more:
        print(f"... and {more} more matching lines (narrow the words, or ask FILE:N)")
    for x in learnings:
        replaced = f" · superseded by {x['superseded_by']}" if x["superseded_by"] else ""
        how = f"batch {x['batch_id']}" if x["batch_id"] else "imported"
        print(f"{x['learning']} {x['type']} · {x['created_at'][:16]} · {how}{replaced}")
        print(f"  {x['content']}")
        if x["found_in"] is not None:
            print(f"  {_words_found(x['found_in'])}")
        for t in x["turns"]:
            _say_turn(t, "  from ")
        if x["more_turns"]:
            print(f"  ... and {x['more_turns']} more turns of its batch")


#: How ``wsd memory why`` names each part of a turn.
PART_NAMES = {"person": "the person's words", "agent": "the agent's answer", "tool": "tool results"}


def _words_found(found: dict[str, float]) -> str:
    """``its words: the person's words 100 %, tool results 20 %, the agent's answer 0 %``."""
    parts = sorted(found, key=lambda p: -found[p])
    return "its words are in: " + ", ".join(f"{PART_NAMES[p]} {found[p]:.0%}" for p in parts)


def _came(x: dict[str, Any]) -> str:
    source = {
        "curator": f"the curator (batch {x['batch_id']})",
        "hand": "a hand edit (adopted by the daemon)",
        "restore": "wsd memory restore",
    }.get(x["source"], str(x["source"]))
    return f"revision #{x['revision']}, {x['created_at'][:16]}, by {source}"


def _say_turn(t: dict[str, Any], indent: str) -> None:
    name = t["turn"] or f"turn {t['observation_id']} (no longer in memory)"
    when = (t["created_at"] or "")[:16]
    said = f': "{t["said"]}"' if t["said"] else ""
    print(f"{indent}{name} {when}{' (cited)' if t['cited'] else ''}{said}")
