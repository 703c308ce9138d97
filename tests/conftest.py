"""Shared fixtures: real workspaces with real SQLite files under tmp_path."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import apsw
import pytest

from wsd import schema
from wsd.daemon.curation.loop.worker import Worker
from wsd.daemon.memory.transfer import importer
from wsd.daemon.ops.bootstrap import init_workspace
from wsd.daemon.ops.wiring import build_worker
from wsd.daemon.runtime.config import Config
from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.store import Store
from wsd.hooks.capture import Capture, CaptureConfig
from wsd.schema.layout import Layout
from wsd.schema.transcript import request_flush

VENV_BIN = Path(sys.executable).parent
#: How long a daemon may take to stop on SIGTERM: the deployed program's stopwaitsecs.
STOP_WAIT_SECONDS = int(
    re.findall(
        r"^stopwaitsecs=(\d+)$",
        (Path(__file__).parent.parent / "deploy/supervisor/wsd.conf.in").read_text(),
        re.M,
    )[0]
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slow tests run first (stable order otherwise): handed out one by one (`make test`
    passes --maxschedchunk), the long ones then overlap the short ones instead of making a
    tail. Measured on 2 cores, 3 workers: a suite whose 200 s kill -9 tests came last."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


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
    """An initialised workspace (both databases migrated, no soul.md/os.md templates, so a
    test decides every memory file) in a temporary folder."""
    root = tmp_path / "ws"
    root.mkdir()
    lay = Layout(str(root))
    init_workspace(lay, templates=None)
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
    """A daemon Config for tests: fast timeouts, small batches, no file watching, and the
    prompt lane (a direct call per batch) unless a test asks for ``curation="economy"``."""
    base: dict[str, Any] = {
        "curation": "prompt",
        "economy_poll_seconds": 0.2,
        "economy_poll_max_seconds": 1.0,
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
    layout: Layout,
    standin: BridgeStandin,
    stop: threading.Event | None = None,
    *,
    clock: Callable[[], float] = time.time,
    monotonic: Callable[[], float] = time.monotonic,
    **overrides: Any,
) -> Worker:
    """A Worker wired as ``wsd run`` wires it (real stores, a real Bridge client aimed at the
    stand-in), on the given clocks."""
    config = make_config(layout, standin, **overrides)
    stop = stop or threading.Event()
    return build_worker(config, Store(layout), stop, clock=clock, monotonic=monotonic)


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


def import_lines(layout: Layout, lines: list[str] | list[bytes]) -> importer.Imported:
    """JSON lines of learnings stored through ``wsd import -``'s importer (the one importer:
    every line read, or none stored)."""
    data = b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines)
    return importer.run(Layout(layout.root), Store(layout), "-", stdin=io.BytesIO(data))


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


def scalar(path: str, sql: str, args: tuple[Any, ...] = ()) -> Any:
    """The first column of the first row of one query (see :func:`query`)."""
    return query(path, sql, args)[0][0]


#: A bound on CPU seconds that only a blow-up crosses (a regex backtracking on 30 KB is
#: seconds to hours); how fast the code is, is `make bench`'s to say.
BLOWUP_CPU_SECONDS = 2.0


def cpu_seconds(work: Callable[[], T]) -> tuple[float, T]:
    """``work()``'s result and the CPU time this thread spent on it. Unlike the wall clock,
    other processes on a shared machine do not inflate it (CI, once: a 0.5 s wall-clock
    bound met 0.64 s under parallel test workers)."""
    started = time.thread_time()
    result = work()
    return time.thread_time() - started, result


def litestream_pids(under: str) -> list[int]:
    """The pids of every litestream process whose arguments name a path under ``under``
    (a workspace's replicate and followers outlive a daemon killed with -9, by design)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"litestream") and any(under.encode() in a for a in argv):
            found.append(int(pid))
    return found


def kill_litestreams(under: str) -> None:
    """SIGKILL every litestream of :func:`litestream_pids` (a test that failed midway)."""
    for pid in litestream_pids(under):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def wait_for(predicate: Callable[[], Any], timeout: float = 30.0, every: float = 0.05) -> bool:
    """Poll ``predicate`` every ``every`` seconds until it is true or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return False


# -- ``wsd`` as a real process ---------------------------------------------------------


def daemon_env(
    layout: Layout, bridge: BridgeStandin, token: str = "test-sprite-token", **extra: str
) -> dict[str, str]:
    """Environment of a ``wsd`` process on ``layout`` talking to ``bridge``: JSON logs, a short
    poll, the prompt lane (``WSD_CURATION=economy`` in ``extra`` for the economy lane, polled
    every 0.2-1 s), ``extra`` on top, and no ``WSD_``/``ANTHROPIC_`` variable leaking in from
    the shell."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WSD_", "ANTHROPIC_"))}
    return env | {
        "WSD_WORKSPACE": layout.root,
        "ANTHROPIC_BASE_URL": bridge.url,
        "WSD_BRIDGE_TOKEN": token,
        "WSD_LOG_FORMAT": "json",
        "WSD_POLL_SECONDS": "0.2",
        "WSD_CURATION": "prompt",
        "WSD_ECONOMY_POLL_SECONDS": "0.2",
        "WSD_ECONOMY_POLL_MAX_SECONDS": "1",
        **extra,
    }


