"""Economy lane benchmarks (issue 23): PreCompact still curated at once, and a backlog's round
trips as Message Batches beside direct calls.

Its cost per batch and per session are curator_cost rows (bench/curator_bench.py).
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import threading
import time
from typing import Any

import apsw

from bench import Row, median
from bench.curator_bench import (
    POLL_MAX_SECONDS,
    POLL_SECONDS,
    http_counts,
    pending_turns,
    run_until_settled,
)
from bench.procs import (
    count_rows,
    daemon_env,
    fact_per_turn,
    prompt_config,
    quiet_logs,
    running_daemon,
    wait_for,
)
from bench.workload_files import make_workspace
from bench.workload_turns import capture_turns, record_turns, typical_turn
from wsd.daemon.memory.boot import load_memory
from wsd.daemon.ops.wiring import build_worker
from wsd.daemon.runtime.config import DEFAULT_CURATION, Config
from wsd.daemon.runtime.heartbeat import status_path
from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.store import Store
from wsd.hooks.capture import Capture, CaptureConfig
from wsd.schema.layout import Layout

# -- PreCompact flush -> curated and in the boot context -----------------------------------------


def _lanes(layout: Layout) -> list[str]:
    """The lane of each ledger row (memory.db ``batches``), oldest first."""
    if not os.path.exists(layout.memory_db):
        return []
    conn = apsw.Connection(layout.memory_db, flags=apsw.SQLITE_OPEN_READONLY)
    conn.set_busy_timeout(2000)
    try:
        return [str(r[0]) for r in conn.execute("SELECT lane FROM batches ORDER BY id")]
    finally:
        conn.close()


def _hook(layout: Layout, event: dict[str, object]) -> str:
    """One hook event through the command hook's capture path (one write, then closed)."""
    return Capture(CaptureConfig(workspace=layout.root)).handle(event)


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return ""


def _in_boot_context(layout: Layout, marker: str, timeout: float) -> bool:
    """Wait until the boot context shows both parts the rule curator makes of a reminder:
    the open action and context.md's latest request. Watched cheaply first (a ~6 ms
    load_memory every few ms would take CPU from the daemon): context.md is written after the
    commit."""
    context = layout.md("context.md")
    return wait_for(lambda: marker in _read(context), timeout) and wait_for(
        lambda: load_memory(layout).count(marker) >= 2, 5.0
    )


def _setting(layout: Layout, name: str) -> object:
    """A setting as the running daemon reports it in its heartbeat."""
    try:
        with open(status_path(layout), encoding="utf-8") as fh:
            settings = json.load(fh).get("settings") or {}
    except (OSError, ValueError):
        return None
    return settings.get(name) if isinstance(settings, dict) else None


