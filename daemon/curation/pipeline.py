"""One batch from turns to the ledger: the pipeline the loop and ``wsd rebuild`` share.

* :func:`plan` cuts turns into batches within the character budget; a turn larger than the
  whole budget is clipped to fit, so one huge turn cannot overflow a call.
* :meth:`Pipeline.curate` builds the request from the memory files, the stored learnings
  most related to the batch and the open actions, calls the Bridge, passes what the reply
  asks for through the guards (:mod:`wsd.daemon.curation.guards`: md edits against the
  files as they are now, loss and size limits, caps, restatements) and commits the rest in
  one memory.db transaction (the exactly-once point,
  :meth:`~wsd.daemon.store.ledger.Ledger.commit_batch`). A batch the
  Bridge rejects is split in halves; a lone rejected turn is parked in the ledger (failed,
  never deleted, for ``wsd retry``). ``Outage`` and ``Shutdown`` propagate: what was
  committed before them stays committed (``on_commit`` has seen it), the rest is curated
  again later.

What differs between the loop and a rebuild is handed in: which memory files the curator
sees (the disk, or the files as the rebuild has curated them so far), when a batch happened
(a :class:`Timeline`: now, or as its live batch did, so a rebuild keeps the history's
timeline), and what happens after each commit (``on_commit``, given with each call: the
loop's bookkeeping materialises md files, marks turns processed and logs).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from wsd.daemon.curation import grounding
from wsd.daemon.curation.answer import Reply
from wsd.daemon.curation.bridge import BatchRejected, BridgeClient
from wsd.daemon.curation.curator import (
    PROMPT_RENDERING,
    RELATED_LEARNINGS,
    Rendering,
    build_request,
    dated,
    render_turn,
    rendering_for,
    same_day,
)
from wsd.daemon.curation.guards import Caps, review, summarise
from wsd.daemon.curation.reply import ParsedReply, parse_reply
from wsd.daemon.curation.spend import StoreMeter, price
from wsd.daemon.memory import erosion, files_md_parts
from wsd.daemon.memory.md_files import canonical
from wsd.daemon.runtime.config import Config
from wsd.daemon.runtime.fsio import UnsafeFile
from wsd.daemon.store import AlreadyCovered, BatchRecord, CommitResult, Lane, Store, Turn
from wsd.schema.layout import CURATED_FILES

#: A turn holding a spooled event younger than this is not claimed yet: the rest of a
#: spooled burst (an earlier Stop, whole earlier turns) is placed first, not sent later as
#: addenda to a turn that a direct write joined and closed (found by the soak). ``wsd
#: rebuild`` leaves such turns to the daemon by the same measure.
LATE_SETTLE_SECONDS = 5.0
#: How long after a marked request the next one counts on its prefix being cached (the
#: API keeps it 5 minutes from its last use; a minute is left for the call itself).
WARM_SECONDS = 240.0


class NoBatch(StrEnum):
    """Why :meth:`Pipeline.take` claimed nothing."""

    SETTLING = "settling"  # a turn is still settling, or spooled events wait unrecorded
    REMARKED = "remarked"  # the turns were already curated: markers caught up, look again
    GONE = "gone"  # the turns went meanwhile (transcript.db replaced)


@dataclass(frozen=True)
class Batch:
    """Turns to curate in one call, with their text as the curator sees it."""

    turns: list[Turn] = field(default_factory=list)
    rendered: list[str] = field(default_factory=list)
    #: The lane's rendering the turns were rendered with (grounding reads the same).
    shown: Rendering = PROMPT_RENDERING

    @classmethod
    def of(cls, turns: Sequence[Turn], shown: Rendering = PROMPT_RENDERING) -> Batch:
        """The turns rendered whole (``wsd retry``: a parked batch is retried as it was)."""
        rendered = [
            render_turn(t, shown=shown, day=not same_day(t, turns[i - 1] if i else None))
            for i, t in enumerate(turns)
        ]
        return cls(list(turns), rendered, shown)

    def halves(self) -> tuple[Batch, Batch]:
        half = len(self.turns) // 2
        second = self.rendered[half:]
        if second:  # its own request now: its first turn names the date
            second = [dated(self.turns[half], second[0]), *second[1:]]
        return (
            Batch(self.turns[:half], self.rendered[:half], self.shown),
            Batch(self.turns[half:], second, self.shown),
        )


def plan(turns: Sequence[Turn], budget: int, shown: Rendering = PROMPT_RENDERING) -> list[Batch]:
    """Consecutive batches of ``turns``, each within ``budget`` characters of rendered text
    (a turn over the whole budget is clipped to it, and so is a batch of its own), rendered
    as the lane's ``shown`` says."""
    batches: list[Batch] = []
    used = 0

    def rendered(turn: Turn, day: bool) -> str:
        text = render_turn(turn, shown=shown, day=day)
        return text if len(text) <= budget else render_turn(turn, budget, shown, day)

    for turn in turns:
        before = batches[-1].turns[-1] if batches else None
        text = rendered(turn, not same_day(turn, before))
        if not batches or used + len(text) > budget:
            if before is not None and same_day(turn, before):
                text = rendered(turn, True)  # a request's first turn names its date
            batches.append(Batch(shown=shown))
            used = 0
        batches[-1].turns.append(turn)
        batches[-1].rendered.append(text)
        used += len(text)
    return batches


