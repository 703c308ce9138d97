"""Backoff deadlines live on the monotonic clock and a wall-clock jump either way is a wake
(issue 13, item 8): a clock set back during an outage never keeps a healthy Bridge waiting."""

from __future__ import annotations

import time
from typing import Any

from structlog.testing import capture_logs

from tests.conftest import flush, make_worker, write_turns
from tests.conftest import query as q
from tests.test_capture import prompt, stop, tool
from wsd.daemon.curation.loop.worker import Worker
from wsd.daemon.standin.bridge import BridgeStandin, Fault
from wsd.daemon.store import Store
from wsd.hooks.capture import Capture, CaptureConfig, build_event
from wsd.schema.layout import Layout


class Clocks:
    """A wall clock and a monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.wall = time.time()
        self.mono = 5000.0

    def worker(self, layout: Layout, standin: BridgeStandin, **config: Any) -> Worker:
        """A worker wired on these clocks."""
        return make_worker(
            layout, standin, clock=lambda: self.wall, monotonic=lambda: self.mono, **config
        )

    def run(self, worker: Worker) -> str:
        return str(worker.run_once(self.wall).action)


def _outage(layout: Layout, standin: BridgeStandin, clocks: Clocks, **config: float) -> Worker:
    """A worker that has just entered backoff after the Bridge failed; the Bridge is healthy
    from now on."""
    worker = clocks.worker(layout, standin, batch_turns=1, retry_attempts=1, **config)
    write_turns(layout, 1)
    standin.script(Fault.overloaded())
    assert clocks.run(worker) == "backoff"
    return worker


def test_clock_set_back_an_hour_does_not_stretch_the_backoff(
    layout: Layout, standin: BridgeStandin
) -> None:
    """Wall clock set back 1 h (too small to count as a wake here), 31 s really pass: the 30 s
    backoff is over and the flush is curated."""
    clocks = Clocks()
    worker = _outage(layout, standin, clocks, outage_backoff=30, wake_jump_seconds=1e6)
    clocks.wall -= 3600
    clocks.mono += 10
    assert clocks.run(worker) == "backoff"  # 10 s of 30: still waiting
    clocks.wall += 21
    clocks.mono += 21
    flush(layout)
    assert clocks.run(worker) == "curated"
    assert q(layout.transcript_db, "SELECT count(*) FROM observations WHERE processed = 0") == [
        (0,)
    ]


def test_clock_set_back_is_a_wake_that_ends_the_backoff(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A backward jump past the wake threshold is logged as a wake, like a forward one: the
    HTTP client is dropped, the backoff ends, the next pass curates."""
    clocks = Clocks()
    worker = _outage(layout, standin, clocks, outage_backoff=600)
    clocks.wall -= 3600
    clocks.mono += 2
    flush(layout)
    with capture_logs() as logs:
        assert clocks.run(worker) == "curated"
    assert [e for e in logs if e["event"] == "wake"]


