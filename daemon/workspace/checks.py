"""Proactive checks: deterministic workspace problems become pending actions, no curator call.

Each check computes the problems present now, each with a stable
de-duplication key. :meth:`Checks.run` raises an action for every new problem
(see :meth:`wsd.daemon.store.workspace.Workspace.raise_actions`: an action the agent
dismissed is not nagged back) and closes, as completed, every open action of
the check whose problem is gone. The checks:

* ``unprocessed:<path>``: a document in ``documents/`` with no output in
  ``ocr/`` or ``extractions/`` (a file or folder named after it: ``scan.pdf``
  is matched by ``scan.txt``, ``scan.pdf.json``, ``scan_ocr.txt``, ``scan/...``)
  once it has been in the workspace for ``unprocessed_seconds``.
* ``duplicate:<sha256>``: identical content in two or more places. Sizes are
  compared first (from the index); only files sharing a size are hashed, the
  hash is kept in the index until the file changes, and hashing stops after
  ``hash_budget_seconds`` per run (the rest is hashed on the next runs, and no
  duplicate action is closed until every candidate is hashed).
* ``canvas_drift:<card>``: a canvas-mirrored file changed (or deleted) on disk
  since its last sync; ``canvas_conflict:<card>``: a conflict copy waits to be
  merged (closed once it is deleted or the file holds the card's version).
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from wsd.daemon.runtime.config import DEFAULT_UNPROCESSED_SECONDS
from wsd.daemon.runtime.fsio import UnsafeFile, kind_of, read_text
from wsd.daemon.runtime.log import get_logger
from wsd.daemon.store import ActionRequest, Store
from wsd.daemon.workspace.canvas import (
    CARD_MAX_BYTES,
    CONFLICT_MARK,
    conflict_path,
    shown_title,
)

SOURCE = "checks"
_SEPARATORS = "._- "


@dataclass(frozen=True)
class CheckSettings:
    """Tunables of the checks (the daemon's Config supplies them)."""

    unprocessed_seconds: float = DEFAULT_UNPROCESSED_SECONDS
    documents: str = "documents/"
    outputs: tuple[str, ...] = ("ocr/", "extractions/")
    duplicate_min_bytes: int = 1
    hash_budget_seconds: float = 0.5
    #: Files larger than this are not hashed (so not compared for duplicates): one hash must
    #: not hold the watcher's thread for minutes.
    hash_max_bytes: int = 512 * 1024 * 1024
    #: At most this many open actions per check; the rest are summed up in one more.
    max_actions: int = 20


@dataclass
class CheckReport:
    raised: int = 0
    closed: int = 0
    #: Files still waiting to be hashed: run again soon rather than at the next period.
    hashes_pending: int = 0


def _date(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _output_keys(paths: list[str]) -> set[str]:
    """Every name an output file or folder could be matching a document by."""
    keys: set[str] = set()
    for path in paths:
        for part in path.split("/")[1:]:
            low = part.lower()
            keys.add(low)
            keys.update(low[:i] for i, c in enumerate(low) if c in _SEPARATORS and i)
    return keys


def _doc_key(path: str) -> str:
    name = path.rsplit("/", 1)[-1].lower()
    return name.rsplit(".", 1)[0] if "." in name[1:] else name


def file_sha256(path: str, limit: int | None = None) -> str:
    """sha256 of a regular file, read in 1 MiB chunks; never follows a link, never blocks.

    Raises UnsafeFile for a FIFO, a device, a link or (with ``limit``) a larger file.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFile(f"{path} is {kind_of(st.st_mode)}: not hashed")
        if limit is not None and st.st_size > limit:
            raise UnsafeFile(f"{path} is over {limit} bytes: not hashed")
        digest = hashlib.sha256()
        read = 0
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
            read += len(chunk)
            if limit is not None and read > limit:
                raise UnsafeFile(f"{path} grew past {limit} bytes while hashed")
        return digest.hexdigest()
    finally:
        os.close(fd)


class Checks:
    """Runs every check against the index in memory.db and the files on disk."""

    def __init__(
        self,
        root: str,
        store: Store,
        settings: CheckSettings | None = None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.root = root
        self.store = store
        self.settings = settings or CheckSettings()
        self.clock = clock
        self.monotonic = monotonic
        self.log = get_logger(component="checks")

    def run(self, now: float | None = None) -> CheckReport:
        """Run every check once; raise new problems, close resolved ones."""
        now = self.clock() if now is None else now
        report = CheckReport()
        self._apply("unprocessed:", self.unprocessed(now), now, report)
        duplicates, pending = self.duplicates()
        report.hashes_pending = pending
        self._apply("duplicate:", duplicates, now, report, may_close=pending == 0)
        self._apply("canvas_drift:", self.canvas_drift(), now, report)
        report.closed += self.store.workspace.close_actions(self.resolved_conflicts(), now)
        if report.raised or report.closed:
            self.log.info("checks", raised=report.raised, closed=report.closed)
        return report

    def _apply(
        self,
        prefix: str,
        found: list[ActionRequest],
        now: float,
        report: CheckReport,
        may_close: bool = True,
    ) -> None:
        cap = self.settings.max_actions
        if len(found) > cap:
            found.sort(key=lambda r: (r.appeared_at, r.key))
            rest = found[cap - 1 :]
            summary = ActionRequest(
                f"{prefix}+more",
                f"{len(rest)} more like this ({prefix.rstrip(':')}), e.g. "
                + "; ".join(r.content for r in rest[:3])[:600],
                2,
                max(r.appeared_at for r in rest),
            )
            found = [*found[: cap - 1], summary]
        report.raised += self.store.workspace.raise_actions(found, SOURCE, now)
        if may_close:
            present = {r.key for r in found}
            gone = [k for k in self.store.workspace.open_action_keys(prefix) if k not in present]
            report.closed += self.store.workspace.close_actions(gone, now)

    # -- the checks ---------------------------------------------------------------------

    def unprocessed(self, now: float) -> list[ActionRequest]:
        """Documents old enough to have been processed, with no output named after them."""
        s = self.settings
        outputs = _output_keys([p for p, _ in self.store.workspace.files_under(list(s.outputs))])
        found = []
        for path, first_seen in self.store.workspace.files_under([s.documents]):
            if now - first_seen < s.unprocessed_seconds or _doc_key(path) in outputs:
                continue
            where = " or ".join(o.rstrip("/") + "/" for o in s.outputs)
            content = (
                f"{path} has no output in {where} yet (in the workspace since"
                f" {_date(first_seen)}): process it, or note why it needs no processing."
            )
            found.append(ActionRequest(f"unprocessed:{path}", content, 2, first_seen))
        return found

    def duplicates(self) -> tuple[list[ActionRequest], int]:
        """Groups of identical files, and how many candidates are still unhashed."""
        deadline = self.monotonic() + self.settings.hash_budget_seconds
        hashed: list[tuple[str, int, int, str]] = []
        pending = 0
        found = []
        for same_size in self.store.workspace.size_groups(self.settings.duplicate_min_bytes):
            groups: dict[str, list[tuple[str, float]]] = defaultdict(list)
            for path, size, mtime, sha, first_seen in same_size:
                if sha is None:
                    if self.monotonic() > deadline:
                        pending += 1
                        continue
                    sha = self._hash(path, size, mtime)
                    if sha is None:
                        continue
                    hashed.append((path, size, mtime, sha))
                groups[sha].append((path, first_seen))
            for sha, members in groups.items():
                if len(members) > 1:
                    found.append(self._duplicate(sha, same_size[0][1], members))
        self.store.workspace.set_hashes(hashed)
        return found, pending

    @staticmethod
    def _duplicate(sha: str, size: int, members: list[tuple[str, float]]) -> ActionRequest:
        paths = sorted(p for p, _ in members)
        shown = ", ".join(paths[:6]) + (f" and {len(paths) - 6} more" if len(paths) > 6 else "")
        content = (
            f"The same content ({size:,} bytes) is in {len(paths)} places: {shown}."
            " Keep one, or note why the copies are needed."
        )
        return ActionRequest(f"duplicate:{sha}", content, 2, max(f for _, f in members))

    def _hash(self, rel: str, size: int, mtime: int) -> str | None:
        full = os.path.join(self.root, rel)
        try:
            st = os.lstat(full)
            if (st.st_size, st.st_mtime_ns) != (size, mtime):
                return None  # changed since indexed: the watcher will re-index it first
            return file_sha256(full, self.settings.hash_max_bytes)
        except OSError:  # gone, unreadable, a FIFO swapped in, too large: not a candidate
            return None

    def canvas_drift(self) -> list[ActionRequest]:
        """Open cards whose file no longer holds what was last synced."""
        found = []
        for card in self.store.workspace.open_cards():
            if card.last_synced_sha256 is None:
                continue
            full = os.path.join(self.root, card.path)
            st: os.stat_result | None = None
            try:
                st = os.lstat(full)
                sha = file_sha256(full, CARD_MAX_BYTES)
                what = "was edited"
            except OSError:
                sha = None
                what = "was deleted" if st is None else f"was replaced by {kind_of(st.st_mode)}"
                if st is not None and stat.S_ISREG(st.st_mode):
                    what = "grew too large to be a card (or became unreadable)"
            if sha == card.last_synced_sha256:
                continue
            title = shown_title(card.title or card.card_id)
            content = (
                f"{card.path} (mirror of canvas card “{title}”) {what} since its last sync:"
                " update the card to match, or restore the file."
            )
            appeared = st.st_mtime if st is not None else (card.last_synced_at or 0.0)
            found.append(ActionRequest(f"canvas_drift:{card.card_id}", content, 2, appeared))
        return found

    def resolved_conflicts(self) -> list[str]:
        """Keys of open conflict actions whose copy is gone or merged into the file."""
        done = []
        for key in self.store.workspace.open_action_keys("canvas_conflict:"):
            card = self.store.workspace.card(key.split(":", 1)[1])
            if card is None:
                done.append(key)
                continue
            copy = os.path.join(self.root, conflict_path(card.path, card.card_id))
            try:  # never through a link, never blocking on a FIFO
                text = read_text(copy, CARD_MAX_BYTES)
            except OSError:
                text = None
            if text is None:
                done.append(key)
                continue
            body = text.split("-->\n\n", 1)[1] if text.startswith(CONFLICT_MARK) else text
            try:
                if read_text(os.path.join(self.root, card.path), CARD_MAX_BYTES) == body:
                    done.append(key)
            except OSError:
                pass
        return done
