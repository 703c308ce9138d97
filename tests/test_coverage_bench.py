"""The bench of what reaches the curator (bench/coverage_bench.py) measures what it says."""

from __future__ import annotations

import os

import pytest

from bench import coverage_bench as cb
from bench.locomo import DATA


def _turn(answer: str, calls: list[dict[str, object]] | None = None) -> list[dict[str, object]]:
    events = [cb._event("s", "UserPromptSubmit", prompt="Please check the statement")]
    for n, call in enumerate(calls or []):
        events.append(cb._event("s", "PostToolUse", tool_use_id=f"t{n}", **call))
    return [*events, cb._event("s", "Stop", last_assistant_message=answer)]


def test_a_fact_the_renderer_drops_lowers_the_ratio_and_one_it_keeps_does_not() -> None:
    """Through the real capture path and render_turn: a fact in the middle of a long answer
    is shown (its excerpt), one only in a Read result is not (look-only output); the ratio is
    the mean rendered coverage over the mean whole coverage."""
    filler = "I looked at it carefully and everything else seems in order to me. " * 10
    answer = filler + "\nThe closing balance on 2026-02-28 is 23,417.56 EUR.\n" + filler
    read = {
        "tool_name": "Read",
        "tool_input": {"file_path": "/w/notes.txt"},
        "tool_response": {"type": "text", "file": {"content": "Rambaud phone 0472103358"}},
    }
    turn_set = cb.TurnSet(
        "t",
        [_turn(answer), _turn("ok", [read])],
        [
            cb.Fact("The closing balance on 2026-02-28 is 23,417.56 EUR.", [0], "answer"),
            cb.Fact("Rambaud phone 0472103358", [1], "tool"),
        ],
    )
    cov = cb.measure(turn_set)
    assert cov.whole == pytest.approx(1.0) and cov.facts == 2 and cov.turns == 2
    assert cov.by_kind["answer"][0] == pytest.approx(1.0)
    assert cov.by_kind["tool"][0] < 0.5
    assert cov.ratio == pytest.approx(cov.rendered / cov.whole) and cov.ratio < 0.8
    assert cov.rendered_tokens < cov.whole_tokens


@pytest.mark.skipif(not os.path.exists(DATA), reason="LoCoMo data not present")
def test_every_locomo_utterance_is_captured_and_every_fact_placed() -> None:
    """Each development conversation: one turn per person block (a session opening with the
    agent gets a dated prompt), every fact tied to a turn that holds its evidence."""
    for turn_set in cb.locomo_sets():
        turns = cb.stored_turns(turn_set)
        assert len(turns) == len(turn_set.turns) > 150
        assert len(turn_set.facts) > 150
        assert all(f.turns and max(f.turns) < len(turns) for f in turn_set.facts)


def test_a_fact_in_the_middle_of_a_long_prompt_reaches_the_curator_on_both_lanes() -> None:
    """The long-prompt rows (issue 45): each prompt is ~1,900 characters with its fact in the
    middle, captured whole, and both lanes show the curator every word of each fact."""
    long = cb.long_prompt_set(cb.agent_set())
    assert len(long.turns) == len(cb.LONG_PROMPT_FACTS)
    for events, fact in zip(long.turns, long.facts, strict=True):
        prompt = str(events[0]["prompt"])
        assert 1800 <= len(prompt) <= 2000 and fact.text in prompt
        at = prompt.index(fact.text) / len(prompt)
        assert 0.35 < at < 0.65, at
    for _lane, shown in cb.LANES:
        cov = cb.measure(long, shown=shown)
        assert cov.whole == pytest.approx(1.0) and cov.ratio == pytest.approx(1.0)
