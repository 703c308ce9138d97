"""Doctor check of replication with litestream (WSD_REPLICA_URL, issue 35): on, running, and
how far behind the replica is."""

from __future__ import annotations

from wsd.daemon.ops.doctor.findings import Reporter
from wsd.daemon.replica import owed, position
from wsd.daemon.runtime.dates import iso_time


def replication(doctor: Reporter) -> None:
    """FAIL when replication is on and litestream is not running, or a database's replica is
    further behind than WSD_REPLICA_MAX_LAG_SECONDS; ok with the position otherwise."""
    settings = doctor.replica
    rep = position.read(doctor.layout, settings.url, settings.max_lag_seconds)
    if not rep.enabled:
        return
    erasure = owed.read(doctor.layout)
    if erasure is not None and erasure.pending and not rep.held:
        tries = f"{erasure.attempts} tr{'y' if erasure.attempts == 1 else 'ies'}"
        doctor.add(
            "fail",
            "replication",
            f"the replica's newest state still holds what the erasure of"
            f" {iso_time(erasure.erased_at)} erased: not written there yet ({tries}"
            + (f"; {erasure.error}" if erasure.error else "")
            + "). The daemon writes it before it ships anything else once the target can be"
            " written: make it writable (see .os/logs/litestream.log)",
        )
        return
    problem = rep.problem()
    if problem:
        doctor.add("fail", "replication", problem)
        return
    if rep.held:
        doctor.add("ok", "replication", f"to {rep.url}: held off while an erasure runs")
        return
    where = ", ".join(
        f"{p.kind}.db txid {p.local_txid} (replica {p.replica_txid}, {p.lag_seconds or 0:.1f}s"
        " behind)"
        for p in rep.databases
    )
    doctor.add("ok", "replication", f"to {rep.url}: {where}")
    if str(settings.url).startswith("sftp://") and not settings.host_key_pinned:
        doctor.add(
            "warn",
            "replication",
            "the SFTP server's host key is not pinned: set WSD_REPLICA_SFTP_HOST_KEY (its"
            " public key, as in known_hosts), or litestream trusts any server at that address",
        )
