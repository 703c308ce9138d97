"""A person's "forget X" said to the agent (issue 33, item 5): run by the daemon.

The curator names it (``FORGET: words [turn N]``); grounding keeps it only when the words
stand in the person's own prompt of that turn; the batch's commit records it
(``forget_requests``). The daemon's next pass runs it here, as ``wsd forget`` would: at once
when the dry run finds at most :data:`AT_ONCE` items, else it opens a pending action asking
the person to confirm (run ``wsd forget "X" --yes``, or resolve the action: completed runs
it, dismissed drops the request).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from wsd.daemon.memory.forget import erase
from wsd.daemon.memory.forget.words import BadWords, Forget
from wsd.daemon.store import Store

#: A FORGET whose dry run finds more items than this waits for the person to confirm.
AT_ONCE = 20


def handle(store: Store, log: Any, now: Callable[[], float] = time.time) -> int:
    """Run (or ask to confirm) every waiting request; how many erasures ran."""
    ran = 0
    for rid, words, status, action in store.erasure.requests():
        if status == "confirm":
            if action == "completed":
                ran += _run(store, rid, words, log, now, confirmed=True)
            elif action in ("dismissed", None):
                store.erasure.drop_request(rid)
                log.info("forget_declined", request=rid)
            continue
        try:
            report = erase.plan(store, Forget.of([words]))
        except BadWords:
            store.erasure.drop_request(rid)
            continue
        if report.total() <= AT_ONCE and not report.needs_all_matches:
            ran += _run(store, rid, words, log, now, confirmed=False)
            continue
        store.erasure.ask_to_confirm(
            rid,
            f'forget "{words}": would erase {report.total()} items; run'
            f' `wsd forget "{words}" --yes`, or resolve this action (completed runs it)',
            now(),
        )
        log.info("forget_waits_for_confirmation", request=rid, items=report.total())
    return ran


def _run(
    store: Store, rid: int, words: str, log: Any, now: Callable[[], float], *, confirmed: bool
) -> int:
    report = erase.forget(store, [words], by="conversation", all_matches=confirmed, now=now)
    store.erasure.drop_request(rid)
    log.info("forgotten", request=rid, by="conversation", counts=report.counts())
    return 1