def precompact(runs: int = 7, bridge_latency: float = 0.3) -> list[Row]:
    """PreCompact hook -> its turns curated and in the boot context (``load_memory``), minus
    the Bridge's latency, through ``wsd run`` on the economy lane (the default)."""
    rng = random.Random(17)
    with (
        tempfile.TemporaryDirectory(prefix="wsd-bench-") as tmp,
        BridgeStandin(responder=rule_curator.responder, latency=bridge_latency) as standin,
    ):
        layout = make_workspace(tmp)
        # The default lane, economy. A Message Batch is looked at after 0.5 s (for the
        # warm-up below; PreCompact never waits on one).
        env = daemon_env(
            layout,
            standin,
            WSD_CURATION=DEFAULT_CURATION,
            WSD_ECONOMY_POLL_SECONDS="0.5",
            WSD_ECONOMY_POLL_MAX_SECONDS="1",
        )
        samples: list[tuple[float, float]] = []  # (hook -> in boot context, hook -> call)
        failures = 0
        with running_daemon(env, os.path.join(tmp, "daemon.log")):
            wait_for(lambda: _setting(layout, "curation") is not None, timeout=20, every=0.1)
            lane = _setting(layout, "curation")
            # Warm-up: a session that ends goes as a Message Batch (the lane is live), and
            # the SDK is loaded before the first measured PreCompact.
            capture_turns(layout, [typical_turn(rng, "warm-up", k) for k in range(3)])
            _hook(layout, {"hook_event_name": "SessionEnd", "session_id": "warm-up"})
            warmed = wait_for(
                lambda: pending_turns(layout) == 0 and _lanes(layout) == ["economy"],
                timeout=30,
                every=0.05,
            )
            warm_creates = http_counts(standin)["creates"]
            before = http_counts(standin)
            for i in range(runs):
                session = f"compact-{i}"
                marker = f"pc{i}x{rng.randrange(10**6):06d}"
                turns = [typical_turn(rng, session, 3 * i + k) for k in range(3)]
                prompt = turns[-1][0]["prompt"]
                turns[-1][0]["prompt"] = f"Remind me to send the {marker} statement. {prompt}"
                capture_turns(layout, turns)
                time.sleep(0.6)  # the writes' nudge runs a pass that finds 3 < 25 turns
                seen = len(standin.requests)
                asked = time.time()
                _hook(
                    layout,
                    {"hook_event_name": "PreCompact", "session_id": session, "trigger": "auto"},
                )
                if not _in_boot_context(layout, marker, timeout=15):
                    failures += 1
                    continue
                booted = time.time()
                got = standin.requests[seen:]
                received = got[0].timestamp if got else float("nan")
                samples.append((booted - asked - bridge_latency, received - asked))
                time.sleep(0.3)
            after = http_counts(standin)
            load = os.getloadavg()[0]
        lanes = _lanes(layout)
    creates = after["creates"] - before["creates"]
    calls = after["calls"] - before["calls"]
    totals = [s[0] for s in samples] or [float("nan")]
    p50 = median(totals)
    note = (
        f"n={len(samples)}, 3 turns then PreCompact (Capture.handle), until load_memory shows"
        f" the curated action and context.md line; stand-in latency {bridge_latency:.1f} s"
        f" subtracted; slowest {max(totals) * 1000:.0f} ms; wsd run, WSD_CURATION {lane};"
        f" load average {load:.1f} on {os.cpu_count()} cores"
    )
    prompt_only = lanes[1:] == ["prompt"] * runs
    return [
        Row(
            "precompact -> in boot context, minus Bridge, median",
            p50 * 1000,
            "ms",
            "<= 1000",
            failures == 0 and p50 <= 1.0,
            note + f"; {failures} not in the boot context within 15 s",
        ),
        Row(
            "precompact: hook -> Bridge receives call, median",
            median([s[1] for s in samples] or [float("nan")]) * 1000,
            "ms",
            "-",
            None,
            "nudge (inotify) + pass + render + the SDK's request; the rest is the reply's"
            " commit, the md write and one boot context read",
        ),
        Row(
            "precompact: Message Batches created for it",
            creates,
            "batches",
            "0",
            creates == 0 and calls == runs and prompt_only and lane == "economy" and warmed,
            f"{calls} Messages calls for {runs} PreCompact flushes, ledger lanes {lanes[1:]};"
            f" the lane is live: the warm-up session's SessionEnd went as {warm_creates}"
            f" Message Batch ({lanes[:1]})",
        ),
    ]


# -- a backlog of 100 batches: economy beside prompt ---------------------------------------------


def _drain_backlog(
    curation: str, turns: int, requests: int, cache_shared_prefix: bool = True
) -> dict[str, float]:
    """``turns`` typical turns waiting, curated by an in-process worker on ``curation``
    against an instant stand-in: wall time, what the stand-in received and what the ledger
    booked."""
    rng = random.Random(1)
    templates = [typical_turn(rng, "t", i) for i in range(200)]
    with (
        tempfile.TemporaryDirectory(prefix="wsd-bench-") as tmp,
        quiet_logs(),
        BridgeStandin(responder=fact_per_turn, latency=0.0) as standin,
    ):
        standin.batches.delay = 0.0
        layout = make_workspace(tmp)
        record_turns(layout, templates, turns)
        config = Config(
            workspace=layout.root,
            bridge_url=standin.url,
            api_key="bench",
            watch=False,
            curation=curation,
            economy_max_requests=requests,
            daily_budget_usd=0.0,  # off: the backlog costs more than the default $1 a day
            request_timeout=60.0,
            economy_poll_seconds=POLL_SECONDS,
            economy_poll_max_seconds=POLL_MAX_SECONDS,
            cache_shared_prefix=cache_shared_prefix,
        )
        worker = build_worker(config, Store(layout), threading.Event())
        started = time.time()
        run_until_settled(worker, layout, timeout=600)
        booked = apsw.Connection(layout.memory_db)
        try:
            cost, read, written = booked.execute(
                "SELECT total(cost_usd), total(cache_read_tokens), total(cache_write_tokens)"
                " FROM batches"
            ).fetchone()
        finally:
            booked.close()
        wall = time.time() - started
        sent = standin.requests
        counts = http_counts(standin)
        done = count_rows(
            layout.transcript_db, "SELECT count(*) FROM observations WHERE processed = 1"
        )
        batches = count_rows(layout.memory_db, "SELECT count(*) FROM batches WHERE status = 'done'")
        lanes = set(_lanes(layout))
    creates = [r.timestamp for r in sent if r.method == "POST" and r.path.endswith("/batches")]
    reads = [r.timestamp for r in sent if r.path.endswith("/results")]
    calls = [r.timestamp for r in sent if r.method == "POST" and r.path.endswith("/messages")]
    return {
        "wall": wall,
        "done": done,
        "batches": batches,
        "right_lane": float(lanes == {curation}),
        "round_trips": len(sent),
        "mb_sent": sum(len(r.body) for r in sent) / 1e6,
        "first_create": (creates[0] - started) if creates else float("nan"),
        "last_read": (reads[-1] - started) if reads else float("nan"),
        "first_call": (calls[0] - started) if calls else float("nan"),
        "load": os.getloadavg()[0],
        "cost": float(cost),
        "cache_read": float(read),
        "cache_written": float(written),
        **{k: float(v) for k, v in counts.items()},
    }


