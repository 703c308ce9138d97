"""search_memory finds the turns the daemon has not indexed yet (the tail: search/tail.py),
ranked as they will be once indexed, named ``N<n>`` until then and opened by that id; the
daemon's next pass indexes them and they are found once, by their ``T<n>``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from typing import Any

import apsw
import pytest

from tests.conftest import drain, make_worker, query, venv_script
from tests.test_search import run_wsd
from wsd.daemon.memory.agent import run_search
from wsd.daemon.memory.search.core import NOTHING, search_memory
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.store import Store
from wsd.hooks.capture import Capture, CaptureConfig
from wsd.schema.layout import Layout

ASKED = "Which pharmacy did I pick for the insulin refill?"
ANSWER = "You picked the pharmacy on rue Mercière; the refill is ready on Thursday."


def _hook(hook_env: dict[str, str], *events: dict[str, Any]) -> None:
    """Each event through the real command hook (`wsd-hook`), as Claude Code runs it."""
    for event in events:
        subprocess.run(
            [venv_script("wsd-hook")],
            input=json.dumps({"session_id": "sess-e2e4-a", **event}).encode(),
            env=hook_env,
            check=True,
            timeout=60,
        )


def _said_while_stopped(layout: Layout, hook_env: dict[str, str]) -> None:
    """An indexed turn of the session, then one turn through `wsd-hook` with no daemon
    running: it asked memory (an MCP call whose answer names "zanzibar") and answered."""
    cap = Capture(CaptureConfig(workspace=layout.root))
    for event in (
        {"hook_event_name": "UserPromptSubmit", "prompt": "Book the boiler service"},
        {"hook_event_name": "Stop", "last_assistant_message": "Booked for May 3."},
    ):
        cap.handle({"session_id": "sess-e2e4-a", **event})
    cap.close()
    while Store(layout).archive.index_new_turns():
        pass
    _hook(
        hook_env,
        {"hook_event_name": "UserPromptSubmit", "prompt": ASKED},
        {
            "hook_event_name": "PostToolUse",
            "tool_name": "mcp__memory__search_memory",
            "tool_input": {"query": "pharmacy"},
            "tool_response": "[L3] fact · the zanzibar pharmacy",
        },
        {"hook_event_name": "Stop", "last_assistant_message": ANSWER},
    )


def test_a_turn_said_while_the_daemon_is_stopped_is_found_then_found_once(
    layout: Layout, hook_env: dict[str, str], standin: BridgeStandin
) -> None:
    """`wsd search` finds a turn the daemon has not indexed (it found nothing: the turn index
    is built by the daemon's pass), as N<n>, "not indexed yet", which `--turn` and the tool
    open; its memory tool call stays out; after a daemon pass it is found once, as T<n>."""
    _said_while_stopped(layout, hook_env)
    out = run_wsd(layout, "search", "--json", "insulin refill pharmacy")
    (hit,) = [h for h in json.loads(out.stdout) if "insulin" in h["snippet"]]
    assert re.fullmatch(r"N[0-9]+", hit["id"]), hit
    assert hit["source"] == "session sess-e2e4-a, turn 2, not indexed yet"
    assert (hit["type"], hit["session_id"], hit["turn"]) == ("turn", "sess-e2e4-a", 2)
    plain = run_wsd(layout, "search", "insulin refill").stdout.decode()
    assert f"[{hit['id']}] turn · " in plain and ", not indexed yet\n" in plain
    assert run_wsd(layout, "search", "zanzibar").stdout.decode().strip() == NOTHING
    opened = run_wsd(layout, "search", "--turn", hit["id"])
    assert opened.returncode == 0, opened.stderr
    text = opened.stdout.decode().rstrip("\n")
    assert text.splitlines()[0].startswith(f"[{hit['id']}] turn · ")
    assert text.splitlines()[0].endswith("session sess-e2e4-a, turn 2, not indexed yet")
    assert f"user: {ASKED}" in text and f"agent: {ANSWER}" in text and "zanzibar" not in text
    assert run_search(layout, {"turn": hit["id"].lower()})["content"][0]["text"] == text
    as_json = json.loads(run_wsd(layout, "search", "--turn", hit["id"], "--json").stdout)
    assert as_json["id"] == hit["id"] and as_json["prompt"] == ASKED

    drain(make_worker(layout, standin))  # the daemon's pass indexes it
    ((tid,),) = query(layout.memory_db, "SELECT id FROM turns WHERE prompt = ?", (ASKED,))
    found = json.loads(run_wsd(layout, "search", "--json", "insulin refill pharmacy").stdout)
    assert [h["id"] for h in found if "insulin" in h["snippet"]] == [f"T{tid}"]
    assert all(not h["source"].endswith("not indexed yet") for h in found)
    again = run_wsd(layout, "search", "--turn", hit["id"]).stdout.decode()
    assert again.startswith(f"[T{tid}] turn · ") and "not indexed yet" not in again
    missing = run_wsd(layout, "search", "--turn", "N999999")
    assert missing.returncode == 1
    assert missing.stderr.decode().strip() == "wsd search: no turn N999999 in memory"


def test_the_mcp_tool_finds_and_opens_a_turn_not_indexed_yet(
    layout: Layout, hook_env: dict[str, str]
) -> None:
    """Over `wsd mcp`: a turn the daemon has not indexed is a hit, and ``turn`` opens it."""
    pytest.importorskip("mcp")
    _said_while_stopped(layout, hook_env)
    code = r"""
import anyio, json, re, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
async def main():
    params = StdioServerParameters(command=sys.argv[1], args=["--workspace", sys.argv[2], "mcp"])
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        found = await s.call_tool("search_memory", {"query": "insulin refill"})
        turn = re.search(r"\[(N[0-9]+)\]", found.content[0].text).group(1)
        opened = await s.call_tool("search_memory", {"turn": turn})
        print(json.dumps([found.content[0].text, opened.is_error, opened.content[0].text]))
anyio.run(main)
"""
    out = subprocess.run(
        [sys.executable, "-c", code, venv_script("wsd"), layout.root],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    found, is_error, opened = json.loads(out.stdout)
    assert "session sess-e2e4-a, turn 2, not indexed yet" in found
    assert is_error is False and f"\nuser: {ASKED}\n" in opened


#: Turns of three sessions whose words overlap, so that statistics, variants, feedback and
#: neighbour lending all take part in the ranking.
TURNS = [
    ("s1", "Summarise the supplier invoices of March", "Three invoices: ACME 1,234.50, Brio 310."),
    ("s1", "Which one is overdue?", "The Brio invoice, due on 2 March."),
    ("s1", "Remind the supplier by email", "Drafted a reminder to Brio's accounts team."),
    ("s2", "I prefer payments by bank transfer", "Noted: transfers, not cards."),
    ("s2", "Move the invoices into documents/invoices/2026-03", "Moved 3 files."),
    ("s2", "What did the contract say about late payment?", "Clause 7: 2 % a month."),
    ("s3", "Book the boiler service", "Booked for May 3, the engineer comes at 9."),
    ("s3", "And the boiler pressure?", "1.5 bar, within the range of the manual."),
    ("s3", "Renew the domain name before it lapses", "Renewed until 2028."),
    ("s3", "Competition entry for the architecture prize", "Entry submitted: three drawings."),
]
QUESTIONS = [
    "supplier invoices overdue",
    "late payment clause in the contract",
    "boiler",
    "competitions",
    "bank transfer preference",
    "domain renewal",
    "architect prize",  # "architect" is said in a form only ("architecture"): a variant
]


def _ranked(layout: Layout) -> dict[str, list[tuple[str, float]]]:
    return {
        q: [(h.snippet, round(h.score, 9)) for h in search_memory(layout, q, semantic=False)]
        for q in QUESTIONS
    }


@pytest.mark.parametrize("indexed_first", [0, 4])
def test_a_turn_not_indexed_yet_ranks_as_it_will_once_indexed(
    layout: Layout, indexed_first: int
) -> None:
    """The tail is ranked with the index as one collection (the index's tokenizer, BM25
    statistics over both, variants, feedback, neighbours across the cursor): the hits and
    their scores are the same before the daemon indexes the turns and after."""
    cap = Capture(CaptureConfig(workspace=layout.root))
    for session, prompt, answer in TURNS:
        cap.handle({"hook_event_name": "UserPromptSubmit", "session_id": session, "prompt": prompt})
        cap.handle(
            {"hook_event_name": "Stop", "session_id": session, "last_assistant_message": answer}
        )
    cap.close()
    if indexed_first:
        Store(layout).archive.index_new_turns(batch=indexed_first)
    before = _ranked(layout)
    assert all(before.values()), before
    assert search_memory(layout, "boiler", type="preference", semantic=False) == []
    assert search_memory(layout, "boiler", since=time.time() + 60, semantic=False) == []
    while Store(layout).archive.index_new_turns():
        pass
    assert _ranked(layout) == before


def test_a_turn_whose_text_changed_is_read_again(layout: Layout) -> None:
    """In one process (the agent's tool), a tail turn whose row changed before the daemon
    indexed it (a late event folded into it) is found by its new words, not its old ones."""
    cap = Capture(CaptureConfig(workspace=layout.root))
    cap.handle({"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "Book it"})
    cap.handle({"hook_event_name": "Stop", "session_id": "s1", "last_assistant_message": "Oslo"})
    cap.close()
    assert [h.id for h in search_memory(layout, "Oslo", semantic=False)] == ["N1"]
    conn = apsw.Connection(layout.transcript_db)
    try:
        conn.execute("UPDATE observations SET agent_response = 'Bergen' WHERE id = 1")
    finally:
        conn.close()
    assert search_memory(layout, "Oslo", semantic=False) == []
    assert [h.id for h in search_memory(layout, "Bergen", semantic=False)] == ["N1"]
