"""Prompt caching as the API does it (issue 36): the stand-in's cache (a floor per model,
writes and reads), the markers only where they can hit, and the ledger's prices of both."""

from __future__ import annotations

from typing import Any

from tests.conftest import drain, flush, make_worker, write_turns
from tests.conftest import query as q
from tests.test_economy import economy, pending, run_until
from wsd.daemon.curation.request.caching import min_cacheable, pays, worth_marking
from wsd.daemon.curation.request.prompt import SYSTEM_PROMPT, build_request
from wsd.daemon.memory.md import files_md
from wsd.daemon.runtime.config import DEFAULT_PRICE_INPUT, DEFAULT_PRICE_OUTPUT
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.standin.cache import PromptCache
from wsd.schema.layout import Layout

MARK = {"type": "ephemeral"}


def _request(prefix: str, rest: str, model: str = "claude-haiku-4-5") -> dict[str, Any]:
    return {
        "model": model,
        "system": [{"type": "text", "text": "instructions"}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": prefix, "cache_control": MARK},
                    {"type": "text", "text": rest},
                ],
            }
        ],
    }


def test_a_prefix_under_the_models_floor_is_never_cached() -> None:
    """Haiku 4.5 caches a prefix of 4,096 tokens or more: 3,500 tokens marked is billed as
    plain input, each time (the curator's prefix today)."""
    cache = PromptCache()
    small = _request("x" * 14_000, "turns")  # ~3,500 tokens
    assert cache.usage(small, 4000) == (4000, 0, 0)
    assert cache.usage(small, 4000) == (4000, 0, 0)
    assert min_cacheable("claude-haiku-4-5") == 4096
    assert min_cacheable("claude-haiku-4-5-20251001") == 4096


def test_an_eligible_prefix_is_written_once_then_read_until_it_expires() -> None:
    """Over the floor: the first request writes the prefix, the next ones read it (a changed
    tail does not matter), a changed prefix writes anew, and after the TTL it is written
    again; the floor is configurable per model."""
    now = [0.0]
    cache = PromptCache(clock=lambda: now[0])
    big = _request("y" * 20_000, "batch one")  # ~5,000 tokens
    fresh, written, read = cache.usage(big, 6000)
    assert read == 0 and written > 4096 and fresh == 6000 - written
    again = cache.usage(_request("y" * 20_000, "batch two"), 6000)
    assert again == (6000 - written, 0, written)
    assert cache.usage(_request("z" * 20_000, "batch two"), 6000)[1] == written
    now[0] += 301
    assert cache.usage(big, 6000)[1:] == (written, 0)
    lenient = PromptCache(floors={"claude-haiku-4-5": 1000})
    assert lenient.usage(_request("x" * 14_000, "t"), 4000)[1] > 0


def test_the_curator_marks_a_breakpoint_only_where_it_can_hit() -> None:
    """Today's instructions and files (~3,500 tokens) get no marker on Haiku 4.5, shared or
    not; the same request for a model whose floor is 1,024 does when a read can follow (the
    prefix shared, or written by the request before), and so do files past the floor; a
    lone request is never marked (a write with no read costs 1.25x)."""
    files = {"user.md": "- prefers tabs\n" * 200}
    system, messages = build_request(files, [], ["[turn 1 2026-11-28 10:00]\nuser: hi"], shared=5)
    assert "cache_control" not in system[0]
    assert all("cache_control" not in b for b in messages[0]["content"])
    sonnet = "claude-sonnet-4-5"
    assert "cache_control" not in build_request(files, [], ["t"], model=sonnet)[1][0]["content"][0]
    for reuse in ({"shared": 2}, {"warm": True}):
        _, marked = build_request(files, [], ["t"], model=sonnet, **reuse)  # type: ignore[arg-type]
        assert marked[0]["content"][0]["cache_control"] == MARK
    huge = {"user.md": "- a long line the person wrote about their work\n" * 400}
    assert "cache_control" not in build_request(huge, [], ["t"])[1][0]["content"][0]
    _, big = build_request(huge, [], ["t"], shared=2)
    assert big[0]["content"][0]["cache_control"] == MARK
    assert worth_marking(len(SYSTEM_PROMPT) + 16_384, "claude-haiku-4-5")


def _long_memory(layout: Layout) -> None:
    """A full user.md (its 200 lines): instructions and files pass Haiku 4.5's 4,096 tokens."""
    line = "- works on project {i} with the finance team, reviews invoices on Fridays at 10\n"
    with open(layout.md("user.md"), "w", encoding="utf-8") as fh:
        fh.write("".join(line.format(i=i) for i in range(200)))


