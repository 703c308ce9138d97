"""The values the store reads and writes: turns, the backlog, one batch's record.

Plain data shared by the loop (daemon/worker.py), the curator's parsing
(daemon/curator.py) and ``wsd rebuild``; the store's modules turn them into SQL.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

LEARNING_TYPES = ("fact", "pattern", "correction", "preference", "tool_install")
#: A pending action's priority in words, as every view shows it (SPEC.md section 3).
PRIORITY_NAMES = {0: "urgent", 1: "high", 2: "normal"}


def priority_name(value: object) -> str:
    """An action's priority as a person reads it (``urgent``, ``high``, ``normal``)."""
    return PRIORITY_NAMES.get(value, str(value)) if isinstance(value, int) else str(value)


class Lane(StrEnum):
    """How a batch goes to the curator (the ledger's ``lane`` column, ``WSD_CURATION``, as
    ``wsd status`` shows it): the prompt lane, a direct Messages call; the economy lane, a
    request in a Message Batch at half price."""

    PROMPT = "prompt"
    ECONOMY = "economy"


class Take(StrEnum):
    """Which pending turns a curator call may take (:func:`~wsd.daemon.store.turns.next_turns`;
    :func:`~wsd.daemon.curation.loop.trigger.choose` picks one). A turn is *in flight* while a
    request of a Message Batch carries it, and *released* when the economy lane handed it
    back to the prompt lane (its request failed)."""

    URGENT = "urgent"  # every pending turn, in flight too (PreCompact, `wsd flush`: now)
    FREE = "free"  # the turns not in flight (WSD_CURATION=prompt, the economy lane off)
    NEW = "new"  # the turns neither in flight nor released (a new Message Batch's)
    RELEASED = "released"  # the released turns alone (the prompt lane's share)

    @property
    def lane(self) -> Lane:
        """The lane a call taking these turns goes through."""
        return Lane.ECONOMY if self is Take.NEW else Lane.PROMPT


class AlreadyCovered(Exception):
    """Some turns of the batch were curated meanwhile (another process, a retry)."""


@dataclass(frozen=True)
class Turn:
    """One closed observation as the curator sees it."""

    id: int
    session_id: str
    sequence_num: int
    timestamp: float
    user_message: str | None
    tool_calls: list[dict[str, Any]]
    agent_response: str | None
    closed_by: str
    #: For an addendum (events that came after the turn was curated): the turn it adds to.
    amends: int | None = None
    #: On home, a satellite's turn: (its machine, its origin key) (SPEC.md section 11).
    origin: tuple[str, str] | None = None


@dataclass(frozen=True)
class Backlog:
    """What is waiting to be curated."""

    pending: int
    oldest_ts: float | None
    last_activity_ts: float | None
    flush_upto: int | None
    #: The transcript's identity and its newest turn id (read in the same pass).
    identity: str = ""
    last_turn_id: int = 0
    #: Pending turns in flight (a request of a Message Batch carries them; counted in
    #: ``pending`` too).
    in_flight: int = 0
    #: The newest open flush that wants the prompt lane (PreCompact, ``wsd flush``): one
    #: with a pending turn that closed before it was asked for.
    urgent_flush: int | None = None
    #: The newest open flush of any reason still waiting on such a turn: curate now.
    waiting_flush: int | None = None
    #: Open flushes with no such turn left: the loop answers them.
    answerable_flushes: int = 0

    def age(self, now: float) -> float | None:
        """How long the oldest turn not curated yet has waited at ``now``, in seconds (None:
        none waits)."""
        return None if self.oldest_ts is None else now - float(self.oldest_ts)


@dataclass(frozen=True)
class Uncurated:
    """The turns not yet curated, as a new session is told of them (the boot context)."""

    #: Every turn with ``processed = 0`` (claimed by a batch in flight or not).
    total: int
    #: When the oldest of them (by id) was captured; None when there is none.
    oldest_ts: float | None
    #: (timestamp, the person's words) of the newest turns that have words, newest first.
    requests: list[tuple[float, str]]


