"""Replication with litestream (issue 35, item 3): the loss window at kill -9 and the time a
restore takes.

Loss window: a writer records a turn every 20 ms through the hook's own verb into a workspace
whose daemon replicates to a file replica at the default settings; after 8 s the writer, the
daemon and litestream are killed with -9 at one instant, the databases deleted, and ``wsd
restore --from-replica`` run. The window is the time between the newest turn that came back
and the kill: the seconds of writes lost. Five rounds; the worst is held to the target.

Restore: a workspace of 100,000 turns (WSD_BENCH_RESTORE_TURNS), replicated, its databases
deleted, then ``wsd restore --from-replica`` timed; beside it, a plain copy of the same bytes
(the floor any restore stands on).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from bench import Row, median
from bench.procs import WSD, daemon_env, running_daemon, wait_for
from bench.workload_files import make_workspace
from bench.workload_turns import record_turns, typical_turn
from wsd.daemon.replica import hold, litestream
from wsd.daemon.runtime.config import DEFAULT_REPLICA_SYNC_SECONDS, Config
from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.store import remove
from wsd.schema.layout import Layout

ROUNDS = int(os.environ.get("WSD_BENCH_LOSS_ROUNDS", "5"))
TARGET_LOSS_SECONDS = 1.0
WRITE_SECONDS = 8.0
#: WSD_BENCH_REPLICA_SYNC_SECONDS measures another interval than the default.
SYNC = (
    {"WSD_REPLICA_SYNC_SECONDS": os.environ["WSD_BENCH_REPLICA_SYNC_SECONDS"]}
    if os.environ.get("WSD_BENCH_REPLICA_SYNC_SECONDS")
    else {}
)
TURNS = int(os.environ.get("WSD_BENCH_RESTORE_TURNS", "100000"))
#: A restore against a plain copy of the same bytes, measured x3.8 (10.7 s for 1,036 MB): it
#: reads the replica, writes the files, and checks both (quick_check, FTS integrity).
TARGET_RESTORE_RATIO = 8.0

WRITER = r"""
import sys, time
from wsd.hooks.capture import Capture, CaptureConfig
root, marks = sys.argv[1], sys.argv[2]
cap = Capture(CaptureConfig(workspace=root), keep_open=True)
with open(marks, "a") as out:
    i = 0
    while True:
        prompt = f"turn {i}"
        cap.handle({"hook_event_name": "UserPromptSubmit", "session_id": "w", "prompt": prompt})
        cap.handle({"hook_event_name": "Stop", "session_id": "w", "last_assistant_message": "ok"})
        out.write(f"{i} {time.time()}\n"); out.flush()
        i += 1
        time.sleep(0.02)
