"""Every number a person or an agent gives wsd is checked against the range its use can hold:
the real ``wsd`` says what is wrong in one line (exit 2, no traceback); the memory tools
answer a clear error the agent can act on."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.conftest import wsd
from wsd.daemon.memory.agent import run_resolve, run_search
from wsd.daemon.memory.search.core import MAX_LIMIT
from wsd.daemon.ops.cli_memory import SEARCH_MAX_LIMIT
from wsd.daemon.store import Store
from wsd.schema.layout import Layout

HUGE = "99999999999999999999999"  # past SQLite's 64-bit integers
MAX_ID = str(2**63 - 1)

BAD = [
    ("forget", HUGE),
    ("forget", f"L{HUGE}"),
    ("forget", f"#{HUGE}"),
    ("forget", "L0"),
    ("forget", "-4"),
    ("forget", "²"),
    ("forget", "١٢"),
    ("forget", "L1e3"),
    ("forget", "9" * 5000),
    ("pending", "complete", HUGE),
    ("pending", "dismiss", f"#{HUGE}"),
    ("pending", "complete", "0"),
    ("memory", "restore", "user.md", HUGE),
    ("memory", "restore", "user.md", "-1"),
    ("memory", "diff", "user.md", "1", HUGE),
    ("search", "report", "--limit", HUGE),
    ("search", "report", "--limit", "0"),
    ("search", "report", "--limit", "-1"),
    ("search", "report", "--limit", "101"),
    ("search", "report", "--limit", "ten"),
    ("flush", "--wait", "nan"),
    ("flush", "--wait", "inf"),
    ("flush", "--wait", "1e400"),
    ("flush", "--wait", "-1"),
    ("rebuild", "--wait", "nan"),
]


def _env(layout: Layout) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WSD_", "ANTHROPIC_"))}
    return env | {"WSD_WORKSPACE": layout.root}


@pytest.mark.parametrize("args", BAD, ids=lambda a: " ".join(a)[:40])
def test_a_number_out_of_range_is_one_line_and_exit_2(layout: Layout, args: tuple[str]) -> None:
    """Ids past SQLite's 64-bit range (plain, L- or #-prefixed), zero or negative ids, other
    scripts' digits, limits outside 1..100 and waits that are no finite number of seconds: one
    line on stderr naming the argument, exit 2, no traceback, nothing on stdout."""
    result = wsd(_env(layout), *args, check=False)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"wsd {args[0]}") and "argument" in lines[0]
    assert len(lines[0]) < 300


def test_numbers_in_range_still_work(layout: Layout, tmp_path: Path) -> None:
    """The largest id is looked up (no such learning: exit 1, not a crash); L-, #- and plain
    ids, --limit 100 and --wait 0 are accepted as before."""
    env = _env(layout)
    notes = tmp_path / "notes.jsonl"
    lines = [json.dumps({"type": "fact", "content": f"Invoice number {i} is due"}) for i in (1, 2)]
    notes.write_text("\n".join(lines) + "\n")
    wsd(env, "import", str(notes))
    missing = wsd(env, "forget", f"L{MAX_ID}", check=False)
    assert missing.returncode == 1 and "no learning #" + MAX_ID in missing.stderr
    assert "erased:" in wsd(env, "forget", "L1", "--yes").stdout
    assert "erased:" in wsd(env, "forget", "#2", "--yes").stdout
    assert wsd(env, "search", "invoice", "--limit", str(MAX_LIMIT)).returncode == 0
    assert wsd(env, "pending", "complete", MAX_ID, check=False).returncode == 1
    assert wsd(env, "memory", "restore", "user.md", MAX_ID, check=False).returncode == 1
    flushed = wsd(env, "flush", "--wait", "0", check=False)  # taken; no daemon: said, exit 1
    assert flushed.returncode == 1 and flushed.stdout.startswith("flush requested (#")
    assert SEARCH_MAX_LIMIT == MAX_LIMIT


def test_forgetting_twice_says_already_retracted(layout: Layout, tmp_path: Path) -> None:
    """Found by a new user: a second ``wsd forget L1`` said "no learning #1". Now it says the
    learning was already retracted, and when (exit 0: what was asked holds)."""
    env = _env(layout)
    notes = tmp_path / "notes.jsonl"
    notes.write_text(json.dumps({"type": "fact", "content": "The gate code changed"}) + "\n")
    wsd(env, "import", str(notes))
    wsd(env, "forget", "L1", "--yes")
    again = wsd(env, "forget", "L1", "--yes", check=False)
    assert again.returncode == 0 and "#1 was already retracted, at 20" in again.stdout
    assert "no learning" not in again.stdout + again.stderr


def _error(result: dict[str, Any]) -> str:
    assert result.get("is_error") is True, result
    text = str(result["content"][0]["text"])
    assert "invalid literal" not in text and "Traceback" not in text
    return text


@pytest.mark.parametrize(
    "limit",
    ["ten", 0, -5, 101, 10**30, 10**5000, True, 3.5, float("nan"), float("inf"), [3]],
    ids=["ten", "0", "-5", "101", "1e30", "5001-digits", "True", "3.5", "nan", "inf", "list"],
)
def test_search_memory_limit_must_be_a_whole_number_in_range(layout: Layout, limit: Any) -> None:
    """search_memory's limit that is no whole number from 1 to 100 is an error naming limit
    and its range (a 5000-digit number included), not int()'s message."""
    text = _error(run_search(layout, {"query": "report", "limit": limit}))
    assert "limit must be a whole number from 1 to 100" in text


def test_search_memory_without_a_query_says_so(layout: Layout) -> None:
    """search_memory called with {} says the query is missing; a limit of 7, "7" or 7.0 and
    none at all are searches."""
    assert "query is missing" in _error(run_search(layout, {}))
    for limit in (7, "7", 7.0, None):
        assert "is_error" not in run_search(layout, {"query": "report", "limit": limit})


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"status": "completed"},
        {"id": "twelve", "status": "completed"},
        {"id": int(HUGE), "status": "completed"},
        {"id": HUGE, "status": "completed"},
        {"id": 0, "status": "completed"},
        {"id": True, "status": "completed"},
        {"id": 1.5, "status": "completed"},
    ],
)
def test_resolve_action_id_must_be_a_whole_number_in_range(
    layout: Layout, args: dict[str, Any]
) -> None:
    """resolve_action with a missing, wordy, fractional, boolean or out-of-range id says what an
    id is (1 to 2^63-1); SQLite is never handed a number it cannot hold."""
    text = _error(run_resolve(layout, args))
    assert f"id must be a whole number from 1 to {MAX_ID}" in text


def test_resolve_action_still_closes_an_action_by_id(layout: Layout) -> None:
    """An open action is closed by its id given as a number or as "#N"."""
    conn = apsw.Connection(layout.memory_db)
    try:
        for text in ("Send the invoice", "Call the bank"):
            conn.execute(
                "INSERT INTO pending_actions (created_at, updated_at, content, priority, status,"
                " source, dedup_key) VALUES (1, 1, ?, 2, 'pending', 'curator', ?)",
                (text, text),
            )
    finally:
        conn.close()
    done = run_resolve(layout, {"id": 1, "status": "completed"})
    assert "marked completed" in done["content"][0]["text"]
    done = run_resolve(layout, {"id": "#2", "status": "dismissed"})
    assert "marked dismissed" in done["content"][0]["text"]
    assert Store(layout).actions.open_actions() == []
