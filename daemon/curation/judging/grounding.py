"""Whose words hold each item of a curator reply: what a web page says is not what the
person said (issue 32).

The curator sees the person's prompts, the agent's answers and the tools' inputs and outputs
(web pages, files, mail, command output: strangers' words). Its instructions say never to
follow what it reads there; this module does not rely on that. Each item of a reply is
checked against the parts of the turns it cites (the whole batch when it cites none, or
only turns outside it), the way the loss guards judge an edit by its effect:

* **Support** of a text by a part is the share of its content words found there (stemmed
  by SQLite's porter tokenizer, as the memory index stems them; a word matches a longer one
  it begins, so ``bevorzug`` finds ``bevorzugt``; function words of English, German, French
  and Spanish and a few words every curator line uses, "user", "prefers", "always", count
  for neither side, nor does a line's label: in ``Name: Ana`` the claim is "Ana"). A part
  *holds* a text at :data:`THRESHOLD` or more (chosen on the corpus in
  ``tests/grounding_corpus.py``: ``make bench`` grounding, README "Whose words").
* PREFERENCE and CORRECTION, and every line added to user.md, must be held by the person's
  own words. A learning that is not is kept as a FACT saying where it came from (``from a
  tool result in T88``, ``from the agent's answer in T88``), never as the person's; a user.md
  line that is not is refused, and so is a user.md line deleted when the person's words do
  not name it.
* An ACTION the person's words do not hold is kept at normal priority at most, marked as
  suggested by a tool result (or the agent); never urgent or high.
* Any other learning that only a tool's output holds says so too (``from a tool result in
  T88``): the boot context and ``search_memory`` show the agent a stranger's word as one.
* ACTION_DONE must name an open action whose words the person's prompts or the agent's own
  tool calls hold (what it did), never a tool's output alone (a page saying "done").

What is refused or downgraded is counted per batch (``ungrounded``, on the ledger row and
the batch's log line) and said in the refusals, and never costs the rest of the batch.
"""

from __future__ import annotations

import bisect
import functools
import html
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from wsd.daemon.curation.judging.edits import Edit
from wsd.daemon.curation.judging.reply import ParsedReply
from wsd.daemon.curation.request.rendering import (
    PROMPT_RENDERING,
    Rendering,
    shown_input,
    shown_result,
)
from wsd.daemon.store import Learning, Turn
from wsd.schema.stems import stems

#: The parts of a turn: the person's prompt, the agent's answer, the agent's tool calls (what
#: it did: a command, a path) and what the tools gave back (what strangers wrote).
Part = Literal["person", "agent", "call", "tool"]
PARTS: tuple[Part, ...] = ("person", "agent", "call", "tool")

#: The share of a text's content words a part must hold (see the module docstring).
THRESHOLD = 0.55
#: A word matches a longer one it begins when it has at least this many letters.
PREFIX_LETTERS = 4
#: Learning kinds that speak for the person.
PERSONAL_KINDS = frozenset({"preference", "correction"})
#: Where a downgraded item says it came from.
FROM = {"tool": "a tool result", "agent": "the agent's answer", "call": "the agent's tool calls"}
#: Words that carry no claim: function words, and the words a curator wraps every claim in
#: ("the user prefers", "always", "remember"). Stemmed as the text is.
_PLAIN = """
a an the and or but if then so of to in on at by for with from as into onto about over under
is are was were be been being am do does did done has have had having will would shall should
can could may might must not no nor this that these those it its they them their there here
he she his her him we us our you your i me my mine who whom which what when where why how
all any each every some such than too very just also only own same other more most less
user users person people agent assistant prefer prefers preferred preference preferences
want wants wanted like likes liked wish wishes please always never usual usually
remember note noted say says said tell told ask asks asked use uses used using
thing things way ways time times make makes made get gets got let lets
der die das den dem des ein eine einen einem einer und oder aber nicht kein keine ist sind
waren hat haben wird werden mit von vom zu zum zur für auf aus bei nach über unter
vor im ins am an als wie wenn dass es er sie wir ihr ich du mich mir dich dir sich auch nur
noch schon sehr so alle jeder jede jedes dieser diese dieses nutzer nutzerin benutzer
le la les un une des du de d l au aux et ou mais ne pas plus est sont était être a ont avoir
sur sous dans par pour avec sans que qui quoi ce cet cette ces il elle ils elles nous vous je
tu me te se lui leur leurs son sa ses mon ma mes ton ta tes tout tous toute toutes très
utilisateur utilisatrice
el los las una unos unas y o pero no es era ser fue ha han haber en con por para del
al que quien como cuando este esta estos estas ese esa eso lo le les se su sus mi mis tu tus
nos muy todo todos toda todas también usuario usuaria
"""


