"""Idle cost of a ``wsd run`` process (issue 3): CPU, memory and file descriptors while idle."""

from __future__ import annotations

import contextlib
import json
import os
import random
import tempfile
import threading
import time

from bench import Row
from bench.procs import (
    count_rows,
    cpu_seconds,
    daemon_env,
    open_fds,
    realistic_reply,
    rss_mb,
    running_daemon,
    wait_for,
)
from bench.workload_files import make_workspace
from bench.workload_turns import capture_turns, typical_turn
from wsd import schema
from wsd.daemon.runtime.config import (
    DEFAULT_SHED_MEMORY_SECONDS,
)
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.schema.transcript import request_flush

# -- 2. idle cost --------------------------------------------------------------------------------


class _PassCounter:
    """Counts daemon passes from outside: every pass opens and closes transcript.db, and the
    last close deletes ``transcript.db-wal``; inotify groups one pass's events together."""

    def __init__(self, folders: list[str]) -> None:
        self.counts = dict.fromkeys(folders, 0)
        self.stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        from watchfiles import Change, watch

        for changes in watch(
            *self.counts,
            stop_event=self.stop,
            debounce=200,
            step=20,
            raise_interrupt=False,
            recursive=False,
            yield_on_timeout=True,
        ):
            seen = {
                os.path.dirname(p)
                for c, p in changes
                if c == Change.deleted and p.endswith("transcript.db-wal")
            }
            for folder in seen:
                self.counts[folder] += 1

    def __enter__(self) -> _PassCounter:
        self._thread.start()
        time.sleep(0.3)  # let the watcher arm
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self._thread.join(timeout=5)

    def reset(self) -> None:
        for key in self.counts:
            self.counts[key] = 0


