"""The Message Batches wire judged line by line: a hostile results file or batch id never
reaches the ledger as something it is not."""

from __future__ import annotations

import json
import threading
import time
import tracemalloc
from typing import Any

import pytest

from tests.conftest import make_config
from wsd.daemon.curation.bridge.answer import BadReply, Sent
from wsd.daemon.curation.bridge.client import BridgeClient
from wsd.daemon.curation.economy.wire import Lines, MessageBatchesClient, line_limit, parse_results
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.standin.steps import Reply
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
    out = parse_results(
        body.split("\n"),
        {"a": Sent(100), "b": Sent(100), "c": Sent(100), "d": Sent(100), "e": Sent(100)},
        4096,
    )
    assert sorted(out.by_id) == ["a", "d", "e"]
    assert out.by_id["a"].reply is not None and out.by_id["a"].reply.text == "FACT: x"
    assert out.by_id["d"].reply is None and out.by_id["e"].kind == "expired"
    assert len(out.problems) == 4


def test_a_results_lines_usage_is_checked_like_a_direct_answer() -> None:
    """Negative or impossible usage in a batch result is replaced by an estimate (valid
    False), never booked as it says."""
    lying = _line("a", {"type": "succeeded", "message": _message(output_tokens=-2_000_000)})
    huge = _line("b", {"type": "succeeded", "message": _message(input_tokens=10**9)})
    out = parse_results([lying, huge], {"a": Sent(400), "b": Sent(400)}, 4096)
    for result in out.by_id.values():
        assert result.usage is not None and not result.usage.valid
        assert 0 <= result.usage.output_tokens <= 4096 and result.usage.input_tokens <= 400


def test_a_succeeded_line_without_text_is_not_a_reply() -> None:
    """A 'succeeded' result whose message has no text or no content list gives no reply."""
    empty = _line("a", {"type": "succeeded", "message": _message("  ")})
    nolist = _line("b", {"type": "succeeded", "message": {"content": "text"}})
    out = parse_results([empty, nolist], {"a": Sent(10), "b": Sent(10)}, 4096)
    assert all(r.reply is None for r in out.by_id.values())


def test_a_hostile_batch_id_never_becomes_a_path(layout: Layout, standin: BridgeStandin) -> None:
    """A batch id with anything but word characters is refused before any request is made."""
    client = MessageBatchesClient(BridgeClient(make_config(layout, standin), threading.Event()))
    for bad in ("../../v1/messages", "msgbatch_1/../x", "a b", ""):
        with pytest.raises(BadReply):
            client.retrieve(bad)
    assert standin.requests == []


def _stream(lines: list[str], chunk: int) -> list[bytes]:
    body = "\n".join(lines).encode()
    return [body[i : i + chunk] for i in range(0, len(body), chunk)]


@pytest.mark.parametrize("chunk", [1, 7, 64, 10**6])
def test_a_streamed_results_file_splits_into_its_lines_however_it_arrives(chunk: int) -> None:
    """Lines cut across chunks are joined, a line over the limit is passed over as None
    (the lines after it still read), and a last line without a newline still counts."""
    lines = ['{"a": 1}', "x" * 50, '{"b": "\u00e9\u2028"}', "", '{"c": 3}']
    got = list(Lines(_stream(lines, chunk), limit=40))
    assert got == ['{"a": 1}', None, '{"b": "\u00e9\u2028"}', "", '{"c": 3}']


def test_reading_a_flooded_results_file_holds_one_line_at_a_time() -> None:
    """A 20 MB results file of 40 oversized answers (what the soak's flooding Bridge served)
    is read holding about one line: tracemalloc's peak stays under 2 MB, and each answer
    becomes a billed 'unreadable' result, none a reply."""
    flood = "FACT: flood learning\n" * 24_000  # 504,000 characters: beyond 4,096 tokens
    text = [_line(f"r{i}", {"type": "succeeded", "message": _message(flood)}) for i in range(40)]
    chunks = iter(_stream(text, 65_536))  # made before tracing: the server's side, not ours
    expected = {f"r{i}": Sent(4000) for i in range(40)}
    tracemalloc.start()
    try:
        out = parse_results(Lines(chunks, line_limit(4096)), expected, 4096)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * 1024 * 1024, peak
    assert out.by_id == {}
    assert out.problems == [
        f"line {n}: longer than an answer can be, not read" for n in range(1, 41)
    ]


def test_an_answer_longer_than_max_tokens_can_carry_is_unreadable_not_a_reply() -> None:
    """A results line within the line limit whose text is more than max_tokens tokens can
    hold is billed (usage kept) as 'unreadable', never handed to the guards as a reply."""
    long = "FACT: x\n" * 9_000  # 72,000 characters > 4,096 x 16
    out = parse_results(
        [_line("a", {"type": "succeeded", "message": _message(long)})], {"a": Sent(10)}, 4096
    )
    result = out.by_id["a"]
    assert result.kind == "unreadable" and result.reply is None and result.usage is not None
    assert "more than 4096 tokens can hold" in (result.error or "")
    short = parse_results(
        [_line("b", {"type": "succeeded", "message": _message("FACT: y\n" * 8_000)})],
        {"b": Sent(10)},
        4096,
    )
    assert short.by_id["b"].reply is not None  # 64,000 characters: within the bound


def test_results_are_streamed_from_the_standin_and_a_flooded_answer_is_unreadable(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Through the real client and stand-in: a Message Batch whose one answer is a flood is
    read as it streams; the flood is 'unreadable', the other answer a reply."""
    flood = "FACT: flood\n" * 10_000  # 120,000 characters: a readable line, too long a reply

    def responder(body: Any) -> Reply:
        text = "".join(b.get("text", "") for b in body["messages"][0]["content"])
        return Reply.text(flood if "flood me" in text else "FACT: plain")

    standin.responder = responder
    config = make_config(layout, standin)
    client = MessageBatchesClient(BridgeClient(config, threading.Event()))
    params = {"model": config.model, "max_tokens": config.max_tokens}
    remote = client.create(
        [
            {
                "custom_id": c,
                "params": params
                | {"messages": [{"role": "user", "content": [{"type": "text", "text": t}]}]},
            }
            for c, t in (("a", "hello"), ("b", "flood me"))
        ]
    )
    deadline = time.monotonic() + 10
    while client.retrieve(remote).status != "ended":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    out = client.results(remote, {"a": Sent(100), "b": Sent(100)})
    assert out.by_id["a"].reply is not None and out.by_id["a"].reply.text == "FACT: plain"
    assert out.by_id["b"].kind == "unreadable" and out.problems == []
