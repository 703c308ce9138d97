"""The workspace watcher against real files: the index and files.md always match the disk."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import apsw
import pytest
from watchfiles import Change

from wsd.daemon.memory.md import files_md
from wsd.daemon.ops.bootstrap import init_workspace
from wsd.daemon.workspace.inventory import is_noise, render_inventory
from wsd.daemon.workspace.producers import is_write
from wsd.daemon.workspace.watcher import Watcher, WatchSettings
from wsd.schema.layout import Layout

FAST = WatchSettings(tick_seconds=0.05, debounce_ms=50, step_ms=20, check_seconds=3600)


def disk_files(root: str) -> dict[str, tuple[int, int]]:
    """What is really on disk (outside noise): path -> (size, mtime_ns)."""
    out = {}
    for folder, dirs, files in os.walk(root):
        rel_dir = os.path.relpath(folder, root)
        dirs[:] = [d for d in dirs if not is_noise(os.path.normpath(os.path.join(rel_dir, d)))]
        for name in files:
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if not is_noise(rel):
                st = os.lstat(os.path.join(folder, name))
                out[rel] = (st.st_size, st.st_mtime_ns)
    return out


def index_rows(layout: Layout) -> dict[str, tuple[int, int]]:
    conn = apsw.Connection(layout.memory_db)
    conn.set_busy_timeout(5000)
    try:
        rows = conn.execute("SELECT path, size, mtime_ns FROM workspace_files").fetchall()
    finally:
        conn.close()
    return {p: (s, t) for p, s, t in rows}


def inventory(layout: Layout) -> tuple[set[str], int, int]:
    """(paths files.md lists, total in its heading, sum of its folder counts)."""
    try:
        text = Path(layout.md("files.md")).read_text(encoding="utf-8")
    except FileNotFoundError:
        return set(), -1, -1
    out, group, total, summed = set(), "", -1, 0
    for line in files_md.split(text)[1].splitlines():
        if line.startswith("## Workspace files:"):
            words = line.split(":", 1)[1].split()
            total = 0 if words[0] == "none" else int(words[0].replace(",", ""))
        elif line.startswith("### "):
            label, counts = line[4:].split(" — ", 1)
            group = "" if label.startswith("./") else label
            summed += int(counts.split()[0].replace(",", ""))
        elif line.startswith("- ") and not line.startswith("- … "):
            out.add(group + line[2:].rsplit(" (", 1)[0])
    return out, total, summed


def listed(layout: Layout) -> set[str]:
    return inventory(layout)[0]


def consistent(layout: Layout) -> bool:
    """Index == disk; files.md counts every file and lists none that is gone (all, if few)."""
    disk = disk_files(layout.root)
    shown, total, summed = inventory(layout)
    if index_rows(layout) != disk or total != len(disk) or summed != len(disk):
        return False
    return shown == set(disk) if len(disk) <= 100 else shown <= set(disk) and len(shown) > 50


def wait_until(check: Callable[[], bool], timeout: float = 8.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


def write(root: str, rel: str, text: str = "x") -> None:
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


class Running:
    """A started watcher, stopped on exit."""

    def __init__(
        self,
        layout: Layout,
        settings: WatchSettings = FAST,
        nudge: threading.Event | None = None,
    ) -> None:
        self.stop = threading.Event()
        self.watcher = Watcher(layout, self.stop, settings, nudge=nudge)

    def __enter__(self) -> Watcher:
        self.watcher.start()
        assert self.watcher.ready.wait(10), "first rescan never finished"
        return self.watcher

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.watcher.join(5)


@pytest.fixture
def running(layout: Layout) -> Iterator[Watcher]:
    with Running(layout) as watcher:
        yield watcher


def test_create_modify_rename_delete_nested(layout: Layout, running: Watcher) -> None:
    """Create, modify, rename (file, folder), delete, nested folders: disk == index == files.md."""
    root = layout.root
    steps: list[Callable[[], object]] = [
        lambda: write(root, "documents/invoice.pdf", "pdf"),
        lambda: write(root, "documents/2026/q1/deep/report.txt", "r"),
        lambda: write(root, "documents/invoice.pdf", "pdf, now longer"),
        lambda: os.rename(f"{root}/documents/invoice.pdf", f"{root}/ocr/invoice.txt"),
        lambda: os.rename(f"{root}/documents/2026", f"{root}/artifacts/2026-moved"),
        lambda: write(root, "projects/new-top-level/plan.md", "plan"),
        lambda: write(root, "top.txt", "top level file"),
        lambda: os.remove(f"{root}/artifacts/2026-moved/q1/deep/report.txt"),
        lambda: shutil.rmtree(f"{root}/projects"),
        lambda: os.remove(f"{root}/top.txt"),
    ]
    for i, step in enumerate(steps):
        step()
        assert wait_until(lambda: consistent(layout)), f"step {i}: index or files.md != disk"


def test_many_files_at_once(layout: Layout, running: Watcher, tmp_path: Path) -> None:
    """2,000 files written at once, a tree moved in, then removed: everything matches."""
    for i in range(1000):
        write(layout.root, f"extractions/batch-{i % 20}/item-{i}.json", "{}" * (i % 7))
    staged = tmp_path / "staged"
    for i in range(1000):
        (staged / f"sub-{i % 10}").mkdir(parents=True, exist_ok=True)
        (staged / f"sub-{i % 10}" / f"page-{i}.txt").write_text(str(i))
    shutil.move(str(staged), f"{layout.root}/documents/moved-in")
    assert wait_until(lambda: len(index_rows(layout)) == 2000 and consistent(layout))
    shutil.rmtree(f"{layout.root}/documents/moved-in")
    shutil.rmtree(f"{layout.root}/extractions")
    assert wait_until(lambda: consistent(layout) and not index_rows(layout))


def test_noise_is_ignored(layout: Layout, running: Watcher) -> None:
    """Editor temp files, .git/, node_modules/, __pycache__ and .os/ are never indexed."""
    noise = [
        "documents/.report.txt.swp",
        "documents/report.txt~",
        "documents/.#report.txt",
        "documents/4913",
        "artifacts/repo/.git/objects/ab",
        "artifacts/app/node_modules/pkg/index.js",
        "artifacts/app/__pycache__/m.cpython-311.pyc",
        ".os/somewhere.txt",
    ]
    for rel in noise:
        write(layout.root, rel)
    write(layout.root, "documents/report.txt", "real")
    assert wait_until(lambda: set(index_rows(layout)) == {"documents/report.txt"})
    assert listed(layout) == {"documents/report.txt"}


def test_changes_while_stopped_are_reconciled_at_start(layout: Layout) -> None:
    """Files changed while no watcher runs are picked up by the start-up rescan."""
    write(layout.root, "documents/keep.txt", "k")
    write(layout.root, "documents/change.txt", "1")
    write(layout.root, "documents/drop.txt", "d")
    with Running(layout):
        assert wait_until(lambda: consistent(layout))
    write(layout.root, "documents/change.txt", "changed while stopped")
    os.remove(f"{layout.root}/documents/drop.txt")
    write(layout.root, "ocr/new/while-stopped.txt", "n")
    with Running(layout):
        assert consistent(layout)  # the first rescan is on disk before ``ready``


def test_events_disabled_reconciled_by_periodic_rescan(layout: Layout) -> None:
    """With watching disabled (no events at all), the periodic rescan still catches up."""
    settings = WatchSettings(watch=False, rescan_seconds=0.5, tick_seconds=0.05)
    with Running(layout, settings):
        write(layout.root, "documents/a.txt")
        write(layout.root, "artifacts/x/y/z.md", "zz")
        assert wait_until(lambda: consistent(layout) and len(index_rows(layout)) == 2)
        os.remove(f"{layout.root}/documents/a.txt")
        assert wait_until(lambda: consistent(layout) and len(index_rows(layout)) == 1)


def test_wake_triggers_a_full_rescan(layout: Layout) -> None:
    """The worker's on_wake callback (Watcher.wake) reconciles changes no event reported."""
    settings = WatchSettings(watch=False, rescan_seconds=3600, tick_seconds=0.05)
    with Running(layout, settings) as watcher:
        write(layout.root, "documents/after-sleep.txt")
        time.sleep(0.3)
        assert "documents/after-sleep.txt" not in index_rows(layout)
        watcher.wake()
        assert wait_until(lambda: consistent(layout) and len(index_rows(layout)) == 1)


