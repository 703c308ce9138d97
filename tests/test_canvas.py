"""Canvas cards mirrored into workspace files, from tool events recorded by the real hooks."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import apsw
import pytest
from structlog.testing import capture_logs

from wsd.daemon.store import Store
from wsd.daemon.workspace.canvas import TRUNCATION_NOTE, CanvasSync, confine, conflict_path, slug
from wsd.daemon.workspace.checks import Checks
from wsd.daemon.workspace.watcher import Watcher, WatchSettings
from wsd.hooks.capture import Capture, CaptureConfig
from wsd.schema.layout import Layout

CREATE, UPDATE, CLOSE = (
    "mcp__canvas__create_card",
    "mcp__canvas__update_card",
    "mcp__canvas__close_card",
)


def tool_call(layout: Layout, tool: str, tool_input: dict[str, Any], response: Any = "ok") -> None:
    """Record one PostToolUse event exactly as the agent's hook would."""
    capture = Capture(CaptureConfig(workspace=layout.root))
    try:
        capture.handle(
            {
                "hook_event_name": "PostToolUse",
                "session_id": "canvas-test",
                "tool_name": tool,
                "tool_input": tool_input,
                "tool_response": response,
            }
        )
    finally:
        capture.close()


def create(layout: Layout, card_id: str, title: str, text: str, **extra: Any) -> None:
    blocks = [{"type": "text", "content": text}]
    tool_call(layout, CREATE, {"title": title, "blocks": blocks, **extra}, {"card_id": card_id})


def update(layout: Layout, card_id: str, text: str | None = None, **extra: Any) -> None:
    inp: dict[str, Any] = {"card_id": card_id, **extra}
    if text is not None:
        inp["blocks"] = [{"type": "text", "content": text}]
    tool_call(layout, UPDATE, inp)


def open_actions(layout: Layout) -> dict[str, str]:
    conn = apsw.Connection(layout.memory_db)
    try:
        rows = conn.execute(
            "SELECT dedup_key, content FROM pending_actions WHERE status = 'pending'"
        ).fetchall()
    finally:
        conn.close()
    return dict(rows)


@pytest.fixture
def sync(layout: Layout) -> CanvasSync:
    return CanvasSync(layout.root, Store(layout))


def read(layout: Layout, rel: str) -> str:
    return Path(layout.root, rel).read_text(encoding="utf-8")


def test_create_writes_the_card_file(layout: Layout, sync: CanvasSync) -> None:
    """create_card -> artifacts/canvas/<slug>.md holds the blocks as markdown, map in memory.db."""
    blocks = [
        {"type": "text", "content": "# Invoice 7\n\nTotal: 12 EUR"},
        {"type": "text", "content": "- paid on 2026-02-01"},
    ]
    tool_call(layout, CREATE, {"title": "Invoice 7", "blocks": blocks}, {"card_id": "c1"})
    assert sync.sync() == ["artifacts/canvas/invoice-7.md"]
    assert read(layout, "artifacts/canvas/invoice-7.md") == (
        "# Invoice 7\n\nTotal: 12 EUR\n\n- paid on 2026-02-01\n"
    )
    card = Store(layout).workspace.card("c1")
    assert card is not None and card.path == "artifacts/canvas/invoice-7.md"
    assert card.status == "open" and card.last_synced_sha256
    assert sync.sync() == []  # the cursor moved on: nothing is done twice


@pytest.mark.parametrize(
    "response",
    [
        {"card_id": "c9"},
        {"content": [{"type": "text", "text": json.dumps({"card_id": "c9", "ok": True})}]},
        json.dumps({"id": "c9"}),
        {"card": {"id": "c9", "blocks": [{"id": "block-1"}]}},
        "Created card. card_id: c9",
    ],
    ids=["field", "mcp-content", "json-text", "nested", "prose"],
)
def test_card_id_found_in_any_response_shape(
    layout: Layout, sync: CanvasSync, response: object
) -> None:
    """The card id is taken from a field, JSON inside text, or MCP content, so updates match."""
    blocks = [{"type": "text", "content": "v1"}]
    tool_call(layout, CREATE, {"title": "Shape", "blocks": blocks}, response)
    update(layout, "c9", "v2")
    sync.sync()
    assert read(layout, "artifacts/canvas/shape.md") == "v2\n"
    assert not os.path.exists(f"{layout.root}/artifacts/canvas/shape-2.md")


