"""What agents, people and operators touch: the tools the model sees, the Claude Code plugin,
commands outside a workspace, the boot context's wording, the stand-in's curators, forget."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import (
    daemon_env,
    import_lines,
    run_async,
    running_daemon,
    sdk_env,
    venv_script,
    wait_for,
    write_turns,
    wsd,
)
from tests.conftest import query as q
from wsd.daemon.curation.request.prompt import build_request
from wsd.daemon.curation.request.rendering import render_turn
from wsd.daemon.memory.agent import agent_memory
from wsd.daemon.memory.boot import Tools, load_memory
from wsd.daemon.ops.deploy import PLUGIN_TOOL_PREFIX, render_plugin
from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import BridgeStandin, ConversationScript, Reply
from wsd.daemon.store import Store, Turn
from wsd.hooks.capture import MEMORY_OUTPUT_MARKER
from wsd.schema.layout import Layout

FACT = "The shared drive password hint is kept in the red notebook"


def _learn(layout: Layout, *facts: str) -> None:
    import_lines(layout, [json.dumps({"type": "fact", "content": f}) for f in facts])


def _tool_results(body: dict[str, Any]) -> list[str]:
    out = []
    for message in body.get("messages", []):
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                out.append(json.dumps(inner) if not isinstance(inner, str) else inner)
    return out


def _tool_names(body: dict[str, Any]) -> list[str]:
    return [str(t.get("name")) for t in body.get("tools", [])]


# -- the model sees the memory tools ----------------------------------------------------------


@pytest.mark.agent_sdk
def test_the_sdk_request_carries_both_memory_tool_schemas_and_search_returns_hits(
    layout: Layout, tmp_path: Path
) -> None:
    """With agent_memory()'s wiring, the request the model receives holds the search_memory
    and resolve_action schemas in tools[] (not deferred behind a tool search), and the
    model's search_memory call returns the hit."""
    sdk = pytest.importorskip("claude_agent_sdk")
    _learn(layout, FACT)
    work = tmp_path / "work"
    work.mkdir()
    memory = agent_memory(layout.root)
    script = ConversationScript(
        [
            Reply.tool_use("mcp__memory__search_memory", {"query": "password hint notebook"}),
            Reply.text("It is in the red notebook."),
        ]
    )
    with BridgeStandin(responder=script) as api:
        options = sdk.ClaudeAgentOptions(
            env=sdk_env(api, tmp_path),
            cwd=str(work),
            setting_sources=[],
            hooks=memory.hooks,
            mcp_servers=memory.mcp_servers,
            allowed_tools=memory.allowed_tools,
            system_prompt=memory.system_prompt,
            max_turns=3,
        )

        async def session() -> None:
            async for _message in sdk.query(prompt="Where is the hint?", options=options):
                pass

        run_async(session())
    first, second = script.bodies("main")
    tools = {t["name"]: t for t in first["tools"]}
    for name in ("mcp__memory__search_memory", "mcp__memory__resolve_action"):
        assert name in tools and tools[name]["input_schema"]["properties"], _tool_names(first)
    search = tools["mcp__memory__search_memory"]["input_schema"]
    assert {"query", "turn"} <= set(search["properties"]) and "required" not in search
    (result,) = _tool_results(second)
    assert "red notebook" in result
    assert "mcp__memory__search_memory" in json.dumps(first["system"])  # named as it is


@pytest.mark.agent_sdk
def test_the_claude_code_plugin_wires_hooks_boot_context_and_the_stdio_server(
    layout: Layout, tmp_path: Path
) -> None:
    """The plugin as bootstrap renders it, loaded through the SDK's local-plugin option with
    the bundled CLI: the boot context reaches the first request, the tools are in tools[],
    the model's search_memory call through `wsd mcp` returns hits, and the turn is captured
    without the tool's output."""
    sdk = pytest.importorskip("claude_agent_sdk")
    _learn(layout, FACT)
    Path(layout.md("user.md")).write_text("# User\n- Prefers answers in Esperanto\n")
    plugin = tmp_path / "plugin"
    changes: list[str] = []
    render_plugin(
        Path(__file__).resolve().parent.parent / "deploy" / "claude-plugin",
        plugin,
        venv=Path(sys.prefix),
        workspace=layout.root,
        version="test",
        changes=changes,
    )
    work = tmp_path / "work"
    work.mkdir()
    search = f"{PLUGIN_TOOL_PREFIX}search_memory"
    script = ConversationScript(
        [Reply.tool_use(search, {"query": "password hint"}), Reply.text("In the red notebook.")]
    )
    with BridgeStandin(responder=script) as api:
        env = sdk_env(api, tmp_path)  # no WSD_WORKSPACE: the plugin names the workspace
        options = sdk.ClaudeAgentOptions(
            env=env,
            cwd=str(work),
            setting_sources=[],
            plugins=[{"type": "local", "path": str(plugin)}],
            allowed_tools=[search],
            max_turns=3,
        )

        async def session() -> None:
            async for _message in sdk.query(prompt="Where is the hint?", options=options):
                pass

        run_async(session())
    first, second = script.bodies("main")
    seen = json.dumps(first.get("messages")) + json.dumps(first.get("system"))
    assert "Prefers answers in Esperanto" in seen and f"`{search}`" in seen
    assert {search, f"{PLUGIN_TOOL_PREFIX}resolve_action"} <= set(_tool_names(first))
    (result,) = _tool_results(second)
    assert "red notebook" in result
    assert wait_for(lambda: q(layout.transcript_db, "SELECT count(*) FROM observations")[0][0])
    (calls,) = q(layout.transcript_db, "SELECT tool_calls_json FROM observations")[0]
    (call,) = json.loads(calls)
    assert call["name"] == search and call["output"] == MEMORY_OUTPUT_MARKER


