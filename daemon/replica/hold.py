"""Holding litestream off for an erasure.

litestream keeps a read transaction open on each database (so no checkpoint passes what it
has not shipped) and keeps local copies of every changed page (its LTX files, beside the
database). An erasure needs the opposite: its TRUNCATE checkpoint must pass every frame, and
no copy of the erased words may stay on this disk. So every erasure (``pause.no_backup``)
holds ``.os/replica-hold.lock`` (shared: two erasures may run), which makes the daemon's
supervisor stop its litestream (a graceful stop ships what is left first); the erasure waits
for it to be gone, erases, and before it lets go removes litestream's local state of both
databases. The supervisor then starts litestream again with a forced snapshot and retention
enforced (:mod:`.supervisor`): the replica's newest state is the erased one at once, and its
history with the words goes once it is older than the retention.

Nothing of this costs a workspace without replication more than one flock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
from collections.abc import Iterator

from wsd.daemon.replica import litestream
from wsd.daemon.runtime.instance import flock_holders
from wsd.schema.layout import Layout

HOLD = "replica-hold.lock"
#: Where ``wsd restore`` restores before it replaces anything (replica/restore.py).
STAGING = "restore-staging"
#: How long an erasure waits for litestream to stop (its own shutdown sync is bounded at
#: :data:`litestream.SHUTDOWN_SYNC_SECONDS`; the supervisor looks every half second).
STOP_WAIT_SECONDS = 20.0


class StillRunning(RuntimeError):
    """litestream did not stop for an erasure: says which process."""


def hold_path(layout: Layout) -> str:
    return os.path.join(layout.os_dir, HOLD)


def held(layout: Layout) -> bool:
    """Whether an erasure holds litestream off now (read without taking the lock)."""
    return bool(flock_holders(hold_path(layout)))


def running(layout: Layout) -> bool:
    """Whether a litestream process of this workspace runs (it holds its lock file)."""
    return bool(flock_holders(litestream.lock_path(layout)))


def purge_local_state(layout: Layout) -> list[str]:
    """Remove litestream's local state of both databases (its copies of changed pages);
    the folders removed. Only with litestream stopped: it recreates them on start, from a
    fresh snapshot."""
    removed = []
    for path in litestream.databases(layout).values():
        meta = litestream.meta_dir(path)
        if os.path.lexists(meta):
            if os.path.isdir(meta) and not os.path.islink(meta):
                shutil.rmtree(meta, ignore_errors=True)
            else:
                os.unlink(meta)
            removed.append(meta)
    return removed


@contextlib.contextmanager
def quiet(layout: Layout, wait: float = STOP_WAIT_SECONDS) -> Iterator[None]:
    """litestream stopped for the block, and its local state gone when the block ends (see
    the module). :class:`StillRunning` if it does not stop within ``wait`` seconds."""
    os.makedirs(layout.os_dir, exist_ok=True)
    fd = os.open(hold_path(layout), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        deadline = time.monotonic() + wait
        asked = 0.0
        while running(layout):
            # Asked directly as well as through the daemon's supervisor: a litestream left
            # by a daemon killed with -9 has no supervisor to stop it.
            if time.monotonic() - asked > 1.0:
                litestream.terminate(layout)
                asked = time.monotonic()
            if time.monotonic() > deadline:
                pids = flock_holders(litestream.lock_path(layout)) or []
                raise StillRunning(
                    f"litestream ({', '.join(map(str, pids)) or 'a process'}) did not stop"
                    f" within {wait:.0f}s: is the daemon running? (its supervisor stops it)"
                )
            time.sleep(0.1)
        try:
            yield
        finally:
            purge_local_state(layout)
            # A wsd restore killed midway left the person's words in its staging folder,
            # where no erasure looks: gone with the rest (a restore running now fails
            # safely, having replaced nothing).
            shutil.rmtree(os.path.join(layout.os_dir, STAGING), ignore_errors=True)
    finally:
        os.close(fd)
