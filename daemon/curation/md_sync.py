"""The curated md files on disk, kept at their latest revisions by the loop, failures in view.

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

from wsd.daemon.memory import files as memory_files
from wsd.daemon.runtime.heartbeat import StatusFile
from wsd.daemon.runtime.log import ErrorThrottle
from wsd.daemon.store.ledger import Store


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
        #: file -> why its last write failed; empty when every file matches its revision.
        self.failed: dict[str, str] = {}

    def repair(self) -> list[str]:
        """Start-up: remove stray temp files and rewrite every file from its revision."""
        done, failed = memory_files.repair(self.layout, self.store.latest_md())
        self._settle(failed, done)
        return done

    def write(self, names: Iterable[str]) -> list[str]:
        """Write these files from their latest revisions; the ones written."""
        latest = self.store.latest_md()
        wanted = {n: latest[n] for n in names if n in latest}
        written, failed = memory_files.materialise_each(self.layout, wanted)
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
