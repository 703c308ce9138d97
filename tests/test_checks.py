"""Proactive checks on a real workspace: one action per problem, closed once it is resolved."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import apsw
import pytest

from wsd.daemon.store import Store
from wsd.daemon.workspace.checks import Checks, CheckSettings
from wsd.daemon.workspace.watcher import Watcher, WatchSettings
from wsd.schema.layout import Layout


def q(layout: Layout, sql: str, args: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    conn = apsw.Connection(layout.memory_db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def actions(layout: Layout, status: str = "pending") -> dict[str, str]:
    rows = q(layout, "SELECT dedup_key, content FROM pending_actions WHERE status = ?", (status,))
    return {str(k): str(c) for k, c in rows}


def write(layout: Layout, rel: str, text: str) -> None:
    path = Path(layout.root, rel)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def index(layout: Layout) -> Watcher:
    """A watcher used synchronously: ``index.rescan()`` brings memory.db's index up to date."""
    return Watcher(layout, threading.Event(), WatchSettings(watch=False))


def checks(layout: Layout, **settings: object) -> Checks:
    return Checks(layout.root, Store(layout), CheckSettings(**settings))  # type: ignore[arg-type]


def test_unprocessed_document_raises_one_action_then_closes(layout: Layout, index: Watcher) -> None:
    """A document with no OCR/extraction output after the grace time: one action, closed later."""
    write(layout, "documents/scan-7.pdf", "%PDF scan")
    write(layout, "documents/2026/done.pdf", "%PDF done")
    write(layout, "ocr/2026/done.txt", "text of done")
    index.rescan()
    check = checks(layout, unprocessed_seconds=3600)
    now = time.time()
    check.run(now + 10)
    assert not actions(layout)  # too young to be called unprocessed
    check.run(now + 4000)
    check.run(now + 4001)
    assert list(actions(layout)) == ["unprocessed:documents/scan-7.pdf"]
    write(layout, "extractions/scan-7/fields.json", "{}")
    index.rescan()
    check.run(now + 4002)
    assert not actions(layout)
    assert list(actions(layout, "completed")) == ["unprocessed:documents/scan-7.pdf"]


def test_duplicates_by_size_then_hash(layout: Layout, index: Watcher) -> None:
    """Identical files raise one action; same-size different files do not; only they are hashed."""
    write(layout, "documents/a.pdf", "same content")
    write(layout, "artifacts/copies/a-copy.pdf", "same content")
    write(layout, "ocr/other.txt", "SAME CONTENT")  # same size, different bytes
    write(layout, "ocr/unique.txt", "a size nobody else has")
    index.rescan()
    check = checks(layout)
    check.run()
    check.run()
    found = actions(layout)
    assert len(found) == 1
    [(key, text)] = found.items()
    assert key.startswith("duplicate:")
    assert "documents/a.pdf" in text and "artifacts/copies/a-copy.pdf" in text
    assert "other.txt" not in text
    hashed = dict(q(layout, "SELECT path, sha256 IS NOT NULL FROM workspace_files"))
    assert hashed == {
        "documents/a.pdf": 1,
        "artifacts/copies/a-copy.pdf": 1,
        "ocr/other.txt": 1,
        "ocr/unique.txt": 0,
    }
    os.remove(Path(layout.root, "artifacts/copies/a-copy.pdf"))
    index.rescan()
    check.run()
    assert not actions(layout)
    assert list(actions(layout, "completed")) == [key]


def test_dismissed_action_is_not_raised_again(layout: Layout, index: Watcher) -> None:
    """A dismissed action stays dismissed while nothing new happens; a new copy raises it again."""
    write(layout, "documents/a.txt", "twin")
    write(layout, "ocr/b.txt", "twin")
    index.rescan()
    check = checks(layout)
    check.run()
    q(layout, "UPDATE pending_actions SET status = 'dismissed', updated_at = ?", (time.time(),))
    check.run()
    assert not actions(layout)
    time.sleep(0.01)
    write(layout, "extractions/c.txt", "twin")
    index.rescan()
    check.run()
    [text] = actions(layout).values()
    assert "3 places" in text


def test_unfinished_hashing_never_closes_a_duplicate(layout: Layout, index: Watcher) -> None:
    """While candidates wait to be hashed (budget spent), open duplicate actions stay open."""
    write(layout, "documents/a.txt", "twin")
    write(layout, "ocr/b.txt", "twin")
    index.rescan()
    checks(layout).run()
    os.utime(Path(layout.root, "ocr/b.txt"), (1, 1))  # changed: its hash must be recomputed
    index.rescan()
    report = checks(layout, hash_budget_seconds=-1).run()
    assert report.hashes_pending == 1
    assert len(actions(layout)) == 1
    assert checks(layout).run().hashes_pending == 0
    assert len(actions(layout)) == 1


def test_many_orphans_are_capped(layout: Layout, index: Watcher) -> None:
    """25 unprocessed documents give 19 actions and one summary, not 25 actions."""
    for i in range(25):
        write(layout, f"documents/doc-{i:02d}.pdf", f"doc {i}")
    index.rescan()
    checks(layout, unprocessed_seconds=0).run(time.time() + 1)
    found = actions(layout)
    assert len(found) == 20 and "unprocessed:+more" in found
    assert "6 more" in found["unprocessed:+more"]
