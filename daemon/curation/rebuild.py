"""``wsd rebuild``: re-curate every observation into a fresh memory.db, then swap it in.

How it stays safe next to a running daemon:

1. A pause file (``.os/memory/rebuild.pause``, holding our pid) is created exclusively. The
   worker checks it at the top of each pass (:func:`hold`): it finishes the batch in hand,
   writes ``state: paused`` to its heartbeat and does nothing more until the file is gone.
   The rebuild waits for that acknowledgement (or finds no live daemon) before it starts.
2. The new database is built aside (``memory.rebuild.db``) with the daemon's own pieces:
   ``curator.build_request`` / ``parse_reply`` / ``render_turn``, ``bridge.BridgeClient`` and
   ``Store.commit_batch``. The curator sees the files as the rebuild has curated them so far
   (not the live ones), and each batch is dated by its last turn, so the same transcript and a
   deterministic curator give the same learnings every time.
3. What curation does not produce is carried over from the live database: imported learnings,
   non-curator actions and revisions, daemon state, the watcher's tables; the closed status of
   curator actions (matched by their de-duplication key) too.
4. Only when complete is it copied over the live memory.db with SQLite's backup API, in one
   write transaction: readers see the old database or the new one, never a mix, and the WAL
   stays consistent (renaming a file under a WAL database would not be safe). Then the
   ``processed`` markers are re-derived from the new ledger, the md files are rewritten from
   the new revisions, and the pause file is removed. Any failure before the copy leaves the
   live memory untouched.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import apsw
from wsd import schema
from wsd.daemon.curation.bridge import BatchRejected, BridgeClient
from wsd.daemon.curation.curator import build_request, curated_batch, render_turn
from wsd.daemon.memory import files as memory_files
from wsd.daemon.runtime.config import Config
from wsd.daemon.runtime.heartbeat import pid_alive, read_status
from wsd.daemon.store.archive import index_new_turns
from wsd.daemon.store.ledger import Store
from wsd.daemon.store.records import BatchRecord, Turn
from wsd.schema.layout import CURATED_FILES, DEPLOY_FILES, Layout

PAUSE_NAME = "rebuild.pause"
#: A heartbeat older than this is a daemon that is gone (it beats every 10 s while alive).
STALE = 60.0
ASIDE_NAME = "memory.rebuild.db"
#: Tables (or their rows) that curation does not produce, copied from the live database.
CARRY_SQL = (
    "INSERT INTO main.meta SELECT * FROM live.meta WHERE key NOT IN (SELECT key FROM main.meta)",
    "INSERT INTO main.state SELECT * FROM live.state",
    "INSERT INTO main.workspace_files SELECT * FROM live.workspace_files",
    "INSERT INTO main.canvas_cards SELECT * FROM live.canvas_cards",
    "INSERT INTO main.learnings SELECT * FROM live.learnings WHERE batch_id IS NULL",
    "INSERT INTO main.pending_actions SELECT * FROM live.pending_actions"
    " WHERE source != 'curator' AND batch_id IS NULL AND (source_learning_id IS NULL"
    " OR source_learning_id IN (SELECT id FROM main.learnings))",
    "INSERT INTO main.md_revisions SELECT * FROM live.md_revisions"
    " WHERE source != 'curator' AND batch_id IS NULL",
)


class RebuildError(Exception):
    """The rebuild could not start or finish; the live memory is unchanged (message says why)."""


class _Paused(Protocol):
    layout: Layout

    @property
    def status(self) -> Any: ...


def pause_path(layout: Layout) -> str:
    return os.path.join(layout.memory_dir, PAUSE_NAME)


def pause_requested(layout: Layout) -> bool:
    """True while a live ``wsd rebuild`` holds the pause file (a stale one is ignored)."""
    try:
        with open(pause_path(layout), encoding="utf-8") as fh:
            pid = int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return False
    return pid_alive(pid)


def hold(worker: _Paused) -> bool:
    """The worker's pause check (one line at the top of ``run_once``): True means skip the pass.

    Reports ``state: paused`` in the heartbeat, which is what the rebuild waits for.
    """
    if not pause_requested(worker.layout):
        return False
    worker.status.update(state="paused", force=True)
    return True


@dataclass
class RebuildReport:
    turns: int = 0
    batches: int = 0
    parked: int = 0
    learnings: int = 0
    files: tuple[str, ...] = ()
    removed_files: tuple[str, ...] = ()
    seconds: float = 0.0


def rebuild(
    config: Config,
    *,
    bridge: BridgeClient | None = None,
    progress: Callable[[str], None] | None = None,
    wait_seconds: float = 120.0,
    stop: threading.Event | None = None,
) -> RebuildReport:
    """Rebuild memory.db of ``config.workspace`` (see the module docstring)."""
    started = time.monotonic()
    say = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    layout = Layout(config.workspace)
    live = Store(layout)
    live.migrate()
    stop = stop or threading.Event()
    bridge = bridge or BridgeClient(config, stop)
    aside_path = os.path.join(layout.memory_dir, ASIDE_NAME)
    _take_pause(layout)
    try:
        _wait_for_daemon(layout, wait_seconds, say)
        _remove_db(aside_path)
        aside = Store(layout, opener=_redirect(layout.memory_db, aside_path))
        with aside.memory() as m:
            schema.migrate(m, "memory", aside_path)
            _carry(m, layout.memory_db)
        identity = live.transcript_identity()
        report = _recurate(config, layout, aside, bridge, identity, say)
        while index_new_turns(aside, identity=identity):
            pass
        with aside.memory() as m:
            _carry_action_status(m, layout.memory_db)
            m.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        say("swapping the rebuilt memory in")
        _swap(layout.memory_db, aside_path)
        live.rederive_processed(identity)
        report.files, report.removed_files = _rewrite_md(layout, live.latest_md())
    finally:
        _remove_db(aside_path)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(pause_path(layout))
    report.seconds = time.monotonic() - started
    return report


def _recurate(
    config: Config,
    layout: Layout,
    aside: Store,
    bridge: BridgeClient,
    identity: str,
    say: Callable[[str], None],
) -> RebuildReport:
    with aside.transcript() as t:
        ids = [int(r[0]) for r in t.execute("SELECT id FROM observations ORDER BY id")]
    report = RebuildReport(turns=len(ids))
    deploy = {name: memory_files.read_all(layout).get(name, "") for name in DEPLOY_FILES}
    done = 0
    for start in range(0, len(ids), config.batch_turns):
        turns = aside.turns_by_id(ids[start : start + config.batch_turns])
        for batch in _fit(turns, config.batch_chars):
            added, parked = _curate(aside, bridge, identity, deploy, batch)
            done += len(batch)
            report.batches += 1
            report.parked += parked
            report.learnings += added
            say(
                f"batch {report.batches}: turns {batch[0].id}-{batch[-1].id}"
                f" ({done}/{len(ids)}), +{added} learnings" + (" (parked)" if parked else "")
            )
    return report


def _fit(turns: Sequence[Turn], budget: int) -> list[list[Turn]]:
    """Split turns into batches within the character budget, as the worker does."""
    out: list[list[Turn]] = []
    used = 0
    for turn in turns:
        size = len(render_turn(turn))
        if not out or used + size > budget:
            out.append([])
            used = 0
        out[-1].append(turn)
        used += size
    return out


def _curate(
    aside: Store,
    bridge: BridgeClient,
    identity: str,
    deploy: dict[str, str],
    turns: list[Turn],
) -> tuple[int, int]:
    """Curate one batch into the aside store: (learnings added, turns parked)."""
    files = {**deploy, **aside.latest_md()}
    actions = aside.open_actions()
    system, messages = build_request(files, actions, [render_turn(t) for t in turns])
    # Dated by its last turn: the rebuilt memory keeps the history's timeline, and the
    # same transcript gives the same rows.
    when = turns[-1].timestamp
    try:
        reply = bridge.call(system, messages)
    except BatchRejected as exc:
        if len(turns) > 1:
            half = len(turns) // 2
            first = _curate(aside, bridge, identity, deploy, turns[:half])
            second = _curate(aside, bridge, identity, deploy, turns[half:])
            return first[0] + second[0], first[1] + second[1]
        record = BatchRecord.parked(turns, exc, exc.attempts, when)
        aside.commit_batch(identity, record, when)
        return 0, 1
    except Exception as exc:  # Outage, Shutdown: nothing of the rebuild is kept
        raise RebuildError(f"curator call failed, rebuild abandoned: {exc}") from exc
    record, _parsed = curated_batch(turns, reply, [a[0] for a in actions], when, bridge.config)
    return aside.commit_batch(identity, record, when).learnings_added, 0


# -- the pause ---------------------------------------------------------------------------------


def _take_pause(layout: Layout) -> None:
    path = pause_path(layout)
    for _ in range(2):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            if pause_requested(layout):
                raise RebuildError("another wsd rebuild is running") from None
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)  # left by a rebuild that died
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()} {time.time()}\n")
        return
    raise RebuildError(f"could not create {path}")


def _wait_for_daemon(layout: Layout, seconds: float, say: Callable[[str], None]) -> None:
    """Wait until a live daemon reports ``paused`` after our pause file appeared."""
    asked = os.stat(pause_path(layout)).st_mtime
    deadline = time.monotonic() + seconds
    said = False
    while True:
        beat = read_status(layout)
        pid = beat.get("pid") if beat else None
        fresh = beat is not None and time.time() - float(beat.get("heartbeat_at") or 0) < STALE
        running = (
            fresh
            and isinstance(pid, int)
            and pid_alive(pid)
            and beat is not None
            and beat.get("state") != "stopped"
        )
        if not running or beat is None:
            return
        if beat.get("state") == "paused" and float(beat.get("heartbeat_at") or 0) >= asked - 1:
            say("daemon paused")
            return
        if time.monotonic() > deadline:
            raise RebuildError(
                f"the daemon (pid {pid}) did not pause within {seconds:.0f}s; stop it"
                " (supervisorctl stop) and run wsd rebuild again"
            )
        if not said:
            say(f"waiting for the daemon (pid {pid}) to pause ...")
            said = True
        time.sleep(0.1)


# -- databases and files ----------------------------------------------------------------------


def _redirect(live_path: str, aside_path: str) -> Callable[..., apsw.Connection]:
    """A Store opener that sends memory.db connections to the aside file."""

    def opener(path: str, kind: schema.Kind, **kwargs: Any) -> apsw.Connection:
        return schema.connect(aside_path if path == live_path else path, kind, **kwargs)

    return opener


def _carry(m: apsw.Connection, live_path: str) -> None:
    m.execute("ATTACH DATABASE ? AS live", (live_path,))
    try:
        with schema.write_txn(m):
            for sql in CARRY_SQL:
                m.execute(sql)
    finally:
        m.execute("DETACH DATABASE live")


def _carry_action_status(m: apsw.Connection, live_path: str) -> None:
    """Keep the agent's and operators' decisions: a curator action closed in the live
    database stays closed when curation produces it again."""
    m.execute("ATTACH DATABASE ? AS live", (live_path,))
    try:
        with schema.write_txn(m):
            m.execute(
                "UPDATE main.pending_actions AS a SET status = c.status, updated_at = c.updated_at"
                " FROM (SELECT dedup_key, status, max(updated_at) AS updated_at"
                "       FROM live.pending_actions WHERE source = 'curator'"
                "       AND status != 'pending' GROUP BY dedup_key) AS c"
                " WHERE a.dedup_key = c.dedup_key AND a.status = 'pending'"
                " AND a.source = 'curator' AND NOT EXISTS (SELECT 1 FROM live.pending_actions p"
                "   WHERE p.dedup_key = a.dedup_key AND p.status = 'pending')"
            )
    finally:
        m.execute("DETACH DATABASE live")


def _swap(live_path: str, aside_path: str) -> None:
    """Copy the aside database over the live one in a single write transaction."""
    source = schema.connect(aside_path, "memory", readonly=True)
    try:
        dest = schema.connect(live_path, "memory")
        try:
            with dest.backup("main", source, "main") as backup:
                backup.step(-1)
            dest.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            dest.close()
    finally:
        source.close()


def _remove_db(path: str) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + suffix)


def _rewrite_md(layout: Layout, latest: dict[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Materialise the rebuilt revisions; a curated file the rebuild never wrote is removed
    (it came from the memory just replaced)."""
    written = memory_files.materialise(layout, latest)
    removed = []
    for name in CURATED_FILES:
        if name not in latest:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(memory_files.curated_path(layout, name))
                removed.append(name)
    return tuple(written), tuple(removed)
