"""The economy lane through the worker and the stand-in's Message Batches: submitted, polled,
applied once in claim order, every outcome handled, the prompt lane kept for compaction."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import apsw
import pytest
from structlog.testing import capture_logs

from tests.conftest import drain, make_worker, write_turns
from tests.conftest import query as q
from wsd.daemon.curation.bridge.answer import Sent
from wsd.daemon.curation.economy.wire import parse_results
from wsd.daemon.curation.loop.worker import Worker
from wsd.daemon.ops.deploy import init_workspace
from wsd.daemon.runtime.config import DEFAULT_PRICE_INPUT, DEFAULT_PRICE_OUTPUT
from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.standin.steps import BatchFault, Reply
from wsd.daemon.store import Store
from wsd.schema.layout import Layout
from wsd.schema.transcript import Event

BATCHES = "/v1/messages/batches"
MESSAGES = "/v1/messages"


def economy(layout: Layout, standin: BridgeStandin, **overrides: Any) -> Worker:
    """A worker on the economy lane, polling every 0.05-0.2 s."""
    config: dict[str, Any] = {
        "curation": "economy",
        "economy_poll_seconds": 0.05,
        "economy_poll_max_seconds": 0.2,
        "batch_turns": 3,
    }
    return make_worker(layout, standin, **(config | overrides))


def creates(standin: BridgeStandin) -> int:
    return sum(1 for r in standin.requests if r.method == "POST" and r.path == BATCHES)


def calls(standin: BridgeStandin) -> int:
    return sum(1 for r in standin.requests if r.method == "POST" and r.path == MESSAGES)


def run_until(worker: Worker, done: Any, timeout: float = 30.0) -> list[str]:
    """run_once (real time) until ``done()``; every action taken."""
    actions: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        actions += drain(worker)
        if done():
            return actions
        time.sleep(0.05)
    raise AssertionError(f"not done after {timeout} s: {actions[-12:]}")


def pending(layout: Layout) -> int:
    return int(
        q(layout.transcript_db, "SELECT count(*) FROM observations WHERE processed = 0")[0][0]
    )


def ledger(layout: Layout) -> list[tuple[Any, ...]]:
    return q(
        layout.memory_db,
        "SELECT lane, message_batch_id, custom_id, first_observation_id, last_observation_id,"
        " status FROM batches ORDER BY id",
    )


def covered_once(layout: Layout) -> None:
    rows = q(layout.memory_db, "SELECT observation_id, count(*) FROM batch_turns GROUP BY 1")
    assert rows and all(n == 1 for _oid, n in rows)


def test_a_full_batch_goes_as_a_message_batch_and_is_applied_at_half_price(
    layout: Layout, standin: BridgeStandin
) -> None:
    """The default lane sends a full batch as one Message Batch (no Messages call), applies
    its result once, and the ledger names the Message Batch, its custom_id and half the price."""
    worker = economy(layout, standin)
    write_turns(layout, 3)
    run_until(worker, lambda: pending(layout) == 0)
    assert creates(standin) == 1 and calls(standin) == 0
    [(lane, message_batch_id, custom_id, first, last, status)] = ledger(layout)
    assert (lane, first, last, status) == ("economy", 1, 3, "done")
    assert message_batch_id and message_batch_id.startswith("msgbatch_") and custom_id == "t1-3-0"
    [billed] = standin.batches.billed
    assert billed.batch_id == message_batch_id and billed.custom_id == custom_id
    tin, tout = billed.usage["input_tokens"], billed.usage["output_tokens"]
    half = (tin * DEFAULT_PRICE_INPUT + tout * DEFAULT_PRICE_OUTPUT) / 1e6 / 2
    [(cost, tokens_in, tokens_out)] = q(
        layout.memory_db, "SELECT cost_usd, input_tokens, output_tokens FROM batches"
    )
    assert (tokens_in, tokens_out) == (tin, tout) and abs(cost - half) < 1e-12
    charges = q(layout.transcript_db, "SELECT status, usd, purpose FROM charges")
    assert charges == [("billed", cost, "curate-batch")]
    covered_once(layout)
    assert q(layout.transcript_db, "SELECT status FROM message_batches") == [("settled",)]


def test_one_message_batch_in_flight_at_a_time(layout: Layout, standin: BridgeStandin) -> None:
    """While a batch is out, new turns wait for it (the next request sees its result), then
    go in the next Message Batch."""
    standin.batches.delay = 3600
    worker = economy(layout, standin)
    write_turns(layout, 3)
    drain(worker)
    assert creates(standin) == 1
    write_turns(layout, 3, start=3)
    assert "awaiting" in drain(worker)
    assert creates(standin) == 1
    standin.batches.end_all()
    standin.batches.delay = 0
    run_until(worker, lambda: pending(layout) == 0)
    assert creates(standin) == 2
    rows = ledger(layout)
    assert [(r[0], r[3], r[4]) for r in rows] == [("economy", 1, 3), ("economy", 4, 6)]
    second = [r for r in standin.requests if r.method == "POST" and r.path == BATCHES][1]
    assert second.json is not None
    memory_text = second.json["requests"][0]["params"]["messages"][0]["content"][0]["text"]
    assert "tabs" in memory_text  # the second request saw the first one's result applied


def test_a_backlog_goes_in_one_message_batch_applied_in_claim_order(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Twelve turns waiting (four batches) go as four requests of one Message Batch, built from
    one memory snapshot, and are committed in claim order."""
    write_turns(layout, 12)
    worker = economy(layout, standin)
    run_until(worker, lambda: pending(layout) == 0)
    assert creates(standin) == 1 and calls(standin) == 0
    body = next(r.json for r in standin.requests if r.path == BATCHES and r.method == "POST")
    assert body is not None and len(body["requests"]) == 4
    memories = {r["params"]["messages"][0]["content"][0]["text"] for r in body["requests"]}
    assert len(memories) == 1  # one snapshot
    rows = ledger(layout)
    assert [(r[3], r[4]) for r in rows] == [(1, 3), (4, 6), (7, 9), (10, 12)]
    assert len({r[1] for r in rows}) == 1
    covered_once(layout)


