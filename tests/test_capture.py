"""Capture path: events become rows, turns become observations, failures spool."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import apsw
import pytest

from wsd import schema
from wsd.hooks.capture import MEMORY_OUTPUT_MARKER, Capture, CaptureConfig, InvalidInput
from wsd.schema import spool
from wsd.schema.layout import Layout
from wsd.schema.transcript import Event, close_stale_turns, record


def _capture(layout: Layout, **kw: Any) -> Capture:
    return Capture(CaptureConfig(workspace=layout.root, **kw))


def _rows(layout: Layout, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = apsw.Connection(layout.transcript_db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def prompt(session: str, text: str) -> dict[str, Any]:
    return {
        "hook_event_name": "UserPromptSubmit",
        "session_id": session,
        "prompt": text,
        "cwd": "/workspace",
        "transcript_path": "/tmp/t.jsonl",
    }


def tool(session: str, name: str, inp: Any, out: Any) -> dict[str, Any]:
    return {
        "hook_event_name": "PostToolUse",
        "session_id": session,
        "tool_name": name,
        "tool_input": inp,
        "tool_response": out,
        "tool_use_id": f"toolu_{name}",
    }


def stop(session: str, text: str) -> dict[str, Any]:
    return {
        "hook_event_name": "Stop",
        "session_id": session,
        "stop_hook_active": False,
        "last_assistant_message": text,
    }


def test_turn_becomes_one_observation_with_ordered_tool_calls(layout: Layout) -> None:
    """Prompt, two tool calls and Stop make one observation; calls keep order, input, output."""
    cap = _capture(layout)
    assert (
        cap.handle(
            {
                "hook_event_name": "SessionStart",
                "session_id": "s1",
                "source": "startup",
                "cwd": "/w",
            }
        )
        == "written"
    )
    assert cap.handle(prompt("s1", "List the files please")) == "written"
    cap.handle(tool("s1", "Bash", {"command": "ls"}, {"stdout": "a.txt\nb.txt"}))
    cap.handle(tool("s1", "Read", {"file_path": "a.txt"}, "hello"))
    assert cap.handle(stop("s1", "There are two files.")) == "written"

    (obs,) = _rows(
        layout,
        "SELECT session_id, sequence_num, user_message, tool_calls_json,"
        " agent_response, closed_by, processed FROM observations",
    )
    assert obs[:3] == ("s1", 1, "List the files please")
    calls = json.loads(obs[3])
    assert [c["name"] for c in calls] == ["Bash", "Read"]
    assert calls[0]["input"] == {"command": "ls"}
    assert calls[0]["output"] == {"stdout": "a.txt\nb.txt"}
    assert calls[1]["output"] == "hello"
    assert obs[4:] == ("There are two files.", "stop", 0)
    kinds = [r[0] for r in _rows(layout, "SELECT kind FROM events ORDER BY id")]
    assert kinds == ["SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUse", "Stop"]
    unlinked = _rows(layout, "SELECT kind FROM events WHERE observation_id IS NULL")
    assert unlinked == [("SessionStart",)]
    (session,) = _rows(
        layout,
        "SELECT source, cwd, message_count, observation_count,"
        " started_at <= last_event_at FROM sessions",
    )
    assert session == ("startup", "/w", 1, 1, 1)


def test_second_stop_without_activity_adds_nothing(layout: Layout) -> None:
    """A Stop with no new prompt or tool call since the last one creates no observation."""
    cap = _capture(layout)
    cap.handle(prompt("s", "hi"))
    cap.handle(stop("s", "hello"))
    cap.handle(stop("s", "hello again"))
    assert _rows(layout, "SELECT count(*) FROM observations") == [(1,)]
    assert _rows(layout, "SELECT count(*) FROM events WHERE kind = 'Stop'") == [(2,)]


def test_new_prompt_closes_an_interrupted_turn(layout: Layout) -> None:
    """A prompt arriving while a turn is open closes that turn (no answer) before starting anew."""
    cap = _capture(layout)
    cap.handle(prompt("s", "first"))
    cap.handle(tool("s", "Bash", {"command": "sleep 100"}, "interrupted"))
    cap.handle(prompt("s", "second"))
    cap.handle(stop("s", "done"))
    rows = _rows(
        layout,
        "SELECT sequence_num, user_message, agent_response, closed_by"
        " FROM observations ORDER BY id",
    )
    assert rows == [(1, "first", None, "next_prompt"), (2, "second", "done", "stop")]


def test_sessions_are_kept_apart(layout: Layout) -> None:
    """Interleaved events of two sessions close into each session's own turn."""
    cap = _capture(layout)
    cap.handle(prompt("a", "alpha"))
    cap.handle(prompt("b", "beta"))
    cap.handle(tool("a", "Bash", {"command": "a"}, "A"))
    cap.handle(stop("b", "B done"))
    cap.handle(stop("a", "A done"))
    rows = _rows(
        layout,
        "SELECT session_id, user_message, tool_calls_json, agent_response"
        " FROM observations ORDER BY session_id",
    )
    assert [(r[0], r[1], len(json.loads(r[2])), r[3]) for r in rows] == [
        ("a", "alpha", 1, "A done"),
        ("b", "beta", 0, "B done"),
    ]


