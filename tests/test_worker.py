"""The daemon loop driven step by step: triggers, curation, validation, exactly-once."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import apsw
import pytest
from structlog.testing import capture_logs

from tests.conftest import drain, flush, make_worker, write_turns
from tests.conftest import query as q
from wsd import schema
from wsd.daemon.memory.md import files as md_files
from wsd.daemon.memory.md import files_md
from wsd.daemon.runtime.fsio import TEMP_PREFIX
from wsd.daemon.standin.bridge import BridgeStandin, Fault, Reply
from wsd.daemon.store import Store
from wsd.hooks.capture import Capture, CaptureConfig
from wsd.schema.layout import Layout
from wsd.schema.transcript import request_flush


def test_threshold_batch_curates_turns_into_memory(layout: Layout, standin: BridgeStandin) -> None:
    """Five closed turns (the threshold) become learnings, md files and a done ledger batch."""
    worker = make_worker(layout, standin, batch_turns=5)
    write_turns(layout, 4)
    assert drain(worker) == ["waiting"]
    assert standin.requests == []
    write_turns(layout, 1, start=4)
    assert drain(worker) == ["curated", "waiting"] or drain(worker)
    batches = q(
        layout.memory_db,
        "SELECT status, turns, first_observation_id, last_observation_id FROM batches",
    )
    assert batches == [("done", 5, 1, 5)]
    kinds = {r[0] for r in q(layout.memory_db, "SELECT DISTINCT type FROM learnings")}
    assert {"preference", "tool_install"} <= kinds
    assert q(layout.transcript_db, "SELECT count(*) FROM observations WHERE processed = 0") == [
        (0,)
    ]
    latest = Store(layout).revisions.latest_md()
    assert "tools.md" in latest and "user.md" in latest
    for name, content in latest.items():
        assert Path(layout.md(name)).read_text() == content


def _curate_now(layout: Layout, standin: BridgeStandin) -> tuple[str, str]:
    """Flush and curate what is pending; the (memory files, turns) text of the first request."""
    flush(layout)
    drain(make_worker(layout, standin))
    body = standin.requests[0].json
    assert body is not None
    memory, turns = body["messages"][0]["content"]
    return str(memory["text"]), str(turns["text"])


def test_curator_sees_the_gist_of_structured_tool_results(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Structured results are sent as their non-empty fields, unquoted (one alone without its
    name), a call's key input field without its name; look-only results not."""
    cap = Capture(CaptureConfig(workspace=layout.root))
    base = {"session_id": "g1"}
    cap.handle({**base, "hook_event_name": "UserPromptSubmit", "prompt": "Install csvkit"})
    bash_out = {"stdout": "Successfully installed csvkit-2.0", "stderr": "", "interrupted": False}
    cap.handle(
        {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "pip install csvkit"},
            "tool_response": bash_out | {"isImage": False, "extra": None},
        }
    )
    read_out = {"type": "text", "file": {"content": "SECRET-LOOKING FILE BODY"}}
    cap.handle(
        {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": "/w/a.txt"},
            "tool_response": read_out,
        }
    )
    cap.handle({**base, "hook_event_name": "Stop", "last_assistant_message": "Installed."})
    cap.close()
    _memory, turns = _curate_now(layout, standin)
    shown = "tool Bash: pip install csvkit → Successfully installed csvkit-2.0"
    assert shown in turns
    assert "interrupted" not in turns and "isImage" not in turns and "stderr" not in turns
    assert "tool Read: /w/a.txt\n" in turns and "FILE BODY" not in turns


def test_curator_sees_the_notes_of_files_md_but_not_the_watchers_inventory(
    layout: Layout, standin: BridgeStandin
) -> None:
    """files.md is sent as its notes part only: the daemon's disk inventory never costs input."""
    inventory = [f"- documents/invoice-{i}.pdf (12 kB, 2026-11-0{i % 9 + 1})" for i in range(120)]
    notes = "# Files\n- documents/ holds the person's originals"
    Path(layout.md("files.md")).write_text(files_md.compose(notes, [files_md.MARKER, *inventory]))
    write_turns(layout, 1)
    memory, _turns = _curate_now(layout, standin)
    assert '<file name="files.md" max_lines="150">' in memory
    assert "documents/ holds the person's originals" in memory
    assert "invoice-7.pdf" not in memory and files_md.MARKER not in memory
    assert "invoice-7.pdf" in Path(layout.md("files.md")).read_text()  # still on disk


