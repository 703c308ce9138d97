"""A rebuild leaves the workspace's state whole, a dead one leaves nothing unreported, and a
failed md write is never silent (issue 13, item 10)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tests.conftest import (
    daemon_env,
    query,
    running_daemon,
    scalar,
    venv_script,
    wait_for,
    write_turns,
    wsd,
)
from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.schema.layout import Layout

ASIDE = "memory.rebuild.db"
PAUSE = "rebuild.pause"


def _slow(standin: BridgeStandin, seconds: float) -> None:
    """Every curator call takes ``seconds``: a rebuild lasts long enough to act during it."""

    def respond(body: dict[str, Any]) -> Any:
        time.sleep(seconds)
        return rule_curator.responder(body)

    standin.responder = respond


def _rebuild(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [venv_script("wsd"), "rebuild"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _indexed(layout: Layout) -> set[str]:
    return {r[0] for r in query(layout.memory_db, "SELECT path FROM workspace_files")}


def test_rebuild_keeps_the_inventory_and_the_rows_the_watcher_writes_meanwhile(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """While ``wsd rebuild`` runs beside a live daemon, files.md always lists the workspace,
    and a file created during the rebuild is in the index after the swap."""
    Path(layout.root, "documents/before.txt").write_text("before")
    env = daemon_env(layout, standin, WSD_BATCH_TURNS="2")
    with running_daemon(env, tmp_path / "wsd.log"):
        write_turns(layout, 6, "r")
        assert wait_for(lambda: scalar(layout.memory_db, "SELECT count(*) FROM batches") == 3)
        assert wait_for(lambda: "before.txt" in _read(layout.md("files.md")))
        _slow(standin, 0.7)
        seen: list[str] = []
        done = threading.Event()

        def watch_files_md() -> None:
            while not done.is_set():
                seen.append(_read(layout.md("files.md")))
                time.sleep(0.02)

        reader = threading.Thread(target=watch_files_md)
        reader.start()
        try:
            proc = _rebuild(env)
            assert wait_for(lambda: os.path.exists(os.path.join(layout.memory_dir, ASIDE)))
            Path(layout.root, "documents/during.txt").write_text("during")
            assert wait_for(lambda: "during.txt" in _read(layout.md("files.md")))
            _out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
        finally:
            done.set()
            reader.join()
        assert seen and all("before.txt" in text for text in seen)
        assert wait_for(
            lambda: {"documents/before.txt", "documents/during.txt"} <= _indexed(layout)
        )


def test_killed_rebuild_is_reported_by_doctor_and_fixed(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """kill -9 during a rebuild: the daemon resumes, doctor fails naming memory.rebuild.db and
    rebuild.pause, ``doctor --fix`` removes them, and doctor is then quiet about it."""
    env = daemon_env(layout, standin, WSD_BATCH_TURNS="2")
    with running_daemon(env, tmp_path / "wsd.log"):
        write_turns(layout, 6, "k")
        assert wait_for(lambda: scalar(layout.memory_db, "SELECT count(*) FROM batches") == 3)
        _slow(standin, 0.7)
        proc = _rebuild(env)
        assert wait_for(lambda: os.path.exists(os.path.join(layout.memory_dir, ASIDE)))
        time.sleep(0.5)
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        standin.responder = rule_curator.responder
        write_turns(layout, 2, "after")  # the daemon is not left paused
        assert wait_for(lambda: scalar(layout.memory_db, "SELECT count(*) FROM batches") == 4)
        doctor = wsd(env, "doctor", check=False)
        assert doctor.returncode == 1
        assert f"a wsd rebuild died and left {ASIDE}" in doctor.stdout and PAUSE in doctor.stdout
        fixed = wsd(env, "doctor", "--fix", check=False)
        assert "removed what a rebuild that died left" in fixed.stdout
        assert not any(n.startswith((ASIDE, PAUSE)) for n in os.listdir(layout.memory_dir))
        again = wsd(env, "doctor", check=False)
        assert "rebuild: none running, nothing left behind" in again.stdout


def test_failed_md_write_is_visible_and_repaired_without_a_restart(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """user.md cannot be written (a folder sits in its place): ``wsd flush --wait`` exits
    non-zero naming it, status and doctor show it; once the folder is gone the daemon writes
    the file on its next pass and the boot context serves it."""
    os.mkdir(layout.md("user.md"))
    env = daemon_env(layout, standin)
    with running_daemon(env, tmp_path / "wsd.log"):
        write_turns(layout, 2, "md", prompt="Task {i}: I prefer tabs over spaces")
        flush = wsd(env, "flush", "--wait", "30", check=False)
        assert flush.returncode != 0 and "user.md" in flush.stderr
        status = json.loads(wsd(env, "status", "--json").stdout)
        assert "user.md" in (status["md_write_failed"] or {})
        doctor = wsd(env, "doctor", check=False)
        assert doctor.returncode == 1
        assert "md writes: the daemon cannot write user.md (" in doctor.stdout  # not a dict
        os.rmdir(layout.md("user.md"))
        assert wait_for(lambda: "Prefers tabs" in _read(layout.md("user.md")), timeout=20)
        assert "Prefers tabs" in wsd(env, "boot-context").stdout
        assert wsd(env, "flush", "--wait", "30", check=False).returncode == 0
        status = json.loads(wsd(env, "status", "--json").stdout)
        assert status["md_write_failed"] is None
