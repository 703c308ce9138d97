"""``wsd forget WORDS --yes`` on a workspace of 100,000 turns and 100,000 learnings with the
daemon running (issue 33, item 8): the seconds it takes (target 10 s), the dry run's, and that
the daemon curates on after it.

The workspace: 100,000 turns recorded through the hook's own verb (hygiene applied once per
template turn, :func:`bench.workload_turns.record_turns`), marked curated and indexed for
search by the store's own indexer (what the daemon does), and 100,000 synthetic learnings
(the vocabulary of :mod:`bench.memory_bench`). 40 turns and 20 learnings hold the words.
"""

from __future__ import annotations

import os
import random
import subprocess
import tempfile
import time

import apsw

from bench import Row
from bench.memory_bench import _sentence, _vocabulary
from bench.procs import WSD, count_rows, daemon_env, running_daemon, wait_for
from bench.workload_files import make_workspace
from bench.workload_turns import capture_turns, record_turns, typical_turn
from wsd import schema
from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.store import Store
from wsd.schema.layout import Layout

#: The workspace's size (the issue's figure); WSD_BENCH_FORGET_TURNS sizes a quicker look.
TURNS = int(os.environ.get("WSD_BENCH_FORGET_TURNS", "100000"))
WORDS = "Lincoln Elementary"
#: The erasure over the bare scan (forget): 5.19 and 5.03 on this tree (issue 36), so 5.7
#: fails a 20 % regression.
TARGET_RATIO = 5.7
PLANTED_TURNS = 40
PLANTED_LEARNINGS = 20


def forget() -> list[Row]:
    """Time the erasure (and its dry run) beside a running daemon."""
    if not os.path.exists(WSD):
        return [Row("forget", float("nan"), "s", "-", None, f"{WSD} is not installed")]
    rng = random.Random(33)
    with (
        tempfile.TemporaryDirectory(prefix="wsd-forget-") as tmp,
        BridgeStandin(responder=rule_curator.responder) as standin,
    ):
        layout = make_workspace(os.path.join(tmp, "ws"))
        setup = time.monotonic()
        _fill(layout, rng)
        built = time.monotonic() - setup
        scan = _bare_scan(layout)
        env = daemon_env(layout, standin, WSD_SEMANTIC="false", WSD_BATCH_TURNS="2")
        log = os.path.join(tmp, "wsd.log")
        with running_daemon(env, log) as daemon:
            time.sleep(3.0)  # started, idle
            dry_s, dry = _timed(env, [WORDS])
            erase_s, done = _timed(env, [WORDS, "--yes"])
            batches = count_rows(layout.memory_db, "SELECT count(*) FROM batches")
            capture_turns(layout, [typical_turn(rng, "after", i) for i in range(6)])
            goes_on = wait_for(
                lambda: count_rows(layout.memory_db, "SELECT count(*) FROM batches") > batches,
                60,
            )
            alive = daemon.poll() is None
    note = f"{TURNS:,} turns + {TURNS:,} learnings, daemon running; set-up {built:.0f} s"
    ratio = erase_s / scan
    return [
        Row(
            "forget --yes (erase everything holding the words) / a bare scan for them",
            ratio,
            "x",
            f"<= {TARGET_RATIO:g}",
            done == 0 and ratio <= TARGET_RATIO,
            f"{erase_s:.2f} s / {scan:.2f} s (every turn, indexed turn and learning read for"
            f" the words, bare SQL, median of 3); {note}; the target was 10 s",
        ),
        Row("forget dry run", round(dry_s, 2), "s", "-", dry == 0 and None, note),
        Row(
            "daemon curates after a forget",
            float(goes_on and alive),
            "",
            "1",
            goes_on and alive,
            "a new batch committed within 60 s",
        ),
    ]


def _bare_scan(layout: Layout) -> float:
    """Seconds to read every text that may hold the words (the transcript's turns, the turn
    index, the learnings) and find them, bare SQL: what no erasure can do without. The
    median of three."""
    queries = (
        (
            layout.transcript_db,
            "SELECT count(*) FROM observations WHERE instr(lower(coalesce(user_message, '')"
            " || tool_calls_json || coalesce(agent_response, '')), lower(?))",
        ),
        (
            layout.memory_db,
            "SELECT count(*) FROM turns WHERE instr(lower(prompt || response || tools), lower(?))",
        ),
        (layout.memory_db, "SELECT count(*) FROM learnings WHERE instr(lower(content), lower(?))"),
    )
    samples = []
    for _ in range(3):
        started = time.monotonic()
        for path, sql in queries:
            conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
            try:
                conn.execute(sql, (WORDS,)).fetchall()
            finally:
                conn.close()
        samples.append(time.monotonic() - started)
    return sorted(samples)[1]


def _timed(env: dict[str, str], args: list[str]) -> tuple[float, int]:
    started = time.monotonic()
    done = subprocess.run(
        [WSD, "forget", *args], env=env, capture_output=True, text=True, timeout=600
    )
    if done.returncode:
        print(f"wsd forget {' '.join(args)}: exit {done.returncode}: {done.stderr[-500:]}")
    return time.monotonic() - started, done.returncode


def _fill(layout: object, rng: random.Random) -> None:
    """TURNS turns (PLANTED_TURNS holding the words) curated and indexed; TURNS learnings
    (PLANTED_LEARNINGS holding them)."""
    from wsd.schema.layout import Layout

    assert isinstance(layout, Layout)
    templates = [typical_turn(rng, "bench", i) for i in range(50)]
    planted = typical_turn(rng, "planted", 0)
    planted[0]["prompt"] = f"My daughter goes to {WORDS} now. Please book the bus."
    record_turns(layout, templates, TURNS - PLANTED_TURNS)
    record_turns(layout, [planted], PLANTED_TURNS)
    conn = schema.connect(layout.transcript_db, "transcript")
    try:
        with schema.write_txn(conn):
            conn.execute("UPDATE observations SET processed = 1")
    finally:
        conn.close()
    store = Store(layout)
    while store.archive.index_new_turns():
        pass
    vocab, weights = _vocabulary(rng)
    now = time.time()
    rows = [
        (now - i, "bench", "fact", text, f"bench:{i}")
        for i in range(TURNS)
        for text in (
            f"The school is {WORDS}, {i}"
            if i < PLANTED_LEARNINGS
            else _sentence(rng, vocab, weights),
        )
    ]
    identity = store.transcript_identity()
    conn = schema.connect(layout.memory_db, "memory")
    try:
        with schema.write_txn(conn):
            conn.executemany(
                "INSERT INTO learnings (created_at, session_id, type, content, content_key)"
                " VALUES (?, ?, ?, ?, ?)",
                rows,
            )
            # The ledger covers every turn (100 a batch), as after a live run: the daemon
            # starting on this workspace has nothing to curate.
            for first in range(1, TURNS + 1, 100):
                last = min(first + 99, TURNS)
                conn.execute(
                    "INSERT INTO batches (transcript_identity, first_observation_id,"
                    " last_observation_id, turns, status, started_at, finished_at)"
                    " VALUES (?, ?, ?, ?, 'done', ?, ?)",
                    (identity, first, last, last - first + 1, now, now),
                )
                batch = conn.last_insert_rowid()
                conn.executemany(
                    "INSERT INTO batch_turns (transcript_identity, observation_id, batch_id)"
                    " VALUES (?, ?, ?)",
                    [(identity, oid, batch) for oid in range(first, last + 1)],
                )
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
