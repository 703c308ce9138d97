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
from wsd.schema.layout import CURATED_FILES, DEPLOY_FILES, Layout

TEMP_PREFIX = ".wsd-tmp-"


class ConfinementError(ValueError):
    """A write was asked for outside the files the daemon may write."""


def atomic_write(path: str, text: str, mode: int = 0o600, durable: bool = True) -> None:
    """Replace ``path`` with ``text`` atomically (and, if ``durable``, fsynced)."""
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f"{TEMP_PREFIX}{name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        data = text.encode("utf-8")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.close(fd)
    os.replace(tmp, path)
    if not durable:
        return
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


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
