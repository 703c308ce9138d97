"""Writes never go through a link (issue 13, item 1): not at a temp name, not at the target,
not at a folder on the way; the canvas mirror and the curated md files stay confined; and a
temp file is cleaned up only once no write holds it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import daemon_env, running_daemon, venv_script, wait_for
from tests.test_canvas import CREATE, UPDATE, create, open_actions, update
from wsd.daemon.memory.md import files as md_files
from wsd.daemon.runtime.fsio import TEMP_PREFIX, UnsafeFile, atomic_write, read_regular
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.store import Store
from wsd.daemon.workspace.canvas import CanvasSync
from wsd.schema.layout import Layout

SECRET = "the operator's private notes\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside the workspace that no write of the daemon may touch."""
    path = tmp_path / "outside" / "victim.txt"
    path.parent.mkdir()
    path.write_text(SECRET)
    return path


def test_canvas_update_never_writes_through_a_link_at_the_old_temp_name(
    layout: Layout, outside: Path
) -> None:
    """A link planted at ``.wsd-tmp-notes.md.<pid>`` (the old predictable temp name) is neither
    written through nor renamed into place: the card lands in a regular notes.md."""
    sync = CanvasSync(layout.root, Store(layout))
    create(layout, "c1", "Notes", "first version")
    sync.sync()
    folder = Path(layout.root, "artifacts/canvas")
    (folder / f"{TEMP_PREFIX}notes.md.{os.getpid()}").symlink_to(outside)
    update(layout, "c1", "second version")
    sync.sync()
    assert outside.read_text() == SECRET
    notes = folder / "notes.md"
    assert not notes.is_symlink() and notes.read_text() == "second version\n"


def test_md_file_never_written_through_a_link_at_the_old_temp_name(
    layout: Layout, outside: Path
) -> None:
    """The same planted link beside a curated md file: user.md is written, the victim is not."""
    Path(layout.memory_dir, f"{TEMP_PREFIX}user.md.{os.getpid()}").symlink_to(outside)
    md_files.materialise(layout, {"user.md": "# User\n- prefers tabs\n"})
    assert outside.read_text() == SECRET
    user = Path(layout.md("user.md"))
    assert not user.is_symlink() and user.read_text() == "# User\n- prefers tabs\n"


def test_md_file_that_is_a_link_is_refused_and_reported(layout: Layout, outside: Path) -> None:
    """user.md replaced by a link to a file outside: not written through, not read, and the
    failure is reported for that file (the others are still written)."""
    Path(layout.md("user.md")).symlink_to(outside)
    written, failed = md_files.materialise_each(
        layout, {"user.md": "# User\n", "context.md": "# Context\n"}
    )
    assert outside.read_text() == SECRET
    assert written == ["context.md"]
    assert "symlink" in failed["user.md"]


def test_canvas_file_that_became_a_link_is_refused(layout: Layout, outside: Path) -> None:
    """A card's mirror replaced by a link after the first sync: the victim is untouched and
    the agent is told (a refused-path action)."""
    sync = CanvasSync(layout.root, Store(layout))
    create(layout, "c1", "Notes", "first version")
    sync.sync()
    notes = Path(layout.root, "artifacts/canvas/notes.md")
    notes.unlink()
    notes.symlink_to(outside)
    update(layout, "c1", "second version")
    sync.sync()
    assert outside.read_text() == SECRET
    assert "canvas_refused:c1" in open_actions(layout)


