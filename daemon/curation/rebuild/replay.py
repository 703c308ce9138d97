"""What the live memory went through, in the order it happened, for ``wsd rebuild`` to replay.

A rebuild must give the memory the live run gave. Found by an attack (issue 20): after one
curated turn and a line a person appended to user.md, a rebuild kept none of the turn's
learnings ("restates user.md line 2": the rebuilt batch was judged against the person's later
file), and a line a person had taken out with ``wsd memory restore`` came back. So:

* **The same batches, at the same times.** Turns are grouped as the live ledger grouped them
  (:func:`plan_groups`), each group dated as its live batch was; a turn no live batch covers
  (not curated yet) is planned as the loop would, dated by its last turn.
* **Each batch sees the files as they stood then.** Every revision a person made (a hand edit
  adopted, a restore) is replayed before the first batch that started after it
  (:class:`PersonEdits`), as the change it made: its difference from the revision before it,
  re-anchored by content on the rebuilt file (:mod:`wsd.daemon.curation.judging.edits`), not a copy
  of the whole file, which would overwrite what the rebuilt batches wrote.

Retractions (``wsd forget``) need no timeline: they are carried at the start, so a retracted
learning is never stored again.

The revisions made while the rebuild runs are read after the last id seen: a cursor that
holds only in the memory.db it was read from. Found by the soak (issue 30): memory.db deleted
mid-rebuild, the fresh one's hand revisions (ids 2 and 4: its ids start again from 1, below
the last one seen) were never read, and the swap took them away. So the memory.db's identity
is checked with every read (:class:`~wsd.daemon.store.rebuild.MemoryReplaced` when it changed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from wsd.daemon.curation.judging.edits import Limits, apply, edits_from_rewrite
from wsd.daemon.store import MemoryReplaced, Revision, Store

#: A person's change is theirs: replayed with no loss or size limit.
FREE = Limits(lines=1_000_000, chars=1_000_000_000, max_loss=1.0)


@dataclass(frozen=True)
class Group:
    """Turns curated together, and when: ``started`` is when the live batch began (a person's
    edit before it was seen by it), ``finished`` the date its rows get."""

    turn_ids: list[int]
    started: float | None = None
    finished: float | None = None
    #: The lane the live batch took (its rendering is the rebuild's); None: no live batch.
    lane: str | None = None


def plan_groups(live: Store, identity: str, ids: Sequence[int], batch_turns: int) -> list[Group]:
    """``ids`` grouped as ``live``'s ledger curated them, in its order; the turns no batch
    covers after them, ``batch_turns`` at a time."""
    wanted = set(ids)
    groups: list[Group] = []
    covered: set[int] = set()
    for started, finished, turn_ids, lane in live.ledger.batch_groups(identity):
        kept = [i for i in turn_ids if i in wanted and i not in covered]
        if kept:
            groups.append(Group(kept, started, finished, lane))
            covered.update(kept)
    rest = [i for i in ids if i not in covered]
    groups += [Group(rest[n : n + batch_turns]) for n in range(0, len(rest), batch_turns)]
    return groups


class PersonEdits:
    """The revisions people made in the live memory, replayed onto the rebuilt one."""

    def __init__(self, live: Store, built: Store, identity: str) -> None:
        """``identity``: the live memory.db's, as the rebuild first read it."""
        self.live = live
        self.built = built
        self.identity = identity
        self.pending: list[tuple[Revision, str]] = self._read(after=0)
        self.seen = max((r.id for r, _b in self.pending), default=0)
        self.replayed = 0

    def _read(self, after: int) -> list[tuple[Revision, str]]:
        """The live revisions after ``after``, read from the memory.db that has our identity
        (one connection for both reads: the same file)."""
        with self.live.session():
            found = self.live.memory_identity()
            if found != self.identity:
                raise MemoryReplaced(self.identity, found)
            return self.live.revisions.person_revisions(after)

    def until(self, cut: float | None) -> None:
        """Replay, in order, every pending edit made before ``cut`` (None: all of them)."""
        while self.pending and (cut is None or self.pending[0][0].created_at < cut):
            revision, before = self.pending.pop(0)
            self._replay(revision, before)

    def rest(self) -> None:
        """Right before the swap: the edits still pending, and those people made meanwhile."""
        self.pending += self._read(after=self.seen)
        self.until(None)

    def _replay(self, revision: Revision, before: str) -> None:
        current = self.built.revisions.latest_md().get(revision.file, "")
        text = replayed(before, revision.content, current)
        if text != current:
            self.built.revisions.add_revision(
                revision.file, text, revision.source, revision.created_at
            )
            self.replayed += 1


def replayed(before: str, after: str, onto: str) -> str:
    """``onto`` with the change a person made from ``before`` to ``after``, re-anchored by
    content (a line they added lands after the line it followed, or where it comes closest)."""
    old, new, now = _lines(before), _lines(after), _lines(onto)
    result = apply(old, now, edits_from_rewrite(old, new), FREE, near=True)
    return "\n".join(result.lines) + "\n" if result.lines else ""


def _lines(text: str) -> list[str]:
    return text.rstrip("\n").split("\n") if text.strip() else []
