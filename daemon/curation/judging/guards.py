"""Guards in code, not in the prompt: what of a parsed reply may reach memory.

:func:`review` takes what a reply asks for and returns what may be committed, and a line for
everything refused (stored on the batch's ledger row and logged). Whatever the reply says:

* md files change only through :func:`wsd.daemon.curation.judging.edits.apply` (line limit, byte
  budget, at most a quarter of a file's lines lost per batch whatever the reply's form, no more of
  what it had a day ago than :mod:`wsd.daemon.curation.judging.erosion` allows, edits that no longer
  point at their line refused); a reply cut short (``max_tokens``) changes no file; a file that got
  both a full rewrite and edits in one reply gets neither (which was meant is unclear);
* at most ``caps.learnings_for(turns)`` learnings and ``caps.actions`` actions per batch;
* a learning that only restates a line the memory files already hold, or repeats another
  of the same reply, is not kept (repeats of stored learnings are refused by the store:
  one normalised key per learning, see :func:`wsd.daemon.store.records.learning_key`);
* what is refused is summarised (:func:`summarise`): one reply cannot bloat the ledger.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from wsd.daemon.curation.judging.edits import (
    LOSS_REASON,
    Edit,
    Limits,
    apply,
    edits_from_rewrite,
    plain,
)
from wsd.daemon.curation.judging.erosion import Erosion
from wsd.daemon.curation.judging.reply import ParsedReply
from wsd.daemon.memory.md import files_md
from wsd.daemon.memory.md.files import LINE_LIMITS
from wsd.daemon.runtime.config import DEFAULT_EROSION, DEFAULT_FILE_CHARS, DEFAULT_MAX_LOSS
from wsd.daemon.store import Learning, learning_key
from wsd.schema.layout import CURATED_FILES

#: Learnings per batch: this many per turn, and never fewer than the minimum.
LEARNINGS_PER_TURN = 3
MIN_LEARNINGS = 10
ACTIONS_PER_BATCH = 10
#: Refusals kept word for word on a batch's ledger row; the rest are counted by kind. Found by
#: an attack: each refused ``user.md -1..200`` was stored as 200 lines, and a 300 KB reply
#: made a 254.7 MB ledger row.
REFUSALS_KEPT = 40
REFUSAL_CHARS = 300
_NUMBER = re.compile(r"\d+")


@dataclass(frozen=True)
class Caps:
    """The guards' limits (the daemon's Config supplies them)."""

    max_loss: float = DEFAULT_MAX_LOSS
    #: Share of the lines a file had a day ago it may lose before removals wait (0: off).
    erosion: float = DEFAULT_EROSION
    file_chars: int = DEFAULT_FILE_CHARS
    learnings_per_turn: int = LEARNINGS_PER_TURN
    min_learnings: int = MIN_LEARNINGS
    actions: int = ACTIONS_PER_BATCH

    def learnings_for(self, turns: int) -> int:
        return max(self.min_learnings, self.learnings_per_turn * turns)

    def limits(self, name: str, erosion: Erosion | None = None) -> Limits:
        lines = files_md.NOTES_LINE_LIMIT if name == "files.md" else LINE_LIMITS[name]
        if erosion is None:
            return Limits(lines, self.file_chars, self.max_loss)
        return Limits(
            lines,
            self.file_chars,
            self.max_loss,
            kept=erosion.said,
            kept_allowance=erosion.allowance,
            erosion_reason=erosion.reason(),
        )


@dataclass
class Review:
    """What may be committed of one reply, and what was refused (one line each)."""

    learnings: list[Learning] = field(default_factory=list)
    actions: list[tuple[str, int]] = field(default_factory=list)
    closed_actions: list[int] = field(default_factory=list)
    md_updates: dict[str, str] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    #: Files eroding: their removals wait, to keep what they had a day ago.
    eroding: list[str] = field(default_factory=list)
    #: Refused md edits by kind: "loss" (over a batch's loss limit), "erosion" (waiting, to keep
    #: what the file had a day ago), "edit" (any other reason); for ``wsd metrics``.
    kinds: Counter[str] = field(default_factory=Counter)


def review(
    parsed: ParsedReply,
    *,
    base: Mapping[str, str],
    current: Mapping[str, str],
    turns: int,
    truncated: bool,
    caps: Caps,
    offered: set[int] | frozenset[int] = frozenset(),
    erosion: Mapping[str, Erosion | None] | None = None,
    forgets: Sequence[str] = (),
) -> Review:
    """Apply the guards; ``base`` is every memory file as the request showed it (files.md:
    its notes), ``current`` the curated files as they are now (hand edits adopted),
    ``offered`` the ids of the related learnings the request showed (the only ones a new
    learning may replace), ``erosion`` each file measured against its baseline, and
    ``forgets`` the words the person asked in this batch to forget (grounded): the reply's
    removals of lines holding them are the erasure's to make, which no loss guard holds
    back, so they are taken out here and count toward no loss; everything else in the
    batch is judged as ever."""
    out = Review(closed_actions=list(parsed.closed_actions))
    if forgets:
        parsed = _without_forgotten_edits(parsed, base, forgets)
    _files(out, parsed, base, current, truncated, caps, erosion or {})
    _learnings(out, parsed.learnings, base, caps.learnings_for(turns), offered)
    out.actions = parsed.actions[: caps.actions]
    if len(parsed.actions) > caps.actions:
        out.refused.append(f"{len(parsed.actions) - caps.actions} actions over the cap")
    if parsed.dropped:
        out.refused.append(f"{parsed.dropped} reply lines over the parser's caps, not read")
    out.refused = summarise(out.refused)
    return out


def summarise(refused: list[str], kept: int = REFUSALS_KEPT) -> list[str]:
    """The first ``kept`` refusals (each clipped), then one line counting the rest by kind
    (a refusal with its numbers taken out)."""
    out = [
        line if len(line) <= REFUSAL_CHARS else line[: REFUSAL_CHARS - 1] + "…"
        for line in refused[:kept]
    ]
    rest = refused[kept:]
    if rest:
        kinds = Counter(_NUMBER.sub("N", line.split(": ", 2)[-1])[:80] for line in rest)
        top = "; ".join(f"{n} × {kind}" for kind, n in kinds.most_common(5))
        out.append(f"{len(rest)} more refusals: {top}"[:REFUSAL_CHARS])
    return out


def _files(
    out: Review,
    parsed: ParsedReply,
    base: Mapping[str, str],
    current: Mapping[str, str],
    truncated: bool,
    caps: Caps,
    erosion: Mapping[str, Erosion | None],
) -> None:
    for name in CURATED_FILES:
        edits, rewrite = parsed.edits.get(name, []), parsed.rewrites.get(name)
        if not edits and rewrite is None:
            continue
        if truncated:
            out.refused.append(f"{name}: every change (the reply was cut short, max_tokens)")
            continue
        if edits and rewrite is not None:
            out.refused.append(f"{name}: both a full rewrite and line edits; neither applied")
            continue
        before = _lines(base.get(name, ""))
        if rewrite is not None:
            if not any(line.strip() for line in rewrite):
                out.refused.append(f"{name}: an empty rewrite")
                continue
            edits = edits_from_rewrite(before, rewrite)
        now = _lines(current.get(name, ""))
        edits = _new_lines_only(out, name, now, edits)
        limits = caps.limits(name, erosion.get(name))
        result = apply(before, now, edits, limits)
        out.refused += _grouped(name, result.refused)
        for _edit, why in result.refused:
            loss = why.startswith(LOSS_REASON)
            out.kinds[
                "erosion" if why == limits.erosion_reason else "loss" if loss else "edit"
            ] += 1
        if result.eroding:
            out.eroding.append(name)
        if result.changed and result.lines != now:
            out.md_updates[name] = "\n".join(result.lines) + "\n" if result.lines else ""


def _without_forgotten_edits(
    parsed: ParsedReply, base: Mapping[str, str], forgets: Sequence[str]
) -> ParsedReply:
    from wsd.daemon.memory.forget.words import BadWords, Forget

    try:
        match = Forget.of(forgets)
    except BadWords:
        return parsed
    edits = {}
    for name, items in parsed.edits.items():
        lines = _lines(base.get(name, ""))
        doomed = {i + 1 for i, line in enumerate(lines) if match.holds(line)}
        edits[name] = [e for e in items if not (e.op in ("delete", "replace") and e.line in doomed)]
    return replace(parsed, edits=edits)


def _grouped(name: str, refused: list[tuple[Edit, str]]) -> list[str]:
    """One line per reason an edit was refused (numbers aside), with how many it refused
    and the first of them: a careless reply's 90 refusals are one line, not 90."""
    groups: dict[str, list[tuple[Edit, str]]] = {}
    for edit, why in refused:
        groups.setdefault(_NUMBER.sub("N", why), []).append((edit, why))
    out = []
    for items in groups.values():
        edit, why = items[0]
        if len(items) == 1:
            out.append(f"{name}: {edit.describe()}: {why}")
        else:
            out.append(f"{name}: {len(items)} edits: {why} (the first: {edit.describe()})")
    return out


