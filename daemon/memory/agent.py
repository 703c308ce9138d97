"""Everything an Agent SDK agent needs to wire memory in, from one call.

```python
from claude_agent_sdk import ClaudeAgentOptions
from wsd.daemon.memory.agent import agent_memory

memory = agent_memory("/workspace")
options = ClaudeAgentOptions(
    hooks=memory.hooks,                       # capture every turn
    mcp_servers=memory.mcp_servers,           # in-process server "memory"
    allowed_tools=[*memory.allowed_tools, "Bash", "Read"],
    system_prompt=memory.system_prompt,       # Claude Code's prompt + the boot context
)
```

The MCP server ``memory`` has two tools: ``search_memory`` (read-only search of learnings and
past turns, or with ``turn`` the turn a hit names) and ``resolve_action`` (mark a pending
action completed or dismissed). Their output is never captured (hooks.capture drops
``mcp__memory__*`` output), so what memory says is never curated back into memory. The tool
handlers never raise: a problem becomes an ``is_error`` result the agent can read. The SDK is
imported only inside :func:`agent_memory`.
"""

from __future__ import annotations

import asyncio
import math
import os
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from wsd.daemon.memory.boot import Tools, load_memory
from wsd.daemon.memory.search.core import (
    MAX_LIMIT,
    TYPES,
    format_hits,
    holds_words,
    search_memory,
)
from wsd.daemon.memory.search.turn import format_turn, open_turn
from wsd.daemon.store import Store
from wsd.schema.layout import DEFAULT_WORKSPACE, Layout

SERVER_NAME = "memory"
TOOL_PREFIX = f"mcp__{SERVER_NAME}__"
SEARCH_TOOL = "search_memory"
ACTION_TOOL = "resolve_action"
ALLOWED_TOOLS = (TOOL_PREFIX + SEARCH_TOOL, TOOL_PREFIX + ACTION_TOOL)

SEARCH_DESCRIPTION = (
    "Search your long-term memory: learnings curated from past sessions and the archive of "
    "past conversation turns. Ask with a few specific words or a short question, naming what "
    "matters (a person, a project, a file, a decision): 'invoice format Anna prefers', 'when "
    "did we move the backups?'. Matches by words and, when the daemon runs the semantic "
    "extra, by meaning. If the first results are thin, try other words (a synonym, a name, "
    "the file or tool involved) or use `since` to look at a period; `type` keeps one kind "
    "('turn' for what was said, or a learning type). When nothing matches well you get one "
    "line saying so, not weak guesses. Each hit: [id] type · date · source, then a snippet; "
    "a learning marked 'superseded by L<n>' was replaced by that newer one. Read-only; you "
    "never need to save anything yourself.\n"
    "A learning's hit names the turn it came from ('from turn T<n>'): pass turn='T<n>' instead "
    "of a query to read what was said in that turn; a turn hit's [T<n>] opens the same way, and "
    "so does [N<n>], a turn so recent it is not indexed yet."
)
SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "A few specific words or a short question (or give `turn`).",
        },
        "turn": {
            "type": "string",
            "description": "A turn id as a hit names it, e.g. 'T88' (or 'N12'): returns that turn"
            " in full instead of searching.",
        },
        "limit": {"type": "integer", "description": "How many results (default 10, max 100)."},
        "type": {
            "type": "string",
            "enum": list(TYPES),
            "description": "Only this kind of memory (a learning type, or 'turn').",
        },
        "since": {
            "type": "string",
            "description": "Only memories since then: an ISO date or an age like '7d'.",
        },
    },
    # No "required": a query or a turn, which a schema's top level cannot say to every host
    # (the Messages API refuses anyOf there); run_search says so when neither comes.
}
ACTION_DESCRIPTION = (
    "Mark one of your pending actions (listed at the start of the session with their #id) as "
    "completed once you have handled it, or as dismissed if it no longer applies."
)
ACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "integer", "description": "The action's number, e.g. 12 for #12."},
        "status": {"type": "string", "enum": ["completed", "dismissed"]},
    },
    "required": ["id", "status"],
}