def test_update_title_only_and_close(layout: Layout, sync: CanvasSync) -> None:
    """update rewrites the file; a title-only update and close_card leave it in place."""
    create(layout, "c1", "Plan", "step 1")
    update(layout, "c1", "step 1\nstep 2")
    sync.sync()
    assert read(layout, "artifacts/canvas/plan.md") == "step 1\nstep 2\n"
    update(layout, "c1", title="Plan (renamed)")
    tool_call(layout, CLOSE, {"card_id": "c1"})
    assert sync.sync() == []
    assert read(layout, "artifacts/canvas/plan.md") == "step 1\nstep 2\n"
    card = Store(layout).workspace.card("c1")
    assert card is not None and card.status == "closed" and card.title == "Plan (renamed)"


def test_hand_edit_then_update_gives_conflict_copy_and_action(
    layout: Layout, sync: CanvasSync
) -> None:
    """A file edited since the last sync is never overwritten: conflict copy + pending action."""
    create(layout, "c1", "Notes", "card v1")
    sync.sync()
    Path(layout.root, "artifacts/canvas/notes.md").write_text("edited by hand\n")
    update(layout, "c1", "card v2")
    copy = conflict_path("artifacts/canvas/notes.md", "c1")
    assert sync.sync() == [copy]
    assert read(layout, "artifacts/canvas/notes.md") == "edited by hand\n"
    assert read(layout, copy).endswith("\n\ncard v2\n")
    actions = open_actions(layout)
    assert "canvas_conflict:c1" in actions and copy in actions["canvas_conflict:c1"]
    checks = Checks(layout.root, Store(layout))
    checks.run()
    assert "canvas_drift:c1" in open_actions(layout)  # the drift check sees it too
    update(layout, "c1", "card v3")  # still edited: the copy is refreshed, one action only
    sync.sync()
    assert read(layout, copy).endswith("\n\ncard v3\n")
    assert list(open_actions(layout)).count("canvas_conflict:c1") == 1
    Path(layout.root, "artifacts/canvas/notes.md").write_text("card v3\n")  # merged by hand
    os.remove(Path(layout.root, copy))
    checks.run()
    assert "canvas_conflict:c1" not in open_actions(layout)
    assert "canvas_drift:c1" in open_actions(layout)  # file != last sync until the card updates
    update(layout, "c1", "card v3")
    sync.sync()
    checks.run()
    assert not {k for k in open_actions(layout) if k.startswith("canvas_")}


def test_a_long_title_or_path_in_an_action_says_it_was_cut(
    layout: Layout, sync: CanvasSync
) -> None:
    """An action names a card's title and a refused path whole, or cut with "…": the drift
    check cut the title at 80 and the refusal the path at 120 silently, so the cut text read
    as the whole name."""
    title = "Quarterly plan " + "x" * 200
    create(layout, "c1", title, "card v1")
    create(layout, "c2", "Elsewhere", "payload", path="documents/" + "a" * 300 + ".md")
    sync.sync()
    (mirror,) = Path(layout.root, "artifacts/canvas").glob("quarterly-plan-*.md")
    mirror.write_text("edited by hand\n")
    Checks(layout.root, Store(layout)).run()
    actions = open_actions(layout)
    assert f"“{title[:79]}…”" in actions["canvas_drift:c1"]
    assert "aaaa…, which the daemon refused" in actions["canvas_refused:c2"]


def test_named_path_and_existing_file(layout: Layout, sync: CanvasSync) -> None:
    """A card's own path is used (suffix added if needed); an existing file is not clobbered."""
    create(layout, "c1", "Summary", "sum", path="extractions/summary")
    Path(layout.root, "documents/letter.md").write_text("the user's letter\n")
    create(layout, "c2", "Letter", "card text", path="documents/letter.md")
    sync.sync()
    assert read(layout, "extractions/summary.md") == "sum\n"
    assert read(layout, "documents/letter.md") == "the user's letter\n"
    assert read(layout, conflict_path("documents/letter.md", "c2")).endswith("card text\n")
    assert "canvas_conflict:c2" in open_actions(layout)


