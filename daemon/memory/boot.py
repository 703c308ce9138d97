"""The boot context: what a new session starts knowing (``load_memory()``, ``wsd boot-context``).

Order (SPEC.md section 7), stable parts first so the prompt caches: soul.md, os.md, tools.md,
files.md, user.md, context.md; then the learnings of the last 48 hours, newest first, capped;
then what the turns not yet curated were about (the person's requests, clipped, dated, newest
first: a result of the economy lane may land an hour after its session ended, and a session
that starts meanwhile must still know; see :mod:`wsd.daemon.memory.uncurated`); then the
open pending actions, most urgent first; then a short description of how the agent's memory
works. A missing or empty file is skipped without a word; the whole is held to a size budget;
it is wrapped in ``<workspace-memory>…</workspace-memory>`` so that, if the agent echoes it,
the capture hooks strip it instead of curating it again.

Cheap by design (the Claude Code SessionStart hook runs it on every start): memory.db and
transcript.db are opened read-only through the store's verbs, and a database that is missing
or unreadable costs its sections, never the session (a warning goes to stderr).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import apsw

from wsd.daemon.memory import uncurated
from wsd.daemon.memory.uncurated import Digest
from wsd.daemon.runtime.fsio import read_text, why_not_read
from wsd.daemon.store import Store, priority_name
from wsd.schema.errors import describe
from wsd.schema.layout import CURATED_FILES, DEFAULT_WORKSPACE, DEPLOY_FILES, Layout

TAG = "workspace-memory"
FILES = DEPLOY_FILES + CURATED_FILES  # soul, os, tools, files, user, context
WINDOW_HOURS = 48.0
MAX_LEARNINGS = 50
MAX_ACTIONS = 20
#: The whole boot context, in characters (~12k tokens): a floor under the agent's own work.
BUDGET_CHARS = 48_000
#: One file at most (the line limits keep them far below; this guards a runaway file).
FILE_MAX_CHARS = 20_000
LEARNING_MAX_CHARS = 400
#: When the budget is exceeded, files are shortened in this order (least needed first).
TRIM_ORDER = ("files.md", "tools.md", "context.md", "user.md", "os.md", "soul.md")

#: The words of a learning that say nothing of its own (a learning made of these and words a
#: memory file line already has is not new to an agent that read that line).
_FUNCTION_WORD_LIST = (
    "a an the of to in on at for from with by as and or not no is are was were be been has"
    " have had it its this that these those there user person agent s"
    " wrote written writes created saved installed installs uses used"
)
_FUNCTION_WORDS = frozenset(_FUNCTION_WORD_LIST.split())
_WORD = re.compile(r"[a-z0-9]+")
#: Characters that change how text is shown or read without being seen: every Unicode format
#: character (Cf: bidi embeddings, overrides and isolates U+202A-202E and U+2066-2069, the
#: zero-width space, joiners and marks U+200B-200F, the word joiner U+2060, the BOM U+FEFF,
#: the Arabic letter mark U+061C, the soft hyphen, the invisible tag letters U+E0000-E007F
#: that can spell hidden instructions) and the control characters (C0 but tab, newline and
#: ESC, which the hygiene needs to find a terminal colour sequence whole; DEL; C1). Listed
#: rather than looked up in ``unicodedata``, which costs the boot start-up;
#: tests/test_unicode_controls.py checks the list covers every Cf of the running Python.
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891"
    "\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f]+"
)
#: Where a tag the capture hooks read as the boot context's own opens: in any case, with any
#: spacing (as wsd.redact.text reads it), so that content cannot end the span early.
_TAG_START = re.compile(rf"<(?=\s*/?\s*{TAG})", re.IGNORECASE)


@dataclass(frozen=True)
class Tools:
    """How the agent reaches its archive and its actions in this host: a tool name, or (where
    it has no such tool) a command to run in its shell."""

    search: str
    resolve: str
    are_tools: bool = True

    @classmethod
    def mcp(cls, prefix: str) -> Tools:
        """The MCP tools, named as the host names them (``mcp__memory__`` for the SDK helper)."""
        return cls(f"{prefix}search_memory", f"{prefix}resolve_action")

    @classmethod
    def shell(cls, workspace: str, wsd: str | None = None) -> Tools:
        """No memory tool: the ``wsd`` commands, by absolute path (the agent's PATH may lack
        the daemon's virtual environment) and naming ``workspace`` (the agent's shell has no
        WSD_WORKSPACE: a new user's agent, told a bare ``wsd search``, was refused for any
        workspace but /workspace, and was told to init one there)."""
        wsd = wsd or os.path.join(os.path.dirname(sys.executable), "wsd")
        base = f"{shlex.quote(wsd)} --workspace {shlex.quote(workspace)}"
        return cls(f'{base} search "question"', f"{base} pending complete ID", are_tools=False)


def how_memory_works(tools: Tools) -> str:
    """The closing section: mind, notes and archive, with the host's own tool names."""
    if tools.are_tools:
        search = f"the `{tools.search}` tool finds"
        resolve = (
            f"the `{tools.resolve}` tool (status `completed`, or `dismissed` if it no longer"
            " applies)"
        )
    else:
        search = f"`{tools.search}` in a shell finds"
        resolve = (
            f"`{tools.resolve}` in a shell (`dismiss` instead of `complete` if it no longer"
            " applies)"
        )
    return (
        "## How your memory works\n"
        "- This conversation is your mind: what you know right now.\n"
        "- The notes above, the recent learnings and the pending actions are your memory of"
        " earlier sessions, kept up to date for you from what happens in your conversations.\n"
        f"- Older details are in the archive: {search} past learnings and past conversation"
        " turns from a question or a few keywords.\n"
        "- You never need to save anything: every turn is recorded and curated automatically.\n"
        f"- When you have handled a pending action, mark it with {resolve}."
    )