def test_restart_clamps_a_backoff_stored_by_a_clock_that_ran_ahead(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A next-attempt time stored while the wall clock ran 10 h ahead: after a restart the
    wait is at most the longest backoff, not 10 h."""
    clocks = Clocks()
    worker = _outage(layout, standin, clocks, outage_backoff=30, outage_backoff_max=120)
    Store(layout).ledger.set_state({"next_attempt_at": repr(clocks.wall + 36000)}, clocks.wall)
    restarted = clocks.worker(layout, standin, batch_turns=1, outage_backoff_max=120)
    assert worker is not restarted
    assert clocks.run(restarted) == "backoff"
    clocks.mono += 121
    clocks.wall += 121
    assert clocks.run(restarted) == "curated"


def test_a_turn_open_across_a_thaw_is_not_closed_as_an_orphan(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A VM frozen for a day mid-turn: on the thaw the open turn is not closed as quiet (its
    agent was frozen too); its Stop then completes it whole. Once the orphan timeout has
    passed after the thaw, a turn that truly went quiet is closed as before."""
    clocks = Clocks()
    worker = clocks.worker(layout, standin, orphan_seconds=900)
    cap = Capture(CaptureConfig(workspace=layout.root))
    cap.handle(prompt("s", "Rename the invoices folder"))
    cap.handle(tool("s", "Bash", {"command": "mv invoices bills"}, ""))
    clocks.run(worker)
    clocks.wall += 86_400  # the thaw: the wall clock leaps, the monotonic one stood still
    clocks.mono += 1
    clocks.run(worker)
    assert q(layout.transcript_db, "SELECT count(*) FROM observations") == [(0,)]
    cap.handle(tool("s", "Read", {"file_path": "bills/a.pdf"}, "ok"))
    cap.handle(stop("s", "Renamed."))
    clocks.run(worker)
    assert q(
        layout.transcript_db,
        "SELECT count(DISTINCT observation_id), count(*) FROM events WHERE session_id = 's'",
    ) == [(1, 4)]
    cap.handle(prompt("t", "A prompt whose agent then crashed"))
    clocks.run(worker)
    clocks.wall += 901
    clocks.mono += 901
    clocks.run(worker)
    assert q(
        layout.transcript_db,
        "SELECT count(*) FROM events WHERE session_id = 't' AND observation_id IS NOT NULL",
    ) == [(1,)]
    cap.close()


def test_a_daemon_started_on_a_leapt_clock_waits_a_full_timeout_before_closing(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A daemon (re)started when its clock already reads a day ahead of the open turn's last
    event does not close it at once: only after one orphan timeout of its own watching."""
    cap = Capture(CaptureConfig(workspace=layout.root))
    cap.handle(prompt("s", "Sort the receipts"))
    cap.close()
    clocks = Clocks()
    clocks.wall += 86_400
    worker = clocks.worker(layout, standin, orphan_seconds=900)
    clocks.run(worker)
    assert q(layout.transcript_db, "SELECT count(*) FROM observations") == [(0,)]
    clocks.wall += 901
    clocks.mono += 901
    clocks.run(worker)
    assert q(layout.transcript_db, "SELECT closed_by FROM observations") == [("quiet",)]


def test_a_leap_between_start_up_and_the_first_pass_is_a_wake(
    layout: Layout, standin: BridgeStandin
) -> None:
    """The clock leaps a day after start-up but before the first pass: a wake, so an open
    turn is not closed as quiet on that pass."""
    cap = Capture(CaptureConfig(workspace=layout.root))
    cap.handle(prompt("s", "Sort the receipts"))
    cap.close()
    clocks = Clocks()
    worker = clocks.worker(layout, standin, orphan_seconds=900)
    worker.start()
    clocks.wall += 86_400
    clocks.mono += 1
    clocks.run(worker)
    assert q(layout.transcript_db, "SELECT count(*) FROM observations") == [(0,)]


def test_a_step_back_cancels_only_the_leap_it_undid(layout: Layout, standin: BridgeStandin) -> None:
    """The soak's schedule: +1 h, back 5 s later, then 17 s on a +90 s leap. The step back
    undid the hour, so it must not also cancel the +90 s credit: the turn open during the
    leap is not closed as an orphan, and its Stop completes it after the clock is right."""
    clocks = Clocks()
    worker = clocks.worker(layout, standin, orphan_seconds=20, wake_jump_seconds=30)
    config = CaptureConfig(workspace=layout.root)
    cap = Capture(config)
    clocks.run(worker)
    for wall, mono in ((3600.4, 0.4), (-3595.0, 5.0), (17.0, 17.0)):
        clocks.wall += wall
        clocks.mono += mono
        clocks.run(worker)
    assert (
        cap.write(build_event(prompt("s", "Rename the invoices"), config, clocks.wall)) == "written"
    )  # type: ignore[arg-type]
    clocks.run(worker)
    clocks.wall += 91.5  # the leap: +90 s on the wall clock, 1.5 s really
    clocks.mono += 1.5
    clocks.run(worker)
    assert q(layout.transcript_db, "SELECT count(*) FROM observations") == [(0,)]
    clocks.wall += -87.0  # the clock is right again, 3 s later
    clocks.mono += 3.0
    clocks.run(worker)
    assert cap.write(build_event(stop("s", "Renamed."), config, clocks.wall)) == "written"  # type: ignore[arg-type]
    clocks.run(worker)
    assert q(layout.transcript_db, "SELECT closed_by FROM observations") == [("stop",)]
    cap.close()
