"""Backoff deadlines live on the monotonic clock and a wall-clock jump either way is a wake
(issue 13, item 8): a clock set back during an outage never keeps a healthy Bridge waiting."""

from __future__ import annotations

import time

from structlog.testing import capture_logs

from tests.conftest import flush, make_worker, write_turns
from tests.conftest import query as q
from wsd.daemon.curation.worker import Worker
from wsd.daemon.standin.bridge import BridgeStandin, Fault
from wsd.daemon.store.ledger import Store
from wsd.schema.layout import Layout


class Clocks:
    """A wall clock and a monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.wall = time.time()
        self.mono = 5000.0

    def attach(self, worker: Worker) -> Worker:
        worker.clock, worker.monotonic = (lambda: self.wall), (lambda: self.mono)
        return worker

    def run(self, worker: Worker) -> str:
        return str(worker.run_once(self.wall).action)


def _outage(layout: Layout, standin: BridgeStandin, clocks: Clocks, **config: float) -> Worker:
    """A worker that has just entered backoff after the Bridge failed; the Bridge is healthy
    from now on."""
    worker = clocks.attach(make_worker(layout, standin, batch_turns=1, retry_attempts=1, **config))
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
    Store(layout).set_state({"next_attempt_at": repr(clocks.wall + 36000)}, clocks.wall)
    restarted = clocks.attach(make_worker(layout, standin, batch_turns=1, outage_backoff_max=120))
    assert worker is not restarted
    assert clocks.run(restarted) == "backoff"
    clocks.mono += 121
    clocks.wall += 121
    assert clocks.run(restarted) == "curated"