def _new_lines_only(out: Review, name: str, lines: list[str], edits: list[Edit]) -> list[Edit]:
    """The edits without adds of a line the file already holds (case, punctuation and
    markup aside), or that an earlier add of the reply already brings."""
    have = {plain(line) for line in lines if plain(line)}
    kept = []
    for edit in edits:
        said = plain(edit.text)
        if edit.op == "add" and said and said in have:
            out.refused.append(f"{name}: {edit.describe()}: the file already says it")
            continue
        if edit.op == "add" and said:
            have.add(said)
        kept.append(edit)
    return kept


def _lines(text: str) -> list[str]:
    return text.rstrip("\n").split("\n") if text.strip() else []


def _learnings(
    out: Review,
    learnings: list[Learning],
    base: Mapping[str, str],
    cap: int,
    offered: set[int] | frozenset[int],
) -> None:
    known = _known(tuple(base.items()))
    seen: set[str] = set()
    for item in learnings:
        key = learning_key(item.content)
        restated = _restates(plain(item.content), known)
        if key in seen:
            out.refused.append(f"learning repeated in the reply: {item.content[:60]}")
        elif restated is not None:
            name, line = restated
            out.refused.append(f"learning restates {name} line {line}: {item.content[:60]}")
        elif len(out.learnings) >= cap:
            out.refused.append(f"learning over the cap of {cap}: {item.content[:60]}")
        elif item.replaces is not None and item.replaces not in offered:
            out.refused.append(f"replaces #{item.replaces}, which was not offered: kept as new")
            out.learnings.append(replace(item, replaces=None))
        else:
            out.learnings.append(item)
        seen.add(key)


@dataclass(frozen=True)
class _Known:
    """What the memory files' lines say (:func:`plain`), each with its (file, line), and
    the same padded with a space each side (what a learning is looked for in)."""

    lines: dict[str, tuple[str, int]]
    padded: tuple[tuple[str, tuple[str, int]], ...]


@functools.lru_cache(maxsize=1)
def _known(base: tuple[tuple[str, str], ...]) -> _Known:
    """The lines of ``base`` as :class:`_Known`, kept for the next batch: in a backlog the
    files seldom change between batches, and reading every line of them again was a tenth
    of a drained pass (the profile of issue 36). One entry: the files as they are, never an
    older copy of them (a line the person has had forgotten is not kept here)."""
    lines = {
        plain(line): (name, i + 1)
        for name, text in base
        for i, line in enumerate(_lines(text))
        if plain(line)
    }
    return _Known(lines, tuple((f" {line} ", where) for line, where in lines.items()))


def _restates(learning: str, known: _Known) -> tuple[str, int] | None:
    """The (file, line) whose text already says all the learning says, if any."""
    if not learning:
        return None
    if learning in known.lines:
        return known.lines[learning]
    padded = f" {learning} "
    for line, where in known.padded:
        if padded in line:
            return where
    return None
