"""Where one memory on many machines keeps things (SPEC.md section 11): in the person's
storage (under WSD_HOME_URL) and, on each machine, the followed copies.

In the person's storage::

    home/memory                 home's memory.db: the person's memory, followed everywhere
    machines/NAME/transcript    each machine's transcript.db (a satellite's: followed by home)
    machines/NAME/memory        each satellite's own memory.db (its files.md inventory...)

On a machine, under ``.os/followed/`` (written by litestream's ``restore -f`` alone, read
read-only by everything else)::

    home/memory.db              a satellite's copy of the person's memory
    machines/NAME/transcript.db home's copy of satellite NAME's transcript
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from wsd.daemon.replica import litestream
from wsd.daemon.runtime.config import Config
from wsd.schema.layout import Layout


def followed_dir(layout: Layout) -> str:
    return os.path.join(layout.os_dir, "followed")


def home_copy(layout: Layout) -> str:
    """A satellite's followed copy of home's memory.db."""
    return os.path.join(followed_dir(layout), "home", "memory.db")


def satellite_copy(layout: Layout, machine: str) -> str:
    """Home's followed copy of satellite ``machine``'s transcript.db."""
    return os.path.join(followed_dir(layout), "machines", machine, "transcript.db")


@dataclass(frozen=True)
class Followed:
    """One database this machine follows: its name (a machine's, or ``home``), where it is
    in the person's storage, and the local copy."""

    name: str
    url: str
    path: str


def followed(cfg: Config, layout: Layout) -> list[Followed]:
    """What this machine follows: on a satellite, home's memory; on home, each listed
    satellite's transcript; nothing on a machine alone."""
    if not cfg.home_url or cfg.machines_problem():
        return []
    if cfg.satellite:
        return [Followed("home", litestream.home_memory_url(cfg.home_url), home_copy(layout))]
    if cfg.home:
        return [
            Followed(
                name,
                litestream.machine_transcript_url(cfg.home_url, name),
                satellite_copy(layout, name),
            )
            for name in cfg.machines
        ]
    return []


def files_signature(*paths: str) -> tuple[tuple[int, int, int] | None, ...]:
    """What changes when any of these files is written or replaced: (inode, size, mtime in
    ns) of each, None for one missing. A pass whose signature is the last one's has nothing
    new to read there."""
    out: list[tuple[int, int, int] | None] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(out)
