"""Read-only commands on a workspace whose memory.db is missing (deleted, waiting for the daemon
or a rebuild) or an empty file: a plain message naming the state and what makes it, no
traceback, and nothing created or changed (issue 21: status and doctor ended in ``no such
table: batches`` and left an empty memory.db behind)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import wsd
from wsd.schema.layout import Layout

COMMANDS = [
    ("status",),
    ("status", "--json"),
    ("doctor",),
    ("search", "invoice"),
    ("pending",),
    ("pending", "complete", "1"),
    ("memory", "history", "user.md"),
    ("memory", "diff", "user.md", "1"),
]


def _env(layout: Layout) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WSD_", "ANTHROPIC_"))}
    return env | {"WSD_WORKSPACE": layout.root}


@pytest.mark.parametrize("state", ["missing", "empty"])
@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_missing_or_empty_memory_db_is_said_plainly_and_left_alone(
    layout: Layout, args: tuple[str, ...], state: str
) -> None:
    """Each read-only command exits 1 with a message naming memory.db's state; the file stays
    absent, or empty, and no -wal/-shm appears."""
    db = Path(layout.memory_db)
    for path in Path(layout.memory_dir).glob("memory.db*"):
        path.unlink()
    if state == "empty":
        db.touch(mode=0o600)
    result = wsd(_env(layout), *args, check=False)
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert "Traceback" not in out and "no such table" not in out
    said = "missing" if state == "missing" else "no schema"
    assert "memory.db" in out and said in out, out
    assert sorted(p.name for p in Path(layout.memory_dir).glob("memory.db*")) == (
        [] if state == "missing" else ["memory.db"]
    )
    assert state == "missing" or db.stat().st_size == 0
    if args == ("status", "--json"):
        assert json.loads(result.stdout)["databases"] == {
            "memory.db": "is missing" if state == "missing" else "has no schema yet"
        }