class _FdSampler:
    """Samples a process's open files; a target seen in two samples in a row is *held*."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.samples = 0
        self.momentary = 0
        self.held: set[str] = set()
        self._last: set[str] = set()
        self.last_targets: list[str] = []

    def sample(self) -> None:
        _dbs, _socks, targets = open_fds(self.pid)
        watched = {
            t
            for t in targets
            if t.endswith((".db", ".db-wal", ".db-shm")) or t.startswith("socket:")
        }
        self.samples += 1
        self.momentary += bool(watched)
        self.held |= watched & self._last
        self._last = watched
        self.last_targets = targets


def _log_events(path: str, name: str) -> int:
    """How many JSON log lines of the daemon at ``path`` have event ``name``."""
    count = 0
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            with contextlib.suppress(ValueError):
                count += json.loads(line).get("event") == name
    return count


def _held_at_end(pid: int) -> tuple[int, int]:
    """(database files, sockets) open in two looks 0.25 s apart: one look alone can catch a
    pass with its file open (a false NO in the run of 2026-11-29)."""
    first = set(open_fds(pid)[2])
    time.sleep(0.25)
    both = first & set(open_fds(pid)[2])
    dbs = sum(t.endswith((".db", ".db-wal", ".db-shm")) for t in both)
    return dbs, sum(t.startswith("socket:") for t in both)


def idle(window: float = 60.0) -> list[Row]:
    """CPU, RSS and open files of an idle `wsd run` over 60 s; RSS again after one batch."""
    with (
        tempfile.TemporaryDirectory(prefix="wsd-bench-") as tmp,
        BridgeStandin(responder=realistic_reply) as standin,
    ):
        main = make_workspace(os.path.join(tmp, "main"))
        ref = make_workspace(os.path.join(tmp, "ref"))
        main_env = daemon_env(main, standin)  # defaults: WSD_WATCH on, WSD_POLL_SECONDS 2
        ref_env = daemon_env(ref, standin, WSD_WATCH="false")
        logs = os.path.join(tmp, "main.log"), os.path.join(tmp, "ref.log")
        with (
            running_daemon(main_env, logs[0]) as proc,
            running_daemon(ref_env, logs[1]) as ref_proc,
            _PassCounter([main.memory_dir, ref.memory_dir]) as passes,
        ):
            time.sleep(3.0)  # start-up
            fds = _FdSampler(proc.pid)
            ref_fds = _FdSampler(ref_proc.pid)
            passes.reset()
            cpu0, ref0, t0 = cpu_seconds(proc.pid), cpu_seconds(ref_proc.pid), time.monotonic()
            while time.monotonic() - t0 < window:
                fds.sample()
                ref_fds.sample()
                time.sleep(0.25)
            elapsed = time.monotonic() - t0
            cpu1, ref1 = cpu_seconds(proc.pid), cpu_seconds(ref_proc.pid)
            wakeups = {k: v * 60 / elapsed for k, v in passes.counts.items()}
            rss_idle = rss_mb(proc.pid)
            ref_rss = rss_mb(ref_proc.pid)
            end_dbs, end_socks = _held_at_end(proc.pid)
            # Now one curated batch (the anthropic SDK gets imported), then idle again.
            capture_turns(main, [typical_turn(random.Random(3), "idle", i) for i in range(3)])
            conn = schema.connect(main.transcript_db, "transcript")
            try:
                request_flush(conn, "bench", time.time())
            finally:
                conn.close()
            batched = wait_for(
                lambda: count_rows(main.memory_db, "SELECT count(*) FROM batches") > 0,
                timeout=20,
                every=0.05,
            )
            after = _FdSampler(proc.pid)
            t1 = time.monotonic()
            time.sleep(1.0)
            while time.monotonic() - t1 < 6.0:
                after.sample()
                time.sleep(0.25)
            rss_loaded = rss_mb(proc.pid)
            # With nothing left to curate, the daemon gives the SDK back by re-executing in
            # place after WSD_SHED_MEMORY_SECONDS (default): the idle figure is after that.
            shed = wait_for(
                lambda: _log_events(logs[0], "started") >= 2,
                timeout=DEFAULT_SHED_MEMORY_SECONDS + 30,
                every=0.25,
            )
            shed_after = time.monotonic() - t1
            time.sleep(2.0)
            rss_after = rss_mb(proc.pid)
            alive = proc.poll() is None and ref_proc.poll() is None
    cpu_pct = 100 * (cpu1 - cpu0) / elapsed
    ref_pct = 100 * (ref1 - ref0) / elapsed
    held = sorted(fds.held)
    held_after = sorted(after.held)
    return [
        Row(
            f"idle: CPU of one core over {window:.0f} s",
            cpu_pct,
            "%",
            "<= 1",
            cpu_pct <= 1 and alive,
            f"wsd run, defaults (poll 2 s, WSD_WATCH on), {elapsed:.0f} s window after 3 s",
        ),
        Row(
            "idle: resident memory (VmRSS)",
            rss_idle,
            "MB",
            "<= 80",
            rss_idle <= 80,
            "nothing curated yet: anthropic SDK not imported",
        ),
        Row(
            "idle: resident memory just after a batch",
            rss_loaded,
            "MB",
            "-",
            None,
            f"curated 3 turns, then 7 s later (anthropic SDK loaded); batch done: {batched}",
        ),
        Row(
            "idle: resident memory idle after a batch",
            rss_after,
            "MB",
            "<= 80",
            rss_after <= 80 and batched and shed,
            f"SDK shed by an in-place re-exec {shed_after:.0f} s after the batch"
            f" (WSD_SHED_MEMORY_SECONDS {DEFAULT_SHED_MEMORY_SECONDS:.0f}); re-exec seen: {shed}",
        ),
        Row(
            "idle: db files held while idle",
            len([t for t in held if "socket:" not in t]),
            "fds",
            "0",
            not held and end_dbs == 0,
            f"{fds.samples} samples every 0.25 s; {fds.momentary} caught a pass with a file open",
        ),
        Row(
            "idle: sockets held while idle",
            len([t for t in held if "socket:" in t]),
            "fds",
            "0",
            not held and end_socks == 0,
            "same samples (a socket in 2 samples in a row)",
        ),
        Row(
            "idle: db files + sockets held after a batch",
            len(held_after),
            "fds",
            "0",
            not held_after,
            f"{after.samples} samples over 6 s after the batch; {after.momentary} caught a pass",
        ),
        Row(
            "idle: daemon passes per minute",
            wakeups[main.memory_dir],
            "/min",
            "~30 (poll 2 s)",
            None,
            "counted from outside via transcript.db-wal deletions (inotify)",
        ),
        Row(
            "idle: same, WSD_WATCH=false (reference)",
            wakeups[ref.memory_dir],
            "/min",
            "-",
            None,
            f"CPU {ref_pct:.2f}% of one core, RSS {ref_rss:.0f} MB, {len(ref_fds.held)} fds held, "
            "same window",
        ),
    ]


def metrics_cost(window: float = 60.0) -> list[Row]:
    """Issue 35: the idle daemon's CPU with WSD_METRICS_FILE on, beside one with it off (same
    workspace contents, same window, run side by side)."""
    with (
        tempfile.TemporaryDirectory(prefix="wsd-bench-") as tmp,
        BridgeStandin(responder=realistic_reply) as standin,
    ):
        on_ws = make_workspace(os.path.join(tmp, "on"))
        off_ws = make_workspace(os.path.join(tmp, "off"))
        prom = os.path.join(tmp, "wsd.prom")
        on_env = daemon_env(on_ws, standin, WSD_METRICS_FILE=prom)
        off_env = daemon_env(off_ws, standin)
        with (
            running_daemon(on_env, os.path.join(tmp, "on.log")) as on,
            running_daemon(off_env, os.path.join(tmp, "off.log")) as off,
        ):
            time.sleep(3.0)  # start-up
            on0, off0, t0 = cpu_seconds(on.pid), cpu_seconds(off.pid), time.monotonic()
            writes, last = 0, 0
            while time.monotonic() - t0 < window:
                with contextlib.suppress(OSError):
                    mtime = os.stat(prom).st_mtime_ns
                    writes += mtime != last
                    last = mtime
                time.sleep(0.25)
            elapsed = time.monotonic() - t0
            on_pct = 100 * (cpu_seconds(on.pid) - on0) / elapsed
            off_pct = 100 * (cpu_seconds(off.pid) - off0) / elapsed
            size = os.path.getsize(prom) if os.path.exists(prom) else 0
    extra = on_pct - off_pct
    return [
        Row(
            "metrics: idle CPU with WSD_METRICS_FILE, minus without",
            extra,
            "% of a core",
            "<= 0.1",
            extra <= 0.1 and writes > 0,
            f"on {on_pct:.3f}%, off {off_pct:.3f}% over the same {elapsed:.0f} s side by side;"
            f" the file rewritten {writes} times ({size} bytes)",
        )
    ]


# -- the daemon's peak under a backlog (issue 45) -------------------------------------------------

#: The soak's line for the daemon's resident memory (soak/invariants: "daemon RSS stayed under").
PEAK_LINE_MB = 120.0


def _vm(pid: int, key: str) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(f"{key}:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _backlog_peak(turns: int, lane: str) -> tuple[float, float, bool]:
    """(VmHWM, VmRSS at the end, drained) of a ``wsd run`` curating ``turns`` pending turns
    (50 typical turns over and over) on ``lane``, from start to the last turn curated."""
    from bench.workload_turns import record_turns
    from wsd.daemon.standin import rule_curator

    with (
        tempfile.TemporaryDirectory(prefix="wsd-bench-") as tmp,
        BridgeStandin(responder=rule_curator.responder) as standin,
    ):
        layout = make_workspace(tmp)
        rng = random.Random(7)
        record_turns(layout, [typical_turn(rng, "s", i) for i in range(50)], turns)
        env = daemon_env(
            layout,
            standin,
            WSD_CURATION=lane,
            WSD_SEMANTIC="false",  # as the soak: the model is its own figure (semantic_memory)
            WSD_DAILY_BUDGET_USD="0",
            WSD_ECONOMY_POLL_SECONDS="0.2",
            WSD_ECONOMY_POLL_MAX_SECONDS="0.5",
        )
        pending = "SELECT count(*) FROM observations WHERE processed = 0"
        with running_daemon(env, os.path.join(tmp, "wsd.log")) as proc:
            drained = wait_for(
                lambda: count_rows(layout.transcript_db, pending) == 0, 600, every=0.5
            )
            time.sleep(2)  # the last results applied, the pass after them
            return _vm(proc.pid, "VmHWM"), _vm(proc.pid, "VmRSS"), drained


def peak(turns: int = 2500) -> list[Row]:
    """The daemon's peak resident memory (VmHWM) curating a backlog of ``turns`` turns on
    each lane, beside the idle rows: the anthropic SDK (~70 MB) and the turns of one curator
    call (a Message Batch of up to MAX_SUBMISSION_CHARS) held at once."""
    from wsd.daemon.curation.economy.lane import MAX_SUBMISSION_CHARS

    economy_peak, economy_end, economy_ok = _backlog_peak(turns, "economy")
    prompt_peak, prompt_end, prompt_ok = _backlog_peak(turns, "prompt")
    return [
        Row(
            f"peak: resident memory curating {turns:,} turns, economy lane (VmHWM)",
            economy_peak,
            "MB",
            f"< {PEAK_LINE_MB:.0f}",
            economy_peak < PEAK_LINE_MB and economy_ok,
            f"Message Batches of <= {MAX_SUBMISSION_CHARS:,} chars, one at a time; the soak's"
            f" line; {economy_end:.0f} MB at the end; drained: {economy_ok}",
        ),
        Row(
            "peak: same backlog, prompt lane (reference)",
            prompt_peak,
            "MB",
            "-",
            None,
            f"one 25-turn call at a time; {prompt_end:.0f} MB at the end; drained: {prompt_ok}",
        ),
    ]
