"""What each lane shows the curator of a turn (issue 36): the economy lane (a Message Batch at
half price) shows what the tools returned, the prompt lane keeps its budget; grounding,
retries and rebuilds render as the lane did."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.conftest import drain, flush, make_worker
from tests.conftest import query as q
from tests.test_economy import economy, pending, run_until
from wsd.daemon.curation.rebuild.replay import plan_groups
from wsd.daemon.curation.request.batch import plan
from wsd.daemon.curation.request.rendering import (
    ECONOMY_RENDERING,
    PROMPT_RENDERING,
    render_turn,
    rendering_for,
)
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.standin.steps import Reply
from wsd.daemon.store import Store, Turn
from wsd.schema.layout import Layout

FILLER = "The file lists every service the team runs, one per line, with its owner. " * 3
CONFIG = FILLER + "Staging database host: zeta-cluster-9, port 6432, owner Priya."


def _read_turn(layout: Layout, n: int = 1) -> None:
    """``n`` turns whose only fact is in what a Read returned (past 70 characters)."""
    from wsd.hooks.capture import Capture, CaptureConfig

    cap = Capture(CaptureConfig(workspace=layout.root))
    for i in range(n):
        cap.handle(
            {"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": f"Check {i}"}
        )
        cap.handle(
            {
                "hook_event_name": "PostToolUse",
                "session_id": "s",
                "tool_name": "Read",
                "tool_input": {"file_path": "/workspace/config/services.txt"},
                "tool_response": CONFIG,
            }
        )
        cap.handle(
            {"hook_event_name": "Stop", "session_id": "s", "last_assistant_message": "Checked."}
        )
    cap.close()


def _fact_reply(body: dict[str, Any]) -> Reply:
    """The curator learns the host from turn 1 (as a model that read the excerpt would)."""
    return Reply.text("FACT: the staging database host is zeta-cluster-9 [turn 1]")


def _learned(layout: Layout) -> list[str]:
    return [str(c) for (c,) in q(layout.memory_db, "SELECT content FROM learnings")]


def _sent(standin: BridgeStandin) -> str:
    return "\n".join(r.body.decode() for r in standin.requests if r.method == "POST")


def test_the_economy_lane_shows_what_a_look_only_tool_returned_and_the_prompt_lane_does_not() -> (
    None
):
    """A Read's result past the prompt lane's 70 characters (and a Read's result at all) is
    in the economy lane's rendering; a Write's result (an echo of its input) is in neither."""
    calls = [
        {"name": "Read", "input": {"file_path": "config/services.txt"}, "output": CONFIG},
        {"name": "Write", "input": {"file_path": "a.txt", "content": "x"}, "output": "wrote a"},
    ]
    turn = Turn(1, "s", 1, 1.7e9, "check the config", calls, "Checked.", "stop")
    assert "zeta-cluster-9" not in render_turn(turn)
    assert "zeta-cluster-9" in render_turn(turn, shown=ECONOMY_RENDERING)
    assert "wrote a" not in render_turn(turn, shown=ECONOMY_RENDERING)
    assert rendering_for("economy") is ECONOMY_RENDERING
    assert rendering_for("prompt") is rendering_for("urgent") is PROMPT_RENDERING


def test_a_fact_only_a_tool_returned_is_learned_on_the_economy_lane_and_grounded_there(
    layout: Layout,
) -> None:
    """Through the worker: the Message Batch's request carries the Read's result, and the
    reply's fact from it is learned and said to come from a tool result: grounding judged it
    against the economy lane's rendering (an economy result is excerpted anew when it is
    applied; judged against the prompt lane's, no part held the host)."""
    with BridgeStandin(responder=_fact_reply) as standin:
        worker = economy(layout, standin, batch_turns=1)
        _read_turn(layout)
        run_until(worker, lambda: pending(layout) == 0)
        assert "zeta-cluster-9" in _sent(standin)
    assert q(layout.memory_db, "SELECT lane FROM batches") == [("economy",)]
    [learned] = [c for c in _learned(layout) if "zeta-cluster-9" in c]
    assert "from a tool result in T1" in learned, learned


def test_the_prompt_lane_keeps_its_budget_and_does_not_show_it(layout: Layout) -> None:
    """Same turn, prompt lane (a flush): the direct call's request lacks the host (the prompt
    lane's cost stays what it was)."""
    with BridgeStandin(responder=_fact_reply) as standin:
        worker = make_worker(layout, standin, batch_turns=1)
        _read_turn(layout)
        flush(layout)
        drain(worker)
        assert "zeta-cluster-9" not in _sent(standin)
    assert q(layout.memory_db, "SELECT lane FROM batches") == [("prompt",)]


def _at(day: str, hour: int) -> float:
    return datetime.fromisoformat(f"{day}T{hour:02}:00:00+00:00").astimezone(UTC).timestamp()


def test_a_request_names_its_date_once_and_again_when_it_changes() -> None:
    """The first turn of each request is headed with its date and time, a turn on the same
    UTC day as the one before it with the time alone (11 characters a turn), a new day
    with its date again; a turn that starts a new batch, or the second half of a batch split
    on a rejection, names its date again."""
    turns = [
        Turn(i + 1, "s", i, ts, "hello " * 20, [], "ok", "stop")
        for i, ts in enumerate(
            [
                _at("2026-11-27", 9),
                _at("2026-11-27", 10),
                _at("2026-11-28", 8),
                _at("2026-11-28", 9),
            ]
        )
    ]
    [batch] = plan(turns, 100_000)
    heads = [text.splitlines()[0] for text in batch.rendered]
    assert heads == [
        "[turn 1 2026-11-27 09:00]",
        "[turn 2 10:00]",
        "[turn 3 2026-11-28 08:00]",
        "[turn 4 09:00]",
    ]
    first, second = batch.halves()  # split on a rejection: each its own request
    assert second.rendered[0].splitlines()[0] == "[turn 3 2026-11-28 08:00]"
    assert first.rendered == batch.rendered[:2] and second.rendered[1:] == batch.rendered[3:]
    _, fourth = plan(turns, 100_000)[0].halves()[1].halves()
    assert fourth.rendered[0].splitlines()[0] == "[turn 4 2026-11-28 09:00]"
    assert fourth.rendered[0].splitlines()[1:] == batch.rendered[3].splitlines()[1:]
    one_each = plan(turns[:2], len(batch.rendered[0]) + 5)
    assert [b.rendered[0].splitlines()[0] for b in one_each] == [
        "[turn 1 2026-11-27 09:00]",
        "[turn 2 2026-11-27 10:00]",
    ]


def test_a_rebuild_groups_each_batch_with_its_lane(layout: Layout) -> None:
    """The ledger gives each live batch's lane to the rebuild's groups, which render with
    that lane's rendering (rebuild.py): an economy batch is replayed as the economy lane
    showed it."""
    with BridgeStandin(responder=_fact_reply) as standin:
        worker = economy(layout, standin, batch_turns=1)
        _read_turn(layout)
        run_until(worker, lambda: pending(layout) == 0)
    store = Store(layout)
    [group] = plan_groups(store, store.transcript_identity(), [1], 5)
    assert group.lane == "economy" and rendering_for(group.lane) is ECONOMY_RENDERING
