"""Taking turns for the next call: settled, checked against the ledger, planned and claimed,
once per pass (one read of the pending turns, one plan, one claiming transaction)."""

from __future__ import annotations

from collections.abc import Sequence

from wsd.daemon.curation.request.batch import LATE_SETTLE_SECONDS, Batch, NoBatch, plan
from wsd.daemon.curation.request.rendering import Rendering, rendering_for
from wsd.daemon.runtime.config import Config
from wsd.daemon.store import Store, Take, Turn


def take(
    store: Store,
    config: Config,
    identity: str,
    now: float,
    spool_waiting: bool,
    most: int = 1,
    which: Take = Take.URGENT,
) -> list[Batch] | NoBatch:
    """Up to ``most`` consecutive batches (one for a direct call, a backlog's for one Message
    Batch), claimed in one transaction; the plan is made again only when a late event changed
    a turn between the read and the claim. ``spool_waiting``: spooled events wait unrecorded
    (a hook spooled since this pass's intake), so one of them may belong before these turns.
    ``which``: which pending turns may be taken (see :func:`wsd.daemon.store.turns.next_turns`)."""
    size = config.batch_turns
    turns, settling = store.turns.next_turns(size * most, now - LATE_SETTLE_SECONDS, which)
    if settling or spool_waiting:
        return NoBatch.SETTLING
    covered = store.ledger.covered(identity, [t.id for t in turns])
    if covered:  # markers lagging behind the ledger (crash between the two commits)
        store.turns.mark_processed(sorted(covered))
        return NoBatch.REMARKED
    shown = rendering_for(which.lane)
    batches = _plan(config, turns, most, shown)
    if not batches:
        return NoBatch.GONE
    # Claimed and read again in one transaction: a late event cannot change them now.
    claimed = store.turns.claim_turns([t.id for b in batches for t in b.turns], now)
    if not claimed:
        return NoBatch.GONE
    if claimed == [t for b in batches for t in b.turns]:
        return batches
    return _plan(config, claimed, most, shown)


def _plan(config: Config, turns: Sequence[Turn], most: int, shown: Rendering) -> list[Batch]:
    """``turns`` cut into at most ``most`` batches of ``batch_turns`` turns and
    ``batch_chars`` characters at most."""
    size = config.batch_turns
    out: list[Batch] = []
    for start in range(0, len(turns), size):
        out += plan(turns[start : start + size], config.batch_chars, shown)
        if len(out) >= most:
            break
    return out[:most]
