"""Curation v2 through the running daemon and the stand-in Bridge: md files changed by edits a
careless reply cannot turn into loss, a person's edits kept, learnings that earn their place,
supersession, and the daily spend cap."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

from tests.conftest import (
    daemon_env,
    drain,
    flush,
    make_worker,
    running_daemon,
    scalar,
    wait_for,
    write_turns,
    wsd,
)
from tests.conftest import query as q
from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import BridgeStandin, Reply
from wsd.daemon.store import Store
from wsd.schema.layout import Layout


def _memory_block(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"][0]["text"])


def _batch_block(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"][1]["text"])


def _done(layout: Layout) -> int:
    return int(scalar(layout.memory_db, "SELECT count(*) FROM batches WHERE status = 'done'"))


def test_a_hand_edit_is_adopted_across_a_restart_and_shown_to_the_curator(
    layout: Layout, tmp_path: Path
) -> None:
    """A line a person appended to user.md after a batch survives a daemon restart, becomes a
    revision (source hand) and is in the next curator request; an edit while the daemon runs
    is adopted too."""
    log = tmp_path / "d.log"
    with BridgeStandin(responder=rule_curator.responder) as bridge:
        env = daemon_env(layout, bridge)
        with running_daemon(env, log):
            write_turns(layout, 2, prompt="Task {i}: I prefer tabs over spaces in file {i}")
            wsd(env, "flush", "--wait", "30")
            assert "- Prefers tabs" in Path(layout.md("user.md")).read_text()
        with Path(layout.md("user.md")).open("a") as fh:
            fh.write("- My daughter is called Mia\n")
        with running_daemon(env, log):
            write_turns(layout, 1, start=2, prompt="Remind me to call the school")
            wsd(env, "flush", "--wait", "30")
            assert "- My daughter is called Mia" in Path(layout.md("user.md")).read_text()
            with Path(layout.md("context.md")).open("a") as fh:
                fh.write("- Mia starts school on 1 September\n")
            assert wait_for(
                lambda: (
                    "Mia starts school" in Store(layout).revisions.latest_md().get("context.md", "")
                ),
                10,
            )
        requests = [r.json for r in bridge.requests if r.json]
    assert "My daughter is called Mia" in _memory_block(requests[-1])
    sources = q(layout.memory_db, "SELECT file, source FROM md_revisions WHERE source = 'hand'")
    assert ("user.md", "hand") in sources and ("context.md", "hand") in sources
    assert "- My daughter is called Mia" in Path(layout.md("user.md")).read_text()
    assert '"event": "md_adopted"' in log.read_text()


def test_a_careless_two_line_rewrite_of_a_twenty_line_file_loses_a_quarter(
    layout: Layout, tmp_path: Path
) -> None:
    """A reply rewriting a 20-line context.md as 2 lines loses at most a quarter (the line it
    replaces and 4 deleted): 16 lines stay, the refusal is on the batch's ledger row and in
    the log, the rest of the batch applies. (In user.md a line a rewrite leaves out stays
    unless the person asked for it to go: tests/test_grounding.py.)"""
    facts = [f"- Fact number {i} about the person" for i in range(19)]
    with BridgeStandin() as bridge:
        bridge.script(
            Reply.text("CONTEXT_MD_UPDATE:\n# Context\n" + "\n".join(facts)),
            Reply.text("FACT: The person moved to Lisbon\nCONTEXT_MD_UPDATE:\n# Context\n- Lisbon"),
        )
        env = daemon_env(layout, bridge)
        with running_daemon(env, tmp_path / "d.log"):
            said = "; ".join(f"fact number {i} about me" for i in range(19))
            write_turns(layout, 1, prompt=f"Remember: {said}")  # what user.md says (issue 32)
            wsd(env, "flush", "--wait", "30")
            assert len(Path(layout.md("context.md")).read_text().splitlines()) == 20
            write_turns(layout, 1, start=1, prompt="I moved to Lisbon")
            wsd(env, "flush", "--wait", "30")
    lines = Path(layout.md("context.md")).read_text().splitlines()
    assert len(lines) == 16 and lines[:2] == ["# Context", "- Lisbon"]
    (refused,) = q(layout.memory_db, "SELECT refused FROM batches ORDER BY id DESC LIMIT 1")[0]
    # The 14 refusals are one line on the ledger, not 14.
    (held,) = [r for r in json.loads(refused) if "over the loss limit" in r]
    assert held.startswith("context.md: 14 edits: over the loss limit (5 of 20 lines a batch)")
    assert q(layout.memory_db, "SELECT content FROM learnings") == [("The person moved to Lisbon",)]
    assert '"event": "reply_refused"' in (tmp_path / "d.log").read_text()


def test_edits_against_a_file_a_person_changed_during_the_call_land_on_their_lines(
    layout: Layout, standin: BridgeStandin
) -> None:
    """While the curator call is out, a person inserts lines at the top of user.md and rewrites
    one line: the reply's edits (numbered against the file it was sent) follow their lines,
    the edit of the rewritten line is refused, and the person's lines stay."""
    worker = make_worker(layout, standin, batch_turns=1)
    base = ["# User", "- Name: Ana", "- Lives in Porto", "- Prefers tabs"]
    standin.script(Reply.text("USER_MD_UPDATE:\n" + "\n".join(base)))
    write_turns(layout, 1, prompt="My name is Ana, I live in Porto and I prefer tabs")
    flush(layout)
    drain(worker)
    in_call, release = threading.Event(), threading.Event()

    def slow_curator(_body: dict[str, Any]) -> Reply:
        in_call.set()
        release.wait(10)
        return Reply.text("user.md ~3: - Lives in Lisbon\nuser.md -4\nuser.md +1: - Age: 41")

    standin.responder = slow_curator
    write_turns(layout, 1, start=1, prompt="My age is 41, I live in Lisbon now; tabs no longer")
    flush(layout)
    runner = threading.Thread(target=drain, args=(worker,))
    runner.start()
    assert in_call.wait(10)
    Path(layout.md("user.md")).write_text(
        "# User\n- My daughter is called Mia\n- Name: Ana\n- Lives in Porto\n- Prefers spaces\n"
    )
    release.set()
    runner.join(20)
    assert Path(layout.md("user.md")).read_text().splitlines() == [
        "# User",
        "- Age: 41",
        "- My daughter is called Mia",
        "- Name: Ana",
        "- Lives in Lisbon",
        "- Prefers spaces",
    ]
    (refused,) = q(layout.memory_db, "SELECT refused FROM batches ORDER BY id DESC LIMIT 1")[0]
    assert json.loads(refused) == [
        "user.md: delete 4: line 4 was changed since the request (edited by hand?)"
    ]
    assert q(layout.memory_db, "SELECT source FROM md_revisions ORDER BY id") == [
        ("curator",),
        ("hand",),
        ("curator",),
    ]


