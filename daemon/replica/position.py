"""Where replication stands: each database's position, the replica's, and the lag.

Read from the running litestream's control socket (``POST /sync`` without waiting: it folds
the WAL's new frames into its local position and answers with that and the replica's; it
uploads nothing more than it would anyway). The lag of a database is the age of its oldest
change not yet on the replica (the local LTX file just past the replica's position: litestream
writes one per change it takes in), 0 when the replica has everything.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, NamedTuple

from wsd.daemon.replica import hold, litestream
from wsd.daemon.runtime.config import DEFAULT_REPLICA_MAX_LAG_SECONDS
from wsd.schema.layout import Layout


@dataclass(frozen=True)
class Position:
    """One database's replication position (txids as litestream counts them)."""

    kind: str
    local_txid: int | None = None
    replica_txid: int | None = None
    lag_seconds: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class Replication:
    """The whole picture: on or off, litestream running or not, and each database."""

    enabled: bool
    url: str | None = None
    running: bool = False
    held: bool = False
    max_lag_seconds: float = 0.0
    databases: tuple[Position, ...] = ()

    @property
    def lag_seconds(self) -> float | None:
        """The worst lag, None when unknown."""
        lags = [p.lag_seconds for p in self.databases if p.lag_seconds is not None]
        return max(lags) if lags and len(lags) == len(self.databases) else None

    def caught_up(self) -> bool:
        """Off, held for an erasure, or every database's replica has every change (a lag of
        0): nothing that grows while nobody looks."""
        if not self.enabled or self.held:
            return True
        return self.running and all(p.lag_seconds == 0 for p in self.databases)

    def problem(self) -> str | None:
        """What ``wsd doctor`` fails on (None: nothing)."""
        if not self.enabled:
            return None
        if self.held:
            return None  # an erasure is running: litestream is stopped on purpose
        if not self.running:
            try:
                litestream.binary()
            except litestream.Missing as exc:
                return f"replication is on (WSD_REPLICA_URL) but {exc}"
            return (
                "replication is on (WSD_REPLICA_URL) but litestream is not running: start the"
                " daemon (it supervises litestream); its log is .os/logs/litestream.log"
            )
        for p in self.databases:
            said = f" (litestream: {p.error})" if p.error else ""
            if p.lag_seconds is None:
                return f"litestream cannot say where {p.kind}.db stands{said}"
            if p.lag_seconds > self.max_lag_seconds:
                return (
                    f"{p.kind}.db's replica is {p.lag_seconds:.0f}s behind (more than"
                    f" WSD_REPLICA_MAX_LAG_SECONDS={self.max_lag_seconds:g}){said}: see"
                    " .os/logs/litestream.log"
                )
        return None

    def as_json(self) -> dict[str, object]:
        return {
            "enabled": self.enabled,
            "url": self.url,
            "running": self.running,
            "held_for_erasure": self.held,
            "lag_seconds": _rounded(self.lag_seconds),
            "max_lag_seconds": self.max_lag_seconds if self.enabled else None,
            "databases": {
                p.kind: {
                    "local_txid": p.local_txid,
                    "replica_txid": p.replica_txid,
                    "lag_seconds": _rounded(p.lag_seconds),
                    "error": p.error,
                }
                for p in self.databases
            },
        }


