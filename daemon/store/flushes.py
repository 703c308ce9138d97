"""Flush requests: ``wsd flush``, PreCompact and SessionEnd ask the loop to curate
everything pending now; the loop marks them handled, with why if it could not do all of it.
Each verb takes an open transcript.db connection (the :class:`Flushes` facet at the end,
``store.flushes``, opens one per call). (Requests are made through
:func:`wsd.schema.transcript.request_flush`, which the hooks share.)"""

from __future__ import annotations

import apsw

from wsd import schema
from wsd.daemon.store.verbs import Facet, reads, uses
from wsd.schema.transcript import request_flush


def flush_outcome(t: apsw.Connection, flush_id: int) -> tuple[bool, str | None]:
    """(handled, what went wrong) of flush request ``flush_id``."""
    row = schema.first(t, "SELECT handled_at, error FROM flush_requests WHERE id = ?", (flush_id,))
    if row is None or row[0] is None:
        return False, None
    return True, None if row[1] is None else str(row[1])


#: An open flush request still waits while a turn that closed before it was asked for is not
#: curated (by its time, or by its id: a clock stepped back gave an older turn a later time);
#: turns closed after it are the next trigger's (threshold, idle, a later flush).
WAITS_ON_TURNS = (
    "EXISTS (SELECT 1 FROM observations o WHERE o.processed = 0"
    " AND (o.timestamp <= f.ts OR o.id <= f.upto_turn))"
)


def answer_flushes(t: apsw.Connection, now: float, error: str | None = None) -> None:
    """Answer every open flush request whose turns are all curated (or parked: ``error`` says
    so). Answered by its own turns, never by an empty backlog: under steady writing the
    backlog may never be empty, and ``wsd flush --wait`` waited it out."""
    with schema.write_txn(t):
        t.execute(
            "UPDATE flush_requests AS f SET handled_at = ?, error = ?"
            f" WHERE f.handled_at IS NULL AND NOT {WAITS_ON_TURNS}",
            (now, error),
        )


class Flushes(Facet):
    """Flush requests (``store.flushes``): asked by ``wsd flush``, answered by the loop."""

    request_flush = uses("transcript", request_flush)

    flush_outcome = reads("transcript", flush_outcome)
    answer_flushes = uses("transcript", answer_flushes)
