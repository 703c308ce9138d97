"""What a pass of the loop does before it decides whether to curate: the chores, one ordered
list (:data:`CHORES`), each a function of what they share (:class:`Between`) and of the pass
(:class:`Pass`).

A chore returns None to let the pass go on, or the :class:`~.outcome.Step` the pass ends
with (a forget that cannot finish while a backup copies, a new version deployed, a shutdown
while economy results were applied). A chore marked ``idle`` runs only on a pass with
nothing to curate. The order matters, and says why in :data:`CHORES`.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from wsd.daemon.curation.bridge.client import Shutdown
from wsd.daemon.curation.economy.lane import Economy
from wsd.daemon.curation.loop.after_commit import AfterCommit
from wsd.daemon.curation.loop.gate import Gate
from wsd.daemon.curation.loop.intake import SpoolIntake
from wsd.daemon.curation.loop.outcome import Step
from wsd.daemon.curation.loop.shedding import MemoryShedder
from wsd.daemon.curation.loop.wake import WakeDetector
from wsd.daemon.curation.pipeline import Pipeline
from wsd.daemon.memory.forget import erase as forgetting
from wsd.daemon.memory.forget import hold
from wsd.daemon.memory.forget import requests as forget_requests
from wsd.daemon.memory.md.sync import MdSync
from wsd.daemon.runtime.config import Config
from wsd.daemon.runtime.fsio import read_small
from wsd.daemon.runtime.heartbeat import State, StatusFile
from wsd.daemon.runtime.pause import PauseRefused
from wsd.daemon.store import INDEX_BATCH, Backlog, Store


@dataclass(eq=False)
class Between:
    """What the chores work with, built once by the entry point (:mod:`wsd.daemon.ops.wiring`),
    and what they remember from one pass to the next."""

    config: Config
    store: Store
    pipeline: Pipeline
    economy: Economy
    after: AfterCommit
    gate: Gate
    md: MdSync
    intake: SpoolIntake
    wake: WakeDetector
    shedder: MemoryShedder
    status: StatusFile
    log: Any
    clock: Callable[[], float]
    #: Called when the VM woke (events may have been lost: the watcher rescans).
    on_wake: Sequence[Callable[[], Any]] = ()
    #: Many machines (daemon/machines/): home's ingest or a satellite's sealing, run each
    #: pass with its time; None on a machine alone.
    machines: Callable[[float], Any] | None = None
    #: .os/VERSION as the process started (a deploy changes it: the daemon restarts).
    version: str = field(default="", init=False)
    #: The newest turn id in the search index (-1: look again).
    indexed_upto: int = field(default=-1, init=False)
    #: When this process started (wall): orphans wait a full timeout after it.
    started_at: float = field(default=0.0, init=False)

    def start(self, now: float) -> None:
        """Start-up: the deployed version read, markers re-derived from the ledger when
        transcript.db is new, md files repaired, the wake detector's first reading."""
        self.version = self.read_version()
        check_transcript(self, self.store.transcript_identity())
        self.md.repair()
        self.started_at = now
        # The wake detector's first reading: a leap between start-up and the first pass is
        # then a wake like any other (found by the soak: one there closed every open turn).
        self.wake.check(now)

    def read_version(self) -> str:
        return (read_small(self.store.layout.version_file) or "").strip()

    def busy(self) -> None:
        """Work is pending or was done: the SDK (and the model) are worth keeping loaded."""
        self.shedder.busy()

    def rest(self, poll_seconds: float, stop: threading.Event) -> None:
        """Between passes, before the wait: the SDK's memory given back once nothing was
        pending for a while (re-executing in place), the HTTP client dropped, and the wake
        detector told how long the loop is about to wait (not a sign of sleep)."""
        if self.shedder.due():
            self._shed_memory(stop)
        self.pipeline.bridge.reset()
        self.wake.expect_wait(poll_seconds)

    def _shed_memory(self, stop: threading.Event) -> None:
        def before() -> None:
            self.log.info("reexec", reason="shed SDK memory after idle", pid=os.getpid())
            self.status.update(state=State.REEXEC, force=True)
            self.pipeline.bridge.reset()

        error = self.shedder.reexec(stop.is_set, before)
        if error is not None:
            self.log.warning("reexec_failed", error=str(error))


@dataclass(frozen=True)
class Chore:
    """One chore: its name (a failure names it) and its function; ``idle``: only on a pass
    with nothing to curate."""

    name: str
    run: Callable[[Between, Pass], Step | None]
    idle: bool = False


