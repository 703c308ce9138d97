"""``wsd rebuild`` run beside a live daemon, and watched: the rebuild as the console script
runs it (counting the vectors its process embeds), the pause file, the daemon's heartbeat and
the vectors still to make, each polled while it runs; and the reads the rebuild benchmarks
share (curated and flushed, the newest ids, a column of ids)."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.procs import count_rows, wait_for
from wsd import schema
from wsd.daemon.runtime.heartbeat import read_status
from wsd.daemon.runtime.pause import pause_path
from wsd.schema.layout import Layout
from wsd.schema.transcript import request_flush

REPO = str(Path(__file__).resolve().parent.parent)
#: How long a rebuild may take before it is called unfinished (and stopped).
REBUILD_TIMEOUT = 120.0
#: How long the daemon may take to curate (or embed) what waits after a rebuild.
CATCH_UP_TIMEOUT = 120.0

PENDING_VECTORS = (
    "SELECT (SELECT count(*) FROM learnings d WHERE NOT EXISTS"
    " (SELECT 1 FROM learning_vectors v WHERE v.learning_id = d.id))"
    " + (SELECT count(*) FROM turns d WHERE NOT EXISTS"
    " (SELECT 1 FROM turn_vectors v WHERE v.turn_id = d.id))"
)
VECTORS = "SELECT (SELECT count(*) FROM learning_vectors) + (SELECT count(*) FROM turn_vectors)"

#: ``wsd rebuild`` as the console script runs it, counting the vectors its process writes
#: (every embedding goes through vectors.write; reused vectors are copied in SQL) and whether
#: it loaded the model at all.
_REBUILD = """
import sys
from wsd.daemon.store import vectors
from wsd.daemon.ops.cli import main
written = [0]
original = vectors.write
def counted(conn, rows):
    written[0] += len(rows)
    return original(conn, rows)
vectors.write = counted
code = 1
try:
    code = main(["rebuild"])
finally:
    model = ("wsd.daemon.memory.semantic.dense", "wsd.daemon.memory.semantic.model")
    loaded = any(m.startswith(model) for m in sys.modules)
    print(f"bench: embedded {written[0]} model {int(loaded)}", file=sys.stderr, flush=True)
sys.exit(code)
"""


class Watch(threading.Thread):
    """Polls the pause file and the daemon's heartbeat (every 10 ms) and the vectors still to
    make in memory.db (every 100 ms, a fresh read-only connection each time)."""

    def __init__(self, layout: Layout) -> None:
        super().__init__(daemon=True)
        self.layout = layout
        self.done = threading.Event()
        self.pause_from: float | None = None
        self.pause_to: float | None = None
        self.paused_seen: float | None = None  # heartbeat state "paused", first seen
        self.resumed_seen: float | None = None  # first other state seen after it
        self.pending: list[tuple[float, int]] = []
        self.states: list[tuple[float, str]] = []  # heartbeat states, as they change

    def run(self) -> None:
        pause = pause_path(self.layout)
        polled = 0.0
        while not self.done.is_set():
            now = time.monotonic()
            if os.path.exists(pause):
                self.pause_from = self.pause_from or now
            elif self.pause_from is not None and self.pause_to is None:
                self.pause_to = now
            try:
                beat = read_status(self.layout) or {}
            except OSError:  # replaced while we read it: next time
                beat = {"state": None}
            if beat and (not self.states or self.states[-1][1] != beat.get("state")):
                self.states.append((now, str(beat.get("state"))))
            if beat.get("state") == "paused":
                self.paused_seen = self.paused_seen or now
            elif beat and self.paused_seen is not None and self.resumed_seen is None:
                self.resumed_seen = now
            if now - polled >= 0.1:
                polled = now
                with contextlib.suppress(Exception):  # busy during the swap: next time
                    self.pending.append((now, count_rows(self.layout.memory_db, PENDING_VECTORS)))
            time.sleep(0.01)

    def embedded_at(self, after: float) -> float | None:
        """When the vectors still to make first reached 0 at or after ``after``."""
        return next((t for t, n in self.pending if t >= after and n == 0), None)

    def pending_after(self, after: float) -> int:
        return next((n for t, n in self.pending if t >= after), -1)


def run_rebuild(
    env: dict[str, str], layout: Layout, timeout: float
) -> tuple[dict[str, Any], Watch]:
    """``wsd rebuild`` (counted, see _REBUILD) with a Watch running; the watch keeps running
    (stop it with ``done``)."""
    watch = Watch(layout)
    watch.start()
    lines: list[tuple[float, str]] = []
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", _REBUILD],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None and proc.stdout is not None
    stderr = proc.stderr

    def read() -> None:
        for line in stderr:
            lines.append((time.monotonic(), line.rstrip("\n")))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    finished = True
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        finished = False
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    ended = time.monotonic()
    stdout = proc.stdout.read()
    reader.join(5)
    embedded, model = -1, -1
    for _t, line in lines:
        found = re.match(r"bench: embedded (\d+) model (\d)", line)
        if found:
            embedded, model = int(found.group(1)), int(found.group(2))

    def first(prefix: str) -> float | None:
        return next((t for t, line in lines if line.startswith(prefix)), None)

    batches = [t for t, line in lines if line.startswith("batch ")]
    result = {
        "finished": finished and proc.returncode == 0,
        "returncode": proc.returncode,
        "started": started,
        "ended": ended,
        "seconds": ended - started,
        "embedded": embedded,
        "model": model,
        "paused_at": first("daemon paused"),
        "swap_at": first("swapping the rebuilt memory in"),
        "batches": len(batches),
        "last_batch_at": batches[-1] if batches else None,
        "stdout": stdout.strip(),
        "tail": [line for _t, line in lines[-3:]],
    }
    return result, watch


def wait_curated(layout: Layout, timeout: float) -> bool:
    """Ask for a flush and wait until no turn waits uncurated and the flush is handled."""
    conn = schema.connect(layout.transcript_db, "transcript")
    try:
        request_flush(conn, "bench", time.time())
    finally:
        conn.close()
    return wait_for(
        lambda: (
            count_rows(
                layout.transcript_db, "SELECT count(*) FROM observations WHERE processed = 0"
            )
            == 0
            and count_rows(
                layout.transcript_db,
                "SELECT count(*) FROM flush_requests WHERE handled_at IS NULL",
            )
            == 0
        ),
        timeout,
        every=0.2,
    )


def newest(layout: Layout) -> tuple[int, int]:
    return (
        count_rows(layout.memory_db, "SELECT coalesce(max(id), 0) FROM learnings"),
        count_rows(layout.memory_db, "SELECT coalesce(max(id), 0) FROM turns"),
    )


def ids(path: str, sql: str) -> list[int]:
    import apsw

    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    conn.set_busy_timeout(2000)
    try:
        return [int(r[0]) for r in conn.execute(sql)]
    finally:
        conn.close()
