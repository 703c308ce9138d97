"""The composition root of ``wsd run``: every object the loop uses is built here and handed
in (the worker only runs the loop), and semantic matching is attached to it.

Tests and benchmarks build their workers here too, so what they drive is wired as the daemon
is; they pass their own clocks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from wsd.daemon.curation.batches import BatchesClient
from wsd.daemon.curation.bridge import BridgeClient
from wsd.daemon.curation.economy import Economy
from wsd.daemon.curation.health import Backoff, Budget, MemoryShedder, WakeDetector
from wsd.daemon.curation.intake import SpoolIntake
from wsd.daemon.curation.passes import PassResult, Step
from wsd.daemon.curation.pipeline import Pipeline
from wsd.daemon.curation.reporting import Failures
from wsd.daemon.curation.worker import Parts, Worker
from wsd.daemon.memory.md_sync import MdSync
from wsd.daemon.memory.semantic import missing
from wsd.daemon.memory.semantic.embedding import Embedder
from wsd.daemon.memory.semantic.server import SemanticServer
from wsd.daemon.runtime.config import Config
from wsd.daemon.runtime.heartbeat import StatusFile
from wsd.daemon.runtime.log import get_logger
from wsd.daemon.store import Store


def build_worker(
    config: Config,
    store: Store,
    stop: threading.Event,
    *,
    bridge: BridgeClient | None = None,
    clock: Callable[[], float] = time.time,
    monotonic: Callable[[], float] = time.monotonic,
    nudge: threading.Event | None = None,
    on_wake: Sequence[Callable[[], Any]] = (),
    heartbeat: bool = True,
) -> Worker:
    """A worker for ``store`` with its collaborators; ``bridge`` defaults to the configured
    Bridge client (stopped by ``stop``). ``heartbeat`` False: its status stays in memory (a
    one-off command curating beside the daemon, ``wsd retry``, must not overwrite the
    daemon's heartbeat)."""
    bridge = bridge or BridgeClient(config, stop)
    log = get_logger(component="worker")
    status = StatusFile(store.layout, clock, writes=heartbeat)
    failures = Failures(status, log, clock)
    md = MdSync(store, status, log, clock)
    pipeline = Pipeline(
        config, store, bridge, files=md.current, dated=lambda _t: clock(), log=log, clock=clock
    )
    parts = Parts(
        log=log,
        status=status,
        failures=failures,
        backoff=Backoff(store, config.outage_backoff, config.outage_backoff_max, monotonic),
        wake=WakeDetector(config.wake_jump_seconds, config.orphan_seconds),
        maintenance=store.maintenance,
        md=md,
        intake=SpoolIntake(store, stop, log, failures.record, status),
        shedder=MemoryShedder(config.shed_memory_seconds, monotonic),
        budget=Budget(store, config.daily_budget_usd),
        pipeline=pipeline,
        economy=Economy(config, store, BatchesClient(bridge), pipeline, log=log, clock=clock),
    )
    return Worker(
        config,
        store,
        bridge,
        stop,
        parts,
        clock=clock,
        monotonic=monotonic,
        nudge=nudge,
        on_wake=on_wake,
    )


def semantic(config: Config, worker: Worker) -> SemanticServer | None:
    """Attach semantic matching to ``worker``: the embedding step after each pass and the
    socket search_memory asks. None when switched off (WSD_SEMANTIC=false) or the [semantic]
    extra is not installed (search then ranks by words alone)."""
    if not config.semantic:
        worker.status.update(semantic="off: WSD_SEMANTIC=false")
        return None
    reason = missing()
    if reason is not None:
        worker.log.info("semantic_off", reason=reason)
        # What wsd status shows: the setting alone said "semantic: True" without the extra.
        worker.status.update(semantic=f"off: {reason}")
        return None
    worker.status.update(semantic="on")
    embedder = Embedder(worker.store, worker.log)
    server = SemanticServer(worker.store, on_use=worker.shedder.busy)
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
                    worker.log.warning("semantic_socket_failed", error=str(exc))
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

    worker.after_pass.append(after_pass)
    return server


class _Stoppable(Protocol):
    def start(self) -> None: ...
    def join(self, timeout: float | None = None) -> None: ...


def serve(worker: Worker, watcher: _Stoppable, semantic: SemanticServer | None) -> int:
    """Start the watcher, run the loop, then stop in reverse order of start-up (the semantic
    server, then the watcher), each step even when one before it failed; the first error is
    the one raised (a later one is logged), else the loop's exit code is returned."""
    started: list[tuple[str, Callable[[], object]]] = []
    first: BaseException | None = None
    code = 1
    try:
        watcher.start()

        def stop_watcher() -> None:
            worker.stop.set()  # the watcher ends on it, whatever ended the loop (an error too)
            watcher.join(5)

        started.append(("watcher", stop_watcher))
        if semantic is not None:
            started.append(("semantic", semantic.stop))
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
