"""The markdown memory files on disk, their revisions in memory.db, and a person's edits.

memory.db holds every revision of the four curated files; the files on disk are
materialised from the latest one, atomically (a reader or a crash sees the old file or the
new one, never half). A file on disk that differs from its latest revision is one of two
things, told apart by content:

* a version the daemon wrote before (it equals an older revision): a crash came between a
  batch's commit and its write, so the latest revision is written;
* anything else: a person edited it. The edit is adopted as a new revision (source
  ``hand``) and never reverted; the next curator request shows it. (A person who wants an
  older version back uses ``wsd memory restore``.)

A curated file that is missing is written again from its latest revision. For files.md only
the notes part counts: the inventory below it is the watcher's.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from wsd.daemon.memory.md import files_md
from wsd.daemon.runtime import fsio
from wsd.daemon.runtime.fsio import atomic_write
from wsd.daemon.store import Store, sha256
from wsd.schema.errors import describe
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


def line_limits() -> dict[str, int]:
    """The line limit of each curated file's part a revision holds (files.md: its notes)."""
    return {
        name: files_md.NOTES_LINE_LIMIT if name == "files.md" else LINE_LIMITS[name]
        for name in CURATED_FILES
    }


class ConfinementError(ValueError):
    """A write was asked for outside the files the daemon may write."""


def curated_path(layout: Layout, name: str) -> str:
    """Path of a curated file; refuses anything but the four curated names."""
    if name not in CURATED_FILES:
        raise ConfinementError(f"the daemon never writes {name!r}")
    return layout.md(name)


def read_text(path: str) -> str | None:
    """A memory file's text, or None when it is missing or cannot be read (see :func:`look`)."""
    return look(path)[0]


def look(path: str) -> tuple[str | None, str | None]:
    """(text, None) for a memory file read, (None, None) when nothing is there, and
    (None, why) when something is there that cannot be read (why, without the path: "permission
    denied", "it is a FIFO"): a file we may not read, a link, a FIFO, a device, a folder, or
    one larger than MD_READ_LIMIT. Read without
    following links or blocking (:func:`wsd.daemon.runtime.fsio.read_text`)."""
    try:
        return fsio.read_text(path, MD_READ_LIMIT), None
    except OSError as exc:
        return None, fsio.why_not_read(path, exc)


def read_all(layout: Layout) -> dict[str, str]:
    """Current text of all six memory files ("" for a missing one, or one that is not a
    regular file: a FIFO, a link or a huge file never blocks the loop)."""
    return {name: read_text(layout.md(name)) or "" for name in DEPLOY_FILES + CURATED_FILES}


def canonical(name: str, text: str) -> str:
    """The part of a curated file a revision holds, in one form: files.md's notes (the
    inventory is the watcher's), no trailing blank lines, one final newline ("" if empty)."""
    body = files_md.notes_of(text) if name == "files.md" else text
    body = body.rstrip("\n")
    return body + "\n" if body.strip() else ""


def memory_files(layout: Layout, store: Store) -> dict[str, str]:
    """The six memory files as the curator should see them: soul.md and os.md from the
    disk, the curated ones from their latest revisions (adopt hand edits first)."""
    files = {name: read_text(layout.md(name)) or "" for name in DEPLOY_FILES}
    latest = store.revisions.latest_md()
    files.update({name: latest.get(name, "") for name in CURATED_FILES})
    return files


def read_curated(layout: Layout) -> dict[str, str | None]:
    """Each curated file's text on disk (None: missing, or not a regular file)."""
    return {name: read_text(layout.md(name)) for name in CURATED_FILES}


def adopt_hand_edits(
    layout: Layout, store: Store, now: float, disk: Mapping[str, str | None] | None = None
) -> list[str]:
    """Record every curated file a person edited as a new revision (source ``hand``);
    the names adopted. A missing file, or one that equals a revision, is not an edit.
    ``disk``: the files as the caller read them (:func:`read_curated`; read here if None)."""
    edits = hand_edits(layout, store, disk)
    for name, text in edits.items():
        store.revisions.add_revision(name, text, "hand", now)
    return list(edits)


