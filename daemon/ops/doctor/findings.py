"""What a doctor check reports (a :class:`Finding`) and what it sees of the doctor that runs
it (a :class:`Reporter`): every check module takes one and adds its findings to it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from wsd.daemon.replica import position
from wsd.daemon.store import Store
from wsd.schema.layout import Layout


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


class Reporter(Protocol):
    """What the checks need of the doctor: the workspace, its store, the settings the daemon
    runs with, what earlier checks found, and where to add a finding."""

    layout: Layout
    store: Store
    fix: bool
    bridge_url: str | None
    erosion: float
    #: WSD_CURATION as the daemon runs with it: the lane it curates through by default.
    curation: str
    batch_wait_limit: float
    #: Replication's settings as the daemon runs with them.
    replica: position.Settings
    #: The user's home folder, or None (its ~/.claude/settings.json is not read).
    home: str | None
    findings: list[Finding]
    #: Both databases open with a schema: the checks that read them run (set by their check).
    databases_usable: bool
    #: The settings file stops the daemon from starting (set by its check, read by the daemon's).
    settings_broken: bool

    def add(
        self, level: str, check: str, detail: str, fixed: bool = False, fixable: bool = False
    ) -> None: ...