def test_precompact_and_session_end_request_a_flush(layout: Layout) -> None:
    """PreCompact and SessionEnd each record a flush request; SessionEnd stamps ended_at."""
    cap = _capture(layout)
    cap.handle(prompt("s", "x"))
    cap.handle(
        {
            "hook_event_name": "PreCompact",
            "session_id": "s",
            "trigger": "auto",
            "custom_instructions": None,
        }
    )
    cap.handle({"hook_event_name": "SessionEnd", "session_id": "s", "reason": "exit"})
    reasons = _rows(layout, "SELECT reason, session_id FROM flush_requests ORDER BY id")
    assert reasons == [("precompact", "s"), ("session_end", "s")]
    assert _rows(layout, "SELECT ended_at IS NOT NULL FROM sessions") == [(1,)]


def test_stale_and_ended_turns_are_closed_by_the_daemon_verb(layout: Layout) -> None:
    """close_stale_turns closes turns of ended sessions and quiet ones, leaving fresh turns open."""
    cap = _capture(layout)
    cap.handle(prompt("ended", "will end"))
    cap.handle({"hook_event_name": "SessionEnd", "session_id": "ended", "reason": "exit"})
    cap.handle(prompt("quiet", "agent crashed"))
    cap.handle(prompt("live", "still working"))
    conn = schema.connect(layout.transcript_db, "transcript")
    conn.execute("UPDATE events SET ts = ts - 3600 WHERE session_id = 'quiet'")
    import time

    closed = close_stale_turns(conn, quiet_before=time.time() - 600)
    conn.close()
    assert len(closed) == 2
    rows = _rows(layout, "SELECT session_id, closed_by FROM observations ORDER BY session_id")
    assert rows == [("ended", "session_end"), ("quiet", "quiet")]


def test_skipped_tools_are_not_captured(layout: Layout) -> None:
    """Tools on the skip list (TodoWrite by default) leave no event behind."""
    cap = _capture(layout)
    assert cap.handle(tool("s", "TodoWrite", {"todos": []}, "ok")) == "skipped"
    custom = _capture(layout, skip_tools=frozenset({"Glob"}))
    assert custom.handle(tool("s", "Glob", {"pattern": "*"}, "x")) == "skipped"
    assert custom.handle(tool("s", "TodoWrite", {}, "x")) == "written"
    assert _rows(layout, "SELECT tool_name FROM events") == [("TodoWrite",)]