def test_wsd_mcp_serves_both_tools_over_stdio(layout: Layout) -> None:
    """`wsd mcp` speaks MCP over stdio: it lists both tools and answers a search with hits."""
    pytest.importorskip("mcp")
    _learn(layout, FACT)
    code = r"""
import anyio, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
async def main():
    params = StdioServerParameters(command=sys.argv[1], args=["--workspace", sys.argv[2], "mcp"])
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        print(sorted(t.name for t in (await s.list_tools()).tools))
        print((await s.call_tool("search_memory", {"query": "password hint"})).content[0].text)
        print((await s.call_tool("resolve_action", {"id": 7, "status": "completed"})).is_error)
anyio.run(main)
"""
    out = subprocess.run(
        [sys.executable, "-c", code, venv_script("wsd"), layout.root],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    names, *rest = out.stdout.splitlines()
    assert names == "['resolve_action', 'search_memory']"
    assert "red notebook" in "\n".join(rest) and rest[-1] == "True"


# -- commands outside a workspace --------------------------------------------------------------


def test_commands_outside_a_workspace_say_so_in_one_line_and_create_nothing(
    tmp_path: Path,
) -> None:
    """status, doctor, search, flush and run on a missing folder or one without .os/: one
    line naming the path and the fix, a non-zero exit, nothing created; the SessionStart
    hook says it on stderr and exits 0; agent_memory() refuses too."""
    plain = tmp_path / "plain"
    plain.mkdir()
    for root in (tmp_path / "missing", plain):
        env = {**os.environ, "WSD_WORKSPACE": str(root), "ANTHROPIC_BASE_URL": "http://x"}
        for args in (["status"], ["doctor"], ["search", "x"], ["flush"], ["run"]):
            result = wsd(env, *args, check=False)
            assert result.returncode == 2, (args, result.stderr)
            (line,) = result.stderr.splitlines()
            assert str(root) in line and f"wsd --workspace {root} init" in line
        hook = wsd(env, "boot-context", "--hook", check=False)
        assert hook.returncode == 0 and str(root) in hook.stderr and hook.stdout == ""
        with pytest.raises(ValueError, match=r"wsd --workspace .* init"):
            agent_memory(str(root))
    assert not (tmp_path / "missing").exists() and os.listdir(plain) == []


def test_init_installs_the_deploy_templates_and_never_replaces_them(tmp_path: Path) -> None:
    """`wsd init` installs soul.md and os.md (as bootstrap does) where missing, naming this
    workspace's path (they said /workspace/ for any) and no memory tool of their own, and
    leaves a changed one alone."""
    env = {**os.environ, "WSD_WORKSPACE": str(tmp_path / "ws")}
    assert "installed" in wsd(env, "init").stdout
    soul = tmp_path / "ws" / ".os" / "memory" / "soul.md"
    os_md = (tmp_path / "ws" / ".os" / "memory" / "os.md").read_text()
    assert "Your Daemon" in soul.read_text()
    assert f"Write inside {tmp_path}/ws/.os/ (the system space" in soul.read_text()
    assert f"- `{tmp_path}/ws/` is the user's space" in os_md
    for text in (soul.read_text(), os_md):
        assert "/workspace/" not in text and "@WORKSPACE@" not in text
    # One name for each memory tool in the whole boot context: the closing section's, for
    # this host (the templates said `search_memory` and "the pending-action tool" while a
    # host with no memory tool was told to run `wsd search`: two instructions, found by a
    # new user).
    shell = wsd(env, "boot-context").stdout
    assert "search_memory" not in shell and "pending-action" not in shell, shell
    assert "wsd --workspace" in shell and 'search "question"' in shell
    soul.write_text("# mine\n")
    wsd(env, "init")
    assert soul.read_text() == "# mine\n"


def test_flush_wait_with_no_daemon_says_so_at_once(layout: Layout) -> None:
    """`wsd flush --wait 30` with no daemon running returns at once, exit 1, saying why."""
    started = time.monotonic()
    result = wsd({**os.environ, "WSD_WORKSPACE": layout.root}, "flush", "--wait", "30", check=False)
    assert time.monotonic() - started < 10
    assert result.returncode == 1 and "no daemon is running" in result.stderr


def test_flush_wait_answers_while_another_session_keeps_writing(
    layout: Layout, tmp_path: Path
) -> None:
    """`wsd flush --wait` answers once the turns closed before it are curated, while another
    session writes a turn every 50 ms and each curator call takes 0.4 s, so the backlog is
    never empty (a flush answered only at an empty backlog waited it out, exit 1)."""

    def slow(_body: object) -> Reply:
        time.sleep(0.4)
        return Reply.text("FACT: The person prefers tabs")

    stop = threading.Event()

    def writer() -> None:
        i = 100
        while not stop.is_set():
            write_turns(layout, 1, session="busy", start=i)
            i += 1
            stop.wait(0.05)

    with BridgeStandin(responder=slow) as bridge:
        env = daemon_env(layout, bridge, WSD_BATCH_TURNS="1000")
        with running_daemon(env, tmp_path / "d.log"):
            write_turns(layout, 3)
            busy = threading.Thread(target=writer)
            busy.start()
            try:
                assert wait_for(lambda: Store(layout).turns.backlog().pending > 3)
                waited = wsd(env, "flush", "--wait", "30", check=False)
                still_pending = Store(layout).turns.backlog().pending
            finally:
                stop.set()
                busy.join()
    assert (waited.returncode, waited.stderr) == (0, ""), waited.stderr
    assert "flush done" in waited.stdout
    assert still_pending > 0  # the backlog was never empty: answered by its own turns
    assert q(
        layout.transcript_db,
        "SELECT count(*) FROM observations WHERE session_id = 's1' AND processed = 0",
    ) == [(0,)]


def test_doctor_is_quiet_on_a_healthy_workspace_with_an_inventory(
    layout: Layout, tmp_path: Path
) -> None:
    """files.md holds the curator's notes and the watcher's inventory: on a healthy running
    workspace doctor finds no md file problem, and --fix changes nothing about it."""
    (Path(layout.root) / "documents" / "contract.pdf").write_text("%PDF")
    with BridgeStandin() as bridge:
        bridge.script(Reply.text("files.md +0: # Files\nfiles.md +$: - documents/: contracts"))
        env = daemon_env(layout, bridge)
        with running_daemon(env, tmp_path / "d.log"):
            write_turns(layout, 2)
            wsd(env, "flush", "--wait", "30")
            assert wait_for(lambda: "contract.pdf" in Path(layout.md("files.md")).read_text())
            assert "- documents/: contracts" in Path(layout.md("files.md")).read_text()
            assert (
                Store(layout).revisions.latest_md()["files.md"]
                == "# Files\n- documents/: contracts\n"
            )
            for args in (["doctor"], ["doctor", "--fix"], ["doctor"]):
                result = wsd(env, *args, check=False)
                report = result.stdout
                assert "ok   md files: match their latest revisions" in report, result.stderr
                assert "FAIL" not in report, report


# -- the boot context -----------------------------------------------------------------------------


def test_the_boot_context_names_the_tools_the_host_has(layout: Layout) -> None:
    """The closing section names the MCP tools as the host names them; with no tool, the
    wsd commands by absolute path (the agent's PATH may not have them) for this workspace."""
    sdk = load_memory(layout, tools=Tools.mcp("mcp__memory__"))
    assert "`mcp__memory__search_memory` tool" in sdk and "`mcp__memory__resolve_action`" in sdk
    plugin = wsd({"WSD_WORKSPACE": layout.root}, "boot-context", "--tool-prefix", "mcp__p__")
    assert "`mcp__p__search_memory` tool" in plugin.stdout
    shell = wsd({"WSD_WORKSPACE": layout.root}, "boot-context").stdout
    named = f"{os.path.dirname(venv_script('wsd'))}/wsd --workspace {layout.root}"
    assert f'`{named} search "question"` in a shell' in shell


def test_the_boot_context_says_nothing_twice_and_dates_carry_an_offset(
    layout: Layout, tmp_path: Path
) -> None:
    """After a curated session, no recent learning restates a memory file line (a preference
    in user.md, a written file in files.md, an install in tools.md); a learning the files
    do not hold stays, dated ISO 8601 with an offset."""
    with BridgeStandin(responder=rule_curator.responder) as bridge:
        env = daemon_env(layout, bridge)
        with running_daemon(env, tmp_path / "d.log"):
            write_turns(layout, 2, prompt="I prefer tabs over spaces in file {i}")
            wsd(env, "flush", "--wait", "30")
    started = next(
        json.loads(line)
        for line in (tmp_path / "d.log").read_text().splitlines()
        if '"event": "started"' in line
    )
    assert started["version"] == "none (not deployed by bootstrap)" and started["package"]
    _learn(layout, "The printer on floor 2 jams on A3 paper")
    boot = wsd({"WSD_WORKSPACE": layout.root}, "boot-context").stdout
    recent = boot.split("## Recent learnings", 1)[1].split("##", 1)[0]
    assert "Prefers tabs over spaces" in boot and "tabs" not in recent
    assert "pkg0" in boot and "pkg0" not in recent  # TOOL_INSTALL, reflected in tools.md
    assert "The printer on floor 2 jams on A3 paper" in recent
    assert "+00:00)" in recent


# -- the stand-in's curators --------------------------------------------------------------------


def _curator_request(url: str) -> str:
    turn = render_turn(Turn(3, "s", 1, 1.7e9, "I prefer short answers", [], None, "stop"))
    system, messages = build_request({}, [], [turn])
    body = json.dumps({"model": "m", "max_tokens": 100, "system": system, "messages": messages})
    request = urllib.request.Request(
        f"{url}/v1/messages", body.encode(), {"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(json.load(response)["content"][0]["text"])


@pytest.mark.parametrize("curator", ["rule", "none", "script"])
def test_the_standin_server_takes_a_curator(curator: str, tmp_path: Path) -> None:
    """`python -m wsd.daemon.standin --curator rule|none|script FILE` answers with the rule
    curator (the default), NONE, or the file's replies in order; --help says what each does."""
    script = tmp_path / "replies.txt"
    script.write_text("FACT: first reply\n---\nFACT: second reply\n")
    extra = {
        "rule": [],
        "none": ["--curator", "none"],
        "script": ["--curator", "script", str(script)],
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "wsd.daemon.standin", "--port", "0", *extra[curator]],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        first, second = _curator_request(url), _curator_request(url)
    finally:
        proc.terminate()
        assert proc.wait(10) == 0
    expected = {
        "rule": ("PREFERENCE: The user prefers short answers [turn 3]", None),
        "none": ("NONE", "NONE"),
        "script": ("FACT: first reply", "FACT: second reply"),
    }[curator]
    assert first.splitlines()[0] == expected[0]
    assert expected[1] is None or second == expected[1]
    help_text = subprocess.run(
        [sys.executable, "-m", "wsd.daemon.standin", "--help"], capture_output=True, text=True
    ).stdout
    assert all(word in help_text for word in ("rule", "none", "script FILE", "ANTHROPIC_BASE_URL"))


# -- wsd forget -----------------------------------------------------------------------------------


def test_forget_retracts_a_learning_everywhere_but_the_transcript(
    layout: Layout, standin: BridgeStandin
) -> None:
    """`wsd forget L1 --yes` erases the learning from search, the boot context and the FTS
    index; the ledger keeps that it was retracted, and when (never its words); curation never
    stores it again."""
    from tests.conftest import drain, flush, make_worker

    _learn(layout, FACT, "The office plants are watered on Mondays")
    env = {"WSD_WORKSPACE": layout.root, "PATH": "/usr/bin"}
    (fact_id,) = q(layout.memory_db, "SELECT id FROM learnings WHERE content = ?", (FACT,))[0]
    out = wsd(env, "forget", f"L{fact_id}", "--yes").stdout
    assert "erased:" in out and "learnings" in out
    assert "red notebook" not in wsd(env, "search", "password hint notebook").stdout
    assert "red notebook" not in wsd(env, "boot-context").stdout
    assert q(layout.memory_db, "SELECT learning_id, reason FROM retractions") == [
        (fact_id, "forgotten at the person's request")
    ]
    q(layout.memory_db, "INSERT INTO learnings_fts (learnings_fts) VALUES ('integrity-check')")
    worker = make_worker(layout, standin, batch_turns=1)
    standin.script(Reply.text(f"FACT: {FACT.upper()}"))
    write_turns(layout, 1)
    flush(layout)
    drain(worker)
    assert q(
        layout.memory_db, "SELECT count(*) FROM learnings WHERE content LIKE '%notebook%'"
    ) == [(0,)]
    assert wsd(env, "forget", "999", check=False).returncode == 1