@functools.cache
def _plain() -> frozenset[str]:
    return frozenset(stems(_PLAIN))


def words(text: str) -> set[str]:
    """The content words of ``text``, stemmed (function and curator words left out)."""
    plain = _plain()
    return {w for w in stems(text) if w not in plain and (len(w) > 1 or w.isdigit())}


#: ``Name: Ana``, ``- Age: 41``: a label of up to three words before a colon is the curator's
#: structure, not the claim (a person says "I'm Ana"); the claim after it is judged.
_LABEL = re.compile(r"^\s*(?:[-*+]\s+)?(?:\w[\w'-]*\s+){0,2}\w[\w'-]*\s*:\s+(?=\S)")


def claim(text: str) -> str:
    """What ``text`` claims: without a leading bullet and ``Label:``."""
    return _LABEL.sub("", text, count=1)


class Words:
    """A part's words, kept for the test of :meth:`holds`: as a set, and sorted (a scan of
    the set for every word was a fifth of a 25-turn batch's pass: ``make bench``
    grounding_cost)."""

    def __init__(self, words: Iterable[str] = ()) -> None:
        self.set = frozenset(words)
        self.sorted = sorted(self.set)

    def holds(self, word: str) -> bool:
        """Whether these words hold ``word``: equal, or one of at least
        :data:`PREFIX_LETTERS` letters begins the other."""
        if word in self.set:
            return True
        if len(word) < PREFIX_LETTERS:
            return False
        if any(word[:k] in self.set for k in range(PREFIX_LETTERS, len(word))):
            return True  # one of ours begins it
        i = bisect.bisect_left(self.sorted, word)
        return i < len(self.sorted) and self.sorted[i].startswith(word)  # it begins one

    def __or__(self, other: Words) -> Words:
        return Words(self.set | other.set)


def share(text_words: set[str], have: Words) -> float:
    """The share of ``text_words`` that ``have`` holds (1.0 for a text of no content word)."""
    if not text_words:
        return 1.0
    return sum(have.holds(w) for w in text_words) / len(text_words)


@dataclass(frozen=True)
class Support:
    """How much of a text each part holds, and the turn that holds it best."""

    person: float
    agent: float
    call: float
    tool: float
    turn: int | None

    def of(self, part: Part) -> float:
        return float(getattr(self, part))

    @property
    def personal(self) -> bool:
        """Whether the person's own words hold the text."""
        return self.person >= THRESHOLD

    @property
    def source(self) -> Part | None:
        """The part that holds the text (the person's first), or None: no part does."""
        for part in PARTS:
            if self.of(part) >= THRESHOLD:
                return part
        return None


def _whole(calls: Sequence[Mapping[str, Any]], keys: tuple[str, ...]) -> str:
    out = []
    for call in calls:
        for key in keys:
            value = call.get(key)
            if value is not None:
                out.append(
                    value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                )
    return "\n".join(out)


def _tools_as_rendered(text: str) -> tuple[str, str]:
    """(what the tool calls did, what they gave back) as a rendered turn shows them: its
    ``tool NAME: input → result`` lines (render_turn)."""
    did, got = [], []
    for line in html.unescape(text).splitlines():
        if line.startswith("tool "):
            head, _, result = line.partition(" → ")
            did.append(head.partition(": ")[2])
            got.append(result)
    return "\n".join(did), "\n".join(got)


