"""Flush requests: ``wsd flush``, PreCompact and SessionEnd ask the loop to curate
everything pending now; the loop marks them handled, with why if it could not do all of it."""

from __future__ import annotations

from wsd import schema
from wsd.daemon.store.base import Databases
from wsd.schema.transcript import request_flush


class Flushes(Databases):
    """Flush request verbs (a part of :class:`~wsd.daemon.store.ledger.Store`)."""

    def request_flush(self, reason: str, now: float) -> int:
        """Ask the loop to curate everything pending now (``wsd flush``); the request's id."""
        with self._transcript() as t:
            return request_flush(t, reason, now)

    def flush_handled(self, flush_id: int) -> bool:
        """Whether the loop has handled flush request ``flush_id`` (read-only)."""
        return self.flush_outcome(flush_id)[0]

    def flush_outcome(self, flush_id: int) -> tuple[bool, str | None]:
        """(handled, what went wrong) of flush request ``flush_id`` (read-only)."""
        with self._transcript(readonly=True) as t:
            row = schema.first(
                t, "SELECT handled_at, error FROM flush_requests WHERE id = ?", (flush_id,)
            )
        if row is None or row[0] is None:
            return False, None
        return True, None if row[1] is None else str(row[1])

    def mark_flushes_handled(self, upto: int, now: float, error: str | None = None) -> None:
        """Answer every open flush request up to ``upto``; ``error`` says what failed."""
        with self._transcript() as t, schema.write_txn(t):
            t.execute(
                "UPDATE flush_requests SET handled_at = ?, error = ?"
                " WHERE id <= ? AND handled_at IS NULL",
                (now, error, upto),
            )