def load_memory(
    workspace: Layout | str | None = None,
    *,
    tools: Tools | None = None,
    now: float | None = None,
    window_hours: float = WINDOW_HOURS,
    max_learnings: int = MAX_LEARNINGS,
    max_actions: int = MAX_ACTIONS,
    budget_chars: int = BUDGET_CHARS,
    unreadable: list[str] | None = None,
) -> str:
    """The boot context of ``workspace`` (a Layout or root; default ``$WSD_WORKSPACE``);
    ``tools`` says how this host reaches the archive (default: shell commands).

    A path that is not a workspace (no ``.os/``: a typo, an unset variable) raises
    ValueError saying so and how to make one, as ``agent_memory()`` and the CLI do: an empty
    boot context would look like a memory with nothing in it. A memory file that is there
    but cannot be read is said in its place (and on stderr), and its name is appended to
    ``unreadable`` when given.
    """
    layout = _layout(workspace)
    problem = layout.problem()
    if problem is not None:
        raise ValueError(problem)
    now = time.time() if now is None else now
    files: dict[str, str] = {}
    for name in FILES:
        text, why = _read(layout.md(name))
        if why is not None:
            # Said, never skipped in silence: an agent started without the person's notes
            # behaves as if it never knew them, and the person cannot tell why.
            _warn(f"{name} could not be read ({why}); the boot context says so")
            if unreadable is not None:
                unreadable.append(name)
            text = (
                f"[{name} could not be read ({why}), so its notes are missing from this"
                " context. Tell the person, so they can make it readable again.]"
            )
        if text:
            files[name] = text
    recent, actions = _from_db(layout, now - window_hours * 3600, max_learnings, max_actions)
    lines = _lines_by_word(files.values(), (text for _kind, _ts, text in recent))
    learnings = [
        f"- ({kind}, {_when(ts)}) {_one_line(text, LEARNING_MAX_CHARS)}"
        for kind, ts, text in recent
        if not reflected(text, lines)
    ]
    closing = how_memory_works(tools or Tools.shell(layout.root))
    copy = _copy_age(layout, now)
    if copy:
        closing = f"{closing}\n\n{copy}"
    return _fit(files, learnings, _digest(layout), actions, max(budget_chars, 2000), closing)


def _lines_by_word(texts: Iterable[str], learnings: Iterable[str]) -> dict[str, set[int]]:
    """Each content word of ``learnings`` (lower case) and the lines of ``texts``, numbered
    across them, holding it (the files' other words are never asked for)."""
    wanted = {w for text in learnings for w in _content_words(text)}
    out: dict[str, set[int]] = {}
    lines = (line for text in texts for line in text.splitlines())
    for n, line in enumerate(lines):
        for word in wanted.intersection(_WORD.findall(line.lower())):
            out.setdefault(word, set()).add(n)
    return out


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _FUNCTION_WORDS}


def reflected(learning: str, lines: Mapping[str, set[int]]) -> bool:
    """True if one line of the memory files holds every content word of ``learning``
    (the agent reads that line already; the learning would only say it twice). ``lines``:
    :func:`_lines_by_word` of the files. (The lines holding its rarest word are narrowed
    by the others: testing each learning against each of 1,150 lines was half of a boot.)"""
    words = _content_words(learning)
    if not words:
        return False
    holding = sorted((lines.get(w, set()) for w in words), key=len)
    common = set(holding[0])
    for more in holding[1:]:
        common &= more
        if not common:
            return False
    return bool(common)


