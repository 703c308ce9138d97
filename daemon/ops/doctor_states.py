"""Doctor checks of states the daemon can be left in without failing: damage it set aside,
files it refuses, a second instance, a rebuild that died (issue 13).

Each is a state in which the daemon keeps running (so nothing else reports it) but
something needs a person: a spool line rejected, a file it will not read or write, a
write that keeps failing, a lock another process holds, a rebuild's leftovers.
"""

from __future__ import annotations

import os
import stat
import time
from typing import Protocol

from wsd.daemon.runtime.fsio import kind_of
from wsd.daemon.store.ledger import Store
from wsd.daemon.store.workspace import WorkspaceStore
from wsd.hooks import spool
from wsd.schema.layout import CURATED_FILES, DEPLOY_FILES, Layout

#: A taken spool file still there after this long keeps failing to be ingested.
STUCK_SPOOL_SECONDS = 600.0


class Reporter(Protocol):
    """What these checks need of the doctor."""

    layout: Layout
    store: Store
    fix: bool

    def add(self, level: str, check: str, detail: str, fixed: bool = False) -> None: ...


def spool_damage(doctor: Reporter) -> None:
    """Rejected spool lines (a person must look) and taken spool files that stay stuck."""
    path = os.path.join(doctor.layout.memory_dir, spool.REJECTED_NAME)
    try:
        with open(path, "rb") as fh:
            lines = sum(1 for line in fh if line.strip())
    except OSError:
        lines = 0
    if lines:
        doctor.add(
            "fail",
            "spool rejected",
            f"{lines} line(s) could not be recorded (torn, or not a valid event): see {path};"
            " re-feed what is worth keeping, then move the file away",
        )
    now = time.time()
    for taken in spool.pending_files(doctor.layout.spool):
        try:
            age = now - os.stat(taken).st_mtime
        except OSError:
            continue
        if age > STUCK_SPOOL_SECONDS:
            doctor.add(
                "fail",
                "spool stuck",
                f"{os.path.basename(taken)} not ingested after {age:.0f}s"
                " (see pass_failed in the daemon's log)",
            )


def special_files(doctor: Reporter) -> None:
    """Memory files and canvas mirrors that are not regular files: the daemon refuses them."""
    found = []
    for name in DEPLOY_FILES + CURATED_FILES:
        path = doctor.layout.md(name)
        what = _not_regular(path)
        if what is not None:
            found.append(f"{path} is {what}")
    try:
        cards = [c.path for c in WorkspaceStore(doctor.layout).open_cards()]
    except Exception:  # a missing, old or damaged memory.db: the database checks say so
        cards = []
    for rel in cards:
        what = _not_regular(os.path.join(doctor.layout.root, rel))
        if what is not None:
            found.append(f"{rel} (a canvas card's mirror) is {what}")
    if found:
        doctor.add(
            "fail",
            "refused files",
            "; ".join(found) + ": the daemon neither reads nor replaces these; remove them",
        )
    else:
        doctor.add("ok", "refused files", "memory files and canvas mirrors are regular files")


def _not_regular(path: str) -> str | None:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) else kind_of(mode)


def check_states(doctor: Reporter) -> None:
    """Every check of this module, in order."""
    spool_damage(doctor)
    special_files(doctor)
