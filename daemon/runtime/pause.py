"""Pausing the daemon: the pause file that ``wsd rebuild``, ``wsd forget`` and a large ``wsd
import`` take.

One pause file (``.os/memory/rebuild.pause``, its holder's pid, time and purpose, flocked for
the holder's life) serialises them: a forget during a rebuild, or two forgets, are refused
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

from wsd.daemon.runtime.fsio import read_small
from wsd.daemon.runtime.heartbeat import State, pid_alive, read_status
from wsd.daemon.runtime.instance import flock_holders
from wsd.schema.layout import Layout

#: The pause file, beside memory.db (its old name: a rebuild took it first).
PAUSE_NAME = "rebuild.pause"


def pause_path(layout: Layout) -> str:
    return os.path.join(layout.memory_dir, PAUSE_NAME)


def holder_pid(layout: Layout) -> int | None:
    """The pid of the live holder of the pause file (``wsd rebuild``, ``wsd forget``, a large
    ``wsd import``); None when there is no pause file or the process that made it is gone (its flock
    died with it, so a reused pid cannot keep the daemon paused)."""
    path = pause_path(layout)
    text = read_small(path)
    if text is None:
        return None
    try:
        recorded: int | None = int(text.split()[0])
    except (ValueError, IndexError):
        recorded = None
    held = flock_holders(path)
    if held is None:  # no /proc/locks here: the recorded pid is all there is to go on
        return recorded if pid_alive(recorded) else None
    return held[0] if held else None


def pause_requested(layout: Layout) -> bool:
    """True while a live holder has the pause file (a stale one is ignored)."""
    return holder_pid(layout) is not None


def take_pause(layout: Layout, purpose: str = "rebuild") -> int | None:
    """Create the pause file exclusively and lock it (the descriptor, to keep open for the
    whole rebuild or forget); None if another file is there (live or stale: the caller
    decides)."""
    try:
        fd = os.open(pause_path(layout), os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return None
    fcntl.flock(fd, fcntl.LOCK_EX)  # blocking: a reader's probe never makes us fail
    os.write(fd, f"{os.getpid()} {time.time()} {purpose}\n".encode())
    return fd


#: A heartbeat older than this is a daemon that is gone (it beats every 10 s while alive).
STALE = 60.0


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


@contextlib.contextmanager
def paused(
    layout: Layout, purpose: str, seconds: float, say: Callable[[str], None]
) -> Iterator[None]:
    """The daemon paused for the block (see the module): the pause file taken for
    ``purpose``, and a live daemon's acknowledgement waited for."""
    fd = take(layout, purpose)
    try:
        wait_for_daemon(layout, seconds, say, f"wsd {purpose}")
        yield
    finally:
        release(layout, fd)