def _cost(layout: Layout) -> list[tuple[int, int, int, int, float]]:
    return [
        (int(a), int(b), int(c), int(d), float(e))
        for a, b, c, d, e in q(
            layout.memory_db,
            "SELECT input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,"
            " cost_usd FROM batches ORDER BY id",
        )
    ]


def _price(fresh: int, out: int, read: int, written: int, factor: float = 1.0) -> float:
    return (
        factor
        * (
            fresh * DEFAULT_PRICE_INPUT
            + written * DEFAULT_PRICE_INPUT * 1.25
            + read * DEFAULT_PRICE_INPUT * 0.1
            + out * DEFAULT_PRICE_OUTPUT
        )
        / 1e6
    )


def test_the_ledger_books_cache_writes_and_reads_at_their_prices(
    layout: Layout,
) -> None:
    """Through the loop, with memory files whose prefix passes the floor, three batches back
    to back: the first is sent plain (nothing to compare with), the second shows the same
    files and writes the cache (1.25x), the third reads it (0.1x); the ledger says so."""
    with BridgeStandin() as standin:
        _long_memory(layout)
        worker = make_worker(layout, standin, batch_turns=2)
        write_turns(layout, 6)
        flush(layout)
        drain(worker)
    rows = _cost(layout)
    assert len(rows) == 3
    (*_, r0, w0, c0), (*_, r1, w1, c1), (*_, r2, w2, c2) = rows
    assert r0 == w0 == 0 and w1 > 0 and r1 == 0 and r2 == w1 and w2 == 0
    for fresh, out, read, written, cost in rows:
        assert abs(cost - _price(fresh, out, read, written)) < 1e-12
    assert c2 < c0 < c1


def test_economy_lane_cache_reads_stack_with_the_batch_discount(tmp_path: Any) -> None:
    """A backlog's Message Batch: its requests share one snapshot's prefix, so all but the
    first read it, and each is priced at half of the cached price."""
    from wsd.daemon.ops.deploy import init_workspace

    layout = Layout(str(tmp_path / "ws"))
    (tmp_path / "ws").mkdir()
    init_workspace(layout, templates=None)
    with BridgeStandin() as standin:
        _long_memory(layout)
        worker = economy(layout, standin, batch_turns=2)
        write_turns(layout, 6)
        run_until(worker, lambda: pending(layout) == 0)
    rows = _cost(layout)
    assert len(rows) == 3 and rows[0][3] > 0 and all(r[2] == rows[0][3] for r in rows[1:])
    for fresh, out, read, written, cost in rows:
        assert abs(cost - _price(fresh, out, read, written, 0.5)) < 1e-12


INVENTORY = (
    files_md.MARKER
    + "\n"
    + "".join(
        f"- documents/invoices/2026-{i % 12 + 1:02}/invoice-{i:04}.pdf (PDF, 84 KB)\n"
        for i in range(160)
    )
)


def test_a_shared_prefix_grows_over_the_floor_only_when_the_reads_pay_for_the_write() -> None:
    """Requests sharing a snapshot (shared >= 2) get files.md's disk listing added to the
    prefix, read-only and escaped, with the breakpoint after it, when that reaches the floor;
    a lone request, a listing too short to reach it, or a prefix over the floor already
    (it caches as it is), changes nothing."""
    files = {"user.md": "- prefers tabs over spaces in every file\n" * 100}
    _, lone = build_request(files, [], ["t"], shared=1, inventory=INVENTORY)
    _, many = build_request(files, [], ["t"], shared=10, inventory=INVENTORY)
    _, short = build_request(files, [], ["t"], shared=10, inventory="- a.txt\n")
    assert "disk_listing" not in lone[0]["content"][0]["text"]
    assert "cache_control" not in lone[0]["content"][0]
    block = many[0]["content"][0]
    assert "<disk_listing" in block["text"] and "invoice-0159.pdf" in block["text"]
    assert block["cache_control"] == MARK
    assert "disk_listing" not in short[0]["content"][0]["text"]
    assert "cache_control" not in short[0]["content"][0]
    assert pays(2, 14_000, 17_000) and not pays(2, 14_000, 30_000) and not pays(1, 1, 1)
    full = {"user.md": "- a long line the person wrote about their work\n" * 400}
    _, over = build_request(full, [], ["t"], shared=10, inventory=INVENTORY)
    assert "disk_listing" not in over[0]["content"][0]["text"]
    assert over[0]["content"][0]["cache_control"] == MARK


