"""The daemon's loop: ``run()`` is ``while not stopped: run_once()``.

Each pass ingests the spool, closes turns whose agent never sent ``Stop``, then decides
whether to curate (batch threshold, flush request, or idle) and curates at most one batch,
so a test can drive it one step at a time and a SIGTERM never waits for more than one batch.
Nothing is held between passes: no database connection, no HTTP connection once drained.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import apsw

from wsd.daemon.curation.bridge import outage, spend
from wsd.daemon.curation.bridge.client import BridgeClient, Outage, Shutdown
from wsd.daemon.curation.bridge.outage import Backoff
from wsd.daemon.curation.bridge.spend import Budget
from wsd.daemon.curation.economy.lane import Economy
from wsd.daemon.curation.loop import trigger as lanes
from wsd.daemon.curation.loop.after_commit import Bookkeeper
from wsd.daemon.curation.loop.failures import Failures
from wsd.daemon.curation.loop.intake import SpoolIntake
from wsd.daemon.curation.loop.outcome import STATE_AFTER, PassResult, Step
from wsd.daemon.curation.loop.shedding import MemoryShedder
from wsd.daemon.curation.loop.wake import WakeDetector
from wsd.daemon.curation.pipeline import Pipeline
from wsd.daemon.curation.request.batch import Batch, NoBatch
from wsd.daemon.memory.forget import erase as forgetting
from wsd.daemon.memory.forget import hold
from wsd.daemon.memory.forget import requests as forget_requests
from wsd.daemon.memory.md.sync import MdSync
from wsd.daemon.runtime.config import Config
from wsd.daemon.runtime.fsio import read_small
from wsd.daemon.runtime.heartbeat import State, StatusFile, package_version
from wsd.daemon.runtime.pause import PauseRefused, pause_requested
from wsd.daemon.store import INDEX_BATCH, Lane, Maintenance, Store
from wsd.schema.layout import Layout


@dataclass(eq=False)
class Worker:
    """Turns captured turns into memory. Its collaborators are built by the entry point
    (:mod:`wsd.daemon.ops.wiring`) and handed in here, once: the worker only runs the loop."""

    config: Config
    store: Store
    bridge: BridgeClient
    stop: threading.Event
    log: Any
    status: StatusFile
    failures: Failures
    backoff: Backoff
    wake: WakeDetector
    maintenance: Maintenance
    md: MdSync
    intake: SpoolIntake
    shedder: MemoryShedder
    budget: Budget
    pipeline: Pipeline
    economy: Economy
    book: Bookkeeper
    clock: Callable[[], float] = time.time
    monotonic: Callable[[], float] = time.monotonic
    #: Set to end the wait between passes early (the watcher: a flush was asked for).
    nudge: threading.Event = field(default_factory=threading.Event)
    #: Called when the VM woke (events may have been lost: the watcher rescans).
    on_wake: Sequence[Callable[[], Any]] = ()
    #: Work done after each pass (embedding new memories); True means more is waiting.
    after_pass: Sequence[Callable[[PassResult], bool]] = ()
    #: Called after every pass, a paused or failed one too (the metrics file); must not raise.
    reporters: Sequence[Callable[[PassResult], None]] = ()
    identity: str = field(default="", init=False)
    version: str = field(default="", init=False)
    stop_reason: str = field(default="stop requested", init=False)
    _indexed_upto: int = field(default=-1, init=False)  # newest turn id in the search index
    _started: bool = field(default=False, init=False)
    _started_wall: float = field(default=0.0, init=False)  # orphans: see _close_orphans

    @property
    def layout(self) -> Layout:
        return self.store.layout

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> None:
        """Start-up: migrate, re-derive markers from the ledger, repair md files, old spool."""
        self.store.migrate()
        self.version = self._read_version()
        self._check_identity()
        self.md.repair()
        self.backoff.load(self.clock())
        before = self.status.previous  # the previous process's last heartbeat
        self.budget.remember(before.get("spent_today"), before.get("budget"))
        self._started_wall = self.clock()
        # The wake detector's first reading: a leap between start-up and the first pass is
        # then a wake like any other (found by the soak: one there closed every open turn).
        self.wake.check(self._started_wall, self.monotonic())
        self._started = True
        self.status.update(
            state=State.RUNNING, version=self.version, settings=self.config.reported(), force=True
        )

    def run(self) -> int:
        """Run until stopped; returns the exit code (0 for a clean stop)."""
        delay = 1.0
        while not self.stop.is_set() and not self._started:
            try:
                self.start()
            except (apsw.BusyError, apsw.CantOpenError, apsw.IOError, OSError) as exc:
                # Transient at boot (disk still mounting, a long write): retry
                # here, since supervisord gives up on a program that keeps dying.
                self.log.warning("start_retry", error=f"{type(exc).__name__}: {exc}", delay=delay)
                self.stop.wait(delay)
                delay = min(delay * 2, 60.0)
        self.log.info(
            "started",
            workspace=self.layout.root,
            pid=os.getpid(),
            version=self.version or "none (not deployed by bootstrap)",
            package=package_version(),
        )
        while not self.stop.is_set():
            try:
                result = self.run_once()
                if result.action != Step.PAUSED and any([f(result) for f in self.after_pass]):
                    result.more = True
                    self.shedder.busy()  # the model is in use: keep it a while
            except Exception as exc:
                self.failures.record("pass", exc)
                result = PassResult(Step.ERROR)
            for report in self.reporters:
                report(result)
            if result.action not in (Step.IDLE, Step.AWAITING):
                # Curating, waiting or backing off: there are turns to curate, and shedding
                # the SDK now would only have prepare() import it again on the next pass.
                # Awaiting a Message Batch is idle: a look every 30 s to 5 min does not
                # need ~60 MB held for the minutes to hours the batch takes.
                self.shedder.busy()
            if result.more and not self.stop.is_set():
                continue
            if self.shedder.due():
                self._shed_memory()
            self.bridge.reset()
            self.wake.expect_wait(self.config.poll_seconds)
            self.nudge.wait(self.config.poll_seconds)
            self.nudge.clear()
        self.status.update(state=State.STOPPED, force=True)
        for report in self.reporters:  # the metrics file says down, not its last "up"
            report(PassResult(Step.STOPPED))
        self.log.info("stopped", reason=self.stop_reason)
        return 0

    def request_stop(self, reason: str = "signal") -> None:
        """Ask the loop to finish its step and return (safe from a signal handler)."""
        self.stop_reason = reason
        self.stop.set()
        self.nudge.set()

    # -- one pass ------------------------------------------------------------------

    def run_once(self, now: float | None = None) -> PassResult:
        """One pass of the loop; ``now`` (wall clock) may be injected by tests. The pass
        opens each database once (a store session), and holds none after it."""
        if not self._started:
            self.start()
        with self.store.session():
            result = self._pass(now)
        self._report_state(result)
        return result

    def _report_state(self, result: PassResult) -> None:
        """The heartbeat's state, once per pass, from what the pass did; written at once when
        it changed, and on every paused pass (what a rebuild waits for is a paused heartbeat
        written after it asked)."""
        state = STATE_AFTER.get(result.action)
        if state is not None:
            changed = state != self.status.data.get("state")
            self.status.update(state=state, force=changed or state == State.PAUSED)

    def _pass(self, now: float | None) -> PassResult:
        if pause_requested(self.layout):  # `wsd rebuild` asked us to stay out of memory.db
            return PassResult(Step.PAUSED)
        unfinished, asked = self.store.erasure.waiting()
        if unfinished or asked:
            try:
                # No backup copies during an erasure: each is recorded before the erasure
                # looks for backups, or copied after it (found by the soak).
                with hold.no_backup(self.layout):
                    if unfinished:
                        # A forget killed midway (issue 33): finished before anything else
                        # is curated, so nothing this pass does can see (or keep) its words.
                        finished = forgetting.resume(self.store)
                        self.log.info("forget_finished", erasures=finished)
                    if asked:
                        forget_requests.handle(self.store, self.log)
            except PauseRefused:
                if unfinished:  # a wsd backup is copying: curate nothing until it is done
                    return PassResult(Step.WAITING)
        now = self.clock() if now is None else now
        self._detect_wake(now)
        self.md.retry()  # a file a failed write left stale is rewritten as soon as it can be
        if self._version_changed():
            self.request_stop("version changed")
            return PassResult(Step.VERSION_CHANGED)
        self.intake.run(self.identity)
        closed = self._close_orphans(now)
        if closed:
            self.log.info("turns_closed", count=len(closed), reason="no stop")
        if not self._collect(now):
            return PassResult(Step.STOPPED)
        backlog = self.store.turns.backlog()
        self._check_identity(backlog.identity)
        if backlog.last_turn_id != self._indexed_upto:  # new turns for search_memory
            indexed = self.store.archive.index_new_turns(identity=self.identity)
            if indexed < INDEX_BATCH:
                self._indexed_upto = backlog.last_turn_id
        self.md.adopt()  # a person's edit of a curated file becomes a revision at once
        self.status.update(pending=backlog.pending, oldest_pending=backlog.oldest_ts)
        if backlog.answerable_flushes:
            self.store.flushes.answer_flushes(now, self.book.flush_error())
            self.book.parked.clear()  # a flush answers for what was parked since this point
        if backlog.pending == 0:
            self.book.parked.clear()
            self._maintain(now)
            return PassResult(Step.IDLE)
        if backlog.held < backlog.pending:
            self.bridge.prepare()  # work is waiting: load the SDK while we decide
        if self.backoff.waiting():
            return PassResult(Step.BACKOFF)
        reason = lanes.trigger(self.config, backlog, now)
        if reason is None:
            return PassResult(Step.WAITING)
        lane = lanes.choose(backlog, reason, self.economy, now)
        if lane == Lane.URGENT and backlog.held and not self._collect(now, force=True):
            return PassResult(Step.STOPPED)  # an urgent flush: results that came need no call
        if lane == Lane.ECONOMY and backlog.held:
            # One Message Batch at a time: the next request then sees this one's result.
            return PassResult(Step.AWAITING)
        if self._over_budget(now):
            return PassResult(Step.BUDGET)
        if lane == Lane.ECONOMY:
            return self._submit(now)
        taken = self.pipeline.take(self.identity, now, self.intake.waiting(), lane)
        if taken == NoBatch.REMARKED:
            return PassResult(Step.REMARKED, more=True)
        if isinstance(taken, NoBatch):
            return PassResult(Step.WAITING)
        batch = taken[0]
        # The one state written inside a pass: the call may take minutes.
        self.status.update(state=State.CURATING, force=True)
        # Batches of the backlog still to come right after this one (the prompt cache).
        following = max(0, backlog.pending - len(batch.turns)) // self.config.batch_turns
        outcome, ids = self._curate(batch, reason, now, following)
        return PassResult(outcome, more=outcome == Step.CURATED, batches=ids)

    def _submit(self, now: float) -> PassResult:
        """Claim the backlog (up to one Message Batch of batches) and submit it."""
        taken = self.pipeline.take(
            self.identity,
            now,
            self.intake.waiting(),
            Lane.ECONOMY,
            self.config.economy_max_requests,
        )
        if taken == NoBatch.REMARKED:
            return PassResult(Step.REMARKED, more=True)
        if isinstance(taken, NoBatch):
            return PassResult(Step.WAITING)
        try:
            submitted = self.economy.submit(taken, self.identity, now)
        except Shutdown:
            self.log.info(
                "batch_abandoned", turns=sum(len(b.turns) for b in taken), reason="shutdown"
            )
            return PassResult(Step.STOPPED)
        except Outage as exc:
            self._enter_backoff(now, exc)
            return PassResult(Step.BACKOFF)
        if submitted.fallback is not None:
            return PassResult(Step.WAITING, more=True)  # the prompt lane takes them next pass
        self.book.recovered()
        return PassResult(Step.SUBMITTED)

    def _collect(self, now: float, force: bool = False) -> bool:
        """Apply the economy results that have come (False: stop was requested meanwhile)."""
        self.book.reason = "economy"
        try:
            self.economy.poll(self.identity, now, self.book.committed, force=force)
        except Shutdown:
            self.log.info("economy_poll_abandoned", reason="shutdown")
            return False
        return True

    # -- curating ----------------------------------------------------------------

    def _curate(
        self, batch: Batch, reason: str, now: float, following: int = 0
    ) -> tuple[Step, list[int]]:
        """Curate one batch (split on rejection, a lone failing turn parked): the outcome.
        ``following``: batches of the backlog to come right after it."""
        self.book.reason = reason
        try:
            done = self.pipeline.curate(
                batch, self.identity, on_commit=self.book.committed, following=following
            )
        except Shutdown:
            self.log.info("batch_abandoned", turns=len(batch.turns), reason="shutdown")
            return Step.STOPPED, []
        except Outage as exc:
            self._enter_backoff(now, exc)
            return Step.BACKOFF, []
        ids = [c.batch_id for c in done]
        return (Step.PARKED if all(c.parked for c in done) else Step.CURATED), ids

    def _over_budget(self, now: float) -> bool:
        exhausted = self.budget.exhausted(now)
        spend.budget(self.log, self.status, self.budget, exhausted, now)
        return exhausted

    # -- health ----------------------------------------------------------------------

    def _shed_memory(self) -> None:
        """Give the SDK's memory back: re-execute in place (see MemoryShedder)."""

        def before() -> None:
            self.log.info("reexec", reason="shed SDK memory after idle", pid=os.getpid())
            self.status.update(state=State.REEXEC, force=True)
            self.bridge.reset()

        error = self.shedder.reexec(self.stop.is_set, before)
        if error is not None:
            self.log.warning("reexec_failed", error=str(error))

    def _maintain(self, now: float) -> None:
        done = self.maintenance.idle_pass(
            now, self.config.maintenance_seconds, self.config.retention_days * 86400
        )
        if done is not None and any(done):
            self.log.info("maintenance", events_pruned=done[0], vacuumed=done[1])
        days = self.config.transcript_retention_days
        if done is not None and days > 0:
            # Once per maintenance period: what the person said, older than the operator's
            # retention, erased from the transcript (what it taught stays).
            erased = None
            try:
                if forgetting.retention_due(self.store, days, now):
                    with hold.no_backup(self.layout):
                        erased = forgetting.retain(self.store, days, now)
            except PauseRefused:  # a wsd backup is copying: the next period erases
                pass
            if erased is not None:
                self.log.info("transcript_retention", turns=erased.counts().get("turns", 0))

    def _enter_backoff(self, now: float, exc: Outage) -> None:
        delay = self.backoff.enter(now, exc.retry_after)
        outage.outage(self.log, self.status, self.failures.throttle, exc, delay, now)

    def _close_orphans(self, now: float) -> list[int]:
        """Close turns quiet for the orphan timeout, counting only quiet this process has
        watched: the wall seconds a wake leapt do not count, and a turn open when the daemon
        started waits a full timeout after the start (found by the soak: a daemon restarted
        during a clock leap closed every open turn at once, its first reading being the
        leapt clock)."""
        leapt = self.wake.suspended(self.monotonic())
        if now - leapt - self._started_wall < self.config.orphan_seconds:
            return []
        return self.store.turns.close_stale_turns(now - self.config.orphan_seconds - leapt)

    def _detect_wake(self, now: float) -> None:
        """On a wake: log it once, drop the HTTP client, end any backoff, rescan (callbacks)."""
        woke = self.wake.check(now, self.monotonic())
        if woke is None:
            return
        wall_gap, mono_gap = woke
        self.log.warning(
            "wake", slept_seconds=round(wall_gap, 1), monotonic_seconds=round(mono_gap, 1)
        )
        self.status.count(wakes=1)
        self.bridge.reset()
        if self.backoff.active:
            self.backoff.clear(now)
        for callback in self.on_wake:
            callback()

    def _check_identity(self, identity: str | None = None) -> None:
        """Notice a recreated transcript.db; re-derive the markers from the ledger when it is."""
        identity = self.store.transcript_identity() if identity is None else identity
        if identity == self.identity:
            return
        known = self.store.ledger.get_state("transcript_identity")
        if known and known != identity:
            self.log.warning("transcript_recreated", previous=known, current=identity)
        if known != identity:
            self.store.ledger.set_state({"transcript_identity": identity}, self.clock())
        self.identity = identity
        self._indexed_upto = -1
        marked, cleared = self.store.rederive_processed(identity)
        if marked or cleared:
            self.log.info("markers_rederived", marked=marked, cleared=cleared)

    def _read_version(self) -> str:
        return (read_small(self.layout.version_file) or "").strip()

    def _version_changed(self) -> bool:
        current = self._read_version()
        if current != self.version:
            self.log.info("version_changed", previous=self.version, current=current)
            return True
        return False