def start_daemon(
    env: dict[str, str], log: Path, preexec_fn: Callable[[], None] | None = None
) -> subprocess.Popen[bytes]:
    """``wsd run`` in the background, its stdout and stderr appended to ``log``."""
    with open(log, "ab") as fh:
        return subprocess.Popen(
            [venv_script("wsd"), "run"],
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            preexec_fn=preexec_fn,
        )


@contextlib.contextmanager
def running_daemon(
    env: dict[str, str], log: Path, preexec_fn: Callable[[], None] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """``wsd run`` for the length of the block; SIGTERM then, and it must exit 0. A block
    that fails prints the daemon's last log lines (a flake on CI is diagnosed from them)."""
    proc = start_daemon(env, log, preexec_fn)
    try:
        yield proc
    except BaseException:
        with contextlib.suppress(OSError):
            tail = log.read_bytes()[-6000:].decode("utf-8", "replace")
            print(f"--- the daemon's log ({log.name}), last lines ---\n{tail}", file=sys.stderr)
        raise
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            # The deployed program's stopwaitsecs (deploy/supervisor/wsd.conf.in): what
            # supervisord gives a graceful stop before it kills (CI once saw a stop over 15 s).
            code = proc.wait(timeout=STOP_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            # Slow to stop: what each thread was doing goes to the log, then it is shown.
            proc.send_signal(signal.SIGUSR1)
            time.sleep(1)
            proc.kill()
            proc.wait()
            tail = log.read_bytes()[-12000:].decode("utf-8", "replace")
            print(
                f"--- the daemon did not stop in {STOP_WAIT_SECONDS} s; its log ---\n{tail}",
                file=sys.stderr,
            )
            raise
        assert code == 0


def wsd(
    env: dict[str, str], *args: str, check: bool = True, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """One ``wsd`` command run to completion (at most ``timeout`` s), its output captured as
    text; with ``check`` it must exit 0 (the failure shows its stderr)."""
    try:
        result = subprocess.run(
            [venv_script("wsd"), *args], env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as exc:  # say what it was doing (a CI flake's evidence)
        said = [
            (s if isinstance(s, str) else (s or b"").decode("utf-8", "replace"))[-2000:]
            for s in (exc.stdout, exc.stderr)
        ]
        raise AssertionError(
            f"wsd {' '.join(args)}: still running after {timeout:.0f} s;"
            f" stdout: {said[0]!r}; stderr: {said[1]!r}"
        ) from None
    if check:
        assert result.returncode == 0, (
            f"wsd {' '.join(args)}: exit {result.returncode}: " + (result.stderr[-2000:])
        )
    return result


# -- deploy/bootstrap.sh as an operator runs it ------------------------------------------

REPO = Path(__file__).resolve().parent.parent


def bootstrap_sh(
    root: Path | str, venv: Path, *args: str, **extra: str
) -> subprocess.CompletedProcess[str]:
    """deploy/bootstrap.sh on the workspace ``root`` with the venv ``venv`` (version 7.0)."""
    env = {**os.environ, "WSD_WORKSPACE": str(root), "WSD_VENV": str(venv), "WSD_VERSION": "7.0"}
    return subprocess.run(
        ["bash", str(REPO / "deploy" / "bootstrap.sh"), *args],
        env=env | extra,
        capture_output=True,
        text=True,
        timeout=120,
    )


def fake_venv(folder: Path) -> Path:
    """A venv whose commands are the project's, marked as already holding version 7.0.

    bootstrap.sh then skips `pip install` (no network in tests) but runs every other step.
    """
    venv = folder / "venv"
    (venv / "bin").mkdir(parents=True)
    for name in ("python", "wsd", "supervisord", "supervisorctl"):
        (venv / "bin" / name).symlink_to(VENV_BIN / name)
    (venv / ".wsd-installed-version").write_text("7.0\n")
    return venv
