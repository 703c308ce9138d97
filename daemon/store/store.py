"""The one door to a workspace's two databases: :class:`Store`.

Everything the daemon reads from or writes to transcript.db and memory.db goes through one
``Store``: the loop's verbs (turns, the batch ledger, state, md revisions, pending actions,
charges, flush requests) are its methods; the rest is grouped in facets it builds with
the same connections: ``store.archive`` (the turn index, imports, ``wsd forget``),
``store.vectors`` (semantic vectors), ``store.workspace`` (file index, canvas map, the checks'
actions), ``store.maintenance`` (checkpoints, retention, integrity, backup), ``store.remote``
(Message Batches in flight) and ``store.lineage`` (what memory came from: ``wsd memory
why``). The SQL lives in a module per table family, each verb a function taking a
connection, so that verbs share a transaction where they must (a batch's actions commit
with its ledger row).

A connection is opened per unit of work and closed straight after (see
:mod:`wsd.daemon.store.connections`): a ``Store`` can be built anywhere, cheaply, and an idle
one holds no file open.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from wsd import schema
from wsd.daemon.store import actions, charges, flushes, ledger, revisions, turns
from wsd.daemon.store.archive import Archive
from wsd.daemon.store.connections import Connections, Opener
from wsd.daemon.store.lineage import Lineage
from wsd.daemon.store.maintenance import Maintenance
from wsd.daemon.store.records import (
    Backlog,
    BatchRecord,
    CommitResult,
    Revision,
    Turn,
    Uncurated,
)
from wsd.daemon.store.remote import RemoteBatches
from wsd.daemon.store.vectors import Vectors
from wsd.daemon.store.workspace import Workspace
from wsd.schema.layout import Layout
from wsd.schema.transcript import Event, close_stale_turns, record, request_flush


class Store:
    """Both databases of one workspace: every verb the daemon uses, here or on a facet."""

    def __init__(self, layout: Layout, opener: Opener = schema.connect) -> None:
        self.layout = layout
        self._db = Connections(layout, opener)
        self.archive = Archive(self._db)
        self.vectors = Vectors(self._db)
        self.workspace = Workspace(self._db)
        self.maintenance = Maintenance(self._db)
        self.remote = RemoteBatches(self._db)
        self.lineage = Lineage(self._db)

    def session(self) -> AbstractContextManager[None]:
        """One connection per database for everything this thread does inside (see
        :meth:`Connections.session`): the loop wraps each pass in one."""
        return self._db.session()

    def migrate(self) -> dict[schema.Kind, tuple[int, int]]:
        """Create/upgrade both databases; (version before, after) of each. Raises
        schema.SchemaError on a database newer than this code."""
        self.layout.ensure_system_dirs()
        out: dict[schema.Kind, tuple[int, int]] = {}
        for kind in schema.KINDS:
            with self._db.open(kind) as conn:
                out[kind] = schema.migrate(conn, kind, self._db.path(kind))
        return out

    def ready(self) -> bool:
        """True once memory.db exists at the schema version this code writes."""
        return self._db.ready()

    # -- turns (transcript.db) ----------------------------------------------------------------

    def transcript_identity(self) -> str:
        with self._db.transcript() as t:
            return schema.identity(t)

    def record_event(
        self, event: Event, via: str = "spool", refolded: list[int] | None = None
    ) -> bool:
        """Record one (spooled) event; the turns it folded again are appended to ``refolded``."""
        with self._db.transcript() as t:
            return record(t, event, via=via, refolded=refolded)

    def close_stale_turns(self, quiet_before: float) -> list[int]:
        with self._db.transcript() as t:
            return close_stale_turns(t, quiet_before)

    def backlog(self) -> Backlog:
        with self._db.transcript() as t:
            return turns.backlog(t)

    def uncurated(self, limit: int, chars: int) -> Uncurated:
        """The turns not yet curated, as the boot context tells of them (read-only; see
        :func:`turns.uncurated`)."""
        with self._db.transcript(readonly=True) as t:
            return turns.uncurated(t, limit, chars)

    def pending_turns(self, limit: int) -> list[Turn]:
        """The oldest unprocessed turns, in id order."""
        return self.next_turns(limit, float("inf"))[0]

    def next_turns(
        self, limit: int, settled_before: float, lane: str = "prompt"
    ) -> tuple[list[Turn], bool]:
        """The oldest ``limit`` unprocessed turns in id order, in one read, and whether any
        of them is still settling; ``lane`` says which (see :func:`turns.next_turns`)."""
        with self._db.transcript() as t:
            return turns.next_turns(t, limit, settled_before, lane)

    def claim_turns(self, ids: Sequence[int], now: float) -> list[Turn]:
        """Mark these turns as taken into a batch and read them, in one transaction."""
        with self._db.transcript() as t:
            return turns.claim_turns(t, ids, now)

    def turns_by_id(self, ids: Sequence[int]) -> list[Turn]:
        with self._db.transcript() as t:
            return turns.turns_by_id(t, ids)

    def turn_ids(self, settled_before: float | None = None) -> list[int]:
        """Every turn's id, oldest first (see :func:`turns.turn_ids`)."""
        with self._db.transcript() as t:
            return turns.turn_ids(t, settled_before)

    def mark_processed(self, ids: Sequence[int]) -> None:
        with self._db.transcript() as t:
            turns.mark_processed(t, ids)

    def rederive_processed(self, identity: str) -> tuple[int, int]:
        """Make the ``processed`` markers agree with the ledger; returns (set, cleared)."""
        with self._db.transcript() as t:
            return turns.rederive_processed(t, self._db.path("memory"), identity)

    # -- the ledger and state (memory.db) ----------------------------------------------------

    def get_state(self, key: str) -> str | None:
        with self._db.memory() as m:
            return ledger.get_state(m, key)

    def set_state(self, values: dict[str, str | None], now: float) -> None:
        """Set (or, for None, delete) state keys in one transaction."""
        with self._db.memory() as m, schema.write_txn(m):
            ledger.set_state(m, values, now)

    def covered(self, identity: str, ids: Sequence[int]) -> set[int]:
        with self._db.memory() as m:
            return ledger.covered(m, identity, ids)

    def commit_batch(
        self, identity: str, batch: BatchRecord, now: float, replaces: Sequence[int] = ()
    ) -> CommitResult:
        """Commit one batch and all it produced atomically (the exactly-once point; see
        :func:`ledger.commit_batch`)."""
        with self._db.memory() as m:
            return ledger.commit_batch(m, identity, batch, now, replaces)

    def batch_groups(self, identity: str) -> list[tuple[float, float, list[int]]]:
        """(started_at, finished_at, turn ids) per batch of ``identity``, in curation order."""
        with self._db.memory() as m:
            return ledger.batch_groups(m, identity)

    def parked_since(self, since: float) -> list[tuple[int, str | None]]:
        """Batches parked that ended at or after ``since``, as (batch id, error)."""
        with self._db.memory(readonly=True) as m:
            return ledger.parked_since(m, since)

    def failed_batches(self) -> list[tuple[int, list[int], str | None]]:
        """Parked batches as (batch id, turn ids, error)."""
        with self._db.memory() as m:
            return ledger.failed_batches(m)

    def stats(self) -> dict[str, Any]:
        """Ledger totals for ``wsd status``."""
        with self._db.memory() as m:
            return ledger.stats(m)

    # -- pending actions (memory.db) ---------------------------------------------------------

    def open_actions(self, limit: int = 50) -> list[tuple[int, int, str]]:
        """Open pending actions as (id, priority, content), most urgent first."""
        with self._db.memory() as m:
            return actions.open_list(m, limit)

    def list_actions(self, include_closed: bool = False) -> list[dict[str, Any]]:
        """Pending actions, most urgent first (with ``include_closed``, closed ones after)."""
        with self._db.memory() as m:
            return actions.listing(m, include_closed)

    def set_action_status(self, action_id: int, status: str, now: float) -> bool:
        """Close an open action as ``completed`` or ``dismissed``; False if none was open."""
        with self._db.memory() as m, schema.write_txn(m):
            return actions.set_status(m, action_id, status, now)

    # -- md revisions (memory.db) ------------------------------------------------------------

    def memory_identity(self) -> str:
        """The UUID memory.db carries (migration 009): a recreated one has another."""
        with self._db.memory() as m:
            return schema.identity(m)

    def latest_md(self) -> dict[str, str]:
        """The latest revision of each curated file that has one."""
        with self._db.memory() as m:
            return revisions.latest_md(m)

    def md_history(self, name: str) -> list[Revision]:
        """Every revision of one curated file, oldest first."""
        with self._db.memory() as m:
            return revisions.md_history(m, name)

    def known_revision(self, name: str, digest: str) -> int | None:
        """The newest revision of ``name`` with this sha256, if any."""
        with self._db.memory() as m:
            return revisions.known_revision(m, name, digest)

    def baseline_revision(self, name: str, since: float) -> Revision | None:
        """The version of ``name`` that erosion is measured against (see
        :func:`revisions.baseline_revision`)."""
        with self._db.memory() as m:
            return revisions.baseline_revision(m, name, since)

    def person_revisions(self, after: int = 0) -> list[tuple[Revision, str]]:
        """Every revision a person made with an id above ``after``, oldest first, each with
        the content before it (see :func:`revisions.person_revisions`)."""
        with self._db.memory() as m:
            return revisions.person_revisions(m, after)

    def add_revision(self, name: str, content: str, source: str, now: float) -> int:
        """Record a revision no batch produced (a hand edit adopted, a restore); its id."""
        with self._db.memory() as m:
            return revisions.add_revision(m, name, content, source, now)

    # -- charges (transcript.db; the batch ledger too) ---------------------------------------

    def ask_charge(self, at: float, usd: float, purpose: str) -> int:
        """Book a request about to be sent, at its estimate; the charge's id."""
        with self._db.transcript() as t:
            return charges.ask_charge(t, at, usd, purpose)

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
        """Settle a booked request (see :func:`charges.settle_charge`)."""
        with self._db.transcript() as t:
            charges.settle_charge(t, charge, status, usd, at, tokens, message_id, note)

    def booked_usd(self, charge: int) -> float | None:
        """What a booked request is counted at now (None: no such charge)."""
        with self._db.transcript(readonly=True) as t:
            return charges.booked_usd(t, charge)

    def spent_since(self, since: float) -> float:
        """What the curator's requests since ``since`` cost, in USD (the daily cap).

        The charges ledger, or the batch ledger if that says more: each is a floor of what
        was spent (a transcript.db recreated, or charges from before they were kept, leave
        only the batches; a memory.db deleted or rebuilt leaves only the charges).
        """
        with self._db.transcript(readonly=True) as t:
            charged = charges.charged_since(t, since)
        with self._db.memory(readonly=True) as m:
            batches = charges.batches_cost_since(m, since)
        return max(charged, batches)

    def charge_totals(self, since: float) -> dict[str, float]:
        """USD per charge status since ``since`` (``wsd status``, the soak's ledger check)."""
        with self._db.transcript(readonly=True) as t:
            return charges.charge_totals(t, since)

    # -- flush requests (transcript.db) ------------------------------------------------------

    def request_flush(self, reason: str, now: float) -> int:
        """Ask the loop to curate everything pending now (``wsd flush``); the request's id."""
        with self._db.transcript() as t:
            return request_flush(t, reason, now)

    def flush_handled(self, flush_id: int) -> bool:
        """Whether the loop has handled flush request ``flush_id`` (read-only)."""
        return self.flush_outcome(flush_id)[0]

    def flush_outcome(self, flush_id: int) -> tuple[bool, str | None]:
        """(handled, what went wrong) of flush request ``flush_id`` (read-only)."""
        with self._db.transcript(readonly=True) as t:
            return flushes.flush_outcome(t, flush_id)

    def answer_flushes(self, now: float, error: str | None = None) -> None:
        """Answer every open flush request whose turns are all curated; ``error`` says what
        failed."""
        with self._db.transcript() as t:
            flushes.answer_flushes(t, now, error)
