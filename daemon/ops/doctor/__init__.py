"""``wsd doctor``: check a workspace's health, explain each finding, repair what is safe.

Each check returns findings with a level: ``ok``, ``warn`` (worth knowing, not
broken) or ``fail`` (broken: the exit status is non-zero). ``--fix`` applies
only repairs that cannot lose data: permissions, rebuilding an FTS index from
its content table, rewriting md files from their latest revision, removing
temp files a crash left. It never deletes user data or rewrites history.

The checks live in a module per family (:mod:`.databases`, :mod:`.memory_files`,
:mod:`.spool`, :mod:`.daemon`, :mod:`.program`, :mod:`.bridge`); :data:`CHECKS` is the one
list of them, in the order they run and report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from wsd.daemon.ops.doctor import (
    bridge,
    capture,
    daemon,
    databases,
    many_machines,
    memory_files,
    program,
    replication,
    spool,
)
from wsd.daemon.ops.doctor.findings import Finding, Reporter
from wsd.daemon.replica import position
from wsd.daemon.runtime.config import (
    DEFAULT_CURATION,
    DEFAULT_ECONOMY_WAIT_LIMIT_SECONDS,
    DEFAULT_EROSION,
)
from wsd.daemon.store import Store
from wsd.schema.errors import describe
from wsd.schema.layout import Layout

__all__ = ["CHECKS", "Check", "Doctor", "Finding"]


#: What ``wsd doctor --json`` promises (README: "Machine-readable output"): within a version
#: fields are only added; one removed or changed in meaning is a new version.
DOCTOR_SCHEMA = "wsd.doctor/1"
#: Replication off: what a doctor is told when nobody says otherwise.
NO_REPLICA = position.Settings(None)


@dataclass(frozen=True)
class Check:
    #: Said in the report's FAIL line when the check itself raises.
    name: str
    run: Callable[[Reporter], object]
    #: Runs only when both databases can be read (the databases check says so).
    needs_databases: bool = False


#: Every check, in the order they run and report. The databases check comes before those
#: that read the databases (skipped when one cannot be opened); special files before the md
#: files, so that one ``--fix`` removes a link or a FIFO in an md file's place, then writes
#: the file from its revision; the settings before the daemon, whose FAIL names the settings
#: file when that is what keeps it from starting.
CHECKS: tuple[Check, ...] = (
    Check("permissions", databases.permissions),
    Check("databases", databases.databases),
    Check("special files", memory_files.special_files),
    Check("processing", daemon.processing, needs_databases=True),
    Check("md files", memory_files.revisions, needs_databases=True),
    Check("disk", databases.disk),
    Check("capture", capture.capture, needs_databases=True),
    Check("spool", spool.waiting),
    Check("spool damage", spool.damage),
    Check("spool refused", spool.refused),
    Check("md writes", memory_files.md_failures),
    Check("forget", memory_files.forgets, needs_databases=True),
    Check("instances", daemon.instances),
    Check("rebuild", daemon.rebuild_leftovers),
    Check("settings", program.settings),
    Check("daemon", daemon.daemon),
    Check("curation", daemon.curation),
    Check("replication", replication.replication),
    Check("machines", many_machines.machines),
    Check("economy", bridge.economy, needs_databases=True),
    Check("bridge", bridge.bridge),
)


class Doctor:
    """Runs the checks against one workspace (``checks``: :data:`CHECKS` unless a test hands
    in others)."""

    def __init__(
        self,
        layout: Layout,
        bridge_url: str | None,
        fix: bool = False,
        erosion_fraction: float = DEFAULT_EROSION,
        curation: str = DEFAULT_CURATION,
        batch_wait_limit: float | None = None,
        checks: Sequence[Check] = CHECKS,
        replica: position.Settings = NO_REPLICA,
        home: str | None = None,
    ) -> None:
        self.layout = layout
        #: The user's home folder (their ~/.claude/settings.json may wire the hook).
        self.home = home
        self.replica = replica
        self.curation = curation
        self.batch_wait_limit = batch_wait_limit or DEFAULT_ECONOMY_WAIT_LIMIT_SECONDS
        self.bridge_url = bridge_url
        self.fix = fix
        self.erosion = erosion_fraction
        self.store = Store(layout)
        self.checks = checks
        self.findings: list[Finding] = []
        self.databases_usable = False
        self.settings_broken = False

    def add(
        self, level: str, check: str, detail: str, fixed: bool = False, fixable: bool = False
    ) -> None:
        self.findings.append(Finding(level, check, detail, fixed, fixable))

    def run(self) -> list[Finding]:
        """Every check in order; those that read the databases are skipped when one cannot be
        opened. A check that raises is a failure of that check and the others still run (a
        report cut short at its first surprise hides everything after it)."""
        for check in self.checks:
            if check.needs_databases and not self.databases_usable:
                continue
            try:
                check.run(self)
            except Exception as exc:  # any surprise is a finding, never a traceback
                why = f"could not be checked: {type(exc).__name__}: {describe(exc)}"
                self.add("fail", check.name, why)
        return self.findings