def test_repeats_and_restatements_are_not_stored(layout: Layout, standin: BridgeStandin) -> None:
    """A learning equal to a stored one (case, punctuation, spacing and type aside), or one that
    only restates a line of the memory files, is not stored; the ledger row says why."""
    worker = make_worker(layout, standin, batch_turns=1)
    standin.script(
        Reply.text("FACT: The build uses make.\nUSER_MD_UPDATE:\n# User\n- Prefers dark mode"),
        Reply.text(
            "PREFERENCE: the build USES   make\n"
            "FACT: Prefers dark mode.\n"
            "PREFERENCE: The user prefers dark mode\n"
            "FACT: The nightly job runs at 02:00 UTC\n"
            "FACT: The nightly job runs at 02:00 UTC"
        ),
    )
    for i in range(2):
        said = "The build uses make; I prefer dark mode; the nightly job runs at 02:00 UTC"
        write_turns(layout, 1, start=i, prompt=said)  # the person's words (issue 32)
        flush(layout)
        drain(worker)
    assert [r[0] for r in q(layout.memory_db, "SELECT content FROM learnings ORDER BY id")] == [
        "The build uses make.",
        "The nightly job runs at 02:00 UTC",
    ]
    (refused,) = q(layout.memory_db, "SELECT refused FROM batches ORDER BY id DESC LIMIT 1")[0]
    reasons = json.loads(refused)
    assert sum("restates user.md line 2" in r for r in reasons) == 2
    assert sum("repeated in the reply" in r for r in reasons) == 1
    assert "1 learnings already stored (or retracted)" in reasons


def test_a_learning_replaced_by_a_newer_one_leaves_the_boot_context(
    layout: Layout, standin: BridgeStandin
) -> None:
    """The curator is shown related learnings with their ids; a new learning that replaces
    one marks it superseded (kept, linked to its successor), and the boot context then
    holds the successor only."""
    worker = make_worker(layout, standin, batch_turns=1)
    standin.script(Reply.text("FACT: The team office is in Porto, Rua das Flores 12"))
    write_turns(layout, 1, prompt="Where is the team office? In Porto, Rua das Flores 12")
    flush(layout)
    drain(worker)
    (old_id,) = q(layout.memory_db, "SELECT id FROM learnings")[0]
    seen: list[str] = []

    def replacing(body: dict[str, Any]) -> Reply:
        block = _batch_block(body)
        seen.append(block)
        offered = re.search(r"^\[(\d+)\] \(fact, [^)]*\) The team office", block, re.M)
        assert offered is not None, block
        return Reply.text(f"FACT: The team office moved to Lisbon [replaces {offered.group(1)}]")

    standin.responder = replacing
    write_turns(layout, 1, start=1, prompt="The team office moved from Porto to Lisbon")
    flush(layout)
    drain(worker)
    rows = q(layout.memory_db, "SELECT id, superseded_by FROM learnings ORDER BY id")
    assert rows[0] == (old_id, rows[1][0]) and rows[1][1] is None
    env = {"WSD_WORKSPACE": layout.root, "PATH": "/usr/bin", "WSD_SEMANTIC": "false"}
    boot = wsd(env, "boot-context").stdout
    assert "moved to Lisbon" in boot and "Rua das Flores" not in boot
    # Search keeps the old one, flagged and ranked below its successor.
    hits = json.loads(wsd(env, "search", "team office Porto Lisbon", "--json").stdout)
    ids = [h["id"] for h in hits]
    new_id = f"L{rows[1][0]}"
    assert ids.index(new_id) < ids.index(f"L{old_id}")
    assert next(h for h in hits if h["id"] == f"L{old_id}")["superseded_by"] == new_id
    assert f"superseded by {new_id}" in wsd(env, "search", "team office Porto").stdout


