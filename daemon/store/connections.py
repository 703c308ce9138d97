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

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import apsw

from wsd import schema
from wsd.schema.layout import FollowedLayout, Layout

#: ``schema.connect`` or a stand-in with its signature (a fault seam, the rebuild's redirect).
Opener = Callable[..., apsw.Connection]


class Connections:
    """transcript.db and memory.db of one workspace, opened on demand."""

    def __init__(self, layout: Layout, opener: Opener = schema.connect) -> None:
        self.layout = layout
        self.opener = opener
        #: A session's connections, per thread: kind -> [connection, in use].
        self._local = threading.local()

    @contextmanager
    def session(self) -> Iterator[None]:
        """Everything this thread does inside shares one connection per database, opened
        when first needed and closed when the session ends: a pass of the loop opened one
        for each verb (8 to transcript.db and 13 to memory.db for one batch) and now opens
        each once, and still holds none between passes. A unit of work that starts while
        another holds the session's connection (nested) gets its own, as outside one;
        other threads never share it. A session inside a session is the outer one."""
        if getattr(self._local, "kept", None) is not None:
            yield
            return
        kept: dict[str, list[Any]] = {}
        self._local.kept = kept
        try:
            yield
        finally:
            self._local.kept = None
            for conn, _busy in kept.values():
                conn.close()

    def transcript(self, readonly: bool = False) -> AbstractContextManager[apsw.Connection]:
        """A connection to transcript.db for one unit of work, closed after it."""
        return self.open("transcript", readonly)

    def memory(self, readonly: bool = False) -> AbstractContextManager[apsw.Connection]:
        """A connection to memory.db for one unit of work, closed after it."""
        return self.open("memory", readonly)

    @contextmanager
    def open(self, kind: schema.Kind, readonly: bool = False) -> Iterator[apsw.Connection]:
        """A connection to the ``kind`` database for one unit of work, closed after it (in a
        :meth:`session`, the session's, kept open)."""
        kept: dict[str, list[Any]] | None = getattr(self._local, "kept", None)
        entry: list[Any] | None = None
        if kept is not None:
            entry = kept.get(kind)
            if entry is None:  # read-only units share it too: it sees what they would
                copy = kind == "memory" and isinstance(self.layout, FollowedLayout)
                opened = self.opener(self.path(kind), kind, readonly=True) if copy else None
                entry = kept[kind] = [opened or self.opener(self.path(kind), kind), False]
            elif entry[1]:  # in use by an enclosing unit of work: one of its own
                entry = None
        if kept is not None and entry is not None:
            entry[1] = True
            try:
                yield entry[0]
            except BaseException:
                if not entry[0].get_autocommit():  # a transaction left open: not reused
                    del kept[kind]
                    entry[0].close()
                raise
            finally:
                entry[1] = False
            return
        path = self.path(kind)
        if kind == "memory" and isinstance(self.layout, FollowedLayout):
            readonly = True  # litestream's copy: a write would fail, never land in it
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
