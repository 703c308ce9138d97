"""The workspace watcher: an exact file index, files.md's inventory, checks and canvas sync.

Threads, so the curator loop never waits on the disk: one *consumer* thread
owns the in-memory index and does all the work; *producer* threads only run
watchfiles (one for the workspace root and ``.os/memory/``, not recursive; one
per top-level user folder, recursive) and queue what they see.

Events are hints, not truth: inotify drops events on overflow, silently stops
adding watches past the watch limit, and sees nothing while the VM is frozen.
So every event is checked against the disk (``lstat``), and the whole index is
reconciled by a full rescan at start, after a wake (:meth:`Watcher.wake`, or a
clock jump noticed here), and every ``rescan_seconds``. A producer that fails
(no inotify, watch limit reached) is restarted in polling mode; so is every
producer when the folder count nears the watch limit, or when a periodic rescan
finds changes older than the event latency that no event reported.

What is never indexed is :func:`wsd.daemon.workspace.inventory.is_noise`. After every batch
of changes files.md's inventory is re-rendered (before the index is persisted:
freshness first) and the index rows are written to memory.db in one
transaction; so it is when files.md's notes change (a batch, a hand edit).

The root producer is also the one watch of ``.os/memory/``: a write to the transcript
database or the spool sets the loop's ``nudge`` (so it curates without waiting for its
poll) and triggers the canvas sync. The watcher does not detect sleep itself: the loop
does, and calls :meth:`Watcher.wake`.
"""

from __future__ import annotations

import contextlib
import os
import queue
import stat
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from wsd.daemon.memory.md import files_md
from wsd.daemon.runtime import signals
from wsd.daemon.runtime.log import ErrorThrottle, get_logger
from wsd.daemon.runtime.pause import pause_requested
from wsd.daemon.store import Store
from wsd.daemon.workspace.canvas import CanvasSync, CanvasTools
from wsd.daemon.workspace.checks import Checks, CheckSettings
from wsd.daemon.workspace.inventory import Tree, diff, is_noise, render_inventory, scan
from wsd.daemon.workspace.producers import Producers, WatchSettings, is_write, watch_limit
from wsd.daemon.workspace.unnamed import Unnamed

__all__ = ["WatchSettings", "Watcher", "workspace_watcher"]
from wsd.schema.layout import Layout


