"""Where each line of a curated file came from, and the words that caused it.

* :func:`blame`: for each line of a file's latest revision, the revision that introduced it:
  walking back from the latest, the line's origin is the oldest revision of the unbroken run
  of revisions that hold it (so a line a restore brought back is the restore's, a line a
  person typed is the hand revision's, one the curator rewrote is that batch's). Lines are
  matched by their text, copies counted (the k-th copy of a repeated line is as old as the
  k-th oldest), which is what a person means by "where did this line come from" and costs
  one pass over the revisions, newest first, stopping when every line has its origin.
* :func:`likely_turns`: for a curator line, the turns cited by the batch's learnings closest
  to the line (most words shared), ranked by the words each turn shares with it; when the
  batch's learnings cited none, the batch's turns whose words overlap the line most.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from wsd.daemon.memory.search.text import STOP_WORDS
from wsd.daemon.store import BatchTrace, Revision, SourceTurn

#: Turns ``why`` names for a line at most.
TURNS_SHOWN = 3
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Blamed:
    """One line of the latest revision and the revision that introduced it."""

    number: int  # 1-based
    text: str
    origin: Revision


def blame(revisions: Sequence[Revision]) -> list[Blamed]:
    """Each line of the last of ``revisions`` (oldest first) with its origin (see the module
    docstring); [] when there are none."""
    if not revisions:
        return []
    lines = revisions[-1].content.splitlines()
    alive = Counter(lines)  # copies still held by every revision back to here
    starts: dict[str, list[int]] = {text: [] for text in alive}
    for k in range(len(revisions) - 2, -1, -1):
        if not alive:
            break
        held = Counter(revisions[k].content.splitlines())
        for text in list(alive):
            keep = min(alive[text], held[text])
            if keep < alive[text]:
                starts[text] += [k + 1] * (alive[text] - keep)
                if keep:
                    alive[text] = keep
                else:
                    del alive[text]
    for text, copies in alive.items():
        starts[text] += [0] * copies
    order = {text: sorted(found) for text, found in starts.items()}
    out = []
    for number, text in enumerate(lines, start=1):
        out.append(Blamed(number, text, revisions[order[text].pop(0)]))
    return out


@functools.lru_cache(maxsize=4096)
def words(text: str) -> frozenset[str]:
    """Content words of ``text``: lower case, numbers, and words of three letters or more
    that are not stop words."""
    return frozenset(
        w
        for w in _WORD.findall(text.lower())
        if any(c.isdigit() for c in w) or (len(w) >= 3 and w not in STOP_WORDS)
    )


def _best(scored: list[tuple[int, SourceTurn]]) -> list[SourceTurn]:
    """The turns scoring at least half the best score (best first, then oldest), or all
    of them when none shares a word."""
    ranked = sorted(scored, key=lambda p: (-p[0], p[1].observation_id))
    top = ranked[0][0] if ranked else 0
    return [t for s, t in ranked if s * 2 >= top and (s > 0 or top == 0)][:TURNS_SHOWN]


def likely_turns(line: str, batch: BatchTrace) -> tuple[list[SourceTurn], bool]:
    """The turns ``line`` most likely came from, best first, and whether they are turns the
    batch's learnings cited: those of the learnings that share most words with the line
    (ranked by the words their turns share with it), else those of all its learnings; when
    no learning cited a turn, the batch's turns that share most words with the line."""
    wanted = words(line)
    closeness = {x.id: len(wanted & words(x.content)) for x in batch.learnings}
    top = max(closeness.values(), default=0)
    cited: dict[tuple[str, int], tuple[int, SourceTurn]] = {}
    for learning in batch.learnings:
        if top and closeness[learning.id] < top:
            continue
        for turn in learning.sources:
            if not turn.cited:
                continue
            score = len(wanted & (words(turn.prompt) | words(turn.response)))
            key = (turn.identity, turn.observation_id)
            if key not in cited or cited[key][0] < score:
                cited[key] = (score, turn)
    if cited:
        return _best(list(cited.values())), True
    scored = [(len(wanted & (words(t.prompt) | words(t.response))), t) for t in batch.turns]
    return _best(scored), False