@dataclass(frozen=True)
class Seen:
    """What one request showed the curator, which its reply is judged against: the memory
    files, the open actions' ids and the related learnings' ids, and when it started; on the
    prompt lane also each turn as it was rendered (grounding reads what the curator was shown
    of the tools there instead of excerpting them again: an economy result, read later, has
    only the turns and is excerpted anew)."""

    base: Mapping[str, str]
    actions: tuple[int, ...]
    offered: tuple[int, ...]
    started: float
    rendered: Mapping[int, str] = field(default_factory=dict)
    #: The lane's rendering (an economy result read later is excerpted anew with it).
    shown: Rendering = PROMPT_RENDERING


@dataclass(frozen=True)
class Prepared:
    """A request ready to send: its system and messages, what it shows, its size."""

    system: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    seen: Seen
    chars: int

    @property
    def marked(self) -> bool:
        """Whether its prefix carries a cache breakpoint."""
        return any("cache_control" in block for block in self.messages[0]["content"])


@dataclass(frozen=True)
class Committed:
    """One commit of the pipeline: a curated batch, or a parked one (``parsed`` is None)."""

    turns: Sequence[Turn]
    record: BatchRecord
    #: None when the turns were covered by another commit meanwhile (nothing was written).
    result: CommitResult | None
    parsed: ParsedReply | None = None
    reply: Reply | None = None

    @property
    def batch_id(self) -> int:
        return 0 if self.result is None else self.result.batch_id

    @property
    def parked(self) -> bool:
        return self.record.status == "failed"


