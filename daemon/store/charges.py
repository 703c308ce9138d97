"""The charges ledger: what each curator request to the Bridge cost, booked as it happens.

Kept in transcript.db (see ``schema/sql/transcript/004_charges.sql`` for why), one row per
HTTP request: booked before it is sent at an estimate, settled by the answer's usage as soon
as it arrives. The daily spend cap reads :meth:`Charges.spent_since`.
Each verb takes an open connection (transcript.db unless it says otherwise); the
:class:`Charges` facet at the end (``store.charges``) opens them.
"""

from __future__ import annotations

import apsw

from wsd import schema
from wsd.daemon.store.verbs import Facet, reads, uses

#: A charge row's states (see the migration).
ASKED, BILLED, ESTIMATED, VOID = "asked", "billed", "estimated", "void"


def ask_charge(t: apsw.Connection, at: float, usd: float, purpose: str) -> int:
    """Book a request about to be sent, at its estimate; the charge's id."""
    with schema.write_txn(t):
        t.execute(
            "INSERT INTO charges (asked_at, status, usd, purpose) VALUES (?, ?, ?, ?)",
            (at, ASKED, max(0.0, usd), purpose),
        )
        return int(t.last_insert_rowid())


def settle_charge(
    t: apsw.Connection,
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
    with schema.write_txn(t):
        t.execute(
            "UPDATE charges SET status = ?, usd = ?, answered_at = ?, input_tokens = ?,"
            " output_tokens = ?, cache_tokens = ?, message_id = ?, note = ? WHERE id = ?",
            (status, max(0.0, usd), at, *tokens, message_id, note, charge),
        )


def booked_usd(t: apsw.Connection, charge: int) -> float | None:
    """What charge ``charge`` is booked at now (None: no such charge)."""
    row = schema.first(t, "SELECT usd FROM charges WHERE id = ?", (charge,))
    return None if row is None else float(row[0])


def charged_since(t: apsw.Connection, since: float) -> float:
    """What the charges ledger booked since ``since``, in USD."""
    (charged,) = schema.one(
        t, "SELECT coalesce(sum(usd), 0) FROM charges WHERE asked_at >= ?", (since,)
    )
    return float(charged)


def batches_cost_since(m: apsw.Connection, since: float) -> float:
    """What the batch ledger (memory.db) says its batches since ``since`` cost, in USD."""
    (batches,) = schema.one(
        m, "SELECT coalesce(sum(cost_usd), 0) FROM batches WHERE finished_at >= ?", (since,)
    )
    return float(batches)


def charge_totals(t: apsw.Connection, since: float) -> dict[str, float]:
    """USD per charge status since ``since`` (``wsd status``, the soak's ledger check)."""
    rows = schema.rows(
        t, "SELECT status, sum(usd) FROM charges WHERE asked_at >= ? GROUP BY status", (since,)
    )
    return {str(status): float(usd) for status, usd in rows}


def newest_charge(t: apsw.Connection) -> int:
    """The newest charge's id (0: none): a call asked for since changes it."""
    return int(schema.one(t, "SELECT coalesce(max(id), 0) FROM charges")[0])


class Charges(Facet):
    """The charges ledger and the daily cap's reading of it (``store.charges``)."""

    ask_charge = uses("transcript", ask_charge)
    settle_charge = uses("transcript", settle_charge)
    booked_usd = reads("transcript", booked_usd)

    newest_id = reads("transcript", newest_charge)

    def spent_since(self, since: float) -> float:
        """What the curator's requests since ``since`` cost, in USD (the daily cap).

        The charges ledger, or the batch ledger if that says more: each is a floor of what
        was spent (a transcript.db recreated, or charges from before they were kept, leave
        only the batches; a memory.db deleted or rebuilt leaves only the charges).
        """
        with self._db.transcript(readonly=True) as t:
            charged = charged_since(t, since)
        with self._db.memory(readonly=True) as m:
            batches = batches_cost_since(m, since)
        return max(charged, batches)

    charge_totals = reads("transcript", charge_totals)