@dataclass(frozen=True)
class Learning:
    """One learning to store: its type, text, the turns of its batch it cites (none: the
    whole batch) and the stored learning it replaces (None: none)."""

    kind: str
    content: str
    cited: tuple[int, ...] = ()
    replaces: int | None = None


@dataclass
class BatchRecord:
    """Everything one curator call produced, committed in one transaction."""

    turns: Sequence[Turn]
    learnings: list[Learning] = field(default_factory=list)
    actions: list[tuple[str, int]] = field(default_factory=list)
    closed_actions: list[int] = field(default_factory=list)
    md_updates: dict[str, str] = field(default_factory=dict)
    #: Words the person asked (in their own prompt) to forget: run after the commit.
    forgets: list[ForgetRequest] = field(default_factory=list)
    model: str = ""
    stop_reason: str | None = None
    attempts: int = 1
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    started_at: float = 0.0
    status: str = "done"
    error: str | None = None
    #: What the guards refused of the reply, one line each (stored on the ledger row).
    refused: list[str] = field(default_factory=list)
    #: How many of the reply's items were refused or downgraded as not grounded (issue 32);
    #: each is also one of ``refused``.
    ungrounded: int = 0
    #: What was refused, counted by kind (see schema 012_refusal_kinds.sql); zeros left out.
    refusal_kinds: dict[str, int] = field(default_factory=dict)
    #: State rows written in the batch's transaction (a file whose removals now wait).
    state: dict[str, str] = field(default_factory=dict)
    #: The lane it was curated through (the economy lane: a request in the Message Batch
    #: ``message_batch_id``, named ``custom_id`` there).
    lane: Lane = Lane.PROMPT
    message_batch_id: str | None = None
    custom_id: str | None = None

    @classmethod
    def parked(
        cls, turns: Sequence[Turn], error: BaseException, attempts: int, started_at: float
    ) -> BatchRecord:
        """The record of a batch that failed for good: parked in the ledger, never deleted,
        for ``wsd retry`` to run again."""
        return cls(
            turns=turns,
            status="failed",
            error=str(error)[:1000],
            attempts=attempts,
            started_at=started_at,
        )


@dataclass(frozen=True)
class ForgetRequest:
    """A request to forget as a batch records it (issue 43): the words the curator named,
    whether the person's own request said them (else the daemon asks them first), where they
    asked (``T12``); a refused one keeps no words, only why (the boot context and ``wsd
    status`` say it: nothing is refused silently)."""

    words: str
    said: bool = True
    asked_in: str = ""
    refused: str | None = None


@dataclass(frozen=True)
class Revision:
    """One stored version of a curated md file."""

    id: int
    file: str
    created_at: float
    #: curator (a batch), hand (a person's edit, adopted), restore (wsd memory restore).
    source: str
    batch_id: int | None
    sha256: str
    content: str
    #: Lines a forget (or the retention) took out of it since it was stored: how many,
    #: never which (``wsd memory history``).
    erased: int = 0


@dataclass(frozen=True)
class CommitResult:
    batch_id: int
    learnings_added: int
    actions_added: int
    actions_closed: int
    files_updated: tuple[str, ...]
    #: Learnings not stored because an equal one is stored (or was retracted).
    learnings_repeated: int = 0
    #: Older learnings this batch's learnings replaced.
    superseded: int = 0


def content_key(kind: str, content: str) -> str:
    """De-duplication key of a pending action: case, spacing and end punctuation ignored."""
    norm = re.sub(r"\s+", " ", content).strip().rstrip(".!").lower()
    return f"{kind}:{norm}"


_NOT_WORD = re.compile(r"[^\w\s]+")


def learning_key(content: str) -> str:
    """The key that makes a learning a repeat of another: its words, in order, with case,
    punctuation and spacing ignored, whatever its type ("Prefers tabs." as a FACT repeats
    "prefers   tabs" as a PREFERENCE)."""
    return " ".join(_NOT_WORD.sub("", content.lower()).split())


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
