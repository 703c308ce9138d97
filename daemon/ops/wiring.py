"""The composition root of ``wsd run``: every object the loop uses is built here and handed
in once (the worker only runs the loop), with the workspace watcher and semantic matching;
``wsd retry`` builds its commit follow-up here too, without a loop.

Tests and benchmarks build their workers here too, so what they drive is wired as the daemon
is; they pass their own clocks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from wsd.daemon.curation.bridge.client import BridgeClient
from wsd.daemon.curation.bridge.outage import Backoff
from wsd.daemon.curation.bridge.spend import Budget
from wsd.daemon.curation.economy.lane import Economy
from wsd.daemon.curation.economy.wire import MessageBatchesClient
from wsd.daemon.curation.loop.after_commit import AfterCommit
from wsd.daemon.curation.loop.chores import Between
from wsd.daemon.curation.loop.failures import Failures
from wsd.daemon.curation.loop.gate import Gate
from wsd.daemon.curation.loop.intake import SpoolIntake
from wsd.daemon.curation.loop.outcome import PassResult, Step
from wsd.daemon.curation.loop.shedding import HeapKeeper, MemoryShedder
from wsd.daemon.curation.loop.wake import WakeDetector
from wsd.daemon.curation.loop.worker import Seams, Worker
from wsd.daemon.curation.pipeline import Pipeline
from wsd.daemon.machines.follow import Followers
from wsd.daemon.machines.ingest import Home
from wsd.daemon.machines.satellite import Satellite
from wsd.daemon.memory.md.sync import MdSync
from wsd.daemon.memory.semantic import missing
from wsd.daemon.memory.semantic.embedding import Embedder
from wsd.daemon.memory.semantic.server import SemanticServer
from wsd.daemon.replica.supervisor import Supervisor
from wsd.daemon.runtime.config import Config
from wsd.daemon.runtime.heartbeat import StatusFile
from wsd.daemon.runtime.log import get_logger
from wsd.daemon.store import Store
from wsd.daemon.workspace.canvas import CanvasTools
from wsd.daemon.workspace.checks import CheckSettings
from wsd.daemon.workspace.watcher import Watcher, WatchSettings, workspace_watcher


def build_worker(
    config: Config,
    store: Store,
    stop: threading.Event,
    *,
    bridge: BridgeClient | None = None,
    clock: Callable[[], float] = time.time,
    monotonic: Callable[[], float] = time.monotonic,
    heartbeat: bool = True,
) -> Worker:
    """A worker for ``store`` with its collaborators, without a watcher or semantic matching
    (tests, benchmarks); ``bridge`` defaults to the configured Bridge client (stopped by
    ``stop``). ``heartbeat`` False: its status stays in memory."""
    return _assemble(config, store, stop, bridge, clock, monotonic, heartbeat=heartbeat).worker


def build_daemon(
    config: Config, store: Store, stop: threading.Event, env: Mapping[str, str] | None = None
) -> Daemon:
    """What ``wsd run`` serves: the worker, the workspace watcher it nudges and wakes,
    semantic matching when it is on, and litestream's supervisor when replication is (its
    child gets ``env``, the process environment, less every credential of ours)."""
    return _assemble(config, store, stop, None, time.time, time.monotonic, daemon=True, env=env)


def build_after_commit(config: Config, store: Store, stop: threading.Event) -> AfterCommit:
    """The commit follow-up alone (``wsd retry``: parked batches run again beside the daemon,
    or without it). No heartbeat of its own: the daemon's file is the daemon's (a retry's pid
    in it once took the daemon for gone)."""
    parts = _Parts.build(config, store, stop, None, time.time, time.monotonic, heartbeat=False)
    parts.gate.backoff.load(time.time())  # a batch that goes through ends the daemon's outage
    return parts.after


@dataclass
class Daemon:
    """The parts ``wsd run`` starts and stops (:func:`serve`)."""

    worker: Worker
    watcher: Watcher | None
    semantic: SemanticServer | None
    #: litestream's supervisor, when WSD_REPLICA_URL (or WSD_HOME_URL) is set.
    replica: Supervisor | None = None
    #: The followers of what this machine follows (WSD_HOME_URL: daemon/machines/).
    followers: Followers | None = None


@dataclass
class _Parts:
    """Everything the commit follow-up is built from (one place builds them: :meth:`build`);
    the worker is built on top of them."""

    log: Any
    status: StatusFile
    failures: Failures
    md: MdSync
    pipeline: Pipeline
    gate: Gate
    after: AfterCommit

    @classmethod
    def build(
        cls,
        config: Config,
        store: Store,
        stop: threading.Event,
        bridge: BridgeClient | None,
        clock: Callable[[], float],
        monotonic: Callable[[], float],
        *,
        heartbeat: bool,
    ) -> _Parts:
        bridge = bridge or BridgeClient(config, stop)
        log = get_logger(component="worker")
        status = StatusFile(store.layout, clock, writes=heartbeat)
        failures = Failures(status, log, clock)
        md = MdSync(store, status, log, clock)
        pipeline = Pipeline(config, store, bridge, files=md.current, log=log, clock=clock)
        backoff = Backoff(store, config.outage_backoff, config.outage_backoff_max, monotonic)
        budget = Budget(store, config.daily_budget_usd)
        gate = Gate(backoff, budget, status, log, failures.throttle, clock)
        after = AfterCommit(store, pipeline, md, status, log, gate, clock)
        return cls(log, status, failures, md, pipeline, gate, after)


def _assemble(
    config: Config,
    store: Store,
    stop: threading.Event,
    bridge: BridgeClient | None,
    clock: Callable[[], float],
    monotonic: Callable[[], float],
    *,
    heartbeat: bool = True,
    daemon: bool = False,
    env: Mapping[str, str] | None = None,
) -> Daemon:
    p = _Parts.build(config, store, stop, bridge, clock, monotonic, heartbeat=heartbeat)
    shedder = MemoryShedder(config.shed_memory_seconds, monotonic)
    nudge = threading.Event()
    watcher = _watcher(config, store, stop, nudge) if daemon else None
    server, after_pass = (None, None)
    if daemon:
        server, after_pass = semantic(config, store, p.log, p.status, shedder)
    economy = Economy(
        config, store, MessageBatchesClient(p.pipeline.bridge), p.pipeline, log=p.log, clock=clock
    )
    chores = Between(
        config,
        store,
        p.pipeline,
        economy,
        p.after,
        p.gate,
        p.md,
        SpoolIntake(store, stop, p.log, p.failures.record, p.status),
        WakeDetector(config.wake_jump_seconds, config.orphan_seconds, monotonic),
        shedder,
        p.status,
        p.log,
        clock,
        on_wake=[watcher.wake] if watcher is not None else [],
        machines=_machines(config, store, p.log, p.status, clock, p.md),
    )
    seams = Seams(
        clock,
        nudge,
        after_pass=[after_pass] if after_pass is not None else [],
        reporters=[
            HeapKeeper(monotonic),
            *([_metrics_file(config, store, p.log)] if daemon and config.metrics_file else []),
        ],
    )
    worker = Worker(
        config,
        store,
        stop,
        p.status,
        p.log,
        p.failures,
        p.pipeline,
        economy,
        p.after,
        p.gate,
        chores,
        seams,
    )
    replica = followers = None
    if daemon and config.replica_url:
        store.maintenance.truncate_wal = False
        log = get_logger(component="replica")
        replica = Supervisor(config, store.layout, stop, log, env or {})
    if daemon and config.home_url:
        followers = Followers(config, store.layout, stop, get_logger(component="follow"), env or {})
    return Daemon(worker, watcher, server, replica, followers)


def _machines(
    config: Config,
    store: Store,
    log: Any,
    status: StatusFile,
    clock: Callable[[], float],
    md: MdSync,
) -> Callable[[float], Any] | None:
    """Each pass's exchange with the other machines: home's ingest, a satellite's sealing
    (SPEC.md section 11); None on a machine alone."""
    if config.machines_problem():
        return None
    if config.home:
        return Home(config, store, log, status, clock, on_adopted=lambda f: md.write([f])).run
    if config.satellite:
        return Satellite(config, store, log, status, clock).run
    return None


#: Passes after which the metrics read the ledger again (an economy result applied at the
#: start of another pass is read within the minute: metrics.LEDGER_SECONDS).
COMMITTING = frozenset({Step.CURATED, Step.PARKED})


def _metrics_file(config: Config, store: Store, log: Any) -> Callable[[PassResult], None]:
    """WSD_METRICS_FILE rewritten after every pass (the ledger read again after a commit)."""
    from wsd.daemon.ops.metrics import MetricsFile

    assert config.metrics_file is not None
    out = MetricsFile(config.metrics_file, store, log, config.heartbeat_seconds)

    def report(result: PassResult) -> None:
        out.after(result.action, bool(result.batches) or result.action in COMMITTING)

    return report


def _watcher(
    config: Config, store: Store, stop: threading.Event, nudge: threading.Event
) -> Watcher:
    """The workspace watcher, set to nudge the loop on every transcript write."""
    settings = config.section(WatchSettings)
    tools = config.section(CanvasTools)
    checks = config.section(CheckSettings)
    return workspace_watcher(store.layout, stop, settings, checks, tools, nudge=nudge)


AfterPass = Callable[[PassResult], bool]


def semantic(
    config: Config, store: Store, log: Any, status: StatusFile, shedder: MemoryShedder
) -> tuple[SemanticServer | None, AfterPass | None]:
    """Semantic matching for the loop: the socket search_memory asks, and the embedding step
    to run after each pass. (None, None) when switched off (WSD_SEMANTIC=false) or the
    [semantic] extra is not installed (search then ranks by words alone)."""
    if not config.semantic:
        status.update(semantic="off: WSD_SEMANTIC=false")
        return None, None
    reason = missing()
    if reason is not None:
        log.info("semantic_off", reason=reason)
        # What wsd status shows: the setting alone said "semantic: True" without the extra.
        status.update(semantic=f"off: {reason}")
        return None, None
    status.update(semantic="on")
    embedder = Embedder(store, log)
    server = SemanticServer(store, on_use=shedder.busy)
    failed: list[str] = []
    paused: list[bool] = [False]

    def after_pass(result: PassResult) -> bool:
        # Listen from the first pass on: the workspace is known to be usable by then.
        if server.sock is None:
            try:
                server.start()
            except OSError as exc:  # e.g. .os not writable: search just stays with words
                if str(exc) not in failed:
                    failed.append(str(exc))
                    log.warning("semantic_socket_failed", error=str(exc))
        if result.action == Step.PAUSED:  # a rebuild swaps memory.db in under us
            paused[0] = True
            return False
        if paused[0]:  # look for the new memory's missing vectors now, not at the next check
            paused[0] = False
            embedder.changed()
        if result.action == Step.CURATED:  # curation first: embed once the backlog is drained
            embedder.changed()
            return False
        return embedder.step() > 0

    return server, after_pass


class _NoWatcher:
    def start(self) -> None:
        pass

    def join(self, timeout: float | None = None) -> None:
        pass


def serve(daemon: Daemon) -> int:
    """Start the watcher, run the loop, then stop in reverse order of start-up (the semantic
    server, then the watcher), each step even when one before it failed; the first error is
    the one raised (a later one is logged), else the loop's exit code is returned."""
    worker, watcher = daemon.worker, daemon.watcher or _NoWatcher()
    started: list[tuple[str, Callable[[], object]]] = []
    first: BaseException | None = None
    code = 1
    try:
        if daemon.replica is not None:  # stopped last: it ships the loop's last commits
            daemon.replica.start()
            started.append(("replica", daemon.replica.close))
        if daemon.followers is not None:
            daemon.followers.start()
            started.append(("follow", daemon.followers.close))
        watcher.start()

        def stop_watcher() -> None:
            worker.stop.set()  # the watcher ends on it, whatever ended the loop (an error too)
            watcher.join(5)

        started.append(("watcher", stop_watcher))
        if daemon.semantic is not None:
            started.append(("semantic", daemon.semantic.stop))
        code = int(worker.run())
    except BaseException as exc:
        first = exc
    for name, stop in reversed(started):
        try:
            stop()
        except Exception as exc:
            if first is None:
                first = exc
            else:
                worker.log.error("shutdown_failed", part=name, error=f"{type(exc).__name__}: {exc}")
    if first is not None:
        raise first
    return code