def snapshot(folder: Path) -> dict[str, bytes]:
    out = {}
    for path in folder.rglob("*"):
        if path.is_file() and not path.name.startswith(("memory.db", "transcript.db")):
            out[str(path.relative_to(folder))] = path.read_bytes()
    return out


HOSTILE_PATHS = [
    "../outside/x.md",
    "OUTSIDE_ABS/abs.md",
    ".os/memory/user.md",
    ".os/memory/files.md",
    "documents/../../outside/y.md",
    "artifacts/escape/z.md",
    "artifacts/link.md",
    "~/evil.md",
    ".git/hooks/pre-commit",
    "a" * 5000 + ".md",
    "",
    "docs/line\nbreak.md",
    "C:\\evil.md",
    "documents/./../../../etc/passwd",
]


@pytest.mark.parametrize("named", HOSTILE_PATHS, ids=range(len(HOSTILE_PATHS)))
def test_hostile_paths_never_write_outside(
    layout: Layout, sync: CanvasSync, tmp_path: Path, named: str
) -> None:
    """Traversal, absolute, .os/, symlink escapes, huge, empty: refused, logged, an action."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target.md").write_text("outside file\n")
    os.symlink(outside, f"{layout.root}/artifacts/escape")
    os.symlink(outside / "target.md", f"{layout.root}/artifacts/link.md")
    named = named.replace("OUTSIDE_ABS", str(outside))
    system_before = snapshot(Path(layout.os_dir))
    with capture_logs() as logs:
        create(layout, "evil", "Hostile", "payload", path=named)
        written = sync.sync()
    assert sorted(p.name for p in outside.iterdir()) == ["target.md"]
    assert (outside / "target.md").read_text() == "outside file\n"
    assert snapshot(Path(layout.os_dir)) == system_before
    assert written == ["artifacts/canvas/hostile.md"]  # mirrored at the default path instead
    assert read(layout, "artifacts/canvas/hostile.md") == "payload\n"
    assert "canvas_refused:evil" in open_actions(layout)
    assert any(e["event"] == "canvas_path_refused" for e in logs)


HOSTILE_TITLES = [
    "../../../etc/passwd",
    "/etc/shadow",
    ".os",
    "日本語のカード ✨ Ünïcødé",
    "",
    "x" * 10_000,
    "a\x00b\nc\td",
    "..",
    "CON",
]


def test_hostile_titles_stay_in_the_canvas_folder(layout: Layout, sync: CanvasSync) -> None:
    """Every title becomes a safe, distinct file name inside artifacts/canvas/."""
    for i, title in enumerate(HOSTILE_TITLES):
        create(layout, f"t{i}", title, f"card {i}")
    written = sync.sync()
    assert len(written) == len(HOSTILE_TITLES) == len(set(written))
    folder = Path(layout.root, "artifacts", "canvas")
    assert sorted(str(p.relative_to(layout.root)) for p in folder.iterdir()) == sorted(written)
    for rel in written:
        name = rel.rsplit("/", 1)[1]
        assert rel.startswith("artifacts/canvas/") and rel.count("/") == 2
        assert not name.startswith(".") and len(name.encode()) <= 83
    assert "artifacts/canvas/日本語のカード-ünïcødé.md" in written
    assert slug("", "t4").startswith("card-")


def test_long_card_is_mirrored_as_captured_and_says_so(layout: Layout, sync: CanvasSync) -> None:
    """A card past the 2,000-character capture limit: head and tail kept, and a note says so."""
    text = "START " + "lorem ipsum " * 1000 + " END"
    create(layout, "long", "Long card", text)
    sync.sync()
    mirrored = read(layout, "artifacts/canvas/long-card.md")
    assert mirrored.startswith("START ") and "END" in mirrored
    assert len(mirrored) < len(text) and TRUNCATION_NOTE in mirrored


def test_update_of_unknown_card_and_replay(layout: Layout, sync: CanvasSync) -> None:
    """An update for a card never seen creates its mirror; replaying all events changes nothing."""
    update(layout, "late", "from an update", title="Late card")
    sync.sync()
    assert read(layout, "artifacts/canvas/late-card.md") == "from an update\n"
    Store(layout).workspace.set_canvas_cursor("", 0, time.time())  # e.g. a rebuilt memory.db
    assert sync.sync() == []
    assert sorted(os.listdir(f"{layout.root}/artifacts/canvas")) == ["late-card.md"]


def test_confine_rules() -> None:
    """Relative paths only, no '..', nothing hidden, text suffixes: checked without the disk."""
    assert confine("documents/x") == "documents/x.md"
    assert confine("./a//b.txt") == "a/b.txt"
    for bad in (
        "../x.md",
        "/x.md",
        ".os/x.md",
        "a/.hidden/x.md",
        "a\\b.md",
        "",
        "x\ny.md",
        "a\x00",
    ):
        with pytest.raises(ValueError):
            confine(bad)


def test_canvas_event_reaches_disk_within_seconds(layout: Layout) -> None:
    """With the watcher running, a canvas call is mirrored promptly, not at a curator batch."""
    stop = threading.Event()
    store = Store(layout)
    watcher = Watcher(
        layout,
        stop,
        WatchSettings(tick_seconds=0.05, check_seconds=3600),
        store=store,
        canvas=CanvasSync(layout.root, store),
    )
    watcher.start()
    try:
        assert watcher.ready.wait(10)
        create(layout, "live", "Live card", "hello")
        target = Path(layout.root, "artifacts/canvas/live-card.md")
        deadline = time.monotonic() + 30
        while not target.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert target.read_text() == "hello\n"
    finally:
        stop.set()
        watcher.join(5)


def test_many_events_are_all_handled_in_one_sync(layout: Layout, sync: CanvasSync) -> None:
    """More events than one read returns are handled in the same call, in order."""
    for i in range(5):
        create(layout, f"p{i}", f"Page {i}", f"page {i}")
    update(layout, "p0", "page 0, updated")
    assert len(set(sync.sync(limit=2))) == 5
    assert read(layout, "artifacts/canvas/page-0.md") == "page 0, updated\n"


def test_a_forget_reaches_the_mirrors_the_daemon_wrote_and_leaves_the_persons_edits(
    layout: Layout, sync: CanvasSync
) -> None:
    """After `wsd forget Yarrowmere --yes`: a mirror as the daemon wrote it loses the lines
    holding the word; one whose name holds it moves to a name of its card id (the map
    follows, a later update writes there); a mirror the person edited keeps their text; no
    file the daemon keeps or wrote names the word; the report counts the mirrors."""
    import os
    import subprocess

    from tests.conftest import venv_script

    create(layout, "c1", "Trip", "Packing list\nYarrowmere cabin key under the mat\nTowels")
    create(layout, "c2", "Yarrowmere cabin", "Check-in at four")
    create(layout, "c3", "Notes", "Yarrowmere is lovely")
    sync.sync()
    edited = Path(layout.root, "artifacts/canvas/notes.md")
    edited.write_text("My own words: Yarrowmere is lovely\n")
    env = {"WSD_WORKSPACE": layout.root, "PATH": os.environ["PATH"]}
    done = subprocess.run(
        [venv_script("wsd"), "forget", "Yarrowmere", "--yes", "--json"],
        env=env, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    report = json.loads(done.stdout)
    assert report["counts"]["canvas_mirrors"] >= 2, report
    assert read(layout, "artifacts/canvas/trip.md") == "Packing list\nTowels\n"
    store = Store(layout)
    moved = store.workspace.card("c2")
    assert moved is not None and "yarrowmere" not in moved.path.lower()
    assert read(layout, moved.path) == "Check-in at four\n"
    assert not Path(layout.root, "artifacts/canvas/yarrowmere-cabin.md").exists()
    assert edited.read_text() == "My own words: Yarrowmere is lovely\n"  # the person's
    for path in Path(layout.os_dir).rglob("*"):
        if path.is_file():
            assert b"yarrowmere" not in path.read_bytes().lower(), path
    update(layout, "c2", "Check-in at five")
    sync.sync()
    assert read(layout, moved.path) == "Check-in at five\n"
