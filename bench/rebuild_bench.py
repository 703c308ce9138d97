"""``wsd rebuild`` beside a running daemon (issue 20): how long it takes, how long the live
daemon's curation is held paused, what the rebuild embeds itself (nothing: the daemon embeds
after the swap), and the same rebuild while 8 processes keep writing turns.

``python -m bench rebuild``. Real parts only: ``wsd run`` and ``wsd rebuild`` as processes,
the Bridge stand-in with the rule-based curator, turns written through the capture path
(:class:`~wsd.hooks.capture.Capture`, one connection per event as the command hook does).
The workspace and its turns are generated here (no shared data needed).

The rebuild's curator words every learning differently from the live run's (as a new model or
prompt would, the usual reason to rebuild), so their vectors cannot be reused and the daemon
has real embedding to do after the swap; the turns' vectors are reused.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench import Row
from bench.procs import WSD, count_rows, daemon_env, running_daemon, wait_for
from bench.workload_files import make_workspace
from bench.workload_turns import capture_turns, typical_turn
from wsd import schema
from wsd.daemon.memory.semantic import missing
from wsd.daemon.runtime.heartbeat import read_status
from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import BridgeStandin, Reply
from wsd.daemon.store import pause_path
from wsd.schema.layout import Layout
from wsd.schema.transcript import request_flush

REPO = str(Path(__file__).resolve().parent.parent)
#: Turns the live daemon has curated before the rebuild (the attack's was 329).
TURNS = 330
WRITERS = 8
#: Each writer writes a turn, then rests this long (8 writers: ~30 turns/s at most; a busy
#: person's agent writes one every few seconds).
WRITER_REST = 0.25
WRITER_MAX_TURNS = 400
#: How long a rebuild may take before it is called unfinished (and stopped).
REBUILD_TIMEOUT = 120.0
#: How long the daemon may take to curate (or embed) what waits after a rebuild.
CATCH_UP_TIMEOUT = 120.0
#: How long the daemon may take to embed what the rebuild left to it.
EMBED_TIMEOUT = 60.0
#: The rebuild's own batches, plus this much (the wait for the daemon's pass, the swap).
PAUSE_SLACK = 5.0

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

_LEARNING = re.compile(
    r"^(FACT|PATTERN|CORRECTION|PREFERENCE|TOOL_INSTALL)(\s*(?:\[[^\]]*\])?\s*:\s*)"
)


def reworded(body: dict[str, Any]) -> Reply:
    """The rule-based curator, every learning worded anew ("Rebuilt: ...")."""
    text = rule_curator.responder_text(body)
    return Reply.text("\n".join(_LEARNING.sub(r"\1\2Rebuilt: ", line) for line in text.split("\n")))


def writer(root: str, w: int, stop_file: str, rest: float, most: int) -> None:
    """One agent writing typical turns through the capture path (one connection per event,
    as the ``wsd-hook`` command does) until ``stop_file`` appears; prints how many."""
    from wsd.hooks.capture import Capture, CaptureConfig

    rng = random.Random(1000 + w)
    cap = Capture(CaptureConfig(workspace=root))
    written = 0
    while written < most and not os.path.exists(stop_file):
        for event in typical_turn(rng, f"writer-{w}", written):
            cap.handle(event)
        written += 1
        time.sleep(rest)
    cap.close()
    print(written, flush=True)


# -- watching a rebuild ------------------------------------------------------------------------


class _Watch(threading.Thread):
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


def _run_rebuild(
    env: dict[str, str], layout: Layout, timeout: float
) -> tuple[dict[str, Any], _Watch]:
    """``wsd rebuild`` (counted, see _REBUILD) with a _Watch running; the watch keeps running
    (stop it with ``done``)."""
    watch = _Watch(layout)
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


def _wait_curated(layout: Layout, timeout: float) -> bool:
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


def _newest(layout: Layout) -> tuple[int, int]:
    return (
        count_rows(layout.memory_db, "SELECT coalesce(max(id), 0) FROM learnings"),
        count_rows(layout.memory_db, "SELECT coalesce(max(id), 0) FROM turns"),
    )


def _ids(path: str, sql: str) -> list[int]:
    import apsw

    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    conn.set_busy_timeout(2000)
    try:
        return [int(r[0]) for r in conn.execute(sql)]
    finally:
        conn.close()


# -- the benchmark -----------------------------------------------------------------------------


def _skipped(reason: str) -> list[Row]:
    print(f"rebuild: skipped: {reason}", file=sys.stderr, flush=True)
    return [Row("wsd rebuild", float("nan"), "", "skipped", None, reason)]


def rebuild() -> list[Row]:
    """The two rebuilds (quiet, then under 8 writers) on one workspace and one daemon."""
    if not os.path.exists(WSD):
        return _skipped(f"{WSD} is not installed (make install)")
    semantic = missing() is None
    sem_note = "semantic on" if semantic else f"semantic OFF ({missing()})"
    rng = random.Random(20)
    rows: list[Row] = []
    with (
        tempfile.TemporaryDirectory(prefix="wsd-rebuild-") as tmp,
        BridgeStandin(responder=rule_curator.responder) as standin,
    ):
        layout = make_workspace(os.path.join(tmp, "ws"))
        capture_turns(layout, [typical_turn(rng, f"live-{i // 30}", i) for i in range(TURNS)])
        env = daemon_env(layout, standin, WSD_DAILY_BUDGET_USD="0")
        log = os.path.join(tmp, "wsd.log")
        # -- the live run: everything curated (and indexed for search) ------------------------
        setup = time.monotonic()
        with running_daemon(env | {"WSD_SEMANTIC": "false"}, log):
            if not _wait_curated(layout, CATCH_UP_TIMEOUT) or not wait_for(
                lambda: count_rows(layout.memory_db, "SELECT count(*) FROM turns") >= TURNS, 30
            ):
                return _skipped(f"the live daemon did not curate {TURNS} turns in time")
        live_s = time.monotonic() - setup
        learnings = count_rows(layout.memory_db, "SELECT count(*) FROM learnings")
        # The live run's vectors, seeded: the model takes ~0.5 s a turn here (see the reference
        # row), so embedding the live run for real would take minutes before the rebuild starts.
        live_vectors = _seed_vectors(layout) if semantic else 0
        with running_daemon(env, log) as daemon:
            # A daemon that has been running a while: its embedder has looked at memory.db
            # (it does every 10 s while nothing is known to be new).
            time.sleep(12.0)
            rows += _quiet(
                env, layout, standin, sem_note, semantic, live_vectors, learnings, live_s
            )
            rows += _writers(env, layout, tmp, sem_note)
            if semantic:
                rows += _curated_while_embedding(layout, rng, log)
            if daemon.poll() is not None:
                rows.append(Row("rebuild: daemon", float("nan"), "", "alive", False, "daemon died"))
            if semantic:
                rows += _embedding_reference(layout)
    return rows


def _curated_while_embedding(
    layout: Layout, rng: random.Random, log: str, runs: int = 5
) -> list[Row]:
    """After the rebuild under writers the daemon has their turns to embed: a turn flushed
    meanwhile, how long until it is curated (an embedding step runs between passes)."""
    samples, backlog = [], count_rows(layout.memory_db, PENDING_VECTORS)
    for i in range(runs):
        capture_turns(layout, [typical_turn(rng, "after", i)])
        conn = schema.connect(layout.transcript_db, "transcript")
        try:
            asked = time.monotonic()
            request_flush(conn, "bench", time.time())
        finally:
            conn.close()
        done = wait_for(
            lambda: (
                count_rows(
                    layout.transcript_db, "SELECT count(*) FROM observations WHERE processed = 0"
                )
                == 0
            ),
            CATCH_UP_TIMEOUT,
            every=0.05,
        )
        samples.append(time.monotonic() - asked if done else float("inf"))
        time.sleep(1.0)
    worst = max(samples)
    rates = []
    with open(log, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if event.get("event") == "vectors_backfill":
                    rates.append(f"{event.get('per_second')}/s")
    return [
        Row(
            "rebuild: after it, flush -> curated while the daemon embeds",
            worst,
            "s",
            "<= 2 (a pass)",
            worst <= 2.0,
            f"worst of {runs} ({', '.join(f'{x:.1f}' for x in samples)} s); {backlog} vectors"
            " still to embed when the first was flushed; stand-in latency 0; the daemon's"
            f" vectors_backfill rate {', '.join(rates) or 'not logged'}",
        )
    ]


def _seed_vectors(layout: Layout) -> int:
    """A vector for every learning and turn, as if the live daemon had embedded them all
    (random values, as bench/semantic_bench.py does: timing does not depend on them)."""
    from wsd.daemon.memory.semantic import MODEL_ID

    conn = schema.connect(layout.memory_db, "memory")
    try:
        with schema.write_txn(conn):
            for table, key, source in (
                ("learning_vectors", "learning_id", "learnings"),
                ("turn_vectors", "turn_id", "turns"),
            ):
                ids = [int(r[0]) for r in conn.execute(f"SELECT id FROM {source}")]
                conn.executemany(
                    f"INSERT OR REPLACE INTO {table} ({key}, vector) VALUES (?, ?)",
                    ((i, os.urandom(384)) for i in ids),
                )
            for key, value in (
                ("vectors_model", MODEL_ID),
                ("vectors_epoch", os.urandom(16).hex()),
            ):
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES (?, ?)"
                    " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )
    finally:
        conn.close()
    return count_rows(layout.memory_db, VECTORS)


def _embedding_reference(layout: Layout, n: int = 8) -> list[Row]:
    """What one vector costs the model here: turn texts as the daemon embeds them, and
    learnings (in this process, one core, the model loaded first)."""
    from wsd.daemon.memory.semantic.dense import embed_texts
    from wsd.daemon.store import Store

    embed_texts(["warm up"])
    out = []
    for kind, name in (("T", "a turn"), ("L", "a learning")):
        batch = Store(layout).vectors.texts(kind, n)
        started = time.perf_counter()
        embed_texts(batch)
        per = (time.perf_counter() - started) / max(len(batch), 1)
        out.append(
            Row(
                f"rebuild: reference: the model embeds {name}",
                per * 1000,
                "ms",
                "-",
                None,
                f"mean of {len(batch)} ({sum(map(len, batch)) // max(len(batch), 1)} chars"
                f" on average), this process; a daemon step embeds what fits in 0.5 s",
            )
        )
    return out


def _quiet(
    env: dict[str, str],
    layout: Layout,
    standin: BridgeStandin,
    sem_note: str,
    semantic: bool,
    live_vectors: int,
    learnings: int,
    live_s: float,
) -> list[Row]:
    standin.responder = reworded  # every learning worded anew: no learning vector reusable
    before = _newest(layout)
    result, watch = _run_rebuild(env, layout, REBUILD_TIMEOUT)
    after = _newest(layout)
    try:
        swapped = watch.pause_to or result["ended"]
        embedded_at = (
            wait_for(lambda: watch.embedded_at(swapped) is not None, EMBED_TIMEOUT, every=0.1)
            if semantic and result["finished"]
            else False
        )
    finally:
        watch.done.set()
        watch.join(5)
    rest = watch.pending_after(swapped)
    done_at = watch.embedded_at(swapped)
    pause_s = (watch.pause_to or result["ended"]) - (watch.pause_from or result["started"])
    batches_s = (
        result["last_batch_at"] - result["paused_at"]
        if result["last_batch_at"] and result["paused_at"]
        else float("nan")
    )
    watched = (watch.pending[-1][0] if watch.pending else result["ended"]) - swapped
    beat = (
        f"still said so {watch.resumed_seen - swapped:.1f} s after the pause file went"
        if watch.resumed_seen is not None
        else f"still said so {watched:.0f} s after the pause file went, when we stopped looking"
    )
    finished = bool(result["finished"])
    note = (
        f"{TURNS} turns live-curated ({learnings} learnings, {live_vectors} vectors; live run"
        f" {live_s:.0f} s); stand-in rule curator, rebuild words every learning anew; {sem_note}"
    )
    if not finished:
        note += f"; NOT finished (exit {result['returncode']}): {' | '.join(result['tail'])}"
    return [
        Row(
            "rebuild (quiet): wsd rebuild total",
            result["seconds"],
            "s",
            "finishes; << 142 s (before)",
            finished and result["seconds"] < 142,
            note,
        ),
        Row(
            "rebuild (quiet): daemon's curation paused",
            pause_s,
            "s",
            f"<= its batches + {PAUSE_SLACK:g} s",
            finished and pause_s <= batches_s + PAUSE_SLACK,
            f"pause file live; {result['batches']} rebuild batches took {batches_s:.1f} s"
            f" (daemon paused -> last batch); the heartbeat's 'paused' {beat}"
            " (the daemon's next pass, WSD_POLL_SECONDS)",
        ),
        Row(
            "rebuild (quiet): vectors the rebuild embedded",
            float(result["embedded"]),
            "vectors",
            "0 (after the swap)",
            finished and result["embedded"] == 0 and result["model"] == 0,
            f"model loaded in the rebuild process: {'yes' if result['model'] == 1 else 'no'};"
            f" {sem_note}",
        ),
        Row(
            "rebuild (quiet): swap -> daemon embedded the rest",
            (done_at - swapped) if done_at is not None else float("nan"),
            "s",
            "-",
            None,
            f"{rest} vectors left to the daemon at the swap (learnings worded anew;"
            f" turn vectors reused); {'done' if embedded_at else 'NOT done'} within"
            f" {EMBED_TIMEOUT:.0f} s; newest (learning, turn) ids {before} -> {after};"
            f" {sem_note}",
        ),
    ]


def _writers(env: dict[str, str], layout: Layout, tmp: str, sem_note: str) -> list[Row]:
    stop_file = os.path.join(tmp, "writers.stop")
    code = "import sys; from bench.rebuild_bench import writer; writer(sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), int(sys.argv[5]))"  # noqa: E501
    base = count_rows(layout.transcript_db, "SELECT coalesce(max(id), 0) FROM observations")
    writer_env = {k: v for k, v in env.items() if not k.startswith("WSD_")}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                code,
                layout.root,
                str(w),
                stop_file,
                str(WRITER_REST),
                str(WRITER_MAX_TURNS),
            ],
            env=writer_env,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(WRITERS)
    ]
    writing = wait_for(
        lambda: count_rows(layout.transcript_db, "SELECT count(DISTINCT session_id) FROM"
                           " observations WHERE session_id LIKE 'writer-%'") >= WRITERS,
        30,
        every=0.1,
    )  # fmt: skip
    wall_from = time.time()
    result, watch = _run_rebuild(env, layout, REBUILD_TIMEOUT)
    wall_to = time.time()
    watch.done.set()
    watch.join(5)
    with open(stop_file, "w", encoding="utf-8"):
        pass
    sent, failed = 0, 0
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        if proc.returncode == 0 and out.split():
            sent += int(out.split()[-1])
        else:
            failed += 1
            print(f"rebuild: writer failed: {err[-500:]}", file=sys.stderr)
    caught_from = time.monotonic()
    curated = _wait_curated(layout, CATCH_UP_TIMEOUT)
    catch_up = time.monotonic() - caught_from
    mine = (
        f"SELECT id FROM observations WHERE session_id LIKE 'writer-%' AND id > {base}"
        " AND user_message IS NOT NULL"
    )
    observed = _ids(layout.transcript_db, mine)
    during = _ids(layout.transcript_db, mine + f" AND timestamp BETWEEN {wall_from} AND {wall_to}")
    covered = _ids(layout.memory_db, "SELECT observation_id FROM batch_turns")
    times = {i: covered.count(i) for i in set(covered)} if covered else {}
    once = sum(1 for i in observed if times.get(i) == 1)
    once_during = sum(1 for i in during if times.get(i) == 1)
    finished = bool(result["finished"])
    note = (
        f"{WRITERS} writer processes, a typical turn each every ~{WRITER_REST:g} s (capture"
        f" path, a connection per event); {result['batches']} rebuild batches; {sem_note}"
    )
    if not writing:
        note += "; writers had not all started"
    if not finished:
        note += (
            f"; NOT finished in {REBUILD_TIMEOUT:.0f} s (exit {result['returncode']}):"
            f" {' | '.join(result['tail'])}"
        )
    pause_s = (watch.pause_to or result["ended"]) - (watch.pause_from or result["started"])
    return [
        Row(
            "rebuild (8 writers): wsd rebuild total",
            result["seconds"],
            "s",
            f"finishes (< {REBUILD_TIMEOUT:.0f} s; before: > 400 s)",
            finished,
            note,
        ),
        Row(
            "rebuild (8 writers): daemon's curation paused",
            pause_s,
            "s",
            "-",
            None,
            "pause file live",
        ),
        Row(
            "rebuild (8 writers): turns written during it, curated after",
            float(once_during),
            "turns",
            f"all {len(during)}",
            finished and curated and once_during == len(during) and len(during) > 0,
            f"each exactly once; all the writers' turns: {once}/{len(observed)} observations"
            f" curated once ({sent} turns sent, {failed} writers failed); caught up"
            f" {catch_up:.1f} s after the writers stopped"
            + ("" if curated else f" (NOT within {CATCH_UP_TIMEOUT:.0f} s)"),
        ),
    ]
