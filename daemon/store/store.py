"""The one door to a workspace's two databases: :class:`Store`.

Everything the daemon reads from or writes to transcript.db and memory.db goes through one
``Store``. It keeps what spans both databases and its lifecycle (migrating them, whether they
are ready, which files they are, a session of connections); every other verb is on one of the
facets it builds with the same connections, each defined at the end of its table module:
``store.turns`` (the turns waiting, claiming them), ``store.ledger`` (the batch ledger and
state), ``store.actions`` (pending actions), ``store.revisions`` (md revisions),
``store.charges`` (what the Bridge cost), ``store.flushes`` (flush requests), ``store.archive``
(the turn index), ``store.learnings`` (``wsd import``, ``wsd forget``, the learnings a new
session and the curator are shown), ``store.vectors`` (semantic vectors), ``store.workspace``
(file index, canvas map, the checks' actions), ``store.maintenance`` (checkpoints, retention,
integrity, backup), ``store.message_batches`` (Message Batches in flight), ``store.lineage``
(what memory came from: ``wsd memory why``), ``store.erasure`` (``wsd forget``: every copy of
some words, and erasing them), ``store.transfer`` (``wsd import`` and ``wsd export``) and
``store.machines`` (one memory on many machines: SPEC.md section 11). The SQL lives in a
module per table family, each verb a function taking a connection, so that verbs
share a transaction where they must (a batch's actions commit with its ledger row).

A connection is opened per unit of work and closed straight after (see
:mod:`wsd.daemon.store.connections`): a ``Store`` can be built anywhere, cheaply, and an idle
one holds no file open.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from wsd import schema
from wsd.daemon.store import turns
from wsd.daemon.store.actions import Actions
from wsd.daemon.store.archive import Archive
from wsd.daemon.store.charges import Charges
from wsd.daemon.store.connections import Connections, Opener
from wsd.daemon.store.erasure import Erasure
from wsd.daemon.store.flushes import Flushes
from wsd.daemon.store.learnings import Learnings
from wsd.daemon.store.ledger import Ledger
from wsd.daemon.store.lineage import Lineage
from wsd.daemon.store.machines import Machines
from wsd.daemon.store.maintenance import Maintenance
from wsd.daemon.store.message_batches import MessageBatches
from wsd.daemon.store.revisions import Revisions
from wsd.daemon.store.transfer import Transfer
from wsd.daemon.store.turns import Turns
from wsd.daemon.store.vectors import Vectors
from wsd.daemon.store.workspace import Workspace
from wsd.schema.layout import Layout


class Store:
    """Both databases of one workspace: every verb the daemon uses, on a facet or (when it
    spans both databases, or is the store's lifecycle) here."""

    def __init__(self, layout: Layout, opener: Opener = schema.connect) -> None:
        self.layout = layout
        self._db = Connections(layout, opener)
        self.turns = Turns(self._db)
        self.ledger = Ledger(self._db)
        self.actions = Actions(self._db)
        self.revisions = Revisions(self._db)
        self.charges = Charges(self._db)
        self.flushes = Flushes(self._db)
        self.archive = Archive(self._db)
        self.learnings = Learnings(self._db)
        self.vectors = Vectors(self._db)
        self.workspace = Workspace(self._db)
        self.maintenance = Maintenance(self._db)
        self.message_batches = MessageBatches(self._db)
        self.lineage = Lineage(self._db)
        self.erasure = Erasure(self._db)
        self.transfer = Transfer(self._db)
        self.machines = Machines(self._db)

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

    # -- which databases these are (transcript.db, memory.db) --------------------------------

    def transcript_identity(self) -> str:
        """The UUID transcript.db carries: a recreated one has another."""
        with self._db.transcript() as t:
            return schema.identity(t)

    def memory_identity(self) -> str:
        """The UUID memory.db carries (migration 009): a recreated one has another."""
        with self._db.memory() as m:
            return schema.identity(m)

    # -- both databases --------------------------------------------------------------------

    def rederive_processed(self, identity: str) -> tuple[int, int]:
        """Make the ``processed`` markers of transcript.db agree with memory.db's ledger;
        returns (set, cleared)."""
        with self._db.transcript() as t:
            return turns.rederive_processed(t, self._db.path("memory"), identity)
