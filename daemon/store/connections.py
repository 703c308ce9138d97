"""Connections to a workspace's two databases: how the store gets in, and nothing else does.

Connections are opened per unit of work and closed straight after: an idle daemon holds no
database file open (CRIU cannot checkpoint a process holding file locks, and an open read
snapshot stops WAL checkpoints on the agent's database). Writes use ``BEGIN IMMEDIATE``
through :func:`wsd.schema.write_txn`; the pragmas come from :func:`wsd.schema.connect`, or
from a stand-in with its signature. Only :class:`~wsd.daemon.store.store.Store` and the
facets it builds hold a :class:`Connections`: code outside ``daemon/store`` gets verbs,
never a connection (an import-contract test holds it so).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

import apsw

from wsd import schema
from wsd.schema.layout import Layout

#: ``schema.connect`` or a stand-in with its signature (a fault seam, the rebuild's redirect).
Opener = Callable[..., apsw.Connection]


class Connections:
    """transcript.db and memory.db of one workspace, opened on demand."""

    def __init__(self, layout: Layout, opener: Opener = schema.connect) -> None:
        self.layout = layout
        self.opener = opener

    def transcript(self, readonly: bool = False) -> AbstractContextManager[apsw.Connection]:
        """A connection to transcript.db for one unit of work, closed after it."""
        return self.open("transcript", readonly)

    def memory(self, readonly: bool = False) -> AbstractContextManager[apsw.Connection]:
        """A connection to memory.db for one unit of work, closed after it."""
        return self.open("memory", readonly)

    @contextmanager
    def open(self, kind: schema.Kind, readonly: bool = False) -> Iterator[apsw.Connection]:
        """A connection to the ``kind`` database for one unit of work, closed after it."""
        path = self.path(kind)
        conn = self.opener(path, kind, readonly=True) if readonly else self.opener(path, kind)
        try:
            yield conn
        finally:
            conn.close()

    def path(self, kind: schema.Kind) -> str:
        """Where the ``kind`` database lives (as the opener is asked for it)."""
        return self.layout.transcript_db if kind == "transcript" else self.layout.memory_db

    def ready(self) -> bool:
        """True once memory.db exists at the schema version this code writes."""
        try:
            conn = self.opener(self.layout.memory_db, "memory", create=False)
            try:
                return schema.user_version(conn) >= schema.latest_version("memory")
            finally:
                conn.close()
        except apsw.Error:  # missing, being created, locked: not yet
            return False
