"""``wsd memory blame`` and ``wsd memory why`` at the sizes a long-lived memory reaches.

A user.md of 200 lines edited 1,000 times (each revision changes, adds or removes a few
lines, as curator batches and hand edits do), 100,000 learnings each with its source
turns, and 2,000 indexed turns. Each command runs in-process through ``wsd``'s own entry
point (argument parsing, the queries, the output written to /dev/null): the median of
several runs, the slowest beside it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import statistics
import tempfile
import time

from bench import Row
from bench.workload_files import make_workspace
from wsd import schema
from wsd.daemon.ops.cli import main as wsd_main
from wsd.daemon.store import learning_key
from wsd.schema.layout import Layout

LINES = 200
REVISIONS = 1_000
LEARNINGS = 100_000
TURNS = 2_000
RUNS = 9
IDENTITY = "bench-transcript"


def _fill(layout: Layout, rng: random.Random) -> None:
    """The revisions, batches, turns and learnings, straight into memory.db (one transaction)."""
    conn = schema.connect(layout.memory_db, "memory")
    try:
        with schema.write_txn(conn):
            now = time.time() - 86400 * 400
            for t in range(1, TURNS + 1):
                conn.execute(
                    "INSERT INTO turns (transcript_identity, observation_id, session_id,"
                    " sequence_num, created_at, prompt, response) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (IDENTITY, t, f"s{t // 20}", t % 20, now + t * 60, f"Task {t}: tea {t}", "ok"),
                )
            lines = [f"- line {i}: Marie prefers item {i} of the list" for i in range(LINES)]
            for r in range(1, REVISIONS + 1):
                first, last = (r - 1) * 2 + 1, (r - 1) * 2 + 2
                conn.execute(
                    "INSERT INTO batches (id, transcript_identity, first_observation_id,"
                    " last_observation_id, turns, status, started_at, finished_at)"
                    " VALUES (?, ?, ?, ?, 2, 'done', ?, ?)",
                    (r, IDENTITY, first, last, now + r * 120, now + r * 120),
                )
                conn.executemany(
                    "INSERT INTO batch_turns VALUES (?, ?, ?)",
                    [(IDENTITY, first, r), (IDENTITY, last, r)],
                )
                for _ in range(rng.randint(1, 3)):
                    at = rng.randrange(len(lines))
                    what = rng.random()
                    if what < 0.5:
                        lines[at] = f"- revised {r}: green tea at {rng.randint(1, 12)} pm"
                    elif what < 0.75 and len(lines) > LINES - 20:
                        del lines[at]
                    else:
                        lines.insert(at, f"- added {r}: the studio is open on day {r % 7}")
                content = "# User\n" + "\n".join(lines) + "\n"
                conn.execute(
                    "INSERT INTO md_revisions (file, content, sha256, created_at, batch_id,"
                    " source) VALUES ('user.md', ?, ?, ?, ?, ?)",
                    (
                        content,
                        hashlib.sha256(content.encode()).hexdigest(),
                        now + r * 120,
                        None if r % 10 == 0 else r,
                        "hand" if r % 10 == 0 else "curator",
                    ),
                )
            for n in range(1, LEARNINGS + 1):
                text = f"Learning {n}: {rng.choice(('tea', 'coffee', 'water'))} at {n % 97} o'clock"
                batch = n % REVISIONS + 1
                conn.execute(
                    "INSERT INTO learnings (id, created_at, type, content, content_key, batch_id)"
                    " VALUES (?, ?, 'fact', ?, ?, ?)",
                    (n, now + n, text, learning_key(text), batch),
                )
                conn.execute(
                    "INSERT INTO learning_sources VALUES (?, ?, ?, 1)",
                    (n, IDENTITY, (batch - 1) * 2 + 1),
                )
    finally:
        conn.close()


def _time(args: list[str]) -> tuple[float, float, int]:
    """Median and slowest milliseconds of ``wsd ARGS`` in-process, and its exit code."""
    samples = []
    code = 0
    with open(os.devnull, "w") as sink:
        for _ in range(RUNS):
            started = time.perf_counter()
            with contextlib.redirect_stdout(sink):
                code = wsd_main(args, env={})
            samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples), max(samples), code


def lineage() -> list[Row]:
    """blame of a 200-line file with 1,000 revisions; why over 100,000 learnings."""
    rng = random.Random(25)
    with tempfile.TemporaryDirectory(prefix="wsd-bench-") as tmp:
        layout = make_workspace(tmp, files=False)
        _fill(layout, rng)
        base = ["--workspace", layout.root, "memory"]
        blame_ms, blame_max, blame_code = _time([*base, "blame", "user.md"])
        line_ms, line_max, line_code = _time([*base, "why", "user.md:100"])
        text_ms, text_max, text_code = _time([*base, "why", "green tea"])
    return [
        Row(
            "lineage: blame, 200-line file with 1,000 revisions",
            round(blame_ms, 1),
            "ms",
            "<= 100",
            blame_ms <= 100 and blame_code == 0,
            f"median of {RUNS}, slowest {blame_max:.1f} ms; in-process `wsd memory blame`",
        ),
        Row(
            "lineage: why FILE:N, same file",
            round(line_ms, 1),
            "ms",
            "-",
            None if line_code == 0 else False,
            f"median of {RUNS}, slowest {line_max:.1f} ms; blame + the batch's turns",
        ),
        Row(
            "lineage: why WORDS over 100,000 learnings",
            round(text_ms, 1),
            "ms",
            "<= 200",
            text_ms <= 200 and text_code == 0,
            f"median of {RUNS}, slowest {text_max:.1f} ms; `wsd memory why 'green tea'`:"
            " every curated file blamed for matching lines, the learnings' index searched",
        ),
    ]
