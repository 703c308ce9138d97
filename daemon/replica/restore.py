"""``wsd restore --from-replica [--at TIME]``: both databases back from the replica.

With the daemon stopped (its instance lock is taken for the whole restore, so none starts
meanwhile) and no litestream running: each database is restored by litestream into a staging
folder, checked (quick_check and the FTS checks), and only when both are good moved into
place. What was there before is not deleted: it is moved to ``.os/replaced/<time>/`` and
recorded as a backup, so a later ``wsd forget`` reaches it. litestream's local state of the old
files goes (it describes files that are no longer there). Turns the restored memory.db has not
curated are pending again: the daemon curates them once on its next start.

A restore ``--at`` a time before the last forget is refused: the words erased since would come
back (the replica's newest memory.db says when the last forget finished).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from wsd import schema
from wsd.daemon.replica import hold, litestream, owed
from wsd.daemon.runtime.config import Config
from wsd.daemon.runtime.dates import parse_since
from wsd.daemon.runtime.instance import lock_path
from wsd.daemon.store import Store, remove
from wsd.schema.layout import Layout

#: A restore of a large workspace from S3 takes a while; one that hangs is ended.
RESTORE_SECONDS = 3600.0


class RestoreRefused(RuntimeError):
    """The restore cannot be done now, or with these arguments: says why and what to do."""


@dataclass
class Restored:
    """What a restore did."""

    at: str | None
    turns: int = 0
    pending: int = 0
    replaced: str | None = None
    databases: list[str] = field(default_factory=list)


def parse_time(raw: str) -> str:
    """``--at``: a time as every ``since`` of wsd reads it (dates.parse_since: ISO 8601, UTC
    when it names no zone, or an age such as ``2h``), as litestream's RFC 3339."""
    try:
        stamp = parse_since(raw)
    except ValueError:
        stamp = None
    if stamp is None:
        raise RestoreRefused(
            f"--at {raw!r}: expected an ISO 8601 time (2026-11-28T21:30:00Z) or an age (2h)"
        )
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@contextlib.contextmanager
def _no_daemon(layout: Layout) -> Iterator[None]:
    layout.ensure_system_dirs()
    fd = os.open(lock_path(layout), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RestoreRefused(
                "the daemon is running: stop it first (supervisorctl stop wsd), then restore"
            ) from None
        yield
    finally:
        os.close(fd)


def _run(argv: list[str], env: Mapping[str, str]) -> str:
    done = subprocess.run(
        argv,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=dict(env),
        timeout=RESTORE_SECONDS,
        check=False,
        umask=0o077,  # the person's words: 0600 like every database of theirs
    )
    if done.returncode != 0:
        said = (done.stderr or done.stdout).decode(errors="replace").strip().splitlines()
        raise RestoreRefused(f"litestream restore failed: {said[-1] if said else done.returncode}")
    return done.stdout.decode(errors="replace")


def _restore_one(
    cfg: Config, layout: Layout, kind: str, dest: str, at: str | None, env: Mapping[str, str]
) -> None:
    argv = [litestream.binary(), "restore", "-config", litestream.config_path(layout)]
    argv += ["-no-expand-env", "-o", dest]
    if at:
        argv += ["-timestamp", at]
    argv.append(litestream.databases(layout)[kind])
    _run(argv, env)


def restore(
    cfg: Config,
    layout: Layout,
    at: str | None,
    env: Mapping[str, str],
    say: Callable[[str], None] = lambda _: None,
) -> Restored:
    """Restore both databases (see the module); :class:`RestoreRefused` with the reason."""
    if not cfg.replica_url:
        raise RestoreRefused("WSD_REPLICA_URL is not set: there is no replica to restore from")
    child = litestream.child_env(cfg, env)
    with _no_daemon(layout):
        if hold.running(layout):
            litestream.terminate(layout)
            deadline = time.monotonic() + 15
            while hold.running(layout) and time.monotonic() < deadline:
                time.sleep(0.1)
            if hold.running(layout):
                raise RestoreRefused("litestream is still running for this workspace: stop it")
        local = _local_forget(layout)
        marks = _id_marks(Store(layout))
        erasure = owed.read(layout)
        if erasure is not None and erasure.pending:
            raise RestoreRefused(
                f"the replica's newest state still holds what the erasure of"
                f" {_iso(erasure.erased_at)} erased (it was not written there yet"
                + (f": {erasure.error}" if erasure.error else "")
                + "): start the daemon with the target writable (it writes that state before"
                " anything else; `wsd doctor` says when), or restore from a backup"
            )
        litestream.write_config(cfg, layout)
        staging = os.path.join(layout.os_dir, hold.STAGING)
        shutil.rmtree(staging, ignore_errors=True)
        stage = Layout(staging)
        stage.ensure_system_dirs()
        try:
            if at:
                _check_forgets(cfg, layout, stage, at, child, say, local, marks)
            for kind in ("transcript", "memory"):
                say(f"restoring {kind}.db" + (f" as of {at}" if at else "") + " ...")
                _restore_one(cfg, layout, kind, litestream.databases(stage)[kind], at, child)
            store = Store(stage)
            if not at and local is not None:
                _newest_has_erased(store, local)
            for kind in ("transcript", "memory"):
                problems = store.maintenance.integrity(kind)  # type: ignore[arg-type]
                if problems:
                    raise RestoreRefused(
                        f"the restored {kind}.db is damaged ({problems[0]}): nothing was replaced"
                    )
            # An id the agent or the person saw since (an L12, a #3, a T40) must not come to
            # name something curated after the restore (issue 45): ids go on past them.
            for kind, found in marks.items():
                store.maintenance.ids_past(kind, found)
            out = Restored(at=at, databases=["transcript", "memory"])
            out.replaced = _replace(layout, stage)
            _finish(layout, out)
            return out
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def _check_forgets(
    cfg: Config,
    layout: Layout,
    stage: Layout,
    at: str,
    env: Mapping[str, str],
    say: Callable[[str], None],
    local: float | None = None,
    marks: dict[schema.Kind, dict[str, int]] | None = None,
) -> None:
    """Refuse ``at`` before the last forget: the later of this workspace's own record of it
    (``local``: issue 44 found the replica's record stale when its target had not been
    writable) and the one the replica's newest memory.db holds."""
    newest = litestream.databases(stage)["memory"]
    say("reading the replica's newest memory.db for its last forget ...")
    _restore_one(cfg, layout, "memory", newest, None, env)
    last = Store(stage).erasure.last_forget()
    if marks is not None:
        _merge(marks, "memory", Store(stage).maintenance.id_marks("memory"))
    remove(newest)
    known = [float(last["finished_at"])] if last else []
    known += [local] if local is not None else []
    if not known:
        return
    stamp = datetime.strptime(at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    if stamp < max(known):
        raise RestoreRefused(
            f"--at {at} is before the last forget (finished {_iso(max(known))}): the"
            " words erased then would come back; choose a later time"
        )


def _id_marks(store: Store) -> dict[schema.Kind, dict[str, int]]:
    """Per database, the highest id each table of this copy ever gave (none for a database
    that is missing or cannot be read: what a restore is often for)."""
    out: dict[schema.Kind, dict[str, int]] = {}
    for kind in schema.KINDS:
        with contextlib.suppress(Exception):
            if os.path.exists(getattr(store.layout, f"{kind}_db")):
                out[kind] = store.maintenance.id_marks(kind)
    return out


def _merge(
    marks: dict[schema.Kind, dict[str, int]], kind: schema.Kind, more: dict[str, int]
) -> None:
    have = marks.setdefault(kind, {})
    for name, mark in more.items():
        have[name] = max(have.get(name, 0), mark)


def _iso(at: float) -> str:
    return f"{datetime.fromtimestamp(at, UTC):%Y-%m-%dT%H:%M:%SZ}"


def _local_forget(layout: Layout) -> float | None:
    """When the last erasure here finished, as this workspace records it: its memory.db
    (when it can be read) and ``.os/replica-erasure.json`` (which a lost memory.db leaves)."""
    known = []
    erasure = owed.read(layout)
    if erasure is not None and erasure.erased_at > 0:
        known.append(erasure.erased_at)
    with contextlib.suppress(Exception):  # a damaged or missing memory.db: what restore is for
        if os.path.exists(layout.memory_db):
            last = Store(layout).erasure.last_forget()
            if last is not None:
                known.append(float(last["finished_at"]))
    return max(known) if known else None


def _newest_has_erased(store: Store, local: float) -> None:
    """The replica's newest memory.db must know of the last erasure here: one that does not
    is older than it, and holds what it erased."""
    last = store.erasure.last_forget()
    if last is None or float(last["finished_at"]) < local - 0.001:
        raise RestoreRefused(
            f"the replica's newest state is older than the last forget here (finished"
            f" {_iso(local)}): it still holds what was erased; nothing was replaced. Start the"
            " daemon with the target writable (it writes the erased state first), or restore"
            " from a backup"
        )


def _replace(layout: Layout, stage: Layout) -> str | None:
    """Move what is there aside (its folder, or None when there was nothing), then the
    restored files into place; litestream's local state of the old files goes."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = os.path.join(layout.os_dir, "replaced", stamp)
    moved = False
    for path in litestream.databases(layout).values():
        for suffix in ("", "-wal", "-shm", "-journal"):
            if os.path.lexists(path + suffix):
                os.makedirs(aside, mode=0o700, exist_ok=True)
                os.replace(path + suffix, os.path.join(aside, os.path.basename(path) + suffix))
                moved = True
    hold.purge_local_state(layout)
    for kind, path in litestream.databases(stage).items():
        target = litestream.databases(layout)[kind]
        for suffix in ("-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.replace(path + suffix, target + suffix)
        os.replace(path, target)
    return aside if moved else None


def _finish(layout: Layout, out: Restored) -> None:
    """Record the replaced copy as a backup, and every backup it knew of (a restore of an
    older transcript.db must not hide a later backup from a forget); make the processed
    markers agree with the restored ledger (what the daemon does at start), and count."""
    store = Store(layout)
    if out.replaced:
        old = os.path.join(out.replaced, "transcript.db")
        for path, taken_at in store.erasure.backups_in(old):
            store.erasure.record_backup(path, taken_at)
        store.erasure.record_backup(os.path.realpath(out.replaced), time.time())
    store.rederive_processed(store.transcript_identity())
    backlog = store.turns.backlog()
    out.turns, out.pending = backlog.last_turn_id, backlog.pending
