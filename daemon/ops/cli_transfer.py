"""``wsd import`` and ``wsd export``: memory that moves (see :mod:`wsd.daemon.memory.transfer`).

* ``wsd import PATH [--from auto|wsd|mcp-memory|claude-code|claude-mem] [--dry-run] [--json]``:
  all of a file or none of it (a bad line or row: its number said, exit 2, nothing added);
  a folder's files one by one, each one skipped said with why (exit 1 when any was). ``-``
  reads our JSON lines from standard input. A file over 1 MiB pauses a running daemon while
  it writes (``--wait`` seconds for it to pause, as ``wsd forget``).
* ``wsd export DEST --format jsonl|markdown [--history]``: a consistent snapshot, files 0600,
  never over anything (``-``: jsonl to standard output).

Exit codes: 0 done; 1 done but a folder's file was skipped, or a memory file could not be
written yet; 2 nothing done (the input or the destination is refused, with why).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Mapping
from typing import Any

from wsd.daemon.ops import arguments

IMPORT_FORMATS = ("auto", "wsd", "mcp-memory", "claude-code", "claude-mem")


def register(subparsers: Any) -> None:
    imp = subparsers.add_parser(
        "import",
        help="import memory: our export, memory.jsonl, Claude Code's memory, claude-mem's db",
    )
    imp.add_argument("path", metavar="PATH", help="a file or folder (- : our JSON lines on stdin)")
    imp.add_argument(
        "--from",
        dest="source_format",
        choices=IMPORT_FORMATS,
        default="auto",
        help="the format (default: recognised from the file)",
    )
    imp.add_argument(
        "--dry-run", action="store_true", help="say what would be added; change nothing"
    )
    imp.add_argument("--json", action="store_true", help="machine-readable output")
    arguments.add_wait(
        imp, 120.0, "a large import: how long to wait for a running daemon to pause (default 120)"
    )
    exp = subparsers.add_parser("export", help="export the memory (jsonl: lossless; markdown)")
    exp.add_argument("dest", metavar="DEST", help="a new file (jsonl; - for stdout) or folder")
    exp.add_argument("--format", choices=("jsonl", "markdown"), default="jsonl")
    exp.add_argument("--history", action="store_true", help="jsonl: every md revision too")


def cmd_import(args: argparse.Namespace, env: Mapping[str, str], layout: Any) -> int:
    """``wsd import PATH`` (see the module)."""
    from wsd.daemon.memory.transfer import importer
    from wsd.daemon.memory.transfer.inputs import BadInput
    from wsd.daemon.runtime import pause
    from wsd.daemon.store import Store

    store = Store(layout)
    store.migrate()
    path = args.path

    def say(line: str) -> None:
        if not args.json:
            print(line, file=sys.stderr, flush=True)

    # A large import holds memory.db's write lock for seconds: the daemon is paused for it
    # (it finishes the batch in hand), as for wsd forget, so that no reply of its is lost.
    paused = (
        pause.paused(layout, "import", args.wait, say)
        if importer.needs_pause(path)
        else contextlib.nullcontext()
    )
    try:
        with paused:
            done = importer.run(
                layout,
                store,
                path,
                args.source_format,
                dry_run=args.dry_run,
                stdin=sys.stdin.buffer,
            )
    except pause.PauseRefused as exc:
        print(f"wsd import: {exc}; nothing was imported", file=sys.stderr)
        return 2
    except BadInput as exc:
        print(f"wsd import: {exc}; nothing was imported", file=sys.stderr)
        return 2
    a = done.added
    if args.json:
        print(json.dumps(_as_json(done), ensure_ascii=False, indent=1))
    else:
        for rel, why in done.skipped:
            print(f"{args.path}: skipped {rel}: {why}", file=sys.stderr)
        if a.unknown_turns:
            unknown = ", ".join(f"T{n}" for n in a.unknown_turns[:10])
            more = len(a.unknown_turns) - 10
            unknown += f" and {more} more" if more > 0 else ""
            print(f"{args.path}: turns not in memory, not linked: {unknown}", file=sys.stderr)
        verb = "would import" if args.dry_run else "imported"
        print(
            f"{verb} {a.learnings} learning(s) from {done.format} ({args.path}),"
            f" {a.duplicates} duplicate(s) skipped"
            + (f", {a.retracted} retracted before" if a.retracted else "")
            + (f", {a.forgotten} holding forgotten words" if a.forgotten else "")
        )
        if a.actions or a.action_duplicates:
            print(f"  actions: {a.actions} added, {a.action_duplicates} already there")
        for name, n in sorted(a.md_lines.items()):
            print(f"  {name}: {n} line(s) added")
        if a.revisions:
            print(f"  md history: {a.revisions} revision(s)")
        if a.renumbered:
            print(
                f"  ids: {a.renumbered} learning(s) or action(s) given new ids (theirs name"
                " other memory here); every other keeps the id it had"
            )
        for sample in a.samples if args.dry_run else []:
            print(f"    {sample}")
        for name, why in done.not_written.items():
            print(
                f"wsd import: {name} not written yet ({why}); the daemon writes it", file=sys.stderr
            )
    return 1 if done.skipped or done.not_written else 0


def _as_json(done: Any) -> dict[str, Any]:
    a = done.added
    return {
        "path": done.path,
        "format": done.format,
        "dry_run": done.dry_run,
        "learnings": a.learnings,
        "duplicates": a.duplicates,
        "retracted": a.retracted,
        "forgotten": a.forgotten,
        "actions": a.actions,
        "action_duplicates": a.action_duplicates,
        "md_lines": a.md_lines,
        "revisions": a.revisions,
        "renumbered": a.renumbered,
        "unknown_turns": a.unknown_turns,
        "samples": a.samples,
        "skipped": [{"file": f, "why": w} for f, w in done.skipped],
        "not_written": done.not_written,
    }


def cmd_export(args: argparse.Namespace, env: Mapping[str, str], layout: Any) -> int:
    """``wsd export DEST`` (see the module)."""
    from wsd.daemon.memory.transfer import exporter
    from wsd.daemon.store import Store

    store = Store(layout)
    if not store.ready():
        print(f"wsd export: no memory at {layout.memory_dir} (nothing to export)", file=sys.stderr)
        return 2
    try:
        done = exporter.run(store, args.dest, args.format, history=args.history)
    except exporter.ExportRefused as exc:
        print(f"wsd export: {exc}; nothing was written", file=sys.stderr)
        return 2
    if args.dest != "-":
        what = f"{done.learnings} learning(s), {done.actions} action(s), {done.files} md file(s)"
        if done.revisions:
            what += f", {done.revisions} revision(s)"
        print(f"exported {what} to {args.dest} ({args.format})")
        if done.note:
            print(f"note: {done.note}", file=sys.stderr)
    return 0