def hand_edits(
    layout: Layout, store: Store, disk: Mapping[str, str | None] | None = None
) -> dict[str, str]:
    """Each curated file a person edited and the daemon has not adopted yet: its text as a
    revision would hold it (see :func:`adopt_hand_edits`, which records them)."""
    latest = store.revisions.latest_md()
    files = read_curated(layout) if disk is None else disk
    edits = {}
    for name in CURATED_FILES:
        disk_text = files.get(name)
        if disk_text is None:
            continue
        text = canonical(name, disk_text)
        if text == canonical(name, latest.get(name, "")):
            continue
        if store.revisions.known_revision(name, sha256(text)) is not None:
            continue  # an older version the daemon wrote: materialise puts the latest back
        edits[name] = text
    return edits


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
            failed[name] = describe(exc)[:300]
    return written, failed


def _materialise_one(layout: Layout, name: str, content: str) -> bool:
    path = curated_path(layout, name)
    if name == "files.md":  # the notes part only: the inventory belongs to the watcher
        return files_md.write_notes(path, content)
    disk, why = look(path)
    if why is not None:
        # Something is there that we cannot read (mode 000, a huge file): it may hold a
        # person's edit, which replacing it would lose unseen. Left as it is; the pass
        # retries and doctor names it.
        raise fsio.UnsafeFile(f"{path} cannot be read ({why}): not replaced")
    if disk == content:
        return False
    atomic_write(path, content)
    return True


def materialise(layout: Layout, latest: Mapping[str, str]) -> list[str]:
    """:func:`materialise_each`, raising the first failure (after trying every file)."""
    written, failed = materialise_each(layout, latest)
    if failed:
        why = "; ".join(f"{name}: {error}" for name, error in sorted(failed.items()))
        raise OSError(f"md files not written: {why}")
    return written


def stray_temp_files(layout: Layout) -> list[str]:
    """Temp files a crashed write left in the memory folder (never one a live write holds:
    see :func:`wsd.daemon.runtime.fsio.abandoned_temp`)."""
    try:
        names = os.listdir(layout.memory_dir)
    except FileNotFoundError:
        return []
    now = time.time()
    return [
        os.path.join(layout.memory_dir, n)
        for n in names
        if fsio.abandoned_temp(layout.memory_dir, n, now)
    ]


@dataclass
class Synced:
    """What one :func:`sync` did."""

    adopted: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    temp_removed: list[str] = field(default_factory=list)
    #: file -> why it could not be written (the revision is safe; the loop retries).
    failed: dict[str, str] = field(default_factory=dict)


def sync(layout: Layout, store: Store, now: float, *, temp_files: bool = False) -> Synced:
    """Make disk and revisions agree: adopt hand edits, then write what is missing or stale
    (and, at start-up, remove temp files a crash left behind)."""
    done = Synced()
    if temp_files:
        for path in stray_temp_files(layout):  # file ages are wall-clock: not ``now``
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
                done.temp_removed.append(os.path.basename(path))
    done.adopted = adopt_hand_edits(layout, store, now)
    done.written, done.failed = materialise_each(layout, store.revisions.latest_md())
    return done


class DiskWatch:
    """Tells when any curated file changed on disk since the last look (one lstat each):
    the loop syncs only then, so an idle pass reads no file and opens no database."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self._seen: dict[str, tuple[int, int, int] | None] = {}

    def changed(self) -> bool:
        now = {name: _stat(self.layout.md(name)) for name in CURATED_FILES}
        if now == self._seen:
            return False
        self._seen = now
        return True

    def missing(self) -> list[str]:
        """The curated files nothing was at when :meth:`changed` last looked (a link, a
        FIFO or a folder there is something: it is not missing, and is not replaced)."""
        return [name for name, seen in self._seen.items() if seen is None]


#: What :func:`_stat` says of a path it could not lstat for another reason than absence.
_UNKNOWN = (-1, -1, -1)


def _stat(path: str) -> tuple[int, int, int] | None:
    """Size, mtime and inode of what is at ``path`` (never followed); None when nothing is."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError:
        return _UNKNOWN
    return st.st_size, st.st_mtime_ns, st.st_ino
