"""The economy lane: curator requests as Message Batches at half price (issue 23).

The loop hands :meth:`Economy.submit` the batches it claimed; they go to the Bridge as the
requests of one Message Batch, all built from one snapshot of the memory files. Each pass
:meth:`Economy.poll` looks at every batch whose time has come (30 s after creating it, then
doubling to 5 min), and once it has ended reads its results and applies them in claim order
through :meth:`Pipeline.apply <wsd.daemon.curation.pipeline.Pipeline.apply>`: the same reply
parsing, guards (an edit is re-anchored against the files as they are now, or refused) and
exactly-once commit as the prompt lane.

Exactly once across crashes and sleep: the batch and each request's ``custom_id`` are
recorded before the create call (``submitting``) and the Bridge's id right after it; a
restart polls every batch in flight. A batch still ``submitting`` at start-up was cut by a
crash between the two: it is forgotten and its turns go again (at most one duplicate
submission, its estimate kept in the charges ledger); its result, if it ever came, could not
be applied twice anyway (the ledger refuses a second commit of any turn).

What does not succeed goes to the prompt lane, which retries, splits and parks as it always
has: a request ``errored``, ``expired`` or ``canceled``, one whose result is missing or
unreadable after :data:`MAX_FETCHES` reads, a batch the Bridge no longer knows
(:data:`MAX_MISSES` answers in a row), a create the Bridge rejects. A Bridge without the
endpoint (404/405/501, an answer that is not a batch) turns the lane off until the next daily
probe (``economy_off`` in memory.db's state, shown by ``wsd status``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from wsd.daemon.curation.bridge.answer import Sent, Unanswered
from wsd.daemon.curation.bridge.client import BatchRejected, Outage, Shutdown
from wsd.daemon.curation.bridge.failure import problem, status_of
from wsd.daemon.curation.bridge.spend import StoreMeter
from wsd.daemon.curation.commit.committed import OnCommit
from wsd.daemon.curation.economy.wire import (
    BatchState,
    Gone,
    MessageBatchesClient,
    Result,
    Unsupported,
)
from wsd.daemon.curation.pipeline import Pipeline
from wsd.daemon.curation.request.batch import Batch
from wsd.daemon.curation.request.prompt import Prepared, Seen
from wsd.daemon.curation.request.rendering import ECONOMY_RENDERING
from wsd.daemon.runtime.config import Config
from wsd.daemon.store import APPLIED, COVERED, RELEASED, BatchRequest, MessageBatch, Store

#: Reads of an ended batch's results before the requests still without one are released.
MAX_FETCHES = 3
#: "No such batch" answers in a row before a batch is taken for lost.
MAX_MISSES = 3
#: How long the lane stays off after the Bridge showed it has no batches endpoint.
PROBE_SECONDS = 86_400.0
#: Output tokens the in-flight estimate assumes per request (``make bench`` curator_cost:
#: 485 for a 25-turn batch).
EXPECTED_OUTPUT_TOKENS = 500
#: Characters of requests in one Message Batch at most (at least one request), and of turns
#: a submission reads: the turns, their text and the body are held several times over while
#: it is sent. With the SDK's ~70 MB loaded, the daemon curating a backlog peaked (VmHWM,
#: make bench daemon_peak) at 155 MB (2,500 turns, a 2 MB cap, the backlog read whole),
#: 122 MB (5,000 turns, a 1 MB cap, read a page at a time) and 116 MB with this cap, under the
#: soak's 120 MB line (issue 45). ~275 typical turns fit: a day's work is one Message Batch;
#: a large backlog goes in several, one after the other, at the same price.
MAX_SUBMISSION_CHARS = 500_000
#: The state key remembering that the Bridge has no batches endpoint.
OFF_KEY = "economy_off"


@dataclass(frozen=True)
class Submitted:
    """What :meth:`Economy.submit` did: ``message_batch_id`` of the new batch, or ``fallback``
    (the prompt lane should take these turns now) with why."""

    message_batch_id: str | None = None
    fallback: str | None = None


#: Seconds before a Bridge that failed to delete a batch's results is asked again.
PURGE_RETRY_SECONDS = 300.0


class Economy:
    """Submits, polls and applies Message Batches (see the module docstring)."""

    def __init__(
        self,
        config: Config,
        store: Store,
        client: MessageBatchesClient,
        pipeline: Pipeline,
        *,
        log: Any,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.store = store
        self.client = client
        self.pipeline = pipeline
        self.log = log
        self.clock = clock
        self.meter = StoreMeter(
            store,
            config,
            clock,
            "curate-batch",
            log,
            factor=config.economy_price_factor,
            expect_output=EXPECTED_OUTPUT_TOKENS,
        )
        self._warned: set[str] = set()  # Message Batch ids whose foreign results_url was logged
        self._forced_at = float("-inf")  # the last forced poll (see poll)
        self._purge_due = 0.0  # a Bridge that refused a delete is asked again after a while

    # -- the lane's state ------------------------------------------------------------------

    def off(self, now: float) -> dict[str, Any] | None:
        """Why the lane is off (the Bridge has no batches endpoint), until when; None: on."""
        return economy_off(self.store, now)

    def usable(self, now: float) -> bool:
        """Whether new batches may go to the economy lane now."""
        return self.config.curation == "economy" and self.off(now) is None

    def in_flight(self) -> list[MessageBatch]:
        return self.store.message_batches.open_batches()

    def released_pending(self) -> bool:
        """Whether turns handed back to the prompt lane wait to be curated."""
        return self.store.message_batches.released_pending()

    # -- submitting ------------------------------------------------------------------------

    def submit(self, batches: Sequence[Batch], now: float) -> Submitted:
        """Send ``batches`` as one Message Batch, each request built from the same memory
        snapshot. Raises Outage (the Bridge is down: back off) and Shutdown."""
        base = self.pipeline.files()
        actions = self.store.actions.open_actions()
        prepared: list[Prepared] = []
        for batch in batches:  # within the size cap: the rest waits for the next batch
            if prepared and sum(p.chars for p in prepared) >= MAX_SUBMISSION_CHARS:
                break
            prepared.append(self.pipeline.prepare(batch, base, actions, shared=len(batches)))
        batches = batches[: len(prepared)]
        requests: list[BatchRequest] = []
        bodies: list[dict[str, Any]] = []
        for position, (batch, ready) in enumerate(zip(batches, prepared, strict=True)):
            ids = [t.id for t in batch.turns]
            custom_id = f"t{ids[0]}-{ids[-1]}-{position}"
            requests.append(
                BatchRequest(
                    custom_id=custom_id,
                    position=position,
                    turn_ids=tuple(ids),
                    offered=ready.seen.offered,
                    actions=ready.seen.actions,
                    request_chars=ready.chars,
                    cached_chars=Sent.of(ready.system, ready.messages).cached,
                    started_at=ready.seen.started,
                    charge_id=self.meter.ask(ready.chars),
                )
            )
            bodies.append(
                {
                    "custom_id": custom_id,
                    "params": {
                        "model": self.config.model,
                        "max_tokens": self.config.max_tokens,
                        "system": ready.system,
                        "messages": ready.messages,
                    },
                }
            )
        rid = self.store.message_batches.record(
            self.pipeline.identity, json.dumps(dict(base)), requests, now
        )
        try:
            message_batch_id = self.client.create(bodies)
        except Unsupported as exc:
            self._void(requests, rid)
            self._turn_off(str(exc), now)
            return Submitted(fallback=str(exc))
        except BatchRejected as exc:
            # The prompt lane takes these turns (it splits and parks what the Bridge rejects):
            # sent here again they would be rejected again.
            why = f"the Bridge rejected the Message Batch: {exc}"[:300]
            for r in requests:
                self.meter.unanswered(r.charge_id, "void")
                self.store.message_batches.settle_request(rid, r.custom_id, RELEASED, why, now)
            self.log.warning("economy_rejected", requests=len(bodies), error=why)
            return Submitted(fallback=why)
        except (Outage, Shutdown):
            # It may have reached the Bridge: the estimates stay booked (a duplicate is paid).
            self.store.message_batches.discard(rid)
            raise
        self.store.message_batches.submitted(
            rid, message_batch_id, self.clock(), now + self._wait(0)
        )
        if self.store.ledger.get_state(OFF_KEY):
            self.store.ledger.set_state({OFF_KEY: None}, now)
            self.log.info("economy_available", message_batch_id=message_batch_id)
        self.log.info(
            "economy_submitted",
            message_batch_id=message_batch_id,
            requests=len(bodies),
            turns=sum(len(b.turns) for b in batches),
        )
        return Submitted(message_batch_id=message_batch_id)

    def _void(self, requests: Sequence[BatchRequest], rid: int) -> None:
        """A create the Bridge refused: nothing billed, nothing held."""
        for r in requests:
            self.meter.unanswered(r.charge_id, "void")
        self.store.message_batches.discard(rid)

    def _turn_off(self, why: str, now: float) -> None:
        off = {"since": now, "reason": why[:300], "probe_at": now + PROBE_SECONDS}
        self.store.ledger.set_state({OFF_KEY: json.dumps(off)}, now)
        self.log.warning("economy_unavailable", reason=why[:300], probe_at=off["probe_at"])

    # -- polling ---------------------------------------------------------------------------

    def poll(
        self,
        now: float,
        on_commit: OnCommit,
        *,
        force: bool = False,
    ) -> int:
        """Look at every batch whose time has come (``force``: every batch in flight, once
        per first poll interval: an urgent flush checks for results before it sends their
        turns again); apply what has ended. How many requests got an outcome. Raises
        Shutdown (what was applied stays applied)."""
        if force and now - self._forced_at < self.config.economy_poll_seconds:
            force = False
        if force:
            self._forced_at = now
        settled = 0
        for batch in self.in_flight():
            if batch.status == "submitting" or batch.message_batch_id is None:
                # Cut by a crash between recording it and the Bridge's answer: it may have
                # been created (and billed) all the same, so each request keeps its estimate;
                # its turns go again.
                lost = self.store.message_batches.pending_requests(batch.id)
                for request in lost:
                    self.meter.unanswered(request.charge_id, "lost")
                self.log.warning("economy_submission_lost", batch=batch.id, requests=len(lost))
                self.store.message_batches.discard(batch.id)
                continue
            wait = None if batch.next_poll_at is None else batch.next_poll_at - now
            # A look planned further off than the longest wait was planned by a clock since
            # set back (a thaw, an NTP step): look now, not a day later.
            if not force and wait is not None and 0 < wait <= self._wait(10**6):
                continue
            settled += self._poll_one(batch, now, on_commit)
        self.purge(now)
        return settled

    def purge(self, now: float) -> int:
        """Delete at the Bridge the results of settled batches whose requests held words the
        person asked to forget (issue 33); how many went. A Bridge that fails the delete is
        asked again :data:`PURGE_RETRY_SECONDS` later; one that no longer has the batch is
        done with it."""
        if now < self._purge_due:
            return 0
        done = 0
        for rid, message_batch_id in self.store.message_batches.to_purge():
            try:
                self.client.delete(message_batch_id)
            except Shutdown:
                raise
            except Gone:
                pass
            except Exception as exc:
                if status_of(exc) == 400:
                    # Not ended (its requests were released by the forget while it was out):
                    # canceled, so the Bridge ends it; deleted on a later pass.
                    self._cancel(message_batch_id)
                    self._purge_due = now + self.config.economy_poll_seconds
                else:
                    self._purge_due = now + PURGE_RETRY_SECONDS
                    self._log_once("economy_delete_failed", message_batch_id, error=problem(exc))
                continue
            self.store.message_batches.purged(rid)
            self.log.info("economy_results_deleted", message_batch_id=message_batch_id)
            done += 1
        return done

    def _cancel(self, message_batch_id: str) -> None:
        try:
            self.client.cancel(message_batch_id)
        except Shutdown:
            raise
        except Exception as exc:
            self._log_once("economy_cancel_failed", message_batch_id, error=problem(exc))

    def _wait(self, polls: int) -> float:
        """Seconds before the next look at a batch polled ``polls`` times."""
        first = self.config.economy_poll_seconds
        return min(max(first, self.config.economy_poll_max_seconds), first * 2.0 ** min(polls, 30))

    def _poll_one(
        self,
        batch: MessageBatch,
        now: float,
        on_commit: OnCommit,
    ) -> int:
        message_batch_id = str(batch.message_batch_id)
        later = now + self._wait(batch.polls + 1)
        try:
            state = self.client.retrieve(message_batch_id)
        except Shutdown:
            raise
        except Gone as exc:
            if batch.misses + 1 >= MAX_MISSES:
                return self._release_all(
                    batch, f"the Bridge no longer knows {message_batch_id}", now
                )
            self.store.message_batches.polled(
                batch.id, next_poll=later, error=str(exc), missing=True
            )
            return 0
        except Exception as exc:
            self.store.message_batches.polled(batch.id, next_poll=later, error=problem(exc))
            self._log_once("economy_poll_failed", message_batch_id, error=problem(exc))
            return 0
        if state.status != "ended":
            self.store.message_batches.polled(batch.id, next_poll=later)
            return 0
        return self._collect(batch, state, now, on_commit)

    def _collect(
        self,
        batch: MessageBatch,
        state: BatchState,
        now: float,
        on_commit: OnCommit,
    ) -> int:
        """Read an ended batch's results and apply them in claim order."""
        message_batch_id = state.message_batch_id
        foreign = self.client.foreign_results_url(state)
        if foreign:
            self._log_once("economy_results_url_ignored", message_batch_id, results_url=foreign)
        pending = self.store.message_batches.pending_requests(batch.id)
        last_read = batch.fetches + 1 >= MAX_FETCHES
        soon = now + self.config.economy_poll_seconds
        try:
            expected = {r.custom_id: Sent(r.request_chars, r.cached_chars) for r in pending}
            done = self.store.message_batches.custom_ids(batch.id) - set(expected)
            results = self.client.results(message_batch_id, expected, done)
        except Shutdown:
            raise
        except Exception as exc:
            if last_read:
                return self._release_all(batch, f"results unreadable: {problem(exc)}", now)
            self.store.message_batches.polled(
                batch.id, next_poll=soon, error=problem(exc), ended_at=state.ended_at, fetched=True
            )
            return 0
        for damage in results.problems[:5]:
            self.log.warning(
                "economy_results_damaged", message_batch_id=message_batch_id, problem=damage
            )
        base = self._base(batch)
        settled = 0
        for request in pending:
            result = results.by_id.get(request.custom_id)
            if result is None and not last_read:
                break  # read again before going on: results are applied in claim order
            self._settle(request, result, base, batch, message_batch_id, on_commit)
            settled += 1
        left = len(pending) - settled
        error = f"{left} result(s) missing; reading again" if left else None
        self.store.message_batches.polled(
            batch.id, next_poll=soon, error=error, ended_at=state.ended_at, fetched=True
        )
        return settled

    def _settle(
        self,
        request: BatchRequest,
        result: Result | None,
        base: dict[str, str],
        batch: MessageBatch,
        message_batch_id: str,
        on_commit: OnCommit,
    ) -> None:
        """Book the request's charge, then apply its reply or hand its turns to the prompt
        lane; the outcome is recorded last (a crash in between reads the result again, and
        the ledger refuses the second commit)."""
        now = self.clock()
        if result is None or result.reply is None:
            why = "result missing" if result is None else f"{result.kind}: {result.error}"
            # The API bills a request that succeeded, whatever became of its line: one read
            # as unreadable is priced as a full answer; one missing or garbled through every
            # read may have succeeded, so its estimate stays (found by the soak: a truncated
            # results file's last request, billed by the Bridge, was booked void).
            how: Unanswered = "void"  # errored, expired, canceled: not billed
            if result is None:
                how = "lost"
            elif result.kind == "unreadable":
                how = "unreadable"
            self.meter.unanswered(request.charge_id, how)
            self.log.warning(
                "economy_request_failed",
                message_batch_id=message_batch_id,
                custom_id=request.custom_id,
                why=why,
            )
            self.store.message_batches.settle_request(
                batch.id, request.custom_id, RELEASED, why, now
            )
            return
        if result.usage is not None:
            self.meter.answered(request.charge_id, result.usage, result.message_id)
        turns = self.store.turns.turns_by_id(list(request.turn_ids))
        if not turns:  # gone meanwhile (transcript.db replaced under us): nothing to apply
            self.store.message_batches.settle_request(
                batch.id, request.custom_id, COVERED, "gone", now
            )
            return
        seen = Seen(
            base, request.actions, request.offered, request.started_at, shown=ECONOMY_RENDERING
        )
        # Its latency is the batch's: from the create call to the result read.
        waited = (now - (batch.submitted_at or batch.created_at)) * 1000
        done = self.pipeline.apply(
            turns,
            seen,
            replace(result.reply, latency_ms=max(0.0, waited)),
            on_commit,
            message_batch=(message_batch_id, request.custom_id),
        )
        outcome = APPLIED if done.result is not None else COVERED
        self.store.message_batches.settle_request(
            batch.id, request.custom_id, outcome, None, self.clock()
        )

    def _release_all(self, batch: MessageBatch, why: str, now: float) -> int:
        """Hand every request of ``batch`` without an outcome to the prompt lane."""
        pending = self.store.message_batches.pending_requests(batch.id)
        for request in pending:
            self.meter.unanswered(request.charge_id, "lost")
            self.store.message_batches.settle_request(
                batch.id, request.custom_id, RELEASED, why, now
            )
        self.log.warning(
            "economy_batch_released",
            message_batch_id=batch.message_batch_id,
            requests=len(pending),
            why=why,
        )
        return len(pending)

    def _base(self, batch: MessageBatch) -> dict[str, str]:
        """The memory files the batch's requests were built from."""
        try:
            loaded = json.loads(batch.base_json)
        except ValueError:
            loaded = {}
        if not isinstance(loaded, dict):
            return {}
        return {str(k): v for k, v in loaded.items() if isinstance(v, str)}

    def _log_once(self, event: str, message_batch_id: str, **fields: Any) -> None:
        key = f"{event}:{message_batch_id}"
        if key not in self._warned:
            self._warned.add(key)
            self.log.warning(event, message_batch_id=message_batch_id, **fields)


