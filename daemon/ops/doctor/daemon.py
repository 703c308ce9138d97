"""Doctor checks of the daemon and its curation, judged from what it says of itself (its
heartbeat) and from the ledger: the turns waiting to be curated, whether it runs (and under
supervisord), what keeps it from curating (a Bridge outage, the daily budget), who holds
the instance lock, and a rebuild running or one that died."""

from __future__ import annotations

import contextlib
import os
import time

from wsd.daemon.ops import deploy
from wsd.daemon.ops.doctor.findings import Reporter
from wsd.daemon.ops.doctor.program import not_running
from wsd.daemon.runtime import instance
from wsd.daemon.runtime.dates import iso_time
from wsd.daemon.runtime.heartbeat import State, pid_alive, read_status
from wsd.daemon.runtime.pause import holder_pid, pause_path
from wsd.daemon.store import aside_path, leftovers, remove

STALE_PENDING_SECONDS = 3600.0
HEARTBEAT_STALE_SECONDS = 60.0
#: A Bridge outage longer than this is a failure, not a blip the retries ride out.
OUTAGE_FAIL_SECONDS = 1800.0


def processing(doctor: Reporter) -> None:
    now = time.time()
    backlog = doctor.store.turns.backlog()
    age = backlog.age(now)
    parked = doctor.store.ledger.stats()["parked"]
    if backlog.in_flight and age is not None and age > STALE_PENDING_SECONDS:
        # One Message Batch at a time: the turns wait for its result (the economy check
        # judges how long it has been out).
        doctor.add(
            "ok",
            "processing",
            f"{_turns(backlog.pending)} pending ({backlog.in_flight} in a Message Batch in"
            f" flight), oldest {age:.0f}s old",
        )
    elif age is not None and age > STALE_PENDING_SECONDS:
        doctor.add(
            "fail",
            "processing",
            f"{_turns(backlog.pending)} pending, oldest {age:.0f}s "
            "old: is the daemon running and the Bridge reachable?",
        )
    else:
        doctor.add("ok", "processing", f"{_turns(backlog.pending)} pending")
    if parked:
        doctor.add("warn", "parked batches", f"{parked} (inspect, then `wsd retry`)")


def _turns(count: int) -> str:
    return f"{count} turn" + ("" if count == 1 else "s")


def instances(doctor: Reporter) -> None:
    """Who holds the instance lock, and any ``wsd run`` of this workspace beside it."""
    held = instance.holders(doctor.layout)
    beat = read_status(doctor.layout) or {}
    running = beat.get("pid") if pid_alive(beat.get("pid")) else None
    runs = instance.wsd_runs(doctor.layout.root)
    others = [p for p in runs if p not in held]
    if len(held) > 1 or others:
        doctor.add(
            "fail",
            "instances",
            f"more than one daemon for this workspace: lock held by {_pids(held, 'nobody')},"
            f" other `wsd run` processes: {_pids(others, 'none')} (stop all but one)",
        )
    elif held and held[0] not in runs:
        doctor.add(
            "fail",
            "instances",
            f"the instance lock ({instance.lock_path(doctor.layout)}) is held by pid"
            f" {held[0]}, which is not a `wsd run` of this workspace: no daemon can start",
        )
    elif held and running is not None and held != [running]:
        doctor.add(
            "fail",
            "instances",
            f"the instance lock ({instance.lock_path(doctor.layout)}) is held by pid"
            f" {held[0]}, not by the daemon of the heartbeat (pid {running})",
        )
    elif held:
        doctor.add("ok", "instances", f"one daemon, pid {held[0]}, holds the instance lock")
    else:
        doctor.add("ok", "instances", "no daemon holds the instance lock")


def _pids(pids: list[int], none: str) -> str:
    """Process ids for a report line: ``pid 12, 34``, or ``none``."""
    return "pid " + ", ".join(str(p) for p in pids) if pids else none


