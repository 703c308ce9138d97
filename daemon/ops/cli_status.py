"""``wsd status`` and ``wsd flush``: what the daemon is doing, told from its own heartbeat.

The daemon reports its effective settings in the heartbeat it writes; status shows those (the
operator's shell may hold none of them, or others), with times as ISO 8601 (UTC) and ages
(``--json`` keeps the epoch fields for machines).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from wsd.daemon.runtime.config import Config
from wsd.daemon.runtime.dates import iso_time
from wsd.schema.layout import DEFAULT_WORKSPACE, Layout

#: What ``wsd status --json`` promises (README: "Machine-readable output"): within a version
#: fields are only added; one removed or changed in meaning is a new version.
STATUS_SCHEMA = "wsd.status/1"


def config_of(args: argparse.Namespace, env: Mapping[str, str]) -> Config:
    """The settings of this shell, for the workspace ``--workspace`` or WSD_WORKSPACE names."""
    config = Config.from_env(env)
    root = args.workspace or config.workspace or DEFAULT_WORKSPACE
    return replace(config, workspace=os.path.abspath(root))


def _forget_requests(store: Any) -> dict[str, Any] | None:
    """The requests to forget from conversation that wait for the person's yes, and those
    refused (where they were asked, and why); None when there are none."""
    asked = store.erasure.requests()
    waiting = [a for a in asked if a.status != "refused"]
    refused = [
        {"asked_in": a.asked_in or None, "reason": a.reason, "at": round(a.created_at, 1)}
        for a in asked
        if a.status == "refused"
    ]
    if not waiting and not refused:
        return None
    return {"waiting": len(waiting), "refused": refused}


def cmd_status(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from wsd.daemon.curation.economy import lane as economy
    from wsd.daemon.curation.judging import erosion
    from wsd.daemon.replica import position
    from wsd.daemon.runtime.heartbeat import beats, read_status
    from wsd.daemon.store import Store

    config = config_of(args, env)
    layout = Layout(config.workspace)
    store = Store(layout)
    unready = store.maintenance.unready()
    if unready:  # read-only: say what state the workspace is in, create nothing
        return _status_unready(layout, unready, read_status(layout), args.json)
    now = time.time()
    backlog = store.turns.backlog()
    age = backlog.age(now)
    # A satellite's learnings and actions are the person's, in its copy of home's memory.
    stats = _stats(store, layout)
    beat = read_status(layout)
    reported = (beat or {}).get("settings")
    settings: dict[str, Any] = dict(reported) if isinstance(reported, dict) else config.reported()
    # A heartbeat left by a daemon killed (-9, the VM frozen) is not its state now (issue
    # 45: after kill -9 status still said "idle"): not running is said, the last state kept.
    alive = beats(beat, now)
    report = {
        "schema": STATUS_SCHEMA,
        "workspace": layout.root,
        "daemon_running": alive,
        "state": (beat.get("state") if alive else NOT_RUNNING) if beat else None,
        "last_state": None if alive or not beat else beat.get("state"),
        "heartbeat_age_s": round(now - beat["heartbeat_at"], 1)
        if beat and beat.get("heartbeat_at")
        else None,
        "backlog": backlog.pending,
        "oldest_pending_age_s": None if age is None else round(age, 1),
        "flush_pending": backlog.flush_upto is not None,
        "last_batch": stats["last_batch"],
        "parked_batches": stats["parked"],
        "batches_done": stats["done"],
        # Reply items not in the words their kind needs, refused or downgraded (issue 32).
        "ungrounded_items": stats["ungrounded"],
        "learnings": stats["learnings"],
        "open_actions": stats["open_actions"],
        "bridge_errors": (beat or {}).get("counters", {}).get("bridge_errors", 0),
        "next_attempt_at": (beat or {}).get("next_attempt_at"),
        "last_error": (beat or {}).get("last_error"),
        "md_write_failed": (beat or {}).get("md_write_failed"),
        "tokens": {
            "input": stats["input_tokens"],
            "output": stats["output_tokens"],
            "cache_read": stats["cache_read_tokens"],
        },
        "cost_usd": round(float(stats["cost_usd"]), 6),
        "spent_today_usd": round(_spent_today(store, beat, now), 6),
        "daily_budget_usd": settings.get("daily_budget_usd", config.daily_budget_usd),
        "budget_paused": (beat or {}).get("budget"),
        "md_removals_waiting": {
            e.file: e.to_json()
            for e in erosion.waiting_files(store, now, float(settings.get("erosion", 0.5)))
        }
        or None,
        "semantic": (beat or {}).get("semantic"),
        # When the person last had something erased, and how much of each kind: never what.
        "last_forget": _last_forget(store, layout, settings),
        # Requests to forget from conversation (issue 43): waiting for the person's yes, and
        # those refused (where, why: never the words), so that nothing is refused silently.
        "forget_requests": _forget_requests(store),
        "curation": economy.report(store, str(settings.get("curation", config.curation)), now),
        "replication": position.read(layout, *position.settings_of(settings)[:2], now).as_json(),
        # One memory on many machines (SPEC.md section 11): this machine's part, each copy's
        # age, each satellite's ingest (None on a machine alone).
        "machines": _machines(beat if alive else None, settings, now),
        "settings": settings,
        "settings_from": "the daemon (its heartbeat)"
        if reported
        else "this shell (the daemon has not reported its settings)",
    }
    return _print(report, args.json, now)


def _print(report: dict[str, Any], as_json: bool, now: float) -> int:
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        _print_readable({k: v for k, v in report.items() if k != "schema"}, now)
    return 0


def _stats(store: Any, layout: Layout) -> dict[str, Any]:
    """The ledger's figures; on a satellite, learnings and actions as its copy of home's
    memory has them (what its sessions are shown), when it has one."""
    from wsd.daemon.store import Store

    stats: dict[str, Any] = store.ledger.stats()
    reading = layout.reading()
    if reading is not layout:
        try:
            person = Store(reading).ledger.stats()
        except Exception:  # a copy being replaced: the local figures stand
            return stats
        stats = stats | {k: person[k] for k in ("learnings", "open_actions")}
    return stats


def _machines(beat: Mapping[str, Any] | None, settings: Mapping[str, Any], now: float) -> Any:
    """This machine's part in one memory on many machines, from the daemon's heartbeat: a
    satellite's copy of home's memory (its age now, by home's newest word in it), home's
    view of each satellite; None on a machine alone."""
    role = settings.get("role")
    if not settings.get("home_url") or role not in ("home", "satellite"):
        return None
    out: dict[str, Any] = {
        "role": role,
        "machine": settings.get("machine"),
        "home_url": settings.get("home_url"),
    }
    if beat is None:
        return out | {"daemon": "not running: nothing followed or ingested is known"}
    if role == "satellite":
        copy = dict(beat.get("home_copy") or {})
        said = copy.get("home_said_at")
        if isinstance(said, (int, float)):
            copy["age_seconds"] = round(max(0.0, now - float(said)), 1)
        return out | {"home_copy": copy}
    satellites = {}
    for name, view in dict(beat.get("machines") or {}).items():
        view = dict(view)
        newest = view.get("newest_turn_at")
        view["newest_turn_age_s"] = (
            round(now - float(newest), 1) if isinstance(newest, (int, float)) else None
        )
        satellites[name] = view
    return out | {"satellites": satellites}


def _last_forget(store: Any, layout: Layout, settings: Mapping[str, Any]) -> Any:
    """The last erasure (when, by whom, how much: never what), and with replication on,
    whether the replica's newest state was seen written without it (replica/owed.py)."""
    from wsd.daemon.replica import owed

    last = store.erasure.last_forget()
    if last is None or not settings.get("replica_url"):
        return last
    record = owed.read(layout)
    return last | {"replica": record.as_json() if record else {"written": False}}


def cmd_metrics(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``wsd metrics``: the workspace's metrics now (read-only; the daemon need not run)."""
    from wsd.daemon.ops import metrics
    from wsd.daemon.store import Store

    layout = Layout(config_of(args, env).workspace)
    snap = metrics.Snapshotter(Store(layout)).take()
    render = metrics.openmetrics if args.format == "openmetrics" else metrics.prometheus_text
    sys.stdout.write(render(snap).decode("utf-8"))
    return 0


#: Fields holding an epoch time, shown as ISO 8601 with their age (``--json`` keeps epochs).
_TIMES = ("next_attempt_at", "started_at", "finished_at", "at", "resumes_at", "heartbeat_at")
#: Settings shown by name in the readable output (``--json`` has them all).
_SHOWN_SETTINGS = (
    "daily_budget_usd", "model", "batch_turns", "max_loss", "erosion", "bridge_url",
)  # fmt: skip


def _print_readable(report: Mapping[str, Any], now: float) -> None:
    """One ``key: value`` line each, a nested field's keys indented below it (a new user saw
    Python dicts and ``None``); times as ISO 8601 (UTC) and how long ago (or until)."""
    for key, value in report.items():
        if key == "settings":
            value = {k: value[k] for k in _SHOWN_SETTINGS if k in value}
        if key == "curation":
            value = _curation_lines(value)
        if key == "replication" and not value.get("enabled"):
            value = "off (WSD_REPLICA_URL is not set)"
        _print_field(key, value, now, 22)


def _curation_lines(curation: Mapping[str, Any]) -> dict[str, str]:
    """The lanes in words: the setting, why the economy lane is off, each Message Batch in
    flight with its age."""
    lane = str(curation.get("lane"))
    off = curation.get("economy_off")
    out = {"lane": lane}
    if lane == "economy" and isinstance(off, dict):
        out["lane"] = (
            f"economy off, prompt lane in use: {off.get('reason')}; probed again at"
            f" {iso_time(off.get('probe_at'))}"
        )
    batches = curation.get("in_flight") or []
    out["in_flight"] = f"{len(batches)} Message Batch(es)" if batches else "none"
    for b in batches:
        age = b.get("age_s")
        line = (
            f"{b.get('requests')} request(s), {b.get('turns')} turn(s), "
            f"{_ago(float(age)) if isinstance(age, int | float) else '?'} old,"
            f" {b.get('polls')} poll(s)"
        )
        out[str(b.get("message_batch_id") or f"#{b.get('id')} (submitting)")] = line + (
            f"; last problem: {b['error']}" if b.get("error") else ""
        )
    return out


def _print_field(key: str, value: Any, now: float, width: int) -> None:
    if isinstance(value, dict) and value:
        print(f"{key:>{width}}:")
        for inner, item in value.items():
            _print_field(inner, item, now, width + 4)
        return
    print(f"{key:>{width}}: {_readable(key, value, now)}")


def _readable(key: str, value: Any, now: float) -> str:
    if value is None or value == {}:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if key in _TIMES and isinstance(value, int | float):
        ago = now - float(value)
        when = f"{_ago(ago)} ago" if ago >= 0 else f"in {_ago(-ago)}"
        return f"{iso_time(value)} ({when})"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "-"
    return str(value)


def _spent_today(store: Any, beat: Mapping[str, Any] | None, now: float) -> float:
    """The UTC day's spend as the daemon counts it (its Budget: the ledgers', never below what
    its heartbeat last saw that day, which a restore from a backup cannot take back)."""
    from wsd.daemon.curation.bridge.spend import Budget

    budget = Budget(store, 0.0)
    budget.remember((beat or {}).get("spent_today"))
    return budget.spent_today(now)


def _ago(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


#: ``wsd status``'s state of a daemon whose heartbeat is stale or whose pid is gone.
NOT_RUNNING = "not running"


def _status_unready(
    layout: Layout, unready: Mapping[str, str], beat: Mapping[str, object] | None, as_json: bool
) -> int:
    """``wsd status`` on a workspace whose databases are not there yet (or were deleted)."""
    from wsd.daemon.runtime.heartbeat import beats
    from wsd.daemon.store import remedies

    report = {
        "schema": STATUS_SCHEMA,
        "workspace": layout.root,
        "databases": {f"{kind}.db": why for kind, why in unready.items()},
        "daemon_state": (beat.get("state") if beats(beat, time.time()) else NOT_RUNNING)
        if beat
        else None,
        "what_next": "; ".join(remedies(dict(unready), layout.memory_dir)),
    }
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        now = time.time()
        for key, value in report.items():
            if key != "schema":
                _print_field(key, value, now, 22)
    return 1


#: ``flush --wait`` names batches parked this recently as not curated, though its own request
#: came after them.
RECENT_PARKED_SECONDS = 600.0


def cmd_flush(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from wsd.daemon.runtime import instance
    from wsd.daemon.runtime.heartbeat import daemon_running
    from wsd.daemon.store import Store

    layout = Layout(config_of(args, env).workspace)
    store = Store(layout)
    store.migrate()
    asked = time.time()
    flush_id = store.flushes.request_flush("cli", asked)
    print(f"flush requested (#{flush_id})", flush=True)  # before any stderr line, when piped
    # Nobody to curate it: say so now, with or without --wait ("flush requested" alone read
    # as "it is being done"). A daemon just started counts: its `wsd run` is there before
    # its first heartbeat (a short grace lets a supervisord restart come up).
    grace = time.monotonic() + min(args.wait, 3.0)
    while args.wait and not daemon_running(layout) and time.monotonic() < grace:
        time.sleep(0.2)
    if not daemon_running(layout) and not instance.wsd_runs(layout.root):
        from wsd.daemon.ops.deploy import start_hint

        print(
            f"no daemon is running in {layout.root}: the flush is curated when it starts;"
            f" {start_hint(layout)}",
            file=sys.stderr,
        )
        return 1
    deadline = time.monotonic() + args.wait
    while args.wait and time.monotonic() < deadline:
        handled, error = store.flushes.flush_outcome(flush_id)
        if handled and error:
            print(f"flush done, but {error}", file=sys.stderr)
            return 1
        if handled:
            # A turn parked just before this flush was asked for (an earlier flush or the
            # threshold took it) left this one nothing to do: "flush done" alone misled.
            recent = store.ledger.parked_since(asked - RECENT_PARKED_SECONDS)
            if recent:
                batch_id, why = recent[0]
                print(
                    f"flush done, but {len(recent)} batch(es) parked in the last"
                    f" {RECENT_PARKED_SECONDS // 60:.0f} min, not curated (batch {batch_id}:"
                    f" {(why or 'rejected')[:200]}); wsd status shows them, wsd retry runs"
                    " them again",
                    file=sys.stderr,
                )
                return 1
            print("flush done")
            return 0
        time.sleep(0.2)
    if args.wait:
        print(f"flush not done yet: {_why_waiting(layout)}", file=sys.stderr)
        return 1
    return 0


def _why_waiting(layout: Layout) -> str:
    """What the daemon's heartbeat says it is doing instead of curating (``flush --wait``)."""
    from wsd.daemon.runtime.heartbeat import State, daemon_running, read_status

    if not daemon_running(layout):
        return f"no daemon is running in {layout.root} (it curates the flush when it starts)"
    beat = read_status(layout) or {}
    state = beat.get("state")
    if state == State.BACKOFF:
        return (
            f"the Bridge is failing ({beat.get('last_error') or 'no answer'}); the daemon"
            f" tries again at {iso_time(beat.get('next_attempt_at'))}"
        )
    if state == State.FAILING:
        why = beat.get("last_error") or "see its log"
        return f"its passes fail ({why}); it tries again each pass"
    budget = beat.get("budget")
    if state == State.BUDGET or budget:
        b = budget if isinstance(budget, dict) else {}
        from wsd.daemon.ops.deploy import settings_hint

        return (
            f"the daily budget is spent (${b.get('spent_usd', '?')} of ${b.get('cap_usd', '?')},"
            f" WSD_DAILY_BUDGET_USD); curation resumes at {iso_time(b.get('resumes_at'))}; to"
            f" resume now, {settings_hint(layout, 'WSD_DAILY_BUDGET_USD')}"
        )
    if state == State.PAUSED:
        return "a wsd rebuild holds the memory; the daemon curates once it ends"
    return f"the daemon is {state or 'starting'}; still working through the backlog"
