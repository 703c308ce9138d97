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
from wsd.daemon.runtime.fsio import TEMP_PREFIX, atomic_write
from wsd.schema.layout import CURATED_FILES, DEPLOY_FILES, Layout

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
        try:
            with open(layout.md(name), encoding="utf-8", errors="replace") as fh:
                out[name] = fh.read()
        except FileNotFoundError:
            out[name] = ""
    return out


def materialise(layout: Layout, latest: Mapping[str, str]) -> list[str]:
    """Write each curated file whose disk content differs from its latest revision."""
    written = []
    for name, content in sorted(latest.items()):
        path = curated_path(layout, name)
        if name == "files.md":  # the notes part only: the inventory belongs to the watcher
            if files_md.write_notes(path, content):
                written.append(name)
            continue
        try:
            with open(path, encoding="utf-8") as fh:
                if fh.read() == content:
                    continue
        except (FileNotFoundError, UnicodeDecodeError):
            pass
        atomic_write(path, content)
        written.append(name)
    return written


def stray_temp_files(layout: Layout) -> list[str]:
    try:
        names = os.listdir(layout.memory_dir)
    except FileNotFoundError:
        return []
    return [os.path.join(layout.memory_dir, n) for n in names if n.startswith(TEMP_PREFIX)]


def repair(layout: Layout, latest: Mapping[str, str]) -> list[str]:
    """Start-up repair: remove temp files a crash left, then re-materialise."""
    removed = []
    for path in stray_temp_files(layout):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
            removed.append(os.path.basename(path))
    return removed + materialise(layout, latest)
