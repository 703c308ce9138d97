"""`wsd mcp` answers every malformed line with its JSON-RPC error (never silence), driven as an
MCP host drives it: a subprocess, raw lines on its stdin, answers read from its stdout."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import venv_script
from wsd.daemon.ops.bootstrap import init_workspace
from wsd.schema.layout import Layout

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


class Session:
    """A running ``wsd mcp``, initialised, to write raw lines to and read answers from."""

    def __init__(self, layout: Layout) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("WSD_", "ANTHROPIC_"))}
        self.proc = subprocess.Popen(
            [venv_script("wsd"), "--workspace", layout.root, "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.send(json.dumps(INIT))
        self.hello = self.answer()
        assert self.hello["id"] == 0
        self.send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")
        self.proc.stdin.flush()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(b"")

    def answer(self, timeout: float = 10.0) -> dict[str, Any]:
        """The next line the server writes (fails after ``timeout`` s of silence)."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no answer") from None
        assert line, "the server closed its output"
        message: dict[str, Any] = json.loads(line)
        return message

    def silent(self, seconds: float = 0.5) -> bool:
        try:
            self.lines.get(timeout=seconds)
        except queue.Empty:
            return True
        return False

    def close(self) -> int:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        code = self.proc.wait(10)
        self.proc.stderr.close()
        return code


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    """One server for the module: each case also shows it goes on after the one before."""
    root = tmp_path_factory.mktemp("mcp") / "ws"
    root.mkdir()
    layout = Layout(str(root))
    init_workspace(layout, templates=None)
    s = Session(layout)
    try:
        yield s
    finally:
        if s.proc.poll() is None:
            assert s.close() == 0


def _call(n: int, method: str, params: Any = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": n, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message)


MALFORMED = [
    ("{bad json", -32700, None),
    ('{"jsonrpc": "2.0", "id": 1, "method": "tools/list"', -32700, None),
    ("\udcff\udcfe", -32700, None),
    ('[{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]', -32600, None),
    ("[]", -32600, None),
    ("42", -32600, None),
    ('"tools/list"', -32600, None),
    ("null", -32600, None),
    ('{"jsonrpc": "2.0", "id": 3}', -32600, 3),
    ('{"id": 4, "method": "tools/list"}', -32600, 4),
    ('{"jsonrpc": "1.0", "id": "five", "method": "tools/list"}', -32600, "five"),
    ('{"jsonrpc": "2.0", "id": 6, "method": 6}', -32600, 6),
    ('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}', -32600, None),
    ('{"jsonrpc": "2.0", "id": null, "method": "tools/list"}', -32600, None),
    ('{"jsonrpc": "2.0", "id": true, "method": "tools/list"}', -32600, None),
    ('{"jsonrpc": "2.0", "id": 7, "result": {}, "error": {}}', -32600, 7),
    (_call(8, "tools/list", [1]), -32602, 8),
    (_call(9, "no/such/method"), -32601, 9),
    (_call(10, "tools/call", {"name": "search_memory", "arguments": "query"}), -32602, 10),
    (_call(11, "tools/call", {"arguments": {"query": "x"}}), -32602, 11),
    (_call(12, "tools/call", {"name": "no_such_tool", "arguments": {}}), -32602, 12),
    # One very deeply nested line (issue 45: the server exited with a traceback).
    ("[" * 100_000 + "]" * 100_000, -32700, None),
    ('{"jsonrpc": "2.0", "id": 13, "method": "x", "params": {"a": ' + "[" * 50_000
     + "]" * 50_000 + "}}", -32700, None),
]  # fmt: skip


@pytest.mark.parametrize("line, code, answer_id", MALFORMED, ids=[m[0][:40] for m in MALFORMED])
def test_malformed_input_gets_its_jsonrpc_error(
    session: Session, line: str, code: int, answer_id: Any
) -> None:
    """Malformed JSON is -32700 (id null), a batch, a non-object, a missing or wrong jsonrpc,
    method or id -32600 (with the id when it is one), an unknown method -32601, params or tool
    arguments that are no object and an unknown tool -32602; the session goes on after."""
    session.send(line)
    answer = session.answer()
    assert answer["jsonrpc"] == "2.0" and answer["error"]["code"] == code, answer
    assert answer["id"] == answer_id and "result" not in answer
    assert isinstance(answer["error"]["message"], str) and answer["error"]["message"]
    session.send(_call(99, "tools/list"))
    after = session.answer()
    assert after["id"] == 99 and len(after["result"]["tools"]) == 2


def test_a_notification_is_never_answered(session: Session) -> None:
    """A notification (no id) with params that are no object is dropped without an answer, as
    JSON-RPC has it; the next request is answered."""
    session.send('{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": [1]}')
    session.send('{"jsonrpc": "2.0", "method": "notifications/no_such"}')
    assert session.silent()
    session.send(_call(5, "tools/list"))
    assert session.answer()["id"] == 5


def test_bad_tool_argument_values_are_tool_errors_the_agent_reads(session: Session) -> None:
    """Arguments that are an object but hold bad values (limit "ten", no id) come back as a
    tool result marked isError with a clear message, for the model to correct."""
    arguments = {"query": "x", "limit": "ten"}
    session.send(_call(1, "tools/call", {"name": "search_memory", "arguments": arguments}))
    result = session.answer()["result"]
    assert result["isError"] is True
    assert "limit must be a whole number from 1 to 100" in result["content"][0]["text"]
    session.send(_call(2, "tools/call", {"name": "resolve_action", "arguments": {}}))
    result = session.answer()["result"]
    assert result["isError"] is True and "id is missing" in result["content"][0]["text"]


def test_errors_are_answered_before_exit(layout: Layout) -> None:
    """Bad lines written right before stdin closes are all answered, and the server exits 0."""
    s = Session(layout)
    for line in ("{", "[]", '"x"', '{"jsonrpc": "2.0", "id": 4}'):
        s.send(line)
    assert s.proc.stdin is not None
    s.proc.stdin.close()
    answers = [s.answer() for _ in range(4)]
    assert [(a["id"], a["error"]["code"]) for a in answers] == [
        (None, -32700),
        (None, -32600),
        (None, -32600),
        (4, -32600),
    ]
    assert s.lines.get(timeout=10) == b""
    assert s.proc.stderr is not None and b"Traceback" not in s.proc.stderr.read()
    assert s.close() == 0


def test_the_handshake_names_the_server_and_its_version(session: Session) -> None:
    """serverInfo carries the package's version (a new user's client saw an empty one)."""
    from importlib.metadata import version

    info = session.hello["result"]["serverInfo"]
    assert info["name"] == "memory" and info["version"] == version("workspace-daemon")
