"""Judging one curator reply: the one entry of :mod:`wsd.daemon.curation.judging`.

:func:`judge` reads the reply's text as untrusted (:mod:`.reply`), decides whose words hold
each item (:mod:`.grounding`: against the turns and what the request showed of them), then
what the rest may do to memory (:mod:`.guards`): each edited file against the file as it is
now (a person may have edited it while the call was out) and against what it had a day
before the batch (:mod:`.erosion`). What comes out is a :class:`Judged`: what may be
committed, and a line for everything refused, said without the person's words where the log
may read it. Nothing is written here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from wsd.daemon.curation.bridge.answer import Reply
from wsd.daemon.curation.judging import erosion, grounding
from wsd.daemon.curation.judging.guards import Caps, Review, review, summarise
from wsd.daemon.curation.judging.reply import ParsedReply, parse_reply
from wsd.daemon.curation.request.prompt import Seen
from wsd.daemon.memory.md.files import canonical
from wsd.daemon.store import ForgetRequest, Store, Turn
from wsd.schema.layout import CURATED_FILES


@dataclass(frozen=True)
class Judged:
    """A reply judged: what it asked for (``parsed``, as read), what may be committed
    (``checked``), what grounding refused or downgraded, and the files whose removals now
    wait for erosion (each measured against its baseline)."""

    parsed: ParsedReply
    checked: Review
    grounded: grounding.Verdict
    eroding: tuple[erosion.Erosion, ...]
    #: Each FORGET: the person's own requests (the words, whether they said them, where) and
    #: those refused (why).
    forgets: tuple[ForgetRequest, ...]

    @property
    def refused(self) -> list[str]:
        """Every refusal, grounding's first, as the ledger row keeps them."""
        return summarise(self.grounded.lines()) + self.checked.refused

    @property
    def refusal_kinds(self) -> dict[str, int]:
        """How many refusals of each kind (``wsd metrics``), the unreadable lines with them."""
        unread = len(self.parsed.unknown_lines) + self.parsed.dropped
        kinds = {**self.checked.kinds, "ungrounded": self.grounded.ungrounded}
        return kinds | {"unread_lines": unread}


def judge(
    store: Store,
    turns: Sequence[Turn],
    seen: Seen,
    reply: Reply,
    files: Mapping[str, str],
    caps: Caps,
    names: Mapping[int, str],
) -> Judged:
    """Judge ``reply`` to a request that showed the curator ``seen``, about ``turns``.
    ``files``: the memory files as they are now; ``names``: each turn's name as search gives
    it (``T12``), by turn id, for the marks grounding leaves. Reads the open actions and each
    edited file's revisions from ``store``; writes nothing."""
    read = parse_reply(reply.text, [t.id for t in turns], list(seen.actions))
    current = {name: canonical(name, files.get(name, "")) for name in CURATED_FILES}
    base = {name: canonical(name, text) for name, text in seen.base.items()}
    opened = {a[0]: a[2] for a in store.actions.open_actions()}
    grounded = grounding.ground(
        read,
        turns,
        base=base,
        open_actions=opened,
        names=names,
        rendered=seen.rendered,
        shown=seen.shown,
    )
    parsed = grounded.parsed
    day = {  # each edited file against what it had a day before this batch
        name: erosion.measure(store, name, current[name], seen.started, caps.erosion)
        for name in {*parsed.edits, *parsed.rewrites}
    }
    prompts = {t.id: t.user_message or "" for t in turns}
    asked = [
        ForgetRequest(
            words,
            grounding.said_in(words, [prompts[t] for t in where]),
            ", ".join(names.get(t, f"turn {t}") for t in where),
        )
        for words, where in parsed.forgets
    ]
    refused = [ForgetRequest("", asked_in=a, refused=why) for a, why in grounded.forgets_refused]
    checked = review(
        parsed,
        base=base,
        current=current,
        turns=len(turns),
        truncated=reply.stop_reason == "max_tokens",
        caps=caps,
        offered=set(seen.offered),
        erosion=day,
        forgets=[f.words for f in asked],
    )
    eroding = tuple(e for name in checked.eroding if (e := day[name]) is not None)
    return Judged(read, checked, grounded, eroding, (*asked, *refused))
