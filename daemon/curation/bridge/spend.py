"""What curation spends: prices, the meter that books every request as it happens, and the
daily cap over the booked spend (:class:`Budget`).

:class:`StoreMeter` is the :class:`~wsd.daemon.curation.bridge.client.Meter` the pipeline hands the
Bridge client, so every curator request of the loop, ``wsd retry`` and ``wsd rebuild`` lands
in the charges ledger (:mod:`wsd.daemon.store.charges`):

* before it is sent, at a floor of its input's cost (a request lost to kill -9 in flight was
  probably paid for; its characters over five are fewer tokens than the Bridge bills, so the
  settled figure only adds to it);
* when its answer arrives, before the reply is read or applied: at the answer's usage, or,
  when that usage is implausible (:func:`~wsd.daemon.curation.bridge.answer.usage_of`: one
  the request and its reply could not have cost, less as well as more), at an estimate
  (logged as ``usage_invalid``), so never below the floor;
* when no answer comes: nothing for an error status or a refused connection, the floor for a
  timeout or an abandoned call, the input and a full ``max_tokens`` answer for a 200 whose
  body could not be read.

Booking must not cost the loop its batch: a booking that fails after the answer arrived is
logged (``charge_not_booked``) and the batch goes on; the cap then still sees the batch's
cost on the ledger (:meth:`~wsd.daemon.store.charges.Charges.spent_since` takes the larger
of the two). A booking that fails before the call stops the call: nothing is spent that
could not be counted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import apsw

from wsd.daemon.curation.bridge.answer import FLOOR_CHARS_PER_TOKEN, Unanswered, Usage
from wsd.daemon.runtime.config import Config
from wsd.daemon.runtime.heartbeat import StatusFile
from wsd.daemon.store import BILLED, ESTIMATED, VOID, Store


def price(
    config: Config, input_tokens: int, output_tokens: int, cache_read: int = 0, cache_write: int = 0
) -> float:
    """USD for these tokens: Anthropic prices cache writes at 1.25x and cache reads at 0.1x
    the input price."""
    return (
        input_tokens * config.price_input
        + cache_write * config.price_input * 1.25
        + cache_read * config.price_input * 0.1
        + output_tokens * config.price_output
    ) / 1e6


def usage_price(config: Config, usage: Usage) -> float:
    return price(
        config,
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
    )


class StoreMeter:
    """Books each request in ``store``'s charges ledger (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        config: Config,
        clock: Callable[[], float],
        purpose: str = "curate",
        log: Any = None,
        *,
        factor: float = 1.0,
        expect_output: int = 0,
    ) -> None:
        self.store = store
        self.config = config
        self.clock = clock
        self.purpose = purpose
        self.log = log
        #: The price of this meter's requests beside a direct call's (a Message Batch: half).
        self.factor = factor
        #: Output tokens the estimate at submission assumes (0: the floor, input only).
        self.expect_output = expect_output
        self._floors: dict[int, float] = {}

    def ask(self, request_chars: int) -> int | None:
        floor = self.factor * price(
            self.config, request_chars // FLOOR_CHARS_PER_TOKEN, self.expect_output
        )
        ticket = self.store.charges.ask_charge(self.clock(), floor, self.purpose)
        self._floors[ticket] = floor
        return ticket

    def answered(self, ticket: int | None, usage: Usage, message_id: str) -> None:
        usd = self.factor * usage_price(self.config, usage)
        if not usage.valid and self.log is not None:
            self.log.warning("usage_invalid", reported=usage.raw, priced_usd=round(usd, 6))
        tokens = (
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens + usage.cache_write_tokens,
        )
        status = BILLED if usage.valid else ESTIMATED
        note = None if usage.valid else f"usage reported: {usage.raw}"[:300]
        self._settle(ticket, status, usd, tokens, message_id, note)

    def unanswered(self, ticket: int | None, how: Unanswered) -> None:
        floor = self._floors.get(ticket or 0)
        if floor is None and ticket is not None and how != "void":
            # Booked by an earlier process (a Message Batch outlives a restart): its estimate
            # as booked, not nothing.
            floor = self.store.charges.booked_usd(ticket)
        floor = floor or 0.0
        if how == "void":
            self._settle(ticket, VOID, 0.0, note="refused by the Bridge: not billed")
        elif how == "unreadable":
            full = floor + self.factor * price(self.config, 0, self.config.max_tokens)
            self._settle(ticket, ESTIMATED, full, note="answer unreadable: a full answer assumed")
        else:
            self._settle(ticket, ESTIMATED, floor, note="no answer came (timeout, reset, stop)")

    def _settle(
        self,
        ticket: int | None,
        status: str,
        usd: float,
        tokens: tuple[int, int, int] = (0, 0, 0),
        message_id: str | None = None,
        note: str | None = None,
    ) -> None:
        if ticket is None:
            return
        self._floors.pop(ticket, None)
        try:
            self.store.charges.settle_charge(
                ticket, status, usd, self.clock(), tokens, message_id or None, note
            )
        except (apsw.Error, OSError) as exc:
            if self.log is not None:
                self.log.warning("charge_not_booked", charge=ticket, usd=usd, error=str(exc))


