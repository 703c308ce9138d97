"""A memory.db deleted and recreated (or restored from a backup) while ``wsd rebuild`` runs.

Found by the soak (issue 30, seed 8123): a rebuild was running (the daemon paused) when the
``delete_memory_db`` fault removed memory.db. The restarted daemon adopted the md files into
the fresh memory.db as hand revisions (ids 2 and 4: its ids start again from 1); the rebuild
then read the people's revisions made meanwhile by id, after the last id it had seen in the
old memory.db (dozens), found none, and swapped its aside database over the fresh one: the
hand revisions were gone from the history and the lines of three hand edits from user.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import drain, flush, make_config, make_worker, write_turns
from tests.conftest import query as q
from wsd.daemon.curation.loop.outcome import Step
from wsd.daemon.curation.rebuild.rebuild import RebuildError, rebuild
from wsd.daemon.runtime.pause import pause_path
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.store import MemoryReplaced, Store, aside_path, finish, open_aside, swap
from wsd.schema.layout import Layout

PROMPT = "Task {i}: I prefer tabs in file{i}. Remind me to review file{i}."


def _append(layout: Layout, line: str) -> None:
    """A person appends a line to user.md (as the soak's hand_edit fault does)."""
    with open(layout.md("user.md"), "a", encoding="utf-8") as fh:
        fh.write(line + "\n")


def _delete_memory_db(layout: Layout) -> None:
    """memory.db and its WAL and shared-memory files removed, the daemon stopped."""
    for suffix in ("", "-wal", "-shm"):
        Path(layout.memory_db + suffix).unlink(missing_ok=True)


def test_a_memory_db_recreated_during_a_rebuild_keeps_every_hand_edit(
    layout: Layout, standin: BridgeStandin
) -> None:
    """The soak's sequence, with the real worker, rebuild and files: turns curated and a hand
    edit adopted live; mid-rebuild, a restarted daemon adopts a second hand edit, memory.db
    is deleted, the daemon starts again on a fresh one (adopting the md files, a third hand
    edit with them) and a fourth edit comes. The rebuild must not swap over the fresh memory
    it never saw: every hand line stays on disk and in the live history, and the daemon then
    curates every turn into the fresh memory.db, once."""
    write_turns(layout, 7, prompt=PROMPT)
    flush(layout)
    worker = make_worker(layout, standin, batch_turns=3)
    drain(worker)
    lines = [f"- Hand edit {n}: my cat is called Soak{n}" for n in range(4)]
    _append(layout, lines[0])
    drain(worker)  # adopted: the old memory.db has a person's revision the rebuild will see
    worker.status.update(state="stopped", force=True)
    done: list[str] = []

    def meanwhile(line: str) -> None:
        if not line.startswith("batch 1:") or done:
            return
        done.append(line)
        _append(layout, lines[1])
        restarted = make_worker(layout, standin)  # start-up adopts it, then the pass pauses
        assert restarted.run_once().action == Step.PAUSED
        _delete_memory_db(layout)
        _append(layout, lines[2])
        fresh = make_worker(layout, standin)  # a fresh memory.db: the md files adopted
        assert fresh.run_once().action == Step.PAUSED
        assert [r.source for r in Store(layout).revisions.md_history("user.md")] == ["hand"]
        _append(layout, lines[3])  # adopted by the rebuild itself, into the fresh memory.db

    try:
        rebuild(make_config(layout, standin, batch_turns=3), progress=meanwhile)
        outcome = "swapped"
    except RebuildError as exc:
        outcome = str(exc)
    assert done
    user = Path(layout.md("user.md")).read_text()
    assert [line for line in lines if line not in user] == []
    history = Store(layout).revisions.md_history("user.md")
    assert lines[3] in history[-1].content and {r.source for r in history} == {"hand"}
    assert "memory.db was replaced" in outcome
    assert not Path(pause_path(layout)).exists()
    assert not Path(aside_path(layout)).exists()

    worker = make_worker(layout, standin, batch_turns=3)
    flush(layout)
    drain(worker)
    user = Path(layout.md("user.md")).read_text()
    assert [line for line in lines if line not in user] == []
    covered = q(layout.memory_db, "SELECT observation_id FROM batch_turns ORDER BY 1")
    assert [i for (i,) in covered] == list(range(1, 8))
    assert Store(layout).revisions.latest_md()["user.md"] == user


def test_the_swap_refuses_a_memory_db_other_than_the_one_the_rebuild_started_from(
    layout: Layout,
) -> None:
    """The last guard, at the swap itself: the aside database is copied only over the
    memory.db whose identity the rebuild read when it started; over any other (recreated
    after the rebuild's last look) it refuses, and that memory.db is left as it was."""
    started_from = Store(layout).memory_identity()
    open_aside(layout)
    finish(layout)
    _delete_memory_db(layout)
    fresh = Store(layout)
    fresh.migrate()
    fresh.revisions.add_revision("user.md", "- A person's line\n", "hand", 1.0)
    assert fresh.memory_identity() != started_from
    with pytest.raises(MemoryReplaced):
        swap(layout, started_from)
    assert Store(layout).revisions.latest_md() == {"user.md": "- A person's line\n"}
    swap(layout, fresh.memory_identity())  # the database it started from: swapped
    assert Store(layout).revisions.latest_md() == {}
