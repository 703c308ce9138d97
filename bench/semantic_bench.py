"""What the [semantic] extra costs: query latency at 100k learnings (the query embedded by
the daemon), and the real daemon's memory while it embeds and after it sheds the model.

``python -m bench semantic_latency semantic_memory``. Without the extra both say so.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time

from bench import Row, locomo, memory_bench, percentile
from bench.floors import bare_fts, ratio_row
from bench.procs import daemon_env, realistic_reply, rss_mb, running_daemon
from bench.workload_files import make_workspace
from wsd import schema
from wsd.daemon.memory.search.core import search_memory
from wsd.daemon.memory.semantic import MODEL_ID, missing
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.store import Store
from wsd.schema.layout import Layout
from wsd.schema.transcript import request_flush

COUNT = 100_000
#: Search p95 with the semantic half over a bare FTS5 query's p95 (semantic_latency): 0.82,
#: 0.99 and, in a full `make bench`, 1.16 on this tree (issue 36; the daemon's embedding runs
#: in another process, whose share of two cores the alternation cannot even out), so 1.4
#: catches a stall or a larger regression, not 20 %.
LATENCY_TARGET = 1.4
RSS_TARGET = 200.0
IDLE_TARGET = 80.0
SHED_SECONDS = 10


def _unavailable(name: str) -> list[Row]:
    return [Row(name, float("nan"), "", "extra missing", None, str(missing()))]


def _with_vectors(count: int) -> str:
    """The latency bench's synthetic memory.db plus a random unit vector per learning (the
    latency does not depend on what the vectors say; cached beside it in .bench/)."""
    import numpy as np

    base = memory_bench.synthetic_memory(count)
    path = base.removesuffix(".db") + "-vectors.db"
    if os.path.exists(path):
        return path
    building = path + ".building"
    shutil.copyfile(base, building)
    rng = np.random.default_rng(count)
    conn = schema.connect(building, "memory")
    try:
        ids = [int(r[0]) for r in conn.execute("SELECT id FROM learnings ORDER BY id")]
        vectors = rng.normal(size=(len(ids), 384)).astype(np.float32)
        vectors /= np.abs(vectors).max(axis=1, keepdims=True)
        packed = np.round(vectors * 127).astype(np.int8)
        with schema.write_txn(conn):
            conn.executemany(
                "INSERT INTO learning_vectors (learning_id, vector) VALUES (?, ?)",
                ((i, packed[n].tobytes()) for n, i in enumerate(ids)),
            )
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('vectors_model', ?)", (MODEL_ID,)
            )
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    os.replace(building, path)
    return path


def semantic_latency() -> list[Row]:
    """search_memory p95 at 100k learnings with the daemon's semantic half answering."""
    name = f"search_memory p95 @ {COUNT:,} learnings, words + meaning"
    if missing() is not None:
        return _unavailable(name)
    from wsd.daemon.memory.semantic import client
    from wsd.daemon.memory.semantic.server import SemanticServer

    db = os.path.abspath(_with_vectors(COUNT))
    questions = memory_bench._questions(COUNT)
    with tempfile.TemporaryDirectory(prefix="wsd-sem-") as tmp:
        layout = Layout(tmp)
        layout.ensure_system_dirs()
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.symlink(db + suffix, layout.memory_db + suffix)
        server = SemanticServer(Store(layout))
        server.start()
        try:
            started = time.perf_counter()
            first = client.dense(layout, questions[0], timeout=30.0)
            cold = time.perf_counter() - started
            for q in questions[:20]:
                search_memory(layout, q)
            total, dense, bare = [], [], []
            words = bare_fts(layout.memory_db)
            for q in questions:
                t0 = time.perf_counter()
                near = client.dense(layout, q)
                dense.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                search_memory(layout, q)
                total.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                words(q)
                bare.append((time.perf_counter() - t0) * 1000)
                if near is None:
                    dense[-1] = float("inf")  # a timeout fell back to words: count it as a miss
        finally:
            server.stop()
    row = ratio_row(
        f"{name} / bare FTS5",
        total,
        bare,
        LATENCY_TARGET,
        "bare FTS5 bm25 query",
        note=f"the daemon's part (embed + search over a socket) p50"
        f" {percentile(dense, 50):.1f} p95 {percentile(dense, 95):.1f} ms; first query after"
        f" start {cold * 1000:.0f} ms (model + sign bits load); the target was 50 ms",
    )
    row.ok = bool(row.ok) and first is not None
    return [row]


