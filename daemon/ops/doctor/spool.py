"""Doctor checks of the spool (``.os/memory/spool.jsonl``, where a hook writes an event the
transcript did not take in time): how much waits and for how long, lines the daemon rejected,
taken files it keeps failing to ingest, and special files set aside in its place."""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
import time

from wsd.daemon.ops.doctor.findings import Reporter
from wsd.daemon.runtime.fsio import kind_of, read_regular
from wsd.schema import spool

MAX_SPOOL_BYTES = 16 * 1024 * 1024
#: A taken spool file still there after this long keeps failing to be ingested.
STUCK_SPOOL_SECONDS = 600.0
#: How much of the rejected-lines file doctor reads to count them (it only says "how many").
REJECTED_READ_LIMIT = 64 << 20


def waiting(doctor: Reporter) -> None:
    """The bytes waiting in the spool, and a spool the daemon is not taking."""
    total = 0
    folder = doctor.layout.memory_dir
    for name in os.listdir(folder) if os.path.isdir(folder) else []:
        if name.startswith("spool.jsonl") and not name.endswith(spool.REFUSED_SUFFIX):
            with contextlib.suppress(OSError):  # gone meanwhile (the daemon took it)
                found = os.lstat(os.path.join(folder, name))
                total += found.st_size if stat.S_ISREG(found.st_mode) else 0
    with contextlib.suppress(OSError):  # nothing there: nothing waits
        planted = os.lstat(doctor.layout.spool).st_mode
        if not stat.S_ISREG(planted):
            # It said "ok spool: 0 bytes waiting" with a FIFO there (issue 45).
            doctor.add(
                "warn",
                "spool",
                f"{doctor.layout.spool} is {kind_of(planted)}: nothing in it is an event; the"
                " next hook write or daemon pass sets it aside and starts a fresh spool",
            )
            return
    oldest = oldest_spooled(doctor.layout.spool)
    age = time.time() - oldest if oldest is not None else 0.0
    if age > STUCK_SPOOL_SECONDS:
        # The loop curates nothing while spooled events wait (one may belong before the
        # turn it would claim), so a spool the daemon never takes holds curation back.
        doctor.add(
            "fail",
            "spool",
            f"{total} bytes waiting, the first event for {age:.0f}s: the daemon is not"
            " taking it (is it running? see pass_failed in its log); nothing is curated",
        )
        return
    doctor.add(
        "ok" if total <= MAX_SPOOL_BYTES else "warn",
        "spool",
        f"{total} bytes waiting (the daemon ingests it each pass)",
    )


def oldest_spooled(path: str) -> float | None:
    """When the live spool's first event happened (its file's mtime if that line is torn);
    None when nothing waits. Reads at most the first 64 kB, never follows a link."""
    try:
        head = read_regular(path, 1 << 16, head=True)
        modified = os.stat(path, follow_symlinks=False).st_mtime
    except OSError:  # nothing there, or not a regular file (the daemon refuses it too)
        return None
    if not head.strip():
        return None
    first = head.split(b"\n", 1)[0]
    with contextlib.suppress(ValueError, TypeError, KeyError, RecursionError):
        when = float(json.loads(first)["ts"])
        if math.isfinite(when):
            return min(when, modified)
    return modified


def damage(doctor: Reporter) -> None:
    """Rejected spool lines (a person must look) and taken spool files that stay stuck."""
    path = os.path.join(doctor.layout.memory_dir, spool.REJECTED_NAME)
    try:
        kept = read_regular(path, REJECTED_READ_LIMIT, head=True)
        lines = sum(1 for line in kept.splitlines() if line.strip())
    except OSError:  # nothing there; a special file there is refused aside by the next append
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


def refused(doctor: Reporter) -> None:
    """Special files (a link, a FIFO) found at the spool's paths: set aside unread, nothing
    lost, but something put them there; ``--fix`` removes them."""
    for path in spool.refused_files(doctor.layout.spool):
        name = os.path.basename(path)
        try:
            kind = kind_of(os.lstat(path).st_mode)
        except OSError:
            continue
        if doctor.fix and kind != "a folder":  # a folder may hold someone's files
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)  # the link or FIFO itself, never what a link points to
            doctor.add("warn", "spool refused", f"removed {name} ({kind})", True)
        else:
            doctor.add(
                "warn",
                "spool refused",
                f"{name} is {kind}, found where the spool belongs and set aside unread"
                " (nothing lost); remove it (wsd doctor --fix)",
                fixable=kind != "a folder",
            )
