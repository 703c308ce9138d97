"""``wsd export DEST --format jsonl|markdown``: one consistent snapshot of the memory, written
where nothing half-written is ever seen.

The snapshot is one read transaction on memory.db (WAL: the daemon's writes go on beside it,
unblocked, and none of them shows half in the export). The output is built beside ``DEST``
under a temporary name and renamed into place when complete: mode 0600 (a folder 0700), never
through a link, never over an existing file or a folder that is not empty. Retracted and
forgotten learnings are gone from memory.db, so never exported; while an erasure is
unfinished (a forget killed midway) the export is refused, as its words may still be there.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from wsd.daemon.memory.forget import hold
from wsd.daemon.memory.md import files as md_files
from wsd.daemon.memory.transfer import markdown, wsd_format
from wsd.daemon.runtime.fsio import TEMP_PREFIX
from wsd.daemon.runtime.pause import PauseRefused
from wsd.daemon.store import Store, sources_of

FORMATS = ("jsonl", "markdown")


class ExportRefused(Exception):
    """The export cannot be written (the destination, or an unfinished erasure): says why."""


@dataclass
class Exported:
    dest: str
    format: str
    learnings: int = 0
    actions: int = 0
    files: int = 0
    revisions: int = 0
    #: Said to the person when the export lands in the workspace's watched folders.
    note: str | None = None


def _rows(store: Store, history: bool) -> Iterator[tuple[str, tuple[Any, ...]]]:
    rows = store.transfer.snapshot(history)
    kind, head = next(rows)
    if head[2]:
        raise ExportRefused(
            "a wsd forget is unfinished (killed midway): the daemon's next pass, or the next"
            " wsd forget, finishes it; export after that"
        )
    yield kind, head
    # The files as they are now: a person's edit the daemon has not adopted yet (or a file
    # no revision holds yet, as a fresh workspace's) is what the next session would read.
    files = md_files.hand_edits(store.layout, store)
    emitted = False
    for kind, row in rows:
        if kind == "md":
            files.setdefault(row[0], row[1])
            continue
        if kind == "revision" and not emitted:
            yield from (("md", item) for item in sorted(files.items()))
            emitted = True
        yield kind, row
    if not emitted:
        yield from (("md", item) for item in sorted(files.items()))


def run(store: Store, dest: str, fmt: str, history: bool = False) -> Exported:
    """Export to ``dest`` (``-``: standard output, jsonl only). Raises
    :class:`ExportRefused`. Never beside an erasure (the backup lock: a forget either finds
    this export recorded and placed, or runs after it)."""
    if fmt not in FORMATS:
        raise ExportRefused(f"--format {fmt}: not one of {', '.join(FORMATS)}")
    if dest == "-":
        return _run(store, dest, fmt, history)
    try:
        with hold.backing_up(store.layout):
            return _run(store, dest, fmt, history)
    except PauseRefused as exc:
        raise ExportRefused(str(exc).replace("back up", "export")) from None


def _run(store: Store, dest: str, fmt: str, history: bool) -> Exported:
    out = Exported(dest, fmt)
    now = time.time()
    if fmt == "jsonl":
        lines = wsd_format.export_lines(
            _counted(_rows(store, history), out), now, store.transcript_identity()
        )
        if dest == "-":
            wsd_format.write(sys.stdout, lines)
            return out
        _check_dest(dest, folder=False)
        out.note = _record(store, dest, fmt, now)
        tmp = _temp(dest)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                wsd_format.write(fh, lines)
                fh.flush()
                os.fsync(fh.fileno())
            _place(tmp, dest, folder=False)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return out
    if dest == "-":
        raise ExportRefused("--format markdown writes a folder: give its path, not -")
    _check_dest(dest, folder=True)
    out.note = _record(store, dest, fmt, now)
    tmp = _temp(dest)
    os.mkdir(tmp, 0o700)
    try:
        _markdown(store, tmp, now, out)
        _place(tmp, dest, folder=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


#: What each kind of snapshot row counts toward in the report.
_COUNTS = {"learning": "learnings", "action": "actions", "md": "files", "revision": "revisions"}


def _counted(
    rows: Iterator[tuple[str, tuple[Any, ...]]], out: Exported
) -> Iterator[tuple[str, tuple[Any, ...]]]:
    for kind, row in rows:
        if kind in _COUNTS:
            setattr(out, _COUNTS[kind], getattr(out, _COUNTS[kind]) + 1)
        yield kind, row


def _markdown(store: Store, folder: str, now: float, out: Exported) -> None:
    by_type: dict[str, list[str]] = {}
    curated: list[str] = []
    for kind, row in _rows(store, history=False):
        if kind == "learning" and row[7] is None:  # current ones only
            turns = [f"{t[:8]}:{o}" for t, o, _c in sources_of(row[9])]
            name, text, line = markdown.memory_file(row, turns)
            _write(folder, name, text)
            by_type.setdefault(markdown.THEIRS.get(row[1], "project"), []).append(line)
            out.learnings += 1
        elif kind == "md" and row[1].strip():
            _write(folder, row[0], row[1])
            curated.append(row[0])
            out.files += 1
    _write(folder, "MEMORY.md", markdown.index(by_type, now, curated))


def _write(folder: str, name: str, text: str) -> None:
    fd = os.open(
        os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600
    )
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


def where(store: Store, dest: str) -> str:
    """The path ``dest`` will have (its folder's links resolved: an export is never written
    through a link); :class:`ExportRefused` inside ``.os/`` (the daemon's own folder: the
    databases, the md files, the logs; backup refuses the whole workspace)."""
    folder, name = os.path.split(os.path.abspath(dest))
    real = os.path.join(os.path.realpath(folder), name)
    own = os.path.realpath(store.layout.os_dir)
    if real == own or real.startswith(own + os.sep):
        raise ExportRefused(
            f"{dest} is inside {store.layout.os_dir}, the daemon's own folder (its databases,"
            " memory files and logs): choose a folder outside it"
        )
    return real


def _record(store: Store, dest: str, fmt: str, now: float) -> str | None:
    """Record the export before it is written, as a backup is (a forget then reaches it,
    or names it as still holding the words); what to tell the person when it lands in the
    workspace's watched folders."""
    real = where(store, dest)
    store.erasure.record_export(real, fmt, now)
    root = os.path.realpath(store.layout.root)
    if real.startswith(root + os.sep):
        return (
            f"{dest} is inside the workspace: the agent can read it and files.md lists it; a"
            " wsd forget erases the words there too (it is recorded)"
        )
    return None


