"""A damaged spool costs only its damaged line (issue 13, items 4 and 6): a torn line never eats
the next event, a line that can never be recorded is set aside instead of halting curation,
and ``wsd doctor`` reports both."""

from __future__ import annotations

import itertools
import json
import os
import stat
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import (
    daemon_env,
    make_config,
    make_worker,
    query,
    running_daemon,
    scalar,
    venv_script,
    wait_for,
    wsd,
)
from wsd import schema
from wsd.daemon.ops.wiring import build_worker
from wsd.daemon.runtime.heartbeat import read_status
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.store import Store
from wsd.schema import spool
from wsd.schema.layout import Layout
from wsd.schema.transcript import Event, record


def _hook(env: dict[str, str], event: dict[str, Any]) -> None:
    subprocess.run([venv_script("wsd-hook")], input=json.dumps(event).encode(), env=env, check=True)


def _prompt(session: str, text: str) -> dict[str, Any]:
    return {"hook_event_name": "UserPromptSubmit", "session_id": session, "prompt": text}


def _stop(session: str, text: str) -> dict[str, Any]:
    return {"hook_event_name": "Stop", "session_id": session, "last_assistant_message": text}


def _rejected(layout: Layout) -> list[str]:
    path = Path(layout.memory_dir, spool.REJECTED_NAME)
    return path.read_text().splitlines() if path.exists() else []


def _ingest_spool(layout: Layout) -> spool.IngestReport:
    """Take the spool and record it, as the daemon's intake does."""
    taken = spool.take(layout.spool)
    assert taken is not None
    conn = schema.connect(layout.transcript_db, "transcript")
    try:
        return spool.ingest_file(taken, lambda ev: record(conn, ev, via="spool"))
    finally:
        conn.close()


def _spool_through_locked_db(layout: Layout, env: dict[str, str], events: list[Any]) -> None:
    """Run wsd-hook for each event while transcript.db is write-locked: every one spools."""
    blocker = schema.connect(layout.transcript_db, "transcript")
    blocker.execute("BEGIN IMMEDIATE")
    try:
        for event in events:
            _hook({**env, "WSD_HOOK_TIMEOUT_MS": "10"}, event)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()


