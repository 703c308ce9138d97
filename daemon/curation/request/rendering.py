"""What of a turn the curator is shown, per lane: a turn rendered one line per part, the
tool calls' inputs and results excerpted within the lane's budget (:class:`Rendering`).

Pure functions, no I/O. Grounding reads the same renderings
(:func:`shown_input`, :func:`shown_result`): what it judges is what the curator saw.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from wsd.daemon.curation.request.excerpt import clip, excerpt
from wsd.daemon.store import Lane, Turn

# What each part of a turn gets (characters), chosen from ``make bench``: ``curator_sees``
# (the share of each fact's words the curator is shown, on LoCoMo and on realistic agent
# turns) against ``curator_cost`` (the economy lane's $0.005 per typical session, which
# leaves no room to spare). Issue 24, old -> these values: LoCoMo 0.854 -> 0.992 of what
# the whole text holds, agent turns 0.557 -> 0.890 (their answers' facts 0.568 -> 0.974).
#: The person's words whole, as capture keeps them (2,000 characters): they are the scarcest
#: and most trusted part of a turn (preferences, corrections, requests). Issue 45: at 400 a
#: preference in the middle of a ~1,900-character prompt never reached the curator (its
#: head and tail did). ``make bench`` curator_sees, long prompts (a fact in the middle):
#: 400 0.031, 800 0.090, 1,200 0.104, 2,000 1.000, ~380 more input tokens each (~$0.0004);
#: the agent turns' and LoCoMo's prompts are all shorter than 400, their cost unchanged.
USER_CHARS = 2000


#: An answer longer than its whole-text allowance is sent as an excerpt of its fact-carrying
#: sentences (excerpt.py) within this: filler costs nothing, so the typical turns the cost
#: is measured on never reach it, and a long report keeps its figures (1,000 -> 1,500: the
#: agent turns' answers 0.953 -> 0.974; 2,000: 0.978, and capture keeps 2,000 at most).
ASSISTANT_CHARS = 1500


#: An answer is sent whole up to the room its turn's prompt and tool calls left of
#: TURN_CHARS, and at least up to ASSISTANT_WHOLE: a conversation turn (no tools) is all
#: answer, and LoCoMo's went 0.936 -> 0.992 with it, at no cost to the typical session.
ASSISTANT_WHOLE = 150


TURN_CHARS = 600


#: A tool call's input says what was done to what; its output is excerpted like an answer,
#: within a budget the cost target leaves: 100 characters would add 0.01 to the agent
#: turns' coverage and ~440 characters (~$0.00006) to a typical session, over the target.
#: Issue 36, measured without the turn headings (their clock matched fact numbers by
#: chance): inputs 90, outputs 70 gave 0.8865; inputs 80, outputs 80 give 0.892 (inputs
#: under 90 changed no fact word, outputs 75 0.888, 78 0.890) at the same typical session's
#: cost ($0.009898, the instructions 152 characters shorter).
TOOL_INPUT_CHARS = 80


TOOL_OUTPUT_CHARS = 80


#: Calls shown of a turn (the first and last halves beyond it): 4 -> 6 added 0.007 on the
#: agent turns and nothing to the typical session.
TOOLS_SHOWN = 6


#: Tools whose output adds nothing the curator needs: the look-only ones returned what is
#: already on disk or on the web, the writing ones echo what their input already says.
QUIET_OUTPUT_TOOLS = frozenset(
    {"Read", "Glob", "Grep", "LS", "WebFetch", "WebSearch", "NotebookRead", "BashOutput"}
    | {"Write", "Edit", "MultiEdit", "NotebookEdit", "TodoWrite"}
)


#: Fields of a structured tool result that describe the result, not what it found.
OUTPUT_METADATA = frozenset({"type", "mode", "filenames", "structuredPatch", "originalFile"})


#: Input fields that restate the rest of the call (Bash's ``description`` of its command).
DROPPED_INPUT_FIELDS = frozenset({"description"})


#: Input fields that say what a call did to what: kept first, each clipped on its own.
KEY_INPUT_FIELDS = ("command", "file_path", "path", "notebook_path", "url", "pattern", "query")


#: An input field longer than this is left out (e.g. Write's content), unless a key field.
INPUT_FIELD_CHARS = 60


@dataclass(frozen=True)
class Rendering:
    """What of a turn the curator is shown, per lane (issue 36): the characters each part
    gets, the calls shown, and the tools whose output is left out. A Message Batch is billed
    at half price, so the same dollar shows the economy lane's curator twice the text."""

    user_chars: int = USER_CHARS
    assistant_chars: int = ASSISTANT_CHARS
    assistant_whole: int = ASSISTANT_WHOLE
    turn_chars: int = TURN_CHARS
    tool_input_chars: int = TOOL_INPUT_CHARS
    tool_output_chars: int = TOOL_OUTPUT_CHARS
    tools_shown: int = TOOLS_SHOWN
    quiet_output_tools: frozenset[str] = QUIET_OUTPUT_TOOLS