"""


def _remove_databases(layout: Layout) -> None:
    """Both databases gone, with their WAL and shared-memory files (a lost disk)."""
    remove(layout.transcript_db)
    remove(layout.memory_db)


def _restore(env: dict[str, str]) -> float:
    started = time.monotonic()
    subprocess.run(
        [WSD, "restore", "--from-replica"], env=env, check=True, capture_output=True, timeout=3600
    )
    return time.monotonic() - started


def _newest_back(layout: Layout) -> float:
    """When the newest event that came back was written (the hook stamps each event)."""
    from wsd import schema

    conn = schema.connect(layout.transcript_db, "transcript", readonly=True)
    try:
        row = schema.first(conn, "SELECT max(ts) FROM events")
    finally:
        conn.close()
    return float(row[0]) if row and row[0] is not None else 0.0


def _loss_round(tmp: str, standin: BridgeStandin) -> float:
    layout = make_workspace(os.path.join(tmp, "ws"), files=False)
    env = daemon_env(
        layout, standin, WSD_REPLICA_URL=f"file://{tmp}/replica", WSD_SEMANTIC="false", **SYNC
    )
    marks = os.path.join(tmp, "written.txt")
    with running_daemon(env, os.path.join(tmp, "wsd.log")) as daemon:
        wait_for(lambda: litestream.running_pid(layout) is not None, 30)
        writer = subprocess.Popen([sys.executable, "-c", WRITER, layout.root, marks])
        time.sleep(WRITE_SECONDS)
        pid = litestream.running_pid(layout)
        killed_at = time.time()
        for victim in (writer.pid, daemon.pid, pid):
            if victim:
                os.kill(victim, signal.SIGKILL)
        writer.wait()
        daemon.wait()
    wait_for(lambda: not hold.running(layout), 10)
    _remove_databases(layout)
    _restore(env)
    return killed_at - _newest_back(layout)


def loss_window() -> list[Row]:
    """Seconds of writes lost at kill -9 of everything, at the default sync interval."""
    if not os.path.exists(WSD):
        return [Row("replica loss window", float("nan"), "s", "-", None, f"{WSD} missing")]
    try:
        litestream.binary()
    except litestream.Missing as exc:
        return [Row("replica loss window", float("nan"), "s", "-", None, str(exc)[:80])]
    windows = []
    with BridgeStandin(responder=rule_curator.responder) as standin:
        for _ in range(ROUNDS):
            with tempfile.TemporaryDirectory(prefix="wsd-loss-") as tmp:
                windows.append(_loss_round(tmp, standin))
    worst = max(windows)
    note = (
        f"{ROUNDS} rounds of kill -9 (writer, daemon, litestream) after {WRITE_SECONDS:g} s"
        f" of a turn per 20 ms; median {median(windows):.2f} s;"
        f" sync interval {SYNC.get('WSD_REPLICA_SYNC_SECONDS', DEFAULT_REPLICA_SYNC_SECONDS)} s"
    )
    return [
        Row(
            "replica loss window at kill -9 (worst)",
            round(worst, 3),
            "s",
            f"<= {TARGET_LOSS_SECONDS:g}",
            worst <= TARGET_LOSS_SECONDS,
            note,
        )
    ]


def restore_time() -> list[Row]:
    """``wsd restore --from-replica`` of a 100,000-turn workspace, beside a plain copy."""
    try:
        binary = litestream.binary()
    except litestream.Missing as exc:
        return [Row("replica restore", float("nan"), "s", "-", None, str(exc)[:80])]
    rng = random.Random(35)
    with tempfile.TemporaryDirectory(prefix="wsd-restore-") as tmp:
        layout = make_workspace(os.path.join(tmp, "ws"), files=False)
        record_turns(layout, [typical_turn(rng, "bench", i) for i in range(50)], TURNS)
        env = {k: v for k, v in os.environ.items() if not k.startswith("WSD_")}
        env |= {"WSD_WORKSPACE": layout.root, "WSD_REPLICA_URL": f"file://{tmp}/replica"}
        cfg = Config.from_env(env)
        litestream.write_config(cfg, layout)
        subprocess.run(
            [binary, "replicate", "-once", "-config", litestream.config_path(layout)],
            check=True,
            capture_output=True,
            timeout=3600,
        )
        size = sum(os.path.getsize(p) for p in litestream.databases(layout).values())
        started = time.monotonic()
        for path in litestream.databases(layout).values():
            shutil.copyfile(path, path + ".copy")
        copy_s = time.monotonic() - started
        for path in litestream.databases(layout).values():
            os.unlink(path + ".copy")
        shutil.rmtree(os.path.join(layout.memory_dir, ".transcript.db-litestream"))
        shutil.rmtree(os.path.join(layout.memory_dir, ".memory.db-litestream"))
        _remove_databases(layout)
        seconds = _restore(env)
    ratio = seconds / max(copy_s, 1e-6)
    return [
        Row(
            f"replica restore, {TURNS:,} turns (wsd restore ÷ a plain copy of the bytes)",
            round(ratio, 1),
            "x",
            f"<= {TARGET_RESTORE_RATIO:g}",
            ratio <= TARGET_RESTORE_RATIO,
            f"{seconds:.1f} s for {size / 1e6:.0f} MB of databases from a file replica; the"
            f" copy {copy_s:.2f} s (restore + quick_check + FTS checks + markers)",
        )
    ]


IDLE_SECONDS = 20.0
#: litestream's own share of a core while nothing is written: it looks at both WALs every
#: sync interval (measured 0.2 % at 0.5 s, 0.1 % at 1 s).
TARGET_IDLE_PERCENT = 0.5


def idle_cost() -> list[Row]:
    """CPU of the litestream child over IDLE_SECONDS with nothing written, at the default."""
    try:
        litestream.binary()
    except litestream.Missing as exc:
        return [Row("replica idle CPU", float("nan"), "%", "-", None, str(exc)[:80])]
    from bench.procs import cpu_seconds, rss_mb

    with (
        tempfile.TemporaryDirectory(prefix="wsd-idle-") as tmp,
        BridgeStandin(responder=rule_curator.responder) as standin,
    ):
        layout = make_workspace(os.path.join(tmp, "ws"), files=False)
        env = daemon_env(layout, standin, WSD_REPLICA_URL=f"file://{tmp}/replica", **SYNC)
        with running_daemon(env, os.path.join(tmp, "wsd.log")):
            wait_for(lambda: litestream.running_pid(layout) is not None, 30)
            time.sleep(5.0)  # its first snapshot done
            pid = litestream.running_pid(layout)
            assert pid is not None
            before = cpu_seconds(pid)
            time.sleep(IDLE_SECONDS)
            share = 100 * (cpu_seconds(pid) - before) / IDLE_SECONDS
            rss = rss_mb(pid)
    return [
        Row(
            "replica idle CPU (litestream, nothing written)",
            round(share, 3),
            "% of a core",
            f"<= {TARGET_IDLE_PERCENT:g}",
            share <= TARGET_IDLE_PERCENT,
            f"over {IDLE_SECONDS:g} s; its RSS {rss:.0f} MB (a process of its own, beside the"
            " daemon's budget)",
        )
    ]