def backlog_cache(turns: int = 2500, requests: int = 100) -> list[Row]:
    """The economy lane's 2,500-turn backlog with its shared prefix grown over the caching
    floor (the default) and without (WSD_CACHE_SHARED_PREFIX=false), side by side: what the
    ledger booked (the stand-in caches as the API does, every request after the first in
    order: the API's hits within a Message Batch are best-effort, so this is the best case)."""
    grown = _drain_backlog("economy", turns, requests, cache_shared_prefix=True)
    plain = _drain_backlog("economy", turns, requests, cache_shared_prefix=False)
    tag = f"backlog {turns:,} turns, economy"
    saved = 1 - grown["cost"] / plain["cost"] if plain["cost"] else float("nan")
    return [
        Row(
            f"{tag}: cost, shared prefix cached",
            round(grown["cost"], 4),
            "$",
            "< plain",
            grown["cost"] < plain["cost"] and grown["done"] == turns,
            f"{grown['cache_written']:.0f} tokens written, {grown['cache_read']:.0f} read;"
            f" {saved:.0%} less than plain",
        ),
        Row(
            f"{tag}: cost, plain (WSD_CACHE_SHARED_PREFIX=false)",
            round(plain["cost"], 4),
            "$",
            "-",
            None,
            f"nothing cached ({plain['cache_read']:.0f} read): the prefix stays under the floor",
        ),
    ]


def economy_backlog(turns: int = 2500, requests: int = 100) -> list[Row]:
    """A backlog of 100 batches of 25 turns: the economy lane's round trips and wall time
    against an instant stand-in, beside the prompt lane's."""
    economy = _drain_backlog("economy", turns, requests)
    prompt = _drain_backlog("prompt", turns, requests)
    tag = f"backlog {turns:,} turns"
    # No target: the rows compare the lanes. A row is marked NO only when the backlog was not
    # all curated, or not on the lane asked for.
    ok = {
        name: None if run["done"] == turns and run["right_lane"] else False
        for name, run in (("economy", economy), ("prompt", prompt))
    }
    return [
        Row(
            f"{tag}, economy: Bridge round trips",
            economy["round_trips"],
            "requests",
            "-",
            ok["economy"],
            f"{economy['creates']:.0f} create(s), {economy['retrieves']:.0f} retrieve(s),"
            f" {economy['results']:.0f} results read(s), {economy['calls']:.0f} Messages"
            f" calls, {economy['other']:.0f} other; {economy['batches']:.0f} batches applied"
            f" (WSD_ECONOMY_MAX_REQUESTS {requests}); {economy['mb_sent']:.1f} MB sent",
        ),
        Row(
            f"{tag}, economy: wall time until applied",
            economy["wall"],
            "s",
            "-",
            None,
            f"in-process worker, stand-in batches end at once (delay 0), first look after"
            f" {POLL_SECONDS:g} s (the daemon's default: 30 s); create sent at"
            f" {economy['first_create']:.1f} s, last results read at"
            f" {economy['last_read']:.1f} s (both include the anthropic SDK import); load"
            f" average {economy['load']:.1f} on {os.cpu_count()} cores",
        ),
        Row(
            f"{tag}, prompt: Bridge round trips",
            prompt["round_trips"],
            "requests",
            "-",
            ok["prompt"],
            f"{prompt['calls']:.0f} Messages calls for {prompt['batches']:.0f} batches,"
            f" {prompt['creates']:.0f} Message Batches; {prompt['mb_sent']:.1f} MB sent",
        ),
        Row(
            f"{tag}, prompt: wall time until applied",
            prompt["wall"],
            "s",
            "-",
            None,
            f"in-process worker, WSD_CURATION=prompt, stand-in latency 0; first call at"
            f" {prompt['first_call']:.1f} s (incl. the anthropic SDK import); load average"
            f" {prompt['load']:.1f} on {os.cpu_count()} cores",
        ),
    ]