def test_force_polling_keeps_the_index_exact(layout: Layout) -> None:
    """watchfiles in polling mode (the fallback) keeps index and files.md exact too."""
    settings = WatchSettings(watch_polling=True, watch_poll_ms=100, rescan_seconds=3600)
    with Running(layout, settings):
        write(layout.root, "documents/polled/a.txt")
        assert wait_until(lambda: consistent(layout) and len(index_rows(layout)) == 1)
        os.rename(f"{layout.root}/documents/polled", f"{layout.root}/ocr/polled")
        assert wait_until(lambda: set(index_rows(layout)) == {"ocr/polled/a.txt"})
        assert consistent(layout)


# -- a separate process: SIGSTOP, and a tiny inotify watch limit ----------------------------

CHILD = r"""
import sys, threading, json
from wsd.daemon.runtime import log
from wsd.daemon.ops.bootstrap import init_workspace
from wsd.daemon.workspace.watcher import Watcher, WatchSettings
from wsd.schema.layout import Layout
log.configure("json", stream=sys.stdout)
settings = WatchSettings(**json.loads(sys.argv[2]))
stop = threading.Event()
w = Watcher(Layout(sys.argv[1]), stop, settings)
w.start()
w.ready.wait(30)
log.get_logger().info("child_ready")  # through the logger: print() could interleave
sys.stdin.read()
stop.set()
w.join(5)
"""