def _events(path: str) -> list[dict[str, object]]:
    out = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
    return out


def semantic_memory() -> list[Row]:
    """The real daemon backfilling a LoCoMo archive while it curates it: peak RSS, the
    rate, and RSS once it has re-executed to give the model (and the SDK) back."""
    if missing() is not None:
        return _unavailable("semantic: daemon RSS while embedding")
    if not os.path.exists(locomo.DATA):  # a checkout without ../shared/data
        return [
            Row("semantic: daemon RSS while embedding", float("nan"), "", "data missing", None,
                f"skipped: {locomo.DATA} is not there")
        ]  # fmt: skip
    with (
        tempfile.TemporaryDirectory(prefix="wsd-sem-") as tmp,
        BridgeStandin(responder=realistic_reply) as standin,
    ):
        layout = make_workspace(os.path.join(tmp, "ws"))
        with open(locomo.DATA, encoding="utf-8") as fh:
            sample = json.load(fh)[0]
        locomo.load_facts(layout, sample)  # learnings to backfill ...
        locomo.load_turns(layout, sample)  # ... and turns, curated while they are embedded
        conn = schema.connect(layout.transcript_db, "transcript")
        try:
            request_flush(conn, "bench", time.time())  # curate all of them now
        finally:
            conn.close()
        log = os.path.join(tmp, "wsd.log")
        env = daemon_env(layout, standin, WSD_SHED_MEMORY_SECONDS=str(SHED_SECONDS))
        peak, started = 0.0, time.monotonic()
        with running_daemon(env, log) as proc:
            time.sleep(1.0)
            idle_before = rss_mb(proc.pid)
            done: dict[str, object] = {}
            while time.monotonic() - started < 300 and not done:
                peak = max(peak, rss_mb(proc.pid))
                time.sleep(0.05)
                done = next(
                    (e for e in _events(log) if e.get("event") == "vectors_backfill_done"), {}
                )
            embedded_at = time.monotonic()
            while time.monotonic() - embedded_at < SHED_SECONDS + 60:
                if sum(e.get("event") == "started" for e in _events(log)) >= 2:
                    break
                peak = max(peak, rss_mb(proc.pid))
                time.sleep(0.1)
            time.sleep(2.0)
            after = rss_mb(proc.pid)
            shed = sum(e.get("event") == "started" for e in _events(log)) >= 2
    seconds = float(str(done.get("seconds", "nan")))
    total = int(str(done.get("done", 0)))
    return [
        Row(
            "semantic: daemon RSS while embedding (peak)",
            peak,
            "MB",
            f"<= {RSS_TARGET:g}",
            peak <= RSS_TARGET and bool(done),
            f"backfill of {total} memories while curating {len(sample['conversation'])} sessions"
            " (SDK and model loaded together)",
        ),
        Row(
            "semantic: daemon RSS after the shedding re-exec",
            after,
            "MB",
            f"<= {IDLE_TARGET:g}",
            after <= IDLE_TARGET and shed,
            f"1 s after start (SDK loading, model embedding) {idle_before:.1f} MB;"
            f" re-exec seen: {shed}"
            f" (WSD_SHED_MEMORY_SECONDS {SHED_SECONDS})",
        ),
        Row(
            "semantic: backfill rate in the daemon",
            total / seconds if seconds else float("nan"),
            "/s",
            "-",
            None,
            f"{total} memories in {seconds:.1f} s, from its vectors_backfill_done log line",
        ),
    ]
