"""An erasure and the copies of the memory: no ``wsd backup`` and no litestream while words
are erased.

One lock (``.os/memory/backup.lock``) is held exclusively by a running ``wsd backup`` and
shared by every erasure, whoever runs it (``wsd forget``, the daemon finishing one or
answering a person's "forget X", the transcript retention): so every backup is either
recorded before the erasure looks for backups, or copied after it. The erasure also holds
litestream off and leaves no local copy of its pages (:mod:`wsd.daemon.replica.hold`).
``wsd forget`` takes both with the daemon paused (:func:`erasing`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator

from wsd.daemon.replica import hold
from wsd.daemon.runtime import pause
from wsd.daemon.runtime.instance import flock_holders
from wsd.daemon.runtime.pause import PauseRefused
from wsd.schema.layout import Layout

#: Held (flock) by a running ``wsd backup`` (exclusive) and by every erasure (shared): a
#: forget during a copy would erase the live copy while the backup copies it, and look for
#: backups before this one was recorded.
BACKUP_LOCK = "backup.lock"


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
        if pause.pause_requested(layout) and pause.holder(layout) == "forget":
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
def erasing(layout: Layout, seconds: float, say: Callable[[str], None]) -> Iterator[None]:
    """``wsd forget``'s block: the daemon paused (the pause file taken for ``forget``), no
    backup or litestream copying (:func:`no_backup`), then the daemon's acknowledgement."""
    fd = pause.take(layout, "forget")
    try:
        with no_backup(layout):
            pause.wait_for_daemon(layout, seconds, say, "wsd forget")
            yield
    finally:
        pause.release(layout, fd)