class Pass:
    """One pass as the chores see it: when it is (``now``, read when first asked, after the
    erasures, which may take long; or as a test injected it) and the backlog once read."""

    def __init__(self, clock: Callable[[], float], now: float | None = None) -> None:
        self._clock = clock
        self._now = now
        self.backlog: Backlog | None = None
        #: Maintenance ran this pass (once a period: the transcript retention follows it).
        self.maintained = False

    @functools.cached_property
    def now(self) -> float:
        return self._clock() if self._now is None else self._now

    @property
    def pending(self) -> int:
        return 0 if self.backlog is None else self.backlog.pending


# -- the chores, in the order they run ----------------------------------------------------------


def erasures(b: Between, p: Pass) -> Step | None:
    """A forget killed midway (issue 33) is finished before anything else is curated, so
    nothing this pass does can see (or keep) its words; a person's "forget X" is answered.
    No backup copies meanwhile: each is recorded before the erasure looks for backups, or
    copied after it (found by the soak)."""
    unfinished, asked = b.store.erasure.waiting()
    if not (unfinished or asked):
        return None
    try:
        with hold.no_backup(b.store.layout):
            if unfinished:
                b.log.info("forget_finished", erasures=forgetting.resume(b.store))
            if asked:
                forget_requests.handle(b.store, b.log)
    except PauseRefused:
        if unfinished:  # a wsd backup is copying: curate nothing until it is done
            return Step.WAITING
    return None


def wake(b: Between, p: Pass) -> Step | None:
    """A wake from sleep: logged once, the HTTP client dropped, any backoff ended, the
    watcher told to rescan (events may have been lost)."""
    woke = b.wake.check(p.now)
    if woke is None:
        return None
    wall_gap, mono_gap = woke
    b.log.warning("wake", slept_seconds=round(wall_gap, 1), monotonic_seconds=round(mono_gap, 1))
    b.status.count(wakes=1)
    b.pipeline.bridge.reset()
    b.gate.woke(p.now)
    for callback in b.on_wake:
        callback()
    return None


def md_writes(b: Between, p: Pass) -> Step | None:
    """A file a failed write left stale is rewritten as soon as it can be."""
    b.md.retry()
    return None


def version(b: Between, p: Pass) -> Step | None:
    """.os/VERSION changed (a deploy): the pass ends, and the loop stops for a restart."""
    current = b.read_version()
    if current == b.version:
        return None
    b.log.info("version_changed", previous=b.version, current=current)
    return Step.VERSION_CHANGED


def spool(b: Between, p: Pass) -> Step | None:
    """What hooks spooled while transcript.db was busy, recorded."""
    b.intake.run()
    return None


def orphans(b: Between, p: Pass) -> Step | None:
    """Turns quiet for the orphan timeout are closed, counting only quiet this process has
    watched: the wall seconds a wake leapt do not count, and a turn open when the daemon
    started waits a full timeout after the start (found by the soak: a daemon restarted
    during a clock leap closed every open turn at once, its first reading being the leapt
    clock)."""
    timeout = b.config.orphan_seconds
    leapt = b.wake.suspended()
    if p.now - leapt - b.started_at < timeout:
        return None
    closed = b.store.turns.close_stale_turns(p.now - timeout - leapt)
    if closed:
        b.log.info("turns_closed", count=len(closed), reason="no stop")
    return None


def economy_results(b: Between, p: Pass) -> Step | None:
    """The Message Batches' results that have come, applied."""
    return None if collect(b.economy, b.after, p.now) else Step.STOPPED


def machines(b: Between, p: Pass) -> Step | None:
    """Home: the listed satellites' new turns added to be curated; a satellite: its settled
    turns sealed for home, those home curated marked (SPEC.md section 11)."""
    if b.machines is not None:
        b.machines(p.now)
    return None


def transcript(b: Between, p: Pass) -> Step | None:
    """The backlog read, for this pass's decisions and the chores after; a recreated
    transcript.db noticed (the markers re-derived from the ledger)."""
    p.backlog = backlog = b.store.turns.backlog()
    check_transcript(b, backlog.identity)
    b.status.update(pending=backlog.pending, oldest_pending=backlog.oldest_ts)
    return None


def turn_index(b: Between, p: Pass) -> Step | None:
    """New turns copied into the search index (search_memory reaches them)."""
    assert p.backlog is not None
    if p.backlog.last_turn_id != b.indexed_upto:
        indexed = b.store.archive.index_new_turns(identity=b.pipeline.identity)
        if indexed < INDEX_BATCH:
            b.indexed_upto = p.backlog.last_turn_id
    return None