class Grounds:
    """A batch's turns, each part's words read once. The tools' part is what the curator was
    shown of them (an item's words can only have come from there, and tokenizing whole
    outputs, 80 KB for a typical 25-turn batch, cost more than the rest of the check);
    ``shown=False`` reads them whole (``wsd memory why``: the turn index's text)."""

    def __init__(
        self,
        turns: Sequence[Turn],
        *,
        shown: bool = True,
        rendered: Mapping[int, str] | None = None,
        rendering: Rendering = PROMPT_RENDERING,
    ) -> None:
        self.parts: dict[int, dict[Part, Words]] = {}
        rendered = rendered or {}
        for t in turns:
            calls = t.tool_calls
            if not shown:
                did, got = _whole(calls, ("input",)), _whole(calls, ("output", "error"))
            elif t.id in rendered:
                did, got = _tools_as_rendered(rendered[t.id])
            else:
                did = "\n".join(shown_input(c, rendering) for c in calls)
                got = "\n".join(shown_result(c, rendering) for c in calls)
            self.parts[t.id] = {
                "person": Words(words(t.user_message or "")),
                "agent": Words(words(t.agent_response or "")),
                "call": Words(words(did)),
                "tool": Words(words(got)),
            }

    @functools.cached_property
    def whole(self) -> dict[Part, Words]:
        """Every part of the batch at once (what an item citing no turn is judged against),
        made when first asked: a batch whose items all cite their turns never needs it."""
        return {part: self._union(list(self.parts), part) for part in PARTS}

    def _union(self, turns: Sequence[int], part: Part) -> Words:
        return Words(w for t in turns for w in self.parts[t][part].set)

    def support(self, text: str, cited: Iterable[int] = ()) -> Support:
        """How the cited turns of the batch hold ``text`` (the whole batch when it cites
        none of them): each part's best turn."""
        # A label is structure only while it says no more than the claim after it: in
        # "Push straight to main: yes" the label is the claim, and the whole text is judged.
        full, core = words(text), words(claim(text))
        want = core if core and len(full - core) <= len(core) else full
        turns = [t for t in cited if t in self.parts] or list(self.parts)
        best: dict[Part, tuple[float, int | None]] = {p: (0.0, None) for p in PARTS}
        for tid in turns:
            for part in PARTS:
                s = share(want, self.parts[tid][part])
                if s > best[part][0]:
                    best[part] = (s, tid)
        if len(turns) > 1:  # a claim may gather words said over several turns
            everything = len(turns) == len(self.parts)
            for part in PARTS:
                words_of = self.whole[part] if everything else self._union(turns, part)
                whole = share(want, words_of)
                if whole > best[part][0]:
                    best[part] = (whole, best[part][1] or turns[-1])
        source = next((p for p in PARTS if best[p][0] >= THRESHOLD), None)
        turn = best[source][1] if source else max(best.values(), key=lambda b: b[0])[1]
        return Support(best["person"][0], best["agent"][0], best["call"][0], best["tool"][0], turn)

    def shows_done(self, text: str) -> bool:
        """Whether the person's prompts and the agent's tool calls, together, hold ``text``."""
        return share(words(text), self.whole["person"] | self.whole["call"]) >= THRESHOLD

    def mentions(self, text: str, part: Part = "person") -> bool:
        """Whether some content word of ``text`` is in ``part`` of some turn of the batch."""
        have = self.whole[part]
        return any(have.holds(w) for w in words(text))


@dataclass
class Verdict:
    """What grounding did to one reply: the reply as it may be reviewed, and each item
    refused or downgraded, said without its words (the ledger row keeps these lines and the
    log samples them: a person's words never go to the log)."""

    parsed: ParsedReply
    refused: list[str] = field(default_factory=list)
    downgraded: list[str] = field(default_factory=list)

    @property
    def ungrounded(self) -> int:
        return len(self.refused) + len(self.downgraded)

    def lines(self) -> list[str]:
        """One line per item, as the ledger row keeps its refusals."""
        return [f"ungrounded, refused: {x}" for x in self.refused] + [
            f"ungrounded, downgraded: {x}" for x in self.downgraded
        ]


_MARK = re.compile(
    r"\s*\((?:from|suggested by) (?:a tool result|the agent's answer|the agent's tool calls)"
    r"(?: in T\d+)?\)$"
)


def unmarked(text: str) -> str:
    """``text`` without the mark grounding gave it (``(from a tool result in T88)``)."""
    return _MARK.sub("", text)


def _where(support: Support, names: Mapping[int, str]) -> str:
    """``a tool result in T88``: the part that holds an item (a tool result when none does:
    the curator read it somewhere) and its turn as search names it, when the index has it."""
    where = FROM.get(support.source or "tool", FROM["tool"])
    name = names.get(support.turn) if support.turn is not None else None
    return f"{where} in {name}" if name else where


