"""Daemon benchmarks (issue 3): backlog drain and flush latency.

Idle cost is in bench/idle_bench.py, curator cost per batch in bench/curator_bench.py; the
workload they share in bench/workload_files.py, bench/workload_turns.py and bench/procs.py.

Real parts only: real SQLite files in a temporary workspace, the real Bridge stand-in
(a local HTTP server on 127.0.0.1) and the real daemon, in-process (``Worker.run_once``)
for the drain, and as a ``wsd run`` subprocess wherever process-level figures are asked
for (idle CPU, memory and file descriptors; flush latency through the file-change nudge).
"""

from __future__ import annotations

import os
import random
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from bench import Row, median, percentile
from bench.floors import CommitFloor, ratio_row
from bench.procs import (
    count_rows,
    daemon_env,
    fact_per_turn,
    quiet_logs,
    realistic_reply,
    running_daemon,
    wait_for,
)
from bench.workload_files import make_workspace
from bench.workload_turns import capture_turns, record_turns, typical_turn
from wsd import schema
from wsd.daemon.ops.wiring import build_worker
from wsd.daemon.runtime.config import (
    Config,
)
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.store import Store
from wsd.schema.layout import Layout
from wsd.schema.transcript import request_flush

# -- 1. backlog drain ----------------------------------------------------------------------------


def fsync_ms(folder: str, n: int = 50) -> float:
    """Median time to write 4 KB and fsync it in ``folder``: what this disk charges a commit."""
    path = os.path.join(folder, "fsync-probe")
    samples = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for i in range(n):
            started = time.perf_counter()
            os.pwrite(fd, os.urandom(4096), 4096 * (i % 16))
            os.fsync(fd)
            samples.append(time.perf_counter() - started)
    finally:
        os.close(fd)
        os.unlink(path)
    return median(samples) * 1000


