"""``wsd rebuild`` while 8 processes keep writing turns: the rebuild finishes, and every turn
written during it is curated exactly once after it (``python -m bench rebuild``, after the
quiet run of :mod:`bench.rebuild_bench`)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time

from bench import Row
from bench.procs import count_rows, wait_for
from bench.rebuild_watch import (
    CATCH_UP_TIMEOUT,
    REBUILD_TIMEOUT,
    REPO,
    ids,
    run_rebuild,
    wait_curated,
)
from bench.workload_turns import typical_turn
from wsd.schema.layout import Layout

WRITERS = 8
#: Each writer writes a turn, then rests this long (8 writers: ~30 turns/s at most; a busy
#: person's agent writes one every few seconds).
WRITER_REST = 0.25
WRITER_MAX_TURNS = 400


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


def under_writers(env: dict[str, str], layout: Layout, tmp: str, sem_note: str) -> list[Row]:
    stop_file = os.path.join(tmp, "writers.stop")
    code = "import sys; from bench.rebuild_writers import writer; writer(sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), int(sys.argv[5]))"  # noqa: E501
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
    result, watch = run_rebuild(env, layout, REBUILD_TIMEOUT)
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
    curated = wait_curated(layout, CATCH_UP_TIMEOUT)
    catch_up = time.monotonic() - caught_from
    mine = (
        f"SELECT id FROM observations WHERE session_id LIKE 'writer-%' AND id > {base}"
        " AND user_message IS NOT NULL"
    )
    observed = ids(layout.transcript_db, mine)
    during = ids(layout.transcript_db, mine + f" AND timestamp BETWEEN {wall_from} AND {wall_to}")
    covered = ids(layout.memory_db, "SELECT observation_id FROM batch_turns")
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
