"""The markdown memory files on disk: atomic writes from revisions, and repair.

memory.db holds every revision of the four curated files; the files on disk
are only materialised from the latest one. Writes go to a temp file in the
same folder, are fsynced, then renamed over the target (and the folder
fsynced), so a reader or a crash sees the old file or the new one, never half.
At start-up :func:`repair` rewrites any file a crash left behind and removes
stray temp files.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping

from wsd.daemon.memory import files_md
from wsd.daemon.runtime.fsio import TEMP_PREFIX, atomic_write, read_text
from wsd.schema.layout import CURATED_FILES, DEPLOY_FILES, Layout

#: Reads of a memory file stop here (a file this large is not one the daemon wrote).
MD_READ_LIMIT = 4 * 1024 * 1024

#: Line limits of every memory file (SPEC.md section 2).
LINE_LIMITS = {
    "soul.md": 200,
    "os.md": 200,
    "tools.md": 150,
    "files.md": 200,
    "user.md": 200,
    "context.md": 200,
}


class ConfinementError(ValueError):
    """A write was asked for outside the files the daemon may write."""


def curated_path(layout: Layout, name: str) -> str:
    """Path of a curated file; refuses anything but the four curated names."""
    if name not in CURATED_FILES:
        raise ConfinementError(f"the daemon never writes {name!r}")
    return layout.md(name)


def read_all(layout: Layout) -> dict[str, str]:
    """Current text of all six memory files ("" for a missing one)."""
    out = {}
    for name in DEPLOY_FILES + CURATED_FILES:
        try:  # a FIFO, a link or a huge file reads as missing: never blocks the loop
            out[name] = read_text(layout.md(name), MD_READ_LIMIT) or ""
        except OSError:
            out[name] = ""
    return out


def materialise_each(layout: Layout, latest: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """Write each curated file whose disk content differs from its latest revision.

    Returns (files written, {file: error} for each write that failed). One failure (disk
    full, a FIFO or a folder where the file should be) does not stop the others.
    """
    written: list[str] = []
    failed: dict[str, str] = {}
    for name, content in sorted(latest.items()):
        try:
            if _materialise_one(layout, name, content):
                written.append(name)
        except OSError as exc:
            failed[name] = f"{type(exc).__name__}: {exc}"[:300]
    return written, failed


def _materialise_one(layout: Layout, name: str, content: str) -> bool:
    path = curated_path(layout, name)
    if name == "files.md":  # the notes part only: the inventory belongs to the watcher
        return files_md.write_notes(path, content)
    if read_text(path, MD_READ_LIMIT) == content:
        return False
    atomic_write(path, content)
    return True


def materialise(layout: Layout, latest: Mapping[str, str]) -> list[str]:
    """:func:`materialise_each`, raising the first failure (after trying every file)."""
    written, failed = materialise_each(layout, latest)
    if failed:
        raise OSError(f"md files not written: {failed}")
    return written


def stray_temp_files(layout: Layout) -> list[str]:
    try:
        names = os.listdir(layout.memory_dir)
    except FileNotFoundError:
        return []
    return [os.path.join(layout.memory_dir, n) for n in names if n.startswith(TEMP_PREFIX)]


def repair(layout: Layout, latest: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """Start-up repair: remove temp files a crash left, then re-materialise; (what was
    removed or written, {file: error} of each file that could not be written)."""
    removed = []
    for path in stray_temp_files(layout):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
            removed.append(os.path.basename(path))
    written, failed = materialise_each(layout, latest)
    return removed + written, failed
