"""wsd rebuild: deterministic re-curation, what is carried over, atomic swap, a live daemon."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.conftest import flush, import_lines, make_config, make_worker, venv_script, write_turns
from tests.conftest import query as q
from wsd import schema
from wsd.daemon.curation.rebuild.rebuild import RebuildError, rebuild
from wsd.daemon.memory.search.core import search_memory
from wsd.daemon.runtime.heartbeat import status_path
from wsd.daemon.runtime.pause import pause_path
from wsd.daemon.standin.bridge import BridgeStandin, Fault
from wsd.daemon.store import Store, aside_path
from wsd.schema.layout import Layout

#: Each turn states a preference and asks for a reminder (a learning and an action).
REBUILD_PROMPT = "Task {i}: I prefer tabs in file{i}. Remind me to review file{i}."


def curated(layout: Layout, standin: BridgeStandin, n: int = 7, start: int = 0) -> Layout:
    """n turns (from turn ``start``) curated by a real worker, which then stops (its
    heartbeat says so)."""
    write_turns(layout, n, start=start, prompt=REBUILD_PROMPT)
    flush(layout)
    worker = make_worker(layout, standin, batch_turns=3)
    for _ in range(50):
        if not worker.run_once().more:
            break
    worker.status.update(state="stopped", force=True)
    return layout


LEARNING_COLUMNS = "type, content, created_at, session_id, source_observation_id, ref"


def learnings(layout: Layout) -> list[tuple[Any, ...]]:
    return q(layout.memory_db, f"SELECT {LEARNING_COLUMNS} FROM learnings ORDER BY id")


def test_a_rebuild_gives_the_memory_the_live_run_gave(
    layout: Layout, standin: BridgeStandin
) -> None:
    """With the deterministic curator, a rebuild gives the live run's learnings (with their
    dates and sources), md files and actions, in the live run's batches; a second rebuild
    gives the same again."""
    curated(layout, standin)
    live = learnings(layout)
    live_files = Store(layout).revisions.latest_md()
    actions = "SELECT content, priority, status, created_at FROM pending_actions ORDER BY id"
    live_actions = q(layout.memory_db, actions)
    config = make_config(layout, standin, batch_turns=4)  # the live run's batches win
    lines: list[str] = []
    report = rebuild(config, progress=lines.append)
    assert report.turns == 7 and report.batches == 3 and report.parked == 0
    assert lines[0] == "batch 1: turns 1-3 (3/7), +6 learnings" and "swapping" in lines[-1]
    first = learnings(layout)
    assert first == live and q(layout.memory_db, actions) == live_actions
    assert Store(layout).revisions.latest_md() == live_files
    files = {n: Path(layout.md(n)).read_text() for n in ("user.md", "tools.md", "context.md")}
    rebuild(config, progress=lambda _line: None)
    assert learnings(layout) == first
    for name, text in files.items():
        assert (
            Path(layout.md(name)).read_text() == text == Store(layout).revisions.latest_md()[name]
        )
    assert q(layout.memory_db, "PRAGMA integrity_check") == [("ok",)]
    assert not Path(pause_path(layout)).exists()
    assert not Path(aside_path(layout)).exists()
    assert search_memory(layout, "which packages were installed")  # turn index rebuilt too


def test_a_rebuild_of_turns_no_batch_covers_dates_them_by_their_turns(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Turns the live memory never curated (memory.db lost, say) are rebuilt in batches of
    WSD_BATCH_TURNS, each dated by its last turn: the history keeps its timeline."""
    write_turns(layout, 7, prompt=REBUILD_PROMPT)
    lines: list[str] = []
    rebuild(make_config(layout, standin, batch_turns=4), progress=lines.append)
    assert lines[0] == "batch 1: turns 1-4 (4/7), +8 learnings"
    last_turn_ts = q(layout.transcript_db, "SELECT timestamp FROM observations WHERE id = 4")
    assert learnings(layout)[0][2] == last_turn_ts[0][0]


