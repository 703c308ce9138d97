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
import tempfile
import time
from collections.abc import Callable

import apsw

from bench import Row
from bench.floors import alternated, bare_fts, ratio_row, warm_file
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


def _time(args: list[str], raw: Callable[[], object]) -> tuple[list[float], list[float], int]:
    """Milliseconds of ``wsd ARGS`` in-process and of ``raw`` (the data it reads, read
    bare), alternated RUNS times; and the command's exit code."""
    code = 0

    def run(_: int) -> None:
        nonlocal code
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
            code = wsd_main(args, env={})

    mine, bare = alternated(range(RUNS), run, lambda _: raw(), warm=2)
    return mine, bare, code


def _revisions(path: str) -> Callable[[], object]:
    """user.md's 1,000 revisions read raw, on a fresh read-only connection."""

    def read() -> object:
        conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return conn.execute(
                "SELECT content, batch_id, source FROM md_revisions WHERE file = 'user.md'"
                " ORDER BY id"
            ).fetchall()
        finally:
            conn.close()

    return read


def lineage() -> list[Row]:
    """blame of a 200-line file with 1,000 revisions, over its revisions read raw; why over
    100,000 learnings, over the revisions read raw and a bare FTS5 query of the words."""
    rng = random.Random(25)
    with tempfile.TemporaryDirectory(prefix="wsd-bench-") as tmp:
        layout = make_workspace(tmp, files=False)
        _fill(layout, rng)
        warm_file(layout.memory_db)
        base = ["--workspace", layout.root, "memory"]
        revisions, fts = _revisions(layout.memory_db), bare_fts(layout.memory_db)
        blame = _time([*base, "blame", "user.md"], revisions)
        line = _time([*base, "why", "user.md:100"], revisions)
        text = _time([*base, "why", "green tea"], lambda: (revisions(), fts("green tea")))
    reference = "user.md's 1,000 revisions read raw"
    return [
        _row("lineage: blame, 200-line file with 1,000 revisions", blame, BLAME_TARGET, reference,
             "in-process `wsd memory blame`"),
        _row("lineage: why FILE:N, same file", line, None, reference,
             "blame + the batch's turns"),
        _row("lineage: why WORDS over 100,000 learnings", text, WHY_TARGET,
             reference + " and a bare FTS5 query of the words",
             "`wsd memory why 'green tea'`: every curated file blamed for matching lines,"
             " the learnings' index searched"),
    ]  # fmt: skip


def _row(
    name: str,
    timed: tuple[list[float], list[float], int],
    target: float | None,
    reference: str,
    note: str,
) -> Row:
    mine, bare, code = timed
    row = ratio_row(f"{name} / its data read raw", mine, bare, target, reference, pct=50,
                    note=note)  # fmt: skip
    if code != 0:
        row.ok = False
    return row


#: blame and why WORDS over their data read raw (medians of RUNS, lineage). Over five runs of
#: this tree (issue 36) blame measured 4.67 to 8.28 (its 45 ms moved to 58 while the raw read
#: stayed near 7 ms) and why 4.17 to 5.65 (75 ms to 111): these catch a stall or a doubling,
#: not 20 %. The targets were 100 and 200 ms.
BLAME_TARGET = 9.5
WHY_TARGET = 6.2