def test_the_daily_budget_pauses_curation_and_a_new_day_resumes_it(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Once the UTC day's curator cost reaches WSD_DAILY_BUDGET_USD no call is made, turns
    wait (none marked done), the heartbeat says so, one log line; the next day curation
    resumes by itself and every turn is curated once."""
    expensive = {"input_tokens": 1000, "output_tokens": 1000}  # $0.006 a call
    standin.responder = lambda _body: Reply.text("FACT: A fact", usage=expensive)
    day = 20_000 * 86400.0  # a UTC midnight
    clock = [day + 3600]
    worker = make_worker(
        layout, standin, batch_turns=2, daily_budget_usd=0.01, clock=lambda: clock[0]
    )
    write_turns(layout, 8)
    flush(layout)
    steps = drain(worker, now=day + 3600)
    assert steps.count("curated") == 2 and steps[-1] == "budget"
    assert _done(layout) == 2 and len(standin.requests) == 2
    assert (
        scalar(layout.transcript_db, "SELECT count(*) FROM observations WHERE processed = 0") == 4
    )
    assert worker.run_once(now=day + 7200).action == "budget" and len(standin.requests) == 2
    status = json.loads(Path(layout.memory_dir, "daemon.status.json").read_text())
    assert status["state"] == "budget" and status["budget"]["resumes_at"] == day + 86400
    clock[0] = day + 86400 + 60
    steps = drain(worker, now=day + 86400 + 60)
    assert steps.count("curated") == 2 and _done(layout) == 4
    assert q(
        layout.memory_db, "SELECT count(*), count(DISTINCT observation_id) FROM batch_turns"
    ) == [(8, 8)]


def test_a_higher_cap_after_a_restart_resumes_at_once(layout: Layout, tmp_path: Path) -> None:
    """The real daemon stops calling at the cap (wsd status says budget) and, restarted with a
    higher WSD_DAILY_BUDGET_USD, curates the rest at once; each turn once."""
    log = tmp_path / "d.log"
    usage = {"input_tokens": 1000, "output_tokens": 1000}
    with BridgeStandin(responder=lambda _b: Reply.text("FACT: A fact", usage=usage)) as bridge:
        env = daemon_env(layout, bridge, WSD_BATCH_TURNS="2", WSD_DAILY_BUDGET_USD="0.005")
        with running_daemon(env, log):
            write_turns(layout, 6)
            wsd(env, "flush")
            assert wait_for(lambda: _done(layout) == 1, 20)
            assert wait_for(
                lambda: json.loads(wsd(env, "status", "--json").stdout)["state"] == "budget", 10
            )
            time.sleep(1)
            assert _done(layout) == 1 and len(bridge.requests) == 1
        with running_daemon({**env, "WSD_DAILY_BUDGET_USD": "1"}, log):
            wsd(env, "flush", "--wait", "30")
    assert _done(layout) == 3
    assert q(layout.memory_db, "SELECT count(DISTINCT observation_id) FROM batch_turns") == [(6,)]
    assert log.read_text().count('"event": "budget_reached"') == 1


def test_revisions_for_people_history_diff_restore(layout: Layout, standin: BridgeStandin) -> None:
    """wsd memory history lists every revision with its source; diff shows a change; restore
    brings an old version back as a new revision (nothing deleted) and writes the file."""
    worker = make_worker(layout, standin, batch_turns=1)
    standin.script(
        Reply.text("USER_MD_UPDATE:\n# User\n- Likes tea"),
        Reply.text("user.md ~2: - Likes coffee"),
    )
    for i, said in enumerate(("I like tea", "I like coffee now")):
        write_turns(layout, 1, start=i, prompt=said)
        flush(layout)
        drain(worker)
    env = {"WSD_WORKSPACE": layout.root, "PATH": "/usr/bin"}
    history = json.loads(wsd(env, "memory", "history", "user.md", "--json").stdout)
    assert [(h["source"], h["added"], h["removed"]) for h in history] == [
        ("curator", 2, 0),
        ("curator", 1, 1),
    ]
    diff = wsd(env, "memory", "diff", "user").stdout
    assert "-- Likes tea" in diff and "+- Likes coffee" in diff
    first = str(history[0]["id"])
    assert "restored as" in wsd(env, "memory", "restore", "user.md", first).stdout
    assert Path(layout.md("user.md")).read_text() == "# User\n- Likes tea\n"
    sources = [
        h["source"] for h in json.loads(wsd(env, "memory", "history", "user", "--json").stdout)
    ]
    assert sources == ["curator", "curator", "restore"]
    assert wsd(env, "memory", "restore", "user.md", "999", check=False).returncode == 1
    assert wsd(env, "memory", "history", "soul.md", check=False).returncode == 2
