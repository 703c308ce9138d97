"""Invariants of curation: every closed turn in exactly one done batch, no learning stored
twice, and every Message Batch settled after the final drain."""

from __future__ import annotations

from collections import Counter

from soak.invariants.check import Check, query
from soak.world import World
from wsd.daemon.standin.message_batches import BATCHES_PATH
from wsd.daemon.standin.steps import Billed


def curated_once(transcript: str, memory: str) -> Check:
    (identity,) = query(transcript, "SELECT value FROM meta WHERE key = 'identity'")[0]
    ids = {int(i) for (i,) in query(transcript, "SELECT id FROM observations")}
    covering = Counter(
        int(oid)
        for (oid,) in query(
            memory,
            "SELECT t.observation_id FROM batch_turns t JOIN batches b ON b.id = t.batch_id"
            " WHERE b.status = 'done' AND t.transcript_identity = ?",
            (identity,),
        )
    )
    missing = ids - set(covering)
    twice = [i for i, n in covering.items() if n > 1]
    parked = query(memory, "SELECT count(*) FROM batches WHERE status = 'failed'")[0][0]
    lanes = dict(query(memory, "SELECT lane, count(*) FROM batches GROUP BY lane"))
    return Check(
        "every closed turn covered by exactly one done batch",
        not missing and not twice and not parked,
        f"{len(ids)} turns, {len(missing)} uncovered, {len(twice)} twice, {parked} parked;"
        f" batches by lane {lanes}",
    )


def learnings_once(memory: str) -> Check:
    rows = query(memory, "SELECT content_key FROM learnings")
    doubled = [k for k, n in Counter(r[0] for r in rows).items() if n > 1]
    return Check(
        "no learning stored twice", not doubled, f"{len(rows)} learnings, {len(doubled)} doubled"
    )


def batches_settled(world: World, batch_billed: list[Billed], logged: Counter[str]) -> Check:
    """After the final drain no Message Batch is left in flight: every Message Batch settled,
    every request given an outcome (applied, covered: discarded as curated meanwhile, or
    released to the prompt lane), no turn held. A create cut before the daemon recorded the
    Bridge's id (kill -9, a full disk) was forgotten at the next pass (logged
    ``economy_submission_lost``) and its turns sent again: the batches the stand-in billed
    that the daemon never recorded are those duplicates (counted; the ledger's unique
    batch_turns keeps them from being applied)."""
    t = world.layout.transcript_db
    unsettled = query(
        t,
        "SELECT id, message_batch_id, status, error FROM message_batches WHERE status != 'settled'",
    )
    (total,) = query(t, "SELECT count(*) FROM message_batches")[0]
    pending = query(t, "SELECT count(*) FROM message_batch_requests WHERE outcome IS NULL")[0][0]
    held = query(t, "SELECT count(*) FROM in_flight_turns")[0][0]
    outcomes = dict(
        query(t, "SELECT outcome, count(*) FROM message_batch_requests GROUP BY outcome")
    )
    known = {str(r) for (r,) in query(t, "SELECT message_batch_id FROM message_batches")}
    duplicates = {b.batch_id for b in batch_billed} - known
    creates = sum(1 for r in world.bridge.requests if r.method == "POST" and r.path == BATCHES_PATH)
    return Check(
        "every Message Batch settled after the final drain (none in flight, no turn held)",
        not unsettled and not pending and not held,
        f"{total} batches recorded ({creates} creates at the Bridge), requests {outcomes};"
        f" {len(unsettled)} unsettled {unsettled[:2]}, {pending} pending, {held} turns held;"
        f" {logged['economy_submission_lost']} submissions lost, {len(duplicates)} duplicate"
        f" batches billed; released {logged['economy_batch_released']} whole batches,"
        f" {logged['economy_request_failed']} requests; lane off"
        f" {logged['economy_unavailable']} time(s), back {logged['economy_available']}",
    )
