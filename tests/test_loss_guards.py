"""What a careless or hostile reply can take from a curated file, judged by effect: per batch
in every reply form, and over a day of batches (erosion), through the real worker, store and
stand-in Bridge; and what one reply can add to the ledger."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import (
    daemon_env,
    drain,
    flush,
    make_worker,
    running_daemon,
    scalar,
    write_turns,
    wsd,
)
from tests.conftest import query as q
from wsd.daemon.curation.judging.edits import lost_lines
from wsd.daemon.curation.loop.worker import Worker
from wsd.daemon.standin.bridge import BridgeStandin, Reply
from wsd.daemon.store import Store
from wsd.schema.layout import Layout

FACTS = [f"- The person's fact number {i}: something worth keeping" for i in range(120)]
DAY = 20_000 * 86400.0  # a UTC midnight


def _user_md(layout: Layout) -> list[str]:
    return Path(layout.md("user.md")).read_text().splitlines()


def _dots(n: int) -> Reply:
    """A reply replacing lines 1..n of user.md with a dot each."""
    return Reply.text("\n".join(f"user.md ~{i}: ." for i in range(1, n + 1)))


#: What the person says in each turn: words that hold every line these replies write, so
#: the loss guards are judged alone here (whose words a line is: tests/test_grounding.py).
SAID = "Keep each fact number, something worth keeping: " + " ".join(map(str, range(121)))
SAID += ". A new line is still added."


def _batch(layout: Layout, worker: Worker, i: int, at: float | None = None) -> None:
    """Turn ``i`` captured and curated at once (the reply is whatever is scripted next)."""
    write_turns(layout, 1, start=i, prompt=SAID)
    flush(layout)
    assert "curated" in drain(worker, now=at)


def test_replacing_every_line_loses_a_quarter_per_batch_and_half_a_day(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Found by an attack: ``user.md ~1: .`` ... ``~N: .`` replaced every line. Now each batch
    loses at most a quarter, and once the file has lost half of what it had a day earlier the
    removals wait (held, recorded); adds still land; a day later the baseline moves on."""
    clock = [DAY + 3600]
    worker = make_worker(layout, standin, batch_turns=1, clock=lambda: clock[0])
    standin.script(Reply.text("USER_MD_UPDATE:\n" + "\n".join(FACTS)))
    _batch(layout, worker, 0, DAY + 3600)
    assert _user_md(layout) == FACTS
    originals = []
    for i in range(1, 5):
        standin.script(_dots(120))
        _batch(layout, worker, i, DAY + 3600 + i)
        originals.append(len([x for x in _user_md(layout) if x in FACTS]))
    # 120 -> 90 (a quarter) -> 68 (a quarter of 90) -> 60 (half of 120 reached) -> 60 (held)
    assert originals == [90, 68, 60, 60]
    refused = [json.loads(r) for (r,) in q(layout.memory_db, "SELECT refused FROM batches")[-2:]]
    assert all(any("removals wait" in line for line in batch) for batch in refused)
    held = json.loads(Store(layout).ledger.get_state("eroding:user.md") or "{}")
    assert held["revision"] == 1 and held["had"] == 120
    standin.script(Reply.text("user.md +$: - A new line is still added"))
    _batch(layout, worker, 5, DAY + 3700)
    assert _user_md(layout)[-1] == "- A new line is still added"
    # Two days on, the file as it stood a day before is the baseline: removals resume.
    later = DAY + 3 * 86400
    clock[0] = later
    standin.script(_dots(121))
    _batch(layout, worker, 6, later)
    assert len([x for x in _user_md(layout) if x in FACTS]) == 60 - 15


def test_every_reply_form_loses_the_same_quarter(layout: Layout, standin: BridgeStandin) -> None:
    """Deletions, replacements, a full-file block of all-different lines and a mix of them:
    each loses exactly a quarter of a 41-line file (10 lines), no more."""
    forms = {
        "delete": Reply.text("user.md -1..40"),
        "replace": _dots(40),
        "block": Reply.text("USER_MD_UPDATE:\n" + "\n".join(f"- other {i}" for i in range(40))),
        "mixed": Reply.text(
            "\n".join(
                f"user.md {'-' if i % 2 else '~'}{i}{'' if i % 2 else ': x'}" for i in range(1, 41)
            )
        ),
    }
    worker = make_worker(layout, standin, batch_turns=1, erosion=0.0)
    for i, (form, reply) in enumerate(forms.items()):
        # A person writes the 40 lines (one more says which form: each version is new, and
        # a version the daemon knows would be taken for a stale file, not an edit).
        Path(layout.md("user.md")).write_text("\n".join([*FACTS[:40], f"<!-- {form} -->"]) + "\n")
        standin.script(reply)
        _batch(layout, worker, i)
        assert lost_lines(FACTS[:40], _user_md(layout)) == 10, form