def test_memory_tool_output_is_never_captured(layout: Layout) -> None:
    """search_memory results are replaced by a marker: old memory never returns as new material."""
    cap = _capture(layout)
    cap.handle(
        tool(
            "s",
            "mcp__memory__search_memory",
            {"query": "dates"},
            {"content": [{"type": "text", "text": "CORRECTION: dates are DD/MM"}]},
        )
    )
    (payload,) = _rows(layout, "SELECT payload FROM events")
    data = json.loads(payload[0])
    assert data["tool_response"] == MEMORY_OUTPUT_MARKER
    assert data["tool_input"] == {"query": "dates"}
    assert "DD/MM" not in payload[0]


def test_memory_commands_run_in_a_shell_are_not_captured(layout: Layout) -> None:
    """`wsd search` / `wsd pending` run through Bash: their output is replaced by the marker."""
    cap = _capture(layout)
    cap.handle(
        tool(
            "s",
            "Bash",
            {"command": "/ws/.os/.venv/bin/wsd --workspace /ws search tabs"},
            "PREFERENCE: tabs",
        )
    )
    cap.handle(tool("s", "Bash", {"command": "wsd pending list --json"}, "[1] call Anna"))
    cap.handle(tool("s", "Bash", {"command": "wsd status"}, "backlog: 0"))
    outputs = [
        json.loads(p)["tool_response"]
        for (p,) in _rows(layout, "SELECT payload FROM events ORDER BY id")
    ]
    assert outputs == [MEMORY_OUTPUT_MARKER, MEMORY_OUTPUT_MARKER, "backlog: 0"]


def test_boot_context_and_private_spans_are_not_captured(layout: Layout) -> None:
    """Injected <workspace-memory> context and <private> spans are removed before writing."""
    cap = _capture(layout)
    cap.handle(
        prompt(
            "s",
            "<workspace-memory>USER PREFERS TABS</workspace-memory>"
            "Hello <private>my diary</private>there",
        )
    )
    (payload,) = _rows(layout, "SELECT payload FROM events")
    assert "USER PREFERS TABS" not in payload[0]
    assert "my diary" not in payload[0]
    assert "Hello" in payload[0] and "there" in payload[0]


def test_fields_are_truncated_keeping_head_and_tail(layout: Layout) -> None:
    """A long field is cut to the configured size, keeping its beginning and end."""
    cap = _capture(layout, max_field_chars=200)
    cap.handle(prompt("s", "HEAD" + "x" * 10_000 + "TAIL"))
    (payload,) = _rows(layout, "SELECT payload FROM events")
    text = json.loads(payload[0])["prompt"]
    assert len(text) <= 200
    assert text.startswith("HEAD") and text.endswith("TAIL")


@pytest.mark.parametrize(
    "bad",
    [
        None,
        [],
        "text",
        42,
        {"session_id": "s"},
        {"hook_event_name": "Nonsense", "session_id": "s"},
        {"hook_event_name": "Stop"},
        {"hook_event_name": "Stop", "session_id": ""},
        {"hook_event_name": "Stop", "session_id": {"a": 1}},
    ],
)
def test_invalid_input_is_rejected_with_a_reason(layout: Layout, bad: Any) -> None:
    """Input that is not a known event with a session id raises InvalidInput and writes nothing."""
    with pytest.raises(InvalidInput):
        _capture(layout).handle(bad)
    assert _rows(layout, "SELECT count(*) FROM events") == [(0,)]


def test_wrong_typed_fields_are_coerced_not_lost(layout: Layout) -> None:
    """A prompt or answer of the wrong type is kept as text rather than dropped."""
    cap = _capture(layout)
    cap.handle({"hook_event_name": "UserPromptSubmit", "session_id": 7, "prompt": ["a", 1]})
    cap.handle({"hook_event_name": "Stop", "session_id": 7, "last_assistant_message": {"x": 1}})
    (row,) = _rows(layout, "SELECT session_id, user_message, agent_response FROM observations")
    assert row[0] == "7"
    assert "a" in row[1] and '"x"' in row[2]


