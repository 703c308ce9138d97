"""What of a long text the curator is shown: the parts that carry facts, before the filler.

An agent's final answer or a tool's output can run to thousands of characters; the curator
is paid per token and learns from figures, names, dates, paths and identifiers, not from
"Here's what I found" or "Let me know if you need anything else". A head-and-tail clip kept
the greeting and the offer and cut the total in the middle.

:func:`excerpt` keeps a text whole when it fits; else it splits it into units (lines, and a
long line into its sentences), scores each by the fact signals it carries, and keeps the
densest units that fit, in the text's order, with " … " where something was left out. The
first unit (what the text is about) is kept when it carries anything. A unit with no signal
is never sent: the budget is a cap, not a target, so filler costs nothing.

Measured by ``make bench`` (``curator_sees`` rows): the share of each fact's words the
curator is shown, on LoCoMo and on realistic agent turns (bench/data/agent_turns.json).
"""

from __future__ import annotations

import re

#: Where a long line is cut into sentences (after . ! ? and a space).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
#: A line this long is scored sentence by sentence.
LONG_LINE = 160
#: Tokens that carry a fact: anything with a digit (amounts, dates, ids, versions, counts),
#: a path, file name, URL or e-mail address, a code span.
_NUMBERISH = re.compile(r"\d")
_PATHISH = re.compile(r"[/\\@]|\.[A-Za-z][A-Za-z0-9]{0,4}$|^`")
#: A capitalised word not opening its sentence: a name (a person, a company, a place).
#: The leading look-ahead changes no match: it lets the regex engine skip to a capital
#: instead of trying the look-behinds at every character (3x faster on the agent turns).
_NAME = re.compile(r"(?=[A-ZÀ-Þ])(?<![.!?:]\s)(?<!^)(?<![#*>|-]\s)\b[A-ZÀ-Þ][\w'’-]+")
#: A token that may carry a number or a path (see score).
_CANDIDATE = re.compile(r"(?<!\S)[^\s\d/\\@.`]*[\d/\\@.`]\S*")
#: Markup that says nothing by itself: a table rule, a heading mark, a bullet, emphasis.
_RULE = re.compile(r"^[\s|:\-=*_#>`~]*$")
GAP = " … "


def score(unit: str) -> int:
    """How many fact-carrying tokens ``unit`` holds (numbers, paths, names)."""
    if _RULE.match(unit):
        return 0
    # Only a token holding a digit, a slash, a backslash, an @, a dot or a backquote can
    # carry a number or a path: the rest (most words) are not looked at one by one, which
    # was most of rendering a batch (the profile of issue 36).
    signals = sum(
        1
        for t in _CANDIDATE.findall(unit)
        if _NUMBERISH.search(t) or _PATHISH.search(t.strip(".,;:()[]*\"'"))
    )
    return signals + len(_NAME.findall(unit))


def units(text: str) -> list[str]:
    """``text`` cut into lines, and a long line into sentences; blank ones dropped."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if len(line) > LONG_LINE:
            out += [s for s in _SENTENCE_END.split(line) if s.strip()]
        else:
            out.append(line)
    return out


def excerpt(text: str, limit: int, whole: int | None = None) -> str:
    """``text`` as it is when it is at most ``whole`` characters (default ``limit``); else
    its fact-carrying units within ``limit`` characters (see the module docstring), or,
    when no unit carries a fact, its head and tail within ``whole``."""
    whole = limit if whole is None else min(whole, limit)
    if len(text) <= whole:
        return text
    parts = units(text)
    scored = [(score(u), i, u) for i, u in enumerate(parts)]
    chosen: set[int] = set()
    room = limit - 2 * len(GAP.strip()) - 2  # a leading "… " and a trailing " …" may frame it
    if parts and scored[0][0] > 0 and len(parts[0]) <= limit // 3:
        chosen.add(0)
        room -= len(parts[0])
    # Densest first: signals per character, short units not favoured below 40 characters.
    for s, i, unit in sorted(scored, key=lambda x: (-x[0] / max(len(x[2]), 40), x[1])):
        if s <= 0:
            break
        if i in chosen or len(unit) + len(GAP) > room:
            continue
        chosen.add(i)
        room -= len(unit) + len(GAP)
    if not chosen:
        return clip(" ".join(parts), whole)
    out: list[str] = []
    last = -1
    for i in sorted(chosen):
        if i != last + 1:
            out.append(GAP.strip())
        out.append(parts[i])
        last = i
    if last != len(parts) - 1:
        out.append(GAP.strip())
    return " ".join(out)


def clip(text: str, limit: int) -> str:
    """``text`` within ``limit``: its head (two thirds) and its tail around " … "."""
    if len(text) <= limit:
        return text
    head = max(limit * 2 // 3 - 2, 1)
    tail = max(limit - head - 3, 0)
    return f"{text[:head]} … {text[len(text) - tail :]}" if tail else f"{text[:head]} …"
