"""Doctor checks of the databases and what they stand on: the modes of ``.os/`` and of the
database files, each database's schema and journal, its integrity (``--fix`` rebuilds
memory.db's FTS indexes), a WAL that keeps growing, and the free disk."""

from __future__ import annotations

import os
import stat

import apsw

from wsd import schema
from wsd.daemon.ops.doctor.findings import Reporter
from wsd.daemon.store import MADE_BY, remedy
from wsd.schema.errors import describe

MIN_FREE_BYTES = 200 * 1024 * 1024
MAX_WAL_BYTES = 64 * 1024 * 1024


def permissions(doctor: Reporter) -> None:
    layout = doctor.layout
    expected = [(layout.os_dir, 0o700), (layout.memory_dir, 0o700)]
    for db in (layout.transcript_db, layout.memory_db):
        expected += [(db + suffix, 0o600) for suffix in ("", "-wal", "-shm")]
    for path, mode in expected:
        # One stat, never exists-then-stat: SQLite deletes -wal and -shm when the last
        # connection closes, which a running daemon or hook does at any moment (CI saw doctor
        # print nothing but "No such file or directory" on a healthy workspace).
        try:
            actual = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            if not path.endswith(("-wal", "-shm")):
                doctor.add("fail", "layout", f"{path} is missing ({MADE_BY})")
            continue
        if actual == mode:
            continue
        if doctor.fix:
            try:
                os.chmod(path, mode)
            except FileNotFoundError:  # the -wal or -shm went with its last connection
                continue
            doctor.add("warn", "permissions", f"{path} was {actual:04o}, now {mode:04o}", True)
        else:
            doctor.add(
                "fail",
                "permissions",
                f"{path} is {actual:04o}, expected {mode:04o}",
                fixable=True,
            )
    if not any(f.check in ("layout", "permissions") for f in doctor.findings):
        doctor.add("ok", "permissions", ".os/ 0700, databases 0600")


def databases(doctor: Reporter) -> None:
    """Each database's schema, journal, integrity and WAL; the checks that read the databases
    run only when both can be read (``doctor.databases_usable``)."""
    ops = doctor.store.maintenance
    usable = True
    found: tuple[tuple[schema.Kind, str], ...] = (
        ("transcript", doctor.layout.transcript_db),
        ("memory", doctor.layout.memory_db),
    )
    for kind, path in found:
        if not os.path.exists(path):
            usable = False
            continue
        try:
            version = ops.schema_version(kind)
        except (apsw.Error, schema.SchemaError) as exc:
            why = f"cannot be read ({describe(exc)})"
            doctor.add(
                "fail", f"{kind}.db", f"{path} {why}: {remedy(kind, why, doctor.layout.memory_dir)}"
            )
            usable = False
            continue
        if version == 0:  # a file with no schema yet: read no further, change nothing
            doctor.add(
                "fail",
                f"{kind}.db",
                f"{path} has no schema (made and left empty?): {MADE_BY}",
            )
            usable = False
            continue
        latest = schema.latest_version(kind)
        mode = ops.journal_mode(kind)
        level = "ok" if version == latest and mode == "wal" else "fail"
        doctor.add(level, f"{kind}.db", f"schema v{version} (code: v{latest}), journal {mode}")
        problems = ops.integrity(kind)
        if problems and doctor.fix and kind == "memory":
            rebuilt = ops.rebuild_fts()
            problems = ops.integrity(kind)
            doctor.add("warn", "fts", f"rebuilt {', '.join(rebuilt)}", fixed=not problems)
        if problems:  # --fix rebuilds memory.db's FTS indexes (all it can repair)
            doctor.add(
                "fail", f"{kind}.db integrity", "; ".join(problems), fixable=kind == "memory"
            )
        else:
            doctor.add("ok", f"{kind}.db integrity", "quick_check and FTS indexes ok")
        wal_bytes = _size(path + "-wal")
        if wal_bytes > MAX_WAL_BYTES:
            doctor.add(
                "warn",
                f"{kind}.db WAL",
                f"{wal_bytes} bytes (checkpoints starved by a long reader?)",
            )
    doctor.databases_usable = usable


def disk(doctor: Reporter) -> None:
    target = doctor.layout.memory_dir if os.path.isdir(doctor.layout.memory_dir) else "/"
    vfs = os.statvfs(target)
    free = vfs.f_bavail * vfs.f_frsize
    doctor.add(
        "ok" if free >= MIN_FREE_BYTES else "fail", "disk", f"{free // (1024 * 1024)} MiB free"
    )


def _size(path: str) -> int:
    """A file's size, 0 when it is not there (a -wal goes with its last connection)."""
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0
