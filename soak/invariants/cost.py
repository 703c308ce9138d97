"""Invariants of money: every done batch priced as the answer the Bridge gave for it (an
economy one at half), and every answer booked toward the daily cap at its usage and price."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from soak.invariants.check import Check, query
from soak.world import World
from wsd.daemon.runtime.config import (
    DEFAULT_ECONOMY_PRICE_FACTOR,
    DEFAULT_MAX_TOKENS,
    DEFAULT_PRICE_INPUT,
    DEFAULT_PRICE_OUTPUT,
)
from wsd.daemon.standin.steps import Billed


def cost(world: World, batch_billed: list[Billed]) -> Check:
    """The ledger's cost of each done batch is the cost of the answer the Bridge gave for
    exactly that batch's turns: a direct call's (the prompt lane) at the price, a Message
    Batch result's (the economy lane) at WSD_ECONOMY_PRICE_FACTOR (half) of it, and that result
    is the one the stand-in billed under the batch's Message Batch id and custom_id. An answer whose
    usage was a lie is priced at the daemon's estimate (halved on the economy lane), never
    below zero. Checked in memory.db and in every backup the soak took (a rebuild or the
    deleted memory.db re-curates every turn, so the ledger at the end may hold few economy
    rows); the total is reported beside what the Bridge billed."""
    with world.spoiler.lock:
        answers = list(world.spoiler.answers)
    billed = {(b.batch_id, b.custom_id): b.usage for b in batch_billed}
    by_turns: dict[tuple[int, ...], list[tuple[dict[str, int], str]]] = {}
    for ids, usage, mode in answers:
        by_turns.setdefault(ids, []).append((usage, mode))
    backups = sorted(Path(world.root, "backups").glob("*/memory.db"))
    mismatched, ledger = [], 0.0
    lanes: dict[str, Counter[str]] = {"memory.db": Counter(), "backups": Counter()}
    for db in [Path(world.layout.memory_db), *backups]:
        where = "memory.db" if db == Path(world.layout.memory_db) else "backups"
        rows = query(
            str(db),
            "SELECT b.id, b.cost_usd, b.input_tokens, b.output_tokens, b.lane, b.message_batch_id,"
            " b.custom_id, json_group_array(t.observation_id)"
            " FROM batches b JOIN batch_turns t ON t.batch_id = b.id"
            " WHERE b.status = 'done' GROUP BY b.id",
        )
        for batch_id, cost, tin, tout, lane, message_batch_id, custom_id, turns_json in rows:
            if where == "memory.db":
                ledger += float(cost)
            lanes[where][lane] += 1
            ids = tuple(sorted(json.loads(turns_json)))
            usages = by_turns.get(ids, [])
            factor = 1.0
            if lane == "economy":
                factor = DEFAULT_ECONOMY_PRICE_FACTOR
                result = billed.get((message_batch_id, custom_id))  # None: a result nobody billed
                usages = [(u, m) for u, m in usages if result is not None and _same(u, result)]
            expected = factor * _price(tin, tout)
            exact = any(u["input_tokens"] == tin and u["output_tokens"] == tout for u, _m in usages)
            # A lie (negative usage) or a figure no answer within max_tokens can have (the
            # flood fault's 58 KB reply "used" 14,500 output tokens) is priced at the daemon's
            # estimate.
            lied = any(_implausible(u, m) for u, m in usages) and tin > 0 and tout >= 0
            if not (exact or lied) or abs(expected - float(cost)) > 1e-9 or cost < 0:
                modes = sorted({m for _u, m in usages})
                mismatched.append(
                    f"{db.parent.name}/{db.name} #{batch_id} {lane} {message_batch_id or ''}/"
                    f"{custom_id or ''} {tin}/{tout} ${float(cost):.6f} answers {modes}"
                )
    return Check(
        "total curator cost equals the ledger's (every done batch priced as its answer,"
        " an economy one at half)",
        not mismatched,
        f"ledger ${ledger:.4f} for {sum(lanes['memory.db'].values())} batches"
        f" {dict(lanes['memory.db'])}, {len(backups)} backups {dict(lanes['backups'])};"
        f" the Bridge billed ${_billed(answers, batch_billed):.4f};"
        f" {len(mismatched)} mismatched {mismatched[:5]}",
    )


def _price(input_tokens: int, output_tokens: int) -> float:
    return (input_tokens * DEFAULT_PRICE_INPUT + output_tokens * DEFAULT_PRICE_OUTPUT) / 1e6


def _same(answer: dict[str, int], billed: dict[str, Any]) -> bool:
    return (answer["input_tokens"], answer["output_tokens"]) == (
        billed.get("input_tokens"),
        billed.get("output_tokens"),
    )


def _implausible(usage: dict[str, int], mode: str) -> bool:
    """Usage the daemon must not believe (see ``usage_of`` in daemon/curation/bridge/answer.py)."""
    return mode == "negative_usage" or not 0 <= usage["output_tokens"] <= DEFAULT_MAX_TOKENS


def _billed(
    answers: list[tuple[tuple[int, ...], dict[str, int], str]], batch_billed: list[Billed]
) -> float:
    """What the Bridge's answers cost, as it reported them (a lie included): every answer at
    the price, less the half the API takes off each Message Batch result it billed (each is
    one of the spoiler's answers: batch requests take their steps from the same responder)."""
    full = sum(_price(u["input_tokens"], u["output_tokens"]) for _ids, u, _m in answers)
    batches = sum(_price(b.usage["input_tokens"], b.usage["output_tokens"]) for b in batch_billed)
    return full - (1 - DEFAULT_ECONOMY_PRICE_FACTOR) * batches


def spend(world: World, batch_billed: list[Billed], logged: Counter[str]) -> Check:
    """Every answer the Bridge gave is booked toward the daily cap (found by the soak before
    issue 20: the Bridge billed $41.42 and the ledger held $11.68):

    * each billed charge is an answer's exact usage, at the price (a direct call) or at half
      of it (``curate-batch``: a Message Batch result); no charge is negative; there are at
      least as many charges booked (not void) as answers;
    * each Message Batch result the stand-in billed keeps a charge that is not void (the API
      bills work done, not work delivered): a result the daemon read (its request ``applied``
      or ``covered``) is billed at exactly its usage (estimated when the usage lied); one it
      never read (``released``: the batch lost, its line missing or unreadable after three
      reads) keeps an estimate; a request still pending is reported by the settled check.
      A charge the daemon could not settle (``charge_not_booked``, a full disk) stays
      ``asked`` at its estimate: as many as were logged;
    * a result of a batch whose id the daemon never recorded (a create cut by kill -9 or a
      full disk: ``economy_submission_lost``, its turns sent again) has its estimate, an
      ``asked`` curate-batch charge no request row names, kept: at least one per result."""
    with world.spoiler.lock:
        answers = list(world.spoiler.answers)
    t = world.layout.transcript_db
    rows = query(t, "SELECT id, status, usd, input_tokens, output_tokens, purpose FROM charges")
    honest = Counter(
        (u["input_tokens"], u["output_tokens"]) for _i, u, m in answers if m != "negative_usage"
    )
    billed = Counter((int(i), int(o)) for _c, s, _u, i, o, _p in rows if s == "billed")
    invented = billed - honest
    mispriced = [
        f"charge {c} {p} ${float(u):.6f} for {i}/{o}"
        for c, s, u, i, o, p in rows
        if s == "billed" and abs(float(u) - _factor(p) * _price(int(i), int(o))) > 1e-9
    ]
    booked = sum(1 for _c, s, *_ in rows if s != "void")
    by_status: dict[str, float] = {}
    for _c, status, usd, *_ in rows:
        by_status[status] = by_status.get(status, 0.0) + float(usd)
    negative = [r for r in rows if float(r[2]) < 0]
    charges = {int(r[0]): r for r in rows}
    requests = {
        (str(rid), str(cid)): (outcome, None if charge is None else int(charge))
        for rid, cid, outcome, charge in query(
            t,
            "SELECT b.message_batch_id, r.custom_id, r.outcome, r.charge_id"
            " FROM message_batch_requests r JOIN message_batches b ON b.id = r.message_batch_row"
            " WHERE b.message_batch_id IS NOT NULL",
        )
    }
    named = {charge for _o, charge in requests.values()}
    unbooked, unread, asked = [], 0, 0
    unknown: list[Billed] = []
    for result in batch_billed:
        outcome, charge = requests.get((result.batch_id, result.custom_id), (None, None))
        if (result.batch_id, result.custom_id) not in requests:
            unknown.append(result)
            continue
        row = charges.get(charge or 0)
        status = None if row is None else row[1]
        usage = (result.usage["input_tokens"], result.usage["output_tokens"])
        lied = not 0 <= usage[1] <= DEFAULT_MAX_TOKENS or min(usage) < 0
        asked += status == "asked"
        if outcome in ("applied", "covered"):
            ok = (status == "billed" and (int(row[3]), int(row[4])) == usage) if row else False
            ok = ok or (status == "estimated" and lied) or status == "asked"
        elif outcome == "released":
            unread += 1
            ok = status in ("estimated", "asked")
        else:
            ok = True  # pending: the settled check reports it
        if not ok:
            unbooked.append(f"{result.batch_id}/{result.custom_id} {outcome}: charge {status}")
    orphans = [
        c
        for c, s, _u, _i, _o, p in rows
        if p == "curate-batch" and s != "void" and int(c) not in named
    ]
    not_booked = logged["charge_not_booked"]
    ok = (
        not invented
        and not mispriced
        and booked >= len(answers)
        and not negative
        and not unbooked
        and asked <= not_booked
        and len(unknown) <= len(orphans)
    )
    return Check(
        "every answer the Bridge gave is booked toward the daily cap, at its usage and price",
        ok,
        f"{len(answers)} answers (${_billed(answers, batch_billed):.4f} billed, lies included),"
        f" {booked} booked: "
        + ", ".join(f"{k} ${v:.4f}" for k, v in sorted(by_status.items()))
        + f"; {sum(invented.values())} invented, {len(mispriced)} mispriced {mispriced[:2]},"
        f" {len(negative)} negative; {len(batch_billed)} batch results billed: {unread} never"
        f" read, {len(unbooked)} not booked {unbooked[:3]}, {asked} left asked"
        f" ({not_booked} charge_not_booked), {len(unknown)} of unrecorded batches"
        f" ({len(orphans)} orphan estimates)",
    )


def _factor(purpose: str) -> float:
    return DEFAULT_ECONOMY_PRICE_FACTOR if purpose == "curate-batch" else 1.0
