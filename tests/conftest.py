"""Shared fixtures: real workspaces with real SQLite files under tmp_path."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import apsw
import pytest

import schema
from daemon import rule_curator
from daemon.bootstrap import init_workspace
from daemon.bridge import BridgeClient
from daemon.bridge_standin import BridgeStandin
from daemon.config import Config
from daemon.store import Store
from daemon.worker import Worker
from hooks.capture import Capture, CaptureConfig
from schema.layout import Layout
from schema.transcript import request_flush

VENV_BIN = Path(sys.executable).parent


def venv_script(name: str) -> str:
    """Path of a console script installed next to the running interpreter."""
    path = VENV_BIN / name
    if not path.exists():
        pytest.fail(f"{name} is not installed next to {sys.executable}; run `make install`")
    return str(path)


def _child_daemons() -> set[int]:
    """PIDs of this process's children running ``wsd run``."""
    me, found = str(os.getpid()), set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                if fh.read().rsplit(b")", 1)[1].split()[1].decode() != me:
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
        except OSError:  # gone meanwhile
            continue
        if any(a.endswith(b"wsd") for a in argv) and b"run" in argv:
            found.add(int(pid))
    return found


@pytest.fixture(autouse=True)
def _no_leaked_daemons() -> Iterator[None]:
    """A test that fails before stopping its ``wsd run`` must not leave it running for hours."""
    before = _child_daemons()
    yield
    for pid in _child_daemons() - before:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)  # its Popen, if any, still reaps it


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    """An initialised workspace (both databases migrated) in a temporary folder."""
    root = tmp_path / "ws"
    root.mkdir()
    lay = Layout(str(root))
    init_workspace(lay)
    return lay


@pytest.fixture
def hook_env(layout: Layout) -> dict[str, str]:
    """Environment for a `wsd-hook` subprocess writing into ``layout``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WSD_")}
    env["WSD_WORKSPACE"] = layout.root
    return env


@pytest.fixture
def standin() -> Iterator[BridgeStandin]:
    """A running Bridge stand-in answering with the rule-based curator."""
    with BridgeStandin(responder=rule_curator.responder) as server:
        yield server


def make_config(layout: Layout, standin: BridgeStandin, **overrides: Any) -> Config:
    """A daemon Config for tests: fast timeouts, small batches, no file watching."""
    base: dict[str, Any] = {
        "workspace": layout.root,
        "bridge_url": standin.url,
        "api_key": "test-sprite-token",
        "batch_turns": 5,
        "request_timeout": 2.0,
        "retry_attempts": 3,
        "retry_seconds": 10.0,
        "outage_backoff": 0.5,
        "outage_backoff_max": 2.0,
        "poll_seconds": 0.05,
        "watch": False,
    }
    base.update(overrides)
    return Config(**base)


def make_worker(
    layout: Layout, standin: BridgeStandin, stop: threading.Event | None = None, **overrides: Any
) -> Worker:
    """A Worker wired to real stores and a real Bridge client aimed at the stand-in."""
    config = make_config(layout, standin, **overrides)
    stop = stop or threading.Event()
    return Worker(config, Store(layout), BridgeClient(config, stop), stop)


# -- the real Claude Agent SDK against the stand-in ---------------------------------

TOKEN = "test-sprite-token"
T = TypeVar("T")


def run_async(coro: Coroutine[Any, Any, T], timeout: float = 120) -> T:
    """Run a coroutine to completion, bounded so a wedged CLI fails the test instead."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


def sdk_env(
    standin: BridgeStandin, tmp_path: Path, *, nonessential: bool = False
) -> dict[str, str]:
    """Environment for the bundled CLI: the stand-in, a dummy token and an isolated HOME."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {"ANTHROPIC_BASE_URL": standin.url, "ANTHROPIC_API_KEY": TOKEN, "HOME": str(home)}
    if not nonessential:
        env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
    return env


# -- small helpers shared by the test modules -------------------------------------------


def write_turns(
    layout: Layout,
    n: int,
    session: str = "s1",
    start: int = 0,
    prompt: str = "Task {i}: I prefer tabs over spaces in file {i}",
) -> None:
    """n complete turns (prompt, one ``pip install`` call, answer) through the real capture
    path; ``prompt`` is formatted with the turn number ``i``."""
    cap = Capture(CaptureConfig(workspace=layout.root))
    for i in range(start, start + n):
        cap.handle(
            {
                "hook_event_name": "UserPromptSubmit",
                "session_id": session,
                "prompt": prompt.format(i=i),
            }
        )
        cap.handle(
            {
                "hook_event_name": "PostToolUse",
                "session_id": session,
                "tool_name": "Bash",
                "tool_input": {"command": f"pip install pkg{i}"},
                "tool_response": "ok",
            }
        )
        cap.handle(
            {
                "hook_event_name": "Stop",
                "session_id": session,
                "last_assistant_message": f"Done with task {i}.",
            }
        )
    cap.close()


def flush(layout: Layout) -> None:
    """Ask for everything pending to be curated now, as ``wsd flush`` does."""
    conn = schema.connect(layout.transcript_db, "transcript")
    try:
        request_flush(conn, "test", time.time())
    finally:
        conn.close()


def drain(worker: Worker, now: float | None = None, limit: int = 200) -> list[str]:
    """Call run_once until it stops asking for more; return the actions taken."""
    actions = []
    for _ in range(limit):
        result = worker.run_once(now)
        actions.append(result.action)
        if not result.more:
            return actions
    raise AssertionError(f"worker never settled: {actions[-10:]}")


def query(path: str, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows of one query on a database file (a short-lived connection, 5 s busy timeout)."""
    conn = apsw.Connection(path)
    conn.set_busy_timeout(5000)
    try:
        return [tuple(row) for row in conn.execute(sql, args)]
    finally:
        conn.close()


def wait_for(predicate: Callable[[], Any], timeout: float = 30.0, every: float = 0.05) -> bool:
    """Poll ``predicate`` every ``every`` seconds until it is true or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return False
