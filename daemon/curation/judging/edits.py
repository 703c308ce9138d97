"""Line-addressed edits of a curated md file, and the guards every change of one passes.

The curator sees each curated file with its lines numbered and answers with edits that name
those numbers: add a line (after line N; 0 is the top, ``None`` the end), replace line N,
delete line N. A full-file reply (the older ``*_MD_UPDATE`` blocks) is first turned into the
same edits (:func:`edits_from_rewrite`), so both pass the same guards in :func:`apply`:

* **Addressed by content, not only by number.** The numbers refer to the file as it was sent
  (the *base*). If the file changed since (a person edited it while the call was in flight),
  each base line is looked up in the current file through the lines both share (difflib's
  matching blocks); an edit whose line is no longer there is refused, never applied to
  whatever line now has that number.
* **Bounded loss, judged by effect.** A line of the current file is *lost* when no line of the
  result says it any more (case, markup and punctuation aside): deleted, replaced by other words, or
  rewritten away in a full-file reply alike (a line moved or repeated elsewhere is not lost). One
  batch may lose at most ``floor(lines * max_loss)`` of the file's lines, and at least one of a
  small file; with :attr:`Limits.kept` set (the lines the file had a day ago, see
  :mod:`wsd.daemon.curation.judging.erosion`), at most :attr:`Limits.kept_allowance` of those. The
  removing edits (deletions and replacements) that go past either are refused, last first. Found by
  an attack: a reply replacing every line (``user.md ~1: .`` ... ``~52: .``) left a file of dots
  when only deletions were counted.
* **Bounded size.** The result never exceeds the file's line limit or byte budget, and no
  line is longer than :data:`MAX_LINE_CHARS`: the adds (then replacements) that would pass
  them are refused, last first.

Everything refused is returned with its reason, for the batch's ledger row and the log.
Pure functions over lists of lines: the property test throws random edits at them.
"""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from wsd.daemon.runtime.config import DEFAULT_MAX_LOSS

#: A line longer than this is refused (a learning belongs in memory.db, not in one md line).
MAX_LINE_CHARS = 400
#: How a removal refused for a batch's loss limit is told (``wsd metrics`` counts them).
LOSS_REASON = "over the loss limit"

Op = Literal["add", "replace", "delete"]

#: How a restated line may start without adding anything ("The user prefers tabs" restates
#: "- Prefers tabs").
_SUBJECT = re.compile(r"^(?:the )?(?:user|person)(?:'s)? ")
_MARKUP = re.compile(r"[*_`#>|]+|^\s*(?:[-+]\s+|\d+[.)]\s+)")
_PUNCT = re.compile(r"[^\w\s]+")


def plain(text: str) -> str:
    """What a line says: lower case, no markdown, no punctuation, single spaces, no leading
    "the user" ("" for a line that says nothing: blank, a rule, bare markup)."""
    text = _MARKUP.sub(" ", text.lower())
    text = " ".join(_PUNCT.sub(" ", text).split())
    return _SUBJECT.sub("", text)


@dataclass(frozen=True)
class Edit:
    """One edit; ``line`` is 1-based in the base file (for ``add``: after it, 0 = top,
    None = end)."""

    op: Op
    line: int | None
    text: str = ""
    #: The turns the curator cited for it (``[turn N]``), which grounding judges it against.
    cited: tuple[int, ...] = ()

    def describe(self) -> str:
        where = "end" if self.line is None else str(self.line)
        return f"{self.op} {where}" + (f": {self.text[:60]}" if self.text else "")


@dataclass(frozen=True)
class Limits:
    """What a file may hold after a batch, and what it may lose.

    ``kept``: what the lines the file had a day ago say (:func:`plain`), when erosion is
    watched; then at most ``kept_allowance`` lines saying one of them may be lost, and a
    removal refused for it gives ``erosion_reason``.
    """

    lines: int
    chars: int
    max_loss: float = DEFAULT_MAX_LOSS
    kept: frozenset[str] | None = None
    kept_allowance: int = 0
    erosion_reason: str = "the file lost too much of what it had a day ago"

    def allowance(self, lines: int) -> int:
        """Lines one batch may lose of a file of ``lines`` lines that say something: a
        quarter (``max_loss``), rounded down, and at least one (0 when ``max_loss`` is 0)."""
        if self.max_loss <= 0 or lines <= 0:
            return 0
        return max(1, math.floor(lines * self.max_loss))


