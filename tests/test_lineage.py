"""Memory a person can question (issue 25): each line of a curated file and each learning
traced to the revision and the turns behind it (``wsd memory why|blame``)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from tests.conftest import (
    daemon_env,
    drain,
    flush,
    make_config,
    make_worker,
    running_daemon,
    wait_for,
    write_turns,
    wsd,
)
from tests.conftest import query as q
from wsd.daemon.curation.rebuild.rebuild import rebuild
from wsd.daemon.memory.lineage import blame
from wsd.daemon.standin.bridge import BridgeStandin, Reply
from wsd.daemon.store import Revision
from wsd.schema.layout import Layout


def _rev(rid: int, content: str, source: str = "curator", batch: int | None = 1) -> Revision:
    return Revision(rid, "user.md", 1.7e9 + rid, source, batch, "", content)


def test_blame_gives_each_line_the_revision_of_its_unbroken_run() -> None:
    """A line is as old as the oldest revision of the run that holds it back from the
    latest: kept lines keep their origin, a line removed then brought back is the later
    revision's, copies of a repeated line are dated copy by copy."""
    revs = [
        _rev(1, "# User\n- tea\n- x"),
        _rev(2, "# User\n- tea\n- x\n- coffee", batch=2),
        _rev(3, "# User\n- x\n- coffee", source="hand", batch=None),
        _rev(4, "# User\n- tea\n- x\n- coffee\n- x", source="restore", batch=None),
    ]
    got = [(b.text, b.origin.id) for b in blame(revs)]
    assert got == [("# User", 1), ("- tea", 4), ("- x", 1), ("- coffee", 2), ("- x", 4)]
    assert blame([]) == []


def _why(layout: Layout, standin: BridgeStandin, *args: str, check: bool = True) -> Any:
    out = wsd(daemon_env(layout, standin), "memory", "why", *args, "--json", check=check)
    return json.loads(out.stdout) if out.returncode in (0, 1) and out.stdout.strip() else out


def _line_of(layout: Layout, text: str) -> int:
    lines = Path(layout.md("user.md")).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def _curated(layout: Layout, standin: BridgeStandin) -> None:
    """Two batches through the loop: tabs (turns 1-2), then the venv (turns 3-4)."""
    worker = make_worker(layout, standin, batch_turns=2)
    write_turns(layout, 2, prompt="Task {i}: I prefer tabs over spaces in file {i}")
    write_turns(layout, 2, start=2, prompt="Task {i}: from now on always use the venv, {i}")
    flush(layout)
    drain(worker)
    worker.status.update(state="stopped", force=True)  # as a stopped daemon: rebuild waits none


