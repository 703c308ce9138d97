"""One daemon per workspace (issue 13, item 9): a second ``wsd run`` exits at once with one
clear line, the lock survives the memory-shedding re-exec and dies with its process, and
``wsd doctor`` names whoever holds it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.conftest import (
    daemon_env,
    running_daemon,
    scalar,
    start_daemon,
    venv_script,
    wait_for,
    write_turns,
    wsd,
)
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.schema.layout import Layout


def _second(env: dict[str, str], log: Path) -> tuple[int, str]:
    """Start another ``wsd run``; (its exit code, its output) once it exits (within 20 s)."""
    proc = start_daemon(env, log)
    try:
        code = proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return code, log.read_text()


def _started(log: Path) -> int:
    return log.read_text().count('"started"') if log.exists() else 0


def test_second_wsd_run_exits_at_once_and_each_batch_is_sent_once(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """With one daemon running, a second exits non-zero with one line naming the first; the
    turns are curated by one daemon: one Bridge call per batch."""
    env = daemon_env(layout, standin, WSD_BATCH_TURNS="5")
    first = tmp_path / "first.log"
    with running_daemon(env, first) as proc:
        assert wait_for(lambda: _started(first) == 1)
        code, out = _second(env, tmp_path / "second.log")
        assert code != 0
        lines = out.strip().splitlines()
        assert len(lines) == 1 and f"pid {proc.pid}" in lines[0] and "already runs" in lines[0]
        write_turns(layout, 10, "one")
        assert wait_for(lambda: scalar(layout.memory_db, "SELECT count(*) FROM batches") == 2)
    assert len(standin.requests) == 2


def test_lock_survives_the_re_exec_and_dies_with_the_process(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """After the memory-shedding re-exec the same daemon still holds the lock (a second is
    refused); after kill -9 the kernel has released it and a new daemon starts and curates."""
    env = daemon_env(layout, standin, WSD_BATCH_TURNS="3", WSD_SHED_MEMORY_SECONDS="1")
    log = tmp_path / "d.log"
    proc = start_daemon(env, log)
    try:
        write_turns(layout, 3, "before")
        assert wait_for(lambda: scalar(layout.memory_db, "SELECT count(*) FROM batches") == 1)
        assert wait_for(lambda: '"reexec"' in log.read_text() and _started(log) == 2, 30)
        assert proc.poll() is None
        code, out = _second(env, tmp_path / "second.log")
        assert code != 0 and f"pid {proc.pid}" in out
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    after = tmp_path / "after.log"
    with running_daemon(env, after):
        write_turns(layout, 3, "after")
        assert wait_for(lambda: scalar(layout.memory_db, "SELECT count(*) FROM batches") == 2)


def test_doctor_names_a_lock_holder_that_is_not_a_daemon(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """A process that is not a daemon holds the lock: ``wsd run`` refuses to start naming it,
    and doctor fails naming it."""
    env = daemon_env(layout, standin)
    code = (
        "import fcntl, os, sys, time\n"
        "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n"
    )
    lock = os.path.join(layout.os_dir, "wsd.lock")
    holder = subprocess.Popen([sys.executable, "-c", code, lock], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        result = subprocess.run(
            [venv_script("wsd"), "run"], env=env, capture_output=True, text=True, timeout=20
        )
        assert result.returncode != 0 and f"pid {holder.pid}" in result.stderr
        doctor = wsd(env, "doctor", check=False)
        assert doctor.returncode == 1
        assert f"held by pid {holder.pid}, which is not a `wsd run`" in doctor.stdout
    finally:
        holder.kill()
        holder.wait()
