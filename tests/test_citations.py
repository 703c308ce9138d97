"""The agent can follow a citation: a learning's hit names the turn it came from (``from turn
T<n> (date)``), and ``search_memory(turn="T<n>")`` opens that turn, bounded; the same through
``wsd mcp`` and ``wsd search``. Turns come through the real capture path and are curated by a
worker with the stand-in Bridge (the rule curator cites ``[turn N]``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest

from tests.conftest import drain, flush, import_lines, make_worker, query, venv_script
from tests.test_search import run_wsd
from wsd import schema
from wsd.daemon.memory.agent import SEARCH_DESCRIPTION, SEARCH_SCHEMA, run_search
from wsd.daemon.memory.search.core import format_hits, search_memory
from wsd.daemon.memory.search.turn import TURN_CHARS
from wsd.daemon.standin.bridge import BridgeStandin, Reply
from wsd.daemon.store import Store
from wsd.hooks.capture import Capture, CaptureConfig
from wsd.schema.layout import Layout

PREFERENCE = "I prefer tabs over spaces for indentation."


def _say(layout: Layout, session: str, *turns: tuple[str, list[str], str]) -> None:
    """Turns (prompt, Bash commands, answer) through the capture hooks, in order."""
    cap = Capture(CaptureConfig(workspace=layout.root))
    for prompt, commands, answer in turns:
        cap.handle({"hook_event_name": "UserPromptSubmit", "session_id": session, "prompt": prompt})
        for command in commands:
            cap.handle(
                {
                    "hook_event_name": "PostToolUse",
                    "session_id": session,
                    "tool_name": "Bash",
                    "tool_input": {"command": command},
                    "tool_response": f"ran {command}",
                }
            )
        cap.handle(
            {"hook_event_name": "Stop", "session_id": session, "last_assistant_message": answer}
        )
    cap.close()


def _curate(layout: Layout, standin: BridgeStandin) -> None:
    flush(layout)
    drain(make_worker(layout, standin, batch_turns=25))


def _turn_of(layout: Layout, prompt: str) -> str:
    """The turn index id (``T<n>``) of the turn whose prompt is ``prompt``."""
    ((tid,),) = query(layout.memory_db, "SELECT id FROM turns WHERE prompt = ?", (prompt,))
    return f"T{tid}"


def _text(result: dict[str, Any]) -> str:
    assert "is_error" not in result, result
    return str(result["content"][0]["text"])


def _error(result: dict[str, Any]) -> str:
    assert result.get("is_error") is True, result
    text = str(result["content"][0]["text"])
    assert "Traceback" not in text and "invalid literal" not in text
    return text


@pytest.fixture
def cited(layout: Layout, standin: BridgeStandin) -> Layout:
    """Three turns of one session curated in one batch; the rule curator learns the
    preference of the middle one and cites it."""
    _say(
        layout,
        "3f2b9c1e-8d4a-4c7e-9b1f-0a2d3e4f5a6b",
        ("Set up the repository for the website", ["git init"], "Initialised the repository."),
        (PREFERENCE, [], "Noted: tabs from now on."),
        ("What time is it in Lisbon?", [], "It is 14:05 in Lisbon."),
    )
    _curate(layout, standin)
    return layout


def test_a_learning_hit_names_its_turn_and_the_tool_opens_it(cited: Layout) -> None:
    """A learning's hit names the very turn it cites, and ``turn`` opens that turn's words."""
    source = _turn_of(cited, PREFERENCE)
    (hit,) = search_memory(cited, "tabs spaces indentation", type="preference")
    assert hit.source_turn == source
    assert re.fullmatch(rf"from turn {source} \(\d{{4}}-\d\d-\d\d \d\d:\d\d\)", hit.source)
    header = format_hits([hit]).splitlines()[0]
    assert header.startswith(f"[{hit.id}] preference · {hit.date} · from turn {source} (")
    opened = _text(run_search(cited, {"turn": source}))
    lines = opened.splitlines()
    assert lines[0].startswith(f"[{source}] turn · ") and "session 3f2b9c1e…, turn 2" in lines[0]
    assert lines[1] == f"user: {PREFERENCE}" and lines[-1] == "agent: Noted: tabs from now on."
    assert _text(run_search(cited, {"turn": int(source[1:])})) == opened  # 88 as well as T88


def test_an_opened_turn_shows_its_tool_calls_in_short(cited: Layout) -> None:
    """An opened turn lists its tool calls, each on its own line after ``tools:``."""
    first = _turn_of(cited, "Set up the repository for the website")
    opened = _text(run_search(cited, {"turn": first}))
    assert "\ntools:\n  Bash " in opened and "git init" in opened
    assert opened.endswith("agent: Initialised the repository.")


def test_a_learning_of_a_whole_batch_names_its_first_turn_and_how_many_more(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A learning citing no turn names its batch's first turn and counts the others."""
    standin.responder = lambda _body: Reply.text("FACT: The boiler pressure is 1.5 bar.")
    _say(
        layout,
        "s1",
        ("Check the boiler pressure", [], "It reads 1.5 bar."),
        ("And the thermostat?", [], "Set to 20 degrees."),
        ("Thanks", [], "You are welcome."),
    )
    _curate(layout, standin)
    (hit,) = search_memory(layout, "boiler pressure", type="fact")
    first = _turn_of(layout, "Check the boiler pressure")
    assert hit.source_turn == first and hit.source.endswith(") and 2 more")


