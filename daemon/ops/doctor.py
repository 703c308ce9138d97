"""``wsd doctor``: check a workspace's health, explain each finding, repair what is safe.

Each check returns findings with a level: ``ok``, ``warn`` (worth knowing, not
broken) or ``fail`` (broken: the exit status is non-zero). ``--fix`` applies
only repairs that cannot lose data: permissions, rebuilding an FTS index from
its content table, rewriting md files from their latest revision, removing
temp files a crash left. It never deletes user data or rewrites history.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

import apsw

from wsd import schema
from wsd.daemon.memory import erosion
from wsd.daemon.memory import files as memory_files
from wsd.daemon.ops import deploy, doctor_deploy, doctor_states
from wsd.daemon.runtime.config import (
    DEFAULT_BATCH_WAIT_LIMIT_SECONDS,
    DEFAULT_CURATION,
    DEFAULT_EROSION,
)
from wsd.daemon.runtime.dates import iso_time
from wsd.daemon.runtime.heartbeat import pid_alive, read_status
from wsd.daemon.store import MADE_BY, Store, remedy, sha256
from wsd.schema import spool
from wsd.schema.errors import describe
from wsd.schema.layout import Layout

MIN_FREE_BYTES = 200 * 1024 * 1024
MAX_SPOOL_BYTES = 16 * 1024 * 1024
STALE_PENDING_SECONDS = 3600.0
HEARTBEAT_STALE_SECONDS = 60.0
#: A Bridge outage longer than this is a failure, not a blip the retries ride out.
OUTAGE_FAIL_SECONDS = 1800.0
MAX_WAL_BYTES = 64 * 1024 * 1024


@dataclass
class Finding:
    level: str  # ok | warn | fail
    check: str
    detail: str
    fixed: bool = False
    #: ``--fix`` repairs this (said of a finding it has not repaired yet).
    fixable: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "level": self.level,
            "check": self.check,
            "detail": self.detail,
            "fixed": self.fixed,
            "fixable": self.fixable,
        }

    def line(self) -> str:
        mark = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}[self.level]
        return f"{mark} {self.check}: {self.detail}" + (" [fixed]" if self.fixed else "")


class Doctor:
    """Runs the checks against one workspace."""

    def __init__(
        self,
        layout: Layout,
        bridge_url: str | None,
        fix: bool = False,
        erosion_fraction: float = DEFAULT_EROSION,
        lane: str = DEFAULT_CURATION,
        batch_wait_limit: float | None = None,
    ) -> None:
        self.layout = layout
        self.lane = lane
        self.batch_wait_limit = batch_wait_limit or DEFAULT_BATCH_WAIT_LIMIT_SECONDS
        self.bridge_url = bridge_url
        self.fix = fix
        self.erosion = erosion_fraction
        self.store = Store(layout)
        self.ops = self.store.maintenance
        self.findings: list[Finding] = []
        #: The settings file stops the daemon from starting (its check says how).
        self.settings_broken: object = False

    def add(
        self, level: str, check: str, detail: str, fixed: bool = False, fixable: bool = False
    ) -> None:
        self.findings.append(Finding(level, check, detail, fixed, fixable))

    def run(self) -> list[Finding]:
        """All checks in order; later checks are skipped when a database cannot be opened.
        Special files come before the md files: ``--fix`` removes a link or a FIFO in an md
        file's place, then writes the file from its revision, in one run."""
        self._checked("permissions", self.permissions)
        usable = self._checked("databases", self.databases) is True
        self._checked("special files", lambda: doctor_states.special_files(self))
        if usable:
            self._checked("processing", self.processing)
            self._checked("md files", self.md_files)
        self._checked("disk and spool", self.disk_and_spool)
        self._checked("states", lambda: doctor_states.check_states(self))
        self.settings_broken = self._checked("settings", lambda: doctor_deploy.settings(self))
        self._checked("daemon", self.daemon)
        self._checked("curation", self.curation)
        if usable:
            self._checked("economy", lambda: doctor_states.economy(self))
        self._checked("bridge", self.bridge)
        return self.findings

    def _checked(self, check: str, step: Callable[[], object]) -> object:
        """One check run; one that raises is a failure of that check and the others still
        run (a report cut short at its first surprise hides everything after it)."""
        try:
            return step()
        except Exception as exc:  # any surprise is a finding, never a traceback
            self.add("fail", check, f"could not be checked: {type(exc).__name__}: {describe(exc)}")
            return None

    def permissions(self) -> None:
        expected = [(self.layout.os_dir, 0o700), (self.layout.memory_dir, 0o700)]
        for db in (self.layout.transcript_db, self.layout.memory_db):
            expected += [(db + suffix, 0o600) for suffix in ("", "-wal", "-shm")]
        for path, mode in expected:
            # One stat, never exists-then-stat: SQLite deletes -wal and -shm when the last
            # connection closes, which a running daemon or hook does at any moment (CI saw doctor
            # print nothing but "No such file or directory" on a healthy workspace).
            try:
                actual = stat.S_IMODE(os.stat(path).st_mode)
            except FileNotFoundError:
                if not path.endswith(("-wal", "-shm")):
                    self.add("fail", "layout", f"{path} is missing ({MADE_BY})")
                continue
            if actual == mode:
                continue
            if self.fix:
                try:
                    os.chmod(path, mode)
                except FileNotFoundError:  # the -wal or -shm went with its last connection
                    continue
                self.add("warn", "permissions", f"{path} was {actual:04o}, now {mode:04o}", True)
            else:
                self.add(
                    "fail",
                    "permissions",
                    f"{path} is {actual:04o}, expected {mode:04o}",
                    fixable=True,
                )
        if not any(f.check in ("layout", "permissions") for f in self.findings):
            self.add("ok", "permissions", ".os/ 0700, databases 0600")

    def databases(self) -> bool:
        usable = True
        databases: tuple[tuple[schema.Kind, str], ...] = (
            ("transcript", self.layout.transcript_db),
            ("memory", self.layout.memory_db),
        )
        for kind, path in databases:
            if not os.path.exists(path):
                usable = False
                continue
            try:
                version = self.ops.schema_version(kind)
            except (apsw.Error, schema.SchemaError) as exc:
                why = f"cannot be read ({describe(exc)})"
                self.add("fail", f"{kind}.db", f"{path} {why}: {remedy(kind, why)}")
                usable = False
                continue
            if version == 0:  # a file with no schema yet: read no further, change nothing
                self.add(
                    "fail",
                    f"{kind}.db",
                    f"{path} has no schema (made and left empty?): {MADE_BY}",
                )
                usable = False
                continue
            latest = schema.latest_version(kind)
            mode = self.ops.journal_mode(kind)
            level = "ok" if version == latest and mode == "wal" else "fail"
            self.add(level, f"{kind}.db", f"schema v{version} (code: v{latest}), journal {mode}")
            problems = self.ops.integrity(kind)
            if problems and self.fix and kind == "memory":
                rebuilt = self.ops.rebuild_fts()
                problems = self.ops.integrity(kind)
                self.add("warn", "fts", f"rebuilt {', '.join(rebuilt)}", fixed=not problems)
            if problems:  # --fix rebuilds memory.db's FTS indexes (all it can repair)
                self.add(
                    "fail", f"{kind}.db integrity", "; ".join(problems), fixable=kind == "memory"
                )
            else:
                self.add("ok", f"{kind}.db integrity", "quick_check and FTS indexes ok")
            wal_bytes = _size(path + "-wal")
            if wal_bytes > MAX_WAL_BYTES:
                self.add(
                    "warn",
                    f"{kind}.db WAL",
                    f"{wal_bytes} bytes (checkpoints starved by a long reader?)",
                )
        return usable

    def processing(self) -> None:
        now = time.time()
        backlog = self.store.turns.backlog()
        age = backlog.age(now)
        parked = self.store.ledger.stats()["parked"]
        if backlog.held and age is not None and age > STALE_PENDING_SECONDS:
            # One Message Batch at a time: the turns wait for its result (the economy check
            # judges how long it has been out).
            self.add(
                "ok",
                "processing",
                f"{_turns(backlog.pending)} pending ({backlog.held} in a Message Batch in"
                f" flight), oldest {age:.0f}s old",
            )
        elif age is not None and age > STALE_PENDING_SECONDS:
            self.add(
                "fail",
                "processing",
                f"{_turns(backlog.pending)} pending, oldest {age:.0f}s "
                "old: is the daemon running and the Bridge reachable?",
            )
        else:
            self.add("ok", "processing", f"{_turns(backlog.pending)} pending")
        if parked:
            self.add("warn", "parked batches", f"{parked} (inspect, then `wsd retry`)")

    def md_files(self) -> None:
        """Each curated file against its revisions: current, missing, stale (an older
        version the daemon wrote: a crash before the write), or edited by hand (not yet
        adopted as a revision). files.md counts by its notes: the inventory is the
        watcher's."""
        for held in erosion.waiting_files(self.store, time.time(), self.erosion):
            self.add("warn", "md erosion", held.summary())
        latest = self.store.revisions.latest_md()
        stray = memory_files.stray_temp_files(self.layout)
        states: dict[str, list[str]] = {"missing": [], "stale": [], "hand": []}
        unreadable = doctor_states.unreadable_files(self)
        for name, content in sorted(latest.items()):
            if name in unreadable:
                continue
            disk = memory_files.read_text(self.layout.md(name))
            text = None if disk is None else memory_files.canonical(name, disk)
            if text == memory_files.canonical(name, content):
                continue
            if text is None:
                states["missing"].append(name)
            elif self.store.revisions.known_revision(name, sha256(text)) is not None:
                states["stale"].append(name)
            else:
                states["hand"].append(name)
        broken = states["missing"] + states["stale"]
        if not broken and not stray and not states["hand"]:
            if not unreadable:
                self.add("ok", "md files", "match their latest revisions")
            return
        if self.fix:
            done = memory_files.sync(self.layout, self.store, time.time(), temp_files=True)
            if done.failed:
                why = "; ".join(f"{name}: {error}" for name, error in sorted(done.failed.items()))
                self.add("fail", "md files", f"could not rewrite: {why}")
                return
            self.add(
                "warn",
                "md files",
                f"adopted {_names(done.adopted)}; wrote {_names(done.written)};"
                f" removed {len(stray)} temp file(s)",
                True,
            )
            return
        if states["hand"]:
            self.add(
                "warn",
                "md files",
                f"edited by hand: {_names(states['hand'])} (the running daemon adopts the edit"
                " as a new revision; --fix adopts it now)",
                fixable=True,
            )
        if broken or stray:
            problems = [
                *(f"{name} is missing" for name in states["missing"]),
                *(f"{name} is older than its latest revision" for name in states["stale"]),
                *([f"{len(stray)} temp file(s) left behind"] if stray else []),
            ]
            self.add("fail", "md files", "; ".join(problems) + " (--fix writes them)", fixable=True)

    def disk_and_spool(self) -> None:
        target = self.layout.memory_dir if os.path.isdir(self.layout.memory_dir) else "/"
        vfs = os.statvfs(target)
        free = vfs.f_bavail * vfs.f_frsize
        self.add(
            "ok" if free >= MIN_FREE_BYTES else "fail", "disk", f"{free // (1024 * 1024)} MiB free"
        )
        total = 0
        folder = self.layout.memory_dir
        for name in os.listdir(folder) if os.path.isdir(folder) else []:
            if name.startswith("spool.jsonl") and not name.endswith(spool.REFUSED_SUFFIX):
                with contextlib.suppress(OSError):  # gone meanwhile (the daemon took it)
                    found = os.lstat(os.path.join(folder, name))
                    total += found.st_size if stat.S_ISREG(found.st_mode) else 0
        oldest = doctor_states.oldest_spooled(self.layout.spool)
        age = time.time() - oldest if oldest is not None else 0.0
        if age > doctor_states.STUCK_SPOOL_SECONDS:
            # The loop curates nothing while spooled events wait (one may belong before the
            # turn it would claim), so a spool the daemon never takes holds curation back.
            self.add(
                "fail",
                "spool",
                f"{total} bytes waiting, the first event for {age:.0f}s: the daemon is not"
                " taking it (is it running? see pass_failed in its log); nothing is curated",
            )
            return
        self.add(
            "ok" if total <= MAX_SPOOL_BYTES else "warn",
            "spool",
            f"{total} bytes waiting (the daemon ingests it each pass)",
        )

    def daemon(self) -> None:
        beat = read_status(self.layout)
        broken = self.settings_broken is True
        if beat is None:
            detail = "never ran in this workspace (no heartbeat)"
            doctor_deploy.not_running(self, detail, settings_broken=broken)
            return
        age = time.time() - float(beat.get("heartbeat_at") or 0)
        alive = pid_alive(beat.get("pid"))
        supervised = bool(beat.get("supervised"))
        if not alive or beat.get("state") == "stopped":
            detail = f"not running (last heartbeat {age:.0f}s ago)"
            doctor_deploy.not_running(self, detail, settings_broken=broken)
        elif age > HEARTBEAT_STALE_SECONDS:
            self.add(
                "fail",
                "daemon",
                f"pid {beat.get('pid')} alive but heartbeat {age:.0f}s old: stuck?",
            )
        else:
            self.add(
                "ok",
                "daemon",
                f"pid {beat.get('pid')}, state {beat.get('state')}, heartbeat {age:.0f}s ago",
            )
        if alive and not supervised:
            self.add("warn", "supervisord", "the daemon is not running under supervisord")
        elif alive:
            self.add("ok", "supervisord", f"program {beat.get('supervised')}")

    def curation(self) -> None:
        """What the daemon says keeps it from curating (its heartbeat, not this shell)."""
        beat = read_status(self.layout) or {}
        if not pid_alive(beat.get("pid")) or beat.get("state") == "stopped":
            return  # the daemon check says it is down
        now = time.time()
        budget = beat.get("budget")
        if beat.get("state") == "backoff":
            since = float(beat.get("outage_since") or now)
            level = "fail" if now - since > OUTAGE_FAIL_SECONDS else "warn"
            self.add(
                level,
                "curation",
                f"stalled: the Bridge has failed for {(now - since) / 60:.0f} min"
                f" ({beat.get('last_error') or 'no answer'}); next attempt at"
                f" {iso_time(beat.get('next_attempt_at'))}. Check that the Bridge"
                f" ({self.bridge_url or 'ANTHROPIC_BASE_URL'}) answers and WSD_BRIDGE_TOKEN is"
                " valid; the daemon retries by itself and loses nothing meanwhile",
            )
        elif beat.get("state") == "budget" or isinstance(budget, dict):
            b = budget if isinstance(budget, dict) else {}
            self.add(
                "warn",
                "curation",
                f"paused by the daily budget: ${b.get('spent_usd', '?')} of"
                f" ${b.get('cap_usd', '?')} spent today; resumes at {iso_time(b.get('resumes_at'))}"
                " (to resume now, raise it: "
                + deploy.settings_hint(self.layout, "WSD_DAILY_BUDGET_USD")
                + "); turns wait, nothing is lost",
            )
        else:
            self.add("ok", "curation", f"state {beat.get('state')}, no outage or budget pause")

    def bridge(self) -> None:
        if not self.bridge_url:
            self.add(
                "warn",
                "bridge",
                "no Bridge URL: the daemon has not reported one and ANTHROPIC_BASE_URL is"
                " not set here",
            )
            return
        try:
            # No token is sent: reachability only. Any HTTP answer means reachable.
            request = urllib.request.Request(self.bridge_url, method="HEAD")
            with urllib.request.urlopen(request, timeout=3):
                pass
            self.add("ok", "bridge", f"{self.bridge_url} reachable")
        except urllib.error.HTTPError as exc:
            self.add("ok", "bridge", f"{self.bridge_url} reachable (HTTP {exc.code})")
        except (urllib.error.URLError, OSError) as exc:
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            why = describe(reason) if isinstance(reason, BaseException) else str(reason)
            self.add("fail", "bridge", f"{self.bridge_url} unreachable: {why}")


def _turns(count: int) -> str:
    return f"{count} turn" + ("" if count == 1 else "s")


def _size(path: str) -> int:
    """A file's size, 0 when it is not there (a -wal goes with its last connection)."""
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


def _names(names: list[str]) -> str:
    """File names for a line of the report: ``user.md, context.md``, or ``none``."""
    return ", ".join(names) if names else "none"
