"""The boot context's section on the turns not yet curated (:mod:`wsd.daemon.memory.boot`).

A result of the economy lane may land an hour after its session ended; a session that starts
meanwhile must still know what happened. So the boot context carries, within a small budget
of its own, the person's requests in the turns not yet curated, clipped and dated, newest
first (the budget cuts the oldest), and counts the ones it does not show:

    ## Not yet curated (3 turns since 2027-01-15 08:00 UTC; the rest of this memory …)
    The person's requests in them, newest first:
    - 2027-01-15 09:12  Send the March invoices to Paul and copy Anna
    - 2027-01-15 08:00  Build the expense table for 2026-04 by supplier and save it as CSV…
    - … 1 turn with no request (tool activity only)

The store reads the turns (:meth:`~wsd.daemon.store.turns.Turns.uncurated`); the boot
context neutralises their text before it comes here, as it does all stored text it shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from wsd.daemon.store import Uncurated

#: The section's own budget, small beside the whole boot context's 48,000 characters (about
#: 500 tokens). A request is clipped to REQUEST_MAX_CHARS (its first sentence or two: the
#: ask), so a line costs at most 20 + 160 characters; the bench's typical prompts run 74-300
#: characters (median 188), so a backlog of them fills 11 lines, and short ones ("yes, send
#: it", 40 characters) reach the 20-line cap at about 1,200 characters.
MAX_CHARS = 2_000
MAX_LINES = 20
REQUEST_MAX_CHARS = 160
#: Of each request, this much is read: all capture keeps of a field (2,000 characters), so
#: invisible characters neutralised before the clip cannot leave nothing to show.
READ_CHARS = 2_000


@dataclass(frozen=True)
class Digest:
    """The section: how many turns since when, and the lines that show their requests
    (newest first)."""

    total: int
    since: float | None
    lines: list[str]
    #: How many requests there were to show, and whether they are every one among the turns
    #: (then the turns beyond them had no words of the person: tool activity only).
    requests: int
    complete: bool

    def render(self) -> str:
        """The section as shown; the turns without a line are counted on the last one."""
        head = (
            f"## Not yet curated ({_count(self.total, 'turn')} since {_minute(self.since)} UTC;"
            " the rest of this memory does not reflect them yet)"
        )
        body = ["The person's requests in them, newest first:", *self.lines] if self.lines else []
        if self.total > len(self.lines):
            if self.complete:
                older = self.requests - len(self.lines)
                quiet = self.total - self.requests
                said = [f"{_count(older, 'older request')} not shown"] if older > 0 else []
                if quiet > 0:
                    said.append(f"{_count(quiet, 'turn')} with no request (tool activity only)")
                body.append("- … " + "; ".join(said))
            else:
                body.append(f"- … {_count(self.total - len(self.lines), 'more turn')} not shown")
        return "\n".join([head, *body])


def digest(found: Uncurated) -> Digest | None:
    """The section for ``found`` (its requests already neutralised), within MAX_CHARS and
    MAX_LINES; None when every turn is curated."""
    if not found.total:
        return None
    said = [(ts, flat) for ts, words in found.requests if (flat := " ".join(words.split()))]
    lines: list[str] = []
    used = 0
    for ts, words in said[:MAX_LINES]:
        if len(words) > REQUEST_MAX_CHARS:
            words = words[: REQUEST_MAX_CHARS - 1] + "…"
        line = f"- {_minute(ts)}  {words}"
        used += len(line) + 1
        if used > MAX_CHARS:
            break
        lines.append(line)
    return Digest(found.total, found.oldest_ts, lines, len(said), len(found.requests) < MAX_LINES)


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def _minute(ts: float | None) -> str:
    """``YYYY-MM-DD HH:MM`` (UTC) of a timestamp, or ``?``."""
    try:
        return datetime.fromtimestamp(float(str(ts)), UTC).strftime("%Y-%m-%d %H:%M")
    except (ValueError, OverflowError, OSError):
        return "?"
