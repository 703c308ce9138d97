"""One batch through the stages, from turns to the ledger: the pipeline the loop, ``wsd retry``
and ``wsd rebuild`` share.

:meth:`Pipeline.take` takes the next batch (:mod:`.request.take`); :meth:`Pipeline.curate`
renders its request (:mod:`.request.prompt`), calls the Bridge (:mod:`.bridge.client`),
judges the reply (:func:`.judging.judge`: grounding, the guards against the files as they
are now) and commits what may be committed in one memory.db transaction
(:mod:`.commit.committed`, the exactly-once point). A batch the Bridge rejects is split in
halves; a lone rejected turn is parked in the ledger (failed, never deleted, for ``wsd
retry``). ``Outage`` and ``Shutdown`` propagate: what was committed before them stays
committed (``on_commit`` has seen it), the rest is curated again later. The economy lane
renders with :meth:`Pipeline.prepare` and applies each result with :meth:`Pipeline.apply`:
the same judging and commit.

What differs between the loop and a rebuild is handed in: which memory files the curator
sees (the disk, or the files as the rebuild has curated them so far), when a batch happened
(a :class:`Timeline`: now, or as its live batch did, so a rebuild keeps the history's
timeline), and what happens after each commit (``on_commit``, given with each call: the
loop's follow-up writes md files, marks turns processed and logs).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wsd.daemon.curation.bridge.answer import Reply
from wsd.daemon.curation.bridge.client import BatchRejected, BridgeClient
from wsd.daemon.curation.bridge.spend import StoreMeter
from wsd.daemon.curation.commit import committed
from wsd.daemon.curation.commit.committed import Committed, OnCommit
from wsd.daemon.curation.judging import judge
from wsd.daemon.curation.judging.guards import Caps
from wsd.daemon.curation.request import prompt, take
from wsd.daemon.curation.request.batch import Batch, NoBatch
from wsd.daemon.curation.request.prompt import Prepared, Seen
from wsd.daemon.runtime.config import Config
from wsd.daemon.store import BatchRecord, Store, Take, Turn

#: How long after a marked request the next one counts on its prefix being cached (the
#: API keeps it 5 minutes from its last use; a minute is left for the call itself).
WARM_SECONDS = 240.0


@dataclass(frozen=True)
class Timeline:
    """When a batch of turns is said to have happened: ``started`` (the erosion guard
    measures each file against what it had a day before) and ``finished`` (its ledger row and
    learnings are dated then). The loop's batches happen now; a rebuild's as their live
    batches did, so the rebuilt memory keeps the history's timeline."""

    started: Callable[[Sequence[Turn]], float]
    finished: Callable[[Sequence[Turn]], float]

    @classmethod
    def now(cls, clock: Callable[[], float]) -> Timeline:
        """Every batch started and finished at ``clock()``'s time when asked."""
        return cls(lambda _turns: clock(), lambda _turns: clock())