def test_a_folder_that_is_not_a_workspace_is_refused_and_nothing_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An event for a path with no .os/ (unset or mistyped WSD_WORKSPACE) is not captured: one
    stderr line names the path and the fix, and nothing is created there, not even a spool."""
    for lay in (Layout(str(tmp_path / "missing")), Layout(str(tmp_path))):
        assert _capture(lay).handle(prompt("s", "hello")) == "refused"
        assert not os.path.exists(lay.os_dir)
        err = capsys.readouterr().err
        assert lay.root in err and "wsd --workspace" in err and "init" in err
    assert sorted(os.listdir(tmp_path)) == []


def test_a_workspace_whose_memory_folder_is_gone_gets_it_back(tmp_path: Path) -> None:
    """In a workspace (.os/ exists) whose memory folder was deleted, the first event makes it
    again (0700) and migrates the database."""
    lay = Layout(str(tmp_path / "ws"))
    os.makedirs(lay.os_dir, mode=0o700)
    assert _capture(lay).handle(prompt("s", "hello")) == "written"
    assert os.stat(lay.memory_dir).st_mode & 0o777 == 0o700
    assert _rows(lay, "SELECT count(*) FROM events") == [(1,)]


def _ingest(lay: Layout) -> spool.IngestReport:
    conn = schema.connect(lay.transcript_db, "transcript")
    try:
        taken = spool.take(lay.spool)
        assert taken is not None
        return spool.ingest_file(taken, lambda ev: record(conn, ev, via="spool"))
    finally:
        conn.close()


def test_locked_database_spools_and_ingest_loses_nothing(layout: Layout) -> None:
    """With the database locked past the bound, events are spooled; ingest records each once."""
    blocker = schema.connect(layout.transcript_db, "transcript")
    blocker.execute("BEGIN IMMEDIATE")
    cap = _capture(layout, busy_timeout_ms=20)
    outcomes = [cap.handle(prompt("s", "locked out")), cap.handle(stop("s", "answer"))]
    blocker.execute("ROLLBACK")
    blocker.close()
    assert outcomes == ["spooled", "spooled"]
    assert _rows(layout, "SELECT count(*) FROM events") == [(0,)]
    with open(layout.spool) as fh:
        lines = [Event.from_json(line) for line in fh]
    assert [e.kind for e in lines] == ["UserPromptSubmit", "Stop"]
    report = _ingest(layout)
    assert report == spool.IngestReport(recorded=2, duplicates=0, rejected=0)
    assert _rows(layout, "SELECT user_message, agent_response FROM observations") == [
        ("locked out", "answer")
    ]
    assert _rows(layout, "SELECT DISTINCT via FROM events") == [("spool",)]
    assert not os.path.exists(layout.spool)


def test_reingesting_a_spool_file_records_nothing_twice(layout: Layout) -> None:
    """A spool file ingested again after a crash adds no duplicate events (uids dedupe)."""
    cap = _capture(layout)
    event_a = Event("uid-a", 1.0, "s", "UserPromptSubmit", None, {"prompt": "p"})
    cap.write(event_a)
    spool.append(layout.spool, event_a.to_json())
    spool.append(
        layout.spool,
        Event("uid-b", 2.0, "s", "Stop", None, {"last_assistant_message": "r"}).to_json(),
    )
    spool.append(layout.spool, "{not json")
    report = _ingest(layout)
    assert report == spool.IngestReport(recorded=1, duplicates=1, rejected=1)
    assert _rows(layout, "SELECT count(*) FROM events") == [(2,)]
    rejected = Path(layout.memory_dir, "spool.rejected.jsonl").read_text()
    assert "{not json" in rejected


def test_newer_schema_spools_instead_of_writing(layout: Layout) -> None:
    """A transcript.db from newer code is not written by old hooks: the event is spooled."""
    conn = apsw.Connection(layout.transcript_db)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    assert _capture(layout).handle(prompt("s", "x")) == "spooled"
    assert os.path.getsize(layout.spool) > 0


def test_in_process_capture_lets_go_of_its_connection_when_idle(layout: Layout) -> None:
    """keep_open reuses one connection while events flow and closes it after a quiet spell."""
    cap = Capture(CaptureConfig(workspace=layout.root), keep_open=True, idle_close_s=0.3)
    cap.handle(prompt("s", "one"))
    first = cap._conn
    cap.handle(tool("s", "Bash", {"command": "ls"}, "x"))
    cap.handle(stop("s", "two"))
    assert cap._conn is first is not None
    deadline = time.monotonic() + 30
    while cap._conn is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert cap._conn is None
    assert cap.handle(prompt("s", "three")) == "written"
    assert cap._conn is not None
    cap.close()
    assert cap._conn is None
    assert _rows(layout, "SELECT count(*) FROM events") == [(4,)]


def test_wsd_hook_keeps_the_workspace_it_is_given_beside_other_arguments(
    layout: Layout, tmp_path: Path
) -> None:
    """Found by a second new-user run: ``wsd-hook --workspace W --bogus`` (and
    ``--workspace=W``) reported the arguments and then captured into /workspace, which does
    not exist: the event was lost. The workspace named is used; the rest is reported."""
    import subprocess

    from tests.conftest import venv_script

    bare = {k: v for k, v in os.environ.items() if not k.startswith("WSD_")}
    for i, args in enumerate(
        (["--workspace", layout.root, "--bogus"], [f"--workspace={layout.root}"])
    ):
        event = {"hook_event_name": "UserPromptSubmit", "session_id": f"s{i}", "prompt": "hi"}
        done = subprocess.run(
            [venv_script("wsd-hook"), *args],
            input=json.dumps(event).encode(),
            env=bare,
            capture_output=True,
            timeout=60,
        )
        assert done.returncode == 0 and done.stdout == b""
        assert (b"--bogus" in done.stderr) == ("--bogus" in args), done.stderr
        assert b"not captured" not in done.stderr, done.stderr
    conn = apsw.Connection(layout.transcript_db)
    try:
        assert conn.execute("SELECT count(*) FROM events").fetchone() == (2,)
    finally:
        conn.close()


def test_an_event_from_two_wirings_is_kept_once_and_a_real_repeat_twice(layout: Layout) -> None:
    """The same event handed to the hook twice at once (two wirings) is recorded once, the
    second call says "duplicate"; interleaved copies of two parallel tool calls too. A
    person's "yes" twice and the agent's "Done." twice, with a turn between, are all kept, and
    so is a tool call without its id made twice."""
    cap = Capture(CaptureConfig(workspace=layout.root))

    def tool(n: int) -> dict[str, object]:
        return {"hook_event_name": "PostToolUse", "session_id": "s", "tool_name": "Read",
                "tool_use_id": f"toolu_{n}", "tool_input": {"file_path": "a"},
                "tool_response": "same"}  # fmt: skip

    prompt = {"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "yes"}
    done = {"hook_event_name": "Stop", "session_id": "s", "last_assistant_message": "Done."}
    outcomes = [cap.handle(e) for e in (prompt, prompt, tool(1), tool(2), tool(1), tool(2))]
    outcomes += [cap.handle(e) for e in (done, done, prompt, done)]
    assert outcomes == ["written", "duplicate", "written", "written", "duplicate", "duplicate",
                        "written", "duplicate", "written", "written"]  # fmt: skip
    conn = apsw.Connection(layout.transcript_db)
    turns = conn.execute("SELECT user_message, agent_response FROM observations").fetchall()
    conn.close()
    assert turns == [("yes", "Done."), ("yes", "Done.")], turns
    # A tool call without its id cannot be told from a repeat: both are kept.
    bare = {**tool(3), "tool_use_id": None}
    assert [cap.handle(bare), cap.handle(bare)] == ["written", "written"]
