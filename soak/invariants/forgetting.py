"""What the person asked to forget is never found again (issue 33): every word the soak's
forget fault erased (``wsd forget WORD --yes``, exit 0) is in no byte under ``.os/`` (both
databases, their WALs, the md files, the spool, the daemon's logs) nor in any backup the soak
took, in any case."""

from __future__ import annotations

import os
import re
from pathlib import Path

from soak.faults import Record
from soak.invariants.check import Check
from soak.world import World


def never_found_again(world: World, record: Record) -> Check:
    """No forgotten word in any file of the workspace's .os/ or the soak's backups."""
    words = list(record.forgotten)
    found: list[str] = []
    if words:
        pattern = re.compile("|".join(re.escape(w) for w in words).encode(), re.IGNORECASE)
        for folder in (world.layout.os_dir, str(Path(world.root) / "backups")):
            for base, _dirs, files in os.walk(folder):
                for name in files:
                    path = os.path.join(base, name)
                    if os.path.islink(path) or not os.path.isfile(path):
                        continue
                    with open(path, "rb") as fh:
                        hit = pattern.search(fh.read())
                    if hit:
                        found.append(f"{os.path.relpath(path, world.root)}: {hit.group(0)!r}")
    return Check(
        "a forgotten word is never found again (.os/, logs, backups)",
        not found,
        f"{len(words)} words forgotten; found again in {len(found)} file(s) {found[:3]}",
    )
