"""Capture end to end with the real Claude Agent SDK and its bundled CLI."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import query as _rows
from tests.conftest import run_async, sdk_env, venv_script
from wsd.daemon.standin.bridge import BridgeStandin, ConversationScript, Reply
from wsd.hooks.sdk import memory_hooks
from wsd.schema.layout import Layout

sdk = pytest.importorskip("claude_agent_sdk")
pytestmark = pytest.mark.agent_sdk

PROMPT = "Please write hello into out.txt"


def _script() -> ConversationScript:
    return ConversationScript(
        [
            Reply.tool_use("Bash", {"command": "echo hello > out.txt", "description": "write"}),
            Reply.text("I wrote hello into out.txt."),
        ]
    )


def _run_session(options: Any) -> Any:
    async def session() -> list[Any]:
        return [m async for m in sdk.query(prompt=PROMPT, options=options)]

    messages = run_async(session())
    result = messages[-1]
    assert isinstance(result, sdk.ResultMessage) and not result.is_error, result
    return result


def _assert_one_turn(layout: Layout, work: Path) -> str:
    (obs,) = _rows(
        layout.transcript_db,
        "SELECT session_id, sequence_num, user_message,"
        " tool_calls_json, agent_response, closed_by FROM observations",
    )
    session_id, seq, user, calls_json, response, closed_by = obs
    assert (seq, user, response, closed_by) == (1, PROMPT, "I wrote hello into out.txt.", "stop")
    (call,) = json.loads(calls_json)
    assert call["name"] == "Bash"
    assert call["input"]["command"] == "echo hello > out.txt"
    assert (work / "out.txt").read_text() == "hello\n"
    (session,) = _rows(
        layout.transcript_db, "SELECT id, message_count, observation_count, cwd FROM sessions"
    )
    assert session == (session_id, 1, 1, str(work))
    return str(session_id)


def test_sdk_callbacks_capture_one_turn(
    standin: BridgeStandin, layout: Layout, tmp_path: Path
) -> None:
    """memory_hooks() callbacks record the events and exactly one observation for a tool turn."""
    work = tmp_path / "work"
    work.mkdir()
    standin.responder = _script()
    options = sdk.ClaudeAgentOptions(
        env=sdk_env(standin, tmp_path),
        cwd=str(work),
        setting_sources=[],
        allowed_tools=["Bash"],
        max_turns=3,
        hooks=memory_hooks(layout.root),
    )
    _run_session(options)
    _assert_one_turn(layout, work)
    kinds = [r[0] for r in _rows(layout.transcript_db, "SELECT kind FROM events ORDER BY id")]
    # The SDK fires no SessionStart("startup") or SessionEnd for callbacks (CLI 2.1.x).
    assert kinds == ["UserPromptSubmit", "PostToolUse", "Stop"]
    assert _rows(
        layout.transcript_db, "SELECT count(*) FROM events WHERE observation_id IS NULL"
    ) == [(0,)]


def test_command_hooks_via_settings_capture_one_turn(
    standin: BridgeStandin, layout: Layout, tmp_path: Path
) -> None:
    """wsd-hook installed through settings= records the session, events, one observation."""
    work = tmp_path / "work"
    work.mkdir()
    standin.responder = _script()
    hook = {"type": "command", "command": venv_script("wsd-hook"), "timeout": 10}
    events = ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "PreCompact", "SessionEnd"]
    settings = {"hooks": {e: [{"hooks": [hook]}] for e in events}}
    env = {**sdk_env(standin, tmp_path), "WSD_WORKSPACE": layout.root}
    options = sdk.ClaudeAgentOptions(
        env=env,
        cwd=str(work),
        setting_sources=[],
        settings=json.dumps(settings),
        allowed_tools=["Bash"],
        max_turns=3,
    )
    _run_session(options)
    deadline = time.monotonic() + 15  # SessionEnd runs as the CLI exits
    while time.monotonic() < deadline:
        if _rows(layout.transcript_db, "SELECT count(*) FROM events WHERE kind = 'SessionEnd'") == [
            (1,)
        ]:
            break
        time.sleep(0.05)
    session_id = _assert_one_turn(layout, work)
    kinds = [r[0] for r in _rows(layout.transcript_db, "SELECT kind FROM events ORDER BY id")]
    assert kinds == ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "SessionEnd"]
    (session,) = _rows(layout.transcript_db, "SELECT source, ended_at IS NOT NULL FROM sessions")
    assert session == ("startup", 1)
    assert _rows(layout.transcript_db, "SELECT session_id, reason FROM flush_requests") == [
        (session_id, "session_end")
    ]
    assert not Path(layout.spool).exists()
