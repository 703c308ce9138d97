"""One memory on many machines (issue 47, SPEC.md section 11): how long a turn told on one
satellite takes to reach another satellite's boot context, and what an idle machine asks of
the person's storage.

Reach: home and two satellites on one host, a ``file://`` storage, the default intervals but
the curation trigger (WSD_IDLE_SECONDS and WSD_QUIET_SECONDS at 1 s: a person's are minutes,
and they only add to the sum). A turn is written on one satellite through the hook's verb,
then the other's boot context (``load_memory``, as its SessionStart hook builds it) is read
every 50 ms until the turn's learning is in it. The figure is held as a ratio to the sum of
the intervals the turn must wait on: the satellite's replica sync, home's follow interval,
home's poll and trigger, home's replica sync and the other satellite's follow interval.

Idle requests: home and one satellite against moto's S3 server for IDLE_SECONDS with nothing
written; every request the server answers is counted, and each is the machine's whose
litestream makes it (a write under its own prefix, or a read of what it follows).
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
import urllib.request
from contextlib import ExitStack
from typing import Any

from bench import Row, median, percentile
from bench.procs import daemon_env, running_daemon, wait_for
from bench.workload_files import make_workspace
from wsd.daemon.memory.boot import load_memory
from wsd.daemon.replica import litestream
from wsd.daemon.runtime.config import (
    DEFAULT_FOLLOW_SECONDS,
    DEFAULT_POLL_SECONDS,
    DEFAULT_REPLICA_SYNC_SECONDS,
)
from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.hooks.capture import Capture, CaptureConfig
from wsd.schema.layout import Layout

TURNS = int(os.environ.get("WSD_BENCH_MACHINES_TURNS", "12"))
TRIGGER_SECONDS = 1.0
#: p95 of the reach over the sum of the intervals it waits on (each interval is a bound on
#: a wait, most waits are shorter: below 1 is possible, above it is time of our own).
TARGET_REACH_RATIO = 1.5
IDLE_SECONDS = float(os.environ.get("WSD_BENCH_MACHINES_IDLE_SECONDS", "180"))
#: Storage requests per machine per idle hour (a request costs money on S3: $0.005 per
#: 1,000 PUTs and LISTs, $0.0004 per 1,000 GETs): at most $0.0125 an hour. Measured: 1,920
#: for home, 1,840 for a satellite; a follower's share is 540 (nine LISTs a look, a look a
#: minute), the rest is litestream replicate's own retention and compaction monitors, as
#: with WSD_REPLICA_URL alone.
TARGET_IDLE_REQUESTS_PER_HOUR = 2_500
#: The reach is measured with 1 s follows (the default 30 s would make the row take ten
#: minutes): the ratio to the intervals is what is held, whatever they are.
REACH_FOLLOW_SECONDS = 1.0


def _write_turn(root: str, session: str, prompt: str) -> None:
    cap = Capture(CaptureConfig(workspace=root))
    cap.handle({"hook_event_name": "UserPromptSubmit", "session_id": session, "prompt": prompt})
    cap.handle(
        {"hook_event_name": "Stop", "session_id": session, "last_assistant_message": "Noted."}
    )
    cap.close()


def _machines(
    tmp: str, storage: str, standin: BridgeStandin, names: list[tuple[str, str]], **extra: str
) -> list[tuple[Layout, dict[str, str]]]:
    out = []
    satellites = ",".join(n for n, role in names if role == "satellite")
    for name, role in names:
        layout = make_workspace(os.path.join(tmp, name), files=False)
        env = daemon_env(
            layout,
            standin,
            WSD_HOME_URL=storage,
            WSD_MACHINE=name,
            WSD_ROLE=role,
            WSD_WATCH="false",
            WSD_IDLE_SECONDS=str(TRIGGER_SECONDS),
            WSD_QUIET_SECONDS=str(TRIGGER_SECONDS),
            **({"WSD_MACHINES": satellites} if role == "home" else {}),
            **extra,
        )
        out.append((layout, env))
    return out


def reach() -> list[Row]:
    """A turn on one satellite to its learning in another's boot context."""
    try:
        litestream.binary()
    except litestream.Missing as exc:
        return [Row("turn to another machine's boot", float("nan"), "s", "-", None, str(exc))]
    waits = (
        DEFAULT_REPLICA_SYNC_SECONDS  # the satellite's transcript to the storage
        + REACH_FOLLOW_SECONDS  # home's copy of it
        + DEFAULT_POLL_SECONDS  # home's pass
        + TRIGGER_SECONDS  # home's curation trigger
        + DEFAULT_REPLICA_SYNC_SECONDS  # home's memory to the storage
        + REACH_FOLLOW_SECONDS  # the other satellite's copy of it
    )
    samples: list[float] = []
    with (
        tempfile.TemporaryDirectory(prefix="wsd-machines-") as tmp,
        BridgeStandin(responder=rule_curator.responder) as standin,
        ExitStack() as stack,
    ):
        storage = f"file://{tmp}/storage"
        machines = _machines(
            tmp,
            storage,
            standin,
            [("home", "home"), ("lap", "satellite"), ("vm", "satellite")],
            WSD_FOLLOW_SECONDS=str(REACH_FOLLOW_SECONDS),
        )
        for _layout, env in machines:
            stack.enter_context(running_daemon(env, os.path.join(tmp, f"{env['WSD_MACHINE']}.log")))
        lap, vm = machines[1][0], machines[2][0]
        # Started: the other satellite has a copy of home's memory.
        wait_for(lambda: os.path.exists(vm.home_copy), 60)
        for i in range(TURNS):
            word = f"zephyrine{i}x"
            started = time.monotonic()
            _write_turn(lap.root, f"s{i}", f"I prefer the {word} blend for my coffee")
            if not wait_for(lambda w=word: w in load_memory(vm), 120, 0.05):
                samples.append(float("inf"))
                break
            samples.append(time.monotonic() - started)
            time.sleep(TRIGGER_SECONDS)  # each turn on its own: a quiet session between
    p50, p95 = median(samples), percentile(samples, 95)
    return [
        Row(
            "turn on one satellite -> another's boot context, p50",
            round(p50 / waits, 2),
            "x the intervals",
            "-",
            None,
            f"{p50:.2f} s over {waits:.1f} s of intervals (sync, follow, poll, trigger, sync,"
            f" follow); {len(samples)} turns",
        ),
        Row(
            "turn on one satellite -> another's boot context, p95",
            round(p95 / waits, 2),
            "x the intervals",
            f"<= {TARGET_REACH_RATIO:g}",
            p95 / waits <= TARGET_REACH_RATIO,
            f"{p95:.2f} s",
        ),
    ]


