"""`wsd run` as a real process: signals, idle footprint, config errors, logs, start-up retries."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.conftest import daemon_env, running_daemon, scalar, start_daemon, venv_script, wsd
from tests.conftest import wait_for as _wait
from wsd.daemon.runtime import signals
from wsd.daemon.runtime.signals import SignalPolicy
from wsd.daemon.standin.bridge import BridgeStandin, Fault
from wsd.schema.layout import Layout

TOKEN = "sprite-token-DO-NOT-LOG-7f3a9c"


def _env(layout: Layout, bridge: BridgeStandin, **extra: str) -> dict[str, str]:
    return daemon_env(
        layout, bridge, TOKEN, **({"WSD_POLL_SECONDS": "0.1", "WSD_BATCH_TURNS": "3"} | extra)
    )


def _hook(env: dict[str, str], event: dict[str, Any]) -> None:
    subprocess.run([venv_script("wsd-hook")], input=json.dumps(event).encode(), env=env, check=True)


def _turns(env: dict[str, str], n: int, session: str = "p1") -> None:
    for i in range(n):
        _hook(
            env,
            {
                "hook_event_name": "UserPromptSubmit",
                "session_id": session,
                "prompt": f"I prefer green tea, turn {i}.",
            },
        )
        _hook(
            env,
            {
                "hook_event_name": "Stop",
                "session_id": session,
                "last_assistant_message": f"Noted {i}.",
            },
        )


def _status(env: dict[str, str]) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(wsd(env, "status", "--json").stdout)
    return report


def _events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]


def test_running_daemon_curates_hook_turns_into_memory(layout: Layout, tmp_path: Path) -> None:
    """Turns written by wsd-hook become learnings and md files through a running daemon."""
    from wsd.daemon.standin import rule_curator

    with BridgeStandin(responder=rule_curator.responder) as bridge:
        env = _env(layout, bridge)
        with running_daemon(env, tmp_path / "d.log"):
            _turns(env, 3)
            assert _wait(lambda: scalar(layout.memory_db, "SELECT count(*) FROM batches") >= 1)
            assert (
                scalar(layout.memory_db, "SELECT count(*) FROM learnings WHERE type = 'preference'")
                >= 1
            )
            # The md files are written from the revision right after the ledger commits.
            user_md = Path(layout.md("user.md"))
            assert _wait(lambda: user_md.exists() and "green tea" in user_md.read_text())
    log = (tmp_path / "d.log").read_text()
    assert TOKEN not in log
    # The token authenticates us to the Bridge: in the auth header, nowhere else.
    for request in bridge.requests:
        assert TOKEN in (request.header("authorization") or "") + (
            request.header("x-api-key") or ""
        )
        assert TOKEN.encode() not in request.body
    batch = next(e for e in _events(tmp_path / "d.log") if e["event"] == "batch")
    for key in (
        "batch_id",
        "turns",
        "learnings",
        "actions",
        "files_updated",
        "input_tokens",
        "output_tokens",
        "cached_tokens",
        "cost_usd",
        "latency_ms",
        "attempts",
    ):
        assert key in batch


def test_sigterm_during_a_slow_call_exits_promptly_and_the_batch_is_redone(
    layout: Layout, tmp_path: Path
) -> None:
    """SIGTERM while the curator call hangs exits 0 within seconds; the next run redoes it."""
    with BridgeStandin(latency=60) as bridge:
        env = _env(layout, bridge)
        proc = start_daemon(env, tmp_path / "d.log")
        _turns(env, 3)
        assert _wait(lambda: len(bridge.requests) >= 1)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert time.monotonic() - started < 5
        assert scalar(layout.memory_db, "SELECT count(*) FROM batches") == 0
        bridge.latency = 0
        with running_daemon(env, tmp_path / "d.log") as proc:
            assert _wait(
                lambda: (
                    scalar(layout.memory_db, "SELECT count(*) FROM batches WHERE status = 'done'")
                    == 1
                )
            )
    events = [e["event"] for e in _events(tmp_path / "d.log")]
    assert "batch_abandoned" in events


def test_sigusr1_writes_every_threads_stack_to_the_log_and_the_daemon_goes_on(
    layout: Layout, tmp_path: Path
) -> None:
    """kill -USR1 dumps each thread's stack (the main thread's loop among them) to stderr;
    the daemon keeps running and still stops cleanly on SIGTERM."""
    log = tmp_path / "d.log"
    with BridgeStandin() as bridge, running_daemon(_env(layout, bridge), log) as proc:
        assert _wait(lambda: b'"started"' in log.read_bytes())
        proc.send_signal(signals.DUMP_SIGNAL)
        # the main thread's loop, in the worker's run(), is among the stacks
        assert _wait(lambda: re.search(rb"worker\.py\", line \d+ in run\n", log.read_bytes()))
        assert "watcher.py" in log.read_text()  # and a background thread's
        time.sleep(0.5)
        assert proc.poll() is None


def test_second_signal_aborts_at_once() -> None:
    """The first signal asks for a graceful stop; the second raises SystemExit(128+signum)."""
    asked: list[int] = []
    policy = SignalPolicy(lambda: asked.append(1))
    policy(signal.SIGTERM, None)
    assert asked == [1]
    with pytest.raises(SystemExit) as info:
        policy(signal.SIGTERM, None)
    assert info.value.code == 128 + signal.SIGTERM


def test_background_threads_and_their_children_never_take_the_stop_signals() -> None:
    """Threads from signals.background (and threads they start) block SIGTERM and SIGINT."""
    masks: dict[str, set[int]] = {}

    def record(name: str) -> None:
        masks[name] = set(signal.pthread_sigmask(signal.SIG_BLOCK, []))

    def parent() -> None:
        record("parent")
        child = threading.Thread(target=record, args=("child",))
        child.start()
        child.join()

    signals.background(parent, "test-parent").join(5)
    assert set(signals.STOP_SIGNALS) <= masks["parent"]
    assert set(signals.STOP_SIGNALS) <= masks["child"]
    assert not set(signals.STOP_SIGNALS) & set(signal.pthread_sigmask(signal.SIG_BLOCK, []))


def _listening() -> set[str]:
    """``socket:[inode]`` of listening Unix sockets: the semantic socket is an address the
    daemon offers, not a connection it holds."""
    with open("/proc/net/unix", encoding="ascii") as fh:
        rows = [line.split() for line in fh.readlines()[1:]]
    return {f"socket:[{r[6]}]" for r in rows if len(r) >= 7 and int(r[3], 16) & 0x10000}


def _open_files(pid: int) -> list[str]:
    out = []
    listening = _listening()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(FileNotFoundError):  # closed while we looked
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target not in listening:
                out.append(target)
    return out


def test_idle_daemon_holds_no_database_file_or_socket(layout: Layout, tmp_path: Path) -> None:
    """After curating, the idle daemon holds no .db/-wal/-shm file and no socket open
    (its semantic socket listens: an address, not a held connection).

    "Holds" means across time: the file index's periodic checks open a database
    for a few milliseconds, so an fd seen in one sample but gone 200 ms later is
    a pass, not a hold. Sampled 15 times over 3 s.
    """
    with BridgeStandin() as bridge:
        env = _env(layout, bridge)
        with running_daemon(env, tmp_path / "d.log") as proc:
            _turns(env, 3)
            assert _wait(lambda: scalar(layout.memory_db, "SELECT count(*) FROM batches") == 1)
            time.sleep(1.0)  # let it go idle
            samples = []
            for _ in range(15):
                files = _open_files(proc.pid)
                samples.append({f for f in files if ".db" in f or f.startswith("socket:")})
                time.sleep(0.2)
            held = [a & b for a, b in itertools.pairwise(samples)]
            assert all(not h for h in held), held
            assert sum(1 for s in samples if s) <= 3, samples


@pytest.mark.parametrize(
    ("var", "value", "message"),
    [
        ("WSD_BATCH_TURNS", "many", "WSD_BATCH_TURNS='many'"),
        ("WSD_POLL_SECONDS", "-1", "WSD_POLL_SECONDS='-1'"),
        ("WSD_LOG_FORMAT", "xml", "WSD_LOG_FORMAT='xml'"),
        ("ANTHROPIC_BASE_URL", "", "ANTHROPIC_BASE_URL is not set"),
        ("ANTHROPIC_BASE_URL", "ftp://bridge", "ANTHROPIC_BASE_URL='ftp://bridge'"),
    ],
)
def test_bad_config_exits_non_zero_naming_the_field(
    layout: Layout, var: str, value: str, message: str
) -> None:
    """A bad setting stops `wsd run` at once with exit 2 and a message naming it and its value."""
    env = {
        **os.environ,
        "WSD_WORKSPACE": layout.root,
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "WSD_BRIDGE_TOKEN": TOKEN,
        var: value,
    }
    result = wsd(env, "run", check=False, timeout=30)
    assert result.returncode == 2
    assert message in result.stderr
    assert TOKEN not in result.stderr + result.stdout


def test_newer_schema_exits_non_zero(layout: Layout) -> None:
    """A memory.db from newer code makes `wsd run` exit 2 with a clear message, touching nothing."""
    conn = apsw.Connection(layout.memory_db)
    conn.execute("PRAGMA user_version = 77")
    conn.close()
    env = {
        **os.environ,
        "WSD_WORKSPACE": layout.root,
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "WSD_BRIDGE_TOKEN": TOKEN,
    }
    result = wsd(env, "run", check=False, timeout=30)
    assert result.returncode == 2
    assert "schema version 77" in result.stderr


def test_transient_start_up_problem_is_retried_in_process(tmp_path: Path) -> None:
    """A workspace that cannot be opened yet is retried inside the process, not by dying."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".os").write_text("not a directory yet")  # e.g. a volume still mounting
    layout = Layout(str(root))
    with BridgeStandin() as bridge:
        env = _env(layout, bridge, WSD_WATCH="false")
        with running_daemon(env, tmp_path / "d.log") as proc:
            assert _wait(lambda: "start_retry" in (tmp_path / "d.log").read_text(), 10)
            assert proc.poll() is None
            (root / ".os").unlink()
            assert _wait(lambda: '"event": "started"' in (tmp_path / "d.log").read_text(), 15)


