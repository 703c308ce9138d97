"""Connections to a workspace's two databases, for the store's classes only.

Connections are opened per unit of work and closed straight after: an idle daemon holds no
database file open (CRIU cannot checkpoint a process holding file locks, and an open read
snapshot stops WAL checkpoints on the agent's database). Writes use ``BEGIN IMMEDIATE``
through :func:`wsd.schema.write_txn`. The context managers are protected: code outside
``daemon/store`` gets verbs, never a connection (an import-contract test holds it so).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import apsw

from wsd import schema
from wsd.schema.layout import Layout

#: ``schema.connect`` or a stand-in with its signature (a fault seam, the rebuild's redirect).
Opener = Callable[..., apsw.Connection]


class Databases:
    """transcript.db and memory.db of one workspace, opened on demand."""

    def __init__(self, layout: Layout, opener: Opener = schema.connect) -> None:
        self.layout = layout
        self.opener = opener

    @contextmanager
    def _transcript(self, readonly: bool = False) -> Iterator[apsw.Connection]:
        conn = (
            self.opener(self.layout.transcript_db, "transcript", readonly=True)
            if readonly
            else self.opener(self.layout.transcript_db, "transcript")
        )
        try:
            yield conn
        finally:
            conn.close()

    @contextmanager
    def _memory(self, readonly: bool = False) -> Iterator[apsw.Connection]:
        conn = (
            self.opener(self.layout.memory_db, "memory", readonly=True)
            if readonly
            else self.opener(self.layout.memory_db, "memory")
        )
        try:
            yield conn
        finally:
            conn.close()

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
