"""The daemon's loop: ``run()`` is ``while not stopped: run_once()``.

A pass runs the chores (:mod:`.chores`: erasures, the spool, orphans, economy results, the turn
index, hand edits, flush answers, maintenance), then only decides: whether to curate
(:func:`.trigger.trigger`), which turns through which lane (:func:`.trigger.choose`), whether
the gate is open (the outage backoff, the day's budget), and takes and curates at most one batch
(or submits one Message Batch), so a test can drive it one step at a time and a SIGTERM never
waits for more than one batch. Nothing is held between passes: no database connection, no HTTP
connection once drained."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import apsw

from wsd.daemon.curation.bridge.client import Outage, Shutdown
from wsd.daemon.curation.bridge.failure import problem
from wsd.daemon.curation.economy import lane
from wsd.daemon.curation.economy.lane import Economy
from wsd.daemon.curation.loop import chores, trigger
from wsd.daemon.curation.loop.after_commit import AfterCommit
from wsd.daemon.curation.loop.chores import Between, Pass
from wsd.daemon.curation.loop.failures import Failures
from wsd.daemon.curation.loop.gate import Gate
from wsd.daemon.curation.loop.outcome import STATE_AFTER, PassResult, Step
from wsd.daemon.curation.pipeline import Pipeline
from wsd.daemon.curation.request.batch import Batch, NoBatch
from wsd.daemon.runtime.config import Config
from wsd.daemon.runtime.heartbeat import State, StatusFile, package_version
from wsd.daemon.runtime.pause import pause_requested
from wsd.daemon.store import Backlog, Lane, Store, Take


@dataclass(eq=False)
class Seams:
    """What the entry point and tests hang on the loop: the wall clock, the event that ends
    the wait between passes early, the work after each pass, the reporters after every pass."""

    clock: Callable[[], float] = time.time
    #: Set to end the wait between passes early (the watcher: a flush was asked for).
    nudge: threading.Event = field(default_factory=threading.Event)
    #: Work done after each pass (embedding new memories); True means more is waiting.
    after_pass: Sequence[Callable[[PassResult], bool]] = ()
    #: Called after every pass, a paused or failed one too (the metrics file); must not raise.
    reporters: Sequence[Callable[[PassResult], None]] = ()


@dataclass(eq=False)
class Worker:
    """Turns captured turns into memory. Its collaborators are built by the entry point
    (:mod:`wsd.daemon.ops.wiring`) and handed in here, once: the worker only runs the loop."""

    config: Config
    store: Store
    stop: threading.Event
    status: StatusFile
    log: Any
    failures: Failures
    pipeline: Pipeline
    economy: Economy
    #: What follows each commit (md files, markers, spend, the batch's line).
    after: AfterCommit
    #: Whether a curator call may be made now (the outage backoff, the day's budget).
    gate: Gate
    #: The chores each pass runs before it decides (:data:`.chores.CHORES`).
    chores: Between
    seams: Seams = field(default_factory=Seams)
    stop_reason: str = field(default="stop requested", init=False)
    _started: bool = field(default=False, init=False)

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> None:
        """Start-up: migrate, re-derive markers from the ledger, repair md files, old spool."""
        self.store.migrate()
        now = self.seams.clock()
        self.gate.load(now, self.status.previous)  # the previous process's last heartbeat
        self.chores.start(now)
        self._started = True
        self.status.update(
            state=State.RUNNING,
            version=self.chores.version,
            settings=self.config.reported(),
            force=True,
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
                # Said in the heartbeat too: "starting" alone hid a full disk (issue 45).
                self.status.update(state=State.FAILING, last_error=problem(exc), force=True)
                self.stop.wait(delay)
                delay = min(delay * 2, 60.0)
        self.log.info(
            "started",
            workspace=self.store.layout.root,
            pid=os.getpid(),
            version=self.chores.version or "none (not deployed by bootstrap)",
            package=package_version(),
        )
        while not self.stop.is_set():
            result = self._one_pass()
            if result.more and not self.stop.is_set():
                continue
            self.chores.rest(self.config.poll_seconds, self.stop)
            self.seams.nudge.wait(self.config.poll_seconds)
            self.seams.nudge.clear()
        self.status.update(state=State.STOPPED, force=True)
        for report in self.seams.reporters:  # the metrics file says down, not its last "up"
            report(PassResult(Step.STOPPED))
        self.log.info("stopped", reason=self.stop_reason)
        return 0

    def _one_pass(self) -> PassResult:
        """A pass, the work after it, and its report; a pass that raises is a failure of the
        pass (logged, rate-limited), never of the loop."""
        try:
            result = self.run_once()
            self.failures.passed("pass")
            if result.action != Step.PAUSED and any([f(result) for f in self.seams.after_pass]):
                result.more = True
                self.chores.busy()  # the model is in use: keep it a while
        except Exception as exc:
            self.failures.record("pass", exc)
            result = PassResult(Step.ERROR)
            self._report_state(result)
        for report in self.seams.reporters:
            report(result)
        if result.action not in (Step.IDLE, Step.AWAITING):
            # Curating, waiting or backing off: there are turns to curate, and shedding
            # the SDK now would only have prepare() import it again on the next pass.
            # Awaiting a Message Batch is idle: a look every 30 s to 5 min does not
            # need ~60 MB held for the minutes to hours the batch takes.
            self.chores.busy()
        return result

    def request_stop(self, reason: str = "signal") -> None:
        """Ask the loop to finish its step and return (safe from a signal handler)."""
        self.stop_reason = reason
        self.stop.set()
        self.seams.nudge.set()

    # -- one pass ------------------------------------------------------------------

    def run_once(self, now: float | None = None) -> PassResult:
        """One pass of the loop; ``now`` (wall clock) may be injected by tests. The pass
        opens each database once (a store session), and holds none after it."""
        if not self._started:
            self.start()
        with self.store.session():
            result = self._pass(Pass(self.seams.clock, now))
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

    def _pass(self, p: Pass) -> PassResult:
        """The chores, then the decisions: only what to curate now, and how."""
        if pause_requested(self.store.layout):  # `wsd rebuild` asked us to stay out of memory.db
            return PassResult(Step.PAUSED)
        step = chores.run(self.chores, p)
        if step == Step.VERSION_CHANGED:
            self.request_stop("version changed")
        if step is not None:
            return PassResult(step)
        assert p.backlog is not None
        # A satellite curates nothing: home does, from what litestream ships it.
        if p.backlog.pending == 0 or self.config.satellite:
            return PassResult(Step.IDLE)
        return self._decide(p.backlog, p.now)

    def _decide(self, backlog: Backlog, now: float) -> PassResult:
        """Turns are pending: whether to curate now (trigger), through which lane, whether
        the gate is open; then one batch curated, or one Message Batch submitted."""
        if backlog.in_flight < backlog.pending:
            self.pipeline.bridge.prepare()  # work is waiting: load the SDK while we decide
        if self.gate.backing_off():
            return PassResult(Step.BACKOFF)
        reason = trigger.trigger(self.config, backlog, now)
        if reason is None:
            return PassResult(Step.WAITING)
        take = trigger.choose(backlog, reason, self.economy, now)
        urgent = take == Take.URGENT and backlog.in_flight
        # An urgent flush: results that came need no call.
        if urgent and not chores.collect(self.economy, self.after, now, force=True):
            return PassResult(Step.STOPPED)
        if take.lane == Lane.ECONOMY and backlog.in_flight:
            # One Message Batch at a time: the next request then sees this one's result.
            return PassResult(Step.AWAITING)
        if self.gate.over_budget(now):
            return PassResult(Step.BUDGET)
        if take.lane == Lane.ECONOMY:
            return self._submit(now)
        taken = self.pipeline.take(now, self.chores.intake.waiting(), take)
        if isinstance(taken, NoBatch):
            return _nothing_taken(taken)
        # The one state written inside a pass: the call may take minutes.
        self.status.update(state=State.CURATING, force=True)
        # Batches of the backlog still to come right after this one (the prompt cache).
        following = max(0, backlog.pending - len(taken[0].turns)) // self.config.batch_turns
        return self._curate(taken[0], reason, now, following)

    def _submit(self, now: float) -> PassResult:
        """Claim the backlog (up to one Message Batch of batches) and submit it."""
        most = self.config.economy_max_requests
        taken = self.pipeline.take(
            now, self.chores.intake.waiting(), Take.NEW, most, lane.MAX_SUBMISSION_CHARS
        )
        if isinstance(taken, NoBatch):
            return _nothing_taken(taken)
        try:
            submitted = self.economy.submit(taken, now)
        except Shutdown:
            turns = sum(len(b.turns) for b in taken)
            self.log.info("batch_abandoned", turns=turns, reason="shutdown")
            return PassResult(Step.STOPPED)
        except Outage as exc:
            self.gate.failed(exc, now)
            return PassResult(Step.BACKOFF)
        if submitted.fallback is not None:
            return PassResult(Step.WAITING, more=True)  # the prompt lane takes them next pass
        self.gate.recovered()
        return PassResult(Step.SUBMITTED)

    def _curate(self, batch: Batch, reason: str, now: float, following: int) -> PassResult:
        """Curate one batch (split on rejection, a lone failing turn parked).
        ``following``: batches of the backlog to come right after it."""
        self.after.reason = reason
        try:
            done = self.pipeline.curate(batch, self.after.committed, following=following)
        except Shutdown:
            self.log.info("batch_abandoned", turns=len(batch.turns), reason="shutdown")
            return PassResult(Step.STOPPED)
        except Outage as exc:
            self.gate.failed(exc, now)
            return PassResult(Step.BACKOFF)
        ids = [c.batch_id for c in done]
        if all(c.parked for c in done):
            return PassResult(Step.PARKED, batches=ids)
        return PassResult(Step.CURATED, more=True, batches=ids)


def _nothing_taken(why: NoBatch) -> PassResult:
    """A pass that claimed nothing: look again at once when the markers caught up."""
    if why == NoBatch.REMARKED:
        return PassResult(Step.REMARKED, more=True)
    return PassResult(Step.WAITING)