def test_torn_spool_line_does_not_eat_the_next_event(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """A writer killed mid-line, then the next hook spools ``B prompt 0``: the daemon records
    B's turn, rejects only the torn part, and doctor reports the rejected line."""
    env = daemon_env(layout, standin)
    torn = Event("uid-torn", 1.0, "A", "UserPromptSubmit", None, {"prompt": "A prompt"})
    with open(layout.spool, "w") as fh:
        fh.write(torn.to_json()[:40])  # killed mid-write: no newline
    _spool_through_locked_db(layout, env, [_prompt("B", "B prompt 0"), _stop("B", "B answer 0")])
    with running_daemon(env, tmp_path / "wsd.log"):
        assert wait_for(lambda: not os.path.exists(layout.spool), timeout=20)
        assert wait_for(
            lambda: (
                query(layout.transcript_db, "SELECT user_message FROM observations")
                == [("B prompt 0",)]
            ),
            timeout=20,
        )
    assert _rejected(layout) == [torn.to_json()[:40]]
    doctor = wsd(env, "doctor", check=False)
    assert doctor.returncode == 1
    assert "spool rejected: 1 line(s)" in doctor.stdout


def test_ingest_splits_a_torn_line_fused_with_a_whole_event(layout: Layout) -> None:
    """A spool file damaged before the fix (torn text fused with a whole event on one line):
    the event is recorded, only the torn text is rejected."""
    whole = Event("uid-b", 2.0, "B", "UserPromptSubmit", None, {"prompt": "B prompt 0", "n": {}})
    nested = Event(
        "uid-c", 3.0, "B", "Stop", None, {"x": {"uid": "inner"}, "last_assistant_message": "a"}
    )
    torn = '{"uid": "uid-a", "ts": 1.0, "session_id": "A", "kind": "User'
    with open(layout.spool, "w") as fh:
        fh.write(torn + whole.to_json() + "\n" + torn + nested.to_json() + "\n")
    report = _ingest_spool(layout)
    assert (report.recorded, report.rejected) == (2, 2)
    assert _rejected(layout) == [torn, torn]
    got = query(layout.transcript_db, "SELECT uid FROM events ORDER BY id")
    assert got == [("uid-b",), ("uid-c",)]


@pytest.mark.parametrize(
    "bad",
    [
        {"ts": "NaN"},
        {"ts": float("inf")},
        {"ts": [1]},
        {"session_id": ["s"]},
        {"kind": "Nope"},
        {"uid": ""},
        {"payload": {"n": float("nan")}},
    ],
)
def test_unrecordable_spool_line_is_rejected_not_retried(
    layout: Layout, bad: dict[str, Any]
) -> None:
    """A parseable line whose event can never be recorded goes to the rejected file at once;
    the taken file is consumed and the valid events around it are recorded."""
    good = [
        Event(f"uid-{i}", 10.0 + i, "s", "UserPromptSubmit", None, {"prompt": f"p{i}"})
        for i in range(2)
    ]
    line = json.loads(good[0].to_json()) | {"uid": "uid-bad"} | bad
    with open(layout.spool, "w") as fh:
        fh.write(good[0].to_json() + "\n" + json.dumps(line) + "\n" + good[1].to_json() + "\n")
    report = _ingest_spool(layout)
    assert (report.recorded, report.rejected) == (2, 1)
    assert spool.pending_files(layout.spool) == []  # the taken file was consumed
    assert len(_rejected(layout)) == 1


def test_nan_spool_line_never_halts_curation(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """One ``"ts": "NaN"`` line among spooled turns: the daemon curates every turn, sets the line
    aside, and doctor exits non-zero naming it."""
    env = daemon_env(layout, standin, WSD_BATCH_TURNS="3")
    events = []
    for i in range(9):
        events += [_prompt("s", f"Task {i}: I prefer tabs in file {i}"), _stop("s", f"Done {i}.")]
    _spool_through_locked_db(layout, env, events[:4])
    bad = json.loads(Path(layout.spool).read_text().splitlines()[0]) | {"uid": "nan", "ts": "NaN"}
    spool.append(layout.spool, json.dumps(bad))
    _spool_through_locked_db(layout, env, events[4:])
    with running_daemon(env, tmp_path / "wsd.log"):
        assert wait_for(
            lambda: scalar(layout.memory_db, "SELECT coalesce(sum(turns), 0) FROM batches") == 9,
            timeout=30,
        )
    assert standin.requests, "the Bridge was never called"
    assert len(_rejected(layout)) == 1 and '"NaN"' in _rejected(layout)[0]
    doctor = wsd(env, "doctor", check=False)
    assert doctor.returncode == 1 and "spool rejected: 1 line(s)" in doctor.stdout


def test_doctor_names_a_spool_the_daemon_leaves_waiting(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A live spool whose first event is older than the stuck limit, and a taken file left
    that long, each make doctor fail naming it; a fresh spool does not."""
    env = daemon_env(layout, standin)
    _spool_through_locked_db(layout, env, [_prompt("s", "prompt 0")])
    assert "ok   spool: " in wsd(env, "doctor", check=False).stdout
    old = json.loads(Path(layout.spool).read_text()) | {"uid": "old", "ts": 1000.0}
    Path(layout.spool).write_text(json.dumps(old) + "\n")
    doctor = wsd(env, "doctor", check=False)
    assert doctor.returncode == 1
    assert "FAIL spool: " in doctor.stdout and "the daemon is not taking it" in doctor.stdout
    assert "ok   spool:" not in doctor.stdout
    taken = spool.take(layout.spool)
    assert taken is not None
    os.utime(taken, (1000.0, 1000.0))
    doctor = wsd(env, "doctor", check=False)
    assert doctor.returncode == 1
    assert f"spool stuck: {os.path.basename(taken)} not ingested" in doctor.stdout


def test_a_long_spool_ingest_keeps_the_heartbeat_fresh(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Recording a spool that grew while a lock was held rewrites the heartbeat as it goes,
    so doctor does not call a busy daemon stuck; the state it reports is left as it was."""
    ticks = itertools.count(time.time(), 1.0)  # each reading of the clock is one second later
    stop = threading.Event()
    config = make_config(layout, standin)
    worker = build_worker(config, Store(layout), stop, clock=lambda: next(ticks))
    worker.start()
    started = read_status(layout)
    assert started is not None
    for i in range(300):
        event = Event(f"uid-{i}", 10.0 + i, "s", "UserPromptSubmit", None, {"prompt": f"p{i}"})
        spool.append(layout.spool, event.to_json())
    worker.chores.intake.run()
    beat = read_status(layout)
    assert beat is not None and beat["state"] == started["state"]
    assert beat["heartbeat_at"] >= started["heartbeat_at"] + 250
    assert scalar(layout.transcript_db, "SELECT count(*) FROM events") == 300


def _within(seconds: float, call: Any) -> None:
    """Run ``call`` in a thread; fail (instead of hanging the suite) if it blocks."""
    done = threading.Thread(target=call, daemon=True)
    done.start()
    done.join(seconds)
    assert not done.is_alive(), f"{call} blocked for {seconds}s"


def test_a_fifo_at_the_spool_blocks_neither_hook_nor_daemon_and_loses_nothing(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A FIFO where the spool belongs: a hook that must spool sets it aside and spools to a
    fresh file, the daemon records the event, and doctor warns until --fix removes it."""
    env = daemon_env(layout, standin)
    os.mkfifo(layout.spool)
    _within(60, lambda: _spool_through_locked_db(layout, env, [_prompt("s", "through a fifo")]))
    refused = spool.refused_files(layout.spool)
    assert len(refused) == 1 and stat.S_ISFIFO(os.lstat(refused[0]).st_mode)
    assert stat.S_ISREG(os.lstat(layout.spool).st_mode)
    os.mkfifo(layout.spool + ".1.ingesting")  # and one where a taken part of it would be
    worker = make_worker(layout, standin)
    _within(60, worker.run_once)
    assert query(layout.transcript_db, "SELECT payload ->> 'prompt' FROM events") == [
        ("through a fifo",)
    ]
    assert not spool.waiting(layout.spool) and len(spool.refused_files(layout.spool)) == 2
    doctor = wsd(env, "doctor", check=False)
    assert "WARN spool refused: " in doctor.stdout and "a FIFO" in doctor.stdout
    fixed = wsd(env, "doctor", "--fix", check=False)
    assert "removed" in fixed.stdout and spool.refused_files(layout.spool) == []


def test_a_link_at_the_spool_is_never_followed_out(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """A symlink where the spool belongs, pointing out of the workspace: a hook's event never
    lands in its target, and the daemon records it from a fresh spool instead."""
    env = daemon_env(layout, standin)
    outside = tmp_path / "outside.jsonl"
    outside.write_text("not the daemon's\n")
    os.symlink(outside, layout.spool)
    _spool_through_locked_db(layout, env, [_prompt("s", "never out")])
    assert outside.read_text() == "not the daemon's\n"
    assert [os.readlink(p) for p in spool.refused_files(layout.spool)] == [str(outside)]
    os.symlink(outside, layout.spool + ".1.ingesting")
    make_worker(layout, standin).run_once()
    assert query(layout.transcript_db, "SELECT payload ->> 'prompt' FROM events") == [
        ("never out",)
    ]
    assert outside.read_text() == "not the daemon's\n" and not spool.waiting(layout.spool)


def test_an_overlong_spool_line_is_rejected_without_costing_its_neighbours(
    layout: Layout,
) -> None:
    """A 17 MB line with no newline between two events: both events are recorded, the line is
    rejected with only its first 4 kB kept."""
    first, last = (
        Event(f"uid-{i}", 10.0 + i, "s", "UserPromptSubmit", None, {"prompt": f"p{i}"})
        for i in range(2)
    )
    with open(layout.spool, "w") as fh:
        fh.write(first.to_json() + "\n" + "x" * (17 << 20) + "\n" + last.to_json() + "\n")
    report = _ingest_spool(layout)
    assert (report.recorded, report.rejected) == (2, 1)
    assert "over 16777216" in report.reasons[0]
    assert _rejected(layout) == ["x" * 4096]