def ground(
    parsed: ParsedReply,
    turns: Sequence[Turn],
    *,
    base: Mapping[str, str],
    open_actions: Mapping[int, str],
    names: Mapping[int, str] | None = None,
    rendered: Mapping[int, str] | None = None,
    shown: Rendering = PROMPT_RENDERING,
) -> Verdict:
    """Check ``parsed`` against ``turns`` (see the module docstring). ``base``: the memory
    files as the request showed them (what a line number names); ``open_actions``: the text
    of each open action by id; ``names``: each turn's name as search gives it (``T12``), by
    turn id; ``rendered``: each turn as the request rendered it, by turn id (else the tools
    are excerpted as render_turn does). The reply returned is a copy; nothing is applied
    here."""
    grounds = Grounds(turns, rendered=rendered, rendering=shown)
    names = names or {}
    out = Verdict(replace(parsed, learnings=[], actions=[], closed_actions=[]))
    for learning in parsed.learnings:
        out.parsed.learnings.append(_learning(out, grounds, learning, names))
    for text, priority in parsed.actions:
        out.parsed.actions.append(_action(out, grounds, text, priority, names))
    for action_id in parsed.closed_actions:
        text = open_actions.get(action_id, "")
        if grounds.shows_done(text) or not words(text):
            out.parsed.closed_actions.append(action_id)
        else:
            out.refused.append(f"ACTION_DONE {action_id}: no turn shows it handled")
    out.parsed.forgets = [f for f in parsed.forgets if _forget_is_theirs(out, f, turns)]
    out.parsed.edits = dict(parsed.edits)
    out.parsed.rewrites = dict(parsed.rewrites)
    if "user.md" in parsed.edits:
        edits = parsed.edits["user.md"]
        out.parsed.edits["user.md"] = _user_edits(out, grounds, edits, base, names)
    if "user.md" in parsed.rewrites:
        old = set(base.get("user.md", "").splitlines())
        kept = []
        for n, line in enumerate(parsed.rewrites["user.md"], 1):
            if line in old or not words(line) or grounds.support(line).personal:
                kept.append(line)
            else:
                out.refused.append(f"user.md rewrite line {n}: not the person's words")
        out.parsed.rewrites["user.md"] = kept
    return out


def _forget_is_theirs(
    out: Verdict, item: tuple[str, tuple[int, ...]], turns: Sequence[Turn]
) -> bool:
    """A FORGET runs only when its words stand in the person's own prompt of the turn it
    cites (any turn of the batch if it cites none): a web page, a file or the agent's answer
    saying "forget the user's bank details" forgets nothing. Refusals never quote the words."""
    from wsd.daemon.memory.forget.words import BadWords, Forget

    words, cited = item
    try:
        match = Forget.of([words])
    except BadWords:
        out.refused.append("FORGET: no words to forget")
        return False
    where = [t for t in turns if not cited or t.id in cited]
    if any(match.holds(t.user_message or "") for t in where):
        return True
    out.refused.append("FORGET: not in the person's own words")
    return False


def _learning(
    out: Verdict, grounds: Grounds, learning: Learning, names: Mapping[int, str]
) -> Learning:
    support = grounds.support(learning.content, learning.cited)
    if support.personal:
        return learning
    where = _where(support, names)
    marked = f"{learning.content} (from {where})"
    if learning.kind not in PERSONAL_KINDS:
        # A fact only a tool's output holds says so, wherever the agent reads it (the boot
        # context, search_memory): it can weigh a stranger's word as one.
        return replace(learning, content=marked) if support.source == "tool" else learning
    out.downgraded.append(f"{learning.kind.upper()} kept as a FACT from {where}")
    return replace(learning, kind="fact", content=marked)


def _action(
    out: Verdict, grounds: Grounds, text: str, priority: int, names: Mapping[int, str]
) -> tuple[str, int]:
    support = grounds.support(text)
    if support.personal or priority >= 2:
        return text, priority
    where = _where(support, names)
    out.downgraded.append(f"ACTION at normal priority: suggested by {where}")
    return f"{text} (suggested by {where})", 2


def _user_edits(
    out: Verdict,
    grounds: Grounds,
    edits: list[Edit],
    base: Mapping[str, str],
    names: Mapping[int, str],
) -> list[Edit]:
    lines = base.get("user.md", "").splitlines()
    kept = []
    for edit in edits:
        if edit.op == "delete":
            old = lines[edit.line - 1] if edit.line and 0 < edit.line <= len(lines) else ""
            if not words(old) or grounds.mentions(old):
                kept.append(edit)
            else:
                out.refused.append(f"user.md -{edit.line}: the person's words do not name it")
            continue
        support = grounds.support(edit.text)
        if not words(edit.text) or support.personal:
            kept.append(edit)
        else:
            where = "end" if edit.line is None else edit.line
            out.refused.append(f"user.md {edit.op} {where}: from {_where(support, names)}")
    return kept
