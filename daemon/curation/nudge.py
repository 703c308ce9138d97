"""Wake the loop promptly when a hook writes: a file-change nudge, polling as fallback.

A background thread watches ``.os/memory/`` with watchfiles (inotify) and sets
an Event when the transcript database, its WAL or the spool changes. It is a
hint only: the loop still polls, so a missed or dropped event costs at most
one poll interval.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable

import structlog
from watchfiles import Change
from wsd.daemon.runtime import signals

WATCHED = ("transcript.db", "transcript.db-wal", "spool.jsonl")


def is_write(kind: object, path: str) -> bool:
    """A change that means someone wrote: a database file modified, the spool appended.

    Opening and closing a connection creates and deletes the WAL file (and the
    checkpoint-on-close of an empty WAL writes nothing), so only modifications
    of the database files count: a read-only pass never wakes anyone again.
    """
    name = os.path.basename(path)
    if name == "spool.jsonl":
        return kind != Change.deleted
    return name in WATCHED and kind == Change.modified


class Nudger:
    """Sets ``nudge`` on writes to the transcript files until ``stop`` is set."""

    def __init__(self, folder: str, nudge: threading.Event, stop: threading.Event) -> None:
        self.folder = folder
        self.nudge = nudge
        self.stop = stop
        self._thread: threading.Thread | None = None
        self.log = structlog.get_logger("wsd").bind(component="nudge")

    def start(self) -> None:
        self._thread = signals.background(self._run, "wsd-nudge")

    def _relevant(self, changes: Iterable[tuple[object, str]]) -> bool:
        return any(is_write(kind, path) for kind, path in changes)

    def _run(self) -> None:
        # The folder may not exist yet (first boot, or a start-up being retried).
        while not os.path.isdir(self.folder):
            if self.stop.wait(1.0):
                return
        try:
            from watchfiles import watch

            # step: how often the Rust side checks the stop event; 200 ms keeps
            # the idle cost near zero while shutdown stays prompt.
            for changes in watch(
                self.folder,
                stop_event=self.stop,
                debounce=50,
                step=200,
                raise_interrupt=False,
                recursive=False,
            ):
                if self._relevant(changes):
                    self.nudge.set()
        except Exception as exc:
            self.log.warning("nudge_unavailable", error=f"{type(exc).__name__}: {exc}")
