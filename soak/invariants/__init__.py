"""What must hold at the end of a soak, whatever the faults did: each check with its count."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from soak.faults import Record
from soak.world import World
from wsd.daemon.memory.files import LINE_LIMITS, canonical, read_text
from wsd.daemon.memory.files_md import NOTES_LINE_LIMIT
from wsd.daemon.runtime.config import (
    DEFAULT_BATCH_PRICE_FACTOR,
    DEFAULT_FILE_CHARS,
    DEFAULT_MAX_TOKENS,
    DEFAULT_PRICE_INPUT,
    DEFAULT_PRICE_OUTPUT,
)
from wsd.daemon.runtime.fsio import TEMP_PREFIX
from wsd.daemon.standin.batches import BATCHES_PATH
from wsd.daemon.standin.steps import Billed
from wsd.schema.layout import CURATED_FILES


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


def _rows(path: str, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    conn.set_busy_timeout(10_000)
    try:
        return [tuple(r) for r in conn.execute(sql, args)]
    finally:
        conn.close()


def _manifests(folder: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted(folder.glob("manifest-*.jsonl")):
        out += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return out


def check_all(
    world: World, record: Record, manifests: Path, rss_max_mb: float, status_lies: list[str]
) -> list[Check]:
    layout = world.layout
    sessions = _manifests(manifests)
    turns = [t for s in sessions for t in s["turns"]]
    world.bridge.batches.end_all()  # the drain ended them all; ``billed`` is final now
    batch_billed = world.bridge.batches.billed
    logged = _log_events(layout.os_dir)
    checks = [
        _nothing_lost(layout.transcript_db, layout.spool, turns),
        _assembled(layout.transcript_db, turns),
        _curated_once(layout.transcript_db, layout.memory_db),
        _learnings_once(layout.memory_db),
        _md_files(world, record),
        _no_secret(world, sessions),
        _integrity(layout.transcript_db, layout.memory_db, layout.root),
        Check("daemon RSS stayed under 120 MB", rss_max_mb < 120, f"max {rss_max_mb:.1f} MB"),
        _cost(world, batch_billed),
        _spend(world, batch_billed, logged),
        _batches_settled(world, batch_billed, logged),
        _loss(layout.memory_db),
        Check(
            "a second wsd run refused at once",
            all(code not in (0, -999) for code in record.second_run_codes),
            f"exit codes {record.second_run_codes}",
        ),
        Check(
            "wsd status and wsd doctor told the truth (sampled)",
            not status_lies,
            f"{len(status_lies)} mismatch(es)" + (f": {status_lies[:3]}" if status_lies else ""),
        ),
    ]
    return checks


def _log_events(os_dir: str) -> Counter[str]:
    """How often each event is in the daemon's JSON log (supervisord's wsd.log, rotated
    files included)."""
    seen: Counter[str] = Counter()
    for path in sorted(Path(os_dir, "logs").glob("wsd.log*")):
        for line in path.read_text(errors="replace").splitlines():
            try:
                event = json.loads(line).get("event")
            except (ValueError, AttributeError):
                continue  # a traceback line, a line cut by kill -9
            if isinstance(event, str):
                seen[event] += 1
    return seen


def _events_text(db: str) -> str:
    return "\n".join(str(p) for (p,) in _rows(db, "SELECT payload FROM events"))


def _nothing_lost(db: str, spool: str, turns: list[dict[str, Any]]) -> Check:
    recorded = _events_text(db)
    rejected = Path(spool).with_name("spool.rejected.jsonl")
    rejected_text = rejected.read_text(errors="replace") if rejected.exists() else ""
    marks = [f"{t['mark']}P" for t in turns] + [f"{t['mark']}A" for t in turns]
    marks += [c for t in turns for c in t["calls"]]
    lost = [m for m in marks if m not in recorded and m not in rejected_text]
    in_rejected = sum(m in rejected_text for m in marks)
    return Check(
        "every event sent is in transcript.db or the rejected spool",
        not lost,
        f"{len(marks)} events checked, {in_rejected} rejected, {len(lost)} lost {lost[:5]}",
    )


def _assembled(db: str, turns: list[dict[str, Any]]) -> Check:
    """Each turn sent is one observation (plus the addenda that amend it, for events that
    came late to a turn already curated) with its prompt, its tool calls in order (calls
    that came late as addenda in any order) and its answer."""
    rows = _rows(
        db, "SELECT id, user_message, tool_calls_json, agent_response, amends FROM observations"
    )
    groups: dict[int, list[tuple[Any, ...]]] = {}
    for row in rows:
        groups.setdefault(int(row[4]) if row[4] is not None else int(row[0]), []).append(row)
    by_prompt: dict[str, list[int]] = {}
    for base, members in groups.items():
        user = " ".join(str(m[1] or "") for m in members)
        for mark in re.findall(r"(W\d+S\d+T\d+)P", user):
            by_prompt.setdefault(mark, []).append(base)
    wrong, via_addenda = [], 0
    for turn in turns:
        bases = by_prompt.get(turn["mark"], [])
        if len(bases) != 1:
            wrong.append(f"{turn['mark']}: in {len(bases)} turns")
            continue
        members = sorted(groups[bases[0]], key=lambda m: int(m[0]))
        via_addenda += len(members) > 1
        calls = [c for m in members for c in json.loads(m[2] or "[]")]
        seen = [x for c in calls for x in re.findall(r"W\d+S\d+T\d+C\d+", json.dumps(c))[:1]]
        in_order = seen == turn["calls"] or (
            len(members) > 1 and sorted(seen) == sorted(turn["calls"])
        )
        answers = " ".join(str(m[3] or "") for m in members)
        prompts = " ".join(str(m[1] or "") for m in members)
        if not in_order:
            wrong.append(f"{turn['mark']}: tools {seen} != {turn['calls']}")
        elif f"{turn['mark']}A" not in answers:
            wrong.append(f"{turn['mark']}: answer missing")
        elif len(re.findall(r"W\d+S\d+T\d+P", prompts)) != 1:
            wrong.append(f"{turn['mark']}: prompt shares its turn")
    return Check(
        "every turn assembled exactly as sent (prompt, tools in order, answer)",
        not wrong,
        f"{len(turns)} turns ({via_addenda} completed by addenda), {len(wrong)} wrong {wrong[:3]}",
    )


def _curated_once(transcript: str, memory: str) -> Check:
    (identity,) = _rows(transcript, "SELECT value FROM meta WHERE key = 'identity'")[0]
    ids = {int(i) for (i,) in _rows(transcript, "SELECT id FROM observations")}
    covering = Counter(
        int(oid)
        for (oid,) in _rows(
            memory,
            "SELECT t.observation_id FROM batch_turns t JOIN batches b ON b.id = t.batch_id"
            " WHERE b.status = 'done' AND t.transcript_identity = ?",
            (identity,),
        )
    )
    missing = ids - set(covering)
    twice = [i for i, n in covering.items() if n > 1]
    parked = _rows(memory, "SELECT count(*) FROM batches WHERE status = 'failed'")[0][0]
    lanes = dict(_rows(memory, "SELECT lane, count(*) FROM batches GROUP BY lane"))
    return Check(
        "every closed turn covered by exactly one done batch",
        not missing and not twice and not parked,
        f"{len(ids)} turns, {len(missing)} uncovered, {len(twice)} twice, {parked} parked;"
        f" batches by lane {lanes}",
    )


def _learnings_once(memory: str) -> Check:
    rows = _rows(memory, "SELECT content_key FROM learnings")
    doubled = [k for k, n in Counter(r[0] for r in rows).items() if n > 1]
    return Check(
        "no learning stored twice", not doubled, f"{len(rows)} learnings, {len(doubled)} doubled"
    )


def _md_files(world: World, record: Record) -> Check:
    layout = world.layout
    latest = {
        str(f): str(c)
        for f, c in _rows(
            layout.memory_db,
            "SELECT file, content FROM md_revisions WHERE id IN"
            " (SELECT max(id) FROM md_revisions GROUP BY file)",
        )
    }
    problems = []
    for name in CURATED_FILES:
        disk = read_text(layout.md(name))
        if name not in latest:
            continue
        if disk is None or canonical(name, disk) != canonical(name, latest[name]):
            problems.append(f"{name} differs from its latest revision")
        text = canonical(name, latest[name])
        limit = NOTES_LINE_LIMIT if name == "files.md" else LINE_LIMITS[name]
        if len(text.splitlines()) > limit or len(text) > DEFAULT_FILE_CHARS:
            problems.append(f"{name} over its limits")
    hand = [
        str(c)
        for (c,) in _rows(
            layout.memory_db, "SELECT content FROM md_revisions WHERE source = 'hand'"
        )
    ]
    hand += record.hand_revisions_deleted  # adopted, then deleted with memory.db by the soak
    for line in record.hand_edits:
        if not any(line in c for c in hand):
            problems.append(f"hand edit never adopted: {line[:40]}")
    return Check(
        "md files equal their latest revisions, within limits; hand edits adopted",
        not problems,
        f"{len(latest)} files, {len(record.hand_edits)} hand edits; {problems[:3]}",
    )


def _no_secret(world: World, sessions: list[dict[str, Any]]) -> Check:
    hidden = sorted({h for s in sessions for h in s["hidden"] if len(h) >= 8})
    blobs: list[tuple[str, bytes]] = []
    for folder, _dirs, files in os.walk(world.layout.os_dir):
        for name in files:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as fh:
                    blobs.append((path, fh.read()))
    blobs += [(f"bridge request {i}", r.raw) for i, r in enumerate(world.bridge.requests)]
    found = [(h, where) for h in hidden for where, data in blobs if h.encode() in data]
    return Check(
        "no secret or private span in any byte under .os/ or any Bridge request",
        not found,
        f"{len(hidden)} secrets x {len(blobs)} files and requests, {len(found)} found {found[:2]}",
    )


def _integrity(transcript: str, memory: str, root: str) -> Check:
    problems = []
    for db in (transcript, memory):
        result = [r[0] for r in _rows(db, "PRAGMA integrity_check")]
        if result != ["ok"]:
            problems.append(f"{os.path.basename(db)}: {result[:2]}")
    conn = apsw.Connection(memory)
    try:
        for table in ("learnings_fts", "turns_fts"):
            try:
                conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
            except apsw.Error as exc:
                problems.append(f"{table}: {exc}")
    finally:
        conn.close()
    temps = [
        os.path.join(d, n)
        for d, _s, files in os.walk(root)
        for n in files
        if n.startswith(TEMP_PREFIX)
    ]
    return Check(
        "integrity and FTS checks pass; no temp files left",
        not problems and not temps,
        f"{problems[:2]} temp files {temps[:2]}",
    )


def _cost(world: World, batch_billed: list[Billed]) -> Check:
    """The ledger's cost of each done batch is the cost of the answer the Bridge gave for
    exactly that batch's turns: a direct call's (the prompt lane) at the price, a Message
    Batch result's (the economy lane) at WSD_BATCH_PRICE_FACTOR (half) of it, and that result
    is the one the stand-in billed under the batch's remote id and custom_id. An answer whose
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
        rows = _rows(
            str(db),
            "SELECT b.id, b.cost_usd, b.input_tokens, b.output_tokens, b.lane, b.remote_id,"
            " b.custom_id, json_group_array(t.observation_id)"
            " FROM batches b JOIN batch_turns t ON t.batch_id = b.id"
            " WHERE b.status = 'done' GROUP BY b.id",
        )
        for batch_id, cost, tin, tout, lane, remote_id, custom_id, turns_json in rows:
            if where == "memory.db":
                ledger += float(cost)
            lanes[where][lane] += 1
            ids = tuple(sorted(json.loads(turns_json)))
            usages = by_turns.get(ids, [])
            factor = 1.0
            if lane == "economy":
                factor = DEFAULT_BATCH_PRICE_FACTOR
                result = billed.get((remote_id, custom_id))  # None: a result nobody billed
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
                    f"{db.parent.name}/{db.name} #{batch_id} {lane} {remote_id or ''}/"
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
    """Usage the daemon must not believe (see ``usage_of`` in daemon/curation/answer.py)."""
    return mode == "negative_usage" or not 0 <= usage["output_tokens"] <= DEFAULT_MAX_TOKENS