@dataclass
class Outcome:
    """The file after the edits that passed, and the ones refused (with why)."""

    lines: list[str]
    applied: int = 0
    #: Lines of the current file no line of the result says any more.
    lost: int = 0
    refused: list[tuple[Edit, str]] = field(default_factory=list)
    #: True when a removal was refused to keep what the file had a day ago: the file is
    #: eroding, and its removals wait (erosion).
    eroding: bool = False

    @property
    def changed(self) -> bool:
        return self.applied > 0


def edits_from_rewrite(base: Sequence[str], new: Sequence[str]) -> list[Edit]:
    """The edits that turn ``base`` into ``new`` (a full-file reply), in base order.

    Where the rewrite swaps a block of lines for another, lines are paired as replacements
    first; the rest are deletions (base longer) or additions (new longer).
    """
    edits: list[Edit] = []
    matcher = difflib.SequenceMatcher(None, list(base), list(new), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        paired = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        edits += [Edit("replace", i1 + k + 1, new[j1 + k]) for k in range(paired)]
        edits += [Edit("delete", i + 1) for i in range(i1 + paired, i2)]
        after = i1 + paired  # adds go after the last paired (or before the first deleted) line
        edits += [Edit("add", after, new[j]) for j in range(j1 + paired, j2)]
    return edits


def apply(
    base: Sequence[str],
    current: Sequence[str],
    edits: Sequence[Edit],
    limits: Limits,
    *,
    near: bool = False,
) -> Outcome:
    """Apply ``edits`` (numbered against ``base``) to ``current``, within the guards. With
    ``near``, an add whose line is gone lands after the nearest earlier line still there, or
    at the end if it was added at the end (a person's added line is replayed, not lost);
    otherwise it is refused."""
    where = _line_map(base, current)
    refused: list[tuple[Edit, str]] = []
    replaced: dict[int, tuple[Edit, str]] = {}
    deleted: dict[int, Edit] = {}
    removals: list[int] = []  # current indices replaced or deleted, in reply order
    added: list[tuple[int, Edit]] = []  # (current index it goes after, -1 = top)
    for edit in edits:
        if edit.op != "delete" and len(edit.text) > MAX_LINE_CHARS:
            refused.append((edit, f"line longer than {MAX_LINE_CHARS} characters"))
            continue
        if edit.op == "add" and edit.line is None:
            added.append((len(current) - 1, edit))
            continue
        if edit.op == "add" and edit.line == 0:
            added.append((-1, edit))
            continue
        index = where.get((edit.line or 0) - 1)
        if index is None and near and edit.op == "add" and edit.line is not None:
            if edit.line == len(base):  # added at the end: stays at the end
                index = len(current) - 1
            else:
                index = next((where[i] for i in range(edit.line - 2, -1, -1) if i in where), -1)
        if index is None:
            refused.append((edit, _missing(edit, base)))
        elif edit.op == "add":
            added.append((index, edit))
        elif index in deleted or index in replaced:
            refused.append((edit, f"line {edit.line} already edited by this reply"))
        elif edit.op == "replace":
            replaced[index] = (edit, edit.text)
            removals.append(index)
        else:
            deleted[index] = edit
            removals.append(index)
    eroding = False
    while True:  # refusing an add to fit can un-move a line (a loss), and refusing a removal
        # can take the file over a limit: settle both (each round refuses something, or ends)
        before = len(refused)
        eroding |= _hold_loss(current, replaced, deleted, removals, added, refused, limits)
        _fit(current, replaced, deleted, added, refused, limits)
        if len(refused) == before:
            break
    lines = _compose(current, replaced, deleted, added)
    applied = len(replaced) + len(deleted) + len(added)
    return Outcome(lines, applied, lost_lines(current, lines), refused, eroding)


def lost_lines(before: Sequence[str], after: Sequence[str]) -> int:
    """How many lines of ``before`` no line of ``after`` says any more (:func:`plain`)."""
    said = {plain(line) for line in after}
    return sum(1 for line in before if (p := plain(line)) and p not in said)


def _hold_loss(
    current: Sequence[str],
    replaced: dict[int, tuple[Edit, str]],
    deleted: dict[int, Edit],
    removals: Sequence[int],
    added: list[tuple[int, Edit]],
    refused: list[tuple[Edit, str]],
    limits: Limits,
) -> bool:
    """Refuse removals (deletions, replacements), last first, until the result loses no more
    than the batch's allowance, nor more of what the file had a day ago than is left of the
    day's; True if a removal was refused for the day's (the file is eroding).

    Loss is counted on what the lines say, so it is the same in every reply form: a line
    replaced by other words is lost like a deleted one, a line moved elsewhere is not.
    """
    says = [plain(line) for line in current]
    count = Counter(p for p in says if p)  # lines of the current file saying each thing
    kept = Counter(p for i, p in enumerate(says) if p and i not in deleted and i not in replaced)
    kept.update(plain(text) for _e, text in replaced.values())
    kept.update(plain(e.text) for _i, e in added)
    old = limits.kept if limits.kept is not None else frozenset()
    lost = sum(n for p, n in count.items() if not kept[p])
    lost_old = sum(n for p, n in count.items() if not kept[p] and p in old)
    lines = sum(count.values())
    allowance = limits.allowance(lines)
    day = limits.kept_allowance if limits.kept is not None else lines

    def keep(p: str, step: int) -> None:
        """``kept[p] += step``, following what that does to the losses."""
        nonlocal lost, lost_old
        was = kept[p]
        kept[p] += step
        if count[p] and (was == 0) != (kept[p] == 0):
            sign = -1 if was == 0 else 1
            lost += sign * count[p]
            lost_old += sign * count[p] if p in old else 0

    eroding = False
    for index in reversed(removals):
        if lost <= allowance and lost_old <= day:
            break
        if index not in replaced and index not in deleted:
            continue  # refused already (to fit)
        p = says[index]
        if not p or kept[p] or (lost <= allowance and p not in old):
            continue  # removing it loses nothing, or nothing of what counts now
        for_day = lost <= allowance
        if index in replaced:
            edit, text = replaced.pop(index)
            keep(plain(text), -1)
        else:
            edit = deleted.pop(index)
        keep(p, 1)
        eroding |= for_day
        why = (
            limits.erosion_reason
            if for_day
            else f"{LOSS_REASON} ({allowance} of {lines} lines a batch)"
        )
        refused.append((edit, why))
    return eroding


def _missing(edit: Edit, base: Sequence[str]) -> str:
    if edit.line is None or not 1 <= edit.line <= len(base):
        return f"no line {edit.line} in the file as sent ({len(base)} lines)"
    return f"line {edit.line} was changed since the request (edited by hand?)"


def _line_map(base: Sequence[str], current: Sequence[str]) -> dict[int, int]:
    """base index -> current index, for the lines the two still share."""
    if list(base) == list(current):
        return {i: i for i in range(len(base))}
    matcher = difflib.SequenceMatcher(None, list(base), list(current), autojunk=False)
    out: dict[int, int] = {}
    for block in matcher.get_matching_blocks():
        out.update({block.a + k: block.b + k for k in range(block.size)})
    return out


def _compose(
    current: Sequence[str],
    replaced: dict[int, tuple[Edit, str]],
    deleted: dict[int, Edit],
    added: list[tuple[int, Edit]],
) -> list[str]:
    after: dict[int, list[str]] = {}
    for index, edit in added:  # in reply order, so several adds at one place keep theirs
        after.setdefault(index, []).append(edit.text)
    out = list(after.get(-1, []))
    for i, line in enumerate(current):
        if i not in deleted:
            out.append(replaced[i][1] if i in replaced else line)
        out += after.get(i, [])
    return out


def _fit(
    current: Sequence[str],
    replaced: dict[int, tuple[Edit, str]],
    deleted: dict[int, Edit],
    added: list[tuple[int, Edit]],
    refused: list[tuple[Edit, str]],
    limits: Limits,
) -> None:
    """Refuse adds, then replacements, last first, until the result fits its limits.

    A file already over its limits (a person wrote it so) is not made to fit by force: only
    what this reply would add beyond them is refused.
    """
    base_chars = sum(len(line) + 1 for line in current)
    n = len(current) - len(deleted) + len(added)
    chars = base_chars - sum(len(current[i]) + 1 for i in deleted)
    chars += sum(len(text) - len(current[i]) for i, (_e, text) in replaced.items())
    chars += sum(len(e.text) + 1 for _i, e in added)
    while added and n > max(limits.lines, len(current) - len(deleted)):
        edit = added.pop()[1]
        refused.append((edit, f"over the {limits.lines}-line limit"))
        n, chars = n - 1, chars - len(edit.text) - 1
    while chars > max(limits.chars, base_chars) and (added or replaced):
        if added:
            edit = added.pop()[1]
            chars -= len(edit.text) + 1
        else:
            index = max(replaced, key=lambda i: replaced[i][0].line or 0)
            edit, text = replaced.pop(index)
            chars -= len(text) - len(current[index])
        refused.append((edit, f"over the {limits.chars}-character budget"))