class Watcher:
    """Keeps the index, files.md's inventory, the checks and the canvas mirror current."""

    def __init__(
        self,
        layout: Layout,
        stop: threading.Event,
        settings: WatchSettings | None = None,
        *,
        store: Store | None = None,
        canvas: CanvasSync | None = None,
        checks: Checks | None = None,
        nudge: threading.Event | None = None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.layout = layout
        self.root = layout.root
        self.stop = stop
        self.settings = settings or WatchSettings()
        self.store = store or Store(layout)
        self.canvas = canvas
        self.checks = checks
        self.clock, self.monotonic = clock, monotonic
        self.log = get_logger(component="watcher")
        self.throttle = ErrorThrottle()
        self.tree: Tree = {}
        # Files whose names a forget took: neither listed nor indexed (unnamed.py).
        self.unnamed = Unnamed()
        self.rescans = 0
        self._queue: queue.Queue[tuple[str, str, Any]] = queue.Queue()
        self.producers = Producers(layout, self.settings, self._queue, stop, nudge, monotonic)
        # Index changes not yet written to memory.db: path -> (size, mtime_ns), and removals.
        self._upserts: dict[str, tuple[int, int]] = {}
        self._removed: set[str] = set()
        # files.md as last seen (size, mtime) and the notes the inventory was rendered under.
        self._files_md_stat: tuple[int, int] | None = None
        self._notes: str | None = None
        # The last render failed: retried every step until it is written (waiting for files.md
        # to change would leave it without its inventory until the next rescan).
        self._render_failed = False
        self._rescan_reason: str | None = "start"
        self._due = {"rescan": 0.0, "checks": 0.0, "canvas": 0.0}
        self._thread: threading.Thread | None = None
        self._started = False  # set before the thread starts: it may run before start() returns
        self.ready = threading.Event()  # set after the first full rescan is on disk

    # -- public entry points --------------------------------------------------------------

    def start(self) -> None:
        """Start the consumer thread; it starts the producers, then runs the first rescan."""
        self._started = True
        self._thread = signals.background(self._run, "wsd-watcher")

    def rescan(self, reason: str = "manual") -> None:
        """Reconcile the index with the disk now, in the calling thread (tests, tools).

        Only for a watcher that was not started: the started one does this itself.
        """
        self._full_rescan(reason)

    def wake(self) -> None:
        """The VM slept (the worker's on_wake): events were lost, rescan everything."""
        self._queue.put(("rescan", "wake", None))

    def join(self, timeout: float | None = None) -> None:
        """Wait for the threads to end (after ``stop`` is set)."""
        if self._thread is not None:
            self._thread.join(timeout)
        self.producers.join(timeout)

    # -- the consumer -----------------------------------------------------------------------

    def _run(self) -> None:
        while not self.store.ready():  # the worker migrates memory.db at start-up
            if self.stop.wait(0.5):
                return
        try:
            while not self.stop.is_set():
                try:
                    self.step()
                except Exception as exc:
                    suppressed = self.throttle.failed("step", self.clock())
                    if suppressed is not None:
                        self.log.error("watcher_failed", error=repr(exc)[:300], exc_info=True)
                    self.stop.wait(1.0)
        finally:
            self.producers.halt()

    def step(self) -> None:
        """One round: wait for events (one tick at most), apply them, run what is due."""
        s = self.settings
        items = []
        with contextlib.suppress(queue.Empty):
            items.append(self._queue.get(timeout=0 if self._rescan_reason else s.tick_seconds))
        while True:
            with contextlib.suppress(queue.Empty):
                items.append(self._queue.get_nowait())
                continue
            break
        canvas_now = False
        rels: set[str] = set()
        for kind, name, payload in items:
            if kind == "changes":
                canvas_now |= self._paths_of(payload, rels)
            elif kind == "rescan":
                self._rescan_reason = self._rescan_reason or str(name)
            elif kind == "failed":
                self._fallback(name, payload)
        self._refresh(sorted(rels))
        now = self.monotonic()
        if self._rescan_reason or now >= self._due["rescan"]:
            self._full_rescan(self._rescan_reason or "periodic")
        # A `wsd rebuild` is about to replace memory.db: write nothing there until it is done
        # (index changes wait in memory; the card mirror and the checks wait their turn).
        paused = pause_requested(self.layout)
        if paused:
            canvas_now = False
            self._due["canvas"] = self._due["checks"] = now
        if self.canvas is not None and not paused and (canvas_now or now >= self._due["canvas"]):
            # With events, transcript writes trigger the sync: the poll is only a safety net.
            every = s.canvas_poll_seconds * (1 if self.producers.polling or not s.watch else 15)
            self._due["canvas"] = now + every
            self._refresh(self.canvas.sync())
        if self._render_failed or self._notes_changed():
            self._render()
        self._flush()
        if self.checks is not None and not paused and now >= self._due["checks"]:
            report = self.checks.run()
            self._due["checks"] = now + (1.0 if report.hashes_pending else s.check_seconds)

    def _paths_of(self, changes: Iterable[tuple[Any, str]], rels: set[str]) -> bool:
        """Collect the workspace paths of one batch of events; True if transcript.db changed."""
        canvas = False
        for change, path in changes:
            rel = os.path.relpath(path, self.root).replace(os.sep, "/")
            if rel.startswith(".os/memory/"):
                canvas = canvas or is_write(change, path)
            elif not rel.startswith("..") and rel != "." and not is_noise(rel):
                rels.add(rel)
        return canvas

    def _refresh(self, rels: Iterable[str]) -> None:
        """Re-read these paths from the disk (events only say *where* to look)."""
        changed = False
        rescanned: set[str] = set()
        for rel in rels:
            d, _, name = rel.rpartition("/")
            parts = rel.split("/")
            if any("/".join(parts[:i]) in rescanned for i in range(1, len(parts))):
                continue  # inside a folder read whole in this batch already
            try:
                st = os.lstat(os.path.join(self.root, rel))
            except OSError:
                st = None
            if st is not None and stat.S_ISDIR(st.st_mode):
                self._rescan_subtree(rel)
                rescanned.add(rel)
                changed = True
                continue
            value = (st.st_size, st.st_mtime_ns) if st and stat.S_ISREG(st.st_mode) else None
            files = self.tree.get(d, {})
            if files.get(name) == value:
                if value is None:  # not a file: maybe a folder that went away
                    changed |= self._drop_subtree(rel)
                continue
            changed = True
            if value is None:
                files.pop(name, None)
                self._record(([], [rel]))
                if not files:
                    self.tree.pop(d, None)
            else:
                self.tree.setdefault(d, files)[name] = value
                self._record(([(rel, *value)], []))
        if changed:
            self._render()

    def _drop_subtree(self, rel: str) -> bool:
        doomed = [d for d in self.tree if d == rel or d.startswith(rel + "/")]
        for d in doomed:
            self._record(diff({d: self.tree.pop(d)}, {}))
        if "/" not in rel and self.producers.watching(rel):
            self._sync_producers()
        return bool(doomed)

    def _rescan_subtree(self, rel: str) -> None:
        if "/" not in rel:  # a new top-level folder: watch it first, then read it
            self._sync_producers()
        new, _ = scan(self.root, rel)
        old = {d: f for d, f in self.tree.items() if d == rel or d.startswith(rel + "/")}
        self._record(diff(old, new))
        for d in old:
            del self.tree[d]
        self.tree.update(new)

    def _record(self, delta: tuple[list[tuple[str, int, int]], list[str]]) -> None:
        upserts, removed = delta
        for path, size, mtime in upserts:
            self._upserts[path] = (size, mtime)
            self._removed.discard(path)
        for path in removed:
            self._removed.add(path)
            self._upserts.pop(path, None)

    def _full_rescan(self, reason: str) -> None:
        """Reconcile the whole index with the disk (and memory.db with both).

        Watches are (re)started before the disk is read, so a change during the
        scan is seen by one or the other; a fallback decided here (missed events,
        watch limit) leaves a rescan pending, to run under the new producers.
        """
        self._rescan_reason = None
        try:
            self._reconcile(reason)
        except BaseException:
            self._rescan_reason = self._rescan_reason or reason  # not lost: retried next step
            raise

    def _reconcile(self, reason: str) -> None:
        started, wall = self.monotonic(), self.clock()
        self._sync_producers()
        if not self.tree and not self.rescans:  # first time: start from what memory.db holds
            for path, size, mtime in self.store.workspace.index_rows():
                d, _, name = path.rpartition("/")
                self.tree.setdefault(d, {})[name] = (size, mtime)
        new, folders = scan(self.root)
        ups, gone = diff(self.tree, new)
        if reason == "periodic" and not self.producers.polling and self._missed(ups, wall):
            self.log.warning("watch_events_missed", changes=len(ups) + len(gone))
            self._fallback("all", "changes found that no event reported")
        self.tree = new
        self._record((ups, gone))
        self.rescans += 1
        self._due["rescan"] = self.monotonic() + self.settings.rescan_seconds
        self._render()
        self._flush()
        self.log.info(
            "workspace_rescan",
            reason=reason,
            files=sum(len(f) for f in new.values()),
            changed=len(ups),
            removed=len(gone),
            seconds=round(self.monotonic() - started, 3),
        )
        limit = watch_limit()
        if (
            not self.producers.polling
            and limit
            and folders > limit * self.settings.watch_limit_share
        ):
            self._fallback("all", f"{folders} folders, near the inotify watch limit ({limit})")
        self.ready.set()

    def _missed(self, ups: list[tuple[str, int, int]], wall: float) -> bool:
        """True if a change the rescan found is older than any event could still be."""
        grace = 2.0 + self.settings.debounce_ms / 1000
        for path, _size, _mtime in ups[:50]:
            with contextlib.suppress(OSError):
                if os.lstat(os.path.join(self.root, path)).st_ctime < wall - grace:
                    return True
        return False

    def _render(self) -> None:
        """Re-render files.md's inventory. A files.md that cannot be written (a FIFO or a
        link in its place, disk full) is logged (rate-limited): the index is still kept."""
        try:
            self.unnamed.refresh(self.store)
            listed = self.unnamed.tree(self.tree)
            self._notes = files_md.write_inventory(
                self.layout.md("files.md"), lambda budget: render_inventory(listed, budget)
            )
        except OSError as exc:
            self._render_failed = True
            suppressed = self.throttle.failed("files_md", self.clock())
            if suppressed is not None:
                self.log.error("files_md_write_failed", error=str(exc)[:300], suppressed=suppressed)
        else:
            self._render_failed = False
            if self.throttle.recovered("files_md") is not None:
                self.log.info("files_md_write_recovered")
        self._files_md_stat = self._stat_files_md()

    def _stat_files_md(self) -> tuple[int, int] | None:
        with contextlib.suppress(OSError):
            st = os.lstat(self.layout.md("files.md"))
            return st.st_size, st.st_mtime_ns
        return None

    def _notes_changed(self) -> bool:
        """True if files.md's notes differ from those the inventory was rendered under.

        One lstat per step, a read only when the file changed: a batch's notes (or a hand
        edit) get an inventory sized to them within a tick, with or without events.
        """
        seen = self._stat_files_md()
        if seen == self._files_md_stat:
            return False
        self._files_md_stat = seen
        try:
            return files_md.notes_of(files_md.read(self.layout.md("files.md"))) != self._notes
        except OSError:  # not a regular file: _render says so (rate-limited)
            return True

    def _sync_producers(self) -> None:
        if self._started:  # only a started watcher has producers
            self.producers.sync()

    def _fallback(self, name: str, why: object) -> None:
        """A watch failed (or cannot be trusted): poll from now on, and rescan for what was lost."""
        if not self.producers.polling:
            self.log.warning("watch_fallback_polling", watch=name, reason=str(why)[:300])
        self.producers.fall_back()
        self._rescan_reason = self._rescan_reason or "fallback"

    def _flush(self) -> None:
        """Persist the pending index changes; on failure (or while a rebuild holds memory.db)
        they stay pending for the next round."""
        if (not self._upserts and not self._removed) or pause_requested(self.layout):
            return
        self.unnamed.refresh(self.store)
        upserts = [(p, s, t) for p, (s, t) in self._upserts.items() if not self.unnamed.hides(p)]
        self.store.workspace.apply_index(upserts, sorted(self._removed), self.clock())
        self._upserts.clear()
        self._removed.clear()


def workspace_watcher(
    layout: Layout,
    stop: threading.Event,
    settings: WatchSettings | None = None,
    checks: CheckSettings | None = None,
    tools: CanvasTools | None = None,
    nudge: threading.Event | None = None,
) -> Watcher:
    """The daemon's watcher, wired: index + files.md, the checks, the canvas mirror, and the
    loop's ``nudge`` set on every transcript write."""
    store = Store(layout)
    return Watcher(
        layout,
        stop,
        settings,
        store=store,
        canvas=CanvasSync(layout.root, store, tools),
        checks=Checks(layout.root, store, checks),
        nudge=nudge,
    )