def test_rebuild_keeps_what_curation_cannot_recreate(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Imported learnings, other sources' actions and state stay; closed actions stay closed."""
    curated(layout, standin)
    store = Store(layout)
    import_lines(
        store.layout, [json.dumps({"type": "fact", "content": "Imported note", "ref": "r9"})]
    )
    first, *_ = store.actions.open_actions()
    store.actions.set_action_status(first[0], "dismissed", time.time())
    conn = apsw.Connection(layout.memory_db)
    conn.execute(
        "INSERT INTO pending_actions (created_at, updated_at, content, source,"
        " dedup_key) VALUES (1, 1, 'Check the new scan', 'watcher', 'w1')"
    )
    conn.execute(
        "INSERT INTO workspace_files (path, size, mtime_ns, first_seen, last_seen)"
        " VALUES ('documents/a.pdf', 1, 1, 1, 1)"
    )
    conn.close()
    open_before = len(store.actions.open_actions())
    rebuild(make_config(layout, standin), progress=lambda _line: None)
    assert q(layout.memory_db, "SELECT content, ref FROM learnings WHERE ref IS NOT NULL") == [
        ("Imported note", "r9")
    ]
    assert q(
        layout.memory_db, "SELECT status FROM pending_actions WHERE content = ?", (first[2],)
    ) == [("dismissed",)]
    assert len(store.actions.open_actions()) == open_before
    assert ("Check the new scan",) in q(layout.memory_db, "SELECT content FROM pending_actions")
    assert q(layout.memory_db, "SELECT path FROM workspace_files") == [("documents/a.pdf",)]


def test_what_people_do_during_a_rebuild_survives_the_swap(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A hand edit made (or adopted by a restarted daemon) mid-rebuild, a wsd import, a wsd
    forget and a watcher action: all are in the swapped-in memory; no edit is reverted."""
    curated(layout, standin)
    store = Store(layout)
    forgotten = q(layout.memory_db, "SELECT id, content FROM learnings ORDER BY id LIMIT 1")[0]
    done: list[str] = []

    lines: list[str] = []

    def meanwhile(line: str) -> None:
        lines.append(line)
        if not line.startswith("batch 1:") or done:
            return
        done.append(line)
        user = Path(layout.md("user.md"))
        user.write_text(user.read_text() + "- Hand edit: my cat is called Rebuild\n")
        context = Store(layout).revisions.latest_md().get("context.md", "")
        store.revisions.add_revision(
            "context.md", context + "- Adopted by a restarted daemon\n", "hand", 1.0
        )
        import_lines(store.layout, [json.dumps({"type": "fact", "content": "Imported midway"})])
        assert store.learnings.retract(int(forgotten[0]), time.time(), "test")
        conn = apsw.Connection(layout.memory_db)
        conn.execute(
            "INSERT INTO pending_actions (created_at, updated_at, content, source,"
            " dedup_key) VALUES (2, 2, 'Look at the new scan', 'watcher', 'w2')"
        )
        conn.close()

    rebuild(make_config(layout, standin, batch_turns=3), progress=meanwhile)
    assert done and "kept your edits of user.md" in lines
    latest = Store(layout).revisions.latest_md()
    assert "my cat is called Rebuild" in latest["user.md"]
    assert "my cat is called Rebuild" in Path(layout.md("user.md")).read_text()
    assert "Adopted by a restarted daemon" in latest["context.md"]
    assert "Adopted by a restarted daemon" in Path(layout.md("context.md")).read_text()
    contents = [c for (c,) in q(layout.memory_db, "SELECT content FROM learnings")]
    assert "Imported midway" in contents and forgotten[1] not in contents
    assert q(layout.memory_db, "SELECT count(*) FROM retractions") == [(1,)]
    assert ("Look at the new scan",) in q(layout.memory_db, "SELECT content FROM pending_actions")
    assert q(layout.memory_db, "PRAGMA integrity_check") == [("ok",)]
    assert (
        q(layout.memory_db, "INSERT INTO learnings_fts(learnings_fts) VALUES ('integrity-check')")
        == []
    )


def test_a_hand_edit_made_while_the_rebuild_swaps_is_kept(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A line a person adds after the rebuild last adopted the files (while it carries the
    late rows and swaps) is not overwritten when the rebuilt files are written: it is
    replayed onto the rebuilt file as a hand revision, and stays on disk."""
    curated(layout, standin)
    user = Path(layout.md("user.md"))
    line = "- Hand edit: my cat is called Swap"

    def meanwhile(said: str) -> None:
        if said.startswith("swapping"):  # said after the last adoption, right before the swap
            user.write_text(user.read_text() + line + "\n")

    rebuild(make_config(layout, standin), progress=meanwhile)
    assert line in user.read_text()
    (last,) = Store(layout).revisions.md_history("user.md")[-1:]
    assert last.source == "hand" and line in last.content
    assert user.read_text() == last.content
    worker = make_worker(layout, standin)
    worker.run_once()
    assert line in user.read_text() and Store(layout).revisions.md_history("user.md")[-1] == last


def test_a_rebuild_counts_its_spend_and_the_days_spend_never_goes_down(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Every call a rebuild makes is booked toward today (purpose rebuild) on top of what
    the day had already spent; deleting memory.db and rebuilding again loses none of it (the
    charges live in transcript.db, with the turns)."""
    curated(layout, standin)
    today = time.time() // 86400 * 86400
    before = Store(layout).charges.spent_since(today)
    assert before > 0
    rebuild(make_config(layout, standin), progress=lambda _line: None)
    ((rebuilt,),) = q(
        layout.transcript_db, "SELECT sum(usd) FROM charges WHERE purpose = 'rebuild'"
    )
    assert rebuilt > 0
    assert Store(layout).charges.spent_since(today) == pytest.approx(before + rebuilt)
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(layout.memory_db + suffix)
    rebuild(make_config(layout, standin), progress=lambda _line: None)
    ((both,),) = q(layout.transcript_db, "SELECT sum(usd) FROM charges WHERE purpose = 'rebuild'")
    assert both > rebuilt
    assert Store(layout).charges.spent_since(today) == pytest.approx(before + both)


def test_failed_rebuild_leaves_memory_untouched(layout: Layout, standin: BridgeStandin) -> None:
    """A Bridge outage mid-rebuild raises, saying the Bridge's answer in words (no repr of its
    body); the live memory, files and markers are unchanged."""
    curated(layout, standin)
    before = (
        learnings(layout),
        q(layout.memory_db, "SELECT * FROM batches"),
        Path(layout.md("user.md")).read_text(),
    )
    standin.script(*[Fault.server_error()] * 10)
    config = make_config(layout, standin, retry_attempts=1, batch_turns=2)
    with pytest.raises(RebuildError) as failed:
        rebuild(config, progress=lambda _line: None)
    assert str(failed.value) == (
        "curator call failed, rebuild abandoned:"
        " HTTP 500 from the Bridge (api_error: Internal server error)"
    )
    assert (
        learnings(layout),
        q(layout.memory_db, "SELECT * FROM batches"),
        Path(layout.md("user.md")).read_text(),
    ) == before
    assert not Path(pause_path(layout)).exists()
    assert not Path(aside_path(layout)).exists()


def _holding_pause(layout: Layout) -> subprocess.Popen[str]:
    """A process that holds the pause file as a live ``wsd rebuild`` does."""
    code = (
        "import sys; from wsd.schema.layout import Layout\n"
        "from wsd.daemon.runtime.pause import take_pause\n"
        "assert take_pause(Layout(sys.argv[1])) is not None\n"
        "print('held', flush=True); sys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, layout.root],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def test_one_rebuild_at_a_time_and_stale_pause_files(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A live pause file refuses a second rebuild; one left by a dead process is taken over."""
    curated(layout, standin, n=2)
    config = make_config(layout, standin)
    holder = _holding_pause(layout)  # a live rebuild: its pause file is locked
    try:
        with pytest.raises(RebuildError, match="another wsd rebuild"):
            rebuild(config, progress=lambda _line: None)
    finally:
        holder.kill()
        holder.wait()
    Path(pause_path(layout)).unlink()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(pause_path(layout)).write_text(f"{dead} 0\n")
    assert rebuild(config, progress=lambda _line: None).turns == 2


def test_rebuild_pauses_a_running_daemon_which_resumes_unharmed(
    layout: Layout, standin: BridgeStandin
) -> None:
    """The daemon pauses; readers see the old or the new memory, never a mix; turns written
    during the rebuild are curated afterwards, each exactly once."""
    curated(layout, standin, n=6)
    stop = threading.Event()
    worker = make_worker(layout, standin, stop=stop, batch_turns=3)
    daemon = threading.Thread(target=worker.run, daemon=True)
    daemon.start()
    deadline = time.monotonic() + 10
    while (
        json.loads(Path(status_path(layout)).read_text()).get("state") != "running"
        and time.monotonic() < deadline
    ):
        time.sleep(0.02)
    states: list[str] = []
    problems: list[str] = []
    done = threading.Event()

    def read() -> None:  # a reader (search tool, wsd status) running throughout
        while not done.is_set():
            try:
                # Like every reader of the project: read-only, with the busy timeout.
                conn = schema.connect(layout.memory_db, "memory", readonly=True)
                try:
                    orphans = conn.execute(
                        "SELECT count(*) FROM learnings WHERE"
                        " batch_id IS NOT NULL AND batch_id NOT IN (SELECT id FROM batches)"
                    ).fetchall()
                finally:
                    conn.close()
                if orphans != [(0,)]:
                    problems.append(f"orphans {orphans}")
                search_memory(layout, "tabs in file")
                beat = json.loads(Path(status_path(layout)).read_text())
                states.append(str(beat.get("state")))
            except (apsw.Error, ValueError) as exc:
                problems.append(repr(exc))
            time.sleep(0.005)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    standin.latency = 0.05
    writer = threading.Thread(
        target=write_turns, args=(layout, 3, "s2", 100, REBUILD_PROMPT), daemon=True
    )
    lines: list[str] = []
    writer.start()
    report = rebuild(make_config(layout, standin), progress=lines.append, wait_seconds=20)
    writer.join()
    standin.latency = 0.0
    assert "daemon paused" in lines and report.turns >= 6
    write_turns(
        layout, 2, "s3", 200, REBUILD_PROMPT
    )  # after the rebuild: only the resumed daemon curates these
    flush(layout)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if q(layout.transcript_db, "SELECT count(*) FROM observations WHERE processed = 0") == [
            (0,)
        ] and q(
            layout.transcript_db, "SELECT count(*) FROM flush_requests WHERE handled_at IS NULL"
        ) == [(0,)]:
            break
        time.sleep(0.05)
    done.set()
    reader.join()
    stop.set()
    worker.seams.nudge.set()
    daemon.join(10)
    assert problems == [] and "paused" in states
    observations = [r[0] for r in q(layout.transcript_db, "SELECT id FROM observations")]
    covered = [
        r[0]
        for r in q(
            layout.memory_db, "SELECT observation_id FROM batch_turns ORDER BY observation_id"
        )
    ]
    assert covered == observations and len(observations) == 11
    assert q(layout.memory_db, "PRAGMA integrity_check") == [("ok",)]
    assert search_memory(layout, "file101") and search_memory(layout, "file201")


def test_wsd_rebuild_command(layout: Layout, standin: BridgeStandin) -> None:
    """`wsd rebuild` shows progress on stderr and a summary in words on stdout."""
    curated(layout, standin, n=2)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WSD_", "ANTHROPIC_"))}
    env.update(
        WSD_WORKSPACE=layout.root,
        ANTHROPIC_BASE_URL=standin.url,
        WSD_BRIDGE_TOKEN="test-sprite-token",
    )
    wsd = [venv_script("wsd")]
    proc = subprocess.run(
        [*wsd, "rebuild"],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parent.parent,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "batch 1: turns 1-2 (2/2)" in proc.stderr
    assert proc.stdout.startswith("rebuilt memory from 2 turn(s) in 1 batch(es)")
    # In words, not Python's lists (it said "files written ['user.md'], removed []").
    assert "files written: " in proc.stdout and "removed: none" in proc.stdout
    assert "[" not in proc.stdout


def _turns_sent(standin: BridgeStandin) -> list[str]:
    """The <turns> block of every curator request the stand-in received, in order."""
    out = []
    for request in standin.requests:
        assert request.json is not None
        text = request.json["messages"][0]["content"][-1]["text"]
        out.append(text[text.index("<turns") : text.index("</turns>")])
    return out


def test_rebuild_clips_an_oversized_turn_exactly_as_the_loop_does(
    layout: Layout, standin: BridgeStandin
) -> None:
    """One pipeline: a turn larger than the whole batch budget reaches the curator clipped
    to the same text, in the same batches, from the loop and from wsd rebuild."""
    write_turns(layout, 2, prompt="small task {i}")
    write_turns(layout, 1, start=2, prompt="huge " + "x" * 2000 + " task {i}")
    write_turns(layout, 2, start=3, prompt="small task {i}")
    flush(layout)
    budget = {"batch_chars": 450, "batch_turns": 25}
    worker = make_worker(layout, standin, **budget)
    for _ in range(20):
        if not worker.run_once().more:
            break
    worker.status.update(state="stopped", force=True)
    by_loop = _turns_sent(standin)
    standin.clear_requests()
    rebuild(make_config(layout, standin, **budget), progress=lambda _line: None)
    by_rebuild = _turns_sent(standin)
    assert len(by_loop) >= 3 and any("huge" in block for block in by_loop)
    huge = next(block for block in by_loop if "huge" in block)
    assert "task 2" in huge and "small" not in huge  # a batch of its own ...
    assert " … " in huge and len(huge.split("\n", 1)[1].strip()) <= 450  # ... clipped to the budget
    assert by_rebuild == by_loop


def test_the_heartbeat_leaves_paused_on_the_first_pass_after_the_pause(
    layout: Layout, standin: BridgeStandin
) -> None:
    """`wsd status` stops saying "paused" as soon as the rebuild's pause file is gone, not at
    the next periodic heartbeat (a resumed idle daemon wrote its state only every 10 s)."""
    worker = make_worker(layout, standin)
    worker.run_once()
    holder = _holding_pause(layout)  # a live rebuild: its pause file is locked
    try:
        worker.run_once()
        assert json.loads(Path(status_path(layout)).read_text())["state"] == "paused"
    finally:
        holder.kill()
        holder.wait()
    Path(pause_path(layout)).unlink()
    worker.run_once()
    assert json.loads(Path(status_path(layout)).read_text())["state"] != "paused"


def test_a_rebuild_keeps_the_ids_the_agent_saw(layout: Layout, standin: BridgeStandin) -> None:
    """An action's `#n` and a learning's `L<n>` name the same thing after `wsd rebuild`
    (issue 45: "#3 Call Maria tomorrow" became "#1"): with a watcher's action and an
    imported learning added between two curations (the rebuild makes the curated ones in
    another order) and the first action closed, every action and learning keeps its id,
    text and status, search finds each under its id, a live learning the rebuild does not
    make again leaves its id unused, and the next action and learning get ids past them."""
    curated(layout, standin, 3)
    conn = apsw.Connection(layout.memory_db)
    conn.execute(
        "INSERT INTO pending_actions (created_at, updated_at, content, source, dedup_key)"
        " VALUES (1, 1, 'Check the new scan', 'watcher', 'w1')"
    )
    conn.execute(
        "INSERT INTO learnings (created_at, type, content, content_key)"
        " VALUES (1, 'fact', 'Imported: the office plant is a fern', 'k-fern')"
    )
    conn.close()
    curated(layout, standin, 3, start=3)
    conn = apsw.Connection(layout.memory_db)
    conn.execute(
        "INSERT INTO learnings (created_at, type, content, content_key, batch_id)"
        " VALUES (1, 'fact', 'A statement no curator makes again', 'k-gone',"
        " (SELECT max(id) FROM batches))"
    )
    gone = conn.last_insert_rowid()
    conn.close()
    said = q(layout.memory_db, "SELECT id, content FROM learnings WHERE id != ? ORDER BY id",
             (gone,))  # fmt: skip
    assert len(said) >= 4 and not said[-1][1].startswith("Imported")
    store = Store(layout)
    first = q(layout.memory_db, "SELECT min(id) FROM pending_actions")[0][0]
    store.actions.set_action_status(first, "completed", time.time())
    before = q(layout.memory_db, "SELECT id, content, status FROM pending_actions ORDER BY id")
    assert len(before) >= 5 and ("Check the new scan",) in [(r[1],) for r in before]
    rebuild(make_config(layout, standin), progress=lambda _line: None)
    after = q(layout.memory_db, "SELECT id, content, status FROM pending_actions ORDER BY id")
    assert after == before
    assert q(layout.memory_db, "SELECT id, content FROM learnings ORDER BY id") == said
    for lid, content in said:
        word = content.split()[-1].strip(".")
        found = q(
            layout.memory_db,
            "SELECT rowid FROM learnings_fts WHERE learnings_fts MATCH ?",
            (f'"{word}"',),
        )
        assert (lid,) in found, (lid, word, found)
    assert q(layout.memory_db, "PRAGMA foreign_key_check") == []
    conn = apsw.Connection(layout.memory_db)
    conn.execute(
        "INSERT INTO pending_actions (created_at, updated_at, content, source, dedup_key)"
        " VALUES (1, 1, 'Another scan', 'watcher', 'w-new')"
    )
    assert conn.last_insert_rowid() > max(r[0] for r in before)
    conn.execute(
        "INSERT INTO learnings (created_at, type, content, content_key)"
        " VALUES (1, 'fact', 'Another statement', 'k-new')"
    )
    assert conn.last_insert_rowid() > gone
    conn.close()