def _check_dest(dest: str, folder: bool) -> None:
    try:
        os.lstat(dest)
    except FileNotFoundError:
        parent = os.path.dirname(os.path.abspath(dest))
        if not os.path.isdir(parent):
            raise ExportRefused(f"{parent}: no such folder") from None
        return
    if os.path.islink(dest):
        raise ExportRefused(f"{dest} is a link: not followed; give another path")
    if folder and os.path.isdir(dest) and not os.listdir(dest):
        return
    what = "a folder that is not empty" if os.path.isdir(dest) else "there already"
    raise ExportRefused(f"{dest} is {what}: give a new path (nothing is overwritten)")


def _temp(dest: str) -> str:
    folder, name = os.path.split(os.path.abspath(dest))
    return os.path.join(folder, f"{TEMP_PREFIX}{name}.{os.getpid()}.{os.urandom(6).hex()}")


def _place(tmp: str, dest: str, folder: bool) -> None:
    """Rename the finished output into place (an empty folder there is replaced)."""
    if folder and os.path.isdir(dest) and not os.path.islink(dest):
        os.rmdir(dest)  # empty (checked): fails, rather than lose anything, if it is not
    if folder:
        os.rename(tmp, dest)
        return
    try:
        os.link(tmp, dest)  # never over a file that appeared meanwhile (rename would be)
    except FileExistsError:
        raise ExportRefused(f"{dest} appeared while the export ran: not overwritten") from None
    os.unlink(tmp)