def test_wsd_flush_takes_the_prompt_lane_and_the_late_result_is_not_applied_twice(
    layout: Layout, standin: BridgeStandin
) -> None:
    """An urgent flush (``wsd flush``, PreCompact) curates now by a direct call, the turns an
    economy request holds included; that request's result, when it lands, is discarded (and
    the log says how many turns it held)."""
    standin.batches.delay = 3600
    worker = economy(layout, standin)
    write_turns(layout, 3)
    drain(worker)
    assert creates(standin) == 1
    Store(layout).flushes.request_flush("cli", time.time())
    run_until(worker, lambda: pending(layout) == 0)
    assert calls(standin) == 1
    assert [r[0] for r in ledger(layout)] == ["prompt"]
    standin.batches.end_all()
    standin.batches.delay = 0
    with capture_logs() as logs:
        run_until(
            worker,
            lambda: q(layout.transcript_db, "SELECT status FROM message_batches") == [("settled",)],
        )
    assert [r[0] for r in ledger(layout)] == ["prompt"]
    covered_once(layout)
    # how many turns in all beside the first ten ids (a cut list read as the whole batch)
    (discarded,) = [e["reason"] for e in logs if e["event"] == "batch_discarded"]
    assert discarded.startswith("3 turns already curated: [")
    [(outcome,)] = q(layout.transcript_db, "SELECT outcome FROM message_batch_requests")
    assert outcome == "covered"


