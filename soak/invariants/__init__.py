"""What must hold at the end of a soak, whatever the faults did: each check with its count.

:func:`check_all` runs them in the order they are reported; each family is a module:
:mod:`.capture` (events recorded, turns assembled), :mod:`.curation` (each turn curated
once, no learning twice, Message Batches settled), :mod:`.memory_files` (files equal their
revisions, hand edits adopted, no erosion), :mod:`.disk` (no secret anywhere, integrity, no
temp files), :mod:`.cost` (the ledger's cost, every answer booked toward the cap) and
:mod:`.grounding` (no stranger's claim stored as the person's).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from soak.faults import Record
from soak.invariants import capture, cost, curation, disk, forgetting, grounding, memory_files
from soak.invariants.check import Check
from soak.world import World

__all__ = ["Check", "check_all"]


def _manifests(folder: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted(folder.glob("manifest-*.jsonl")):
        out += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return out


def check_all(
    world: World, record: Record, manifests: Path, rss_max_mb: float, status_lies: list[str]
) -> list[Check]:
    layout = world.layout
    sessions = _manifests(manifests)
    turns = [t for s in sessions for t in s["turns"]]
    world.bridge.batches.end_all()  # the drain ended them all; ``billed`` is final now
    batch_billed = world.bridge.batches.billed
    logged = _log_events(layout.os_dir)
    checks = [
        capture.nothing_lost(layout.transcript_db, layout.spool, turns),
        capture.assembled(layout.transcript_db, turns),
        curation.curated_once(layout.transcript_db, layout.memory_db),
        curation.learnings_once(layout.memory_db),
        memory_files.md_files(world, record),
        disk.no_secret(world, sessions),
        disk.integrity(layout.transcript_db, layout.memory_db, layout.root),
        Check("daemon RSS stayed under 120 MB", rss_max_mb < 120, f"max {rss_max_mb:.1f} MB"),
        cost.cost(world, batch_billed),
        cost.spend(world, batch_billed, logged),
        curation.batches_settled(world, batch_billed, logged),
        memory_files.loss(layout.memory_db),
        grounding.not_the_persons(layout),
        forgetting.never_found_again(world, record),
        Check(
            "a second wsd run refused at once",
            all(code not in (0, -999) for code in record.second_run_codes),
            f"exit codes {record.second_run_codes} (-998: it took over from a daemon killed"
            " just before it, its restarts refused)",
        ),
        Check(
            "wsd status and wsd doctor told the truth (sampled)",
            not status_lies,
            f"{len(status_lies)} mismatch(es)" + (f": {status_lies[:3]}" if status_lies else ""),
        ),
    ]
    return checks


def _log_events(os_dir: str) -> Counter[str]:
    """How often each event is in the daemon's JSON log (supervisord's wsd.log, rotated
    files included)."""
    seen: Counter[str] = Counter()
    for path in sorted(Path(os_dir, "logs").glob("wsd.log*")):
        for line in path.read_text(errors="replace").splitlines():
            try:
                event = json.loads(line).get("event")
            except (ValueError, AttributeError):
                continue  # a traceback line, a line cut by kill -9
            if isinstance(event, str):
                seen[event] += 1
    return seen