# -- a 10,000-turn rebuild: its shared prefix cached, and not ------------------------------------


def _rebuild_cost(layout: Layout, responder: Any, cache_shared_prefix: bool) -> dict[str, float]:
    """``wsd rebuild`` of ``layout`` (in-process, no daemon running) against a fresh stand-in
    (an empty cache) curating with ``responder``: what the rebuilt ledger booked, and how
    many of its batches changed a file."""
    from wsd.daemon.curation.rebuild.rebuild import rebuild

    with BridgeStandin(responder=responder, latency=0.0) as standin:
        config = prompt_config(layout.root, standin.url, cache_shared_prefix=cache_shared_prefix)
        started = time.time()
        report = rebuild(config, progress=lambda _line: None, wait_seconds=5.0)
        wall = time.time() - started
    conn = apsw.Connection(layout.memory_db)
    try:
        cost, read, written = conn.execute(
            "SELECT total(cost_usd), total(cache_read_tokens), total(cache_write_tokens)"
            " FROM batches"
        ).fetchone()
        (edited,) = conn.execute(
            "SELECT count(DISTINCT batch_id) FROM md_revisions WHERE source = 'curator'"
        ).fetchone()
    finally:
        conn.close()
    return {
        "cost": float(cost),
        "read": float(read),
        "written": float(written),
        "batches": float(report.batches),
        "edited": float(edited),
        "wall": wall,
    }


def _rebuilt(tmp: str, responder: Any, turns: int) -> dict[bool, dict[str, float]]:
    """A workspace of ``turns`` turns curated by the loop with ``responder``, then rebuilt
    twice from copies of it: the shared prefix cached (True) and not (False)."""
    import shutil

    rng = random.Random(3)
    templates = [typical_turn(rng, "r", i) for i in range(200)]
    live = make_workspace(os.path.join(tmp, "live"))
    record_turns(live, templates, turns)
    with BridgeStandin(responder=responder, latency=0.0) as standin:
        worker = build_worker(prompt_config(live.root, standin.url), Store(live), threading.Event())
        run_until_settled(worker, live, timeout=600)
    runs = {}
    for cached in (True, False):
        copy = Layout(os.path.join(tmp, f"copy-{cached}"))
        shutil.copytree(live.root, copy.root, symlinks=True)
        # The live run's worker was this process: its heartbeat names a live pid, which the
        # rebuild would wait on to pause.
        os.unlink(status_path(copy))
        runs[cached] = _rebuild_cost(copy, responder, cached)
    return runs


def rebuild_cache(turns: int = 10_000) -> list[Row]:
    """A 10,000-turn workspace curated by the loop, then rebuilt twice from the same copy:
    the shared prefix grown over the caching floor and marked while the files stay the same
    from one batch to the next (the default), and without (WSD_CACHE_SHARED_PREFIX=false).
    Two curators bound what a real one does: the rule-based one edits a file in every batch,
    the fact-per-turn one never does."""
    rows = []
    for label, responder in (
        ("a file edited every batch", rule_curator.responder),
        ("no file edited", fact_per_turn),
    ):
        with tempfile.TemporaryDirectory(prefix="wsd-bench-") as tmp, quiet_logs():
            runs = _rebuilt(tmp, responder, turns)
        grown, plain = runs[True], runs[False]
        saved = 1 - grown["cost"] / plain["cost"] if plain["cost"] else float("nan")
        tag = f"rebuild {turns:,} turns, {label}"
        rows += [
            Row(
                f"{tag}: cost, shared prefix cached",
                round(grown["cost"], 4),
                "$",
                "<= plain",
                grown["cost"] <= plain["cost"] and grown["batches"] == plain["batches"],
                f"{grown['batches']:.0f} batches, {grown['edited']:.0f} changed a file;"
                f" {grown['written']:.0f} tokens written, {grown['read']:.0f} read;"
                f" {saved:.0%} less than plain; {grown['wall']:.0f} s",
            ),
            Row(
                f"{tag}: cost, plain (WSD_CACHE_SHARED_PREFIX=false)",
                round(plain["cost"], 4),
                "$",
                "-",
                None,
                f"{plain['batches']:.0f} batches; {plain['read']:.0f} tokens read from the"
                f" cache; {plain['wall']:.0f} s",
            ),
        ]
    return rows
