"""Invariants of the memory files: each equals its latest revision within its limits, every
hand edit was adopted, and no curator batch took more than its allowance from a file."""

from __future__ import annotations

from soak.faults import Record
from soak.invariants.check import Check, query
from soak.world import World
from wsd.daemon.memory.md.files import LINE_LIMITS, canonical, read_text
from wsd.daemon.memory.md.files_md import NOTES_LINE_LIMIT
from wsd.daemon.runtime.config import DEFAULT_FILE_CHARS
from wsd.schema.layout import CURATED_FILES


def md_files(world: World, record: Record) -> Check:
    layout = world.layout
    latest = {
        str(f): str(c)
        for f, c in query(
            layout.memory_db,
            "SELECT file, content FROM md_revisions WHERE id IN"
            " (SELECT max(id) FROM md_revisions GROUP BY file)",
        )
    }
    problems = []
    for name in CURATED_FILES:
        disk = read_text(layout.md(name))
        if name not in latest:
            continue
        if disk is None or canonical(name, disk) != canonical(name, latest[name]):
            problems.append(f"{name} differs from its latest revision")
        text = canonical(name, latest[name])
        limit = NOTES_LINE_LIMIT if name == "files.md" else LINE_LIMITS[name]
        if len(text.splitlines()) > limit or len(text) > DEFAULT_FILE_CHARS:
            problems.append(f"{name} over its limits")
    hand = [
        str(c)
        for (c,) in query(
            layout.memory_db, "SELECT content FROM md_revisions WHERE source = 'hand'"
        )
    ]
    hand += record.hand_revisions_deleted  # adopted, then deleted with memory.db by the soak
    for line in record.hand_edits:
        if not any(line in c for c in hand):
            problems.append(f"hand edit never adopted: {line[:40]}")
    return Check(
        "md files equal their latest revisions, within limits; hand edits adopted",
        not problems,
        f"{len(latest)} files, {len(record.hand_edits)} hand edits; {problems[:3]}",
    )


def loss(memory_db: str) -> Check:
    """No curator batch took more than its allowance from a file, in any reply form: the
    lines no line of its revision says any more, against the revision before it, are at most
    a quarter (one at least) of the lines that said something (issue 20's replace-every-line
    fault, careless rewrites, truncated replies)."""
    from wsd.daemon.curation.judging.edits import Limits, lost_lines, plain

    rows = query(memory_db, "SELECT file, source, content FROM md_revisions ORDER BY file, id")
    over, batches = [], 0
    previous: dict[str, str] = {}
    for name, source, content in rows:
        before = previous.get(name)
        previous[name] = content
        if source != "curator" or before is None:
            continue
        batches += 1
        lines = before.splitlines()
        allowance = Limits(0, 0).allowance(sum(1 for line in lines if plain(line)))
        lost = lost_lines(lines, content.splitlines())
        if lost > allowance:
            over.append(f"{name}: lost {lost} of {len(lines)} (allowed {allowance})")
    return Check(
        "no curator batch took more than a quarter of a file, in any reply form",
        not over,
        f"{batches} curator revisions checked; {over[:3]}",
    )
