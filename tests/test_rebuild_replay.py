"""A rebuild compared with the live run it replaces: what people did between batches (a hand
edit, a restore, a forget) lands where it happened, and the vectors wait for the daemon.

Found by an attack (issue 20): after one curated turn and a line a person appended to
user.md, a rebuild kept none of the turn's learnings (judged against the final files), and a
line taken out with ``wsd memory restore`` came back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import daemon_env, drain, flush, make_config, make_worker, write_turns, wsd
from tests.conftest import query as q
from wsd.daemon.curation.loop.worker import Worker
from wsd.daemon.curation.rebuild.rebuild import rebuild
from wsd.daemon.memory import semantic
from wsd.daemon.memory.semantic.embedding import Embedder
from wsd.daemon.runtime.log import get_logger
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.store import Store
from wsd.schema.layout import Layout

LEARNINGS = (
    "SELECT type, content, created_at, session_id, source_observation_id, superseded_by IS NULL"
    " FROM learnings ORDER BY created_at, content"
)
ACTIONS = "SELECT content, priority, status, created_at FROM pending_actions ORDER BY content"


def _turn(layout: Layout, worker: Worker, i: int, prompt: str) -> None:
    write_turns(layout, 1, start=i, prompt=prompt)
    flush(layout)
    assert "curated" in drain(worker)


def _memory(layout: Layout) -> tuple[Any, ...]:
    """What a session would start with: learnings, md files (stored and on disk), actions."""
    files = {n: Path(layout.md(n)).read_text() for n in ("user.md", "context.md", "tools.md")}
    return (
        q(layout.memory_db, LEARNINGS),
        Store(layout).revisions.latest_md(),
        files,
        q(layout.memory_db, ACTIONS),
    )


def test_a_rebuild_replays_hand_edits_restores_and_forgets_where_they_happened(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Live: a preference curated, a line appended by hand (restating it), a second turn, a
    restore that takes that turn's line out, a forget, a third turn. The rebuild gives the
    same learnings, files and actions: the first learning is kept (judged against the file
    as it stood then), the restored-away line stays away, the forgotten learning stays
    gone, the hand line stays."""
    worker = make_worker(layout, standin, batch_turns=1)
    env = daemon_env(layout, standin)
    _turn(layout, worker, 0, "I prefer answers in bullet points.")
    user = Path(layout.md("user.md"))
    user.write_text(user.read_text() + "- Prefers answers in bullet points, says the person\n")
    _turn(layout, worker, 1, "I prefer tea over coffee. Remind me to water the plants.")
    assert "- Prefers tea over coffee" in user.read_text()
    hand = [r for r in Store(layout).revisions.md_history("user.md") if r.source == "hand"][-1]
    wsd(env, "memory", "restore", "user.md", str(hand.id))
    assert "tea" not in user.read_text()
    (tea,) = q(layout.memory_db, "SELECT id FROM learnings WHERE content LIKE '%tea%'")[0]
    # The in-process worker never runs a pass while the forget waits for it to pause: its
    # heartbeat says stopped, or the forget waits the heartbeat out (60 s; a CI timeout).
    worker.status.update(state="stopped", force=True)
    wsd(env, "forget", f"L{tea}", "--yes")
    _turn(layout, worker, 2, "Actually, use two spaces for YAML.")
    worker.status.update(state="stopped", force=True)
    live = _memory(layout)
    assert any("bullet points" in row[1] for row in live[0])

    report = rebuild(make_config(layout, standin), progress=lambda _line: None)
    assert report.batches == 3 and report.parked == 0
    rebuilt = _memory(layout)
    assert rebuilt == live
    assert "tea" not in user.read_text() and "says the person" in user.read_text()
    sources = [r.source for r in Store(layout).revisions.md_history("user.md")]
    assert sources == ["curator", "hand", "curator", "restore", "curator"]


def test_a_hand_edit_replayed_onto_a_different_curation_keeps_only_its_change(
    layout: Layout, standin: BridgeStandin
) -> None:
    """When the rebuilt batches write other lines than the live ones did (another curator,
    another prompt), a person's edit is replayed as the change it made (its added line), not
    as a copy of the whole file that would overwrite the rebuilt lines."""
    worker = make_worker(layout, standin, batch_turns=1)
    _turn(layout, worker, 0, "I prefer answers in bullet points.")
    user = Path(layout.md("user.md"))
    user.write_text(user.read_text() + "- My daughter is called Mia\n")
    _turn(layout, worker, 1, "Remind me to call the school.")
    worker.status.update(state="stopped", force=True)
    # The rebuild's curator words its lines differently.
    original = standin.responder

    def reworded(body: dict[str, Any]) -> Any:
        reply = original(body)
        text = reply.content[0]["text"].replace("- Prefers ", "- Likes ")
        return type(reply).text(text)

    standin.responder = reworded
    rebuild(make_config(layout, standin), progress=lambda _line: None)
    assert user.read_text() == (
        "# User\n- Likes answers in bullet points\n- My daughter is called Mia\n"
    )


def test_a_rebuild_reuses_vectors_and_leaves_the_rest_to_the_daemon(
    layout: Layout, standin: BridgeStandin
) -> None:
    """The rebuild embeds nothing itself: the vectors of learnings and turns it made again
    are taken from the live memory; a learning it made anew gets its vector from the
    daemon's embedding step after the swap (found by an attack: 134.5 s of a 142 s rebuild
    was embedding, with curation paused all along)."""
    reason = semantic.missing()
    if reason is not None:  # vectors need the [semantic] extra
        pytest.skip(reason)
    worker = make_worker(layout, standin, batch_turns=1)
    _turn(layout, worker, 0, "I prefer answers in bullet points.")
    _turn(layout, worker, 1, "Remind me to call the school. I prefer short answers.")
    worker.status.update(state="stopped", force=True)
    Embedder(Store(layout), get_logger()).run_to_end(lambda _line: None)
    vectors = "SELECT (SELECT count(*) FROM learning_vectors), (SELECT count(*) FROM turn_vectors)"
    live = q(layout.memory_db, vectors)[0]
    learned = q(layout.memory_db, "SELECT count(*) FROM learnings")[0][0]
    assert live == (learned, 2) and learned >= 2
    original = standin.responder

    def one_more(body: dict[str, Any]) -> Any:
        text = original(body).content[0]["text"]
        return type(original(body)).text(text + "\nFACT: The school is on Elm Street")

    standin.responder = one_more
    rebuild(make_config(layout, standin, semantic=True), progress=lambda _line: None)
    assert q(layout.memory_db, "SELECT count(*) FROM learnings")[0][0] == learned + 1
    assert q(layout.memory_db, vectors)[0] == live  # reused; nothing embedded by the rebuild
    Embedder(Store(layout), get_logger()).run_to_end(lambda _line: None)  # the daemon, after
    assert q(layout.memory_db, vectors)[0] == (learned + 1, 2)