class Timed:
    """Wraps a bound method and records how long each call took."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.samples: list[float] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            self.samples.append(time.perf_counter() - started)


#: A pass's median over the commit floor's (drain): 4.98 to 5.56 over seven runs of this tree
#: (issue 36), so 5.9 fails a 20 % regression over their middle; the tree before its
#: profile pass measured 5.98 and 6.17.
DRAIN_TARGET = 5.9


def drain(turns: int = 10_000, batch_turns: int = 25) -> list[Row]:
    """Wall time for an in-process Worker (run_once until idle) to curate a 10,000-turn backlog."""
    rng = random.Random(1)
    templates = [typical_turn(rng, "t", i) for i in range(200)]
    with tempfile.TemporaryDirectory(prefix="wsd-bench-") as tmp, quiet_logs():
        layout = make_workspace(tmp)
        disk_ms = fsync_ms(tmp)
        started = time.perf_counter()
        record_turns(layout, templates, turns)
        setup_s = time.perf_counter() - started
        with BridgeStandin(responder=fact_per_turn, latency=0.0) as standin:
            config = Config(
                workspace=layout.root,
                bridge_url=standin.url,
                api_key="bench",
                batch_turns=batch_turns,
                watch=False,
                request_timeout=30.0,
                daily_budget_usd=0.0,  # off: 10,000 turns cost more than the default $1 a day
                curation="prompt",  # the loop's own pace (the economy lane: economy_backlog)
            )
            stop = threading.Event()
            worker = build_worker(config, Store(layout), stop)
            call = worker.pipeline.bridge.call = Timed(worker.pipeline.bridge.call)  # type: ignore[method-assign]
            commit = worker.store.ledger.commit_batch = Timed(worker.store.ledger.commit_batch)  # type: ignore[method-assign]
            mark = worker.store.turns.mark_processed = Timed(worker.store.turns.mark_processed)  # type: ignore[method-assign]
            passes: list[float] = []
            actions: dict[str, int] = {}
            floor = CommitFloor(tmp, batch_turns)
            started = time.perf_counter()
            for _ in range(turns):  # bounded: one batch per pass at most
                t0 = time.perf_counter()
                result = worker.run_once()
                passes.append(time.perf_counter() - t0)
                floor.once()
                actions[result.action] = actions.get(result.action, 0) + 1
                if not result.more and worker.store.turns.backlog().pending == 0:
                    break
            # The floor's commits, timed between the passes, are not the drain's.
            wall = time.perf_counter() - started - sum(floor.samples) / 1000
        done = count_rows(
            layout.transcript_db, "SELECT count(*) FROM observations WHERE processed = 1"
        )
        batches = count_rows(layout.memory_db, "SELECT count(*) FROM batches WHERE status = 'done'")
        learned = count_rows(layout.memory_db, "SELECT count(*) FROM learnings")
    rate = done / wall
    curated_passes_ms = [p * 1000 for p in passes[: len(call.samples)]]
    curated_passes = passes[: len(call.samples)]
    first_call = call.samples[0] if call.samples else float("nan")
    steady = call.samples[1:] or call.samples
    ok_all = done == turns and learned == turns
    other = [
        p - c - m - b
        for p, c, m, b in zip(
            curated_passes, call.samples, commit.samples, mark.samples, strict=False
        )
    ]
    note = (
        f"{done}/{turns} turns, {batches} batches of {batch_turns}, {learned} learnings; "
        f"in-process Worker.run_once, stand-in latency 0"
    )
    ratio = ratio_row(
        "drain: pass (one batch) median / commit floor",
        curated_passes_ms,
        floor.samples,
        DRAIN_TARGET,
        f"{batch_turns} learnings in one transaction of memory.db, {batch_turns} turns marked"
        " in one of transcript.db",
        pct=50,
        note=f"steady state {batch_turns / median(curated_passes):.0f} turns/s",
    )
    ratio.ok = bool(ratio.ok) and ok_all
    rows = [
        ratio,
        Row(
            "drain: turns curated per second (overall)",
            rate,
            "turns/s",
            "-",
            None,
            note,
        ),
        Row(
            "drain: wall time for the backlog",
            wall,
            "s",
            "-",
            None,
            f"incl. first call {first_call * 1000:.0f} ms (anthropic SDK import); "
            f"set-up of {turns} turns {setup_s:.1f} s, not measured",
        ),
        Row(
            "drain: pass (one batch) median",
            median(curated_passes) * 1000,
            "ms",
            "-",
            None,
            f"p95 {percentile(curated_passes, 95) * 1000:.1f} ms; steady state "
            f"{batch_turns / median(curated_passes):.0f} turns/s",
        ),
        Row(
            "drain: Bridge call median (stand-in)",
            median(steady) * 1000,
            "ms",
            "-",
            None,
            f"p95 {percentile(steady, 95) * 1000:.1f} ms; HTTP through the anthropic SDK",
        ),
        Row(
            "drain: commit_batch median (memory.db, FULL)",
            median(commit.samples) * 1000,
            "ms",
            "-",
            None,
            f"p95 {percentile(commit.samples, 95) * 1000:.1f} ms; "
            f"{batch_turns} learnings + ledger in one txn",
        ),
        Row(
            "drain: mark_processed median (transcript.db)",
            median(mark.samples) * 1000,
            "ms",
            "-",
            None,
            f"p95 {percentile(mark.samples, 95) * 1000:.1f} ms",
        ),
        Row(
            "drain: rest of the pass median",
            median(other) * 1000,
            "ms",
            "-",
            None,
            "backlog, stale turns, pending_turns, render, build_request, status file",
        ),
        Row(
            "drain: fsync of 4 KB on this disk (reference)",
            disk_ms,
            "ms",
            "-",
            None,
            "median of 50 in the bench's temp dir: the drain is bound by commits and the "
            "checkpoint each connection close runs",
        ),
    ]
    return rows


# -- 3. flush latency ----------------------------------------------------------------------------


def _ask_flush(layout: Layout) -> float:
    """Ask for a flush as a hook does; when it was asked."""
    conn = schema.connect(layout.transcript_db, "transcript")
    try:
        asked = time.time()
        request_flush(conn, "bench", asked)
    finally:
        conn.close()
    return asked


def _max_batch(layout: Layout) -> int:
    # A fresh read-only connection per poll: a long-lived one would stop the daemon's own
    # checkpoint-on-close and so change what is measured.
    return count_rows(layout.memory_db, "SELECT max(id) FROM batches")


def flush_latency(runs: int = 30, bridge_latency: float = 0.2) -> list[Row]:
    """Flush request -> batch committed in memory.db, minus the Bridge's latency (wsd run)."""
    rng = random.Random(5)
    with (
        tempfile.TemporaryDirectory(prefix="wsd-bench-") as tmp,
        BridgeStandin(responder=realistic_reply, latency=bridge_latency) as standin,
    ):
        layout = make_workspace(tmp)
        env = daemon_env(layout, standin)  # WSD_POLL_SECONDS 2 (default): the nudge must wake it
        samples: list[tuple[float, float, float]] = []  # (total, flush->request, reply->commit)
        failures = 0
        with running_daemon(env, os.path.join(tmp, "daemon.log")):
            time.sleep(3.0)  # start-up
            for i in range(runs + 1):
                capture_turns(layout, [typical_turn(rng, "flush", 3 * i + k) for k in range(3)])
                time.sleep(0.6)  # the writes' nudge runs a pass that finds 3 < 25 turns: waiting
                before = _max_batch(layout)
                seen = len(standin.requests)
                asked = _ask_flush(layout)
                if not wait_for(lambda b=before: _max_batch(layout) > b, timeout=15):
                    failures += 1
                    continue
                committed = time.time()
                got = standin.requests[seen:]
                received = got[0].timestamp if got else float("nan")
                samples.append(
                    (
                        committed - asked - bridge_latency,
                        received - asked,
                        committed - received - bridge_latency,
                    )
                )
                time.sleep(0.3)
        in_process = _flush_in_process(layout, env, rng, runs + 1, bridge_latency)[1:]
    cold, warm = samples[0], samples[1:]
    totals = [s[0] for s in warm]
    note = (
        f"n={len(warm)}, 3 turns per flush, stand-in latency {bridge_latency:.1f} s "
        "subtracted; wsd run, poll 2 s, woken by the file-change nudge"
    )
    ok = failures == 0
    return [
        _flush_row("median", [t * 1000 for t in totals], in_process, 50, ok, note),
        _flush_row(
            "p95",
            [t * 1000 for t in totals],
            in_process,
            95,
            ok,
            f"{failures} flushes not committed within 15 s",
        ),
        Row(
            "flush: request -> Bridge receives call, median",
            median([s[1] for s in warm]) * 1000,
            "ms",
            "-",
            None,
            "nudge (inotify) + pass + render + new HTTP client",
        ),
        Row(
            "flush: Bridge reply -> committed, median",
            median([s[2] for s in warm]) * 1000,
            "ms",
            "-",
            None,
            "parse + commit (memory.db FULL) + detection by polling every 5 ms",
        ),
        Row(
            "flush -> committed, first after start (cold)",
            cold[0] * 1000,
            "ms",
            "-",
            None,
            f"includes the anthropic SDK import: {cold[1] * 1000:.0f} ms until the call "
            "reached the Bridge",
        ),
    ]