def visible(text: str) -> str:
    """``text`` without the characters that are not seen but change what is (bidi overrides,
    zero-width characters, other format and control characters; see ``_INVISIBLE``): every
    line a curator writes and everything the boot context shows passes through it, so what a
    person reads in user.md is what the agent reads, in the same order."""
    return _INVISIBLE.sub("", text)


def hook_output(workspace: Layout | str | None = None, tools: Tools | None = None) -> str:
    """The Claude Code SessionStart hook answer: JSON with the boot context as
    ``additionalContext`` (the agent sees it; capture strips it by its tag)."""
    context = load_memory(workspace, tools=tools)
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}}
    )


def _layout(workspace: Layout | str | None) -> Layout:
    if isinstance(workspace, Layout):
        return workspace
    return Layout(workspace or os.environ.get("WSD_WORKSPACE") or DEFAULT_WORKSPACE)


def _read(path: str) -> tuple[str, str | None]:
    """A memory file's text ("" when it is missing or empty), and why it could not be read
    (None when it could): never through a link, never a FIFO or a device, so the agent's
    start cannot hang."""
    try:
        text = read_text(path, 4 * (FILE_MAX_CHARS + 1), head=True) or ""
    except OSError as exc:  # mode 000, a link, a FIFO, a device, a folder
        return "", why_not_read(path, exc)
    text = text.strip()
    if len(text) > FILE_MAX_CHARS:
        text = _cut_lines(text, FILE_MAX_CHARS)
    return text, None


def _from_db(
    layout: Layout, since: float, max_learnings: int, max_actions: int
) -> tuple[list[tuple[str, float, str]], list[str]]:
    """Lines for the recent learnings and the open actions ([] when there is no memory.db):
    on a satellite, of the person's memory as its followed copy of home's has it."""
    layout = layout.reading()
    if not os.path.exists(layout.memory_db):
        return [], []
    store = Store(layout)
    try:
        recent = store.learnings.recent_learnings(since, max_learnings)
        open_actions = store.actions.open_actions(max_actions)
    except (apsw.Error, OSError) as exc:
        _warn(f"memory.db not readable ({describe(exc)}); boot context without learnings")
        return [], []
    actions = [
        f"- [#{aid}, {priority_name(prio)}] {_one_line(text, LEARNING_MAX_CHARS)}"
        for aid, prio, text in open_actions
    ]
    try:  # a memory.db the daemon has not migrated yet has no such column: none to say
        refused = [a for a in store.erasure.requests() if a.status == "refused"]
    except apsw.Error:
        refused = []
    # A request to forget that was refused is said (issue 43: nothing refused silently),
    # never its words: the agent tells the person, who can say it again or run wsd forget.
    actions += [
        f"- [refused] A request to forget something{' in ' + a.asked_in if a.asked_in else ''}"
        f" was not run: {a.reason}. If the person meant it, ask them what to forget"
        " (wsd forget WORDS)."
        for a in refused
    ]
    return recent, actions


def _copy_age(layout: Layout, now: float) -> str | None:
    """On a satellite (SPEC.md section 11): how old its copy of the person's memory is, as
    home's newest word in it says (None elsewhere)."""
    reading = layout.reading()
    if reading is layout:
        return None
    try:
        said = Store(reading).machines.home_word().get("home_beacon")
        at = float(said) if said else None
    except (apsw.Error, OSError, ValueError):
        at = None
    if at is None:
        return (
            "This machine reads the person's memory from a copy of home's, which has not said"
            " how old it is yet."
        )
    minutes = max(0.0, now - at) / 60
    return (
        "This machine reads the person's memory from a copy of home's, as of"
        f" {datetime.fromtimestamp(at, UTC).strftime('%Y-%m-%d %H:%M UTC')}"
        f" ({minutes:.0f} min old); what was said here since is curated at home."
    )


