"""The daily spend cap counts every request the Bridge billed, as it happens, and trusts no
figure it is given: through the real worker, store and stand-in Bridge, and a real daemon
killed mid-call."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from tests.conftest import (
    daemon_env,
    drain,
    flush,
    make_worker,
    running_daemon,
    start_daemon,
    wait_for,
    write_turns,
    wsd,
)
from tests.conftest import query as q
from wsd.daemon.curation.bridge.answer import ESTIMATE_FRAMING_TOKENS as FRAMING
from wsd.daemon.curation.bridge.answer import Sent, usage_of
from wsd.daemon.standin.bridge import BridgeStandin, Fault, Reply
from wsd.daemon.store import Store
from wsd.schema.layout import Layout

DAY = 20_000 * 86400.0


def _charges(layout: Layout) -> list[tuple[str, float]]:
    return [
        (str(s), float(u))
        for s, u in q(layout.transcript_db, "SELECT status, usd FROM charges ORDER BY id")
    ]


def test_negative_usage_is_priced_at_an_estimate_and_the_cap_still_holds(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Found by an attack: ``output_tokens: -2000000`` was booked as -$10 and six $1.50
    calls then passed under a $1 cap. Now an implausible usage is priced at an estimate
    (never below zero), logged, and the cap stops the next call."""
    lying = {"input_tokens": 5, "output_tokens": -2_000_000}
    standin.responder = lambda _body: Reply.text("FACT: A fact", usage=lying)
    # $2,000 per million tokens: one call of ~700 input tokens is over $1.
    worker = make_worker(
        layout,
        standin,
        batch_turns=1,
        daily_budget_usd=1.0,
        price_input=2000.0,
        clock=lambda: DAY + 60,
    )
    write_turns(layout, 6)
    flush(layout)
    steps = drain(worker, now=DAY + 60)
    assert steps.count("curated") == 1 and steps[-1] == "budget"
    assert len(standin.requests) == 1
    ((status, usd),) = _charges(layout)
    assert status == "estimated" and usd > 1.0
    (cost,) = q(layout.memory_db, "SELECT cost_usd FROM batches")[0]
    assert cost == usd and Store(layout).charges.spent_since(DAY) == usd


def test_usage_that_is_not_a_count_is_replaced_by_an_estimate() -> None:
    """Each usage figure must be a non-negative integer within what the request and its reply
    could cost (bool, float, text, missing input, more output than max_tokens are not; nor
    input under the request's floor, output under what the reply's text takes, cache tokens
    with no breakpoint or beyond it)."""

    class Usage:
        def __init__(self, **kw: object) -> None:
            self.__dict__.update(kw)

    class Message:
        def __init__(self, usage: object) -> None:
            self.usage = usage
            self.content = [type("B", (), {"text": "x" * 400, "type": "text"})()]

    good = usage_of(Message(Usage(input_tokens=900, output_tokens=100)), Sent(4000), 4096)
    assert good.valid and (good.input_tokens, good.output_tokens) == (900, 100)
    for bad in (
        Usage(input_tokens=-1, output_tokens=1),
        Usage(input_tokens=True, output_tokens=1),
        Usage(input_tokens=1.5, output_tokens=1),
        Usage(input_tokens="900", output_tokens=1),
        Usage(output_tokens=1),
        Usage(input_tokens=1, output_tokens=5000),
        Usage(input_tokens=10**9, output_tokens=1),
        Usage(input_tokens=1, output_tokens=1, cache_read_input_tokens=-5),
        None,
        Usage(input_tokens=0, output_tokens=0),
        Usage(input_tokens=1, output_tokens=1),
        Usage(input_tokens=900, output_tokens=24),  # 400 characters take 25 tokens at least
        Usage(input_tokens=799, output_tokens=100),  # 4,000 characters: 800 at least
        Usage(input_tokens=0, output_tokens=100, cache_read_input_tokens=1000),
    ):
        estimate = usage_of(Message(bad), Sent(4000), 4096)
        assert not estimate.valid
        assert (estimate.input_tokens, estimate.output_tokens) == (1000 + FRAMING, 100)
    # With a breakpoint over 3,000 of the characters, the prefix may be billed from the cache,
    # but the 1,000 after it are billed fresh: 200 tokens at least.
    cached = Sent(4000, 3000)
    read = usage_of(
        Message(Usage(input_tokens=250, output_tokens=100, cache_read_input_tokens=750)),
        cached,
        4096,
    )
    assert read.valid and read.cache_read_tokens == 750
    for bad in (
        Usage(input_tokens=199, output_tokens=100, cache_read_input_tokens=750),
        Usage(input_tokens=250, output_tokens=100, cache_read_input_tokens=10**6),
    ):
        assert not usage_of(Message(bad), cached, 4096).valid