#: wsd run's flush latency over the same flush curated in-process (median, p95), 30 flushes:
#: the medians measured 5.26 and 5.78 on this tree (issue 36), so 6.3 fails a 20 %
#: regression; the p95 5.7 and 5.9, but over 12 flushes it once read 19.8: 8 is there for a
#: stall (the nudge missed: a 2 s poll is a ratio near 100), not for 20 %.
FLUSH_TARGETS = {50: 6.3, 95: 8.0}


def _flush_row(
    label: str, daemon: list[float], in_process: list[float], pct: int, ok: bool, note: str
) -> Row:
    row = ratio_row(
        f"flush -> committed, minus Bridge, {label} / the same pass in-process",
        daemon,
        in_process,
        FLUSH_TARGETS[pct],
        "Worker.run_once of the same 3-turn flush, minus Bridge",
        pct=pct,
        note=note,
    )
    row.ok = bool(row.ok) and ok
    return row


def _flush_in_process(
    layout: Layout, env: dict[str, str], rng: random.Random, runs: int, bridge_latency: float
) -> list[float]:
    """Milliseconds, minus the Bridge's latency, from a flush request to its batch committed
    when a worker in this process runs its passes at once (no waiting to be woken): the
    work a flush is, on the same workspace and stand-in as wsd run's."""
    out = []
    worker = build_worker(Config.from_env(env), Store(layout), threading.Event())
    for i in range(runs):
        capture_turns(layout, [typical_turn(rng, "inproc", 3 * i + k) for k in range(3)])
        worker.run_once()  # what the writes' nudge runs: 3 < 25 turns, waiting
        before = _max_batch(layout)
        asked = _ask_flush(layout)
        for _ in range(10):
            worker.run_once()
            if _max_batch(layout) > before:
                break
        out.append((time.time() - asked - bridge_latency) * 1000)
    return out