def _backlog(layout: Layout, cache_shared_prefix: bool) -> list[tuple[int, int, int, int, float]]:
    with open(layout.md("files.md"), "w", encoding="utf-8") as fh:
        fh.write("- invoices live under documents/invoices\n\n" + INVENTORY)
    with open(layout.md("user.md"), "w", encoding="utf-8") as fh:
        fh.write("- works with the finance team, reviews invoices on Fridays at ten\n" * 100)
    with BridgeStandin() as standin:
        worker = economy(layout, standin, batch_turns=1, cache_shared_prefix=cache_shared_prefix)
        write_turns(layout, 6)
        run_until(worker, lambda: pending(layout) == 0)
        sent = [
            r.body.decode()
            for r in standin.requests
            if r.method == "POST" and r.path.endswith("/batches")
        ]
    assert sent and all(("disk_listing" in body) == cache_shared_prefix for body in sent), [
        ("disk_listing" in b, len(b)) for b in sent
    ]
    return _cost(layout)


def test_a_backlogs_message_batch_reads_its_grown_prefix_and_the_setting_turns_it_off(
    layout: Layout, tmp_path: Any
) -> None:
    """A backlog of six requests in one Message Batch: the first writes the grown prefix,
    the others read it, each booked at half the cached price; WSD_CACHE_SHARED_PREFIX=false
    sends them plain (nothing cached) and the backlog costs more."""
    from wsd.daemon.ops.deploy import init_workspace

    cached = _backlog(layout, True)
    assert len(cached) == 6 and cached[0][3] > 0 and all(r[2] == cached[0][3] for r in cached[1:])
    for fresh, out, read, written, cost in cached:
        assert abs(cost - _price(fresh, out, read, written, 0.5)) < 1e-12
    other = Layout(str(tmp_path / "plain"))
    (tmp_path / "plain").mkdir()
    init_workspace(other, templates=None)
    plain = _backlog(other, False)
    assert all(r[2] == r[3] == 0 for r in plain)
    assert sum(r[4] for r in cached) < sum(r[4] for r in plain)


def _prompt_backlog(layout: Layout, responder: Any, **config: Any) -> list[tuple[int, ...]]:
    """Six turns waiting on the prompt lane, one batch each, curated back to back."""
    from wsd.daemon.standin.bridge import Reply

    with open(layout.md("files.md"), "w", encoding="utf-8") as fh:
        fh.write("- invoices live under documents/invoices\n\n" + INVENTORY)
    with open(layout.md("user.md"), "w", encoding="utf-8") as fh:
        fh.write("- works with the finance team, reviews invoices on Fridays at ten\n" * 100)
    with BridgeStandin(responder=lambda body: Reply.text(responder(body))) as standin:
        worker = make_worker(layout, standin, batch_turns=1, curation="prompt", **config)
        write_turns(layout, 6)
        drain(worker)
    return [r[:4] for r in _cost(layout)]


def test_a_prompt_lane_backlog_caches_its_prefix_while_the_files_stay_the_same(
    layout: Layout,
) -> None:
    """Batches curated back to back (a backlog, a rebuild): once a request showed the same
    files as the one before, it grows the prefix and marks it (written once), and the next
    ones read it; no marker on the first, nothing cached with WSD_CACHE_SHARED_PREFIX=false."""
    rows = _prompt_backlog(layout, lambda _body: "NONE")
    assert len(rows) == 6
    assert rows[0][2:] == (0, 0)  # the first: nothing to compare with
    assert rows[1][2] == 0 and rows[1][3] > 4096  # the second writes
    assert all(r[2] == rows[1][3] and r[3] == 0 for r in rows[2:])  # the rest read it


def test_a_backlog_whose_every_batch_changes_a_file_marks_nothing(
    layout: Layout, tmp_path: Any
) -> None:
    """A curator that edits context.md in every batch: no request showed the files the one
    before did, so none pays a write that nothing would read; the setting off: none either."""
    counter = iter(range(100))
    rows = _prompt_backlog(layout, lambda _body: f"context.md +$: - step {next(counter)} done")
    assert len(rows) == 6 and all(r[2] == r[3] == 0 for r in rows)
    from wsd.daemon.ops.deploy import init_workspace

    other = Layout(str(tmp_path / "off"))
    (tmp_path / "off").mkdir()
    init_workspace(other, templates=None)
    off = _prompt_backlog(other, lambda _body: "NONE", cache_shared_prefix=False)
    assert len(off) == 6 and all(r[2] == r[3] == 0 for r in off)
