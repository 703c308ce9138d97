"""Every SQL verb the daemon uses, behind one door: this package.

Code outside ``daemon/store/`` imports only from here (``from wsd.daemon.store import
Store``), never one of its modules (tests/test_architecture.py holds it so). It builds a
:class:`Store` and calls verbs on it or on its facets (``store.turns``, ``store.ledger``,
``store.archive``, ...: see :mod:`wsd.daemon.store.store`); the other names here are the
records those verbs take and return, their constants, and a few pure functions of data.
Nothing else in the daemon holds SQL or opens a connection, except the read-only queries of
memory.search.

(The store's own modules import each other by module, never from here: this file imports
them.)
"""

from wsd.daemon.store.actions import ActionRequest

# Pure functions of the rows they are given, exported as such: the text the turn index
# stores for a turn (search's tail ranks the turns not indexed yet as the index would).
from wsd.daemon.store.archive import INDEX_BATCH, as_turns, turn_text
from wsd.daemon.store.charges import BILLED, ESTIMATED, VOID
from wsd.daemon.store.claude_mem import ForeignError, claude_mem_rows
from wsd.daemon.store.connections import Opener

# Records, with the pure functions of data that name or key them (the curator's guards key a
# learning as the ledger does; files are hashed as their revisions are).
from wsd.daemon.store.erasure import TRANSCRIPT_KINDS, Asked, Found, Items, Marks, Scope, path_words
from wsd.daemon.store.lineage import BatchTrace, LearningTrace, SourceTurn
from wsd.daemon.store.machines import PERSON_FILES, CopiedTurn
from wsd.daemon.store.machines import only as only_marks

# What made each database and the operator's remedy for one missing or without a schema: a
# constant and a pure function of two strings (doctor, status and the CLI say them).
from wsd.daemon.store.maintenance import MADE_BY, Maintenance, remedies, remedy
from wsd.daemon.store.message_batches import APPLIED, COVERED, RELEASED, BatchRequest, MessageBatch

# The database ``wsd rebuild`` builds beside memory.db and swaps in: functions of the
# workspace's Layout, not verbs on a connection.
from wsd.daemon.store.rebuild import (
    MemoryReplaced,
    aside_path,
    finish,
    leftovers,
    open_aside,
    remove,
    swap,
)
from wsd.daemon.store.records import (
    LEARNING_TYPES,
    AlreadyCovered,
    Backlog,
    BatchRecord,
    CommitResult,
    ForgetRequest,
    Lane,
    Learning,
    Revision,
    Take,
    Turn,
    Uncurated,
    learning_key,
    priority_name,
    sha256,
)
from wsd.daemon.store.store import Store
from wsd.daemon.store.transfer import (
    ActionIn,
    Added,
    Incoming,
    LearningIn,
    RevisionIn,
    TooLong,
    sources_of,
)
from wsd.daemon.store.vectors import KINDS as VECTOR_KINDS
from wsd.daemon.store.workspace import Card, ToolEvent

__all__ = [
    "APPLIED",
    "BILLED",
    "COVERED",
    "ESTIMATED",
    "INDEX_BATCH",
    "LEARNING_TYPES",
    "MADE_BY",
    "PERSON_FILES",
    "RELEASED",
    "TRANSCRIPT_KINDS",
    "VECTOR_KINDS",
    "VOID",
    "ActionIn",
    "ActionRequest",
    "Added",
    "AlreadyCovered",
    "Asked",
    "Backlog",
    "BatchRecord",
    "BatchRequest",
    "BatchTrace",
    "Card",
    "CommitResult",
    "CopiedTurn",
    "ForeignError",
    "ForgetRequest",
    "Found",
    "Incoming",
    "Items",
    "Lane",
    "Learning",
    "LearningIn",
    "LearningTrace",
    "Maintenance",
    "Marks",
    "MemoryReplaced",
    "MessageBatch",
    "Opener",
    "Revision",
    "RevisionIn",
    "Scope",
    "SourceTurn",
    "Store",
    "Take",
    "TooLong",
    "ToolEvent",
    "Turn",
    "Uncurated",
    "as_turns",
    "aside_path",
    "claude_mem_rows",
    "finish",
    "learning_key",
    "leftovers",
    "only_marks",
    "open_aside",
    "path_words",
    "priority_name",
    "remedies",
    "remedy",
    "remove",
    "sha256",
    "sources_of",
    "swap",
    "turn_text",
]
