"""Turns are assembled by each event's own time, not by arrival (issue 13, item 3): a spooled
event ingested late joins its own turn, folded again while no curator has seen it, or as an
addendum the next batch carries once it has."""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.conftest import (
    daemon_env,
    drain,
    flush,
    make_config,
    make_worker,
    query,
    running_daemon,
    scalar,
    wait_for,
    wsd,
)
from tests.test_spool_damage import _hook, _prompt, _spool_through_locked_db, _stop
from wsd import schema
from wsd.daemon.curation.rebuild.rebuild import rebuild
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.store import Store
from wsd.hooks.capture import Capture, CaptureConfig, build_event
from wsd.schema import spool
from wsd.schema.layout import Layout
from wsd.schema.transcript import Event, record

REPO = Path(__file__).resolve().parent.parent


def _tool(session: str, command: str) -> dict[str, Any]:
    return {
        "hook_event_name": "PostToolUse",
        "session_id": session,
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_response": "ok",
    }


def _turns(layout: Layout, session: str | None = None) -> list[tuple[Any, ...]]:
    """(prompt, tool commands in order, answer, amends) of every observation, by id."""
    where = "WHERE session_id = ?" if session else ""
    found = query(
        layout.transcript_db,
        "SELECT user_message, tool_calls_json, agent_response, amends FROM observations"
        f" {where} ORDER BY id",
        (session,) if session else (),
    )
    return [
        (u, tuple(c["input"].get("command") or c["input"].get("c") for c in json.loads(t)), a, m)
        for u, t, a, m in found
    ]


def _sent(standin: BridgeStandin, which: int | None = None) -> str:
    """The text of the requests the Bridge received (or of one of them)."""
    chosen = standin.requests if which is None else [standin.requests[which]]
    return "\n".join(r.body.decode() for r in chosen).replace('\\"', '"')


