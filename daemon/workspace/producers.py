"""The watchfiles threads that feed the watcher: where to watch, and the polling fallback.

One producer watches the workspace root and ``.os/memory/`` (not recursive), one each
top-level user folder (recursive). A producer only queues what it sees; on a write to the
transcript database or the spool it also sets the loop's ``nudge`` at once (this is the one
watch of ``.os/memory/``). A producer that fails queues the failure; the watcher then
switches every producer to polling (:meth:`Producers.fall_back`).
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from watchfiles import Change

from wsd.daemon.runtime import signals
from wsd.daemon.runtime.config import (
    DEFAULT_CHECK_SECONDS,
    DEFAULT_RESCAN_SECONDS,
    DEFAULT_WATCH_POLL_MS,
)
from wsd.daemon.runtime.pause import PAUSE_NAME
from wsd.daemon.workspace.inventory import is_noise
from wsd.schema.layout import Layout

#: Files of ``.os/memory/`` whose writes mean new turns: the loop is nudged (and by the
#: pause file's creation: a rebuild or a forget waits for the loop to pause).
TRANSCRIPT_FILES = ("transcript.db", "transcript.db-wal", "spool.jsonl")


def is_write(kind: object, path: str) -> bool:
    """A change that means someone wrote: a database file modified, the spool appended.

    Opening and closing a connection creates and deletes the WAL file (and the
    checkpoint-on-close of an empty WAL writes nothing), so a read-only pass must
    never wake anyone: a modification counts, and so does an "added" file that
    already holds data, because watchfiles reports a file created and written in
    one debounce window as added only (a hook's first write after the daemon's
    connections closed the WAL arrived like that: the canvas mirror then waited
    for its 30 s safety poll, seen 2 runs in 40 under load).
    """
    name = os.path.basename(path)
    if name == "spool.jsonl":
        return kind != Change.deleted
    if name == PAUSE_NAME:
        # A rebuild or a forget asked the loop to pause: it looks now, not at its next poll
        # (the forget waited up to a poll's seconds for the acknowledgement).
        return kind == Change.added
    if name not in TRANSCRIPT_FILES:
        return False
    if kind == Change.added:
        with contextlib.suppress(OSError):
            return os.lstat(path).st_size > 0
        return False
    return kind == Change.modified


def watch_limit() -> int | None:
    """The inotify watch limit that applies here (the smallest readable), if any."""
    found = []
    for path in ("/proc/sys/fs/inotify/max_user_watches", "/proc/sys/user/max_inotify_watches"):
        with contextlib.suppress(OSError, ValueError), open(path) as fh:
            found.append(int(fh.read().strip()))
    return min(found) if found else None


class _AnyOf:
    """A stop event for watchfiles (it only calls ``is_set``): set when any of these is."""

    def __init__(self, *events: threading.Event) -> None:
        self.events = events

    def is_set(self) -> bool:
        return any(e.is_set() for e in self.events)


@dataclass(frozen=True)
class WatchSettings:
    """Tunables (the daemon's Config supplies them; defaults suit a Sprite)."""

    watch: bool = True
    watch_polling: bool = False
    watch_poll_ms: int = DEFAULT_WATCH_POLL_MS
    rescan_seconds: float = DEFAULT_RESCAN_SECONDS
    check_seconds: float = DEFAULT_CHECK_SECONDS
    canvas_poll_seconds: float = 2.0
    debounce_ms: int = 200
    #: How often the Rust side checks for stop: each check takes the GIL, so keep it rare.
    step_ms: int = 200
    tick_seconds: float = 1.0
    #: Switch to polling when our folders use this share of the inotify watch limit.
    watch_limit_share: float = 0.9


class Producers:
    """The running producer threads, by top-level folder ("" is the root)."""

    def __init__(
        self,
        layout: Layout,
        settings: WatchSettings,
        out: queue.Queue[tuple[str, str, Any]],
        stop: threading.Event,
        nudge: threading.Event | None,
        monotonic: Callable[[], float],
    ) -> None:
        self.layout = layout
        self.settings = settings
        self.out = out
        self.stop = stop
        self.nudge = nudge
        self.monotonic = monotonic
        self.polling = settings.watch_polling
        self._running: dict[str, tuple[threading.Thread, threading.Event]] = {}

    def watching(self, name: str) -> bool:
        return name in self._running

    def fall_back(self) -> None:
        """Stop every producer; the next :meth:`sync` starts them again, polling."""
        self.polling = True
        self.halt()
        self._running.clear()

    def halt(self) -> None:
        for _thread, halt in self._running.values():
            halt.set()

    def join(self, timeout: float | None = None) -> None:
        for thread, _halt in list(self._running.values()):
            thread.join(timeout)

    def sync(self) -> None:
        """One producer for the root (+ .os/memory) and one per top-level folder, no more."""
        if not self.settings.watch or self.stop.is_set():
            return
        root = self.layout.root
        wanted = {"": [root, self.layout.memory_dir]}
        with contextlib.suppress(OSError), os.scandir(root) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False) and not is_noise(e.name):
                    wanted[e.name] = [e.path]
        for name in list(self._running):
            if name not in wanted:
                self._running.pop(name)[1].set()
        started = []
        for name, paths in wanted.items():
            if name not in self._running:
                paths = [p for p in paths if os.path.isdir(p)]
                halt, ready = threading.Event(), threading.Event()
                thread = signals.background(
                    self._produce,
                    f"wsd-watch-{name or 'root'}"[:40],
                    name or "/",
                    paths,
                    bool(name),
                    halt,
                    ready,
                )
                self._running[name] = (thread, halt)
                started.append(ready)
        deadline = self.monotonic() + 10.0  # a huge tree takes a while to watch
        for ready in started:
            ready.wait(max(0.0, deadline - self.monotonic()))

    def _produce(
        self,
        name: str,
        paths: list[str],
        recursive: bool,
        halt: threading.Event,
        ready: threading.Event,
    ) -> None:
        """Queue what watchfiles reports; ``ready`` is set once the watches are in place."""
        # RustNotify (what watchfiles.watch wraps) sets its watches up in the constructor,
        # which is the only way to know when changes start to be seen.
        from watchfiles._rust_notify import RustNotify

        s, stop, polling = self.settings, _AnyOf(halt, self.stop), self.polling
        # ignore_permission_denied=True would also swallow "watch limit reached" (and the
        # folders past it would silently go unwatched): only the polling fallback uses it.
        try:
            with RustNotify(paths, False, polling, s.watch_poll_ms, recursive, polling) as notify:
                ready.set()
                while not stop.is_set():
                    raw = notify.watch(s.debounce_ms, s.step_ms, 1000, stop)
                    if isinstance(raw, set) and raw:
                        if self.nudge is not None and any(is_write(c, p) for c, p in raw):
                            self.nudge.set()  # at once, from this thread: the loop waits on it
                        self.out.put(("changes", name, raw))
        except Exception as exc:
            if not stop.is_set():
                self.out.put(("failed", name, exc))
        finally:
            ready.set()
