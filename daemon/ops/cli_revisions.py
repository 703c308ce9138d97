"""``wsd memory history|diff|restore``: every version of a curated md file, for people.

* ``wsd memory history FILE [--json]``: each revision with its id, time, source (``curator``
  with its batch, ``hand`` for a person's edit the daemon adopted, ``restore``), size and
  the lines it added and removed;
* ``wsd memory diff FILE [REV [REV]]``: a unified diff: the latest against the one before,
  REV against the latest, or REV against REV;
* ``wsd memory restore FILE REV``: make REV the latest again, as a new revision (source
  ``restore``; nothing is deleted), and write the file. A running daemon keeps it.
* ``wsd memory why|blame``: where each line came from (:mod:`wsd.daemon.ops.cli_why`).

FILE is one of the four curated files (``user.md`` or ``user``). Exit codes: 0 done, 1 no
such revision, 2 bad usage.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import time
from collections.abc import Mapping
from typing import Any

from wsd.daemon.memory.md import files as md_files
from wsd.daemon.ops.arguments import whole
from wsd.daemon.runtime.dates import iso_time
from wsd.daemon.store import Revision, Store
from wsd.schema.layout import CURATED_FILES, Layout


def _file(value: str) -> str:
    name = value if value.endswith(".md") else f"{value}.md"
    if name not in CURATED_FILES:
        raise argparse.ArgumentTypeError(f"{value!r}: one of {', '.join(CURATED_FILES)}")
    return name


def _changes(before: str, after: str) -> tuple[int, int]:
    """(lines added, lines removed) from ``before`` to ``after``."""
    added = removed = 0
    for line in difflib.ndiff(before.splitlines(), after.splitlines()):
        added += line.startswith("+ ")
        removed += line.startswith("- ")
    return added, removed


def history_rows(revisions: list[Revision]) -> list[dict[str, Any]]:
    rows = []
    previous = ""
    for rev in revisions:
        added, removed = _changes(previous, rev.content)
        rows.append(
            {
                "id": rev.id,
                "created_at": iso_time(rev.created_at),
                "source": rev.source,
                "batch_id": rev.batch_id,
                "lines": len(rev.content.splitlines()),
                "bytes": len(rev.content.encode("utf-8")),
                "added": added,
                "removed": removed,
                # Lines a forget took out of this revision: counted, never shown (issue 44).
                "forgotten": rev.erased,
            }
        )
        previous = rev.content
    return rows


def cmd_memory(args: argparse.Namespace, env: Mapping[str, str], layout: Layout) -> int:
    """The ``wsd memory`` verbs (``layout`` resolved by the caller)."""
    from wsd.daemon.store import remedy

    store = Store(layout)
    why = store.maintenance.unready().get("memory")
    if why is not None:  # never create it here: the daemon does (or `wsd rebuild`)
        print(
            f"wsd memory: memory.db {why}: {remedy('memory', why, layout.memory_dir)}",
            file=sys.stderr,
        )
        return 1
    if args.verb == "conflicts":
        return _conflicts(args, layout)
    if args.verb in ("why", "blame"):
        from wsd.daemon.ops import cli_why

        return cli_why.run(args, store)
    revisions = store.revisions.md_history(args.file)
    by_id = {r.id: r for r in revisions}
    if args.verb == "history":
        rows = history_rows(revisions)
        if args.json:
            print(json.dumps(rows, indent=1))
        elif not rows:
            print(f"{args.file}: no revisions yet")
        for r in [] if args.json else rows:
            source = f"{r['source']} (batch {r['batch_id']})" if r["batch_id"] else r["source"]
            if r["source"] == "curator" and not r["batch_id"]:
                source = "curator (imported)"  # curated in the workspace it was exported from
            print(
                f"#{r['id']:<6} {r['created_at']}  {source:<20} {r['lines']:>4} lines"
                f" {r['bytes']:>6} bytes  +{r['added']} -{r['removed']}"
                + (f"  ({r['forgotten']} line(s) forgotten)" if r["forgotten"] else "")
            )
        return 0
    wanted: list[int] = list(args.revs)
    missing = [x for x in wanted if x not in by_id]
    if missing:
        print(f"wsd memory: {args.file} has no revision #{missing[0]}", file=sys.stderr)
        return 1
    if args.verb == "diff":
        return _diff(args.file, revisions, [by_id[x] for x in wanted])
    if len(wanted) != 1:
        print("wsd memory restore: give one revision id", file=sys.stderr)
        return 2
    rev = by_id[wanted[0]]
    new_id = store.revisions.add_revision(args.file, rev.content, "restore", time.time())
    failed = md_files.materialise_each(layout, {args.file: rev.content})[1]
    print(f"{args.file}: revision #{rev.id} restored as #{new_id}")
    if failed:  # the revision is the truth; the file follows it when it can be written
        print(
            f"wsd memory restore: {args.file} not written yet ({failed[args.file]}); the"
            " daemon writes it once it can",
            file=sys.stderr,
        )
        return 1
    return 0


def _conflicts(args: argparse.Namespace, layout: Layout) -> int:
    """``wsd memory conflicts [--adopt N]``: the hand edits made on a satellite on a version
    home had since changed (both kept, SPEC.md section 11), each beside the current file as a
    diff; ``--adopt N`` makes edit N the current version (on home: the person's memory is
    written there alone)."""
    reading = layout.reading()
    store = Store(reading)
    if args.adopt is not None:
        if reading is not layout:
            print(
                "wsd memory conflicts --adopt: run it on home (this satellite reads a copy of"
                " home's memory)",
                file=sys.stderr,
            )
            return 2
        done = store.machines.adopt_conflict(args.adopt, time.time())
        if done is None:
            print(f"wsd memory conflicts: no open conflict #{args.adopt}", file=sys.stderr)
            return 1
        name, content = done
        md_files.materialise_each(layout, {name: content})
        print(f"{name}: edit #{args.adopt} is the current version")
        return 0
    found = store.machines.conflicts()
    if not found:
        print("no conflicts: every hand edit made on another machine was adopted")
        return 0
    latest = store.revisions.latest_md()
    for pid, machine, name, content, at in found:
        print(f"#{pid} {name}, edited on {machine} at {iso_time(at)}:")
        sys.stdout.writelines(
            difflib.unified_diff(
                latest.get(name, "").splitlines(keepends=True),
                content.splitlines(keepends=True),
                fromfile=f"{name} (current)",
                tofile=f"{name} (edit #{pid} on {machine})",
            )
        )
    return 0


def _diff(name: str, revisions: list[Revision], chosen: list[Revision]) -> int:
    if len(chosen) > 2:
        print("wsd memory diff: at most two revisions", file=sys.stderr)
        return 2
    if not revisions:
        print(f"{name}: no revisions yet")
        return 0
    latest = revisions[-1]
    if not chosen:
        old = revisions[-2] if len(revisions) > 1 else None
        pair = (old, latest)
    elif len(chosen) == 1:
        pair = (chosen[0], latest)
    else:
        pair = (chosen[0], chosen[1])
    a, b = pair
    lines = difflib.unified_diff(
        (a.content if a else "").splitlines(keepends=True),
        b.content.splitlines(keepends=True) if b else [],
        fromfile=f"{name}@{a.id}" if a else f"{name}@empty",
        tofile=f"{name}@{b.id}" if b else f"{name}@empty",
    )
    sys.stdout.writelines(lines)
    return 0


def register(subparsers: Any) -> None:
    """Add ``wsd memory`` to the ``wsd`` parser."""
    from wsd.daemon.ops import cli_why

    memory = subparsers.add_parser(
        "memory", help="history, diff, restore, why and blame of the curated md files"
    )
    verbs = memory.add_subparsers(dest="verb", required=True)
    cli_why.add_verbs(verbs, _file)
    history = verbs.add_parser("history", help="every revision of FILE")
    history.add_argument("file", type=_file, help="user.md, context.md, tools.md or files.md")
    history.add_argument("--json", action="store_true", help="machine-readable output")
    diff = verbs.add_parser("diff", help="unified diff between revisions (default: last change)")
    diff.add_argument("file", type=_file)
    diff.add_argument(
        "revs", nargs="*", type=whole("a revision id"), metavar="REV", help="revision ids"
    )
    conflicts = verbs.add_parser(
        "conflicts", help="hand edits from another machine made on an older version"
    )
    conflicts.add_argument(
        "--adopt", type=whole("an edit id"), metavar="N", help="make edit N the current version"
    )
    restore = verbs.add_parser("restore", help="make a revision the latest again (a new one)")
    restore.add_argument("file", type=_file)
    restore.add_argument(
        "revs", nargs=1, type=whole("a revision id"), metavar="REV", help="the revision id"
    )