class Budget:
    """The daily spend cap: no curator call once the UTC day's cost reaches ``cap``.

    Read from the ledgers (charges booked before each call, the cost of every batch finished
    today), never below what was seen earlier that day (the heartbeat keeps it across a
    restore from a backup); ``cap`` 0 turns the cap off.
    """

    def __init__(self, store: Store, cap: float) -> None:
        self.store = store
        self.cap = cap
        self.spent = 0.0
        #: The UTC day the cap was last reached on, while it still holds.
        self.reached_on: int | None = None
        #: (UTC day, spent) as last seen, kept in the heartbeat file: restoring transcript.db
        #: and memory.db from a backup takes the day's charges back with them (a new user's
        #: restore took $0.0098 down to $0.0044), and the day's spend must never go down.
        self.floor: tuple[int, float] = (-1, 0.0)

    def remember(self, seen: object, paused: object = None) -> None:
        """What the previous process's heartbeat said: the floor from ``spent_today``
        ({"day", "usd"}), and whether curation was paused by the cap (``budget``, with
        ``resumes_at``), so a restart with a higher cap logs ``budget_resumed`` (it logged
        nothing). Anything else (missing, damaged, not a finite amount) is ignored."""
        if isinstance(seen, dict):
            day, usd = seen.get("day"), seen.get("usd")
            if isinstance(day, int) and isinstance(usd, int | float) and 0 <= usd <= 1e6:
                self.floor = (day, float(usd))
        resumes = paused.get("resumes_at") if isinstance(paused, dict) else None
        if isinstance(resumes, int | float) and 0 < resumes < 1e11:
            self.reached_on = int(resumes // 86400) - 1

    def spent_today(self, now: float) -> float:
        """The UTC day's spend: the ledgers', never less than was seen earlier that day."""
        day = int(now // 86400)
        spent = self.store.charges.spent_since(day * 86400.0)
        if self.floor[0] == day:
            spent = max(spent, self.floor[1])
        self.floor = (day, spent)
        return spent

    def exhausted(self, now: float) -> bool:
        """True if today's curator cost has reached the cap (``now``: wall clock)."""
        if self.cap <= 0:
            return False
        self.spent = self.spent_today(now)
        return self.spent >= self.cap

    @staticmethod
    def resumes_at(now: float) -> float:
        """When a cap reached at ``now`` stops holding: the next UTC midnight."""
        return (int(now // 86400) + 1) * 86400.0


def budget(log: Any, status: StatusFile, cap: Budget, exhausted: bool, now: float) -> None:
    """One line when the daily cap is reached, one when curation resumes; the heartbeat
    says so meanwhile (``wsd status``; its state is the pass's, ``budget``)."""
    day = int(now // 86400)
    if exhausted and cap.reached_on != day:
        cap.reached_on = day
        resumes = cap.resumes_at(now)
        log.warning(
            "budget_reached", spent_usd=round(cap.spent, 6), cap_usd=cap.cap, resumes_at=resumes
        )
        status.update(
            budget={"spent_usd": round(cap.spent, 6), "cap_usd": cap.cap, "resumes_at": resumes}
        )
    elif not exhausted and cap.reached_on is not None:
        cap.reached_on = None
        log.info("budget_resumed", spent_usd=round(cap.spent, 6), cap_usd=cap.cap)
        status.update(budget=None)
