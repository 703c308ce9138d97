"""Holding the daemon off: the pause file that ``wsd rebuild`` and ``wsd forget`` take.

One pause file (``.os/memory/rebuild.pause``, its holder's pid, time and purpose, flocked for
the holder's life) serialises the two: a forget during a rebuild, or two forgets, are refused
with a message naming who holds it. The worker checks the file at the top of each pass: it
finishes the batch in hand, writes ``state: paused`` to its heartbeat and does nothing more
until the file is gone; the holder waits for that acknowledgement (or finds no live daemon)
before it starts. A holder that dies leaves the file stale: its flock died with it, so the
daemon resumes and the next holder replaces it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator

from wsd.daemon.replica import hold
from wsd.daemon.runtime.fsio import read_small
from wsd.daemon.runtime.heartbeat import State, pid_alive, read_status
from wsd.daemon.runtime.instance import flock_holders
from wsd.daemon.store import pause_path, pause_requested, take_pause
from wsd.schema.layout import Layout

#: A heartbeat older than this is a daemon that is gone (it beats every 10 s while alive).
STALE = 60.0
#: Held (flock) by a running ``wsd backup`` (exclusive) and by every erasure (shared): a
#: forget during a copy would erase the live copy while the backup copies it, and look for
#: backups before this one was recorded.
BACKUP_LOCK = "backup.lock"


class PauseRefused(Exception):
    """The daemon cannot be held off now (another holder, or it did not pause): says why."""


def holder(layout: Layout) -> str:
    """What holds the pause file: "rebuild" or "forget" (as its holder wrote it)."""
    text = read_small(pause_path(layout)) or ""
    words = text.split()
    return words[2] if len(words) > 2 else "rebuild"


def take(layout: Layout, purpose: str) -> int:
    """Create the pause file (ours: ``purpose`` recorded), its descriptor to hold open; a
    stale one (its holder died) is replaced. :class:`PauseRefused` if a live holder has it."""
    path = pause_path(layout)
    for _ in range(2):
        fd = take_pause(layout, purpose)
        if fd is not None:
            return fd
        if pause_requested(layout):
            raise PauseRefused(f"another wsd {holder(layout)} is running")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # left by a holder that died
    raise PauseRefused(f"could not create {path}")


def release(layout: Layout, fd: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(pause_path(layout))
    os.close(fd)


def wait_for_daemon(
    layout: Layout, seconds: float, say: Callable[[str], None], what: str = "wsd rebuild"
) -> None:
    """Wait until a live daemon reports ``paused`` after our pause file appeared."""
    asked = os.stat(pause_path(layout)).st_mtime
    deadline = time.monotonic() + seconds
    said = False
    while True:
        beat = read_status(layout)
        pid = beat.get("pid") if beat else None
        fresh = beat is not None and time.time() - float(beat.get("heartbeat_at") or 0) < STALE
        running = (
            fresh
            and isinstance(pid, int)
            and pid_alive(pid)
            and beat is not None
            and beat.get("state") != State.STOPPED
        )
        if not running or beat is None:
            return
        if beat.get("state") == State.PAUSED and float(beat.get("heartbeat_at") or 0) >= asked - 1:
            say("daemon paused")
            return
        if time.monotonic() > deadline:
            raise PauseRefused(
                f"the daemon (pid {pid}) did not pause within {seconds:.0f}s; stop it"
                f" (supervisorctl stop) and run {what} again"
            )
        if not said:
            say(f"waiting for the daemon (pid {pid}) to pause ...")
            said = True
        time.sleep(0.1)


def _backup_lock(layout: Layout) -> int:
    return os.open(
        os.path.join(layout.memory_dir, BACKUP_LOCK),
        os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
        0o600,
    )


@contextlib.contextmanager
def backing_up(layout: Layout) -> Iterator[None]:
    """Held by ``wsd backup`` for its copy; PauseRefused while a forget runs (or another
    backup)."""
    fd = _backup_lock(layout)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PauseRefused("another wsd backup is running") from None
        if pause_requested(layout) and holder(layout) == "forget":
            raise PauseRefused("a wsd forget is running: back up when it is done")
        yield
    finally:
        os.close(fd)


def backup_running(layout: Layout) -> list[int]:
    """Pids of a running ``wsd backup`` (the exclusive holder of the backup lock), read
    without touching the lock; [] when none (or /proc/locks cannot be read)."""
    return flock_holders(os.path.join(layout.memory_dir, BACKUP_LOCK), exclusive_only=True) or []


@contextlib.contextmanager
def no_backup(layout: Layout) -> Iterator[None]:
    """Held (shared) for a whole erasure, whoever runs it (``wsd forget``, or the daemon
    finishing one, answering a person's "forget X", applying the transcript retention): no
    ``wsd backup`` copies meanwhile, so every backup is either recorded before the erasure
    looks for backups or copied after it; and no litestream runs (:func:`hold.quiet`).
    PauseRefused while a backup runs, or when litestream does not stop."""
    fd = _backup_lock(layout)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PauseRefused("a wsd backup is running: forget when it is done") from None
        # litestream stopped too, and its local copies of the pages gone (replica/hold.py).
        try:
            with hold.quiet(layout):
                yield
        except hold.StillRunning as exc:
            raise PauseRefused(str(exc)) from None
    finally:
        os.close(fd)


@contextlib.contextmanager
def held(
    layout: Layout, purpose: str, seconds: float, say: Callable[[str], None]
) -> Iterator[None]:
    """The daemon held off for the block (see the module); a forget is refused while a
    backup runs."""
    fd = take(layout, purpose)
    try:
        with no_backup(layout) if purpose == "forget" else contextlib.nullcontext():
            wait_for_daemon(layout, seconds, say, f"wsd {purpose}")
            yield
    finally:
        release(layout, fd)
