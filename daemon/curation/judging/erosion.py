"""Erosion: what a curated file has lost over a day of batches, not just in one.

One batch may lose at most a quarter of a file's lines (:mod:`wsd.daemon.curation.judging.edits`),
but that is per batch: found by an attack, four careless batches in a row took a 120-line user.md to
39 lines, each within its cap. So every batch is also measured against the file as it was a day ago
(its *baseline*, :meth:`~wsd.daemon.store.revisions.Revisions.baseline_revision`): once more than
``fraction`` of the baseline's lines is gone (no line says them any more, as
:func:`~wsd.daemon.curation.judging.edits.plain` reads lines), further removals of them wait. Adds
go on, and so do removals of lines written since. A person's hand edit or ``wsd memory restore``
resets the baseline to their version (a person who cut the file meant it); otherwise it moves on by
itself as the day rolls, so the file can change again at the pace of half a day's worth.

When a removal waits, the batch records it (state key ``eroding:<file>``), and ``wsd status`` and
``wsd doctor`` name the file, what it lost, and the revision that restores it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime

from wsd.daemon.curation.judging.edits import plain
from wsd.daemon.store import Store
from wsd.schema.layout import CURATED_FILES

#: The baseline is the file as it was this long before the batch.
WINDOW_SECONDS = 86_400.0
#: The state key under which a batch that made removals wait says so (``eroding:user.md``).
EROSION_KEY = "eroding:{name}"


@dataclass(frozen=True)
class Erosion:
    """One file measured against its baseline."""

    file: str
    #: The baseline revision (the one ``wsd memory restore`` brings back).
    revision: int
    at: float
    #: Lines of the baseline that say something, and how many of them no line says now.
    had: int
    lost: int
    #: How many of them may be lost before removals wait: ``ceil(had * fraction)``.
    limit: int
    said: frozenset[str]

    @property
    def allowance(self) -> int:
        """Lines of the baseline that may still be lost."""
        return max(0, self.limit - self.lost)

    @property
    def closed(self) -> bool:
        """Removals of the baseline's lines wait."""
        return self.had > 0 and self.lost >= self.limit

    def summary(self) -> str:
        """For people (``wsd status``, ``wsd doctor``): what is gone, and the way back."""
        return (
            f"{self.file} has lost {self.lost} of the {self.had} lines it had at revision"
            f" #{self.revision} ({_when(self.at)}); the curator's removals wait until it is a"
            f" day older. To bring them back: wsd memory restore {self.file} {self.revision};"
            " to accept the file as it is: edit it by hand"
        )

    def to_json(self) -> dict[str, object]:
        return {
            "revision": self.revision,
            "revision_at": _when(self.at),
            "had": self.had,
            "lost": self.lost,
            "restore": f"wsd memory restore {self.file} {self.revision}",
        }

    def reason(self) -> str:
        """Why a removal was refused, and how a person undoes the loss."""
        return (
            f"erosion: the file has lost {self.lost} of the {self.had} lines it had at revision"
            f" #{self.revision} ({_when(self.at)}); removals wait (wsd memory restore"
            f" {self.file} {self.revision} brings them back; a hand edit accepts the file)"
        )


def measure(store: Store, name: str, text: str, now: float, fraction: float) -> Erosion | None:
    """``text`` (the file now) against its baseline at ``now``; None when erosion is off
    (``fraction`` 0) or the file has no revision yet."""
    if fraction <= 0:
        return None
    base = store.revisions.baseline_revision(name, now - WINDOW_SECONDS)
    if base is None:
        return None
    says = [p for line in base.content.splitlines() if (p := plain(line))]
    now_says = {plain(line) for line in text.splitlines()}
    lost = sum(1 for p in says if p not in now_says)
    limit = math.ceil(len(says) * fraction)
    return Erosion(name, base.id, base.created_at, len(says), lost, limit, frozenset(says))


def state_row(erosion: Erosion, batch_at: float) -> tuple[str, str]:
    """The state row a batch that made removals wait writes: (key, value)."""
    value = {"revision": erosion.revision, "had": erosion.had, "at": batch_at}
    return EROSION_KEY.format(name=erosion.file), json.dumps(value)


def waiting(store: Store, name: str, text: str, now: float, fraction: float) -> Erosion | None:
    """The file's erosion if removals of it are waiting now: the gate is closed and a batch
    made one wait since its baseline (a baseline moved on by a day, a hand edit or a restore
    makes an older hold stale)."""
    erosion = measure(store, name, text, now, fraction)
    if erosion is None or not erosion.closed:
        return None
    raw = store.ledger.get_state(EROSION_KEY.format(name=name))
    try:
        waited = json.loads(raw) if raw else None
    except ValueError:
        waited = None
    if not isinstance(waited, dict) or waited.get("revision") != erosion.revision:
        return None
    return erosion


def waiting_files(store: Store, now: float, fraction: float) -> list[Erosion]:
    """Every curated file whose removals wait now (see :func:`waiting`)."""
    if fraction <= 0:
        return []
    latest = store.revisions.latest_md()
    found = (waiting(store, name, latest.get(name, ""), now, fraction) for name in CURATED_FILES)
    return [e for e in found if e is not None]


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")