#: The largest id SQLite stores (a signed 64-bit integer).
MAX_ID = 2**63 - 1
_INTEGER = re.compile(r"\s*#?[+-]?[0-9]{1,24}\s*")


def whole(args: Mapping[str, Any], name: str, high: int, default: int | None = None) -> int:
    """``args[name]`` as a whole number from 1 to ``high``: a JSON integer (or an integral
    number, or digits in a string, ``#12``); missing or null is ``default``. Anything else is
    a ValueError that says what was wanted and what came, for the agent to read and retry."""
    value = args.get(name)
    wanted = f"{name} must be a whole number from 1 to {high}"
    if value is None or value == "":
        if default is None:
            raise ValueError(f"{name} is missing: {wanted}")
        return default
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and _INTEGER.fullmatch(value):
        number = int(value.strip().lstrip("#"))
    if number is None or not 1 <= number <= high:
        shown = "a number that large" if isinstance(value, int) and number and number > high else ""
        raise ValueError(f"{wanted}, not {shown or _shown(value)}")
    return number


def _shown(value: Any) -> str:
    try:
        text = repr(value)
    except ValueError:  # an int too long for str()
        text = type(value).__name__
    return text if len(text) <= 40 else text[:39] + "…"


def _text(text: str, error: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if error:
        result["is_error"] = True
    return result


#: A turn id as the agent may write it: "T88", "t88", the bare number, or "N12" (a turn not
#: indexed yet, search/tail.py).
_TURN_PREFIX = re.compile(r"^\s*([TtNn])")


def turn_id(args: Mapping[str, Any]) -> str | None:
    """``args["turn"]`` as a turn id: ``T88``, ``"88"`` or ``88`` is ``"T88"``, ``n12`` is
    ``"N12"``; missing, null or empty is None. Anything else (``T0``, ``Tabc``, a number past
    SQLite's ids) is a ValueError saying what a turn id looks like."""
    value = args.get("turn")
    if value is None or value == "":
        return None
    prefix, bare = "T", value
    found = _TURN_PREFIX.match(value) if isinstance(value, str) else None
    if found is not None:
        prefix, bare = found.group(1).upper(), value[found.end() :]
    try:
        return f"{prefix}{whole({'turn': bare}, 'turn', MAX_ID)}"
    except ValueError:
        raise ValueError(
            f"turn must be a turn id as a hit names it, like T88, not {_shown(value)}"
        ) from None


def run_search(layout: Layout, args: Mapping[str, Any]) -> dict[str, Any]:
    """The ``search_memory`` tool: a compact text result, or an ``is_error`` explanation.
    With ``turn``, that one turn of the archive (search/turn.py) instead of a search."""
    try:
        ref = turn_id(args)
        if ref is not None:
            found = open_turn(layout, ref)
            if found is None:
                return _text(f"search_memory: no turn {ref} in memory", error=True)
            return _text(format_turn(found))
        query = args.get("query")
        if query is None or (isinstance(query, str) and not holds_words(query)):
            # (Empty, "Nothing in memory matches this well" blamed the memory: issue 45;
            # `wsd search ''` and `wsd search '?!'` say the same as this.)
            why = (
                "is missing"
                if query is None
                else "is empty"
                if not query.strip()
                else "holds no word"
            )
            raise ValueError(
                f"query {why}: give a few specific words or a short question, or"
                " turn='T<n>' to read a turn a hit names"
            )
        limit = whole(args, "limit", MAX_LIMIT, default=10)
        hits = search_memory(
            layout,
            query,
            limit=limit,
            type=args.get("type") or None,
            since=args.get("since") or None,
        )
    except (ValueError, TypeError) as exc:
        return _text(f"search_memory: {exc}", error=True)
    except Exception as exc:  # a tool must answer, never crash the agent
        return _text(f"search_memory failed: {type(exc).__name__}: {exc}", error=True)
    return _text(format_hits(hits))


def run_resolve(layout: Layout, args: Mapping[str, Any]) -> dict[str, Any]:
    """The ``resolve_action`` tool: close one open action by id."""
    try:
        action_id = whole(args, "id", MAX_ID)
        status = str(args.get("status", ""))
        done = Store(layout).actions.set_action_status(action_id, status, time.time())
    except (ValueError, TypeError) as exc:
        return _text(f"resolve_action: {exc}", error=True)
    except Exception as exc:  # a tool must answer, never crash the agent
        return _text(f"resolve_action failed: {type(exc).__name__}: {exc}", error=True)
    if not done:
        return _text(f"No open action #{action_id} (already closed, or no such id).", error=True)
    return _text(f"Action #{action_id} marked {status}.")


@dataclass(frozen=True)
class AgentMemory:
    """What :func:`agent_memory` returns; see the module docstring for the wiring."""

    hooks: dict[str, list[Any]]
    mcp_servers: dict[str, Any]
    allowed_tools: list[str]
    system_prompt_append: str

    @property
    def system_prompt(self) -> dict[str, Any]:
        """Claude Code's system prompt with the boot context appended."""
        return {"type": "preset", "preset": "claude_code", "append": self.system_prompt_append}


_Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def memory_server(layout: Layout) -> Any:
    """The in-process MCP server ``memory`` with the two tools, bound to ``layout``."""
    from claude_agent_sdk import create_sdk_mcp_server
    from claude_agent_sdk import tool as sdk_tool

    # Typed here so mypy strict passes whether or not the agent extra is installed (without
    # it the SDK is Any, and an Any decorator makes the handlers untyped).
    tool: Callable[[str, str, dict[str, Any]], Callable[[_Handler], Any]] = sdk_tool

    @tool(SEARCH_TOOL, SEARCH_DESCRIPTION, SEARCH_SCHEMA)
    async def search(args: dict[str, Any]) -> dict[str, Any]:
        # SQLite work off the event loop: the agent's other tasks keep running.
        return await asyncio.to_thread(run_search, layout, args)

    @tool(ACTION_TOOL, ACTION_DESCRIPTION, ACTION_SCHEMA)
    async def resolve(args: dict[str, Any]) -> dict[str, Any]:
        return await asyncio.to_thread(run_resolve, layout, args)

    return create_sdk_mcp_server(SERVER_NAME, tools=[search, resolve])


def agent_memory(
    workspace: str | None = None, *, env: Mapping[str, str] | None = None
) -> AgentMemory:
    """Hooks, MCP server, allowed tool names and system-prompt append for ``workspace``.

    ``workspace`` defaults to ``$WSD_WORKSPACE`` (then ``/workspace``); one that is not a
    workspace (no ``.os/``: ``wsd init`` makes one) raises ValueError saying so. The boot
    context is read now, once: call this at the start of each session.
    """
    from wsd.hooks.sdk import memory_hooks

    env = os.environ if env is None else env
    root = workspace or env.get("WSD_WORKSPACE") or DEFAULT_WORKSPACE
    layout = Layout(os.path.abspath(root))
    problem = layout.problem()
    if problem is not None:
        raise ValueError(problem)
    # alwaysLoad: the CLI otherwise defers MCP tools behind its tool search, and the model
    # sees only their names (calling them directly fails): search_memory is the agent's one
    # road to its archive, so its schema is always in the request.
    server = {**memory_server(layout), "alwaysLoad": True}
    return AgentMemory(
        hooks=memory_hooks(layout.root, env=env),
        mcp_servers={SERVER_NAME: server},
        allowed_tools=list(ALLOWED_TOOLS),
        system_prompt_append=load_memory(layout, tools=Tools.mcp(TOOL_PREFIX)),
    )
