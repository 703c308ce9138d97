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

Here: the workspace, the quiet rebuild and what the model costs. The rebuild run and watched
(pause file, heartbeat, vectors still to make) is :mod:`bench.rebuild_watch`; the rebuild
under 8 writer processes is :mod:`bench.rebuild_writers`.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import sys
import tempfile
import time
from typing import Any

from bench import Row
from bench.procs import WSD, count_rows, daemon_env, running_daemon, wait_for
from bench.rebuild_watch import (
    CATCH_UP_TIMEOUT,
    PENDING_VECTORS,
    REBUILD_TIMEOUT,
    VECTORS,
    newest,
    run_rebuild,
    wait_curated,
)
from bench.rebuild_writers import under_writers
from bench.workload_files import make_workspace
from bench.workload_turns import capture_turns, typical_turn
from wsd import schema
from wsd.daemon.memory.semantic import missing
from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import BridgeStandin, Reply
from wsd.schema.layout import Layout
from wsd.schema.transcript import request_flush

#: Turns the live daemon has curated before the rebuild (the attack's was 329).
TURNS = 330
#: How long the daemon may take to embed what the rebuild left to it.
EMBED_TIMEOUT = 60.0
#: The rebuild's own batches, plus this much (the wait for the daemon's pass, the swap).
PAUSE_SLACK = 5.0

_LEARNING = re.compile(
    r"^(FACT|PATTERN|CORRECTION|PREFERENCE|TOOL_INSTALL)(\s*(?:\[[^\]]*\])?\s*:\s*)"
)


def reworded(body: dict[str, Any]) -> Reply:
    """The rule-based curator, every learning worded anew ("Rebuilt: ...")."""
    text = rule_curator.responder_text(body)
    return Reply.text("\n".join(_LEARNING.sub(r"\1\2Rebuilt: ", line) for line in text.split("\n")))


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
            if not wait_curated(layout, CATCH_UP_TIMEOUT) or not wait_for(
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
            rows += under_writers(env, layout, tmp, sem_note)
            if semantic:
                rows += _curated_while_embedding(layout, rng, log)
            if daemon.poll() is not None:
                rows.append(Row("rebuild: daemon", float("nan"), "", "alive", False, "daemon died"))
            if semantic:
                rows += _embedding_reference(layout)
    return rows


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
    before = newest(layout)
    result, watch = run_rebuild(env, layout, REBUILD_TIMEOUT)
    after = newest(layout)
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