def test_spooled_stop_of_turn_one_reaches_turn_one(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """The issue's case through wsd-hook and wsd run: turn 1's Stop spooled, turn 2 written
    directly; answer 1 lands in turn 1's observation and reaches the Bridge inside turn 1."""
    env = daemon_env(layout, standin)
    _hook(env, _prompt("s", "prompt 1"))
    _hook(env, _tool("s", "ls one"))
    _spool_through_locked_db(layout, env, [_stop("s", "answer 1")])
    for event in (_prompt("s", "prompt 2"), _tool("s", "ls two"), _stop("s", "answer 2")):
        _hook(env, event)
    with running_daemon(env, tmp_path / "wsd.log"):
        assert wsd(env, "flush", "--wait", "30", check=False).returncode == 0
    assert _turns(layout) == [
        ("prompt 1", ("ls one",), "answer 1", None),
        ("prompt 2", ("ls two",), "answer 2", None),
    ]
    assert scalar(layout.transcript_db, "SELECT count(*) FROM events WHERE kind != 'SessionStart'"
                  " AND observation_id IS NULL") == 0  # fmt: skip
    sent = _sent(standin)
    turn_one = sent.split("[turn 1 ", 1)[1].split("[turn 2 ", 1)[0]
    assert "answer 1" in turn_one and "prompt 1" in turn_one


def _session(
    rng: random.Random, turns: int, tools: int | None = None
) -> tuple[list[Event], list[Any]]:
    """Events of one session (prompt, 0-3 tool calls, Stop per turn) and the turns they make."""
    events: list[Event] = []
    want: list[Any] = []
    ts = 1000.0
    for i in range(turns):
        ts += 1
        events.append(Event(f"p{i}", ts, "s", "UserPromptSubmit", None, {"prompt": f"prompt {i}"}))
        n = rng.randint(0, 3) if tools is None else tools
        for j in range(n):
            ts += 1
            payload = {"tool_input": {"c": f"{i}-{j}"}, "tool_response": "ok"}
            events.append(Event(f"t{i}-{j}", ts, "s", "PostToolUse", "Bash", payload))
        ts += 1
        events.append(Event(f"s{i}", ts, "s", "Stop", None, {"last_assistant_message": f"a {i}"}))
        want.append((f"prompt {i}", tuple(f"{i}-{j}" for j in range(n)), f"a {i}", None))
    return events, want


def _replay(layout: Layout, events: list[Event], spooled: set[str], rng: random.Random) -> None:
    """Record ``events``: the spooled ones later than the rest (in spool order, at random
    points), as the daemon ingests them."""
    conn = schema.connect(layout.transcript_db, "transcript")
    try:
        late: list[Event] = []
        for event in events:
            if event.uid in spooled:
                late.append(event)
            else:
                record(conn, event)
            while late and rng.random() < 0.3:
                record(conn, late.pop(0), via="spool")
        for event in late:
            record(conn, event, via="spool")
    finally:
        conn.close()


@pytest.mark.slow
def test_any_spooled_events_join_their_own_turns(tmp_path: Path) -> None:
    """Every choice of up to three spooled events among three turns, then 150 random sessions
    with up to 80% spooled ingested at random later points: each turn has its own prompt, its
    tool calls in order and its answer, and no event is left outside a turn."""
    cases: list[tuple[int, set[str] | float]] = []
    uids = [e.uid for e in _session(random.Random(0), 3, tools=2)[0]]
    cases += [(0, set(c)) for k in (1, 2, 3) for c in itertools.combinations(uids, k)]
    cases += [(seed, random.Random(seed).choice([0.1, 0.3, 0.5, 0.8])) for seed in range(1, 151)]
    for n, (seed, spooled) in enumerate(cases):
        rng = random.Random(seed)
        events, want = _session(rng, 3, 2) if seed == 0 else _session(rng, rng.randint(2, 6))
        if not isinstance(spooled, set):
            spooled = {e.uid for e in events if rng.random() < spooled}
        layout = Layout(str(tmp_path / f"ws{n}"))
        Store(layout).migrate()
        _replay(layout, events, spooled, rng)
        assert sorted(_turns(layout)) == sorted(want), (seed, sorted(spooled))
        assert scalar(layout.transcript_db, "SELECT count(*) FROM events"
                      " WHERE observation_id IS NULL") == 0, (seed, sorted(spooled))  # fmt: skip


def _split_session(layout: Layout) -> list[Event]:
    """The soak's case, half written: turn 0's prompt and turn 2's tool call and Stop were
    written directly (so they joined turn 0 and closed it); the events between them
    (turn 0's Stop, turn 1, turn 2's prompt) were spooled and are returned, in order."""
    config = CaptureConfig(workspace=layout.root)
    t0 = time.time() - 60
    steps = [
        _prompt("s", "prompt 0"),
        _stop("s", "answer 0"),
        _prompt("s", "prompt 1"),
        _tool("s", "ls one"),
        _stop("s", "answer 1"),
        _prompt("s", "prompt 2"),
        _tool("s", "ls two"),
        _stop("s", "answer 2"),
    ]
    events = [build_event(data, config, now=t0 + i) for i, data in enumerate(steps)]
    assert all(e is not None for e in events)
    cap = Capture(config)
    for event in (events[0], events[6], events[7]):
        assert cap.write(event) == "written"  # type: ignore[arg-type]
    cap.close()
    return events[1:6]  # type: ignore[return-value]


_WHOLE = [
    ("prompt 0", (), "answer 0", None),
    ("prompt 1", ("ls one",), "answer 1", None),
    ("prompt 2", ("ls two",), "answer 2", None),
]


def test_no_turn_is_claimed_while_spooled_events_wait(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A hook spools between a pass's intake and its claim: the pass claims nothing; the next
    ingests the spool first, so each turn reaches the curator whole, once, without addenda."""
    spooled = _split_session(layout)
    worker = make_worker(layout, standin, batch_turns=10)
    real_run = worker.chores.intake.run

    def intake_then_spool() -> None:
        real_run()
        while spooled:  # as a hook whose write timed out would, right after the intake
            spool.append(layout.spool, spooled.pop(0).to_json())

    worker.chores.intake.run = intake_then_spool  # type: ignore[method-assign]
    flush(layout)
    assert worker.run_once().action == "waiting" and not standin.requests
    drain(worker)
    assert _turns(layout) == _WHOLE
    covered = query(layout.memory_db, "SELECT observation_id, count(*) FROM batch_turns GROUP BY 1")
    assert covered == [(1, 1), (2, 1), (3, 1)]
    assert (
        "prompt 0" in _sent(standin, 0) and "ls two" not in _sent(standin, 0).split("[turn 2 ")[0]
    )


def test_a_rebuild_records_spooled_events_before_it_claims_turns(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A rebuild started while events wait in the spool (and in a taken file a crash left)
    records them first: it curates each turn whole, none as the wrong mix."""
    spooled = _split_session(layout)
    spool.append(layout.spool, spooled[0].to_json())
    taken = spool.take(layout.spool)
    assert taken is not None
    for event in spooled[1:]:
        spool.append(layout.spool, event.to_json())
    rebuild(make_config(layout, standin, batch_turns=10), progress=lambda _line: None)
    assert _turns(layout) == _WHOLE
    assert not spool.waiting(layout.spool)
    covered = query(layout.memory_db, "SELECT observation_id, count(*) FROM batch_turns GROUP BY 1")
    assert covered == [(1, 1), (2, 1), (3, 1)]


def test_a_rebuild_records_what_hooks_spool_while_it_ingests(
    layout: Layout, standin: BridgeStandin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The soak's rebuild case: while the rebuild ingests the spool, a hook spools a burst and
    a direct Stop closes the turn it belongs to; the rebuild records that burst too before it
    claims, so the turn is curated whole, not as the wrong mix."""
    config = CaptureConfig(workspace=layout.root)
    other = build_event(_prompt("o", "another session"), config, now=time.time() - 120)
    assert other is not None
    spool.append(layout.spool, other.to_json())
    real_ingest = spool.ingest_file
    burst: list[Event] = []

    def ingest_while_a_hook_spools(*args: Any, **kwargs: Any) -> spool.IngestReport:
        report = real_ingest(*args, **kwargs)
        if not burst:
            burst.extend(_split_session(layout))
            for event in burst:
                spool.append(layout.spool, event.to_json())
        return report

    monkeypatch.setattr(spool, "ingest_file", ingest_while_a_hook_spools)
    rebuild(make_config(layout, standin, batch_turns=10), progress=lambda _line: None)
    assert _turns(layout, "s") == _WHOLE


def test_spool_waiting_sees_the_spool_and_taken_files_but_not_an_empty_spool(
    layout: Layout,
) -> None:
    """An empty spool (a failed append leaves one) waits for nothing; a line in it, or a
    taken file not yet ingested, does."""
    Path(layout.spool).write_text("")
    assert not spool.waiting(layout.spool)
    spool.append(layout.spool, "{}")
    assert spool.waiting(layout.spool)
    taken = spool.take(layout.spool)
    assert taken is not None and spool.waiting(layout.spool)
    os.unlink(taken)
    assert not spool.waiting(layout.spool)


def test_late_answer_of_a_curated_turn_is_an_addendum_the_next_batch_carries(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Turn 1 was curated without its answer (its Stop came late): the answer becomes an
    addendum amending turn 1, curated once by the next batch, which shows what it amends."""
    worker = make_worker(layout, standin, batch_turns=10)
    cap = Capture(CaptureConfig(workspace=layout.root))
    config = CaptureConfig(workspace=layout.root)
    t0 = time.time() - 60  # recent: maintenance prunes the raw events of old curated turns
    late = build_event(_stop("s", "answer 1"), config, now=t0 + 2.5)
    assert late is not None
    steps = [_prompt("s", "prompt 1"), _tool("s", "ls one"), _prompt("s", "prompt 2")]
    for when, data in enumerate([*steps, _stop("s", "answer 2")], start=1):
        event = build_event(data, config, now=t0 + when)
        assert event is not None and cap.write(event) == "written"
    cap.close()
    flush(layout)
    drain(worker)
    assert len(standin.requests) == 1
    spool.append(layout.spool, late.to_json())
    flush(layout)
    drain(worker)
    assert _turns(layout) == [
        ("prompt 1", ("ls one",), None, None),
        ("prompt 2", (), "answer 2", None),
        (None, (), "answer 1", 1),
    ]
    assert len(standin.requests) == 2
    second = _sent(standin, 1)
    assert " amends 1]" in second and "answer 1" in second and "prompt 2" not in second
    covered = query(layout.memory_db, "SELECT observation_id, count(*) FROM batch_turns GROUP BY 1")
    assert covered == [(1, 1), (2, 1), (3, 1)]


def test_a_claimed_turn_is_never_folded_again(layout: Layout) -> None:
    """Once a batch has claimed a turn (its call may be in flight), a late tool call for it
    becomes an addendum: the claimed turn's text stays what the curator was sent."""
    conn = schema.connect(layout.transcript_db, "transcript")
    for event in (
        Event("p", 1.0, "s", "UserPromptSubmit", None, {"prompt": "prompt"}),
        Event("s", 3.0, "s", "Stop", None, {"last_assistant_message": "answer"}),
    ):
        record(conn, event)
    conn.close()
    store = Store(layout)
    before = store.turns.claim_turns([1], 5.0)
    store.turns.record_event(
        Event("t", 2.0, "s", "PostToolUse", "Bash", {"tool_input": {"c": "x"}})
    )
    assert store.turns.turns_by_id([1]) == before
    assert _turns(layout)[1] == (None, ("x",), None, 1)


# -- 8 writer processes x 1,000 events, some spooled, a daemon ingesting as they write ---------

WRITERS, TURNS, TOOLS = 8, 250, 2  # 250 turns x (prompt, 2 tools, Stop) = 1,000 events each


def writer(root: str, w: int, spool_share: float) -> None:
    """One agent's session written through the capture path; ``spool_share`` of its events
    are forced to the spool (the database "busy"), as the hook does when it cannot write."""
    rng = random.Random(w)

    class Busy(Capture):
        force = False

        def _connection(self) -> apsw.Connection:
            if self.force:
                raise apsw.BusyError("forced by the test")
            return super()._connection()

    cap = Busy(CaptureConfig(workspace=root), keep_open=True)
    config, ts, spooled = CaptureConfig(workspace=root), 0.0, 0
    session = f"w{w}"
    for i in range(TURNS):
        steps = [_prompt(session, f"{session} prompt {i}")]
        steps += [_tool(session, f"{session}-{i}-{j}") for j in range(TOOLS)]
        steps.append(_stop(session, f"{session} answer {i}"))
        for data in steps:
            ts = max(time.time(), ts + 1e-6)  # one session's events in order, distinct times
            event = build_event(data, config, now=ts)
            assert event is not None
            cap.force = rng.random() < spool_share
            outcome = cap.write(event)
            spooled += outcome == "spooled"
    cap.close()
    print(spooled)


def _load(layout: Layout, env: dict[str, str], log: Path) -> tuple[int, list[Any], list[Any]]:
    """Run the 8 writers beside a daemon, then flush: (events spooled, turns sent, got)."""
    code = (
        "import sys; from tests.test_turn_assembly import writer;"
        " writer(sys.argv[1], int(sys.argv[2]), 0.02)"
    )
    with running_daemon(env, log):
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", code, layout.root, str(w)],
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            for w in range(WRITERS)
        ]
        spooled = sum(int(p.communicate(timeout=300)[0].split()[-1]) for p in procs)
        assert all(p.returncode == 0 for p in procs)
        assert wait_for(lambda: not os.path.exists(layout.spool), timeout=30)
        assert wsd(env, "flush", "--wait", "240", check=False).returncode == 0
    want = [
        (f"w{w} prompt {i}", tuple(f"w{w}-{i}-{j}" for j in range(TOOLS)), f"w{w} answer {i}", None)
        for w in range(WRITERS)
        for i in range(TURNS)
    ]
    assert scalar(layout.transcript_db, "SELECT count(*) FROM events WHERE observation_id IS NULL"
                  " AND kind != 'SessionStart'") == 0  # fmt: skip
    observations = scalar(layout.transcript_db, "SELECT count(*) FROM observations")
    covered = query(
        layout.memory_db, "SELECT count(*), count(DISTINCT observation_id) FROM batch_turns"
    )
    assert covered == [(observations, observations)]  # every observation curated, once
    return spooled, want, _turns(layout)


def test_eight_writers_with_spooled_events_make_exactly_the_turns_sent(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """8 processes x 1,000 events (2% forced to the spool) while a daemon ingests the spool
    (curating after the writes): exactly the 2,000 turns sent, each with its prompt, its tool
    calls in order and its answer, all curated once."""
    env = daemon_env(layout, standin, WSD_BATCH_TURNS="100000", WSD_IDLE_SECONDS="3600")
    spooled, want, got = _load(layout, env, tmp_path / "wsd.log")
    wrong = len(set(want) - set(got))
    print(f"\nload, curated after: {WRITERS * TURNS * (TOOLS + 2)} events, {spooled} spooled;"
          f" {len(got)} observations for {len(want)} turns; {wrong} wrong or missing")  # fmt: skip
    assert spooled > 0
    assert sorted(got) == sorted(want)


def test_eight_writers_curated_as_they_write_lose_and_double_nothing(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """The same load curated while it is written (batches of 25): a late event for a turn
    already taken into a batch is an addendum; every prompt, tool call and answer sent is in
    exactly one curated observation, and the turns no late event touched are exact."""
    env = daemon_env(layout, standin, WSD_BATCH_TURNS="25")
    spooled, want, got = _load(layout, env, tmp_path / "wsd.log")
    parts = [p for u, tools, a, _m in got for p in (u, *tools, a) if p]
    sent = [p for u, tools, a, _m in want for p in (u, *tools, a)]
    addenda = sum(1 for row in got if row[3] is not None)
    exact = len(set(want) & set(got))
    print(f"\nload, curated live: {spooled} spooled; {len(got)} observations ({addenda} addenda)"
          f" for {len(want)} turns; {exact} exact")  # fmt: skip
    assert sorted(parts) == sorted(sent)  # "\n\n"-joined prompts would show up here
    assert exact >= len(want) - 2 * addenda


def test_a_wholly_late_turn_is_a_turn_of_its_own_even_after_the_next_was_curated(
    layout: Layout,
) -> None:
    """Every event of turn 1 spooled, turn 2 written and curated meanwhile: turn 1 comes in as
    its own observation (its prompt, tool call and answer), not as addenda to turn 2."""
    t0 = time.time() - 60
    first = [
        Event("p1", t0 + 1, "s", "UserPromptSubmit", None, {"prompt": "prompt 1"}),
        Event("t1", t0 + 2, "s", "PostToolUse", "Bash", {"tool_input": {"c": "one"}}),
        Event("s1", t0 + 3, "s", "Stop", None, {"last_assistant_message": "answer 1"}),
    ]
    conn = schema.connect(layout.transcript_db, "transcript")
    record(conn, Event("p2", t0 + 4, "s", "UserPromptSubmit", None, {"prompt": "prompt 2"}))
    record(conn, Event("s2", t0 + 5, "s", "Stop", None, {"last_assistant_message": "answer 2"}))
    conn.close()
    store = Store(layout)
    store.turns.claim_turns([1], t0 + 6)
    store.turns.mark_processed([1])
    for event in first:
        store.turns.record_event(event)
    assert sorted(_turns(layout), key=str) == sorted(
        [("prompt 2", (), "answer 2", None), ("prompt 1", ("one",), "answer 1", None)], key=str
    )


def test_a_late_turn_before_a_curated_turn_whose_prompt_is_late_too_amends_nothing(
    layout: Layout,
) -> None:
    """Found by the soak: turn 1 and turn 2's prompt spooled, turn 2's tool call and Stop
    written and curated meanwhile. Turn 1 comes in as a turn of its own (not "the rest of
    turn 2"); only turn 2's prompt is an addendum to turn 2."""
    t0 = time.time() - 60
    conn = schema.connect(layout.transcript_db, "transcript")
    record(conn, Event("t2", t0 + 5, "s", "PostToolUse", "Bash", {"tool_input": {"c": "two"}}))
    record(conn, Event("s2", t0 + 6, "s", "Stop", None, {"last_assistant_message": "answer 2"}))
    conn.close()
    store = Store(layout)
    store.turns.claim_turns([1], t0 + 7)
    store.turns.mark_processed([1])
    for event in (
        Event("p1", t0 + 1, "s", "UserPromptSubmit", None, {"prompt": "prompt 1"}),
        Event("t1", t0 + 2, "s", "PostToolUse", "Bash", {"tool_input": {"c": "one"}}),
        Event("s1", t0 + 3, "s", "Stop", None, {"last_assistant_message": "answer 1"}),
        Event("p2", t0 + 4, "s", "UserPromptSubmit", None, {"prompt": "prompt 2"}),
    ):
        store.turns.record_event(event)
    assert sorted(_turns(layout), key=str) == sorted(
        [
            (None, ("two",), "answer 2", None),
            ("prompt 1", ("one",), "answer 1", None),
            ("prompt 2", (), None, 1),
        ],
        key=str,
    )


def test_whole_late_turns_inside_a_curated_turns_span_amend_nothing(layout: Layout) -> None:
    """Found by the soak: turn 0's prompt and tool call folded, then turn 3's Stop (direct)
    closed them and the turn was curated; turn 0's Stop, turns 1 and 2 whole and turn 3's
    prompt came late. Turns 1 and 2 are turns of their own; turn 0's answer and turn 3's
    prompt are addenda to the curated turn."""
    t0 = time.time() - 60
    conn = schema.connect(layout.transcript_db, "transcript")
    record(conn, Event("p0", t0 + 1, "s", "UserPromptSubmit", None, {"prompt": "prompt 0"}))
    record(conn, Event("c0", t0 + 2, "s", "PostToolUse", "Bash", {"tool_input": {"c": "zero"}}))
    record(conn, Event("s3", t0 + 10, "s", "Stop", None, {"last_assistant_message": "answer 3"}))
    conn.close()
    store = Store(layout)
    store.turns.claim_turns([1], t0 + 11)
    store.turns.mark_processed([1])
    for event in (
        Event("s0", t0 + 3, "s", "Stop", None, {"last_assistant_message": "answer 0"}),
        Event("p1", t0 + 4, "s", "UserPromptSubmit", None, {"prompt": "prompt 1"}),
        Event("c1", t0 + 5, "s", "PostToolUse", "Bash", {"tool_input": {"c": "one"}}),
        Event("s1", t0 + 6, "s", "Stop", None, {"last_assistant_message": "answer 1"}),
        Event("p2", t0 + 7, "s", "UserPromptSubmit", None, {"prompt": "prompt 2"}),
        Event("s2", t0 + 8, "s", "Stop", None, {"last_assistant_message": "answer 2"}),
        Event("p3", t0 + 9, "s", "UserPromptSubmit", None, {"prompt": "prompt 3"}),
    ):
        store.turns.record_event(event)
    assert sorted(_turns(layout), key=str) == sorted(
        [
            ("prompt 0", ("zero",), "answer 3", None),
            (None, (), "answer 0", 1),
            ("prompt 1", ("one",), "answer 1", None),
            ("prompt 2", (), "answer 2", None),
            ("prompt 3", (), None, 1),
        ],
        key=str,
    )
