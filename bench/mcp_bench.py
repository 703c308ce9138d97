"""``wsd mcp`` start-up: from the process's start to ``tools/list`` answered, the wait every
Claude Code session pays before its first request (issue 21), beside the official MCP SDK's
own import in the same run (that part stays: the protocol is not hand-written to save it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import Row, median
from wsd.daemon.ops.bootstrap import init_workspace
from wsd.schema.layout import Layout

_HANDSHAKE = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]
#: The reference: the smallest stdio server the same SDK makes (one tool, the SDK's own
#: transport), measured exactly as ``wsd mcp`` is. An import alone was not a sound reference:
#: it paid the interpreter's exit, which the measured server (killed) never does, so the
#: difference came out negative (0.62 s whole against 0.84 s for the import).
_REFERENCE = """
import anyio
from mcp import types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

tools = [types.Tool(name="t", description="d", input_schema={"type": "object"})]

async def list_tools(_ctx, _params):
    return types.ListToolsResult(tools=tools)

async def main():
    server = Server("reference", on_list_tools=list_tools)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main)
"""


def _until_tools(command: list[str], env: dict[str, str]) -> float:
    """Seconds from starting ``command`` to its answer to ``tools/list``."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in _HANDSHAKE))
    proc.stdin.flush()
    while True:
        line = proc.stdout.readline()
        if not line or b'"id":2' in line.replace(b" ", b""):
            break
    took = time.perf_counter() - started
    proc.kill()
    proc.wait()
    return took


def mcp_start(runs: int = 9) -> list[Row]:
    """Median start -> tools/list answered, for ``wsd mcp`` and the SDK's smallest server,
    alternated in one run."""
    python = sys.executable
    wsd = str(Path(python).parent / "wsd")
    with tempfile.TemporaryDirectory() as tmp:
        init_workspace(Layout(tmp), templates=None)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["WSD_WORKSPACE"] = tmp
        ours, reference = [wsd, "mcp"], [python, "-c", _REFERENCE]
        _until_tools(ours, env)  # bytecode written, page cache warm
        _until_tools(reference, env)
        whole, sdk = [], []
        for _ in range(runs):
            whole.append(_until_tools(ours, env))
            sdk.append(_until_tools(reference, env))
    added = median(whole) - median(sdk)
    ratio = median(whole) / median(sdk)
    return [
        Row("wsd mcp: start -> tools/list answered", median(whole), "s", "-", None, f"n={runs}"),
        Row("  the SDK's smallest server, alike", median(sdk), "s", "-", None, "stays"),
        Row(
            "  wsd mcp / the SDK's smallest server",
            ratio,
            "x",
            f"<= {MCP_TARGET:g}",
            ratio <= MCP_TARGET,
            f"what the project adds: {added * 1000:.0f} ms (our imports, the workspace check,"
            " the server's set-up)",
        ),
    ]


#: wsd mcp's start over the SDK's smallest server's, alternated (mcp_start): 1.10 and 1.10
#: on this tree (issue 36), so 1.25 fails a 20 % regression (it was 250 ms, 1.47x).
MCP_TARGET = 1.25
