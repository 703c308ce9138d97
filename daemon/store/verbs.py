"""How a facet's verb is written once: a table module's function of a connection, made a
method of its facet by :class:`Verb` (no hand-written pass-through: the function's own
signature and docstring are the method's).

``reads("memory", open_list)`` opens memory.db read-only for each call, ``uses(...)`` opens
it read-write (the function writes inside its own transaction, or reads what only a writer
may), ``writes(...)`` also wraps the call in one ``BEGIN IMMEDIATE`` transaction. Inside a
store session (:meth:`Connections.session`) the session's connection is used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from wsd import schema
from wsd.daemon.store.connections import Connections

P = ParamSpec("P")
R = TypeVar("R")


class Facet:
    """A family of verbs on the store's connections (``store.turns``, ``store.ledger``...)."""

    def __init__(self, db: Connections) -> None:
        self._db = db


class Verb(Generic[P, R]):
    """``fn`` run on a connection to the ``kind`` database opened for the call (see the
    module docstring)."""

    def __init__(
        self,
        kind: schema.Kind,
        fn: Callable[Concatenate[Any, P], R],
        *,
        readonly: bool = False,
        transaction: bool = False,
    ) -> None:
        self.kind: schema.Kind = kind
        self.fn = fn
        self.readonly = readonly
        self.transaction = transaction
        self.__doc__ = fn.__doc__
        self.name = fn.__name__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, facet: None, owner: type | None = None) -> Verb[P, R]: ...

    @overload
    def __get__(self, facet: Facet, owner: type | None = None) -> Callable[P, R]: ...

    def __get__(
        self, facet: Facet | None, owner: type | None = None
    ) -> Verb[P, R] | Callable[P, R]:
        if facet is None:
            return self
        db: Connections = facet._db
        fn, kind, readonly, transaction = self.fn, self.kind, self.readonly, self.transaction

        def verb(*args: P.args, **kwargs: P.kwargs) -> R:
            with db.open(kind, readonly) as conn:
                if not transaction:
                    return fn(conn, *args, **kwargs)
                with schema.write_txn(conn):
                    return fn(conn, *args, **kwargs)

        verb.__name__ = self.name
        verb.__doc__ = self.__doc__
        return verb


def reads(kind: schema.Kind, fn: Callable[Concatenate[Any, P], R]) -> Verb[P, R]:
    """``fn`` on a read-only connection to ``kind``."""
    return Verb(kind, fn, readonly=True)


def uses(kind: schema.Kind, fn: Callable[Concatenate[Any, P], R]) -> Verb[P, R]:
    """``fn`` on a read-write connection to ``kind`` (it takes its own transactions)."""
    return Verb(kind, fn)


def writes(kind: schema.Kind, fn: Callable[Concatenate[Any, P], R]) -> Verb[P, R]:
    """``fn`` in one write transaction on ``kind``."""
    return Verb(kind, fn, transaction=True)