def test_a_hand_edit_or_a_restore_resets_the_days_baseline(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A person who cut the file by hand meant it: their version becomes the baseline, so
    the curator's removals, held before, resume (a restore does the same: see the next
    test)."""
    worker = make_worker(layout, standin, batch_turns=1)
    standin.script(Reply.text("USER_MD_UPDATE:\n" + "\n".join(FACTS[:40])))
    _batch(layout, worker, 0)
    for i in range(1, 4):
        standin.script(_dots(40))
        _batch(layout, worker, i)
    assert len([x for x in _user_md(layout) if x in FACTS]) == 20
    Path(layout.md("user.md")).write_text("\n".join(FACTS[:8]) + "\n")
    standin.script(Reply.text("user.md -1..2"))
    _batch(layout, worker, 4)
    assert _user_md(layout) == FACTS[2:8]  # a quarter of the 8 lines the person kept
    sources = [s for (s,) in q(layout.memory_db, "SELECT source FROM md_revisions ORDER BY id")]
    assert sources[-2:] == ["hand", "curator"]


@pytest.mark.slow
def test_status_and_doctor_name_the_revision_that_brings_eroded_lines_back(
    layout: Layout, tmp_path: Path
) -> None:
    """Through the real daemon: careless batches erode user.md to half a day's worth; wsd
    status and wsd doctor say removals wait and name the revision; restoring it brings every
    line back and both go quiet."""
    with BridgeStandin() as bridge:
        bridge.script(Reply.text("USER_MD_UPDATE:\n" + "\n".join(FACTS[:40])), *[_dots(40)] * 4)
        env = daemon_env(layout, bridge, WSD_BATCH_TURNS="1")
        with running_daemon(env, tmp_path / "d.log"):
            for i in range(5):
                write_turns(layout, 1, start=i, prompt=SAID)
                wsd(env, "flush", "--wait", "30")
            status = json.loads(wsd(env, "status", "--json").stdout)
            doctor = wsd(env, "doctor", check=False).stdout
            assert len([x for x in _user_md(layout) if x in FACTS]) == 20
            revision = status["md_removals_waiting"]["user.md"]["revision"]
            assert status["md_removals_waiting"]["user.md"]["lost"] == 20
            assert "WARN md erosion: user.md has lost 20 of the 40 lines" in doctor
            assert f"wsd memory restore user.md {revision}" in doctor
            wsd(env, "memory", "restore", "user.md", str(revision))
            assert _user_md(layout) == FACTS[:40]
            assert json.loads(wsd(env, "status", "--json").stdout)["md_removals_waiting"] is None
            assert "md erosion" not in wsd(env, "doctor", check=False).stdout


def test_a_huge_reply_adds_a_bounded_row_to_the_ledger(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Found by an attack: a 300 KB reply of ``user.md -1..200`` lines became 4 million
    refusals and a 254.7 MB ledger row. Now what a reply can add is bounded and summarised
    (and a reply over what max_tokens can carry is no reply at all: 64 KB is the most)."""
    worker = make_worker(layout, standin, batch_turns=1)
    standin.script(Reply.text("USER_MD_UPDATE:\n" + "\n".join(FACTS[:40])))
    _batch(layout, worker, 0)
    size = os.path.getsize(layout.memory_db)
    standin.script(Reply.text("FACT: The person likes tea\n" + "user.md -1..200\n" * 4_000))
    _batch(layout, worker, 1)
    (refused,) = q(layout.memory_db, "SELECT refused FROM batches ORDER BY id DESC LIMIT 1")[0]
    lines = json.loads(refused)
    assert len(refused) < 5_000 and len(lines) <= 10, lines
    assert any("320 edits: no line 41" in line for line in lines)
    assert any("over the parser's caps" in line for line in lines)
    assert os.path.getsize(layout.memory_db) - size < 1_000_000
    assert scalar(layout.memory_db, "SELECT count(*) FROM learnings") == 1
