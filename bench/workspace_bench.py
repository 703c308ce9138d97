"""Workspace benchmarks: index time, memory, files.md freshness, canvas event to file.

One throw-away workspace of 100,000 files is generated once per run (under a
temporary folder, removed at the end). The watcher runs in a child process
exactly as the daemon would run it (index, inventory, checks, canvas mirror),
so its resident memory is measured alone, and the parent acts as the agent:
it creates and deletes files, and records canvas tool calls through the real
capture path.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from bench import Row, median, percentile
from wsd.daemon.memory.md import files_md
from wsd.daemon.ops.bootstrap import init_workspace
from wsd.hooks.capture import Capture, CaptureConfig
from wsd.schema.layout import USER_FOLDERS, Layout

FILES = 100_000
FOLDERS_PER_TOP = 250
SAMPLES = 30

CHILD = r"""
import json, signal, sys, threading, time
from wsd.daemon.runtime import log
from wsd.daemon.workspace.canvas import CanvasSync
from wsd.daemon.workspace.checks import Checks
from wsd.daemon.workspace.watcher import Watcher
from wsd.daemon.store import Store
from wsd.schema.layout import Layout

log.configure("json", stream=sys.stderr)
root = sys.argv[1]
layout, stop = Layout(root), threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
store = Store(layout)
started = time.monotonic()
watcher = Watcher(
    layout, stop, store=store, canvas=CanvasSync(root, store), checks=Checks(root, store)
)
watcher.start()
watcher.ready.wait(300)
print(json.dumps({"ready_s": time.monotonic() - started}), flush=True)
stop.wait()
watcher.join(10)
"""


def _generate(root: str, n: int) -> None:
    """n small files spread over the user folders, 250 sub-folders each."""
    made: set[str] = set()
    for i in range(n):
        top = USER_FOLDERS[i % len(USER_FOLDERS)]
        folder = os.path.join(root, top, f"batch-{(i // len(USER_FOLDERS)) % FOLDERS_PER_TOP:03d}")
        if folder not in made:
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
        with open(os.path.join(folder, f"file-{i:06d}.txt"), "w") as fh:
            fh.write(f"file {i}\n" + "x" * (i % 997))


def _bare_walk(root: str) -> float:
    """Seconds to list ``root``'s tree with os.scandir and lstat every entry (what an index
    cannot do without), the median of three."""

    def walk() -> int:
        count, stack = 0, [root]
        while stack:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    entry.stat(follow_symlinks=False)
                    count += 1
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        return count

    samples = []
    for _ in range(3):
        started = time.perf_counter()
        walk()
        samples.append(time.perf_counter() - started)
    return median(samples)


#: The watcher's initial index over a bare walk of the same tree (workspace): 4.43 and 4.70
#: on this tree (issue 36), so 5.2 fails a 20 % regression.
INDEX_TARGET = 5.2


def _memory_kb(pid: int) -> dict[str, int]:
    out = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0])
    return out


def _wait_for(path: str, test: Callable[[str], bool], timeout: float = 10.0) -> float:
    """Seconds until ``test(text of path)`` holds (polling every 2 ms), or inf."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        try:
            with open(path, encoding="utf-8") as fh:
                if test(fh.read()):
                    return time.perf_counter() - start
        except FileNotFoundError:
            pass
        time.sleep(0.002)
    return float("inf")


def _heading_count(text: str) -> int:
    for line in files_md.split(text)[1].splitlines():
        if line.startswith("## Workspace files:"):
            return int(line.split(":", 1)[1].split()[0].replace(",", ""))
    return -1


def _state(name: str, listed: bool, count: int) -> Callable[[str], bool]:
    """files.md lists ``name`` (or not) and its heading counts ``count`` files."""
    line = f"fresh/{name} ("

    def test(text: str) -> bool:
        return (line in text) == listed and _heading_count(text) == count

    return test