def test_turns_closed_after_an_urgent_flush_go_to_the_economy_lane(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A ``wsd flush`` takes the prompt lane for the turns pending when it was asked for;
    turns closed after it (other sessions writing on) go as a Message Batch, though the flush
    stays open until the backlog is empty (found by the soak: under steady writing one flush
    sent every later turn through the prompt lane, at twice the price)."""
    worker = economy(layout, standin)
    write_turns(layout, 3)
    Store(layout).flushes.request_flush("cli", time.time())
    time.sleep(0.01)
    write_turns(layout, 3, start=3, session="s2")
    run_until(worker, lambda: pending(layout) == 0)
    assert (calls(standin), creates(standin)) == (1, 1)
    assert [(r[0], r[3], r[4]) for r in ledger(layout)] == [("prompt", 1, 3), ("economy", 4, 6)]
    covered_once(layout)


def test_a_precompact_flush_uses_the_prompt_lane(layout: Layout, standin: BridgeStandin) -> None:
    """PreCompact's flush is curated by a direct call at once; a SessionEnd flush by the
    economy lane."""
    worker = economy(layout, standin, batch_turns=25)
    write_turns(layout, 2)
    conn = Store(layout)
    conn.flushes.request_flush("session_end", time.time())
    run_until(worker, lambda: pending(layout) == 0)
    assert (creates(standin), calls(standin)) == (1, 0)
    write_turns(layout, 2, start=2)
    conn.flushes.request_flush("precompact", time.time())
    run_until(worker, lambda: pending(layout) == 0)
    assert (creates(standin), calls(standin)) == (1, 1)
    assert [r[0] for r in ledger(layout)] == ["economy", "prompt"]


def test_failed_requests_go_to_the_prompt_lane(layout: Layout, standin: BridgeStandin) -> None:
    """Expired, errored and canceled requests are curated through the prompt lane, once."""
    for fault in (BatchFault.expired(), BatchFault.errored()):
        standin.batches.script(fault)
    worker = economy(layout, standin)
    write_turns(layout, 3)
    run_until(worker, lambda: pending(layout) == 0)
    write_turns(layout, 3, start=3)
    run_until(worker, lambda: pending(layout) == 0)
    assert creates(standin) == 2
    assert [r[0] for r in ledger(layout)] == ["prompt", "prompt"]
    covered_once(layout)
    charges = q(layout.transcript_db, "SELECT status, purpose FROM charges ORDER BY id")
    assert [c for c in charges if c[1] == "curate-batch"] == [
        ("void", "curate-batch"),
        ("void", "curate-batch"),
    ]


def test_damaged_results_are_read_again_then_released(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Truncated results, a garbled line and a missing line are fetched again; what never
    comes goes to the prompt lane; nothing is applied twice or lost."""
    write_turns(layout, 9)
    for fault in (BatchFault.truncated(), BatchFault.malformed_line(), BatchFault.missing()):
        standin.batches.script(fault)
        worker = economy(layout, standin)
        run_until(worker, lambda: pending(layout) == 0 or creates(standin) > 3, timeout=30)
    run_until(economy(layout, standin), lambda: pending(layout) == 0)
    covered_once(layout)
    assert pending(layout) == 0
    lanes = [r[0] for r in ledger(layout)]
    assert "economy" in lanes and "prompt" in lanes


@pytest.mark.parametrize("fault", ["missing", "malformed_line", "truncated"])
def test_a_result_never_read_keeps_its_estimate(
    layout: Layout, standin: BridgeStandin, fault: str
) -> None:
    """A request whose line stays missing or garbled through every read may well have been
    billed (the API bills work done, not work delivered: the stand-in did): its charge keeps
    the estimate made at submission, never void; its turns go to the prompt lane."""
    standin.batches.script(getattr(BatchFault, fault)())
    worker = economy(layout, standin)
    write_turns(layout, 3)
    run_until(worker, lambda: pending(layout) == 0)
    assert len(standin.batches.billed) == 1
    [(status, usd)] = q(
        layout.transcript_db, "SELECT status, usd FROM charges WHERE purpose = 'curate-batch'"
    )
    assert status == "estimated" and usd > 0
    assert [r[0] for r in ledger(layout)] == ["prompt"]
    covered_once(layout)


def test_a_succeeded_result_without_a_readable_message_is_billed_not_errored() -> None:
    """'succeeded' with a message that has no content list was billed by the API: read as
    unreadable (priced as a full answer), never as errored (not billed)."""
    line = {"custom_id": "t1-3-0", "result": {"type": "succeeded", "message": {"id": "m"}}}
    results = parse_results([json.dumps(line)], {"t1-3-0": Sent(100)}, 4096)
    assert results.by_id["t1-3-0"].kind == "unreadable"


def test_results_are_read_from_the_bridge_not_from_a_foreign_results_url(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A results_url on another origin is logged and never followed: the results come from
    the Bridge's own path."""
    standin.batches.script(BatchFault.foreign_results_url())
    worker = economy(layout, standin)
    write_turns(layout, 3)
    with capture_logs() as logs:
        run_until(worker, lambda: pending(layout) == 0)
    assert any(e["event"] == "economy_results_url_ignored" for e in logs)
    assert any(r.path.endswith("/results") for r in standin.requests)
    assert [r[0] for r in ledger(layout)] == ["economy"]


def test_a_batch_the_bridge_forgot_is_released_after_three_misses(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A Message Batch the Bridge answers 404 for, three polls in a row, goes to the prompt
    lane."""
    standin.batches.script(BatchFault.lost())
    worker = economy(layout, standin)
    write_turns(layout, 3)
    with capture_logs() as logs:
        run_until(worker, lambda: pending(layout) == 0)
    assert any(e["event"] == "economy_batch_released" for e in logs)
    assert [r[0] for r in ledger(layout)] == ["prompt"]


def test_a_hanging_poll_is_cut_by_the_timeout_and_polled_again(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A retrieve that hangs costs one request timeout; the next poll gets the result."""
    standin.batches.script(BatchFault.hang(30, on="retrieve"))
    worker = economy(layout, standin, request_timeout=1.0)
    write_turns(layout, 3)
    run_until(worker, lambda: pending(layout) == 0)
    assert [r[0] for r in ledger(layout)] == ["economy"]


def test_a_bridge_without_batches_is_remembered_and_probed_daily(
    layout: Layout, standin: BridgeStandin
) -> None:
    """404, 405, 501 or an HTML page from the batches endpoint: the prompt lane at once, one
    log line, the lane off until a day has passed, then probed again."""
    for status in (404, 405, 501, 200):
        os.makedirs(str(layout.root) + f"-{status}")
        sub = Layout(str(layout.root) + f"-{status}")
        init_workspace(sub, templates=None)
        standin.batches.script(BatchFault.unsupported(status))
        before = creates(standin)
        worker = economy(sub, standin)
        write_turns(sub, 3)
        with capture_logs() as logs:
            run_until(worker, lambda sub=sub: pending(sub) == 0)
        assert [r[0] for r in ledger(sub)] == ["prompt"], status
        assert [e["event"] for e in logs].count("economy_unavailable") == 1
        write_turns(sub, 3, start=3)
        run_until(worker, lambda sub=sub: pending(sub) == 0)
        assert creates(standin) == before + 1  # not probed again the same day
        off = json.loads(Store(sub).ledger.get_state("economy_off") or "{}")
        assert off["probe_at"] > time.time() + 86_000
        write_turns(sub, 3, start=6)
        later = time.time() + 86_401
        drain(worker, later)
        assert creates(standin) == before + 2  # the daily probe
        run_until(worker, lambda sub=sub: pending(sub) == 0)
        assert ledger(sub)[-1][0] == "economy"
        assert Store(sub).ledger.get_state("economy_off") is None


def test_a_restarted_worker_resumes_polling_the_batch_in_flight(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A worker gone while its Message Batch is out (kill -9, a thaw): the next one polls the
    same Message Batch, creates none, and applies the result once."""
    standin.batches.delay = 3600
    first = economy(layout, standin)
    write_turns(layout, 3)
    drain(first)
    assert creates(standin) == 1
    del first
    standin.batches.end_all()
    standin.batches.delay = 0
    second = economy(layout, standin)
    run_until(second, lambda: pending(layout) == 0)
    assert creates(standin) == 1
    assert [r[0] for r in ledger(layout)] == ["economy"]
    covered_once(layout)


def test_a_submission_cut_before_its_id_was_recorded_is_sent_again_once(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A crash between recording the batch and recording the Bridge's id: the next start
    forgets it and sends the turns again (one duplicate, its estimate kept), applies once."""
    worker = economy(layout, standin)
    write_turns(layout, 3)
    store = Store(layout)
    from wsd.daemon.store import BatchRequest

    ticket = store.charges.ask_charge(time.time(), 0.001, "curate-batch")
    store.message_batches.record(
        store.transcript_identity(),
        "{}",
        [BatchRequest("t1-3-0", 0, (1, 2, 3), (), (), 100, time.time(), ticket)],
        time.time(),
    )
    with capture_logs() as logs:
        run_until(worker, lambda: pending(layout) == 0)
    assert any(e["event"] == "economy_submission_lost" for e in logs)
    assert creates(standin) == 1
    assert [r[0] for r in ledger(layout)] == ["economy"]
    # The lost submission keeps its estimate (it may have been billed), settled as one.
    assert ("estimated", 0.001) in q(layout.transcript_db, "SELECT status, usd FROM charges")
    covered_once(layout)


def test_the_daily_cap_counts_what_is_in_flight(layout: Layout, standin: BridgeStandin) -> None:
    """A Message Batch out is booked at an estimate at once (the cap sees it), settled to the
    billed usage when its result comes."""
    standin.batches.delay = 3600
    worker = economy(layout, standin)
    write_turns(layout, 3)
    drain(worker)
    [(status, usd)] = q(layout.transcript_db, "SELECT status, usd FROM charges")
    assert status == "asked" and usd > 0
    assert Store(layout).charges.spent_since(0) == usd
    standin.batches.end_all()
    standin.batches.delay = 0
    run_until(worker, lambda: pending(layout) == 0)
    [(status, _usd)] = q(layout.transcript_db, "SELECT status, usd FROM charges")
    assert status == "billed"


def test_only_the_turns_handed_back_take_the_prompt_lane(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Turns the economy lane handed back go by direct call, and only they: the pending turns
    around them still go as a Message Batch (found by the soak: after memory.db was deleted,
    stale marks sent a whole re-pended backlog of 4,061 turns direct)."""
    write_turns(layout, 9)
    conn = apsw.Connection(layout.transcript_db)
    conn.execute(
        "INSERT INTO released_turns (observation_id, reason, at)"
        " VALUES (4, 'expired', 0), (5, 'expired', 0), (6, 'expired', 0)"
    )
    conn.close()
    run_until(economy(layout, standin), lambda: pending(layout) == 0)
    rows = ledger(layout)
    assert sorted((r[0], r[3], r[4]) for r in rows) == [
        ("economy", 1, 3),
        ("economy", 7, 9),
        ("prompt", 4, 6),
    ]
    covered_once(layout)


def test_a_message_batch_stays_within_its_size_cap(
    layout: Layout, standin: BridgeStandin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backlog larger than the size cap of one Message Batch goes in several, one after
    the other (the body is held several times over while it is sent: the daemon's RSS)."""
    from wsd.daemon.curation.economy import lane

    monkeypatch.setattr(lane, "MAX_SUBMISSION_CHARS", 1)
    write_turns(layout, 9)
    run_until(economy(layout, standin), lambda: pending(layout) == 0)
    bodies = [r.json for r in standin.requests if r.path == BATCHES and r.method == "POST"]
    assert [len(b["requests"]) for b in bodies if b] == [1, 1, 1]
    assert [(r[3], r[4]) for r in ledger(layout)] == [(1, 3), (4, 6), (7, 9)]
    covered_once(layout)


def test_a_submission_reads_and_claims_no_more_of_a_backlog_than_its_cap_holds(
    layout: Layout, standin: BridgeStandin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backlog many times the size cap: the Message Batch's turns are the only ones
    read and claimed, a page or two of them (a 2,500-turn backlog read and claimed whole held
    ~25 MB more at the daemon's peak), the oldest first, as one read would have cut them."""
    from wsd.daemon.curation.economy import lane
    from wsd.daemon.curation.request import take

    write_turns(layout, 120)
    sizes = q(layout.transcript_db, "SELECT length(user_message) FROM observations ORDER BY id")
    monkeypatch.setattr(lane, "MAX_SUBMISSION_CHARS", 3 * 3 * (sizes[0][0] + 60))
    monkeypatch.setattr(take, "PAGE_BATCHES", 2)  # several pages: the budget stops the reading
    worker = economy(layout, standin)
    assert worker.run_once().action == "submitted"
    body = next(r.json for r in standin.requests if r.path == BATCHES and r.method == "POST")
    claimed = [
        c[0] for c in q(layout.transcript_db, "SELECT id FROM observations WHERE claimed_at > 0")
    ]
    sent = [t for r in body["requests"] for t in range(*_turn_span(r["custom_id"]))]
    # The cap counts each request's memory too: a page's last batches may wait, claimed.
    assert claimed == list(range(1, len(claimed) + 1)) and sent == claimed[: len(sent)]
    assert sent and len(claimed) <= 2 * 2 * 3


def _turn_span(custom_id: str) -> tuple[int, int]:
    first, last, _position = custom_id[1:].split("-")
    return int(first), int(last) + 1


def test_a_turn_changed_between_its_read_and_its_claim_is_sent_as_it_is_now(
    layout: Layout, standin: BridgeStandin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A late tool call folds into a turn after the take read it and before the claim: the
    claim sees the change (compared a row at a time, not read twice over) and the Message
    Batch carries the turn with the call."""
    from wsd.daemon.curation.request import take

    write_turns(layout, 6)
    real = take._read

    def read_then_late_event(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        first = q(layout.transcript_db, "SELECT timestamp FROM observations WHERE id = 2")[0][0]
        Store(layout).turns.record_event(
            Event("late", first + 0.5, "s1", "PostToolUse", "Bash", {"tool_input": {"c": "LATE"}})
        )
        return out

    monkeypatch.setattr(take, "_read", read_then_late_event)
    worker = economy(layout, standin)
    assert worker.run_once().action == "submitted"
    body = next(r.json for r in standin.requests if r.path == BATCHES and r.method == "POST")
    assert "LATE" in json.dumps(body)


def test_a_garbled_lane_state_reads_as_on(layout: Layout) -> None:
    """An ``economy_off`` state row that is not what the daemon writes (not JSON, a probe time
    that is not a number) leaves the lane on and ``wsd status``'s report whole."""
    from wsd.daemon.curation.economy.lane import report

    store = Store(layout)
    for raw in ("not json", '{"probe_at": "tomorrow"}', "[1]"):
        store.ledger.set_state({"economy_off": raw}, time.time())
        assert report(store, "economy", time.time())["economy_off"] is None
    store.ledger.set_state({"economy_off": json.dumps({"probe_at": time.time() + 60})}, time.time())
    assert report(store, "economy", time.time())["economy_off"] is not None


class _Economy:
    def __init__(self, usable: bool, released: bool) -> None:
        self._usable, self._released = usable, released

    def usable(self, now: float) -> bool:
        return self._usable

    def released_pending(self) -> bool:
        return self._released


@pytest.mark.parametrize(
    ("reason", "urgent", "usable", "released", "take", "lane"),
    [
        ("flush", 7, True, True, "urgent", "prompt"),  # PreCompact or wsd flush: all, now
        ("flush", None, True, False, "new", "economy"),  # a flush with no urgent turn: as usual
        ("threshold", None, False, True, "free", "prompt"),  # economy off: in flight left out
        ("idle", None, True, True, "released", "prompt"),  # the released turns first
        ("threshold", None, True, False, "new", "economy"),
    ],
)
def test_the_take_says_which_turns_a_call_takes_and_its_lane(
    reason: str, urgent: int | None, usable: bool, released: bool, take: str, lane: str
) -> None:
    """trigger.choose answers a Take member (a typo cannot reach next_turns' lookup), and
    each take goes through its lane (only new turns through the economy lane)."""
    from wsd.daemon.curation.loop import trigger
    from wsd.daemon.store import Backlog, Lane, Take

    backlog = Backlog(3, 1.0, 1.0, None, urgent_flush=urgent, waiting_flush=urgent)
    chosen = trigger.choose(backlog, reason, _Economy(usable, released), 0.0)
    assert isinstance(chosen, Take) and chosen == Take(take)
    assert chosen.lane == Lane(lane)


def test_a_batch_result_claiming_no_usage_is_booked_at_least_at_what_was_sent(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Issue 46 on the economy lane: results whose usage says 0/0 are booked at an estimate,
    never below the request's own floor (its characters over five, at the lane's half price)."""
    standin.responder = lambda body: Reply.text(
        rule_curator.responder_text(body), usage={"input_tokens": 0, "output_tokens": 0}
    )
    worker = economy(layout, standin)
    write_turns(layout, 6)
    run_until(worker, lambda: pending(layout) == 0)
    sent = q(layout.transcript_db, "SELECT request_chars, charge_id FROM message_batch_requests")
    assert len(sent) == 2
    for chars, charge in sent:
        [(status, usd)] = q(
            layout.transcript_db, "SELECT status, usd FROM charges WHERE id = ?", (charge,)
        )
        assert status == "estimated" and usd >= 0.5 * (chars // 5) * DEFAULT_PRICE_INPUT / 1e6, (
            status,
            usd,
        )
