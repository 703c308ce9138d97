"""The curated md files on disk, kept at their latest revisions by the loop, a person's edits
adopted, failures in view.

A person's edit of a curated file is adopted as a new revision (source ``hand``) as soon as
the loop sees a curated file changed on disk (one lstat each per pass), and again before a
request and a commit use the files (see :mod:`wsd.daemon.memory.md.files` for how an edit is
told from a version the daemon wrote). A curated file deleted meanwhile is no edit: the same
look writes it back from its latest revision (an emptied file is an edit, and is adopted).

A batch commits its md revisions to memory.db first; the files are written after. When a
write fails (disk full, a folder or a FIFO where the file should be), the revision is safe
but the file on disk is stale, and so is the boot context read from it. So a failure is
never just logged: :class:`MdSync` remembers it, retries it at the start of every pass
until it succeeds, shows it in the heartbeat (``md_write_failed``, read by ``wsd status``
and ``wsd doctor``) and hands it to the flush requests the loop answers meanwhile, so
``wsd flush --wait`` exits non-zero with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from wsd.daemon.memory.md import files as md_files
from wsd.daemon.memory.md.files import DiskWatch
from wsd.daemon.runtime.heartbeat import StatusFile
from wsd.daemon.runtime.log import ErrorThrottle
from wsd.daemon.store import Store


class MdSync:
    """Writes curated files from their latest revisions; remembers and retries failures."""

    def __init__(
        self, store: Store, status: StatusFile, log: Any, clock: Callable[[], float]
    ) -> None:
        self.store = store
        self.layout = store.layout
        self.status = status
        self.log = log
        self.clock = clock
        self.throttle = ErrorThrottle()
        self.disk = DiskWatch(self.layout)
        #: file -> why its last write failed; empty when every file matches its revision.
        self.failed: dict[str, str] = {}

    def repair(self) -> md_files.Synced:
        """Start-up: stray temp files removed, hand edits adopted, missing or stale files
        written from their revisions."""
        self.disk.changed()
        done = md_files.sync(self.layout, self.store, self.clock(), temp_files=True)
        self._adopted(done.adopted)
        self._settle(done.failed, self.store.revisions.latest_md())
        if done.written or done.temp_removed:
            self.log.info("md_repaired", files=done.written, temp_removed=done.temp_removed)
        return done

    def adopt(self) -> list[str]:
        """If any curated file changed on disk since the last look: adopt hand edits, and
        write back from its latest revision a file that was deleted (nothing at its path)."""
        if not self.disk.changed():
            return []
        adopted = md_files.adopt_hand_edits(self.layout, self.store, self.clock())
        self._adopted(adopted)
        self._restore_missing()
        return adopted

    def _restore_missing(self) -> None:
        """A deleted curated file is not an edit to adopt: the boot context would lack it
        until a restart, so it is written again now. Only where nothing is: a link or a FIFO
        in its place is left alone (``wsd doctor`` names it, ``--fix`` removes it)."""
        gone = self.disk.missing()
        if not gone:
            return
        latest = self.store.revisions.latest_md()
        wanted = {name: latest[name] for name in gone if name in latest}
        if not wanted:
            return
        written, failed = md_files.materialise_each(self.layout, wanted)
        self._settle(failed, wanted)
        if written:
            self.log.info("md_repaired", files=written, reason="missing on disk")

    def current(self) -> dict[str, str]:
        """The memory files as the curator should see them now (hand edits adopted)."""
        self.adopt()
        return md_files.memory_files(self.layout, self.store)

    def write(self, names: Iterable[str]) -> list[str]:
        """Write these files from their latest revisions; the ones written. A person who
        edited one during the call wins: their edit is adopted first, as the latest."""
        self.adopt()
        latest = self.store.revisions.latest_md()
        wanted = {n: latest[n] for n in names if n in latest}
        written, failed = md_files.materialise_each(self.layout, wanted)
        self._settle(failed, wanted)
        return written

    def retry(self) -> list[str]:
        """Each pass: write again what failed before (nothing to do is one dict check)."""
        if not self.failed:
            return []
        before = dict(self.failed)
        written = self.write(list(before))
        fixed = [n for n in before if n not in self.failed]
        if fixed:
            self.log.info("md_repaired", files=fixed, reason="retry after a failed write")
        return written

    def _adopted(self, adopted: list[str]) -> None:
        if adopted:
            self.log.info("md_adopted", files=adopted, source="hand")

    def error(self) -> str | None:
        """One line naming every file whose last write failed, or None."""
        if not self.failed:
            return None
        return "md files not written: " + "; ".join(
            f"{name} ({why})" for name, why in sorted(self.failed.items())
        )

    def _settle(self, failed: dict[str, str], tried: Iterable[str]) -> None:
        changed = False
        for name in tried:
            if name not in failed and self.failed.pop(name, None) is not None:
                changed = True
        for name, why in failed.items():
            changed |= self.failed.get(name) != why
            self.failed[name] = why
        if failed:
            suppressed = self.throttle.failed("md", self.clock())
            if suppressed is not None:
                self.log.error("md_write_failed", files=failed, suppressed=suppressed)
        else:
            self.throttle.recovered("md")
        if changed:
            self.status.update(md_write_failed=dict(self.failed) or None, force=True)
