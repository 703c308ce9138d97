"""A FIFO, a device link or a huge file where the daemon reads never wedges it (issue 13, item
7): the watcher, the canvas mirror and the checks read and hash regular files only, with size
limits, and ``wsd doctor`` names what the daemon refuses."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import (
    daemon_env,
    drain,
    make_worker,
    query,
    running_daemon,
    venv_script,
    wait_for,
    write_turns,
    wsd,
)
from tests.test_canvas import CREATE, UPDATE, create, open_actions, update
from tests.test_spool_damage import _hook
from wsd.daemon.runtime.heartbeat import status_path
from wsd.daemon.runtime.pause import pause_path
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.store import Store
from wsd.daemon.workspace.canvas import CanvasSync
from wsd.daemon.workspace.checks import Checks, CheckSettings
from wsd.daemon.workspace.watcher import Watcher
from wsd.schema.layout import Layout


def _plant(path: Path, kind: str) -> None:
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


def _tool(env: dict[str, str], name: str, tool_input: dict[str, object], response: object) -> None:
    _hook(
        env,
        {
            "hook_event_name": "PostToolUse",
            "session_id": "special",
            "tool_name": name,
            "tool_input": tool_input,
            "tool_response": response,
        },
    )


def _text(path: Path) -> str:
    try:
        return path.read_text() if path.is_file() and not path.is_symlink() else ""
    except OSError:
        return ""


@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
def test_special_file_at_a_card_path_never_wedges_the_running_daemon(
    layout: Layout, standin: BridgeStandin, tmp_path: Path, kind: str
) -> None:
    """A FIFO (or a link to /dev/zero) put at a mirrored card's path, then the card updated:
    new files still reach files.md, new cards still mirror, and doctor names the file."""
    env = daemon_env(layout, standin, WSD_CHECK_SECONDS="1")
    canvas = Path(layout.root, "artifacts/canvas")
    files_md = Path(layout.md("files.md"))
    with running_daemon(env, tmp_path / "wsd.log"):
        blocks = [{"type": "text", "content": "first"}]
        _tool(env, CREATE, {"title": "Notes", "blocks": blocks}, {"card_id": "c1"})
        assert wait_for(lambda: _text(canvas / "notes.md") == "first\n", timeout=20)
        _plant(canvas / "notes.md", kind)
        _tool(env, UPDATE, {"card_id": "c1", "blocks": [{"type": "text", "content": "2nd"}]}, "ok")
        time.sleep(2)  # the sync and a check period pass over the planted file
        Path(layout.root, "documents/after.txt").write_text("still watched")
        blocks = [{"type": "text", "content": "other card"}]
        _tool(env, CREATE, {"title": "Other", "blocks": blocks}, {"card_id": "c2"})
        assert wait_for(lambda: _text(canvas / "other.md") == "other card\n", timeout=20)
        assert wait_for(lambda: "after.txt" in _text(files_md), timeout=20)
    doctor = wsd(env, "doctor", check=False)
    what = "a FIFO" if kind == "fifo" else "a symlink"
    assert f"artifacts/canvas/notes.md (a canvas card's mirror) is {what}" in doctor.stdout


def test_checks_and_canvas_refuse_special_and_huge_files(layout: Layout) -> None:
    """In-process: drift check, duplicate hashing and the mirror each return at once on a FIFO,
    a /dev/zero link and a file over the limits; the agent is told about the card."""
    store = Store(layout)
    sync = CanvasSync(layout.root, store)
    create(layout, "c1", "Notes", "first")
    create(layout, "c2", "Big", "small")
    sync.sync()
    canvas = Path(layout.root, "artifacts/canvas")
    os.unlink(canvas / "notes.md")
    os.mkfifo(canvas / "notes.md")
    with open(canvas / "big.md", "wb") as fh:
        fh.truncate(5 * 1024 * 1024)  # sparse: over the card limit at no cost
    docs = Path(layout.root, "documents")
    (docs / "a.bin").write_bytes(b"same")
    (docs / "b.bin").write_bytes(b"same")
    watcher = Watcher(layout, threading.Event(), store=store)
    watcher.rescan()
    os.unlink(docs / "b.bin")
    (docs / "b.bin").symlink_to("/dev/zero")  # swapped in after indexing, before hashing
    checks = Checks(layout.root, store, CheckSettings(unprocessed_seconds=1e9))
    checks.run()
    actions = open_actions(layout)
    assert "FIFO" in actions["canvas_drift:c1"]
    assert "too large" in actions["canvas_drift:c2"]
    update(layout, "c1", "second")
    update(layout, "c2", "bigger")
    assert sync.sync() == []
    assert {"canvas_refused:c1", "canvas_refused:c2"} <= set(open_actions(layout))


def test_doctor_names_and_fixes_a_fifo_in_place_of_a_memory_file(
    layout: Layout, standin: BridgeStandin
) -> None:
    """A FIFO at user.md: doctor fails naming it (once: not also "missing") without blocking
    on it; --fix removes it."""
    os.mkfifo(layout.md("user.md"))
    env = daemon_env(layout, standin)
    doctor = wsd(env, "doctor", check=False, timeout=30)
    assert doctor.returncode == 1 and f"{layout.md('user.md')} is a FIFO" in doctor.stdout
    assert "user.md is missing" not in doctor.stdout, doctor.stdout  # said once, as a FIFO
    fixed = wsd(env, "doctor", "--fix", check=False, timeout=30)
    assert f"removed {layout.md('user.md')} (a FIFO)" in fixed.stdout
    assert not os.path.lexists(layout.md("user.md"))


def test_a_curated_file_deleted_while_the_daemon_runs_is_written_back(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """A deleted user.md is written back from its revision within a pass or two (no restart);
    an emptied file is still an adopted hand edit; a FIFO or link put there is left alone."""
    log = tmp_path / "wsd.log"
    env = daemon_env(layout, standin)
    user, context = Path(layout.md("user.md")), Path(layout.md("context.md"))
    with running_daemon(env, log):
        write_turns(layout, 2)
        wsd(env, "flush", "--wait", "30")
        curated = Store(layout).revisions.latest_md()["user.md"]
        assert curated and _text(user) == curated
        user.unlink()
        assert wait_for(lambda: _text(user) == curated, timeout=5), "user.md stayed missing"
        # The line may follow the write it tells of by a moment (a loaded run read it first).
        assert wait_for(lambda: '"reason": "missing on disk"' in log.read_text(), timeout=5)
        context.write_text("")  # emptied by a person: an edit, kept and adopted
        assert wait_for(
            lambda: Store(layout).revisions.latest_md().get("context.md") == "", timeout=5
        )
        for kind in ("fifo", "dev_zero"):
            _plant(user, kind)
            time.sleep(1)  # five passes over it
            assert user.is_fifo() if kind == "fifo" else user.is_symlink()
        write_turns(layout, 1, start=2, prompt="Remind me to water the plants")
        wsd(env, "flush", "--wait", "30")  # the loop goes on
    hand = "SELECT content FROM md_revisions WHERE file = 'context.md' AND source = 'hand'"
    assert query(layout.memory_db, hand) == [("",)]


@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
def test_one_doctor_fix_clears_a_fifo_or_link_at_user_md_and_writes_it_back(
    layout: Layout, standin: BridgeStandin, kind: str
) -> None:
    """A FIFO or link in user.md's place: one ``wsd doctor --fix`` removes it and writes
    user.md from its revision, ending with 0 problems (it took two runs)."""
    worker = make_worker(layout, standin, batch_turns=2)
    write_turns(layout, 2)
    drain(worker)
    curated = Store(layout).revisions.latest_md()["user.md"]
    assert curated
    _plant(Path(layout.md("user.md")), kind)
    worker.status.update(force=True)  # a live heartbeat: this process plays the daemon
    env = daemon_env(layout, standin)
    fixed = wsd(env, "doctor", "--fix", check=False, timeout=30)
    assert fixed.returncode == 0 and fixed.stdout.endswith("0 problem(s)\n"), fixed.stdout
    assert _text(Path(layout.md("user.md"))) == curated


def test_a_fifo_at_the_daemons_own_small_files_blocks_no_reader(
    layout: Layout, standin: BridgeStandin
) -> None:
    """FIFOs at .os/VERSION, the heartbeat file and the rebuild pause file: a daemon pass,
    ``wsd status`` and ``wsd doctor`` (which read them every time) all still return."""
    worker = make_worker(layout, standin)
    worker.run_once()
    for path in (layout.version_file, status_path(layout), pause_path(layout)):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        os.mkfifo(path)
    passes: list[object] = []
    runner = threading.Thread(target=lambda: passes.append(worker.run_once()), daemon=True)
    runner.start()
    runner.join(60)
    assert passes, "a daemon pass blocked on a FIFO"
    env = daemon_env(layout, standin)
    for command in ("status", "doctor"):
        done = subprocess.run(
            [venv_script("wsd"), command], env=env, capture_output=True, text=True, timeout=60
        )
        assert "Traceback" not in done.stderr, done.stderr
