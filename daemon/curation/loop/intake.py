"""The loop's intake of spooled events: every taken spool file recorded, damage set aside.

Each pass first records what hooks spooled while transcript.db was busy (files a crash left
half-ingested first). A failure to ingest (the database busy, the disk full) is logged and the
pass goes on to curate: the file stays for the next pass. Lines that can never be recorded are
set aside by :func:`wsd.schema.spool.ingest_file` and logged here. Turns a late event folded
again are indexed again for search.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from wsd.daemon.runtime.heartbeat import StatusFile
from wsd.daemon.store import Store
from wsd.schema import spool


class SpoolIntake:
    """Ingests the workspace's spool each pass (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        stop: threading.Event,
        log: Any,
        failed: Callable[[str, BaseException], None],
        status: StatusFile,
    ) -> None:
        self.store = store
        self.path = store.layout.spool
        self.stop = stop
        self.log = log
        self.failed = failed
        self.status = status

    def run(self) -> None:
        """Ingest every spool file waiting (older taken ones first, then the live spool)."""
        for taken in spool.to_ingest(self.path):
            if not self.stop.is_set():
                self.ingest(taken)

    def waiting(self) -> bool:
        """True while spooled events wait to be recorded (see :func:`spool.waiting`)."""
        return spool.waiting(self.path)

    def _stopping(self) -> bool:
        """Asked before each line: keeps the heartbeat fresh, then says whether to stop."""
        # One transaction per event: a spool that grew while a lock was held for minutes
        # (32,363 events took 52 s in one pass in a soak) must not look like a stuck daemon.
        # Only the heartbeat: the state is the pass's to set, and a pass that stops at the
        # backoff or the budget sets none, so a state written here would outlive the ingest.
        self.status.update()  # written at most once per heartbeat
        return self.stop.is_set()

    def ingest(self, taken: str) -> None:
        """Record one taken spool file; a failure is logged and the pass goes on."""
        refolded: list[int] = []
        try:
            report = spool.ingest_file(
                taken, lambda e: self.store.turns.record_event(e, "spool", refolded), self._stopping
            )
        except Exception as exc:  # transient (busy, disk full): the file stays for next pass
            self.failed("spool", exc)
            return
        finally:
            if refolded:  # late events changed these turns' text: search must see it
                self.store.archive.reindex_turns(refolded)
        self.log.info(
            "spool_ingested",
            recorded=report.recorded,
            duplicates=report.duplicates,
            rejected=report.rejected,
        )
        if report.rejected:
            self.log.error(
                "spool_lines_rejected",
                count=report.rejected,
                reasons=report.reasons[:5],
                file=spool.REJECTED_NAME,
            )