class Pipeline:
    """Curates batches into ``store`` through ``bridge`` (see the module docstring)."""

    def __init__(
        self,
        config: Config,
        store: Store,
        bridge: BridgeClient,
        *,
        files: Callable[[], Mapping[str, str]],
        timeline: Timeline | None = None,
        caps: Caps | None = None,
        log: Any = None,
        clock: Callable[[], float] = time.time,
        purpose: str = "curate",
        identity: str = "",
    ) -> None:
        self.config = config
        #: The transcript.db the turns come from (its identity): the loop sets it when it
        #: notices a new one, a rebuild and ``wsd retry`` when they start.
        self.identity = identity
        self.store = store
        self.bridge = bridge
        self.files = files
        self.timeline = timeline or Timeline.now(clock)
        self.caps = caps or config.section(Caps)
        self.log = log
        #: Every request is booked in the charges ledger as it happens (the daily cap).
        self.meter = StoreMeter(store, config, clock, purpose, log)
        #: The memory files the last request of :meth:`curate` showed (see its ``following``),
        #: and when it was sent with its prefix marked for the cache (None: not marked).
        self._last_base: dict[str, str] | None = None
        self._marked_at: float | None = None
        self._clock = clock

    def take(
        self,
        now: float,
        spool_waiting: bool,
        which: Take = Take.URGENT,
        most: int = 1,
        chars: int | None = None,
    ) -> list[Batch] | NoBatch:
        """The next batch, or up to ``most`` of them holding ``chars`` characters of turns
        (a backlog for one Message Batch), taken as
        :func:`wsd.daemon.curation.request.take.take` says."""
        return take.take(
            self.store, self.config, self.identity, now, spool_waiting, most, which, chars
        )

    def curate(
        self,
        batch: Batch,
        on_commit: OnCommit,
        replaces: Sequence[int] = (),
        following: int = 0,
    ) -> list[Committed]:
        """Curate ``batch`` through the prompt lane, splitting on rejection; every commit in
        order, each handed to ``on_commit`` as it is made. ``replaces``: the parked batches
        this one runs again (``wsd retry``). ``following``: how many requests are to come
        right after this one (a rebuild's batches, a backlog's): when the last request
        showed the same memory files, the next ones likely will too, and their common
        prefix may be cached (:func:`~wsd.daemon.curation.request.prompt.build_request`)."""
        base = dict(self.files())
        same = base == self._last_base
        run = 1 + following if following and same else 1
        now = self._clock()
        # Within the cache's lifetime of the last marked request (5 minutes, refreshed by
        # each read; a minute of margin for the call itself): its prefix is there to read.
        warm = same and self._marked_at is not None and 0 <= now - self._marked_at < WARM_SECONDS
        self._last_base = base
        prepared = self.prepare(batch, base, shared=run, warm=warm)
        self._marked_at = None  # a request that fails caches nothing
        try:
            reply = self.bridge.call(prepared.system, prepared.messages, meter=self.meter)
            self._marked_at = now if prepared.marked else None
        except BatchRejected as exc:
            if len(batch.turns) == 1:
                made = BatchRecord.parked(batch.turns, exc, exc.attempts, prepared.seen.started)
                finished = self.timeline.finished(batch.turns)
                return [
                    committed.commit(self.store, self.identity, made, finished, on_commit, replaces)
                ]
            if self.log is not None:
                self.log.warning("batch_split", turns=len(batch.turns), error=str(exc))
            first, second = batch.halves()
            return self.curate(first, on_commit, replaces) + self.curate(
                second, on_commit, replaces
            )
        return [self.apply(batch.turns, prepared.seen, reply, on_commit, replaces)]

    def prepare(
        self,
        batch: Batch,
        base: Mapping[str, str] | None = None,
        actions: Sequence[tuple[int, int, str]] | None = None,
        shared: int = 1,
        warm: bool = False,
    ) -> Prepared:
        """The request for ``batch`` (:func:`wsd.daemon.curation.request.prompt.prepare`),
        from the memory files ``base`` (the pipeline's files now, unless given)."""
        base = self.files() if base is None else base
        started = self.timeline.started(batch.turns)
        return prompt.prepare(self.store, self.config, batch, base, started, actions, shared, warm)

    def apply(
        self,
        turns: Sequence[Turn],
        seen: Seen,
        reply: Reply,
        on_commit: OnCommit,
        replaces: Sequence[int] = (),
        message_batch: tuple[str, str] | None = None,
    ) -> Committed:
        """Judge ``reply`` to a request that showed the curator ``seen`` against the files
        as they are now (a person may have edited one while the call was out), and commit
        what may be committed (the exactly-once point). ``message_batch``: (its id,
        custom id) of an economy-lane result."""
        indexed = self.store.archive.index_ids(self.identity, [t.id for t in turns])
        names = {obs: f"T{tid}" for obs, tid in indexed.items()}
        judged = judge(self.store, turns, seen, reply, self.files(), self.caps, names)
        made = committed.record(turns, judged, reply, seen.started, self.config, message_batch)
        finished = self.timeline.finished(turns)
        return committed.commit(
            self.store, self.identity, made, finished, on_commit, replaces, judged, reply
        )
