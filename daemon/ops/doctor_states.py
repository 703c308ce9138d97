"""Doctor checks of states the daemon can be left in without failing: damage it set aside,
files it refuses, a second instance, a rebuild that died (issue 13).

Each is a state in which the daemon keeps running (so nothing else reports it) but
something needs a person: a spool line rejected, a file it will not read or write, a
write that keeps failing, a lock another process holds, a rebuild's leftovers.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
import time
from typing import Protocol

from wsd.daemon.memory import files as memory_files
from wsd.daemon.runtime import instance
from wsd.daemon.runtime.dates import iso_time
from wsd.daemon.runtime.fsio import kind_of, read_regular
from wsd.daemon.runtime.heartbeat import pid_alive, read_status
from wsd.daemon.store import Store, aside_path, leftovers, pause_path, rebuild_pid, remove
from wsd.schema import spool
from wsd.schema.layout import CURATED_FILES, DEPLOY_FILES, Layout

#: A taken spool file still there after this long keeps failing to be ingested.
STUCK_SPOOL_SECONDS = 600.0
#: How much of the rejected-lines file doctor reads to count them (it only says "how many").
REJECTED_READ_LIMIT = 64 << 20


class Reporter(Protocol):
    """What these checks need of the doctor."""

    layout: Layout
    store: Store
    fix: bool
    lane: str
    batch_wait_limit: float

    def add(
        self, level: str, check: str, detail: str, fixed: bool = False, fixable: bool = False
    ) -> None: ...


def spool_damage(doctor: Reporter) -> None:
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


def spool_refused(doctor: Reporter) -> None:
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


def special_files(doctor: Reporter) -> None:
    """Memory files and canvas mirrors that are not regular files: the daemon refuses them."""
    found: list[str] = []
    removed = 0
    removable = False  # what --fix would remove: a link, a FIFO, a device among the md files
    for name in DEPLOY_FILES + CURATED_FILES:
        path = doctor.layout.md(name)
        what = _not_regular(path)
        if what is not None and doctor.fix and what != "a folder":
            os.unlink(path)  # a link, a FIFO, a device: never the daemon's data (rewritten next)
            doctor.add("warn", "refused files", f"removed {path} ({what})", True)
            removed += 1
        elif what is not None:
            found.append(f"{path} is {what}")
            removable |= what != "a folder"
    try:
        cards = [c.path for c in doctor.store.workspace.open_cards()]
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
            "; ".join(found) + ": the daemon neither reads nor replaces these; remove them"
            " (--fix removes links, FIFOs and devices among the memory files)",
            fixable=removable,
        )
    elif not removed:
        doctor.add("ok", "refused files", "memory files and canvas mirrors are regular files")


def unreadable_files(doctor: Reporter) -> set[str]:
    """The memory files there as regular files that cannot be read (mode 000, a file over
    the read limit), each a failure: the agent starts without it, and the daemon leaves it
    be, since it may hold the person's edit. (A link, a FIFO or a device is
    :func:`special_files`'.) Their names, for the md files check to pass over."""
    found: set[str] = set()
    for name in DEPLOY_FILES + CURATED_FILES:
        path = doctor.layout.md(name)
        why = memory_files.look(path)[1]
        if why is None or _not_regular(path) is not None or not os.path.lexists(path):
            continue
        found.add(name)
        doctor.add(
            "fail",
            "md files",
            f"{name} is unreadable ({why}): the agent starts without it and the daemon does"
            " not replace it; make it a file the daemon's user can read and write",
        )
    return found


def _not_regular(path: str) -> str | None:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) else kind_of(mode)


def instances(doctor: Reporter) -> None:
    """Who holds the instance lock, and any ``wsd run`` of this workspace beside it."""
    held = instance.holders(doctor.layout)
    beat = read_status(doctor.layout) or {}
    daemon = beat.get("pid") if pid_alive(beat.get("pid")) else None
    runs = instance.wsd_runs(doctor.layout.root)
    others = [p for p in runs if p not in held]
    if len(held) > 1 or others:
        doctor.add(
            "fail",
            "instances",
            f"more than one daemon for this workspace: lock held by {_pids(held, 'nobody')},"
            f" other `wsd run` processes: {_pids(others, 'none')} (stop all but one)",
        )
    elif held and held[0] not in runs:
        doctor.add(
            "fail",
            "instances",
            f"the instance lock ({instance.lock_path(doctor.layout)}) is held by pid"
            f" {held[0]}, which is not a `wsd run` of this workspace: no daemon can start",
        )
    elif held and daemon is not None and held != [daemon]:
        doctor.add(
            "fail",
            "instances",
            f"the instance lock ({instance.lock_path(doctor.layout)}) is held by pid"
            f" {held[0]}, not by the daemon of the heartbeat (pid {daemon})",
        )
    elif held:
        doctor.add("ok", "instances", f"one daemon, pid {held[0]}, holds the instance lock")
    else:
        doctor.add("ok", "instances", "no daemon holds the instance lock")


