"""``wsd rebuild``: re-curate every observation into a fresh memory.db, then swap it in.

How it stays safe next to a running daemon:

1. A pause file (``.os/memory/rebuild.pause``, holding our pid) is created exclusively. The
   worker checks it at the top of each pass (:func:`pause_requested`): it finishes the batch
   in hand, writes ``state: paused`` to its heartbeat and does nothing more until the file is
   gone. The rebuild waits for that acknowledgement (or finds no live daemon) before it starts.
2. The new database is built aside (``memory.rebuild.db``, see :mod:`wsd.daemon.store.rebuild`)
   by the loop's own batch pipeline (:mod:`wsd.daemon.curation.pipeline`: the same clipping,
   splitting and parking), replaying the live run (:mod:`wsd.daemon.curation.rebuild.replay`): its
   batches, dated as they were, and the revisions people made, each before the first batch
   that started after it. The curator sees the files as the rebuild has made them so far (not
   the live ones), so the same transcript and a deterministic curator give the memory the
   live run gave, every time.
3. What curation does not produce is carried over from the live database: imported learnings,
   retractions, non-curator actions, daemon state, the watcher's tables; the closed status of
   curator actions (matched by their de-duplication key) too. What the live database gains
   while the rebuild runs (a person's edit of a file, ``wsd import``, ``wsd forget``) is
   carried again right before the swap. Sentence vectors are reused where the rebuild made
   the same learning or turn again; the daemon embeds the rest in the background after the
   swap, so curation pauses only for the rebuild's own batches.
4. Only when complete is it copied over the live memory.db in one write transaction, and only
   over the memory.db it was rebuilt from (its identity, read at the start): one deleted and
   recreated, or restored from a backup, while the rebuild ran is kept as it is, and the
   rebuild is abandoned (found by the soak, issue 30: the swap took away the hand revisions
   a fresh memory.db had adopted). Then the ``processed`` markers are re-derived from the new
   ledger, the md files are rewritten from the new revisions (a person's edit made since the
   last adoption, while the swap ran, replayed onto them first), and the pause file is
   removed. Any failure before the copy leaves the live memory untouched.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import apsw

from wsd.daemon.curation.bridge.client import BridgeClient, Outage, Shutdown
from wsd.daemon.curation.commit.committed import Committed
from wsd.daemon.curation.pipeline import Pipeline, Timeline
from wsd.daemon.curation.rebuild.replay import PersonEdits, plan_groups, replayed
from wsd.daemon.curation.request.batch import LATE_SETTLE_SECONDS, plan
from wsd.daemon.curation.request.rendering import rendering_for
from wsd.daemon.memory.md import files as md_files
from wsd.daemon.memory.md import files_md
from wsd.daemon.runtime import pause
from wsd.daemon.runtime.config import Config
from wsd.daemon.runtime.pause import pause_path
from wsd.daemon.store import (
    MemoryReplaced,
    Store,
    Turn,
    aside_path,
    finish,
    open_aside,
    remove,
    swap,
)
from wsd.schema import spool
from wsd.schema.layout import CURATED_FILES, DEPLOY_FILES, Layout


class RebuildError(Exception):
    """The rebuild could not start or finish; the live memory is unchanged (message says why)."""


@dataclass
class RebuildReport:
    turns: int = 0
    batches: int = 0
    parked: int = 0
    learnings: int = 0
    files: tuple[str, ...] = ()
    removed_files: tuple[str, ...] = ()
    seconds: float = 0.0
    #: Turns erased whole before the rebuild (issue 33): their words could not be re-read.
    erased_turns: int = 0


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
    held = _take_pause(layout)  # locked for our life: a rebuild that dies leaves it stale
    try:
        _wait_for_daemon(layout, wait_seconds, say)
        # The memory.db rebuilt: only it is swapped over, so a person's revisions in one that
        # replaced it meanwhile (deleted and recreated, restored) are never taken away.
        memory = live.memory_identity()
        built = open_aside(layout)
        identity = live.transcript_identity()
        edits = PersonEdits(live, built, memory)
        report = _recurate(config, layout, built, bridge, identity, edits, say)
        while built.archive.index_new_turns(identity=identity):
            pass
        # A person's edit made while we ran is theirs to keep: recorded in the live memory
        # first (as the daemon would), it is replayed on top of the rebuilt revisions.
        disk = md_files.read_curated(layout)
        adopted = md_files.adopt_hand_edits(layout, live, time.time(), disk)
        if adopted:
            say(f"kept your edits of {', '.join(adopted)}")
        edits.rest()
        finish(layout)
        say("swapping the rebuilt memory in")
        swap(layout, memory)
        live.rederive_processed(identity)
        late = _keep_late_edits(layout, live, disk)
        if late:
            say(f"kept your edits of {', '.join(late)} (made while the rebuild swapped)")
        report.files, report.removed_files = _rewrite_md(layout, live.revisions.latest_md())
    except MemoryReplaced as exc:
        raise RebuildError(
            "memory.db was replaced while the rebuild ran (deleted and recreated, or restored"
            " from a backup): the rebuild is abandoned and the new memory.db kept as it is,"
            " with every edit it holds; run wsd rebuild again to rebuild it"
        ) from exc
    finally:
        remove(aside_path(layout))
        with contextlib.suppress(FileNotFoundError):
            os.unlink(pause_path(layout))
        os.close(held)
    report.seconds = time.monotonic() - started
    report.erased_turns = live.erasure.erased_turns()
    return report


def _record_spooled(layout: Layout, built: Store, rounds: int = 20) -> None:
    """Record every spooled event (the paused daemon cannot): one may belong before a turn
    about to be claimed, which would then be curated whole but wrong. Checked before every
    claim, not once: found by the soak, a spooled burst that arrived while the rebuild ran
    (its first ingest took seconds) left a turn that a direct Stop had closed mis-assembled."""
    for _ in range(rounds):
        if not spool.waiting(layout.spool):
            return
        for taken in spool.to_ingest(layout.spool):
            try:
                spool.ingest_file(taken, lambda e: built.turns.record_event(e, "spool"))
            except (apsw.Error, OSError) as exc:
                raise RebuildError(f"spooled events could not be recorded ({exc}): retry") from exc
    raise RebuildError("hooks keep spooling (is transcript.db held locked?): try again later")


def _recurate(
    config: Config,
    layout: Layout,
    built: Store,
    bridge: BridgeClient,
    identity: str,
    edits: PersonEdits,
    say: Callable[[str], None],
) -> RebuildReport:
    """Every turn through the loop's pipeline into the aside store, in the live run's batches
    with the people's revisions between them (see :mod:`wsd.daemon.curation.rebuild.replay`). A turn
    still settling (spooled events just in) is left to the daemon; each group is claimed as it
    is read, so a late event becomes an addendum instead of changing a turn the curator was
    already sent."""
    _record_spooled(layout, built)
    ids = built.turns.turn_ids(settled_before=time.time() - LATE_SETTLE_SECONDS)
    groups = plan_groups(Store(layout), identity, ids, config.batch_turns)
    report = RebuildReport(turns=len(ids))
    deploy = {name: md_files.read_all(layout).get(name, "") for name in DEPLOY_FILES}
    # turn id -> when its live batch began and finished (a turn no live batch covers has
    # none: its batch is dated by its last turn)
    live: dict[int, tuple[float, float]] = {
        i: (g.started or g.finished, g.finished)
        for g in groups
        if g.finished is not None
        for i in g.turn_ids
    }

    def counted(done: Committed) -> None:
        report.parked += done.parked
        report.learnings += done.result.learnings_added if done.result else 0

    def started(turns: Sequence[Turn]) -> float:
        return live[turns[0].id][0] if turns[0].id in live else turns[-1].timestamp

    def finished(turns: Sequence[Turn]) -> float:
        return live[turns[0].id][1] if turns[0].id in live else turns[-1].timestamp

    pipeline = Pipeline(
        config,
        built,
        bridge,
        # The files as the rebuild has curated them so far, not the live ones.
        files=lambda: {**deploy, **built.revisions.latest_md()},
        timeline=Timeline(started, finished),
        purpose="rebuild",
        identity=identity,
    )
    done = 0
    # Batches still to go, for the prompt cache (Pipeline.curate's ``following``): a plan is
    # about one batch of batch_turns turns, so this is an estimate, which is all it needs.
    left = -(-len(ids) // max(1, config.batch_turns))
    for group in groups:
        _record_spooled(layout, built)  # hooks spool on while we run: before every claim
        turns = built.turns.claim_turns(group.turn_ids, time.time())
        # Rendered as the loop rendered them: the live batch's lane, else the configured one.
        shown = rendering_for(group.lane or config.curation)
        for batch in plan(turns, config.batch_chars, shown):
            learnings, parked = report.learnings, report.parked
            edits.until(started(batch.turns))  # what people did before this batch began
            try:
                left = max(0, left - 1)
                pipeline.curate(batch, counted, following=left)
            except (Outage, Shutdown) as exc:  # nothing of the rebuild is kept
                raise RebuildError(f"curator call failed, rebuild abandoned: {exc}") from exc
            done += len(batch.turns)
            report.batches += 1
            say(
                f"batch {report.batches}: turns {batch.turns[0].id}-{batch.turns[-1].id}"
                f" ({done}/{len(ids)}), +{report.learnings - learnings} learnings"
                + (" (parked)" if report.parked > parked else "")
            )
    return report


# -- the pause ---------------------------------------------------------------------------------


def _take_pause(layout: Layout) -> int:
    try:
        return pause.take(layout, "rebuild")
    except pause.PauseRefused as exc:
        raise RebuildError(str(exc)) from exc


def _wait_for_daemon(layout: Layout, seconds: float, say: Callable[[str], None]) -> None:
    try:
        pause.wait_for_daemon(layout, seconds, say)
    except pause.PauseRefused as exc:
        raise RebuildError(str(exc)) from exc


# -- files ---------------------------------------------------------------------------------


def _keep_late_edits(layout: Layout, live: Store, seen: dict[str, str | None]) -> list[str]:
    """The files a person changed since the rebuild last adopted them (``seen``, as read
    then: while it carried the late rows and swapped), their change replayed onto the rebuilt
    file as a hand revision; the names. Without it the rewrite that follows overwrote the
    change, and it was in no revision either (the daemon, paused, never saw it). A file
    deleted meanwhile is no edit: the rewrite writes it back, as the daemon does."""
    latest = live.revisions.latest_md()
    kept = []
    for name, now in md_files.read_curated(layout).items():
        if now is None:
            continue
        before = md_files.canonical(name, seen.get(name) or "")
        after = md_files.canonical(name, now)
        if after == before:
            continue
        text = replayed(before, after, latest.get(name, ""))
        if text != latest.get(name, ""):
            live.revisions.add_revision(name, text, "hand", time.time())
            kept.append(name)
    return kept


def _rewrite_md(layout: Layout, latest: dict[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Materialise the rebuilt revisions; a curated file the rebuild never wrote is removed
    (it came from the memory just replaced)."""
    written = md_files.materialise(layout, latest)
    removed = []
    files = md_files.curated_path(layout, "files.md")
    # No notes in the rebuilt memory: they go, the watcher's inventory below them stays.
    if "files.md" not in latest and files_md.write_notes(files, ""):
        written.append("files.md")
    for name in CURATED_FILES:
        if name not in latest and name != "files.md":
            with contextlib.suppress(FileNotFoundError):
                os.unlink(md_files.curated_path(layout, name))
                removed.append(name)
    return tuple(written), tuple(removed)
