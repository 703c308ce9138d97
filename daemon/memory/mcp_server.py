"""``wsd mcp``: the memory tools as a stdio MCP server, for Claude Code (and any MCP host).

The same two tools, with the same descriptions, schemas and answers, as the Agent SDK's
in-process server (:mod:`wsd.daemon.memory.agent`): ``search_memory`` (read-only) and
``resolve_action`` (close a pending action). Built on the official ``mcp`` package's
low-level server so the schemas are exactly the ones the SDK helper sends. Its output is
never captured back: the capture hooks drop the output of every ``mcp__*memory*__``
call (see :func:`wsd.hooks.capture.is_memory_call`).

The Claude Code plugin (``deploy/claude-plugin``, rendered by ``wsd bootstrap``) starts it
with ``alwaysLoad`` so its schemas are in every request, never deferred behind a tool search.
"""

from __future__ import annotations

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


def serve(layout: Layout) -> int:
    """Serve the memory tools of ``layout`` on stdin/stdout until the client goes away."""
    import anyio
    from mcp import types
    from mcp.server.lowlevel.server import Server
    from mcp.server.stdio import stdio_server

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
            result: dict[str, Any] = {
                "content": [{"type": "text", "text": f"unknown tool {params.name!r}"}],
                "is_error": True,
            }
        else:  # SQLite off the event loop, as the SDK helper does
            result = await anyio.to_thread.run_sync(handler, layout, dict(params.arguments or {}))
        content: list[types.ContentBlock] = [
            types.TextContent(type="text", text=b["text"]) for b in result["content"]
        ]
        return types.CallToolResult(content=content, is_error=bool(result.get("is_error")))

    server: Server[Any] = Server(SERVER_NAME, on_list_tools=list_tools, on_call_tool=call_tool)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
    return 0