def test_flush_request_curates_everything_now(layout: Layout, standin: BridgeStandin) -> None:
    """A flush request curates a backlog below the threshold at once, then is marked handled."""
    worker = make_worker(layout, standin, batch_turns=25)
    write_turns(layout, 3)
    assert drain(worker) == ["waiting"]
    flush(layout)
    drain(worker)
    assert q(layout.memory_db, "SELECT sum(turns) FROM batches WHERE status = 'done'") == [(3,)]
    assert q(
        layout.transcript_db, "SELECT count(*) FROM flush_requests WHERE handled_at IS NULL"
    ) == [(0,)]


def test_a_flush_is_answered_by_its_own_turns_while_others_keep_coming(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A flush is answered once the turns closed before it are curated, though a later turn
    of another session is still pending; that turn waits for its own trigger (a flush held
    open until the backlog was empty, which steady writing may never allow, kept
    `wsd flush --wait` waiting and curated every later turn at once)."""
    worker = make_worker(layout, standin, batch_turns=3)
    write_turns(layout, 3)
    flush(layout)
    time.sleep(0.01)
    write_turns(layout, 2, start=3, session="s2")
    drain(worker)
    assert q(layout.memory_db, "SELECT sum(turns) FROM batches WHERE status = 'done'") == [(3,)]
    assert q(
        layout.transcript_db, "SELECT count(*) FROM flush_requests WHERE handled_at IS NULL"
    ) == [(0,)]
    assert q(layout.transcript_db, "SELECT count(*) FROM observations WHERE processed = 0") == [
        (2,)
    ]
    write_turns(layout, 1, start=5, session="s2")  # the threshold, as without the flush
    drain(worker)
    assert q(layout.memory_db, "SELECT sum(turns) FROM batches WHERE status = 'done'") == [(6,)]


def test_a_flush_after_a_clock_step_back_still_waits_for_the_turns_before_it(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A flush asked for after the clock stepped back (its time an hour before the turns that
    closed before it) still curates those turns at once and is answered after them: "before"
    is also by turn id (by time alone it was answered at once, nothing curated)."""
    worker = make_worker(layout, standin, batch_turns=25)
    write_turns(layout, 3)
    conn = schema.connect(layout.transcript_db, "transcript")
    try:
        request_flush(conn, "cli", time.time() - 3600)
    finally:
        conn.close()
    assert drain(worker)[0] == "curated"
    assert q(layout.memory_db, "SELECT sum(turns) FROM batches WHERE status = 'done'") == [(3,)]
    assert q(
        layout.transcript_db, "SELECT count(*) FROM flush_requests WHERE handled_at IS NULL"
    ) == [(0,)]


def test_idle_trigger_needs_old_turns_and_quiet_sessions(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Below the threshold, turns are curated once the oldest is old and sessions are quiet."""
    worker = make_worker(layout, standin, batch_turns=25, idle_seconds=300, quiet_seconds=120)
    write_turns(layout, 2)
    now = time.time()
    assert drain(worker, now=now + 60) == ["waiting"]
    assert drain(worker, now=now + 3600)[0] == "curated"
    assert q(layout.memory_db, "SELECT sum(turns) FROM batches") == [(2,)]


def test_character_budget_splits_batches(layout: Layout, standin: BridgeStandin) -> None:
    """A small character budget puts fewer turns in each curator call; all still get curated."""
    worker = make_worker(layout, standin, batch_turns=5, batch_chars=400)
    write_turns(layout, 5)
    drain(worker)  # one budget-sized batch; the rest is below the threshold again
    flush(layout)
    drain(worker)
    sizes = [r[0] for r in q(layout.memory_db, "SELECT turns FROM batches ORDER BY id")]
    assert sum(sizes) == 5 and len(sizes) > 1
    for req in standin.requests:
        assert req.json is not None
        text = req.json["messages"][0]["content"][1]["text"]
        assert text.count("<turn ") <= 5


def test_huge_turn_is_squeezed_into_the_budget(layout: Layout, standin: BridgeStandin) -> None:
    """One turn larger than the budget is cut to fit rather than overflowing the call."""
    worker = make_worker(layout, standin, batch_turns=1, batch_chars=3000)
    cap = Capture(CaptureConfig(workspace=layout.root, max_field_chars=2000))
    cap.handle({"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "go"})
    for i in range(40):
        cap.handle(
            {
                "hook_event_name": "PostToolUse",
                "session_id": "s",
                "tool_name": f"T{i}",
                "tool_input": {"x": "y" * 1500},
                "tool_response": "z" * 1900,
            }
        )
    cap.handle({"hook_event_name": "Stop", "session_id": "s", "last_assistant_message": "ok"})
    drain(worker)
    (req,) = standin.requests
    assert req.json is not None
    assert len(req.json["messages"][0]["content"][1]["text"]) < 3600


def _scripted(standin: BridgeStandin, text: str, stop_reason: str | None = None) -> None:
    standin.script(Reply(({"type": "text", "text": text},), stop_reason))


def test_reply_validation(layout: Layout, standin: BridgeStandin) -> None:
    """Unknown lines are ignored, what passes a line limit refused (the rest applied, the
    refusal on the ledger row), soul.md never written, duplicates stored once."""
    worker = make_worker(layout, standin, batch_turns=1)
    # The person's words hold what the reply says of them (issue 32: grounding).
    write_turns(layout, 1, prompt="I like dark mode; review the report")
    too_long = "\n".join(f"- line {i}" for i in range(151))
    _scripted(
        standin,
        "FACT: The build uses make.\nfact: lowercase is unknown\n"
        "Hello there, I am chatty\nPREFERENCE: Dark mode.\n"
        "ACTION: [high] Review the report\nACTION: [high] Review the report\n"
        f"TOOLS_MD_UPDATE:\n{too_long}\nUSER_MD_UPDATE:\n# User\n- Likes dark mode\n"
        "SOUL_MD_UPDATE:\nI am evil now\n",
    )
    with capture_logs() as logs:
        drain(worker)
    assert sorted(q(layout.memory_db, "SELECT type, content FROM learnings")) == [
        ("fact", "The build uses make."),
        ("preference", "Dark mode."),
    ]
    assert q(layout.memory_db, "SELECT content, priority FROM pending_actions") == [
        ("Review the report", 1)
    ]
    assert set(Store(layout).revisions.latest_md()) == {"user.md", "tools.md"}
    assert len(Path(layout.md("tools.md")).read_text().splitlines()) == 150
    assert not os.path.exists(layout.md("soul.md"))  # the fixture installs no template
    (refused,) = q(layout.memory_db, "SELECT refused FROM batches")[0]
    assert "tools.md: add 0: - line 150: over the 150-line limit" in json.loads(refused)
    events = {e["event"] for e in logs}
    assert {"reply_lines_ignored", "reply_refused", "batch"} <= events
    # Counted in the log, never quoted: the reply's lines and what the guards refused of it.
    assert "chatty" not in repr(logs) and "- line 150" not in repr(logs)
    # The same learnings again in a later batch are not stored twice.
    write_turns(layout, 1, start=1, prompt="I like dark mode; review the report")
    _scripted(standin, "FACT: the build uses  make\nACTION: [high] Review the report")
    drain(worker)
    assert q(layout.memory_db, "SELECT count(*) FROM learnings") == [(2,)]
    assert q(layout.memory_db, "SELECT count(*) FROM pending_actions") == [(1,)]


def test_a_direct_reply_longer_than_max_tokens_can_carry_is_asked_again(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A prompt-lane answer with more text than max_tokens tokens can hold is no reply: it is
    booked (billed) and asked again, and only the sound answer is applied."""
    worker = make_worker(layout, standin, batch_turns=1)
    write_turns(layout, 1)
    _scripted(standin, "FACT: flood\n" * 10_000)  # 120,000 characters > 4,096 x 16
    _scripted(standin, "FACT: The build uses make.")
    drain(worker)
    assert q(layout.memory_db, "SELECT content FROM learnings") == [("The build uses make.",)]
    assert q(layout.memory_db, "SELECT attempts FROM batches WHERE status = 'done'") == [(2,)]
    charges = "SELECT status FROM charges ORDER BY id"  # the flood's usage is implausible too
    assert q(layout.transcript_db, charges) == [("estimated",), ("billed",)]


def test_truncated_reply_keeps_learnings_but_not_updates(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A reply cut at max_tokens keeps its learnings and applies no md update."""
    worker = make_worker(layout, standin, batch_turns=1)
    write_turns(layout, 1, prompt="No, dates here are DD/MM/YYYY")
    _scripted(
        standin,
        "CORRECTION: Dates are DD/MM/YYYY\nUSER_MD_UPDATE:\n# User\n- Dates DD/",
        stop_reason="max_tokens",
    )
    drain(worker)
    assert q(layout.memory_db, "SELECT type FROM learnings") == [("correction",)]
    assert Store(layout).revisions.latest_md() == {}
    assert q(layout.memory_db, "SELECT stop_reason FROM batches") == [("max_tokens",)]


@pytest.mark.parametrize(
    "fault",
    [
        # The window starts when scripted, so it must outlast the worker's way to its first
        # connect and end before the retry (>= 1 s later): 0.9 s, with the SDK imported first.
        Fault.refuse(0.9),
        Fault.reset(),
        Fault.hang(5),
        Fault.rate_limited(retry_after=0.2),
        Fault.rate_limited(retry_after=None, retry_after_ms=150),
        Fault.server_error(),
        Fault.overloaded(),
        Fault.malformed_json(),
        Reply.empty(),
    ],
    ids=["refused", "reset", "hang", "429", "429ms", "500", "529", "malformed", "empty"],
)
def test_transient_fault_then_recovery_curates_once(
    layout: Layout, standin: BridgeStandin, fault: Any
) -> None:
    """Each transient Bridge fault is retried; once it recovers every turn is curated once."""
    worker = make_worker(layout, standin, batch_turns=2, request_timeout=1.0)
    write_turns(layout, 2)
    importlib.import_module("anthropic")  # imported on first call: ~1 s under load (CI flake)
    standin.script(fault)
    drain(worker)
    assert q(layout.memory_db, "SELECT status, turns, attempts FROM batches") == [("done", 2, 2)]
    assert q(layout.memory_db, "SELECT count(*) FROM batch_turns") == [(2,)]


def test_all_faults_in_sequence_end_with_everything_curated_once(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Every fault mode back to back: no crash, bounded calls, all turns curated once, md intact."""
    moved: list[float] = []  # the monotonic clock, once the test moves it by hand
    worker = make_worker(
        layout,
        standin,
        monotonic=lambda: moved[-1] if moved else time.monotonic(),
        batch_turns=2,
        request_timeout=0.5,
        retry_attempts=2,
        outage_backoff=5,
        outage_backoff_max=20,
    )
    write_turns(layout, 2)
    drain(worker)  # a first good batch writes the md files
    good = {name: Path(layout.md(name)).read_text() for name in Store(layout).revisions.latest_md()}
    write_turns(layout, 4, start=2)
    faults: list[Any] = [
        Fault.refuse(0.3),
        Fault.reset(),
        Fault.hang(3),
        Fault.rate_limited(retry_after=0.1),
        Fault.server_error(),
        Fault.overloaded(),
        Fault.malformed_json(),
        Reply.empty(),
        Reply(({"type": "text", "text": "USER_MD_UPDATE:\n# User\n- half a fi"},), "max_tokens"),
    ]
    standin.script(*faults)
    now, mono = time.time(), time.monotonic()
    for step in range(60):
        moved.append(mono + step * 30)  # both clocks move on
        worker.run_once(now + step * 30)
        if not q(layout.transcript_db, "SELECT count(*) FROM observations WHERE processed = 0")[0][
            0
        ]:
            break
    covering = q(
        layout.memory_db,
        "SELECT observation_id, count(*) FROM batch_turns t"
        " JOIN batches b ON b.id = t.batch_id AND b.status = 'done'"
        " GROUP BY 1",
    )
    assert sorted(covering) == [(i, 1) for i in range(1, 7)]
    assert len(standin.requests) <= len(faults) + 3  # every fault cost one call, no more
    assert Path(layout.md("user.md")).read_text() == Store(layout).revisions.latest_md()["user.md"]
    assert "half a fi" not in Path(layout.md("user.md")).read_text()
    assert set(good) <= set(Store(layout).revisions.latest_md())


def test_long_outage_backs_off_and_survives_restart(layout: Layout, standin: BridgeStandin) -> None:
    """When retries run out the next attempt time is stored, honoured, and read back on restart."""
    now, mono = time.time(), [1000.0]
    worker = make_worker(
        layout,
        standin,
        batch_turns=1,
        retry_attempts=2,
        outage_backoff=30,
        clock=lambda: now,
        monotonic=lambda: mono[0],
    )
    write_turns(layout, 1)
    standin.script(Fault.overloaded(), Fault.overloaded())
    with capture_logs() as logs:
        assert worker.run_once(now).action == "backoff"
    assert any(e["event"] == "bridge_unavailable" for e in logs)
    assert len(standin.requests) == 2
    mono[0] += 5
    assert worker.run_once(now + 5).action == "backoff"  # no call while backing off
    assert len(standin.requests) == 2
    state = dict(q(layout.memory_db, "SELECT key, value FROM state"))
    assert float(state["next_attempt_at"]) == pytest.approx(now + 30, abs=1)
    restart_mono = [0.0]  # a new process: its monotonic clock has nothing to do with ours
    restarted = make_worker(
        layout, standin, batch_turns=1, clock=lambda: now + 10, monotonic=lambda: restart_mono[0]
    )
    assert restarted.run_once(now + 10).action == "backoff"
    restart_mono[0] += 21
    with capture_logs() as logs:
        assert restarted.run_once(now + 31).action == "curated"
    assert any(e["event"] == "bridge_recovered" for e in logs)
    assert "next_attempt_at" not in dict(q(layout.memory_db, "SELECT key, value FROM state"))


def test_rejected_batch_is_split_then_a_lone_turn_parked(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A 400 splits the batch; the single turn that still fails is parked; retry curates it."""
    worker = make_worker(layout, standin, batch_turns=4)
    write_turns(layout, 4)
    # Batch of 4 fails, halves [1,2] fails, [1] fails -> parked, [2] ok, [3,4] ok.
    standin.script(Fault.bad_request(), Fault.bad_request(), Fault.bad_request())
    drain(worker)
    rows = q(
        layout.memory_db,
        "SELECT status, first_observation_id, last_observation_id FROM batches ORDER BY id",
    )
    assert rows == [("failed", 1, 1), ("done", 2, 2), ("done", 3, 4)]
    assert q(
        layout.memory_db,
        "SELECT error LIKE '%400%' OR error LIKE '%BadRequest%'"
        " FROM batches WHERE status = 'failed'",
    ) == [(1,)]
    assert q(layout.transcript_db, "SELECT count(*) FROM observations WHERE processed = 0") == [
        (0,)
    ]
    assert worker.after.retry_parked() != []
    rows = q(layout.memory_db, "SELECT status FROM batches ORDER BY id")
    assert rows == [("retried",), ("done",), ("done",), ("done",)]
    covering = q(
        layout.memory_db,
        "SELECT b.status FROM batch_turns t JOIN batches b"
        " ON b.id = t.batch_id WHERE t.observation_id = 1",
    )
    assert covering == [("done",)]


def test_shutdown_during_slow_call_is_prompt_and_batch_redone(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Stop during a slow curator call returns at once; the batch is curated on the next run."""
    stop = threading.Event()
    worker = make_worker(layout, standin, stop=stop, batch_turns=1, request_timeout=30)
    write_turns(layout, 1)
    standin.latency = 10
    threading.Timer(0.3, stop.set).start()
    started = time.monotonic()
    assert worker.run_once().action == "stopped"
    assert time.monotonic() - started < 3
    assert q(layout.memory_db, "SELECT count(*) FROM batches") == [(0,)]
    standin.latency = 0
    again = make_worker(layout, standin, batch_turns=1)
    drain(again)
    assert q(layout.memory_db, "SELECT status FROM batches") == [("done",)]


def test_startup_rederives_markers_and_repairs_md(layout: Layout, standin: BridgeStandin) -> None:
    """At start-up markers follow the ledger, md files follow their revisions, temp files go."""
    worker = make_worker(layout, standin, batch_turns=2)
    write_turns(layout, 2)
    drain(worker)
    # Simulate a crash between the memory.db commit and the marker/md writes.
    conn = apsw.Connection(layout.transcript_db)
    conn.execute("UPDATE observations SET processed = 0")
    conn.close()
    Path(layout.md("user.md")).write_text("garbage")
    Path(layout.memory_dir, TEMP_PREFIX + "user.md.123").write_text("half")
    fresh = make_worker(layout, standin, batch_turns=2)
    fresh.start()
    assert q(layout.transcript_db, "SELECT count(*) FROM observations WHERE processed = 0") == [
        (0,)
    ]
    assert Path(layout.md("user.md")).read_text() == Store(layout).revisions.latest_md()["user.md"]
    assert md_files.stray_temp_files(layout) == []
    calls = len(standin.requests)
    drain(fresh)
    assert len(standin.requests) == calls  # nothing curated twice


def _delete_db(path: str) -> None:
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + suffix)


def test_deleted_memory_db_is_rebuilt_from_the_transcript(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Deleting memory.db clears the markers at start-up and every turn is curated again."""
    worker = make_worker(layout, standin, batch_turns=2)
    write_turns(layout, 2)
    drain(worker)
    _delete_db(layout.memory_db)
    fresh = make_worker(layout, standin, batch_turns=2)
    drain(fresh)
    assert q(layout.memory_db, "SELECT sum(turns) FROM batches WHERE status = 'done'") == [(2,)]


def test_recreated_transcript_is_detected(layout: Layout, standin: BridgeStandin) -> None:
    """A transcript.db replaced by a new one is noticed by identity and its turns curated."""
    worker = make_worker(layout, standin, batch_turns=1)
    write_turns(layout, 1)
    drain(worker)
    _delete_db(layout.transcript_db)
    write_turns(layout, 1)  # same observation id 1, different database
    with capture_logs() as logs:
        drain(worker)
    assert any(e["event"] == "transcript_recreated" for e in logs)
    assert q(layout.memory_db, "SELECT count(DISTINCT transcript_identity) FROM batches") == [(2,)]


def test_wake_is_detected_and_resets_backoff(layout: Layout, standin: BridgeStandin) -> None:
    """A wall-clock jump far beyond the monotonic clock is logged as a wake and ends backoff."""
    mono = [100.0]
    worker = make_worker(
        layout,
        standin,
        batch_turns=1,
        retry_attempts=1,
        outage_backoff=600,
        monotonic=lambda: mono[0],
    )
    wakes: list[int] = []
    worker.chores.on_wake = [lambda: wakes.append(1)]
    write_turns(layout, 1)
    standin.script(Fault.overloaded())
    now = time.time()
    assert worker.run_once(now).action == "backoff"
    with capture_logs() as logs:
        mono[0] += 1
        result = worker.run_once(now + 3600)
    assert [e for e in logs if e["event"] == "wake"]
    assert wakes == [1]
    assert result.action == "curated"


def test_version_change_stops_the_loop(layout: Layout, standin: BridgeStandin) -> None:
    """A new .os/VERSION makes the loop stop cleanly so supervisord starts the new code."""
    Path(layout.version_file).write_text("1.0\n")
    stop = threading.Event()
    worker = make_worker(layout, standin, stop=stop)
    assert worker.run_once().action == "idle"
    Path(layout.version_file).write_text("1.1\n")
    assert worker.run_once().action == "version_changed"
    assert stop.is_set()


class _Part:
    """A started part of ``wsd run`` (the watcher, the semantic server) that records its stop
    and may fail it: the fault seam for the shutdown order."""

    def __init__(self, name: str, seen: list[str], stop: threading.Event, fail: bool = False):
        self.name, self.seen, self.stop_event, self.fail = name, seen, stop, fail

    def start(self) -> None:
        self.seen.append(f"{self.name} start")

    def join(self, timeout: float | None = None) -> None:
        self.seen.append(f"{self.name} join (stop set: {self.stop_event.is_set()})")

    def stop(self) -> None:
        self.seen.append(f"{self.name} stop")
        if self.fail:
            raise OSError(f"{self.name} would not stop")


def test_wsd_run_stops_in_reverse_order_and_reports_the_first_error(
    layout: Layout, standin: BridgeStandin
) -> None:
    """``wsd run``'s shutdown (issue 22): the parts stop in reverse order of start-up, each
    even when the loop or a part before it failed; the first error is raised, a later one
    logged; the watcher's stop event is set whatever ended the loop."""
    from wsd.daemon.ops.wiring import Daemon, serve

    seen: list[str] = []
    worker = make_worker(layout, standin)

    def loop_dies() -> int:
        seen.append("loop")
        raise RuntimeError("the loop died")

    worker.run = loop_dies  # type: ignore[method-assign]
    watcher = _Part("watcher", seen, worker.stop)
    semantic = _Part("semantic", seen, worker.stop, fail=True)
    with capture_logs() as logs, pytest.raises(RuntimeError, match="the loop died"):
        serve(Daemon(worker, watcher, semantic))  # type: ignore[arg-type]
    assert seen == [
        "watcher start",
        "loop",
        "semantic stop",
        "watcher join (stop set: True)",
    ]
    assert [(e["event"], e["part"]) for e in logs] == [("shutdown_failed", "semantic")]

    # A clean loop: its exit code, unless stopping a part failed (then that error).
    seen.clear()
    worker.stop.clear()
    worker.run = lambda: 0  # type: ignore[method-assign]
    assert serve(Daemon(worker, _Part("watcher", seen, worker.stop), None)) == 0  # type: ignore[arg-type]
    assert seen == ["watcher start", "watcher join (stop set: True)"]
    with pytest.raises(OSError, match="semantic would not stop"):
        serve(Daemon(worker, watcher, semantic))  # type: ignore[arg-type]


def test_a_pass_opens_each_database_once_and_holds_none_after(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Issue 22: a pass that curated a batch opened transcript.db 8 times and memory.db 13;
    now once each (a store session), all closed when the pass ends (an idle daemon holds no
    database file open: CRIU, WAL checkpoints)."""
    from collections import Counter

    from tests.conftest import make_config
    from wsd import schema
    from wsd.daemon.ops.wiring import build_worker
    from wsd.daemon.store import Store

    opened: Counter[str] = Counter()
    live: list[apsw.Connection] = []

    def counting(path: str, kind: schema.Kind, **kwargs: Any) -> apsw.Connection:
        opened[kind] += 1
        conn = schema.connect(path, kind, **kwargs)
        live.append(conn)
        return conn

    stop = threading.Event()
    config = make_config(layout, standin, batch_turns=3)
    worker = build_worker(config, Store(layout, opener=counting), stop)
    worker.start()
    write_turns(layout, 3)
    for want in ("curated", "idle"):
        opened.clear()
        assert worker.run_once().action == want
        assert opened == {"transcript": 1, "memory": 1}, (want, opened)
        for conn in live:  # closed: using one raises
            with pytest.raises(apsw.ConnectionClosedError):
                conn.execute("SELECT 1")
        live.clear()


def test_the_heartbeats_state_is_the_passs_and_written_when_it_changes(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Issue 31: the heartbeat's state is written once per pass from what the pass did (idle,
    backoff, idle again on recovery, paused), at once when it changes, and on every paused
    pass (a rebuild waits for a paused heartbeat written after it asked)."""
    from wsd.daemon.curation.loop.outcome import Step
    from wsd.daemon.runtime.heartbeat import State, read_status
    from wsd.daemon.runtime.pause import pause_path, take_pause

    wall, mono = [time.time()], [1000.0]
    worker = make_worker(
        layout,
        standin,
        batch_turns=1,
        retry_attempts=1,
        outage_backoff=30,
        clock=lambda: wall[0],
        monotonic=lambda: mono[0],
    )

    def state() -> object:
        return (read_status(layout) or {}).get("state")

    assert worker.run_once().action == Step.IDLE and state() == State.IDLE
    write_turns(layout, 1)
    standin.script(Fault.overloaded())
    assert worker.run_once().action == Step.BACKOFF and state() == State.BACKOFF
    wall[0] += 31
    mono[0] += 31
    assert worker.run_once().action == Step.CURATED and state() == State.IDLE
    fd = take_pause(layout)
    assert fd is not None
    try:
        beats = []
        for _ in range(2):
            wall[0] += 1  # within the heartbeat's 10 s: only a forced write shows
            assert worker.run_once().action == Step.PAUSED
            beats.append(read_status(layout) or {})
    finally:
        os.close(fd)
        os.unlink(pause_path(layout))
    assert [b["state"] for b in beats] == [State.PAUSED, State.PAUSED]
    assert beats[1]["heartbeat_at"] > beats[0]["heartbeat_at"]  # written though unchanged
    assert worker.run_once().action == Step.IDLE and state() == State.IDLE
