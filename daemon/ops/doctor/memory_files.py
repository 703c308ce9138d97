"""Doctor checks of the memory files on disk: ones the daemon refuses (a link, a FIFO, a
device in a memory file's or a canvas mirror's place), ones it cannot read, each curated file
against its revisions (missing, stale, edited by hand), the erosion guard holding removals,
and files the running daemon could not write."""

from __future__ import annotations

import os
import stat
import time

from wsd.daemon.curation.judging import erosion
from wsd.daemon.memory.md import files as md_files
from wsd.daemon.ops.doctor.findings import Reporter
from wsd.daemon.runtime.fsio import kind_of
from wsd.daemon.runtime.heartbeat import State, pid_alive, read_status
from wsd.daemon.store import sha256
from wsd.schema.layout import CURATED_FILES, DEPLOY_FILES


def special_files(doctor: Reporter) -> None:
    """Memory files and canvas mirrors that are not regular files: the daemon refuses them.
    This check runs before :func:`revisions`, so that one ``--fix`` removes a link or a FIFO
    in an md file's place, then writes the file from its revision."""
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
        why = md_files.look(path)[1]
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


def revisions(doctor: Reporter) -> None:
    """Each curated file against its revisions: current, missing, stale (an older
    version the daemon wrote: a crash before the write), or edited by hand (not yet
    adopted as a revision). files.md counts by its notes: the inventory is the
    watcher's."""
    layout, store = doctor.layout, doctor.store
    for held in erosion.waiting_files(store, time.time(), doctor.erosion):
        doctor.add("warn", "md erosion", held.summary())
    latest = store.revisions.latest_md()
    stray = md_files.stray_temp_files(layout)
    states: dict[str, list[str]] = {"missing": [], "stale": [], "hand": []}
    unreadable = unreadable_files(doctor)
    for name, content in sorted(latest.items()):
        # Said already: a file doctor cannot read, or a link, FIFO or device in its place
        # (special_files; "user.md is missing" beside "is a FIFO" said it twice, wrongly).
        if name in unreadable or _not_regular(layout.md(name)) is not None:
            continue
        disk = md_files.read_text(layout.md(name))
        text = None if disk is None else md_files.canonical(name, disk)
        if text == md_files.canonical(name, content):
            continue
        if text is None:
            states["missing"].append(name)
        elif store.revisions.known_revision(name, sha256(text)) is not None:
            states["stale"].append(name)
        else:
            states["hand"].append(name)
    broken = states["missing"] + states["stale"]
    if not broken and not stray and not states["hand"]:
        if not unreadable:
            doctor.add("ok", "md files", "match their latest revisions")
        return
    if doctor.fix:
        done = md_files.sync(layout, store, time.time(), temp_files=True)
        if done.failed:
            why = "; ".join(f"{name}: {error}" for name, error in sorted(done.failed.items()))
            doctor.add("fail", "md files", f"could not rewrite: {why}")
            return
        doctor.add(
            "warn",
            "md files",
            f"adopted {_names(done.adopted)}; wrote {_names(done.written)};"
            f" removed {len(stray)} temp file(s)",
            True,
        )
        return
    if states["hand"]:
        doctor.add(
            "warn",
            "md files",
            f"edited by hand: {_names(states['hand'])} (the running daemon adopts the edit"
            " as a new revision; --fix adopts it now)",
            fixable=True,
        )
    if broken or stray:
        problems = [
            *(f"{name} is missing" for name in states["missing"]),
            *(f"{name} is older than its latest revision" for name in states["stale"]),
            *([f"{len(stray)} temp file(s) left behind"] if stray else []),
        ]
        doctor.add("fail", "md files", "; ".join(problems) + " (--fix writes them)", fixable=True)


def _names(names: list[str]) -> str:
    """File names for a line of the report: ``user.md, context.md``, or ``none``."""
    return ", ".join(names) if names else "none"


def md_failures(doctor: Reporter) -> None:
    """Curated files the running daemon could not write (it retries every pass)."""
    beat = read_status(doctor.layout) or {}
    failed = beat.get("md_write_failed")
    if failed and pid_alive(beat.get("pid")) and beat.get("state") != State.STOPPED:
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


def forgets(doctor: Reporter) -> None:
    """An erasure killed midway (issue 33): its words are still in the journal and maybe in
    copies it had not reached. Finished by the daemon's next pass, or the next forget."""
    from wsd.daemon.runtime.dates import iso_time

    pending = doctor.store.erasure.journal_pending()
    if not pending:
        return
    from wsd.daemon.memory.forget.hold import backup_running

    with_words = [fid for fid, _by, _words in pending]
    started = doctor.store.erasure.started_at(with_words[0])
    copying = backup_running(doctor.layout)
    doctor.add(
        "fail",
        "forget",
        f"{len(pending)} erasure(s) unfinished (the first started {iso_time(started)}): the"
        " words may still be in copies it had not reached; "
        + (
            f"a wsd backup (pid {copying[0]}) is copying: the daemon finishes the erasure"
            " once it is done, and curates nothing until then"
            if copying
            else "the daemon finishes it on its next pass, or run any `wsd forget ... --yes`"
        ),
    )
