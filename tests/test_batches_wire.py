"""The Message Batches wire judged line by line: a hostile results file or batch id never
reaches the ledger as something it is not."""

from __future__ import annotations

import json
import threading

import pytest

from tests.conftest import make_config
from wsd.daemon.curation.batches import BatchesClient, parse_results
from wsd.daemon.curation.bridge import BadReply, BridgeClient
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.schema.layout import Layout


def _line(custom_id: object, result: object) -> str:
    return json.dumps({"custom_id": custom_id, "result": result})


def _message(text: str = "FACT: x", **usage: object) -> dict[str, object]:
    return {
        "id": "msg_1",
        "type": "message",
        "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 100, "output_tokens": 10} | usage,
    }


def test_each_results_line_is_judged_on_its_own() -> None:
    """Garbled, unknown, repeated and undocumented lines are skipped and reported; the good
    lines around them still count."""
    body = "\n".join(
        [
            _line("a", {"type": "succeeded", "message": _message()}),
            '{"custom_id": "b", "result": {"type": "succ',
            _line("zzz", {"type": "succeeded", "message": _message()}),
            _line("a", {"type": "succeeded", "message": _message("FACT: other")}),
            _line("c", {"type": "exploded"}),
            _line("d", {"type": "errored", "error": {"type": "error", "error": {"type": "x"}}}),
            _line("e", {"type": "expired"}),
        ]
    )
    out = parse_results(body, {"a": 100, "b": 100, "c": 100, "d": 100, "e": 100}, 4096)
    assert sorted(out.by_id) == ["a", "d", "e"]
    assert out.by_id["a"].reply is not None and out.by_id["a"].reply.text == "FACT: x"
    assert out.by_id["d"].reply is None and out.by_id["e"].kind == "expired"
    assert len(out.problems) == 4


def test_a_results_lines_usage_is_checked_like_a_direct_answer() -> None:
    """Negative or impossible usage in a batch result is replaced by an estimate (valid
    False), never booked as it says."""
    lying = _line("a", {"type": "succeeded", "message": _message(output_tokens=-2_000_000)})
    huge = _line("b", {"type": "succeeded", "message": _message(input_tokens=10**9)})
    out = parse_results(lying + "\n" + huge, {"a": 400, "b": 400}, 4096)
    for result in out.by_id.values():
        assert result.usage is not None and not result.usage.valid
        assert 0 <= result.usage.output_tokens <= 4096 and result.usage.input_tokens <= 400


def test_a_succeeded_line_without_text_is_not_a_reply() -> None:
    """A 'succeeded' result whose message has no text or no content list gives no reply."""
    empty = _line("a", {"type": "succeeded", "message": _message("  ")})
    nolist = _line("b", {"type": "succeeded", "message": {"content": "text"}})
    out = parse_results(empty + "\n" + nolist, {"a": 10, "b": 10}, 4096)
    assert all(r.reply is None for r in out.by_id.values())


def test_a_hostile_batch_id_never_becomes_a_path(layout: Layout, standin: BridgeStandin) -> None:
    """A batch id with anything but word characters is refused before any request is made."""
    client = BatchesClient(BridgeClient(make_config(layout, standin), threading.Event()))
    for bad in ("../../v1/messages", "msgbatch_1/../x", "a b", ""):
        with pytest.raises(BadReply):
            client.retrieve(bad)
    assert standin.requests == []
