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
    chars: int | None = None,
) -> list[Batch] | NoBatch:
    """Up to ``most`` consecutive batches (one for a direct call, a backlog's for one Message
    Batch), claimed in one transaction; the plan is made again only when a late event changed
    a turn between the read and the claim. ``spool_waiting``: spooled events wait unrecorded
    (a hook spooled since this pass's intake), so one of them may belong before these turns.
    ``which``: which pending turns may be taken (see :func:`wsd.daemon.store.turns.next_turns`).
    ``chars``: read no further once the batches hold this many characters of turns (the
    rest of a backlog is neither read nor claimed)."""
    shown = rendering_for(which.lane)
    turns, settling, batches = _read(store, config, now, most, which, shown, chars)
    if settling or spool_waiting:
        return NoBatch.SETTLING
    covered = store.ledger.covered(identity, [t.id for t in turns])
    if covered:  # markers lagging behind the ledger (crash between the two commits)
        store.turns.mark_processed(sorted(covered))
        return NoBatch.REMARKED
    if not batches:
        return NoBatch.GONE
    # Claimed and read again in one transaction: a late event cannot change them now.
    claimed = store.turns.claim_unchanged([t for b in batches for t in b.turns], now)
    if claimed is None:
        return batches
    if not claimed:
        return NoBatch.GONE
    return _plan(config, claimed, most, shown)


#: Batches' worth of turns read at once by a take with a character budget.
PAGE_BATCHES = 8


def _read(
    store: Store,
    config: Config,
    now: float,
    most: int,
    which: Take,
    shown: Rendering,
    chars: int | None,
) -> tuple[list[Turn], bool, list[Batch]]:
    """The pending turns ``most`` batches could hold, whether one is settling, and their
    batches. With ``chars``, read a page at a time until the batches hold that many
    characters: a 2,500-turn backlog read whole for a Message Batch that sends a third of it
    held ~25 MB more at the daemon's peak (155 MB measured, issue 45). Pages are whole
    multiples of ``batch_turns``, where :func:`_plan` cuts anyway: the same batches as one
    read of the turns they hold."""
    size = config.batch_turns
    limit = size * most
    settled_before = now - LATE_SETTLE_SECONDS
    if chars is None:
        whole, settling = store.turns.next_turns(limit, settled_before, which)
        return whole, settling, _plan(config, whole, most, shown)
    page = size * max(1, min(most, PAGE_BATCHES))
    turns: list[Turn] = []
    batches: list[Batch] = []
    while len(turns) < limit and len(batches) < most:
        after = turns[-1].id if turns else 0
        more, settling = store.turns.next_turns(page, settled_before, which, after)
        turns += more
        if settling:
            return turns, True, []
        batches += _plan(config, more, most, shown)
        if len(more) < page or _held(batches) >= chars:
            break
    kept: list[Batch] = []
    for batch in batches[:most]:  # what the budget holds, and at least one batch
        if kept and _held(kept) >= chars:
            break
        kept.append(batch)
    return [t for b in kept for t in b.turns], False, kept


def _held(batches: Sequence[Batch]) -> int:
    return sum(len(r) for b in batches for r in b.rendered)


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
