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
#: What daemon/memory/mcp_server.py imports of the SDK, in a bare interpreter.
_SDK_IMPORT = (
    "from mcp import types; from mcp.server.lowlevel.server import Server;"
    " from mcp.server.stdio import stdio_server; from mcp.shared.exceptions import MCPError;"
    " from mcp.shared.message import SessionMessage"
)


def _until_tools(wsd: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.Popen([wsd, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
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
    """Median start -> tools/list answered, and the SDK's import alone, alternated."""
    python = sys.executable
    wsd = str(Path(python).parent / "wsd")
    with tempfile.TemporaryDirectory() as tmp:
        init_workspace(Layout(tmp), templates=None)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["WSD_WORKSPACE"] = tmp
        _until_tools(wsd, env)  # bytecode written, page cache warm
        whole, sdk = [], []
        for _ in range(runs):
            whole.append(_until_tools(wsd, env))
            started = time.perf_counter()
            subprocess.run([python, "-c", _SDK_IMPORT], env=env, check=True)
            sdk.append(time.perf_counter() - started)
    ours = median(whole) - median(sdk)
    return [
        Row("wsd mcp: start -> tools/list answered", median(whole), "s", "-", None, f"n={runs}"),
        Row("  of which python + the MCP SDK import", median(sdk), "s", "-", None, "stays"),
        Row(
            "  what the project adds",
            ours,
            "s",
            "<= 0.25",
            ours <= 0.25,
            "our imports, the workspace check, the server's set-up",
        ),
    ]