def test_bridge_errors_are_logged_rate_limited_without_the_token(
    layout: Layout, tmp_path: Path
) -> None:
    """A Bridge refusing the token is logged once per interval, never with the token itself."""
    with BridgeStandin() as bridge:
        bridge.responder = lambda body: Fault.http_error(
            401, "authentication_error", f"bad token {TOKEN}"
        )
        env = _env(layout, bridge, WSD_OUTAGE_BACKOFF="0.2", WSD_OUTAGE_BACKOFF_MAX="0.2")
        with running_daemon(env, tmp_path / "d.log"):
            _turns(env, 3)
            assert _wait(lambda: len(bridge.requests) >= 5)
    events = _events(tmp_path / "d.log")
    errors = [e for e in events if e["event"] == "bridge_unavailable"]
    assert 1 <= len(errors) < len(bridge.requests)
    assert TOKEN not in (tmp_path / "d.log").read_text()
    assert all(e.get("level") for e in events)
    report = _status(env)
    assert report["bridge_errors"] >= 1 and report["backlog"] == 3
    assert TOKEN not in json.dumps(report)


def test_status_reports_backlog_and_heartbeat(layout: Layout, tmp_path: Path) -> None:
    """`wsd status --json` shows the running daemon's heartbeat, backlog and last batch."""
    with BridgeStandin() as bridge:
        env = _env(layout, bridge, WSD_BATCH_TURNS="25")
        with running_daemon(env, tmp_path / "d.log"):
            _turns(env, 2)
            assert _wait(lambda: (Path(layout.memory_dir) / "daemon.status.json").exists())
            report = _status(env)
            assert report["daemon_running"] is True
            assert report["backlog"] == 2 and report["oldest_pending_age_s"] >= 0
            assert report["heartbeat_age_s"] is not None and report["heartbeat_age_s"] < 15
            wsd(env, "flush", "--wait", "20")
            report = _status(env)
            assert report["backlog"] == 0
            assert report["last_batch"]["status"] == "done"


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return int(fh.read().split("VmRSS:")[1].split()[0])