OnCommit = Callable[["Committed"], None]
"""What is called with each commit as it is made (the loop's bookkeeping, a rebuild's count)."""


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
    ) -> None:
        self.config = config
        self.store = store
        self.bridge = bridge
        self.files = files
        self.timeline = timeline or Timeline.now(clock)
        self.caps = caps or Caps(
            max_loss=config.max_loss, erosion=config.erosion, file_chars=config.file_chars
        )
        self.log = log
        #: Every request is booked in the charges ledger as it happens (the daily cap).
        self.meter = StoreMeter(store, config, clock, purpose, log)
        #: The memory files the last request of :meth:`curate` showed (see its ``following``),
        #: and when it was sent with its prefix marked for the cache (None: not marked).
        self._last_base: dict[str, str] | None = None
        self._marked_at: float | None = None
        self._clock = clock

    def take(
        self, identity: str, now: float, spool_waiting: bool, lane: Lane = Lane.URGENT
    ) -> Batch | NoBatch:
        """The next batch, settled, checked against the ledger, planned and claimed, once per
        pass: one read of the pending turns, one plan, one claiming transaction (the plan
        is made again only when a late event changed a turn between the read and the claim).
        ``spool_waiting``: spooled events wait unrecorded (a hook spooled since this pass's
        intake), so one of them may belong before these turns. ``lane``: which pending turns
        may be taken (see :func:`wsd.daemon.store.turns.next_turns`)."""
        taken = self.take_many(identity, now, spool_waiting, 1, lane)
        return taken if isinstance(taken, NoBatch) else taken[0]

    def take_many(
        self, identity: str, now: float, spool_waiting: bool, most: int, lane: Lane = Lane.URGENT
    ) -> list[Batch] | NoBatch:
        """Up to ``most`` consecutive batches, as :meth:`take` takes one (a backlog going
        to the economy lane in one Message Batch), claimed in one transaction."""
        size = self.config.batch_turns
        turns, settling = self.store.turns.next_turns(size * most, now - LATE_SETTLE_SECONDS, lane)
        if settling or spool_waiting:
            return NoBatch.SETTLING
        covered = self.store.ledger.covered(identity, [t.id for t in turns])
        if covered:  # markers lagging behind the ledger (crash between the two commits)
            self.store.turns.mark_processed(sorted(covered))
            return NoBatch.REMARKED
        shown = rendering_for(lane)
        batches = self._plan(turns, most, shown)
        if not batches:
            return NoBatch.GONE
        # Claimed and read again in one transaction: a late event cannot change them now.
        claimed = self.store.turns.claim_turns([t.id for b in batches for t in b.turns], now)
        if not claimed:
            return NoBatch.GONE
        if claimed == [t for b in batches for t in b.turns]:
            return batches
        return self._plan(claimed, most, shown)

    def _plan(self, turns: Sequence[Turn], most: int, shown: Rendering) -> list[Batch]:
        """``turns`` cut into at most ``most`` batches of ``batch_turns`` turns and
        ``batch_chars`` characters at most."""
        size = self.config.batch_turns
        out: list[Batch] = []
        for start in range(0, len(turns), size):
            out += plan(turns[start : start + size], self.config.batch_chars, shown)
            if len(out) >= most:
                break
        return out[:most]

    def curate(
        self,
        batch: Batch,
        identity: str,
        on_commit: OnCommit,
        replaces: Sequence[int] = (),
        following: int = 0,
    ) -> list[Committed]:
        """Curate ``batch`` through the prompt lane, splitting on rejection; every commit in
        order, each handed to ``on_commit`` as it is made. ``replaces``: the parked batches
        this one runs again (``wsd retry``). ``following``: how many requests are to come
        right after this one (a rebuild's batches, a backlog's): when the last request
        showed the same memory files, the next ones likely will too, and their common
        prefix may be cached (:func:`~wsd.daemon.curation.curator.build_request`)."""
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
                record = BatchRecord.parked(batch.turns, exc, exc.attempts, prepared.seen.started)
                return [self._commit(batch.turns, record, identity, replaces, on_commit)]
            if self.log is not None:
                self.log.warning("batch_split", turns=len(batch.turns), error=str(exc))
            first, second = batch.halves()
            return self.curate(first, identity, on_commit, replaces) + self.curate(
                second, identity, on_commit, replaces
            )
        return [self.apply(batch.turns, prepared.seen, reply, identity, on_commit, replaces)]

    def prepare(
        self,
        batch: Batch,
        base: Mapping[str, str] | None = None,
        actions: Sequence[tuple[int, int, str]] | None = None,
        shared: int = 1,
        warm: bool = False,
    ) -> Prepared:
        """The request for ``batch`` and what it showed the curator: the memory files
        (``base``: the disk's now, unless given, as every request of one Message Batch is
        built from one snapshot), the open actions and the related learnings. ``shared``:
        how many requests share that snapshot (their common prefix may then be cached)."""
        actions = self.store.actions.open_actions() if actions is None else actions
        base = self.files() if base is None else base
        related = self.store.learnings.related_learnings(_batch_text(batch), RELATED_LEARNINGS)
        shared = shared if self.config.cache_shared_prefix else 1
        system, messages = build_request(
            base,
            actions,
            batch.rendered,
            related,
            self.config.model,
            shared,
            self._inventory() if shared > 1 or warm else "",
            warm,
        )
        seen = Seen(
            base=dict(base),
            actions=tuple(a[0] for a in actions),
            offered=tuple(r[0] for r in related),
            started=self.timeline.started(batch.turns),
            rendered={t.id: text for t, text in zip(batch.turns, batch.rendered, strict=False)},
            shown=batch.shown,
        )
        chars = len(json.dumps({"system": system, "messages": messages}, ensure_ascii=False))
        return Prepared(system, messages, seen, chars)

    def _inventory(self) -> str:
        """files.md's disk listing as the watcher keeps it ("" when it cannot be read: a
        link or a FIFO in its place is not followed, and the request goes without)."""
        try:
            text = files_md_parts.read(self.store.layout.md("files.md"))
        except (OSError, UnsafeFile):
            return ""
        return files_md_parts.split(text)[1]

    def apply(
        self,
        turns: Sequence[Turn],
        seen: Seen,
        reply: Reply,
        identity: str,
        on_commit: OnCommit,
        replaces: Sequence[int] = (),
        remote: tuple[str, str] | None = None,
    ) -> Committed:
        """Parse ``reply`` to a request that showed the curator ``seen``, pass it through the
        guards against the files as they are now, and commit it (the exactly-once point).
        ``remote``: (Message Batch id, custom id) of an economy-lane result."""
        parsed = parse_reply(reply.text, [t.id for t in turns], list(seen.actions))
        record = self._record(turns, parsed, reply, seen, remote, identity)
        return self._commit(turns, record, identity, replaces, on_commit, parsed, reply)

    def _record(
        self,
        turns: Sequence[Turn],
        parsed: ParsedReply,
        reply: Reply,
        seen: Seen,
        remote: tuple[str, str] | None,
        identity: str,
    ) -> BatchRecord:
        """What of the reply may be committed (the guards), as the batch's ledger record."""
        started = seen.started
        files = self.files()  # a person may have edited a file while the call was out
        current = {name: canonical(name, files.get(name, "")) for name in CURATED_FILES}
        base = {name: canonical(name, text) for name, text in seen.base.items()}
        # Whose words hold each item, before the guards judge what it does to the files.
        opened = {a[0]: a[2] for a in self.store.actions.open_actions()}
        indexed = self.store.archive.index_ids(identity, [t.id for t in turns])
        names = {obs: f"T{tid}" for obs, tid in indexed.items()}
        grounded = grounding.ground(
            parsed,
            turns,
            base=base,
            open_actions=opened,
            names=names,
            rendered=seen.rendered,
            shown=seen.shown,
        )
        parsed = grounded.parsed
        day = {  # each edited file against what it had a day before this batch
            name: erosion.measure(self.store, name, current[name], started, self.caps.erosion)
            for name in {*parsed.edits, *parsed.rewrites}
        }
        checked = review(
            parsed,
            base=base,
            current=current,
            turns=len(turns),
            truncated=reply.stop_reason == "max_tokens",
            caps=self.caps,
            offered=set(seen.offered),
            erosion=day,
            forgets=[words for words, _cited in parsed.forgets],
        )
        held = [day[name] for name in checked.held]
        cost = price(
            self.config,
            reply.input_tokens,
            reply.output_tokens,
            reply.cache_read_tokens,
            reply.cache_write_tokens,
        )
        return BatchRecord(
            turns=turns,
            learnings=checked.learnings,
            actions=checked.actions,
            closed_actions=checked.closed_actions,
            md_updates=checked.md_updates,
            forgets=[words for words, _cited in parsed.forgets],
            refused=summarise(grounded.lines()) + checked.refused,
            ungrounded=grounded.ungrounded,
            refusal_kinds={
                **checked.kinds,
                "ungrounded": grounded.ungrounded,
                "unread_lines": len(parsed.unknown_lines) + parsed.dropped,
            },
            model=reply.model,
            stop_reason=reply.stop_reason,
            attempts=reply.attempts,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
            cache_read_tokens=reply.cache_read_tokens,
            cache_write_tokens=reply.cache_write_tokens,
            cost_usd=cost if remote is None else cost * self.config.economy_price_factor,
            latency_ms=reply.latency_ms,
            started_at=started,
            state=dict(erosion.held_state(e, started) for e in held if e is not None),
            call="prompt" if remote is None else "economy",
            remote_id=None if remote is None else remote[0],
            custom_id=None if remote is None else remote[1],
        )

    def _commit(
        self,
        turns: Sequence[Turn],
        record: BatchRecord,
        identity: str,
        replaces: Sequence[int],
        on_commit: OnCommit,
        parsed: ParsedReply | None = None,
        reply: Reply | None = None,
    ) -> Committed:
        try:
            result: CommitResult | None = self.store.ledger.commit_batch(
                identity, record, self.timeline.finished(turns), replaces=replaces
            )
        except AlreadyCovered:
            result = None
        done = Committed(turns, record, result, parsed, reply)
        on_commit(done)
        return done


def _batch_text(batch: Batch) -> str:
    """What the batch is about, for the related-learnings query: prompts and answers."""
    parts = [t.user_message or "" for t in batch.turns]
    parts += [t.agent_response or "" for t in batch.turns]
    return "\n".join(parts)[:20_000]
