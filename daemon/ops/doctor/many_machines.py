"""Doctor check of one memory on many machines (SPEC.md section 11, issue 47): the settings
together, each followed copy there and followed, how old a satellite's copy of home's memory
is, and machines that ship turns to the person's storage that home does not curate.

Read from the daemon's heartbeat (its settings and what it last saw): nothing is fetched
from the storage but a ``file://`` one's folder listing."""

from __future__ import annotations

import os
import time
from typing import Any

from wsd.daemon.machines import follow, places
from wsd.daemon.machines.ingest import BEACON_SECONDS
from wsd.daemon.ops.doctor.findings import Reporter
from wsd.daemon.runtime.config import Config, ConfigError
from wsd.daemon.runtime.heartbeat import beats, read_status

#: A satellite's copy of home's memory older than this is stale: home says a word every
#: BEACON_SECONDS, the word waits on home's replica sync and the follow interval, and a
#: margin of two words covers a slow pass.
STALE_MARGIN_SECONDS = 2 * BEACON_SECONDS


def _config(settings: dict[str, Any]) -> Config | None:
    env = {
        "WSD_HOME_URL": settings.get("home_url") or "",
        "WSD_MACHINE": settings.get("machine") or "",
        "WSD_ROLE": settings.get("role") or "",
        "WSD_MACHINES": ",".join(settings.get("machines") or ()),
        "WSD_REPLICA_URL": "" if settings.get("home_url") else settings.get("replica_url") or "",
    }
    try:
        return Config.from_env({k: v for k, v in env.items() if v})
    except ConfigError:
        return None


def machines(doctor: Reporter) -> None:
    """FAIL on settings that do not go together, a followed copy that is missing, unreadable
    or not followed while the daemon runs, a satellite's copy of home's memory older than
    the beacon allows; WARN for a machine in a ``file://`` storage that home does not list;
    ok with each copy's state otherwise. Nothing on a machine alone."""
    beat = read_status(doctor.layout)
    settings = (beat or {}).get("settings")
    if not isinstance(settings, dict) or not settings.get("home_url"):
        return
    cfg = _config(settings)
    if cfg is None or cfg.machines_problem():
        why = cfg.machines_problem() if cfg is not None else "the settings cannot be read"
        doctor.add("fail", "machines", f"{why} (the daemon curates and follows nothing)")
        return
    now = time.time()
    alive = beats(beat, now)
    if cfg.satellite:
        _satellite(doctor, cfg, dict((beat or {}).get("home_copy") or {}), alive, now)
    else:
        _home(doctor, cfg, dict((beat or {}).get("machines") or {}), alive)


def _satellite(
    doctor: Reporter, cfg: Config, copy: dict[str, Any], alive: bool, now: float
) -> None:
    path = places.home_copy(doctor.layout)
    limit = STALE_MARGIN_SECONDS + cfg.follow_seconds + cfg.replica_sync_seconds
    if not os.path.exists(path):
        doctor.add(
            "fail",
            "machines",
            f"no copy of home's memory yet at {path}: sessions here start without the"
            f" person's memory. Check that home runs and replicates to {cfg.home_url}/home"
            " (its wsd doctor), and .os/logs/litestream-follow-home.log here",
        )
        return
    if alive and not follow.following(path):
        doctor.add(
            "fail",
            "machines",
            "no litestream follows home's memory: the copy no longer changes (the daemon"
            " starts it again; see .os/logs/litestream-follow-home.log)",
        )
        return
    said = copy.get("home_said_at")
    age = now - float(said) if isinstance(said, (int, float)) else None
    if age is not None and age > limit:
        doctor.add(
            "fail",
            "machines",
            f"the copy of home's memory is {age:.0f} s old (home says a word every"
            f" {BEACON_SECONDS:.0f} s): home is down or cannot reach {cfg.home_url}, or this"
            " machine cannot",
        )
        return
    shown = "not known yet" if age is None else f"{max(0.0, age):.0f} s old"
    doctor.add("ok", "machines", f"satellite {cfg.machine}: home's memory followed, {shown}")


def _home(doctor: Reporter, cfg: Config, views: dict[str, Any], alive: bool) -> None:
    for name in cfg.machines:
        path = places.satellite_copy(doctor.layout, name)
        view = dict(views.get(name) or {})
        if not os.path.exists(path):
            doctor.add(
                "warn",
                "machines",
                f"{name} has shipped nothing yet (no copy at {path}): its turns are not"
                f" curated until it replicates to {cfg.home_url}/machines/{name}",
            )
        elif alive and not follow.following(path):
            doctor.add("fail", "machines", f"no litestream follows {name}: its turns wait")
        elif view.get("state") == "unreadable":
            doctor.add(
                "fail", "machines", f"the copy of {name} cannot be read: {view.get('error')}"
            )
        else:
            doctor.add(
                "ok",
                "machines",
                f"{name}: followed, {view.get('ingested', 0)} turns ingested,"
                f" {view.get('pending', 0)} waiting",
            )
    _unlisted(doctor, cfg)


def _unlisted(doctor: Reporter, cfg: Config) -> None:
    """Machines shipping to a ``file://`` storage that WSD_MACHINES does not list."""
    assert cfg.home_url is not None
    if not cfg.home_url.startswith("file://"):
        doctor.add(
            "ok",
            "machines",
            "machines shipping to the storage but not listed: not looked for (it needs a"
            " listing of the bucket this check does not make)",
        )
        return
    folder = os.path.join(cfg.home_url.removeprefix("file://"), "machines")
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return
    for name in names:
        if name != cfg.machine and name not in cfg.machines:
            doctor.add(
                "warn",
                "machines",
                f"{name} ships turns to {cfg.home_url}/machines/{name} but WSD_MACHINES does"
                " not list it: its turns are not curated (list it on home if it is the"
                " person's)",
            )