#: The prompt lane (PreCompact, ``wsd flush``, ``WSD_CURATION=prompt``, and a rebuild's or a
#: retry's batch the live run curated there): the values above.
PROMPT_RENDERING = Rendering()


#: Tools whose output only echoes what their input already says.
WRITING_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "TodoWrite"})


#: The economy lane (a Message Batch at half price): what the look-only tools returned is
#: shown too, and every result's excerpt is 500 characters. Issue 36, ``make bench``
#: (agent turns' fact words rendered/whole, characters a typical 20-turn session adds):
#: 70 chars, look-only quiet 0.888 (+0); 250 0.931 (+4,431); 400 0.948 (+7,850); 500 0.955
#: (+9,753); 600 0.964 (+13,003). Showing more calls (6 -> 10) or longer inputs added
#: nothing; every tool's output (the writing ones too) cost +2,848 chars for nothing.
ECONOMY_RENDERING = Rendering(tool_output_chars=500, quiet_output_tools=WRITING_TOOLS)


def rendering_for(lane: Lane | str) -> Rendering:
    """The rendering of a lane (as the ledger's ``lane`` column names it: a parked batch is
    retried, and a rebuild re-curates a batch, as its lane rendered it)."""
    return ECONOMY_RENDERING if lane == Lane.ECONOMY else PROMPT_RENDERING


def escape(text: str) -> str:
    """Escape data so it cannot close our tags and pose as instructions."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _compact(value: Any, limit: int) -> str:
    return "" if value is None else clip(_as_text(value), limit)


def _input_field(key: str, value: Any) -> str | None:
    """Short input fields as they are; long ones (a file's content, a mail's body: the
    agent's own writing, said again in its answer) and the agent's description of a
    command (the command says it) left out."""
    if key in DROPPED_INPUT_FIELDS:
        return None
    text = _as_text(value)
    if len(text) > INPUT_FIELD_CHARS and key not in KEY_INPUT_FIELDS:
        return None
    return text


def _input_gist(value: Any, limit: int = TOOL_INPUT_CHARS) -> str:
    """A tool's input: the fields that say what was done to what (a command, a path, a URL)
    first and each clipped on its own, so a long file body can never cut a path short. The
    first of them is shown without its name (``tool Bash: ls -l``, ``tool Read: a/b.csv``):
    the names were a tenth of what a typical turn's tool calls cost."""
    if not isinstance(value, dict):
        return _compact(value, limit)
    keys = sorted(value, key=lambda k: k not in KEY_INPUT_FIELDS)
    parts = []
    for n, key in enumerate(keys):
        text = _input_field(key, value[key])
        if text is not None:
            bare = n == 0 and key in KEY_INPUT_FIELDS
            parts.append(clip(text, limit) if bare else f"{key}={clip(text, limit)}")
    return clip("; ".join(parts), limit * 2)


def _output_text(value: Any) -> str:
    """A tool's result as plain lines: text as it is, MCP content blocks by their text, a
    structured result (Claude Code's ``{"stdout": ..., "stderr": "", "interrupted": false,
    ...}``) by its text fields (one alone without its name), dropping empty, false and
    numeric fields (sizes, durations, status codes: figures that are not facts)."""
    if value is None or value is False or value in ("", [], {}):
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, dict) and "text" in v for v in value):
        return "\n".join(_as_text(v["text"]) for v in value)
    if isinstance(value, dict):
        fields = {
            k: text
            for k, v in value.items()
            if k not in OUTPUT_METADATA
            and not isinstance(v, bool | int | float)
            and (text := _output_text(v))
        }
        if len(fields) == 1:
            return next(iter(fields.values()))
        return "\n".join(f"{k}={v}" for k, v in fields.items())
    return _as_text(value)


