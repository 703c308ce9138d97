"""The heartbeat file ``wsd status`` reads: what the running daemon is doing.

A small JSON document in ``.os/memory/daemon.status.json``, rewritten
atomically at most once per heartbeat interval (or at once on a change of
state), so an operator can tell a live daemon from a stuck or dead one
without a socket or a database write on every pass.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any

from wsd.daemon.runtime.fsio import atomic_write, overwrite_in_place, read_small
from wsd.schema.layout import Layout

STATUS_NAME = "daemon.status.json"
HEARTBEAT_SECONDS = 10.0


class State(StrEnum):
    """What the daemon is doing, as its heartbeat says. The file holds the values; ``wsd
    status``, ``wsd doctor`` and ``wsd rebuild`` compare them with these members."""

    STARTING = "starting"  # the process began; the loop has not started yet
    RUNNING = "running"  # started (migrated, md files repaired), before its first pass
    IDLE = "idle"  # nothing to curate now: none pending, or waiting for a trigger
    PAUSED = "paused"  # staying out of memory.db while `wsd rebuild` swaps it
    CURATING = "curating"  # a direct call to the curator is in flight
    AWAITING = "awaiting"  # turns wait for a Message Batch's result
    BACKOFF = "backoff"  # the Bridge failed: waiting before the next try
    BUDGET = "budget"  # today's spend reached WSD_DAILY_BUDGET_USD: turns wait
    # The last pass failed (a full disk, a database it cannot open: last_error says what);
    # it was "idle" from the pass before, which hid a daemon failing every pass (issue 45).
    FAILING = "failing"
    REEXEC = "reexec"  # re-executing itself in place to give memory back
    STOPPED = "stopped"  # the process ended cleanly


def status_path(layout: Layout) -> str:
    return os.path.join(layout.memory_dir, STATUS_NAME)


class StatusFile:
    """Accumulates counters and state; writes them out on a heartbeat."""

    def __init__(
        self,
        layout: Layout,
        clock: Callable[[], float],
        every: float = HEARTBEAT_SECONDS,
        *,
        writes: bool = True,
    ) -> None:
        #: None: kept in memory only. A one-off command curating beside the daemon (``wsd
        #: retry``) must not put its own pid in the daemon's heartbeat: it did, and once it
        #: exited, status, doctor and the deployed settings all took the daemon for gone.
        self.path = status_path(layout) if writes else None
        #: The previous process's last heartbeat, read before this one writes any (what it
        #: was paused by, what it had spent today). Read later, after the entry point's first
        #: update, it was this process's own: a restart under supervisord forgot both.
        self.previous: dict[str, Any] = read_status(layout) or {}
        self.clock = clock
        self.every = every
        self.data: dict[str, Any] = {
            "pid": os.getpid(),
            "started_at": clock(),
            "state": State.STARTING,
            "counters": {},
        }
        self._written = 0.0

    def count(self, **increments: int) -> None:
        counters = self.data["counters"]
        for key, value in increments.items():
            counters[key] = counters.get(key, 0) + value

    def update(self, force: bool = False, **fields: Any) -> None:
        """Merge ``fields``; write them out if forced or the heartbeat is due."""
        self.data.update(fields)
        now = self.clock()
        if self.path is not None and (force or now - self._written >= self.every):
            self.data["heartbeat_at"] = now
            text = json.dumps(self.data, default=str) + "\n"
            try:
                atomic_write(self.path, text, durable=False)
                self._written = now
            except OSError as exc:
                # A full disk must not stop curation, nor stop the heartbeat saying so.
                if exc.errno in (errno.ENOSPC, errno.EDQUOT) and overwrite_in_place(
                    self.path, text
                ):
                    self._written = now


def read_status(layout: Layout) -> dict[str, Any] | None:
    """The last heartbeat written, or None if there is none (daemon never ran)."""
    try:
        data = json.loads(read_small(status_path(layout)) or "null")
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def pid_alive(pid: object) -> bool:
    """Whether a process with this pid exists and is not a zombie (one we may not signal
    counts as alive). A zombie is a process killed whose parent has not reaped it (issue 45:
    after kill -9 under a PID 1 that does not reap, doctor said "ok daemon: pid …")."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read(4096)
    except OSError:
        return True  # no /proc here: the signal's answer stands
    # "pid (comm) S ...": the state follows the last ")" (a comm may hold one).
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] != b"Z"


def daemon_running(layout: Layout, stale: float = 60.0) -> bool:
    """Whether a live daemon beats in this workspace: its pid alive, not stopped, and a
    heartbeat younger than ``stale`` seconds (it beats every 10 s)."""
    import time

    return beats(read_status(layout), time.time(), stale)


def beats(beat: Mapping[str, Any] | None, now: float, stale: float = 60.0) -> bool:
    """Whether the heartbeat ``beat`` (as read at ``now``) is a live daemon's: see
    :func:`daemon_running`."""
    if beat is None or beat.get("state") == State.STOPPED or not pid_alive(beat.get("pid")):
        return False
    try:
        return now - float(beat.get("heartbeat_at") or 0) < stale
    except (TypeError, ValueError):
        return False


def package_version() -> str:
    """The installed workspace-daemon's version (what runs, whatever .os/VERSION says)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("workspace-daemon")
    except PackageNotFoundError:
        return "unknown"
