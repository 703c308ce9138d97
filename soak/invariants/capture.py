"""Invariants of capture: every event a writer sent is recorded (or set aside as rejected),
and every turn is assembled exactly as it was sent."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from soak.invariants.check import Check, query


def _events_text(db: str) -> str:
    return "\n".join(str(p) for (p,) in query(db, "SELECT payload FROM events"))


def nothing_lost(db: str, spool: str, turns: list[dict[str, Any]]) -> Check:
    recorded = _events_text(db)
    rejected = Path(spool).with_name("spool.rejected.jsonl")
    rejected_text = rejected.read_text(errors="replace") if rejected.exists() else ""
    marks = [f"{t['mark']}P" for t in turns] + [f"{t['mark']}A" for t in turns]
    marks += [c for t in turns for c in t["calls"]]
    lost = [m for m in marks if m not in recorded and m not in rejected_text]
    in_rejected = sum(m in rejected_text for m in marks)
    return Check(
        "every event sent is in transcript.db or the rejected spool",
        not lost,
        f"{len(marks)} events checked, {in_rejected} rejected, {len(lost)} lost {lost[:5]}",
    )


def assembled(db: str, turns: list[dict[str, Any]]) -> Check:
    """Each turn sent is one observation (plus the addenda that amend it, for events that
    came late to a turn already curated) with its prompt, its tool calls in order (calls
    that came late as addenda in any order) and its answer."""
    rows = query(
        db, "SELECT id, user_message, tool_calls_json, agent_response, amends FROM observations"
    )
    groups: dict[int, list[tuple[Any, ...]]] = {}
    for row in rows:
        groups.setdefault(int(row[4]) if row[4] is not None else int(row[0]), []).append(row)
    by_prompt: dict[str, list[int]] = {}
    for base, members in groups.items():
        user = " ".join(str(m[1] or "") for m in members)
        for mark in re.findall(r"(W\d+S\d+T\d+)P", user):
            by_prompt.setdefault(mark, []).append(base)
    wrong, via_addenda = [], 0
    for turn in turns:
        bases = by_prompt.get(turn["mark"], [])
        if len(bases) != 1:
            wrong.append(f"{turn['mark']}: in {len(bases)} turns")
            continue
        members = sorted(groups[bases[0]], key=lambda m: int(m[0]))
        via_addenda += len(members) > 1
        calls = [c for m in members for c in json.loads(m[2] or "[]")]
        seen = [x for c in calls for x in re.findall(r"W\d+S\d+T\d+C\d+", json.dumps(c))[:1]]
        in_order = seen == turn["calls"] or (
            len(members) > 1 and sorted(seen) == sorted(turn["calls"])
        )
        answers = " ".join(str(m[3] or "") for m in members)
        prompts = " ".join(str(m[1] or "") for m in members)
        if not in_order:
            wrong.append(f"{turn['mark']}: tools {seen} != {turn['calls']}")
        elif f"{turn['mark']}A" not in answers:
            wrong.append(f"{turn['mark']}: answer missing")
        elif len(re.findall(r"W\d+S\d+T\d+P", prompts)) != 1:
            wrong.append(f"{turn['mark']}: prompt shares its turn")
    return Check(
        "every turn assembled exactly as sent (prompt, tools in order, answer)",
        not wrong,
        f"{len(turns)} turns ({via_addenda} completed by addenda), {len(wrong)} wrong {wrong[:3]}",
    )