def test_confined_write_refuses_a_folder_swapped_for_a_link(layout: Layout, tmp_path: Path) -> None:
    """With ``root``, a folder on the way that is a link (swapped in after the caller's checks)
    stops the write: nothing lands outside."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    Path(layout.root, "artifacts").mkdir(exist_ok=True)
    Path(layout.root, "artifacts/canvas").symlink_to(elsewhere)
    target = os.path.join(layout.root, "artifacts/canvas/notes.md")
    with pytest.raises(UnsafeFile):
        atomic_write(target, "x", root=layout.root)
    assert list(elsewhere.iterdir()) == []
    with pytest.raises(UnsafeFile):
        atomic_write(os.path.join(str(tmp_path), "escape.md"), "x", root=layout.root)


def test_reads_refuse_links_fifos_devices_and_huge_files(layout: Layout, outside: Path) -> None:
    """read_regular returns only regular files within the limit; the rest is refused at once."""
    root = Path(layout.root)
    (root / "link.md").symlink_to(outside)
    os.mkfifo(root / "fifo.md")
    (root / "zero.md").symlink_to("/dev/zero")
    (root / "big.md").write_bytes(b"x" * 2000)
    for name in ("link.md", "fifo.md", "zero.md", "big.md"):
        with pytest.raises(UnsafeFile):
            read_regular(str(root / name), limit=1000)
    assert read_regular(str(root / "big.md"), limit=1000, head=True) == b"x" * 1000
    with pytest.raises(FileNotFoundError):
        read_regular(str(root / "missing.md"))


def test_running_daemon_never_writes_through_a_planted_temp_link(
    layout: Layout, outside: Path, standin: BridgeStandin, tmp_path: Path
) -> None:
    """The attack of the issue against a real ``wsd run``: a link at
    ``artifacts/canvas/.wsd-tmp-notes.md.<daemon pid>``, then update_card through wsd-hook."""
    env = daemon_env(layout, standin)
    hook = venv_script("wsd-hook")

    def tool(name: str, tool_input: dict[str, object], response: object = "ok") -> None:
        event = {
            "hook_event_name": "PostToolUse",
            "session_id": "attack",
            "tool_name": name,
            "tool_input": tool_input,
            "tool_response": response,
        }
        subprocess.run([hook], input=json.dumps(event).encode(), env=env, check=True)

    notes = Path(layout.root, "artifacts/canvas/notes.md")
    with running_daemon(env, tmp_path / "wsd.log") as proc:
        blocks = [{"type": "text", "content": "first version"}]
        tool(CREATE, {"title": "Notes", "blocks": blocks}, {"card_id": "c1"})
        assert wait_for(lambda: notes.exists() and notes.read_text() == "first version\n")
        (notes.parent / f"{TEMP_PREFIX}notes.md.{proc.pid}").symlink_to(outside)
        blocks = [{"type": "text", "content": "second version"}]
        tool(UPDATE, {"card_id": "c1", "blocks": blocks})
        assert wait_for(lambda: notes.read_text() == "second version\n")
    assert outside.read_text() == SECRET
    assert not notes.is_symlink()


def test_start_up_repair_removes_abandoned_temp_files_only(layout: Layout) -> None:
    """Start-up repair (and ``doctor --fix``) remove a temp file whose writer is gone, one
    whose name carries no pid, and one an hour old; never a fresh one a live process holds
    (removing it made that process's rename fail: files.md lost its inventory)."""
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        folder = Path(layout.memory_dir)
        live = folder / f"{TEMP_PREFIX}files.md.{writer.pid}.00112233aabbccdd"
        gone = folder / f"{TEMP_PREFIX}user.md.{dead.pid}.00112233aabbccdd"
        no_pid = folder / f"{TEMP_PREFIX}context.md.00112233aabbccdd"
        stale = folder / f"{TEMP_PREFIX}tools.md.{writer.pid}.8899aabbccddeeff"
        for path in (live, gone, no_pid, stale):
            path.write_text("half")
        hours_ago = time.time() - 2 * 3600
        os.utime(stale, (hours_ago, hours_ago))
        assert sorted(md_files.stray_temp_files(layout)) == sorted(
            str(p) for p in (gone, no_pid, stale)
        )
        done = md_files.sync(layout, Store(layout), time.time(), temp_files=True)
        assert sorted(done.temp_removed) == sorted(p.name for p in (gone, no_pid, stale))
        assert live.read_text() == "half"
    finally:
        writer.kill()
        writer.wait()
    assert md_files.stray_temp_files(layout) == [str(live)]  # its writer is gone now