def test_a_learning_whose_turn_is_not_indexed_names_its_session(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A learning whose source turn is not in the turn index names its session, no turn."""
    _say(layout, "s1", (PREFERENCE, [], "Noted."))
    _curate(layout, standin)
    assert query(layout.memory_db, "SELECT count(*) FROM turns") == [(1,)]
    conn = schema.connect(layout.memory_db, "memory")
    try:
        conn.execute("DELETE FROM turns")
    finally:
        conn.close()
    (hit,) = search_memory(layout, "tabs spaces", type="preference")
    assert hit.source == "session s1" and hit.source_turn is None
    assert "from turn" not in format_hits([hit])


def test_wsd_search_prints_the_source_turn_and_opens_it(cited: Layout) -> None:
    """`wsd search` (and --json's source_turn) names the turn; `--turn T<n>` prints it."""
    source = _turn_of(cited, PREFERENCE)
    plain = run_wsd(cited, "search", "--type", "preference", "tabs spaces")
    header = plain.stdout.decode().splitlines()[0]
    assert plain.returncode == 0 and f"· from turn {source} (" in header
    (hit,) = json.loads(run_wsd(cited, "search", "--json", "--type", "preference", "tabs").stdout)
    assert hit["source_turn"] == source
    opened = run_wsd(cited, "search", "--turn", source)
    assert opened.returncode == 0
    assert opened.stdout.decode().rstrip("\n") == _text(run_search(cited, {"turn": source}))
    as_json = json.loads(run_wsd(cited, "search", "--turn", source, "--json").stdout)
    assert as_json["id"] == source and as_json["prompt"] == PREFERENCE
    missing = run_wsd(cited, "search", "--turn", "T999999")
    assert missing.returncode == 1
    assert missing.stderr.decode().strip() == "wsd search: no turn T999999 in memory"
    bad = run_wsd(cited, "search", "--turn", "Tabc")
    assert bad.returncode == 2 and b"Traceback" not in bad.stderr


def test_the_mcp_server_names_and_opens_the_cited_turn(cited: Layout) -> None:
    """Over `wsd mcp`: the SDK helper's schema, a hit naming its turn, ``turn`` opening it."""
    pytest.importorskip("mcp")
    code = r"""
import anyio, json, re, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
async def main():
    params = StdioServerParameters(command=sys.argv[1], args=["--workspace", sys.argv[2], "mcp"])
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        (tool,) = [t for t in (await s.list_tools()).tools if t.name == "search_memory"]
        print(json.dumps([tool.description, tool.input_schema]))
        found = await s.call_tool("search_memory", {"query": "tabs spaces", "type": "preference"})
        print(json.dumps(found.content[0].text))
        turn = re.search(r"from turn (T[0-9]+)", found.content[0].text).group(1)
        opened = await s.call_tool("search_memory", {"turn": turn})
        print(json.dumps([opened.is_error, opened.content[0].text]))
        bad = await s.call_tool("search_memory", {"turn": "T0"})
        print(json.dumps([bad.is_error, bad.content[0].text]))
anyio.run(main)
"""
    out = subprocess.run(
        [sys.executable, "-c", code, venv_script("wsd"), cited.root],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    listed, found, opened, bad = (json.loads(line) for line in out.stdout.splitlines())
    assert listed == [SEARCH_DESCRIPTION, SEARCH_SCHEMA]
    source = _turn_of(cited, PREFERENCE)
    assert f"· from turn {source} (" in found
    assert opened[0] is False and f"\nuser: {PREFERENCE}\n" in opened[1]
    assert bad[0] is True and "turn must be a turn id" in bad[1] and "'T0'" in bad[1]


MAX_ID = 2**63 - 1
BAD_TURNS: dict[str, tuple[dict[str, Any], str]] = {
    "neither": ({}, "query is missing: give a few specific words or a short question, or turn="),
    "limit only": ({"limit": 5}, "query is missing"),
    "T0": ({"turn": "T0"}, "turn must be a turn id as a hit names it, like T88, not 'T0'"),
    "0": ({"turn": 0}, "turn must be a turn id as a hit names it, like T88, not 0"),
    "Tabc": ({"turn": "Tabc"}, "turn must be a turn id as a hit names it, like T88, not 'Tabc'"),
    "T-3": ({"turn": "T-3"}, "like T88, not 'T-3'"),
    "30 digits": ({"turn": "1" * 30}, "like T88, not '111111"),
    "1e30": ({"turn": 10**30}, f"like T88, not {10**30}"),
    "5001 digits": ({"turn": 10**5000}, "like T88, not int"),
    "past max id": ({"turn": f"T{MAX_ID + 1}"}, f"like T88, not 'T{MAX_ID + 1}'"),
    "True": ({"turn": True}, "like T88, not True"),
    "2.5": ({"turn": 2.5}, "like T88, not 2.5"),
    "list": ({"turn": ["T1"]}, "like T88, not ['T1']"),
    "unknown": ({"turn": "T999999"}, "search_memory: no turn T999999 in memory"),
    "max id": ({"turn": MAX_ID, "query": "x"}, f"search_memory: no turn T{MAX_ID} in memory"),
}


@pytest.mark.parametrize("args, says", BAD_TURNS.values(), ids=BAD_TURNS.keys())
def test_bad_turn_ids_are_one_clear_error(cited: Layout, args: dict[str, Any], says: str) -> None:
    """Each bad or unknown turn id (or neither query nor turn) is one clear is_error line."""
    text = _error(run_search(cited, args))
    assert says in text and "\n" not in text


def test_an_imported_learning_still_formats_with_its_ref_or_as_imported(cited: Layout) -> None:
    """An imported learning (no batch) still says its ref or "imported" and names no turn."""
    import_lines(
        cited,
        [
            json.dumps({"type": "preference", "content": "Tabs in the Makefile", "ref": "n:7"}),
            json.dumps({"type": "preference", "content": "Tabs in the Go code too"}),
        ],
    )
    hits = search_memory(cited, "tabs", type="preference")
    by_source = {h.source: h for h in hits}
    assert {"n:7", "imported"} <= set(by_source), [h.source for h in hits]
    assert by_source["n:7"].source_turn is None and by_source["imported"].source_turn is None
    assert by_source["n:7"].to_json()["source_turn"] is None
    text = format_hits(hits)
    assert "· n:7\n" in text and "· imported\n" in text
    assert text.count("from turn T") == 1  # the curated one only


def test_an_opened_long_turn_is_bounded_head_and_tail(layout: Layout) -> None:
    """A long turn opens within TURN_CHARS, words clipped head and tail, extra calls counted."""
    prompt = "ASK-START " + "please look at this " * 200 + " ASK-END"
    answer = "ANSWER-START " + "here is what I found " * 400 + " ANSWER-END"
    calls = [f"ls folder{i}" for i in range(11)]
    _say(layout, "s1", (prompt, calls, answer))
    while Store(layout).archive.index_new_turns():
        pass
    ((tid,),) = query(layout.memory_db, "SELECT id FROM turns")
    opened = _text(run_search(layout, {"turn": f"T{tid}"}))
    assert len(opened) <= TURN_CHARS
    user = next(line for line in opened.splitlines() if line.startswith("user: "))
    agent = next(line for line in opened.splitlines() if line.startswith("agent: "))
    assert user.startswith("user: ASK-START") and user.endswith("ASK-END") and " … " in user
    assert agent.startswith("agent: ANSWER-START") and agent.endswith("ANSWER-END")
    assert " … " in agent
    assert "ls folder7" in opened and "ls folder8" not in opened
    assert "  (3 more calls)" in opened
