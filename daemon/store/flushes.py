"""Flush requests: ``wsd flush``, PreCompact and SessionEnd ask the loop to curate
everything pending now; the loop marks them handled, with why if it could not do all of it.
Each verb takes an open transcript.db connection. (Requests are made through
:func:`wsd.schema.transcript.request_flush`, which the hooks share.)"""

from __future__ import annotations

import apsw

from wsd import schema


def flush_outcome(t: apsw.Connection, flush_id: int) -> tuple[bool, str | None]:
    """(handled, what went wrong) of flush request ``flush_id``."""
    row = schema.first(t, "SELECT handled_at, error FROM flush_requests WHERE id = ?", (flush_id,))
    if row is None or row[0] is None:
        return False, None
    return True, None if row[1] is None else str(row[1])


def mark_flushes_handled(t: apsw.Connection, upto: int, now: float, error: str | None) -> None:
    """Answer every open flush request up to ``upto``; ``error`` says what failed."""
    with schema.write_txn(t):
        t.execute(
            "UPDATE flush_requests SET handled_at = ?, error = ?"
            " WHERE id <= ? AND handled_at IS NULL",
            (now, error, upto),
        )
