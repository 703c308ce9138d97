"""Doctor checks of the way to the curator: the economy lane (off because the Bridge has no
batches endpoint, a Message Batch out past the wait limit, one stuck in its create call) and
whether the Bridge answers at all."""

from __future__ import annotations

import time
import urllib.error
import urllib.request

from wsd.daemon.ops.doctor.findings import Reporter
from wsd.daemon.runtime.dates import iso_time
from wsd.schema.errors import describe

#: A batch recorded and never given the Bridge's id this long is stuck in its create call.
SUBMITTING_STUCK_SECONDS = 600.0


def economy(doctor: Reporter) -> None:
    """The economy lane: off (the Bridge has no batches endpoint), a Message Batch out past
    the wait limit, or one stuck in its create call."""
    from wsd.daemon.curation.economy import lane as economy_lane

    now = time.time()
    report = economy_lane.report(doctor.store, doctor.curation, now)
    off = report["economy_off"]
    if doctor.curation == "economy" and isinstance(off, dict):
        doctor.add(
            "warn",
            "economy lane",
            f"off: {off.get('reason')}; every batch goes as a direct call (twice the price)"
            f" until the daily probe at {iso_time(off.get('probe_at'))}",
        )
    batches = report["in_flight"]
    late = [b for b in batches if (b.get("age_s") or 0) > doctor.batch_wait_limit]
    stuck = [
        b
        for b in batches
        if b.get("status") == "submitting" and (b.get("age_s") or 0) > SUBMITTING_STUCK_SECONDS
    ]
    for b in late:
        doctor.add(
            "fail",
            "economy lane",
            f"Message Batch {b.get('message_batch_id')} has waited {float(b['age_s']) / 3600:.1f} h"
            f" for its result ({b.get('turns')} turn(s); limit"
            f" {doctor.batch_wait_limit / 3600:.1f} h, WSD_ECONOMY_WAIT_LIMIT_SECONDS); last"
            f" problem: {b.get('error') or 'none: the Bridge says it is still in progress'}",
        )
    for b in stuck:
        doctor.add(
            "warn",
            "economy lane",
            f"batch #{b.get('id')} was never given an id by the Bridge (its create call was"
            " cut); the daemon sends its turns again at its next start",
        )
    if batches and not late and not stuck:
        oldest = max(float(b.get("age_s") or 0) for b in batches)
        doctor.add(
            "ok",
            "economy lane",
            f"{len(batches)} Message Batch(es) in flight, the oldest {oldest / 60:.0f} min",
        )
    elif not batches and not (doctor.curation == "economy" and isinstance(off, dict)):
        doctor.add("ok", "economy lane", f"lane {doctor.curation}, nothing in flight")


def bridge(doctor: Reporter) -> None:
    url = doctor.bridge_url
    if not url:
        doctor.add(
            "warn",
            "bridge",
            "no Bridge URL: the daemon has not reported one and ANTHROPIC_BASE_URL is not set here",
        )
        return
    try:
        # No token is sent: reachability only. Any HTTP answer means reachable.
        request = urllib.request.Request(url, method="HEAD")
        with urllib.request.urlopen(request, timeout=3):
            pass
        doctor.add("ok", "bridge", f"{url} reachable")
    except urllib.error.HTTPError as exc:
        doctor.add("ok", "bridge", f"{url} reachable (HTTP {exc.code})")
    except (urllib.error.URLError, OSError) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        why = describe(reason) if isinstance(reason, BaseException) else str(reason)
        doctor.add("fail", "bridge", f"{url} unreachable: {why}")