class _Counter(logging.Handler):
    """Counts the S3 requests moto's server logs, by the path they name."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.mutex = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if '"' in message:
            with self.mutex:
                self.lines.append(message.split('"')[1])


def _whose(request: str) -> str | None:
    """The machine a request is made for: a write under its prefix, or a read of what it
    follows (home follows machines/lap/transcript, the satellite home/memory)."""
    method, _, rest = request.partition(" ")
    path = rest.split(" ")[0]
    writes = method in ("PUT", "POST", "DELETE")
    if "home/memory" in path or "home%2Fmemory" in path:
        return "home" if writes else "lap"
    if "machines/lap/transcript" in path or "machines%2Flap%2Ftranscript" in path:
        return "lap" if writes else "home"
    if "machines/lap" in path or "machines%2Flap" in path:  # its own memory.db's replica
        return "lap"
    if "machines/home" in path or "machines%2Fhome" in path:
        return "home"
    return None


def idle_requests() -> list[Row]:
    """Storage requests per machine per idle hour (home and one satellite, moto's S3)."""
    try:
        litestream.binary()
        from moto.server import ThreadedMotoServer
    except (litestream.Missing, ImportError) as exc:
        return [Row("storage requests, idle", float("nan"), "/h", "-", None, str(exc)[:80])]
    counter = _Counter()
    werkzeug = logging.getLogger("werkzeug")
    werkzeug.addHandler(counter)
    werkzeug.setLevel(logging.INFO)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=True)
    server.start()
    counts: dict[str, int] = {}
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        urllib.request.urlopen(urllib.request.Request(f"{endpoint}/wsd", method="PUT"), timeout=10)
        s3: dict[str, Any] = {
            "WSD_REPLICA_ENDPOINT": endpoint,
            "WSD_REPLICA_REGION": "us-east-1",
            "WSD_REPLICA_ACCESS_KEY_ID": "bench",
            "WSD_REPLICA_SECRET_ACCESS_KEY": "bench-secret",
        }
        with (
            tempfile.TemporaryDirectory(prefix="wsd-machines-idle-") as tmp,
            BridgeStandin(responder=rule_curator.responder) as standin,
            ExitStack() as stack,
        ):
            machines = _machines(
                tmp, "s3://wsd/person", standin, [("home", "home"), ("lap", "satellite")], **s3
            )
            for _layout, env in machines:
                log = os.path.join(tmp, f"{env['WSD_MACHINE']}.log")
                stack.enter_context(running_daemon(env, log))
            _write_turn(machines[1][0].root, "s", "I prefer green tea")
            wait_for(lambda: os.path.exists(machines[1][0].home_copy), 60)
            time.sleep(30)  # the turn curated and followed, the first snapshots done
            with counter.mutex:
                counter.lines.clear()
            time.sleep(IDLE_SECONDS)
            with counter.mutex:
                for request in counter.lines:
                    who = _whose(request)
                    if who is not None:
                        counts[who] = counts.get(who, 0) + 1
    finally:
        server.stop()
        werkzeug.removeHandler(counter)
    rows = []
    for who in ("home", "lap"):
        per_hour = counts.get(who, 0) * 3600 / IDLE_SECONDS
        rows.append(
            Row(
                f"storage requests per idle hour, {'home' if who == 'home' else 'a satellite'}",
                round(per_hour),
                "/h",
                f"<= {TARGET_IDLE_REQUESTS_PER_HOUR}",
                per_hour <= TARGET_IDLE_REQUESTS_PER_HOUR,
                f"{counts.get(who, 0)} in {IDLE_SECONDS:g} s (moto's S3, every request counted;"
                f" follows every {DEFAULT_FOLLOW_SECONDS:g} s, the default)",
            )
        )
    return rows