def _billed(
    answers: list[tuple[tuple[int, ...], dict[str, int], str]], batch_billed: list[Billed]
) -> float:
    """What the Bridge's answers cost, as it reported them (a lie included): every answer at
    the price, less the half the API takes off each Message Batch result it billed (each is
    one of the spoiler's answers: batch requests take their steps from the same responder)."""
    full = sum(_price(u["input_tokens"], u["output_tokens"]) for _ids, u, _m in answers)
    batches = sum(_price(b.usage["input_tokens"], b.usage["output_tokens"]) for b in batch_billed)
    return full - (1 - DEFAULT_BATCH_PRICE_FACTOR) * batches


def _spend(world: World, batch_billed: list[Billed], logged: Counter[str]) -> Check:
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
    rows = _rows(t, "SELECT id, status, usd, input_tokens, output_tokens, purpose FROM charges")
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
        for rid, cid, outcome, charge in _rows(
            t,
            "SELECT b.remote_id, r.custom_id, r.outcome, r.charge_id FROM remote_requests r"
            " JOIN remote_batches b ON b.id = r.remote_batch_id WHERE b.remote_id IS NOT NULL",
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
    return DEFAULT_BATCH_PRICE_FACTOR if purpose == "curate-batch" else 1.0


def _batches_settled(world: World, batch_billed: list[Billed], logged: Counter[str]) -> Check:
    """After the final drain no Message Batch is left in flight: every remote batch settled,
    every request given an outcome (applied, covered: discarded as curated meanwhile, or
    released to the prompt lane), no turn held. A create cut before the daemon recorded the
    Bridge's id (kill -9, a full disk) was forgotten at the next pass (logged
    ``economy_submission_lost``) and its turns sent again: the batches the stand-in billed
    that the daemon never recorded are those duplicates (counted; the ledger's unique
    batch_turns keeps them from being applied)."""
    t = world.layout.transcript_db
    unsettled = _rows(
        t, "SELECT id, remote_id, status, error FROM remote_batches WHERE status != 'settled'"
    )
    (total,) = _rows(t, "SELECT count(*) FROM remote_batches")[0]
    pending = _rows(t, "SELECT count(*) FROM remote_requests WHERE outcome IS NULL")[0][0]
    held = _rows(t, "SELECT count(*) FROM remote_turns")[0][0]
    outcomes = dict(_rows(t, "SELECT outcome, count(*) FROM remote_requests GROUP BY outcome"))
    known = {str(r) for (r,) in _rows(t, "SELECT remote_id FROM remote_batches")}
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


def _loss(memory_db: str) -> Check:
    """No curator batch took more than its allowance from a file, in any reply form: the
    lines no line of its revision says any more, against the revision before it, are at most
    a quarter (one at least) of the lines that said something (issue 20's replace-every-line
    fault, careless rewrites, truncated replies)."""
    from wsd.daemon.memory.edits import Limits, lost_lines, plain

    rows = _rows(memory_db, "SELECT file, source, content FROM md_revisions ORDER BY file, id")
    over, batches = [], 0
    previous: dict[str, str] = {}
    for name, source, content in rows:
        before = previous.get(name)
        previous[name] = content
        if source != "curator" or before is None:
            continue
        batches += 1
        lines = before.splitlines()
        allowance = Limits(0, 0).allowance(sum(1 for line in lines if plain(line)))
        lost = lost_lines(lines, content.splitlines())
        if lost > allowance:
            over.append(f"{name}: lost {lost} of {len(lines)} (allowed {allowance})")
    return Check(
        "no curator batch took more than a quarter of a file, in any reply form",
        not over,
        f"{batches} curator revisions checked; {over[:3]}",
    )
