"""The charges ledger: what each curator request to the Bridge cost, booked as it happens.

Kept in transcript.db (see ``schema/sql/transcript/004_charges.sql`` for why), one row per
HTTP request: booked before it is sent at an estimate, settled by the answer's usage as soon
as it arrives. The daily spend cap reads :meth:`Charges.spent_since`.
"""

from __future__ import annotations

from wsd import schema
from wsd.daemon.store.base import Databases

#: A charge row's states (see the migration).
ASKED, BILLED, ESTIMATED, VOID = "asked", "billed", "estimated", "void"


class Charges(Databases):
    """Charge verbs (a part of :class:`~wsd.daemon.store.ledger.Store`)."""

    def ask_charge(self, at: float, usd: float, purpose: str) -> int:
        """Book a request about to be sent, at its estimate; the charge's id."""
        with self._transcript() as t, schema.write_txn(t):
            t.execute(
                "INSERT INTO charges (asked_at, status, usd, purpose) VALUES (?, ?, ?, ?)",
                (at, ASKED, max(0.0, usd), purpose),
            )
            return int(t.last_insert_rowid())

    def settle_charge(
        self,
        charge: int,
        status: str,
        usd: float,
        at: float | None = None,
        tokens: tuple[int, int, int] = (0, 0, 0),
        message_id: str | None = None,
        note: str | None = None,
    ) -> None:
        """Settle a booked request: ``billed`` at the answer's usage, ``estimated`` (kept at
        ``usd``, an estimate), or ``void`` (nothing was billed). ``tokens`` is (input,
        output, cache read + write)."""
        with self._transcript() as t, schema.write_txn(t):
            t.execute(
                "UPDATE charges SET status = ?, usd = ?, answered_at = ?, input_tokens = ?,"
                " output_tokens = ?, cache_tokens = ?, message_id = ?, note = ? WHERE id = ?",
                (status, max(0.0, usd), at, *tokens, message_id, note, charge),
            )

    def spent_since(self, since: float) -> float:
        """What the curator's requests since ``since`` cost, in USD (the daily cap).

        The charges ledger, or the batch ledger if that says more: each is a floor of what
        was spent (a transcript.db recreated, or charges from before they were kept, leave
        only the batches; a memory.db deleted or rebuilt leaves only the charges).
        """
        with self._transcript(readonly=True) as t:
            (charged,) = schema.one(
                t, "SELECT coalesce(sum(usd), 0) FROM charges WHERE asked_at >= ?", (since,)
            )
        with self._memory(readonly=True) as m:
            (batches,) = schema.one(
                m,
                "SELECT coalesce(sum(cost_usd), 0) FROM batches WHERE finished_at >= ?",
                (since,),
            )
        return max(float(charged), float(batches))

    def charge_totals(self, since: float) -> dict[str, float]:
        """USD per charge status since ``since`` (``wsd status``, the soak's ledger check)."""
        with self._transcript(readonly=True) as t:
            rows = schema.rows(
                t,
                "SELECT status, sum(usd) FROM charges WHERE asked_at >= ? GROUP BY status",
                (since,),
            )
        return {str(status): float(usd) for status, usd in rows}