def test_daemon_keeps_the_sdk_while_turns_wait_and_sheds_once_all_are_curated(
    layout: Layout, tmp_path: Path
) -> None:
    """Pending turns below the batch threshold keep the SDK loaded; once curated it is shed."""
    with BridgeStandin() as bridge:
        env = _env(
            layout,
            bridge,
            WSD_BATCH_TURNS="25",
            WSD_IDLE_SECONDS="3600",
            WSD_SHED_MEMORY_SECONDS="1",
        )
        log = tmp_path / "d.log"
        with running_daemon(env, log) as proc:
            assert _wait(lambda: any(e["event"] == "started" for e in _events(log)))
            before = _rss_kb(proc.pid)
            _turns(env, 3)  # pending, waiting for more: prepare() imports the SDK
            assert _wait(lambda: _rss_kb(proc.pid) > before + 20_000, 20)
            time.sleep(3.0)  # three shed delays with work waiting
            assert "reexec" not in [e["event"] for e in _events(log)]
            assert scalar(layout.memory_db, "SELECT count(*) FROM batches") == 0
            wsd(env, "flush")
            assert _wait(lambda: scalar(layout.memory_db, "SELECT count(*) FROM batches") == 1)
            assert _wait(lambda: "reexec" in [e["event"] for e in _events(log)], 20)


