"""Vectors for new memories, made by the daemon between passes (the ``[semantic]`` extra).

Never on the hook path: the hooks write turns, the loop curates them and indexes them for
search, and then :class:`Embedder` gives each new learning and turn its vector, a few dozen
per step, as many as fit in :data:`STEP_SECONDS` by the time the last ones took, so a
SIGTERM or a waiting batch never waits long. The same step backfills an archive
curated before the extra was installed (``vectors_backfill`` log lines show the progress),
and ``wsd rebuild`` runs it to the end on the database it builds aside.

The model loads on the first text to embed, not at start-up nor while idle; the memory
shedder gives it back with the SDK once nothing has been pending for a minute.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from wsd.daemon.memory.semantic import MODEL_ID, missing
from wsd.daemon.runtime import signals
from wsd.daemon.store import Store

#: At most this many texts per step (~0.3 s on one core when they are short learnings).
STEP = 32
#: A step embeds as many texts as the last ones say fit in this long. A fixed 32 was 15-60 s
#: of turns under load (0.5-2.2 s each), during which a flushed batch waited (issue 20).
STEP_SECONDS = 0.5
#: While nothing is known to be new, look for memories added by others (``wsd import``)
#: this often: one cheap read of memory.db.
CHECK_SECONDS = 10.0
#: A backfill logs its progress at most this often.
PROGRESS_SECONDS = 30.0


class Embedder:
    """Embeds memories without a vector; call :meth:`step` between passes."""

    def __init__(
        self,
        store: Store,
        log: Any,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.log = log
        self.monotonic = monotonic
        self.dirty = True  # at start: maybe a backfill
        self.enabled: bool | None = None  # decided on the first step
        self._checked = float("-inf")
        self._seen: tuple[str, int, int] = ("", -1, -1)
        self._per_text = STEP_SECONDS  # until measured: one text a step
        # A run of steps: (started, embedded since, with a vector at the start, memories).
        self._backfill: tuple[float, int, int, int] | None = None
        self._logged = float("-inf")

    def changed(self) -> None:
        """New memories were written (a batch committed, turns indexed)."""
        self.dirty = True

    def step(self) -> int:
        """Embed the memories that fit in about STEP_SECONDS (at least one, at most STEP);
        returns how many (0: nothing to do, or disabled)."""
        now = self.monotonic()
        if not self.dirty and now - self._checked >= CHECK_SECONDS:
            self._checked = now
            newest = self.store.vectors.newest()
            self.dirty = newest != self._seen
            self._seen = newest
        if not self.dirty or not self._enable():
            return 0
        fits = int(STEP_SECONDS / max(self._per_text, 1e-3))
        rows = self.store.vectors.pending(max(1, min(STEP, fits)))
        if not rows:
            self.dirty = False
            self._finish()
            return 0
        if self._backfill is None:
            done, total = self.store.vectors.counts()
            self._backfill = (now, 0, done, total)
        with signals.blocked():  # the native threads the model starts never take SIGTERM
            from wsd.daemon.memory.semantic.dense import embed_texts

            started = self.monotonic()
            packed = embed_texts([text for _, _, text in rows])
            self._per_text = (self.monotonic() - started) / len(rows)
        written = self.store.vectors.write(
            [(kind, i, v) for (kind, i, _), v in zip(rows, packed, strict=True)]
        )
        self._progress(len(rows))
        return max(written, len(rows))

    def run_to_end(self, say: Callable[[str], None]) -> int:
        """Embed everything pending (``wsd rebuild``); returns how many."""
        if not self._enable():
            return 0
        total, reported = 0, 0
        while True:
            done = self.step()
            if not done:
                return total
            total += done
            if total - reported >= STEP * 10:
                reported = total
                say(f"vectors: {total} embedded")

    def _enable(self) -> bool:
        if self.enabled is None:
            reason = missing()
            if reason is not None:
                self.log.info("semantic_off", reason=reason)
                self.enabled = False
            else:
                self.enabled = self.store.vectors.use_model(MODEL_ID)
        return self.enabled

    def _progress(self, count: int) -> None:
        assert self._backfill is not None
        started, embedded, done, total = self._backfill
        embedded += count
        self._backfill = (started, embedded, done, total)
        now = self.monotonic()
        if total - done > STEP and now - self._logged >= PROGRESS_SECONDS:
            self._logged = now
            self.log.info(
                "vectors_backfill",
                done=done + embedded,
                total=total,
                per_second=round(embedded / max(now - started, 1e-3), 1),
            )

    def _finish(self) -> None:
        if self._backfill is None:
            return
        started, embedded, done, total = self._backfill
        self._backfill = None
        if self._logged > float("-inf"):  # a backfill long enough to report: say it ended
            self._logged = float("-inf")
            self.log.info(
                "vectors_backfill_done",
                done=done + embedded,
                total=total,
                seconds=round(self.monotonic() - started, 1),
            )
