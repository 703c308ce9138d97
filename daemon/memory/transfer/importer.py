"""``wsd import PATH``: read a source in one of the formats (see the package), then store all
of it in one transaction, or none of it.

A person's own unsaved edit of a memory file is adopted first (as the daemon would), so the
lines an import merges into the file are added to it, never written over it; the files that
changed are written to disk after the commit (a running daemon keeps them: they are its
latest revisions).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from wsd.daemon.memory import md_files
from wsd.daemon.memory.transfer import claude_code, claude_mem, mcp_memory, wsd_format
from wsd.daemon.memory.transfer.detect import FORMATS, detect
from wsd.daemon.memory.transfer.inputs import BadInput, Source, examine
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


def read(source: Source, fmt: str) -> tuple[Incoming, list[tuple[str, str]]]:
    """The records of ``source`` read as ``fmt`` (and, for a folder, the files skipped);
    :class:`BadInput` when it is not readable as that."""
    if fmt == "claude-code":
        if source.is_dir:
            folder = claude_code.read_folder(source.path)
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


def run(
    layout: Layout, store: Store, path: str, fmt: str = "auto", dry_run: bool = False
) -> Imported:
    """Import ``path`` (see the module). Raises :class:`BadInput` (nothing imported) for a
    source that cannot be read whole, or a merged memory file over its limit."""
    source = examine(path)
    fmt = detect(source) if fmt == "auto" else fmt
    incoming, skipped = read(source, fmt)
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
    if changed:
        out.not_written = md_files.materialise_each(layout, changed)[1]
    return out