def render_turn(
    turn: Turn,
    max_chars: int | None = None,
    shown: Rendering = PROMPT_RENDERING,
    day: bool = True,
) -> str:
    """One turn as the curator sees it, one line per part, within the lane's ``shown``;
    ``max_chars`` squeezes a huge turn to fit a batch; ``day=False`` heads it with the time
    alone (a batch names the date once, and again when it changes: :func:`same_day`).

    Plain prefixes instead of a tag per part: tags and attributes were 12% of a request.
    Every field is flattened to one line and escaped, so no data can pose as another part
    of the turn, or close the ``<turns>`` block around it.
    """
    parts = [heading(turn, day)]
    if turn.user_message:
        parts.append(f"user: {_flat(turn.user_message, shown.user_chars)}")
    calls = turn.tool_calls
    most = shown.tools_shown
    half = most // 2
    listed = calls if len(calls) <= most else calls[:half] + calls[-(most - half) :]
    for i, call in enumerate(listed):
        if len(calls) > most and i == half:
            parts.append(f"({len(calls) - most} more tool calls)")
        raw_name = str(call.get("name", "?"))
        inp = _flat(shown_input(call, shown), shown.tool_input_chars * 2)
        line = f"tool {_flat(raw_name, 80)}: {inp}"
        result = shown_result(call, shown)
        if "error" in call:
            line += f" → error: {_flat(result, 9999)}"
        elif result:
            line += f" → {_flat(result, shown.tool_output_chars)}"
        parts.append(line)
    if turn.agent_response:
        # Whole up to the room the prompt and the tool calls left in a turn's share: a turn
        # without tools is a conversation whose answer is all of its substance.
        room = shown.turn_chars - sum(len(p) + 1 for p in parts)
        limit = shown.assistant_chars
        answer = excerpt(turn.agent_response, limit, max(shown.assistant_whole, room))
        parts.append(f"agent: {_flat(answer, limit)}")
    text = "\n".join(parts)
    if max_chars is not None and len(text) > max_chars:
        text = clip(text, max_chars)
    return text


def heading(turn: Turn, day: bool = True) -> str:
    """A rendered turn's first line: its id, its time (and date with ``day``), what it
    amends."""
    when = datetime.fromtimestamp(turn.timestamp, UTC).strftime(
        "%Y-%m-%d %H:%M" if day else "%H:%M"
    )
    amends = f" amends {turn.amends}" if turn.amends is not None else ""
    return f"[turn {turn.id} {when}{amends}]"


def dated(turn: Turn, text: str) -> str:
    """``text`` (``turn`` rendered) headed with its date: the first turn of a request."""
    _head, newline, rest = text.partition("\n")
    return heading(turn, True) + newline + rest


def same_day(turn: Turn, before: Turn | None) -> bool:
    """Whether ``turn`` falls on the UTC date of the turn rendered just before it in the
    same request (its heading then gives the time alone: 11 characters a turn, 220 a
    typical session, issue 36)."""
    if before is None:
        return False
    try:
        days = (datetime.fromtimestamp(t.timestamp, UTC).date() for t in (turn, before))
        return next(days) == next(days)
    except (OverflowError, OSError, ValueError):
        return False


def shown_input(call: Mapping[str, Any], shown: Rendering = PROMPT_RENDERING) -> str:
    """What the curator is shown of a tool call's input (:func:`render_turn`)."""
    return _input_gist(call.get("input"), shown.tool_input_chars)


def shown_result(call: Mapping[str, Any], shown: Rendering = PROMPT_RENDERING) -> str:
    """What the curator is shown of a tool call's result (:func:`render_turn`): its error, or
    an excerpt of its output ("" for the tools whose output it is not shown)."""
    if "error" in call:
        return _compact(call.get("error"), shown.tool_output_chars)
    if str(call.get("name", "?")) in shown.quiet_output_tools:
        return ""
    output = _output_text(call.get("output"))
    return excerpt(output, shown.tool_output_chars) if output else ""


def _flat(text: str, limit: int) -> str:
    """One line: whitespace runs made single spaces, clipped, escaped."""
    return escape(clip(" ".join(text.split()), limit))