def rebuild_leftovers(doctor: Reporter) -> None:
    """A live rebuild or forget (the daemon waits for it), or what one that died left."""
    from wsd.daemon.runtime.pause import holder

    pid = holder_pid(doctor.layout)
    what = holder(doctor.layout)  # rebuild or forget: the pause file says which
    if pid is not None:
        doctor.add("warn", "rebuild", f"wsd {what} (pid {pid}) running: curation is paused")
        return
    left = leftovers(doctor.layout)
    names = ", ".join(os.path.basename(p) for p in left)
    if not left:
        doctor.add("ok", "rebuild", "none running, nothing left behind")
    elif doctor.fix:
        remove(aside_path(doctor.layout))
        with contextlib.suppress(FileNotFoundError):
            os.unlink(pause_path(doctor.layout))
        doctor.add("warn", "rebuild", f"removed what a {what} that died left: {names}", True)
    else:
        doctor.add(
            "fail",
            "rebuild",
            f"a wsd {what} died and left {names} (the live memory is unchanged; --fix removes them)"
            if what != "forget"
            else f"a wsd forget died and left {names} (its erasure is finished by the daemon's"
            " next pass or the next forget; --fix removes the file)",
            fixable=True,
        )


def daemon(doctor: Reporter) -> None:
    """Whether the daemon runs (its heartbeat), and under supervisord; one that does not is
    shown with what supervisord says of it (:func:`.program.not_running`)."""
    beat = read_status(doctor.layout)
    broken = doctor.settings_broken
    if beat is None:
        detail = "never ran in this workspace (no heartbeat)"
        not_running(doctor, detail, settings_broken=broken)
        return
    age = time.time() - float(beat.get("heartbeat_at") or 0)
    alive = pid_alive(beat.get("pid"))
    supervised = bool(beat.get("supervised"))
    if not alive or beat.get("state") == State.STOPPED:
        detail = f"not running (last heartbeat {age:.0f}s ago)"
        not_running(doctor, detail, settings_broken=broken)
    elif age > HEARTBEAT_STALE_SECONDS:
        doctor.add(
            "fail",
            "daemon",
            f"pid {beat.get('pid')} alive but heartbeat {age:.0f}s old: stuck?",
        )
    else:
        doctor.add(
            "ok",
            "daemon",
            f"pid {beat.get('pid')}, state {beat.get('state')}, heartbeat {age:.0f}s ago",
        )
    if alive and not supervised:
        doctor.add("warn", "supervisord", "the daemon is not running under supervisord")
    elif alive:
        doctor.add("ok", "supervisord", f"program {beat.get('supervised')}")


def curation(doctor: Reporter) -> None:
    """What the daemon says keeps it from curating (its heartbeat, not this shell)."""
    beat = read_status(doctor.layout) or {}
    if not pid_alive(beat.get("pid")) or beat.get("state") == State.STOPPED:
        return  # the daemon check says it is down
    now = time.time()
    budget = beat.get("budget")
    if beat.get("state") == State.BACKOFF:
        since = float(beat.get("outage_since") or now)
        level = "fail" if now - since > OUTAGE_FAIL_SECONDS else "warn"
        doctor.add(
            level,
            "curation",
            f"stalled: the Bridge has failed for {(now - since) / 60:.0f} min"
            f" ({beat.get('last_error') or 'no answer'}); next attempt at"
            f" {iso_time(beat.get('next_attempt_at'))}. Check that the Bridge"
            f" ({doctor.bridge_url or 'ANTHROPIC_BASE_URL'}) answers and WSD_BRIDGE_TOKEN is"
            " valid; the daemon retries by itself and loses nothing meanwhile",
        )
    elif beat.get("state") == State.FAILING:
        doctor.add(
            "fail",
            "curation",
            f"its last pass failed: {beat.get('last_error') or 'see pass_failed in its log'}; the"
            " daemon tries again each pass and loses nothing meanwhile",
        )
    elif beat.get("state") == State.BUDGET or isinstance(budget, dict):
        b = budget if isinstance(budget, dict) else {}
        doctor.add(
            "warn",
            "curation",
            f"paused by the daily budget: ${b.get('spent_usd', '?')} of"
            f" ${b.get('cap_usd', '?')} spent today; resumes at {iso_time(b.get('resumes_at'))}"
            " (to resume now, raise it: "
            + deploy.settings_hint(doctor.layout, "WSD_DAILY_BUDGET_USD")
            + "); turns wait, nothing is lost",
        )
    else:
        doctor.add("ok", "curation", f"state {beat.get('state')}, no outage or budget pause")
