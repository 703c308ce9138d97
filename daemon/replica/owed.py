"""What the replica is owed after an erasure: its newest state written without the words.

An erasure stops litestream, erases, and lets it start again with a forced snapshot
(:mod:`.hold`, :mod:`.supervisor`). Found by a new user (issue 44): with the replica's target
unwritable that snapshot failed, litestream went on (failing) and ``wsd forget`` printed that
the replica "got a new snapshot without them" whatever happened; once the target was writable
a restore brought the learning back.

So every erasure records here, in ``.os/replica-erasure.json``, when it finished; until the
replica's newest snapshot of each database is seen on the replica itself, dated after that,
the record says the replica is owed the erased state. Meanwhile the supervisor starts no
plain ``litestream replicate`` (nothing else is shipped first): it tries the snapshot again,
backing off, and records each failure; ``wsd forget`` and ``wsd status`` say the replica
still holds the words; ``wsd doctor`` fails; ``wsd restore`` refuses the replica. The file
holds times, counts and litestream's error, never a word of what went. It is never deleted:
its ``erased_at`` is the local record of the last erasure, which a restore checks against
(the replica's own record of it may be the stale one).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from datetime import datetime

from wsd.daemon.replica import litestream
from wsd.daemon.runtime.fsio import UnsafeFile, atomic_write, read_small
from wsd.schema.layout import Layout

STATE = "replica-erasure.json"
#: litestream's own listing of a replica is quick; one that hangs is not waited for.
LIST_SECONDS = 60.0


@dataclass(frozen=True)
class Owed:
    """The replica and the last erasure: when it finished, and whether (and when) the
    replica's newest state was confirmed written after it."""

    erased_at: float
    confirmed_at: float | None = None
    attempts: int = 0
    error: str | None = None
    tried_at: float | None = None

    @property
    def pending(self) -> bool:
        """The replica's newest state may still hold what the last erasure erased."""
        return self.confirmed_at is None

    def as_json(self) -> dict[str, object]:
        return {"written": not self.pending, **asdict(self)}


def state_path(layout: Layout) -> str:
    return os.path.join(layout.os_dir, STATE)


def read(layout: Layout) -> Owed | None:
    """The record, or None when no erasure ran here. A record that cannot be read (damaged,
    not a regular file) is read as owed since the epoch: the safe side, said in its error."""
    text = read_small(state_path(layout))
    if text is None:
        return None
    try:
        raw = json.loads(text)
        erased = float(raw["erased_at"])
        confirmed = raw.get("confirmed_at")
        owed = Owed(
            erased_at=erased,
            confirmed_at=None if confirmed is None else float(confirmed),
            attempts=int(raw.get("attempts", 0)),
            error=None if raw.get("error") is None else str(raw["error"]),
            tried_at=None if raw.get("tried_at") is None else float(raw["tried_at"]),
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        return Owed(erased_at=0.0, error=f"{STATE} cannot be read: the erasure is owed again")
    if not (math.isfinite(owed.erased_at) and owed.erased_at >= 0):
        return Owed(erased_at=0.0, error=f"{STATE} cannot be read: the erasure is owed again")
    return owed


def _write(layout: Layout, owed: Owed) -> None:
    os.makedirs(layout.os_dir, exist_ok=True)
    with contextlib.suppress(UnsafeFile):  # a FIFO or link there: replaced below
        atomic_write(state_path(layout), json.dumps(asdict(owed)) + "\n")
        return
    os.unlink(state_path(layout))
    atomic_write(state_path(layout), json.dumps(asdict(owed)) + "\n")


def erased(layout: Layout, at: float) -> None:
    """An erasure finished at ``at``: the replica is owed its state from then on. Written
    (fsynced) before litestream may start again (the erasure still holds it off)."""
    before = read(layout)
    # Not written (a folder in its place, a full disk): read back as owed since the epoch,
    # so nothing claims the replica was written.
    with contextlib.suppress(OSError):
        _write(layout, Owed(erased_at=max(at, before.erased_at if before else 0.0)))


def tried(layout: Layout, error: str, at: float) -> Owed | None:
    """A snapshot after the erasure failed (or could not be seen on the replica)."""
    owed = read(layout)
    if owed is None or not owed.pending:
        return owed
    owed = replace(owed, attempts=owed.attempts + 1, error=error[-400:], tried_at=at)
    _write(layout, owed)
    return owed


def confirmed(layout: Layout, at: float) -> None:
    """The replica's newest state of both databases was seen written after the erasure."""
    owed = read(layout)
    if owed is not None and owed.pending:
        _write(layout, replace(owed, confirmed_at=at, error=None, tried_at=at))


def newest_snapshots(layout: Layout, env: Mapping[str, str]) -> dict[str, float | None]:
    """When each database's newest snapshot on the replica was made, as litestream lists the
    replica itself (``litestream ltx -level 9``); None for one it cannot list."""
    out: dict[str, float | None] = {}
    for kind, path in litestream.databases(layout).items():
        argv = [litestream.binary(), "ltx", "-config", litestream.config_path(layout)]
        argv += ["-no-expand-env", "-level", "9", "-json", path]
        try:
            done = subprocess.run(
                argv, capture_output=True, env=dict(env), timeout=LIST_SECONDS, check=False
            )
            files = json.loads(done.stdout) if done.returncode == 0 else []
        except (OSError, subprocess.TimeoutExpired, ValueError):
            files = []
        stamps = []
        for f in files if isinstance(files, list) else []:
            with contextlib.suppress(KeyError, TypeError, ValueError):
                stamps.append(datetime.fromisoformat(str(f["timestamp"])).timestamp())
        out[kind] = max(stamps) if stamps else None
    return out


def written_after(snapshots: Mapping[str, float | None], erased_at: float) -> bool:
    """Whether every database's newest snapshot is dated after the erasure (litestream dates
    them to the second: one made in the erasure's second counts)."""
    return bool(snapshots) and all(
        at is not None and at >= math.floor(erased_at) for at in snapshots.values()
    )