def _rounded(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def _oldest_unshipped(db_path: str, replica_txid: int) -> float | None:
    """When litestream took in the oldest change past ``replica_txid``: the mtime of the
    first of its local change files (``ltx/0/MIN-MAX.ltx``) ending past it; None when there
    is none (litestream has folded them away)."""
    folder = os.path.join(litestream.meta_dir(db_path), "ltx", "0")
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    past = []
    for name in names:
        low, _, high = name.removesuffix(".ltx").partition("-")
        try:
            if int(high, 16) > replica_txid:
                past.append((int(low, 16), name))
        except ValueError:
            continue
    for _txid, name in sorted(past):
        try:
            return os.stat(os.path.join(folder, name)).st_mtime
        except OSError:
            continue
    return None


def _micro(stamp: str) -> str:
    """Go's RFC 3339 with nanoseconds, cut to what ``fromisoformat`` reads."""
    stamp = stamp.replace("Z", "+00:00")
    head, dot, tail = stamp.partition(".")
    if not dot:
        return stamp
    digits = len(tail) - len(tail.lstrip("0123456789"))
    return f"{head}.{tail[: min(digits, 6)]}{tail[digits:]}"


def _stamp(raw: object) -> float | None:
    if not isinstance(raw, str):
        return None
    try:
        return datetime.fromisoformat(_micro(raw)).timestamp()
    except ValueError:
        return None


def _last_synced(layout: Layout) -> tuple[dict[str, float], float | None]:
    """Each database's last successful upload (litestream's ``/list``), and when litestream
    started (``/info``); OSError or ValueError when it does not answer."""
    out: dict[str, float] = {}
    listed = litestream.control(layout, "GET", "/list")
    info = litestream.control(layout, "GET", "/info")
    for db in listed.get("databases") or []:
        if isinstance(db, dict):
            at = _stamp(db.get("last_sync_at"))
            if at is not None:
                out[str(db.get("path"))] = at
    return out, _stamp(info.get("started_at"))


def read(
    layout: Layout, url: str | None, max_lag_seconds: float, now: float | None = None
) -> Replication:
    """The replication picture now, for replication to ``url`` (None: off) as the daemon runs
    it; never raises: what cannot be read is an error field."""
    if not url:
        return Replication(enabled=False)
    now = time.time() if now is None else now
    running = hold.running(layout)
    base = Replication(
        enabled=True,
        url=litestream.shown(url),
        running=running,
        held=hold.held(layout),
        max_lag_seconds=max_lag_seconds,
    )
    if not running:
        return base
    out = []
    try:
        synced, started = _last_synced(layout)
    except (OSError, ValueError) as exc:
        # One question unanswered is enough: a litestream that does not answer is not asked
        # four times (the metrics file is written from the loop's thread).
        why = f"its control socket does not answer ({type(exc).__name__}: {exc})"
        return replace(
            base, databases=tuple(Position(k, error=why) for k in ("transcript", "memory"))
        )
    for kind, path in litestream.databases(layout).items():
        # Since when the replica is known to lack something: its last successful upload, or
        # litestream's start when none has succeeded yet (a replica it cannot reach at all).
        known = synced.get(path) or started
        lag: float | None
        try:
            ask = {"path": path, "timeout": 2}
            answer = litestream.control(layout, "POST", "/sync", ask, timeout=3)
            local, replica = int(answer["txid"]), int(answer["replicated_txid"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            lag = max(0.0, now - known) if known is not None else None
            out.append(Position(kind, lag_seconds=lag, error=f"{type(exc).__name__}: {exc}"))
            continue
        lag = 0.0
        if replica < local:
            since = _oldest_unshipped(path, replica) or known
            lag = max(0.0, now - since) if since is not None else None
        out.append(Position(kind, local, replica, lag))
    return replace(base, databases=tuple(out))


class Settings(NamedTuple):
    """Replication as the daemon runs it (from its reported settings, or a Config's)."""

    url: str | None
    max_lag_seconds: float = DEFAULT_REPLICA_MAX_LAG_SECONDS
    #: WSD_REPLICA_SFTP_HOST_KEY is set (an SFTP server's key pinned).
    host_key_pinned: bool = False


def settings_of(reported: Mapping[str, Any]) -> Settings:
    """:class:`Settings` from settings as the daemon reports them (or a Config's)."""
    url = reported.get("replica_url")
    lag = reported.get("replica_max_lag_seconds")
    return Settings(
        url if isinstance(url, str) and url else None,
        float(lag) if isinstance(lag, int | float) else DEFAULT_REPLICA_MAX_LAG_SECONDS,
        bool(reported.get("replica_sftp_host_key")),
    )
