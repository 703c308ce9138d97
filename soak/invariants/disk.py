"""Invariants of what is left on disk: no secret or private span in any byte under ``.os/``
(nor in any Bridge request), both databases and their FTS indexes intact, no temp file."""

from __future__ import annotations

import os
from typing import Any

import apsw

from soak.invariants.check import Check, query
from soak.world import World
from wsd.daemon.runtime.fsio import TEMP_PREFIX


def no_secret(world: World, sessions: list[dict[str, Any]]) -> Check:
    hidden = sorted({h for s in sessions for h in s["hidden"] if len(h) >= 8})
    blobs: list[tuple[str, bytes]] = []
    for folder, _dirs, files in os.walk(world.layout.os_dir):
        for name in files:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as fh:
                    blobs.append((path, fh.read()))
    blobs += [(f"bridge request {i}", r.raw) for i, r in enumerate(world.bridge.requests)]
    found = [(h, where) for h in hidden for where, data in blobs if h.encode() in data]
    return Check(
        "no secret or private span in any byte under .os/ or any Bridge request",
        not found,
        f"{len(hidden)} secrets x {len(blobs)} files and requests, {len(found)} found {found[:2]}",
    )


def integrity(transcript: str, memory: str, root: str) -> Check:
    problems = []
    for db in (transcript, memory):
        result = [r[0] for r in query(db, "PRAGMA integrity_check")]
        if result != ["ok"]:
            problems.append(f"{os.path.basename(db)}: {result[:2]}")
    conn = apsw.Connection(memory)
    try:
        for table in ("learnings_fts", "turns_fts"):
            try:
                conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
            except apsw.Error as exc:
                problems.append(f"{table}: {exc}")
    finally:
        conn.close()
    temps = [
        os.path.join(d, n)
        for d, _s, files in os.walk(root)
        for n in files
        if n.startswith(TEMP_PREFIX)
    ]
    return Check(
        "integrity and FTS checks pass; no temp files left",
        not problems and not temps,
        f"{problems[:2]} temp files {temps[:2]}",
    )
