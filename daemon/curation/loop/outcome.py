"""What one pass of the loop did: the worker returns a :class:`PassResult` from each
``run_once``, and the work done after a pass (the embedding step) reads it; the heartbeat's
state is written from it (:data:`STATE_AFTER`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from wsd.daemon.runtime.heartbeat import State


class Step(StrEnum):
    """What one pass did."""

    IDLE = "idle"  # nothing pending (maintenance may have run)
    PAUSED = "paused"  # a `wsd rebuild` holds memory.db
    VERSION_CHANGED = "version_changed"  # .os/VERSION changed: stopping for a restart
    BACKOFF = "backoff"  # the Bridge failed recently: waiting out the backoff
    BUDGET = "budget"  # today's curator spend reached WSD_DAILY_BUDGET_USD: turns wait
    WAITING = "waiting"  # turns pending, no trigger yet (threshold, flush, idle)
    REMARKED = "remarked"  # markers caught up with the ledger (after a crash)
    SUBMITTED = "submitted"  # batches went to the economy lane as one Message Batch
    AWAITING = "awaiting"  # turns wait for an economy result in flight
    CURATED = "curated"  # a batch committed (parts may have been parked)
    PARKED = "parked"  # the batch failed for good and was parked
    STOPPED = "stopped"  # stop requested during the call: the batch was abandoned
    ERROR = "error"  # the pass raised (logged, rate-limited)


@dataclass
class PassResult:
    """What one ``run_once`` did; ``more`` means call again without waiting."""

    action: Step
    more: bool = False
    batches: list[int] = field(default_factory=list)


#: The heartbeat's state after a pass that did this; a step not here leaves the state as it
#: was (the process is stopping, or the next pass decides at once).
STATE_AFTER: dict[Step, State] = {
    Step.IDLE: State.IDLE,
    Step.PAUSED: State.PAUSED,
    Step.BACKOFF: State.BACKOFF,
    Step.BUDGET: State.BUDGET,
    Step.WAITING: State.IDLE,
    Step.SUBMITTED: State.AWAITING,
    Step.AWAITING: State.AWAITING,
    Step.CURATED: State.IDLE,
    Step.PARKED: State.IDLE,
    Step.ERROR: State.FAILING,
}