class Child:
    """The watcher in a subprocess (optionally wrapped, e.g. by unshare); logs in self.lines."""

    def __init__(
        self, layout: Layout, settings: dict[str, object], wrap: list[str] | None = None
    ) -> None:
        args = [sys.executable, "-c", CHILD, layout.root, json.dumps(settings)]
        if wrap:  # a shell command line to run the child under
            args = [*wrap[:-1], f"{wrap[-1]} {shlex.join(args)}"]
        self.proc = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.lines: list[dict[str, object]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with contextlib.suppress(ValueError):
                self.lines.append(json.loads(line))

    def saw(self, event: str, **fields: object) -> bool:
        return any(
            ln.get("event") == event and all(ln.get(k) == v for k, v in fields.items())
            for ln in self.lines
        )

    def close(self) -> str:
        assert self.proc.stdin is not None
        if self.proc.poll() is None:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.proc.stderr.read() if self.proc.stderr else ""


def _unshare_prefix(limit: int) -> list[str]:
    """A shell in a new user namespace whose inotify watch limit is ``limit`` (or skip)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare(1) is not installed")
    # Only the new namespace's own limit (/proc/sys/user/...) is written, never the host's.
    probe = subprocess.run(
        [unshare, "-Ur", "sh", "-c", f"echo {limit} > /proc/sys/user/max_inotify_watches"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        pytest.skip(
            "cannot lower the inotify watch limit in an unprivileged user namespace here: "
            + (probe.stderr.strip() or f"exit {probe.returncode}")
        )
    return [
        unshare,
        "-Ur",
        "sh",
        "-c",
        f"echo {limit} > /proc/sys/user/max_inotify_watches && exec",
    ]


@pytest.mark.parametrize(
    "share", [0.9, 1e9], ids=["limit-noticed-up-front", "limit-hit-by-watchfiles"]
)
def test_exhausted_watch_limit_falls_back_to_polling(layout: Layout, share: float) -> None:
    """With 8 inotify watches for 30 folders the watcher polls, and still sees new files."""
    prefix = _unshare_prefix(8)
    for i in range(30):
        write(layout.root, f"documents/folder-{i:02d}/file.txt", str(i))
    settings = {"watch_limit_share": share, "rescan_seconds": 3600, "watch_poll_ms": 200}
    child = Child(layout, settings, prefix)
    try:
        assert wait_until(lambda: child.saw("child_ready"), 20), (child.close(), child.lines)
        assert wait_until(lambda: child.saw("watch_fallback_polling"), 10), child.lines
        write(layout.root, "documents/folder-29/deeper/new.txt", "seen by polling")
        write(layout.root, "extractions/late/new.json", "{}")
        assert wait_until(lambda: consistent(layout), 10)
        assert len(index_rows(layout)) == 32
    finally:
        child.close()


def test_curator_notes_cannot_overwrite_the_inventory(layout: Layout, running: Watcher) -> None:
    """A FILES_MD_UPDATE (even one echoing a stale inventory) replaces only the notes part."""
    write(layout.root, "documents/real.txt", "r")
    assert wait_until(lambda: consistent(layout))
    stale = f"{files_md.MARKER}\n## Workspace files: 1 file in 1 folder\n- fake.txt (1 B, x)\n"
    files_md.write_notes(layout.md("files.md"), "# Notes\n- invoices go to documents/\n" + stale)
    text = Path(layout.md("files.md")).read_text(encoding="utf-8")
    assert text.startswith("# Notes\n- invoices go to documents/\n\n" + files_md.MARKER)
    assert "fake.txt" not in text and consistent(layout)
    write(layout.root, "ocr/real.txt", "r")
    assert wait_until(lambda: consistent(layout))
    assert Path(layout.md("files.md")).read_text(encoding="utf-8").startswith("# Notes\n")


def test_new_notes_get_an_inventory_sized_to_them(layout: Layout) -> None:
    """Notes that grew (a batch, a hand edit) make the watcher re-render the inventory to the
    lines left, without any workspace event and with events off: every file still counted."""
    for i in range(60):
        write(layout.root, f"documents/f{i:02}.txt", "x")
    settings = WatchSettings(watch=False, rescan_seconds=3600, tick_seconds=0.05)
    with Running(layout, settings):
        assert wait_until(lambda: consistent(layout) and len(listed(layout)) == 60)
        notes = "\n".join(f"- note {i}" for i in range(140))  # 59 lines left: 60 files do not fit
        files_md.write_notes(layout.md("files.md"), notes)
        # write_notes trims the inventory at once and says it is being refreshed ...
        assert "being refreshed" in Path(layout.md("files.md")).read_text(encoding="utf-8")
        # ... and the watcher notices the new notes and renders the inventory to its budget.
        assert wait_until(
            lambda: (
                "being refreshed" not in Path(layout.md("files.md")).read_text()
                and inventory(layout)[1:] == (60, 60)
            )
        )
        text = Path(layout.md("files.md")).read_text(encoding="utf-8")
        assert text.startswith("- note 0\n") and len(text.splitlines()) <= files_md.LINE_LIMIT


def test_transcript_writes_nudge_the_loop(layout: Layout) -> None:
    """The watcher is the one watch of .os/memory/: a write to transcript.db or the spool
    sets the loop's nudge at once; reading the database (no write) does not."""
    nudge = threading.Event()
    init_workspace(layout)
    with Running(layout, nudge=nudge):
        time.sleep(0.5)
        nudge.clear()
        conn = apsw.Connection(layout.transcript_db)
        conn.execute("SELECT count(*) FROM events").fetchall()
        conn.close()
        assert not nudge.wait(1.0), "a read woke the loop"
        with open(layout.spool, "a", encoding="utf-8") as fh:
            fh.write("{}\n")
        assert nudge.wait(30.0), "a spool append did not wake the loop"


def test_a_wal_reported_only_as_added_counts_as_a_write_once_it_holds_data(
    layout: Layout,
) -> None:
    """watchfiles folds "created then written" into one "added": a WAL with frames is a write,
    an empty one (a reader's open) or a vanished one is not."""
    wal = layout.transcript_db + "-wal"
    Path(wal).write_bytes(b"")
    assert not is_write(Change.added, wal)
    Path(wal).write_bytes(b"x" * 32)
    assert is_write(Change.added, wal) and is_write(Change.modified, wal)
    os.unlink(wal)
    assert not is_write(Change.added, wal)
    assert not is_write(Change.added, layout.md("files.md"))


def test_inventory_rolls_up_within_the_line_limit() -> None:
    """5,000 files in 400 folders under 150 lines of notes: <= 200 lines, every file counted."""
    now = time.time_ns()
    tree = {
        f"documents/year-{d % 8}/batch-{d}": {
            f"f{i}.txt": (i, now - (d * 100 + i) * 10**9) for i in range(12 + d % 3)
        }
        for d in range(400)
    }
    tree[""] = {"top.txt": (1, now)}
    total = sum(len(f) for f in tree.values())
    notes = "\n".join(f"note {i}" for i in range(200))
    kept = files_md.notes_of(notes)
    text = files_md.compose(kept, render_inventory(tree, files_md.inventory_budget(kept)))
    lines = text.splitlines()
    assert len(lines) <= files_md.LINE_LIMIT
    assert len(kept.splitlines()) == files_md.NOTES_LINE_LIMIT
    heads = [ln for ln in lines if ln.startswith("### ")]
    assert sum(int(h.split(" — ")[1].split()[0].replace(",", "")) for h in heads) == total
    assert f"{total:,} files" in text and "- top.txt (" in text
    small = render_inventory({"a": {"old.txt": (1, 1), "new.txt": (1, now)}}, 50)
    assert [ln.split(" ")[1] for ln in small if ln.startswith("- ")] == ["new.txt", "old.txt"]


def test_folders_past_the_watch_limit_are_noticed(layout: Layout) -> None:
    """Watches run out only for folders made later: the rescan notices and switches to polling."""
    # root + .os/memory + artifacts + ocr + extractions + documents and its 3 folders = 9
    prefix = _unshare_prefix(9)
    for i in range(3):
        write(layout.root, f"documents/folder-{i}/file.txt", str(i))
    settings = {"watch_limit_share": 1e9, "rescan_seconds": 4, "watch_poll_ms": 200}
    child = Child(layout, settings, prefix)
    try:
        assert wait_until(lambda: child.saw("child_ready"), 20), (child.close(), child.lines)
        assert not child.saw("watch_fallback_polling")
        os.makedirs(f"{layout.root}/documents/later")  # inotify cannot watch this one
        time.sleep(0.5)
        write(layout.root, "documents/later/unseen.txt", "no event for this")
        time.sleep(1.0)
        assert "documents/later/unseen.txt" not in index_rows(layout)
        assert wait_until(lambda: child.saw("watch_fallback_polling"), 10), child.lines
        write(layout.root, "documents/later/seen.txt", "polled")
        assert wait_until(lambda: consistent(layout) and len(index_rows(layout)) == 5, 10)
    finally:
        child.close()


def test_a_watcher_on_a_ready_workspace_sees_events_from_its_first_rescan(layout: Layout) -> None:
    """With memory.db already migrated the first rescan runs at once: its producers must start
    (they raced the thread's start and were skipped), so a new file is listed within seconds,
    long before any periodic rescan."""
    settings = WatchSettings(rescan_seconds=3600, debounce_ms=50, step_ms=20)
    for _ in range(5):
        stop = threading.Event()
        watcher = Watcher(layout, stop, settings)
        watcher.start()
        try:
            assert watcher.ready.wait(10)
            name = f"documents/late-{time.monotonic_ns()}.txt"
            write(layout.root, name)
            assert wait_until(lambda name=name: name in listed(layout), 8), name
        finally:
            stop.set()
            watcher.join(5)


def test_a_failed_inventory_write_is_retried_without_waiting_for_a_change(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A files.md write that fails once (its temp file removed under it, as a start-up repair
    once did) is written at the next step, with events off and no rescan due: files.md is
    never left without its inventory until something else changes."""
    write(layout.root, "documents/before.txt", "b")
    real = files_md.write_inventory
    failures: list[str] = []

    def fails_once(path: str, render: Callable[[int], list[str]]) -> str:
        if not failures:
            failures.append(path)
            raise FileNotFoundError(2, "No such file or directory", path)
        return real(path, render)

    monkeypatch.setattr(files_md, "write_inventory", fails_once)
    settings = WatchSettings(watch=False, rescan_seconds=3600, tick_seconds=0.05)
    with Running(layout, settings):
        assert wait_until(lambda: "documents/before.txt" in listed(layout))
    assert failures == [layout.md("files.md")]