def _digest(layout: Layout) -> Digest | None:
    """The section on the turns not yet curated (None when there is none, or no transcript.db
    to read; see :mod:`wsd.daemon.memory.uncurated`).

    The person's words were redacted before they were stored (the capture hooks clean every
    field before it is written, spooled or not), like all else shown here; they are
    neutralised before they are clipped, so that invisible characters take no room.
    """
    if not os.path.exists(layout.transcript_db):
        return None
    try:
        found = Store(layout).turns.uncurated(uncurated.MAX_LINES, uncurated.READ_CHARS)
    except (apsw.Error, OSError) as exc:
        why = describe(exc)
        _warn(f"transcript.db not readable ({why}); boot context without the turns not curated")
        return None
    return uncurated.digest(
        replace(found, requests=[(ts, _neutral(w)) for ts, w in found.requests])
    )


def _fit(
    files: Mapping[str, str],
    learnings: list[str],
    pending: Digest | None,
    actions: list[str],
    budget: int,
    closing: str,
) -> str:
    """Assemble, then shed the least needed parts until it fits the budget (the files, most
    of the text, are neutralised once, here, not on every assembly: the loop may assemble a
    dozen times).

    Oldest learnings go first (curated: the archive keeps them), then the oldest requests
    not yet curated (the section's heading still counts them), then the least urgent
    actions, then files are shortened in TRIM_ORDER (their tail lines, with a note saying
    how many were left out).
    """
    files = {name: _neutral(text) for name, text in files.items()}

    def render() -> str:
        return _render(files, learnings, pending, actions, closing)

    text = render()
    while len(text) > budget and (learnings or (pending and pending.lines) or actions):
        # Drop as many lines as the overflow needs at once (each costs its length + 1).
        over = len(text) - budget
        if learnings:
            learnings = _drop_tail(learnings, over)
        elif pending and pending.lines:
            pending = replace(pending, lines=_drop_tail(pending.lines, over))
        else:
            actions = _drop_tail(actions, over)
        text = render()
    for name in TRIM_ORDER:
        if len(text) <= budget:
            break
        if name in files:
            keep = max(0, len(files[name]) - (len(text) - budget) - 100)
            files[name] = _cut_lines(files[name], keep) if keep > 200 else ""
            if not files[name]:
                del files[name]
            text = render()
    return text


def _drop_tail(lines: list[str], chars: int) -> list[str]:
    """``lines`` without as many trailing lines as it takes to save ``chars`` (at least one)."""
    keep = len(lines)
    while keep > 0 and chars > 0:
        keep -= 1
        chars -= len(lines[keep]) + 1
    return lines[: min(keep, len(lines) - 1)]


def _render(
    files: Mapping[str, str],
    learnings: list[str],
    pending: Digest | None,
    actions: list[str],
    closing: str,
) -> str:
    parts = [f"<{TAG}>"]  # the files come neutralised (see _fit); the rest is, here
    for name in FILES:
        if name in files:
            parts.append(f"=== {name} ===\n{files[name]}")
    if learnings:
        parts.append(
            "## Recent learnings (last 48 hours, newest first)\n" + _neutral("\n".join(learnings))
        )
    # The turns not yet curated come right after the learnings (SPEC.md section 7): they
    # carry on from them (what was learned, newest first, then what happened since), and
    # both go stale at the same moment, when a result lands. Before the actions, not after:
    # the actions are curated memory too, so the heading's "the rest of this memory does not
    # reflect them yet" holds for all around it; and this short section changes every turn
    # while the actions change rarely, but it is the boot context's last few hundred tokens
    # either way, so the prompt cache loses next to nothing.
    if pending:
        parts.append(_neutral(pending.render()))
    if actions:
        parts.append("## Pending actions (most urgent first)\n" + _neutral("\n".join(actions)))
    parts.append(closing)
    parts.append(f"</{TAG}>")
    return "\n\n".join(parts)


def _neutral(text: str) -> str:
    """Content as it may be shown: no invisible characters (:func:`visible`), and the
    boot-context tag defused, so it cannot end the span early."""
    return _TAG_START.sub("‹", visible(text).replace("\x1b", ""))


def _cut_lines(text: str, limit: int) -> str:
    """The first lines of ``text`` within ``limit`` characters, and a note of what was cut."""
    lines = text.splitlines()
    kept: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > limit:
            break
        kept.append(line)
        used += len(line) + 1
    if len(kept) < len(lines):
        kept.append(f"[… {len(lines) - len(kept)} more lines not shown]")
    return "\n".join(kept)


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _when(ts: object) -> str:
    try:
        return datetime.fromtimestamp(float(str(ts)), UTC).isoformat(timespec="minutes")
    except (ValueError, OverflowError, OSError):
        return "?"


def _warn(message: str) -> None:
    with contextlib.suppress(OSError, ValueError):  # stderr closed: nothing more to do
        sys.stderr.write(f"wsd: {message}\n")
