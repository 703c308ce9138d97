"""A person's "forget X" said to the agent (issues 33, 43): run by the daemon.

The curator names it (``FORGET: words [turn N]``); grounding keeps it only when the
person's own words in that turn ask to forget (a page, a file or the agent saying "forget
X" asks nothing), and notes whether those words said what is to go; the batch's commit
records it (``forget_requests``). The daemon's next pass runs it here, as ``wsd forget``
would:

* at once, when the person's request said the words and the dry run finds at most
  :data:`AT_ONCE` items;
* else it asks first: a pending action naming what would go and how much, where they
  asked ("You asked in T3 to forget something: ... `Dr. Okafor`"), which the agent sees at
  the next boot. The person's yes in conversation (the curator closes the action: grounding
  accepts it on their own "yes") or ``wsd pending complete`` runs it; dismissed drops it.

A request grounding refused is kept (without words) for :data:`TOLD_SECONDS` so the boot
context and ``wsd status`` say it was refused and why: nothing is refused silently.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from wsd.daemon.memory.forget import erase
from wsd.daemon.memory.forget.words import BadWords, Forget
from wsd.daemon.store import Asked, Store

#: A FORGET whose dry run finds more items than this waits for the person to confirm.
AT_ONCE = 20
#: A FORGET of words in this share of the workspace's turns (and at least
#: :data:`COMMON_TURNS` of them) is too wide to run on a conversation's word: it asks first.
#: Measured on LoCoMo's two conversations (419 and 369 turns): the names in them other than
#: the two speakers' own are in a median 2-3 % of the turns, all under 5 %; the words in 5 %
#: or more are function words, the speakers' names and their main topics ("dance",
#: "studio"): words a person rarely means to have erased everywhere without being asked.
COMMON_SHARE = 0.05
COMMON_TURNS = 3
#: Words this short ("Dr", "St", "AI") match too much to run unasked (issue 44: a curator's
#: "FORGET: Dr", cut at the abbreviation, erased every sentence holding "Dr" in five turns).
SHORT_CHARS = 2
#: How long a refused request is told of (the boot context, ``wsd status``).
TOLD_SECONDS = 7 * 86400.0
#: How the action that asks the person to confirm a forget begins (grounding reads a "yes"
#: of theirs as closing it: :func:`wsd.daemon.curation.judging.grounding.Grounds.shows_done`).
CONFIRM = "Confirm:"


def handle(store: Store, log: Any, now: Callable[[], float] = time.time) -> int:
    """Run (or ask to confirm) every waiting request; how many erasures ran."""
    ran = 0
    for asked in store.erasure.requests():
        if asked.status == "refused":
            if now() - asked.created_at > TOLD_SECONDS:
                store.erasure.drop_request(asked.id)
            continue
        if asked.status == "confirm":
            if asked.action == "completed":
                ran += _run(store, asked, log, now, confirmed=True)
            elif asked.action in ("dismissed", None):
                store.erasure.drop_request(asked.id)
                log.info("forget_declined", request=asked.id)
            continue
        try:
            report = erase.plan(store, Forget.of([asked.words]))
        except BadWords:
            store.erasure.drop_request(asked.id)
            continue
        small = report.total() <= AT_ONCE and not report.needs_all_matches
        # The turn that asks holds the words when the person said them: not a use of them.
        elsewhere = report.counts().get("turns", 0) - (1 if asked.said else 0)
        wide = too_wide(asked.words, elsewhere, store.turns.backlog())
        if asked.said and small and wide is None:
            ran += _run(store, asked, log, now, confirmed=False)
            continue
        text = confirmation(asked, report.total(), wide)
        store.erasure.ask_to_confirm(asked.id, text, now())
        log.info("forget_waits_for_confirmation", request=asked.id, items=report.total())
    return ran


def too_wide(words: str, turns_hit: int, backlog: Any) -> str | None:
    """Why ``words`` are too wide to erase on a conversation's request unasked (None: they
    are not): every word of them :data:`SHORT_CHARS` letters or fewer, or in ``turns_hit``
    turns (besides the one asking), :data:`COMMON_TURNS` or more and :data:`COMMON_SHARE`
    of the turns or more."""
    if all(len(w.strip(".,;:!?'\"")) <= SHORT_CHARS for w in words.split()):
        return f"it is a word of {SHORT_CHARS} letters or fewer, which matches too much"
    total = max(1, int(getattr(backlog, "last_turn_id", 0) or 0))
    if turns_hit >= COMMON_TURNS and turns_hit >= COMMON_SHARE * total:
        return f"it is in {turns_hit} other turns of your {total}"
    return None


def confirmation(asked: Asked, items: int, wide: str | None = None) -> str:
    """The pending action asking the person to confirm ``asked`` (``items``: what it would
    erase; ``wide``: why it is too wide to run unasked): what would go, how much, where they
    asked, and how to answer."""
    where = f" in {asked.asked_in}" if asked.asked_in else ""
    what = (
        f'You asked{where} to forget "{asked.words}"'
        if asked.said
        else f'You asked{where} to forget something: the memory holds it as "{asked.words}"'
    )
    return (
        f"{CONFIRM} {what}" + (f" ({wide})" if wide else "") + "."
        f" Forgetting it erases {items} item(s) everywhere. Say yes to"
        f' forget it (or run `wsd forget "{asked.words}" --yes`); resolve this action:'
        " completed forgets it, dismissed keeps it"
    )


def _run(store: Store, asked: Asked, log: Any, now: Callable[[], float], *, confirmed: bool) -> int:
    report = erase.forget(store, [asked.words], by="conversation", all_matches=confirmed, now=now)
    store.erasure.drop_request(asked.id)
    log.info("forgotten", request=asked.id, by="conversation", counts=report.counts())
    return 1