def md_adoption(b: Between, p: Pass) -> Step | None:
    """A person's edit of a curated file becomes a revision at once."""
    b.md.adopt()
    return None


def flush_answers(b: Between, p: Pass) -> Step | None:
    """Flush requests whose turns are all curated are answered (with what could not be done:
    md files not written, batches parked); a flush answers for what was parked since, and
    nothing pending leaves nothing parked to report."""
    assert p.backlog is not None
    if p.backlog.answerable_flushes:
        b.store.flushes.answer_flushes(p.now, b.after.flush_error())
        b.after.parked.clear()
    if p.pending == 0:
        b.after.parked.clear()
    return None


def maintenance(b: Between, p: Pass) -> Step | None:
    """Checkpoints, event retention and a sparse database vacuumed, once a period."""
    config = b.config
    done = b.store.maintenance.idle_pass(
        p.now, config.maintenance_seconds, config.retention_days * 86400
    )
    p.maintained = done is not None
    if done is not None and any(done):
        b.log.info("maintenance", events_pruned=done[0], vacuumed=done[1])
    return None


def retention(b: Between, p: Pass) -> Step | None:
    """Once a maintenance period: what the person said, older than the operator's retention,
    erased from the transcript (what it taught stays); a wsd backup copying: the next period
    erases."""
    days = b.config.transcript_retention_days
    if not p.maintained or days <= 0:
        return None
    erased = None
    try:
        if forgetting.retention_due(b.store, days, p.now):
            with hold.no_backup(b.store.layout):
                erased = forgetting.retain(b.store, days, p.now)
    except PauseRefused:
        pass
    if erased is not None:
        b.log.info("transcript_retention", turns=erased.counts().get("turns", 0))
    return None


#: Every chore, in the order a pass runs them. Erasures first: nothing the pass does may see
#: words being forgotten. The wake before anything that measures quiet (orphans). The version
#: before the spool, so a new deploy stops before recording with old code. The spool, orphans
#: and economy results before the backlog is read, so it counts what they added and closed;
#: the index, adoption and flush answers after it (they read it); the machines' exchange
#: before it too (home's ingest adds turns). Maintenance and retention only when nothing is
#: pending: a quiet moment (on a satellite, whose turns wait on home, whenever they are due).
CHORES: tuple[Chore, ...] = (
    Chore("erasures", erasures),
    Chore("wake", wake),
    Chore("md writes", md_writes),
    Chore("version", version),
    Chore("spool", spool),
    Chore("orphans", orphans),
    Chore("economy results", economy_results),
    Chore("machines", machines),
    Chore("transcript", transcript),
    Chore("turn index", turn_index),
    Chore("md adoption", md_adoption),
    Chore("flush answers", flush_answers),
    Chore("maintenance", maintenance, idle=True),
    Chore("retention", retention, idle=True),
)


def run(b: Between, p: Pass, chores: Sequence[Chore] = CHORES) -> Step | None:
    """Every chore in order, the idle ones only when nothing is pending; the first Step one
    returns ends the pass."""
    for chore in chores:
        if chore.idle and p.pending and not b.config.satellite:
            continue
        step = chore.run(b, p)
        if step is not None:
            return step
    return None


# -- what chores share with the pass's decisions ----------------------------------------------


def collect(economy: Economy, after: AfterCommit, now: float, force: bool = False) -> bool:
    """Apply the economy results that have come (``force``: look at every batch in flight, as
    an urgent flush does before it sends their turns again); False: stop was requested
    meanwhile (what was applied stays applied)."""
    after.reason = "economy"
    try:
        economy.poll(now, after.committed, force=force)
    except Shutdown:
        after.log.info("economy_poll_abandoned", reason="shutdown")
        return False
    return True


def check_transcript(b: Between, identity: str) -> None:
    """Notice a recreated transcript.db; re-derive the markers from the ledger when it is,
    and curate from it from now on."""
    if identity == b.pipeline.identity:
        return
    known = b.store.ledger.get_state("transcript_identity")
    if known and known != identity:
        b.log.warning("transcript_recreated", previous=known, current=identity)
    if known != identity:
        b.store.ledger.set_state({"transcript_identity": identity}, b.clock())
    b.pipeline.identity = identity
    b.indexed_upto = -1
    marked, cleared = b.store.rederive_processed(identity)
    if marked or cleared:
        b.log.info("markers_rederived", marked=marked, cleared=cleared)
