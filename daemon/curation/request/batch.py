"""The turns of one curator call (:class:`Batch`), cut within the character budget
(:func:`plan`), and why a pass took none (:class:`NoBatch`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from wsd.daemon.curation.request.rendering import (
    PROMPT_RENDERING,
    Rendering,
    dated,
    render_turn,
    same_day,
)
from wsd.daemon.store import Turn

#: A turn holding a spooled event younger than this is not claimed yet: the rest of a
#: spooled burst (an earlier Stop, whole earlier turns) is placed first, not sent later as
#: addenda to a turn that a direct write joined and closed (found by the soak). ``wsd
#: rebuild`` leaves such turns to the daemon by the same measure.
LATE_SETTLE_SECONDS = 5.0


class NoBatch(StrEnum):
    """Why :meth:`Pipeline.take` claimed nothing."""

    SETTLING = "settling"  # a turn is still settling, or spooled events wait unrecorded
    REMARKED = "remarked"  # the turns were already curated: markers caught up, look again
    GONE = "gone"  # the turns went meanwhile (transcript.db replaced)


@dataclass(frozen=True)
class Batch:
    """Turns to curate in one call, with their text as the curator sees it."""

    turns: list[Turn] = field(default_factory=list)
    rendered: list[str] = field(default_factory=list)
    #: The lane's rendering the turns were rendered with (grounding reads the same).
    shown: Rendering = PROMPT_RENDERING

    @classmethod
    def of(cls, turns: Sequence[Turn], shown: Rendering = PROMPT_RENDERING) -> Batch:
        """The turns rendered whole (``wsd retry``: a parked batch is retried as it was)."""
        rendered = [
            render_turn(t, shown=shown, day=not same_day(t, turns[i - 1] if i else None))
            for i, t in enumerate(turns)
        ]
        return cls(list(turns), rendered, shown)

    def halves(self) -> tuple[Batch, Batch]:
        half = len(self.turns) // 2
        second = self.rendered[half:]
        if second:  # its own request now: its first turn names the date
            second = [dated(self.turns[half], second[0]), *second[1:]]
        return (
            Batch(self.turns[:half], self.rendered[:half], self.shown),
            Batch(self.turns[half:], second, self.shown),
        )


def plan(turns: Sequence[Turn], budget: int, shown: Rendering = PROMPT_RENDERING) -> list[Batch]:
    """Consecutive batches of ``turns``, each within ``budget`` characters of rendered text
    (a turn over the whole budget is clipped to it, and so is a batch of its own), rendered
    as the lane's ``shown`` says."""
    batches: list[Batch] = []
    used = 0

    def rendered(turn: Turn, day: bool) -> str:
        text = render_turn(turn, shown=shown, day=day)
        return text if len(text) <= budget else render_turn(turn, budget, shown, day)

    for turn in turns:
        before = batches[-1].turns[-1] if batches else None
        text = rendered(turn, not same_day(turn, before))
        if not batches or used + len(text) > budget:
            if before is not None and same_day(turn, before):
                text = rendered(turn, True)  # a request's first turn names its date
            batches.append(Batch(shown=shown))
            used = 0
        batches[-1].turns.append(turn)
        batches[-1].rendered.append(text)
        used += len(text)
    return batches


def batch_text(batch: Batch) -> str:
    """What the batch is about, for the related-learnings query: prompts and answers."""
    parts = [t.user_message or "" for t in batch.turns]
    parts += [t.agent_response or "" for t in batch.turns]
    return "\n".join(parts)[:20_000]