def economy_off(store: Store, now: float) -> dict[str, Any] | None:
    """Why the economy lane is off (``since``, ``reason``, ``probe_at``) while ``now`` is
    before its daily probe; None: on (also for a state row that is not what this code
    writes)."""
    raw = store.ledger.get_state(OFF_KEY)
    try:
        off = json.loads(raw) if raw else None
    except ValueError:
        return None
    if not isinstance(off, dict) or not isinstance(off.get("probe_at"), int | float):
        return None
    return off if now < float(off["probe_at"]) else None


def report(store: Store, lane: str, now: float) -> dict[str, Any]:
    """The lane as ``wsd status`` and ``wsd doctor`` show it (read-only): the setting, whether
    the economy lane is off and why, and every Message Batch in flight with its age."""
    in_flight = []
    for batch in store.message_batches.summary():
        since = batch.get("submitted_at") or batch.get("created_at")
        age = now - float(since) if isinstance(since, int | float) else None
        # wsd.status/1 named its id remote_id: kept for that schema's readers (same value).
        alias = {"remote_id": batch.get("message_batch_id")}
        in_flight.append(batch | alias | {"age_s": None if age is None else round(age, 1)})
    return {
        "lane": lane,
        "economy_off": economy_off(store, now),
        "in_flight": in_flight,
    }