def test_answers_lost_or_unreadable_are_still_counted(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A 200 whose body cannot be read and a reply with no text were paid for: each is booked
    (an estimate, a full answer assumed for the unreadable one) before the retry that
    succeeds; an error status is booked as nothing billed. The batch's own cost is the
    answer it applied."""
    standin.script(
        Fault.malformed_json(), Reply.empty(), Fault.server_error(), Reply.text("FACT: Tea")
    )
    worker = make_worker(layout, standin, batch_turns=1, retry_attempts=5, max_tokens=1000)
    write_turns(layout, 1)
    flush(layout)
    assert "curated" in drain(worker)
    statuses = [s for s, _u in _charges(layout)]
    assert statuses == ["estimated", "billed", "void", "billed"]
    unreadable, empty, void, applied = (u for _s, u in _charges(layout))
    assert unreadable >= 1000 * 5.0 / 1e6 and empty > 0 and void == 0
    assert q(layout.memory_db, "SELECT cost_usd FROM batches") == [(applied,)]
    # Summed by SQLite and by Python, in their own order: equal to the last bit is chance.
    spent = sum(u for _s, u in _charges(layout))
    assert Store(layout).charges.spent_since(0) == pytest.approx(spent, rel=1e-12, abs=1e-15)


def test_a_call_killed_in_flight_still_counts_toward_the_day(
    layout: Layout, tmp_path: Path
) -> None:
    """kill -9 while the Bridge is answering: the request was booked before it was sent, so
    the day's spend holds it after the restart although no answer ever arrived."""
    with BridgeStandin(latency=30) as bridge:
        env = daemon_env(layout, bridge)
        proc = start_daemon(env, tmp_path / "d.log")
        try:
            write_turns(layout, 1)
            flush(layout)
            assert wait_for(lambda: len(bridge.requests) == 1, 30)
            time.sleep(0.2)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
    ((status, usd),) = _charges(layout)
    assert status == "asked" and usd > 0
    assert Store(layout).charges.spent_since(time.time() // 86400 * 86400) == usd
    assert q(layout.memory_db, "SELECT count(*) FROM batches") == [(0,)]


def test_the_charges_ledger_equals_what_the_bridge_answered(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Every answer the stand-in gave is booked at exactly its usage's price, with its
    message id."""
    worker = make_worker(layout, standin, batch_turns=2)
    write_turns(layout, 7)
    flush(layout)
    drain(worker)
    rows = q(
        layout.transcript_db,
        "SELECT status, usd, input_tokens, output_tokens, message_id FROM charges ORDER BY id",
    )
    assert len(rows) == len(standin.requests) == 4
    for (status, usd, tin, tout, message_id), request in zip(rows, standin.requests, strict=True):
        assert status == "billed" and message_id.startswith("msg_")
        assert usd == (tin * 1.0 + tout * 5.0) / 1e6
        assert tin == len(request.body.decode()) // 4
    status = json.loads(Path(layout.memory_dir, "daemon.status.json").read_text())
    assert status["state"] == "idle"


def test_maintenance_prunes_old_charges_but_never_the_last_two_days(tmp_path: Path) -> None:
    """Idle maintenance bounds the charges ledger, keeping every charge the daily cap still sums."""
    from wsd.daemon.ops.bootstrap import init_workspace

    layout = Layout(str(tmp_path))
    init_workspace(layout, templates=None)
    store = Store(layout)
    now, day = DAY + 43_200, 86_400.0
    for age_days in (30, 3, 1.5, 0.1):
        store.charges.ask_charge(now - age_days * day, 0.25, "batch")
    # A one-hour retention must not take yesterday's charges with the events.
    assert store.maintenance.idle_pass(now, every=0, retention=3600) is not None
    rows = q(layout.transcript_db, "SELECT asked_at FROM charges")
    assert sorted(round((now - at) / day, 1) for (at,) in rows) == [0.1, 1.5]
    assert store.charges.spent_since(now - day) == 0.25


def test_a_restore_from_a_backup_does_not_lower_the_days_spend(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """Found by a new user: restoring transcript.db and memory.db from a backup took the day's
    charges back with them (spent today $0.0098 -> $0.0044) and the cap let the money be
    spent again. The daemon keeps the day's spend in its heartbeat: after the restore
    ``wsd status`` and the cap see what was spent, and the cap still stops the next call."""
    expensive = {"input_tokens": 1000, "output_tokens": 1000}  # $0.006 a call
    standin.responder = lambda _body: Reply.text("FACT: A fact", usage=expensive)
    now = time.time()  # today: `wsd status` counts the real day
    today = now // 86400 * 86400
    worker = make_worker(layout, standin, batch_turns=1, daily_budget_usd=0.01, clock=lambda: now)
    write_turns(layout, 1)
    flush(layout)
    assert "curated" in drain(worker, now=now)
    backup = tmp_path / "backup"
    from wsd.daemon.ops.backup import backup as take_backup

    take_backup(Layout(layout.root), str(backup))
    write_turns(layout, 1, start=1)
    flush(layout)
    assert "curated" in drain(worker, now=now)
    spent = Store(layout).charges.spent_since(today)
    assert spent >= 0.01
    worker.status.update(force=True)  # the heartbeat as the daemon leaves it

    memory = Path(layout.memory_dir)  # the README's restore, the daemon stopped
    for leftover in [*memory.glob("*-wal"), *memory.glob("*-shm")]:
        leftover.unlink()
    for name in ("transcript.db", "memory.db"):
        (memory / name).write_bytes((backup / name).read_bytes())
    assert Store(layout).charges.spent_since(today) < spent  # the ledgers alone went back
    shown = wsd({"WSD_WORKSPACE": layout.root}, "status", "--json").stdout
    assert json.loads(shown)["spent_today_usd"] == round(spent, 6)

    write_turns(layout, 1, start=2)
    flush(layout)
    restarted = make_worker(
        layout, standin, batch_turns=1, daily_budget_usd=0.01, clock=lambda: now
    )
    calls = len(standin.requests)
    assert drain(restarted, now=now)[-1] == "budget"
    assert len(standin.requests) == calls  # the cap held: no call was made
    assert restarted.gate.budget.spent == spent


def test_a_restart_with_a_higher_cap_logs_that_curation_resumed(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Found by a new user: restarted with a higher cap, the daemon curated the waiting turns
    at once but logged no ``budget_resumed`` (the README promises it) and kept nothing of
    the pause; now the new process reads the pause from the last heartbeat and says so."""
    from structlog.testing import capture_logs

    expensive = {"input_tokens": 1000, "output_tokens": 1000}  # $0.006 a call
    standin.responder = lambda _body: Reply.text("FACT: A fact", usage=expensive)
    now = DAY + 3600
    worker = make_worker(layout, standin, batch_turns=1, daily_budget_usd=0.01, clock=lambda: now)
    write_turns(layout, 3)
    flush(layout)
    assert drain(worker, now=now)[-1] == "budget"
    worker.status.update(force=True)
    raised = make_worker(layout, standin, batch_turns=1, daily_budget_usd=1.0, clock=lambda: now)
    with capture_logs() as logs:
        assert "curated" in drain(raised, now=now)
    resumed = [e for e in logs if e["event"] == "budget_resumed"]
    assert len(resumed) == 1 and resumed[0]["cap_usd"] == 1.0, logs
    assert raised.status.data.get("budget") is None


def test_a_restarted_daemon_reads_its_predecessors_pause_and_spend(
    layout: Layout, tmp_path: Path
) -> None:
    """Found by a second new-user run: under ``wsd run`` (as supervisord starts it) the entry
    point's first heartbeat replaced the previous process's before the worker read it, so a
    restart with a higher cap logged no ``budget_resumed`` and a restore could lower the
    day's spend. The restarted daemon now reads both from its predecessor's heartbeat."""
    expensive = {"input_tokens": 1000, "output_tokens": 1000}  # $0.006 a call
    with BridgeStandin(responder=lambda _b: Reply.text("FACT: A fact", usage=expensive)) as bridge:
        env = daemon_env(layout, bridge, WSD_BATCH_TURNS="1", WSD_DAILY_BUDGET_USD="0.002")
        with running_daemon(env, tmp_path / "first.log"):
            write_turns(layout, 2)
            wsd(env, "flush")
            assert wait_for(lambda: "budget_reached" in (tmp_path / "first.log").read_text(), 30)
        spent = json.loads(wsd(env, "status", "--json").stdout)["spent_today_usd"]
        raised = env | {"WSD_DAILY_BUDGET_USD": "5"}
        with running_daemon(raised, tmp_path / "second.log"):
            wsd(raised, "flush", "--wait", "30")
            beat = json.loads(Path(layout.memory_dir, "daemon.status.json").read_text())
        log = (tmp_path / "second.log").read_text()
        assert "budget_resumed" in log, log[-3000:]
        assert beat["spent_today"]["usd"] > spent > 0


#: Usage a Bridge may report in place of the truth (issue 46: 0/0 and 1/1 booked nothing
#: and a $0.01 cap never paused).
LIES: dict[str, dict[str, object]] = {
    "zero": {"input_tokens": 0, "output_tokens": 0},
    "one": {"input_tokens": 1, "output_tokens": 1},
    "missing": {
        "input_tokens": None,
        "output_tokens": None,
        "cache_creation_input_tokens": None,
        "cache_read_input_tokens": None,
    },
    "negative": {"input_tokens": -5000, "output_tokens": -2_000_000},
    "absurd": {"input_tokens": 10**12, "output_tokens": 10**12},
    "cached_only": {"input_tokens": 0, "cache_read_input_tokens": 10**5, "output_tokens": 3},
}


def _flushes_until_paused(
    root: Path, standin: BridgeStandin, usage: dict[str, object] | None
) -> tuple[int, float]:
    """Flush one turn at a time into a fresh workspace under a $0.01 cap, the Bridge answering
    with ``usage`` (None: its honest count); (flushes curated before the pause, spend booked)."""
    from wsd.daemon.ops.bootstrap import init_workspace
    from wsd.daemon.standin import rule_curator

    root.mkdir()
    layout = Layout(str(root))
    init_workspace(layout, templates=None)
    standin.responder = lambda body: Reply.text(rule_curator.responder_text(body), usage=usage)
    worker = make_worker(
        layout, standin, batch_turns=1, daily_budget_usd=0.01, clock=lambda: DAY + 60
    )
    for i in range(60):
        write_turns(layout, 1, start=i, prompt="Task {i}: I prefer tabs over spaces " + "x" * 800)
        flush(layout)
        if "budget" in drain(worker, now=DAY + 60):
            return i, Store(layout).charges.spent_since(DAY)
    raise AssertionError("the $0.01 cap never paused curation")


@pytest.mark.parametrize("lie", sorted(LIES))
def test_the_cap_pauses_at_the_same_flush_whatever_usage_the_bridge_reports(
    tmp_path: Path, standin: BridgeStandin, lie: str
) -> None:
    """Found by an attack (issue 46): a Bridge answering usage 0/0 or 1/1 booked almost
    nothing and a $0.01 cap never paused. Usage below what the daemon knows it sent (or its
    reply takes), missing, negative or absurd is booked at an estimate, so the cap pauses
    after the same flush as with honest usage, and no charge is below the request's floor."""
    honest = _flushes_until_paused(tmp_path / "honest", standin, None)
    lied = _flushes_until_paused(tmp_path / lie, standin, LIES[lie])
    assert 2 <= honest[0] <= 40
    assert lied[0] == honest[0], (honest, lied)
    assert lied[1] == pytest.approx(honest[1], rel=0.1)
    layout = Layout(str(tmp_path / lie))
    statuses = {s for s, _u in _charges(layout)}
    assert statuses == {"estimated"}, statuses
