"""``wsd import PATH``: read a source in one of the formats (see the package), then store all
of it in one transaction, or none of it.

A person's own unsaved edit of a memory file is adopted first (as the daemon would), so the
lines an import merges into the file are added to it, never written over it; the files that
changed are written to disk after the commit (a running daemon keeps them: they are its
latest revisions).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import BinaryIO

from wsd.daemon.memory.md import files as md_files
from wsd.daemon.memory.transfer import claude_code, claude_mem, mcp_memory, wsd_format
from wsd.daemon.memory.transfer.detect import FORMATS, detect
from wsd.daemon.memory.transfer.inputs import BadInput, Source, examine, stream_lines
from wsd.daemon.store import Added, Incoming, Store, TooLong
from wsd.schema.layout import Layout


@dataclass
class Imported:
    """What ``wsd import`` did (or, dry, would do)."""

    path: str
    format: str
    dry_run: bool
    added: Added = field(default_factory=Added)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    not_written: dict[str, str] = field(default_factory=dict)


#: A source larger than this holds memory.db's write lock for longer than the daemon waits
#: for it (5 s): its batch commit would fail and its reply be paid for again. The command
#: pauses the daemon for such an import (see ``wsd.daemon.ops.cli_transfer``). Measured:
#: 1 MiB of our lines is ~3,500 learnings, ~0.7 s of lock; 100,000 are 17 s.
PAUSE_BYTES = 1 << 20


def needs_pause(path: str) -> bool:
    """True if importing ``path`` holds the write lock long enough to pause the daemon
    (standard input, ``-``: its size is not known before it is read)."""
    if path == "-":
        return True
    try:
        source = examine(path)
    except BadInput:
        return False  # refused before it writes anything
    return not source.is_dir and source.size > PAUSE_BYTES


def read(
    source: Source, fmt: str, each_file: bool = False
) -> tuple[Incoming, list[tuple[str, str]]]:
    """The records of ``source`` read as ``fmt`` (and, for a folder, the files skipped);
    :class:`BadInput` when it is not readable as that. ``each_file`` (``--from auto``): a
    folder's files that are not Markdown are read in the format each is in (a folder of
    exports: our JSON lines, a memory.jsonl, a claude-mem database) instead of skipped."""
    if fmt == "claude-code":
        if source.is_dir:
            folder = claude_code.read_folder(source.path)
            if each_file:
                return _each_file(source.path, folder)
            return folder.incoming, folder.skipped
        ref = source.path.rsplit("/", 1)[-1]
        return Incoming(learnings=claude_code.read_file(source.path, ref)), []
    if source.is_dir:
        raise BadInput(f"{source.path} is a folder: --from {fmt} reads a file")
    if fmt == "wsd":
        return wsd_format.read(source.path), []
    if fmt == "mcp-memory":
        return mcp_memory.read(source.path, source.mtime), []
    if fmt == "claude-mem":
        return claude_mem.read(source.path), []
    raise BadInput(f"--from {fmt}: not one of auto, {', '.join(FORMATS)}")


def _each_file(root: str, folder: claude_code.Folder) -> tuple[Incoming, list[tuple[str, str]]]:
    """A folder's Markdown records, and those of each of its other files in its own format
    (one that is none of ours still skipped, saying why)."""
    merged = folder.incoming
    learnings = list(merged.learnings)
    skipped = []
    for rel, why in folder.skipped:
        if why != claude_code.NOT_MARKDOWN:
            skipped.append((rel, why))
            continue
        path = os.path.join(root, rel)
        try:
            source = examine(path)
            fmt = detect(source)
        except BadInput:
            skipped.append((rel, f"{why}, nor a format wsd import knows"))
            continue
        try:
            incoming, _none = read(source, fmt)
            # Read whole here: its learnings are a stream whose bad line is raised as it is
            # reached, which (read later) ended the whole folder's import (issue 46).
            learnings += list(incoming.learnings)
        except BadInput as exc:
            skipped.append((rel, f"read as {fmt}: {str(exc).removeprefix(path).lstrip(': ')}"))
            continue
        merged.actions += incoming.actions
        merged.history += incoming.history
        for name, text in incoming.md.items():
            # Two exports of one memory: the lines of the second not in the first follow.
            had = merged.md.get(name, "")
            lines = set(had.splitlines())
            more = [ln for ln in text.splitlines() if ln not in lines]
            merged.md[name] = "\n".join([*had.splitlines(), *more]) + "\n"
    merged.learnings = learnings
    return merged, skipped


def run(
    layout: Layout,
    store: Store,
    path: str,
    fmt: str = "auto",
    dry_run: bool = False,
    stdin: BinaryIO | None = None,
) -> Imported:
    """Import ``path`` (see the module; ``-``: our JSON lines from ``stdin``). Raises
    :class:`BadInput` (nothing imported) for a source that cannot be read whole, or a merged
    memory file over its limit."""
    if path == "-" and stdin is not None:
        if fmt not in ("auto", "wsd"):
            raise BadInput(f"standard input is read as our JSON lines, not --from {fmt}")
        fmt, skipped = "wsd", list[tuple[str, str]]()
        incoming = wsd_format.read_lines(stream_lines(stdin, "-"), "-")
    else:
        source = examine(path)
        auto = fmt == "auto"
        fmt = detect(source) if auto else fmt
        incoming, skipped = read(source, fmt, each_file=auto)
    out = Imported(path, fmt, dry_run, skipped=skipped)
    now = time.time()
    # A person's edit not adopted yet: recorded first (if the import adds to the files).
    incoming.hand = md_files.hand_edits(layout, store)
    try:
        out.added, changed = store.transfer.add(
            incoming, now, line_limits=md_files.line_limits(), dry_run=dry_run
        )
    except TooLong as exc:
        raise BadInput(f"{path}: {exc}") from None
    if changed and not dry_run:
        out.not_written = md_files.materialise_each(layout, changed)[1]
    return out