def test_sigterm_during_the_memory_shedding_re_exec_still_exits_0(
    layout: Layout, tmp_path: Path
) -> None:
    """A SIGTERM landing while the daemon re-executes itself is handled: exit 0, not -15."""
    with BridgeStandin() as bridge:
        env = _env(layout, bridge, WSD_SHED_MEMORY_SECONDS="0.5")
        log = tmp_path / "d.log"
        with running_daemon(env, log):
            _turns(env, 3)
            assert _wait(lambda: scalar(layout.memory_db, "SELECT count(*) FROM batches") == 1)
            # The reexec line is written just before execv: signal at once, mid-exec.
            assert _wait(lambda: '"reexec"' in log.read_text(), 20, every=0.001)
    assert [e["event"] for e in _events(log)][-1] == "stopped"


def test_idle_daemon_sheds_the_sdk_by_re_executing_in_place(layout: Layout, tmp_path: Path) -> None:
    """After curating then idling, the daemon re-executes itself (same PID) without the SDK."""
    with BridgeStandin() as bridge:
        env = _env(layout, bridge, WSD_SHED_MEMORY_SECONDS="1.5")
        with running_daemon(env, tmp_path / "d.log") as proc:
            _turns(env, 3)
            assert _wait(lambda: scalar(layout.memory_db, "SELECT count(*) FROM batches") == 1)
            loaded = _rss_kb(proc.pid)
            assert _wait(lambda: '"reexec"' in (tmp_path / "d.log").read_text(), 20)
            assert _wait(lambda: (tmp_path / "d.log").read_text().count('"started"') == 2, 20)
            time.sleep(0.5)
            assert proc.poll() is None
            shed = _rss_kb(proc.pid)
            assert shed < loaded - 20_000, (loaded, shed)
            _turns(env, 3, session="after")  # and it still works afterwards
            assert _wait(lambda: scalar(layout.memory_db, "SELECT count(*) FROM batches") == 2)
    started = [e for e in _events(tmp_path / "d.log") if e["event"] == "started"]
    assert len({e["pid"] for e in started}) == 1
