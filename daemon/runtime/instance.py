"""One daemon per workspace: an exclusive lock on ``.os/wsd.lock``, held for the process's life.

Two ``wsd run`` on one workspace would both curate: every batch sent twice, the cost doubled,
the ledger recording half. So ``wsd run`` takes ``flock(LOCK_EX|LOCK_NB)`` on the lock file
before anything else and keeps the descriptor open until it exits; the kernel releases the
lock when the process dies, however it dies, so there is never a stale lock to clean up. A
second ``wsd run`` exits non-zero at once with one line naming the holder (supervisord shows
it in the program's log).

The daemon re-executes itself in place to give memory back (``os.execv``, same pid). The
lock lives on the open file description, so the descriptor is made inheritable and its
number left in :data:`LOCK_FD_ENV`: the new image adopts it instead of taking a second
lock that would conflict with its own.

:func:`holders` lets ``wsd doctor`` see who holds the lock without touching it (a probe that
took the lock, even briefly, could make a daemon starting at that moment exit).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Mapping
from typing import Any

from wsd.daemon.runtime.fsio import read_small
from wsd.schema.layout import DEFAULT_WORKSPACE, Layout

LOCK_NAME = "wsd.lock"
#: The descriptor number of a lock inherited across the daemon's re-exec.
LOCK_FD_ENV = "WSD_LOCK_FD"


class AlreadyRunning(RuntimeError):
    """Another process holds this workspace's instance lock (the message names it)."""


def lock_path(layout: Layout) -> str:
    return os.path.join(layout.os_dir, LOCK_NAME)


def _same_file(fd: int, path: str) -> bool:
    try:
        mine, theirs = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino)


def _inherited(env: Mapping[str, str], path: str) -> int | None:
    raw = env.get(LOCK_FD_ENV, "")
    if not raw.isdigit() or not _same_file(int(raw), path):
        return None
    return int(raw)


def acquire(layout: Layout, env: Mapping[str, str]) -> int:
    """Take (or, after a re-exec, adopt) the instance lock; its descriptor, kept open.

    Raises :class:`AlreadyRunning` when another process holds it.
    """
    layout.ensure_system_dirs()
    path = lock_path(layout)
    fd = _inherited(env, path)
    if fd is None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        held_by: list[int | None] = [*holders(layout)] or [_recorded_pid(path)]
        who = ", ".join(f"pid {p}" for p in held_by if p) or "another process"
        raise AlreadyRunning(
            f"another wsd run ({who}) already runs on {layout.root} (it holds {path});"
            " this one exits"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    os.set_inheritable(fd, True)  # survives the memory-shedding execv, adopted by the new image
    os.environ[LOCK_FD_ENV] = str(fd)
    return fd


def hold(layout: Layout, env: Mapping[str, str], stop: threading.Event, log: Any) -> bool:
    """:func:`acquire`, retried while the workspace cannot be opened yet (a volume still
    mounting: supervisord gives up on a program that keeps dying); False if ``stop`` came
    first. :class:`AlreadyRunning` is not retried."""
    delay = 1.0
    while True:  # at least once: a stop already pending still gets its clean "stopped"
        try:
            acquire(layout, env)
            return True
        except AlreadyRunning:
            raise
        except OSError as exc:
            if stop.is_set():
                return False
            log.warning("start_retry", error=f"{type(exc).__name__}: {exc}", delay=delay)
            stop.wait(delay)
            delay = min(delay * 2, 60.0)


def _recorded_pid(path: str) -> int | None:
    with contextlib.suppress(ValueError, IndexError):
        return int((read_small(path) or "").split()[0])
    return None


def holders(layout: Layout) -> list[int]:
    """Pids holding the instance lock (empty if none, or where ``/proc/locks`` is unreadable)."""
    return flock_holders(lock_path(layout)) or []


def flock_holders(path: str, exclusive_only: bool = False) -> list[int] | None:
    """Pids holding a flock on ``path`` (only an exclusive one with ``exclusive_only``), read
    from ``/proc/locks`` without touching the lock (a probe that took it, even briefly, could
    make its owner's own attempt fail); None when ``/proc/locks`` cannot be read, [] when the
    file is missing or nobody holds it."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    found = []
    for line in lines:
        parts = line.split()
        # "1: FLOCK  ADVISORY  WRITE 4711 00:2a:123456 0 EOF" ("->" marks a waiter)
        if "->" in parts or "FLOCK" not in parts or len(parts) < 6:
            continue
        pid, where = parts[4], parts[5]
        if exclusive_only and parts[3] != "WRITE":
            continue
        if where == want and pid.isdigit():
            found.append(int(pid))
    return sorted(set(found))


def wsd_runs(root: str) -> list[int]:
    """Pids of ``wsd run`` processes whose workspace is ``root`` (those we may inspect): a
    daemon still starting (importing, no lock or heartbeat yet) is one of them."""
    found = []
    for pid in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
            if b"run" not in argv or not any(a.endswith(b"wsd") for a in argv):
                continue
            with open(f"/proc/{pid}/environ", "rb") as fh:
                environ = fh.read().split(b"\0")
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        workspace = next(
            (e.split(b"=", 1)[1].decode() for e in environ if e.startswith(b"WSD_WORKSPACE=")),
            None,
        )
        if _workspace_of(argv, workspace, cwd) == os.path.realpath(root):
            found.append(int(pid))
    return found


def _workspace_of(argv: list[bytes], workspace: str | None, cwd: str) -> str:
    args = [a.decode(errors="replace") for a in argv]
    for i, arg in enumerate(args[:-1]):
        if arg == "--workspace":
            workspace = args[i + 1]
    return os.path.realpath(os.path.join(cwd, workspace or DEFAULT_WORKSPACE))
