"""When the loop curates, and which turns (so which lane) the next call takes.

* :func:`trigger`: a flush request whose turns are not all curated yet, a full batch
  (``WSD_BATCH_TURNS``), or turns that have waited ``WSD_IDLE_SECONDS`` while every session
  was quiet for ``WSD_QUIET_SECONDS``.
* :func:`choose`: a :class:`~wsd.daemon.store.Take`, which pending turns the call takes,
  and so its lane: ``NEW`` (the economy lane: a Message Batch at half price, the default),
  ``URGENT`` (the prompt lane, taking the turns in flight too: PreCompact and ``wsd flush``
  want them in memory now, and the economy result that follows is discarded as covered; the
  turns closed after the flush was asked for go the way they would have gone without it),
  ``FREE`` (the prompt lane, for the turns not in flight: ``WSD_CURATION=prompt`` or a
  Bridge without batches), or ``RELEASED`` (the prompt lane, for the turns the economy lane
  released, and only those).
"""

from __future__ import annotations

from typing import Protocol

from wsd.daemon.runtime.config import Config
from wsd.daemon.store import Backlog, Take


class EconomyLane(Protocol):
    """What :func:`choose` asks of the economy lane."""

    def usable(self, now: float) -> bool: ...

    def released_pending(self) -> bool: ...


def trigger(config: Config, backlog: Backlog, now: float) -> str | None:
    """Why to curate now (``flush``, ``threshold``, ``idle``), or None: wait."""
    if backlog.waiting_flush is not None:
        return "flush"
    if backlog.pending >= config.batch_turns:
        return "threshold"
    last = backlog.last_activity_ts
    quiet = last is None or now - last >= config.quiet_seconds
    oldest = backlog.oldest_ts
    if oldest is not None and now - oldest >= config.idle_seconds and quiet:
        return "idle"
    return None


def choose(backlog: Backlog, reason: str, economy: EconomyLane, now: float) -> Take:
    """Which turns the next call takes (see the module docstring)."""
    if reason == "flush" and backlog.urgent_flush is not None:
        return Take.URGENT
    if not economy.usable(now):
        return Take.FREE
    if economy.released_pending():
        return Take.RELEASED
    return Take.NEW
