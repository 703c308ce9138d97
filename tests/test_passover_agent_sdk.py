"""Memory passover end to end with the real Claude Agent SDK, its bundled CLI and the stand-in.

Session 1 states a preference and corrects the agent; the daemon (a real Worker with the
rule-based curator) curates it; session 2 starts with both in its system prompt, calls
``search_memory`` through the in-process MCP server, receives the relevant hit, and nothing
of that result is captured back into memory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import drain, flush, make_worker, run_async, sdk_env, venv_script
from tests.conftest import query as _rows
from wsd.daemon.curation.loop.worker import Worker
from wsd.daemon.memory.agent import ALLOWED_TOOLS, agent_memory
from wsd.daemon.standin.bridge import BridgeStandin, ConversationScript, Reply
from wsd.daemon.store import Store
from wsd.hooks.capture import MEMORY_OUTPUT_MARKER
from wsd.schema.layout import Layout

sdk = pytest.importorskip("claude_agent_sdk")
pytestmark = pytest.mark.agent_sdk

ASK = "Please write this week's status report."
CORRECT = "No, the weekly report goes in the reports folder, not the root folder."
PREFER = "I prefer British spelling in every document."
CORRECTION_TEXT = "The weekly report goes in the reports folder, not the root folder"
PREFERENCE_TEXT = "british spelling in every document"
QUESTION = "Where did we agree the weekly report goes?"


def _options(layout: Layout, server: BridgeStandin, tmp_path: Path, work: Path) -> Any:
    memory = agent_memory(layout.root)
    return sdk.ClaudeAgentOptions(
        env=sdk_env(server, tmp_path),
        cwd=str(work),
        setting_sources=[],
        hooks=memory.hooks,
        mcp_servers=memory.mcp_servers,
        allowed_tools=[*memory.allowed_tools],
        system_prompt=memory.system_prompt,
        max_turns=4,
    )


def _converse(options: Any, prompts: list[str]) -> None:
    """One session, one turn per prompt, through ClaudeSDKClient."""

    async def session() -> None:
        async with sdk.ClaudeSDKClient(options=options) as client:
            for prompt in prompts:
                await client.query(prompt)
                result = [m async for m in client.receive_response()][-1]
                assert isinstance(result, sdk.ResultMessage) and not result.is_error, result

    run_async(session())


def _curate(layout: Layout, worker: Worker) -> None:
    """Ask the daemon to curate now and drive it until it settles."""
    flush(layout)
    drain(worker)
    worker.store.archive.index_new_turns()


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            _text_of(b.get("text") or b.get("content")) for b in content if isinstance(b, dict)
        )
    return ""


def _tool_results(body: dict[str, Any]) -> list[str]:
    out = []
    for message in body.get("messages", []):
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                out.append(_text_of(block.get("content")))
    return out


def test_passover_preference_and_correction_reach_the_next_session(
    standin: BridgeStandin, layout: Layout, tmp_path: Path
) -> None:
    """Session 2's system prompt holds session 1's preference and correction; its
    search_memory call over MCP returns the correction; none of it is captured back."""
    work = tmp_path / "work"
    work.mkdir()
    worker = make_worker(layout, standin, batch_turns=25)

    # -- session 1: a task, a correction, a preference ----------------------------------------
    first = ConversationScript(
        [
            Reply.text("Done: I saved the report as report.md in the root folder."),
            Reply.text("Understood, I moved it to the reports folder."),
            Reply.text("Noted, British spelling from now on."),
        ]
    )
    with BridgeStandin(responder=first) as agent_api:
        _converse(_options(layout, agent_api, tmp_path, work), [ASK, CORRECT, PREFER])
    assert _rows(layout.transcript_db, "SELECT count(*) FROM observations") == [(3,)]
    _curate(layout, worker)
    kinds = dict(_rows(layout.memory_db, "SELECT type, content FROM learnings"))
    assert CORRECTION_TEXT in kinds["correction"]
    assert PREFERENCE_TEXT in kinds["preference"]
    learnings_before = _rows(layout.memory_db, "SELECT id, type, content FROM learnings")

    # -- session 2: the boot context, then a search through MCP --------------------------------
    second = ConversationScript(
        [
            Reply.tool_use(ALLOWED_TOOLS[0], {"query": QUESTION}),
            Reply.text("We agreed: the weekly report goes in the reports folder."),
        ]
    )
    with BridgeStandin(responder=second) as agent_api:
        _converse(_options(layout, agent_api, tmp_path, work), [QUESTION])
    mains = second.bodies("main")
    assert len(mains) == 2, [json.dumps(b)[:200] for b in mains]
    system = json.dumps(mains[0].get("system"))
    assert CORRECTION_TEXT in system and PREFERENCE_TEXT in system
    assert "<workspace-memory>" in system and "search_memory" in system
    (result,) = _tool_results(mains[1])
    assert CORRECTION_TEXT in result, result
    assert "correction" in result and "session " in result  # type and source of the hit

    # -- nothing of the search result comes back as memory -------------------------------------
    (calls,) = _rows(
        layout.transcript_db,
        "SELECT tool_calls_json FROM observations WHERE user_message = ?",
        (QUESTION,),
    )
    (call,) = json.loads(calls[0])
    assert call["name"] == ALLOWED_TOOLS[0] and call["output"] == MEMORY_OUTPUT_MARKER
    events = _rows(
        layout.transcript_db,
        "SELECT payload FROM events WHERE session_id ="
        " (SELECT session_id FROM observations WHERE user_message = ?)",
        (QUESTION,),
    )
    assert not any("[L" in str(p) and CORRECTION_TEXT in str(p) for (p,) in events)
    _curate(layout, worker)
    assert _rows(layout.memory_db, "SELECT id, type, content FROM learnings") == learnings_before
    (searched,) = _rows(layout.memory_db, "SELECT tools FROM turns WHERE prompt = ?", (QUESTION,))
    assert searched == ("",)  # the turn index leaves memory tool calls out too
    assert Store(layout).ledger.stats()["learnings"] == len(learnings_before)


def test_claude_code_session_start_hook_injects_the_boot_context(
    layout: Layout, tmp_path: Path
) -> None:
    """A SessionStart command hook running `wsd boot-context --hook` puts the boot context
    in front of the agent (Claude Code's additionalContext) through the real CLI."""
    Path(layout.md("user.md")).write_text("# User\n- Prefers answers in Esperanto\n")
    work = tmp_path / "work"
    work.mkdir()
    command = f"{venv_script('wsd')} boot-context --hook"
    settings = {
        "hooks": {
            "SessionStart": [{"hooks": [{"type": "command", "command": command, "timeout": 10}]}]
        }
    }
    script = ConversationScript([Reply.text("Saluton!")])
    with BridgeStandin(responder=script) as agent_api:
        env = {**sdk_env(agent_api, tmp_path), "WSD_WORKSPACE": layout.root}
        options = sdk.ClaudeAgentOptions(
            env=env,
            cwd=str(work),
            setting_sources=[],
            settings=json.dumps(settings),
            max_turns=1,
        )

        async def session() -> None:
            async for _message in sdk.query(prompt="Hello", options=options):
                pass

        run_async(session())
    (first,) = script.bodies("main")
    seen = json.dumps(first.get("messages")) + json.dumps(first.get("system"))
    assert "Prefers answers in Esperanto" in seen and "workspace-memory" in seen