def _freshness(layout: Layout, files: int) -> tuple[list[float], list[float]]:
    md = layout.md("files.md")
    folder = os.path.join(layout.root, "documents", "fresh")
    os.makedirs(folder, exist_ok=True)
    time.sleep(1.0)
    created, deleted = [], []
    for i in range(SAMPLES):
        name = f"new-{i:03d}.txt"
        path = os.path.join(folder, name)
        with open(path, "w") as fh:
            fh.write(f"fresh {i}\n")
        created.append(_wait_for(md, _state(name, True, files + 1)))
        time.sleep(0.2)
        os.unlink(path)
        deleted.append(_wait_for(md, _state(name, False, files)))
        time.sleep(0.2)
    return created, deleted


def _canvas(layout: Layout) -> list[float]:
    capture = Capture(CaptureConfig(workspace=layout.root))
    samples = []
    for i in range(SAMPLES):
        body = f"# Bench card {i}\n\n- total: {i * 17} EUR\n"
        capture.handle(
            {
                "hook_event_name": "PostToolUse",
                "session_id": "bench-canvas",
                "tool_name": "mcp__canvas__create_card",
                "tool_input": {
                    "title": f"Bench card {i}",
                    "blocks": [{"type": "text", "content": body}],
                },
                "tool_response": {
                    "content": [{"type": "text", "text": json.dumps({"card_id": f"bench-{i}"})}]
                },
            }
        )
        target = os.path.join(layout.root, "artifacts", "canvas", f"bench-card-{i}.md")
        start = time.perf_counter()
        while not os.path.exists(target) and time.perf_counter() - start < 10:
            time.sleep(0.002)
        samples.append(time.perf_counter() - start if os.path.exists(target) else float("inf"))
        time.sleep(0.1)
    capture.close()
    return samples


def workspace(n: int = FILES) -> list[Row]:
    """Index time, memory, files.md freshness and canvas latency with ``n`` files."""
    tmp = tempfile.mkdtemp(prefix="wsd-bench-ws-")
    try:
        layout = Layout(os.path.join(tmp, "ws"))
        os.makedirs(layout.root)
        init_workspace(layout)
        started = time.perf_counter()
        _generate(layout.root, n)
        generated = time.perf_counter() - started
        walk = _bare_walk(layout.root)
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, layout.root],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert child.stdout is not None
            ready = json.loads(child.stdout.readline() or "{}").get("ready_s", float("inf"))
            time.sleep(2.0)  # let the first checks (hashing of same-size files) start
            steady = _memory_kb(child.pid)
            created, deleted = _freshness(layout, n)
            canvas = _canvas(layout)
            final = _memory_kb(child.pid)
        finally:
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(20)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    label = f"{n // 1000}k files"
    rss = max(steady["VmRSS"], final["VmRSS"]) / 1024
    peak = final["VmHWM"] / 1024
    index_ratio = ready / walk
    return [
        Row(
            f"initial index ({label}) / a bare walk of the tree",
            index_ratio,
            "x",
            f"<= {INDEX_TARGET:g}",
            index_ratio <= INDEX_TARGET,
            f"{ready:.2f} s / {walk:.2f} s (os.scandir and lstat of every entry, no link"
            f" followed, the median of 3, just before); generated in {generated:.0f} s;"
            " the target was 10 s",
        ),
        Row(
            f"watcher RSS ({label})", rss, "MB", "<= 150", rss <= 150, f"peak (VmHWM) {peak:.0f} MB"
        ),
        Row(
            f"files.md fresh after create, p95 ({label})",
            percentile(created, 95),
            "s",
            "<= 1",
            percentile(created, 95) <= 1,
            f"median {median(created) * 1000:.0f} ms, n={len(created)}",
        ),
        Row(
            f"files.md fresh after delete, p95 ({label})",
            percentile(deleted, 95),
            "s",
            "<= 1",
            percentile(deleted, 95) <= 1,
            f"median {median(deleted) * 1000:.0f} ms, n={len(deleted)}",
        ),
        Row(
            "canvas event to file, p95",
            percentile(canvas, 95),
            "s",
            "<= 1",
            percentile(canvas, 95) <= 1,
            f"median {median(canvas) * 1000:.0f} ms, n={len(canvas)}, {label} workspace",
        ),
    ]


if __name__ == "__main__":
    from bench import render

    count = int(sys.argv[1]) if len(sys.argv) > 1 else FILES
    print(render(workspace(count)))