def test_a_curated_line_is_traced_to_the_prompt_that_caused_it(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Through the loop and the stand-in, then the real CLI: user.md's venv line names its
    curator revision and batch, and first the turn whose person said those words."""
    _curated(layout, standin)
    number = _line_of(layout, "venv, 3")
    found = _why(layout, standin, f"user.md:{number}")["lines"][0]
    assert found["source"] == "curator" and found["batch_id"] == 2 and found["cited"]
    assert "from now on always use the venv, 3" in found["turns"][0]["said"]
    assert found["turns"][0]["turn"].startswith("T") and found["traced"]
    text = wsd(daemon_env(layout, standin), "memory", "why", f"user.md:{number}").stdout
    assert "by the curator (batch 2)" in text and '"Task 3: from now on' in text


def test_why_text_finds_lines_and_learnings_with_their_turns(
    layout: Layout, standin: BridgeStandin
) -> None:
    """``why WORDS``: every curated line holding them and every learning matching them, each
    learning with the turn it cited."""
    _curated(layout, standin)
    found = _why(layout, standin, "tabs")
    assert {x["file"] for x in found["lines"]} == {"user.md"} and len(found["lines"]) == 2
    (learning, *_rest) = found["learnings"]
    assert learning["learning"].startswith("L") and learning["batch_id"] == 1
    assert [t["cited"] for t in learning["turns"]] == [True]
    assert "tabs over spaces" in learning["turns"][0]["said"]


def test_a_hand_line_and_a_restored_line_name_their_revisions(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A line a person typed is the hand revision's; after a restore brings back a line the
    person had removed, the line is the restore's, and it first came with its batch."""
    _curated(layout, standin)
    worker = make_worker(layout, standin, batch_turns=2)
    path = Path(layout.md("user.md"))
    before = path.read_text()
    curated = _line_of(layout, "tabs over spaces in file 0")
    first = max(r[0] for r in q(layout.memory_db, "SELECT id FROM md_revisions"))
    edited = [x for x in before.splitlines() if "file 0" not in x] + ["- Marie likes green tea"]
    path.write_text("\n".join(edited) + "\n")
    os.utime(path, (time.time() + 5, time.time() + 5))
    drain(worker)
    hand = _why(layout, standin, f"user.md:{_line_of(layout, 'green tea')}")["lines"][0]
    assert hand["source"] == "hand" and hand["batch_id"] is None and "turns" not in hand
    wsd(daemon_env(layout, standin), "memory", "restore", "user.md", str(first))
    back = _why(layout, standin, f"user.md:{curated}")["lines"][0]
    assert back["source"] == "restore" and back["first_came"]["batch_id"] == 1
    assert "tabs over spaces in file 0" in back["turns"][0]["said"]


def test_a_rebuilt_memory_traces_the_same_way(layout: Layout, standin: BridgeStandin) -> None:
    """After ``wsd rebuild`` (every turn re-curated into a fresh memory.db) the line names
    the same turn and the person's same words."""
    _curated(layout, standin)
    number = _line_of(layout, "venv, 3")
    before = _why(layout, standin, f"user.md:{number}")["lines"][0]
    rebuild(make_config(layout, standin, batch_turns=2), progress=lambda _line: None)
    after = _why(layout, standin, f"user.md:{_line_of(layout, 'venv, 3')}")["lines"][0]
    assert after["source"] == "curator" and after["traced"]
    key = [(t["observation_id"], t["said"]) for t in after["turns"]]
    assert key == [(t["observation_id"], t["said"]) for t in before["turns"]]


def test_a_learning_cites_the_turns_of_its_batch_or_falls_back_to_the_batch(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Citations are data: each cited turn of the batch a source row (cited 1); a citation
    of a turn outside the batch makes every turn of the batch a source (cited 0)."""
    worker = make_worker(layout, standin, batch_turns=3)
    write_turns(layout, 3)
    standin.script(Reply.text("FACT: Tea at four [turns 1, 3]\nFACT: Coffee never [turn 99]"))
    drain(worker)
    rows = q(
        layout.memory_db,
        "SELECT l.content, s.observation_id, s.cited FROM learning_sources s"
        " JOIN learnings l ON l.id = s.learning_id ORDER BY l.id, s.observation_id",
    )
    assert rows == [
        ("Tea at four", 1, 1),
        ("Tea at four", 3, 1),
        ("Coffee never", 1, 0),
        ("Coffee never", 2, 0),
        ("Coffee never", 3, 0),
    ]


def test_an_import_names_its_turns_and_a_rebuild_keeps_them(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """``wsd import`` lines may name the turns (T<n>) a learning came from: linked as cited
    sources (an unknown one reported, not linked), and still there after a rebuild."""
    _curated(layout, standin)
    (tid,) = q(layout.memory_db, "SELECT id FROM turns ORDER BY id LIMIT 1")[0]
    lines = [
        {"type": "fact", "content": "Marie's studio is in Lyon", "turns": [f"T{tid}", 999999]},
        {"type": "fact", "content": "Bad turns", "turns": ["x1"]},
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    out = wsd(daemon_env(layout, standin), "import", str(path), check=False)
    assert out.returncode == 2 and ":2: turns:" in out.stderr  # all or nothing
    path.write_text(json.dumps(lines[0]) + "\n")
    out = wsd(daemon_env(layout, standin), "import", str(path), check=False)
    assert out.returncode == 0 and "T999999" in out.stderr
    learning = _why(layout, standin, "studio Lyon")["learnings"][0]
    assert learning["batch_id"] is None and [t["turn"] for t in learning["turns"]] == [f"T{tid}"]
    rebuild(make_config(layout, standin, batch_turns=2), progress=lambda _line: None)
    again = _why(layout, standin, "studio Lyon")["learnings"][0]
    assert [t["said"] for t in again["turns"]] == [t["said"] for t in learning["turns"]]


BAD = [
    (["why", "user.md:999"], 1, "no line 999"),
    (["why", "soul.md:2"], 2, "is not a curated file"),
    (["why", "user.md:two"], 2, "is not a line number"),
    (["why", "user.md:99999999999999999999"], 2, "is not a line number"),
    (["why", "nothing-like-this-anywhere"], 1, "no learning matches"),
    (["blame", "os.md"], 2, "one of tools.md"),
    (["why", "x" * 100_000], 1, "matches 'xxxxxxxx"),  # echoed clipped, not 100 KB
    (["why", 'NEAR(tabs "spaces'], 1, "no learning matches"),  # FTS syntax is only words
]


def test_bad_questions_get_one_clear_line_and_change_nothing(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A line out of range, a file that is not curated, words nothing holds: one line, a
    non-zero exit, memory.db untouched."""
    _curated(layout, standin)
    before = Path(layout.memory_db).read_bytes()
    for args, code, says in BAD:
        out = wsd(daemon_env(layout, standin), "memory", *args, check=False)
        assert out.returncode == code and says in (out.stderr + out.stdout), args
        assert len((out.stderr + out.stdout).strip().splitlines()) == 1, args
        assert len(out.stderr + out.stdout) < 300, args
    assert Path(layout.memory_db).read_bytes() == before


def test_a_line_whose_batch_is_gone_says_so(layout: Layout, standin: BridgeStandin) -> None:
    """A curator line whose batch the ledger no longer holds (an older backup restored):
    what is known is printed, the gap said in one line, exit 1."""
    _curated(layout, standin)
    number = _line_of(layout, "venv, 3")
    import apsw

    conn = apsw.Connection(layout.memory_db)
    conn.execute("UPDATE md_revisions SET batch_id = 4242 WHERE batch_id = 2")
    conn.close()
    out = _why(layout, standin, f"user.md:{number}", check=False)
    found = out["lines"][0]
    assert found["traced"] is False and "batch 4242 is no longer in the ledger" in found["gone"]


def test_through_the_running_daemon(layout: Layout, standin: BridgeStandin, tmp_path: Path) -> None:
    """A real ``wsd run`` curates a person's prompt; ``wsd memory blame`` and ``why`` name
    the curator batch and the prompt's words."""
    env = daemon_env(layout, standin)
    with running_daemon(env, tmp_path / "wsd.log"):
        write_turns(layout, 1, prompt="Task {i}: I prefer short answers with sources")
        wsd(env, "flush", "--wait", "30")
        assert wait_for(lambda: Path(layout.md("user.md")).exists(), timeout=30)
        blamed = json.loads(wsd(env, "memory", "blame", "user.md", "--json").stdout)
        line = next(b for b in blamed if "short answers" in b["text"])
        assert line["source"] == "curator" and line["batch_id"] == 1
        found = _why(layout, standin, f"user.md:{line['line']}")["lines"][0]
        assert "I prefer short answers with sources" in found["turns"][0]["said"]


def test_why_words_explains_twenty_lines_and_counts_the_rest(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A question many lines answer: the first 20 are explained, the rest counted."""
    _curated(layout, standin)
    worker = make_worker(layout, standin, batch_turns=2)
    path = Path(layout.md("user.md"))
    path.write_text(path.read_text() + "".join(f"- tea note {i}\n" for i in range(25)))
    os.utime(path, (time.time() + 5, time.time() + 5))
    drain(worker)
    found = _why(layout, standin, "tea note")
    assert len(found["lines"]) == 20 and found["more_lines"] == 5
    assert all(x["source"] == "hand" for x in found["lines"])


def test_a_hand_edit_not_adopted_yet_is_said(layout: Layout, standin: BridgeStandin) -> None:
    """With the daemon stopped, a person's edit is not a revision yet: blame and why say the
    file on disk differs and number the lines as in the latest revision."""
    _curated(layout, standin)
    path = Path(layout.md("user.md"))
    path.write_text("- typed by Marie\n" + path.read_text())
    out = wsd(daemon_env(layout, standin), "memory", "blame", "user.md")
    assert "on disk differs from its latest revision" in out.stderr
    assert "typed by Marie" not in out.stdout


def test_a_line_is_traced_through_the_learning_closest_to_it() -> None:
    """Of a batch's cited turns, those of the learning sharing most words with the line come
    first and alone, even when another turn's answer mentions the same words; with no
    citation at all, the batch's turn sharing most words."""
    from wsd.daemon.memory.lineage import likely_turns
    from wsd.daemon.store import BatchTrace, LearningTrace, SourceTurn

    t1 = SourceTurn("x", 1, True, 1, 1.0, "I prefer dates as DD/MM/YYYY", "The currency is EUR")
    t2 = SourceTurn("x", 2, True, 2, 2.0, "No, the currency is EUR, not USD", "ok")
    pref = LearningTrace(1, "preference", "Dates as DD/MM/YYYY", 1.0, 1, None, None, [t1])
    fix = LearningTrace(2, "correction", "The currency is EUR, not USD", 1.0, 1, None, None, [t2])
    batch = BatchTrace(1, 2.0, [pref, fix], [t1, t2])
    turns, cited = likely_turns("- Correction: the currency is EUR, not USD", batch)
    assert cited and [t.observation_id for t in turns] == [2]
    plain = [
        SourceTurn("x", 1, False, 1, 1.0, "dates please", ""),
        SourceTurn("x", 2, False, 2, 2.0, "EUR not USD", ""),
    ]
    turns, cited = likely_turns("currency EUR not USD", BatchTrace(1, 2.0, [], plain))
    assert not cited and [t.observation_id for t in turns] == [2]


def test_the_migration_marks_a_learnings_one_source_as_cited(tmp_path: Path) -> None:
    """A memory.db from before migration 008: a learning with one source row had cited that
    turn (cited 1 after migrating); one with all its batch's turns had cited none (0)."""
    import apsw

    from wsd import schema

    conn = apsw.Connection(str(tmp_path / "memory.db"))
    for step in schema.migrations("memory"):
        if step.version <= 7:
            conn.execute(Path(step.path).read_text())
    conn.execute("PRAGMA user_version = 7")
    conn.execute(
        "INSERT INTO batches (id, transcript_identity, first_observation_id,"
        " last_observation_id, turns, status, started_at, finished_at)"
        " VALUES (1, 'x', 1, 3, 3, 'done', 1, 1)"
    )
    for lid, text in ((1, "Tea at four"), (2, "Coffee never")):
        conn.execute(
            "INSERT INTO learnings (id, created_at, type, content, content_key, batch_id)"
            " VALUES (?, 1, 'fact', ?, ?, 1)",
            (lid, text, text.lower()),
        )
    rows = [(1, "x", 2), (2, "x", 1), (2, "x", 2), (2, "x", 3)]
    conn.executemany("INSERT INTO learning_sources VALUES (?, ?, ?)", rows)
    schema.migrate(conn, "memory")
    cited = conn.execute(
        "SELECT learning_id, observation_id, cited FROM learning_sources ORDER BY 1, 2"
    ).fetchall()
    assert cited == [(1, 2, 1), (2, 1, 0), (2, 2, 0), (2, 3, 0)]