def _pids(pids: list[int], none: str) -> str:
    """Process ids for a report line: ``pid 12, 34``, or ``none``."""
    return "pid " + ", ".join(str(p) for p in pids) if pids else none


def rebuild_leftovers(doctor: Reporter) -> None:
    """A live rebuild (the daemon waits for it), or what a rebuild that died left behind."""
    pid = rebuild_pid(doctor.layout)
    if pid is not None:
        doctor.add("warn", "rebuild", f"wsd rebuild (pid {pid}) running: curation is paused")
        return
    left = leftovers(doctor.layout)
    names = ", ".join(os.path.basename(p) for p in left)
    if not left:
        doctor.add("ok", "rebuild", "none running, nothing left behind")
    elif doctor.fix:
        remove(aside_path(doctor.layout))
        with contextlib.suppress(FileNotFoundError):
            os.unlink(pause_path(doctor.layout))
        doctor.add("warn", "rebuild", f"removed what a rebuild that died left: {names}", True)
    else:
        doctor.add(
            "fail",
            "rebuild",
            f"a wsd rebuild died and left {names} (the live memory is unchanged;"
            " --fix removes them)",
            fixable=True,
        )


def md_failures(doctor: Reporter) -> None:
    """Curated files the running daemon could not write (it retries every pass)."""
    beat = read_status(doctor.layout) or {}
    failed = beat.get("md_write_failed")
    if failed and pid_alive(beat.get("pid")) and beat.get("state") != "stopped":
        why = (
            "; ".join(f"{name} ({error})" for name, error in sorted(failed.items()))
            if isinstance(failed, dict)
            else str(failed)
        )
        doctor.add(
            "fail",
            "md writes",
            f"the daemon cannot write {why}; the boot context serves the old files until"
            " it can (it retries every pass)",
        )


def check_states(doctor: Reporter) -> None:
    """Every check of this module, in order, but :func:`special_files`: the doctor runs that
    one before its md-file check, so that one ``--fix`` clears a FIFO and rewrites the file."""
    spool_damage(doctor)
    spool_refused(doctor)
    md_failures(doctor)
    instances(doctor)
    rebuild_leftovers(doctor)


#: A batch recorded and never given the Bridge's id this long is stuck in its create call.
SUBMITTING_STUCK_SECONDS = 600.0


def economy(doctor: Reporter) -> None:
    """The economy lane: off (the Bridge has no batches endpoint), a Message Batch out past
    the wait limit, or one stuck in its create call."""
    from wsd.daemon.curation import economy as lane

    now = time.time()
    report = lane.report(doctor.store, doctor.lane, now)
    off = report["economy_off"]
    if doctor.lane == "economy" and isinstance(off, dict):
        doctor.add(
            "warn",
            "economy lane",
            f"off: {off.get('reason')}; every batch goes as a direct call (twice the price)"
            f" until the daily probe at {iso_time(off.get('probe_at'))}",
        )
    batches = report["in_flight"]
    late = [b for b in batches if (b.get("age_s") or 0) > doctor.batch_wait_limit]
    stuck = [
        b
        for b in batches
        if b.get("status") == "submitting" and (b.get("age_s") or 0) > SUBMITTING_STUCK_SECONDS
    ]
    for b in late:
        doctor.add(
            "fail",
            "economy lane",
            f"Message Batch {b.get('remote_id')} has waited {float(b['age_s']) / 3600:.1f} h"
            f" for its result ({b.get('turns')} turn(s); limit"
            f" {doctor.batch_wait_limit / 3600:.1f} h, WSD_BATCH_WAIT_LIMIT_SECONDS); last"
            f" problem: {b.get('error') or 'none: the Bridge says it is still in progress'}",
        )
    for b in stuck:
        doctor.add(
            "warn",
            "economy lane",
            f"batch #{b.get('id')} was never given an id by the Bridge (its create call was"
            " cut); the daemon sends its turns again at its next start",
        )
    if batches and not late and not stuck:
        oldest = max(float(b.get("age_s") or 0) for b in batches)
        doctor.add(
            "ok",
            "economy lane",
            f"{len(batches)} Message Batch(es) in flight, the oldest {oldest / 60:.0f} min",
        )
    elif not batches and not (doctor.lane == "economy" and isinstance(off, dict)):
        doctor.add("ok", "economy lane", f"lane {doctor.lane}, nothing in flight")
