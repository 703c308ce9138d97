"""``wsd mcp``: the memory tools as a stdio MCP server, for Claude Code (and any MCP host).

The same two tools, with the same descriptions, schemas and answers, as the Agent SDK's
in-process server (:mod:`wsd.daemon.memory.agent`): ``search_memory`` (read-only) and
``resolve_action`` (close a pending action). Built on the official ``mcp`` package's
low-level server so the schemas are exactly the ones the SDK helper sends. Its output is
never captured back: the capture hooks drop the output of every ``mcp__*memory*__``
call (see :func:`wsd.hooks.capture.is_memory_call`).

The Claude Code plugin (``deploy/claude-plugin``, rendered by ``wsd bootstrap``) starts it
with ``alwaysLoad`` so its schemas are in every request, never deferred behind a tool search.

Malformed input gets its JSON-RPC error, never silence (the SDK's stdio transport drops a line
it cannot read without a word, and a client waits for an answer that never comes): each line
is sifted (:func:`sift`) before the SDK sees it, and answered ``-32700`` (not JSON; id null),
``-32600`` (not a request: a batch array, which MCP no longer has, a non-object, no
``jsonrpc: "2.0"``, a method or id of the wrong type; with the id when it has one) or
``-32602`` (``params`` not an object). The SDK answers ``-32601`` for an unknown method and
``-32602`` for a ``tools/call`` whose arguments are no object; an unknown tool name is
``-32602`` here, as the MCP specification has it.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

from wsd.daemon.memory.agent import (
    ACTION_DESCRIPTION,
    ACTION_SCHEMA,
    ACTION_TOOL,
    SEARCH_DESCRIPTION,
    SEARCH_SCHEMA,
    SEARCH_TOOL,
    SERVER_NAME,
    run_resolve,
    run_search,
)
from wsd.schema.layout import Layout

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602


def sift(line: str, check: Callable[[str], object] = json.loads) -> dict[str, Any] | None:
    """None if ``line`` is a JSON-RPC message to hand on (``check``, the SDK's own reading,
    accepts it), else the error answering it (``{}`` for a notification, which is never
    answered: a well-formed one with bad ``params`` is only dropped)."""
    try:
        message = json.loads(line)
    except ValueError as exc:
        return _error(None, PARSE_ERROR, "Parse error", f"not JSON: {exc}")
    except RecursionError:  # one very deeply nested line ended the server (issue 45)
        return _error(None, PARSE_ERROR, "Parse error", "nested too deeply to read")
    if isinstance(message, list):
        return _error(None, INVALID_REQUEST, "Invalid Request", "batches are not supported")
    if not isinstance(message, dict):
        return _error(None, INVALID_REQUEST, "Invalid Request", "a message is a JSON object")
    raw_id = message.get("id")
    good_id = isinstance(raw_id, str) or (type(raw_id) is int and abs(raw_id) < 2**63)
    message_id = raw_id if good_id else None
    is_response = "id" in message and (("result" in message) != ("error" in message))
    if "id" in message and not good_id:
        why = "id must be a string or an integer"
    elif message.get("jsonrpc") != "2.0":
        why = 'jsonrpc must be "2.0"'
    elif "method" in message and not isinstance(message["method"], str):
        why = "method must be a string"
    elif "method" not in message and not is_response:
        why = "no method (nor a response's result or error)"
    elif not isinstance(message.get("params"), dict | None):
        if "id" not in message:
            return {}
        return _error(message_id, INVALID_PARAMS, "Invalid params", "params must be an object")
    else:
        try:
            check(line)
        except RecursionError:
            why = "nested too deeply to read"
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            if "id" not in message and not is_response:
                return {}
            why = " ".join(str(exc).split())[:300]
        else:
            return None
    return _error(message_id, INVALID_REQUEST, "Invalid Request", why)


def _error(message_id: str | int | None, code: int, text: str, data: str) -> dict[str, Any]:
    error = {"code": code, "message": text, "data": data}
    return {"jsonrpc": "2.0", "id": message_id, "error": error}


class _Unowned(io.TextIOWrapper):
    """stdin's text layer, whose closing leaves sys.stdin's buffer open (as the SDK's)."""

    def close(self) -> None:
        with contextlib.suppress(ValueError):
            self.detach()


def serve(layout: Layout) -> int:
    """Serve the memory tools of ``layout`` on stdin/stdout until the client goes away."""
    import anyio
    from mcp import types
    from mcp.server.lowlevel.server import Server
    from mcp.server.stdio import stdio_server
    from mcp.shared.exceptions import MCPError
    from mcp.shared.message import SessionMessage

    tools = [
        types.Tool(name=SEARCH_TOOL, description=SEARCH_DESCRIPTION, input_schema=SEARCH_SCHEMA),
        types.Tool(name=ACTION_TOOL, description=ACTION_DESCRIPTION, input_schema=ACTION_SCHEMA),
    ]
    handlers = {SEARCH_TOOL: run_search, ACTION_TOOL: run_resolve}

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        handler = handlers.get(params.name)
        if handler is None:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name}")
        # SQLite off the event loop, as the SDK helper does
        result = await anyio.to_thread.run_sync(handler, layout, dict(params.arguments or {}))
        content: list[types.ContentBlock] = [
            types.TextContent(type="text", text=b["text"]) for b in result["content"]
        ]
        return types.CallToolResult(content=content, is_error=bool(result.get("is_error")))

    server: Server[Any] = Server(
        SERVER_NAME, version=_version(), on_list_tools=list_tools, on_call_tool=call_tool
    )

    stdin = anyio.wrap_file(_Unowned(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    out: list[Any] = []  # the write stream, once stdio_server has made it
    ready = anyio.Event()

    def check(line: str) -> None:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)

    async def lines() -> AsyncIterator[str]:
        """stdin's lines that are messages; the others are answered here, at once (so every
        answer is out before the SDK sees the end of stdin and closes its output)."""
        await ready.wait()
        async for line in stdin:
            error = sift(line, check) if line.strip() else {}
            if error is None:
                yield line
            elif error:
                with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                    message = types.jsonrpc_message_adapter.validate_python(error)
                    await out[0].send(SessionMessage(message))

    async def main() -> None:
        async with stdio_server(stdin=lines()) as (read, write):  # type: ignore[arg-type]
            out.append(write)
            ready.set()
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
    return 0


def _version() -> str:
    """The package's version, for the handshake's serverInfo (it was empty)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("workspace-daemon")
    except PackageNotFoundError:
        return "unknown"
