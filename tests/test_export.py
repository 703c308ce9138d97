"""``wsd export`` (issue 34): our JSON lines lose nothing (imported into a fresh workspace,
the same search results, md files and boot context), Claude Code's markdown layout reads
back, and an export is a private, consistent snapshot that never blocks curation and never
carries what was retracted or forgotten."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import (
    drain,
    flush,
    make_config,
    make_worker,
    query,
    scalar,
    write_turns,
    wsd,
)
from wsd.daemon.curation.rebuild.rebuild import rebuild
from wsd.daemon.ops.bootstrap import init_workspace
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.store import Store
from wsd.schema.layout import Layout

PROMPTS = [
    "I prefer tabs over spaces. Remind me to water the plants.",
    "Please always use black for formatting. Remind me to call the school.",
    "From now on I want the reports in report.pdf",
    "I prefer short answers. Anyway, pip install rich",
]
LEARNINGS = (
    "SELECT id, type, content, created_at, session_id, confidence, ref, superseded_by,"
    " superseded_at FROM learnings ORDER BY id"
)
ACTIONS = (
    "SELECT id, content, priority, status, created_at, updated_at, dedup_key, source_learning_id"
    " FROM pending_actions"
)
QUERIES = ["tabs", "black formatting", "report", "short answers", "plants", "rich"]


def _env(layout: Layout) -> dict[str, str]:
    return {"WSD_WORKSPACE": layout.root, "PATH": os.environ["PATH"]}


def _curated(layout: Layout, standin: BridgeStandin) -> None:
    """A workspace as weeks of use leave it: learnings from turns, one superseded, actions
    open and closed, memory files with a person's own line in them."""
    worker = make_worker(layout, standin, batch_turns=1)
    for i, prompt in enumerate(PROMPTS):
        write_turns(layout, 1, start=i, prompt=prompt)
        flush(layout)
        drain(worker)
        if i == 1:
            user = Path(layout.md("user.md"))
            user.write_text(user.read_text() + "- My daughter is called Mia\n")
    worker.status.update(state="stopped", force=True)
    conn_rows = query(layout.memory_db, "SELECT id FROM learnings ORDER BY id")
    assert len(conn_rows) >= 4
    old, new = conn_rows[0][0], conn_rows[-1][0]
    import apsw

    conn = apsw.Connection(layout.memory_db)
    conn.execute(
        "UPDATE learnings SET superseded_by = ?, superseded_at = 1790000000.5 WHERE id = ?",
        (new, old),
    )
    conn.close()
    [(action,)] = query(
        layout.memory_db, "SELECT id FROM pending_actions WHERE content LIKE '%school%'"
    )
    assert Store(layout).actions.set_action_status(action, "dismissed", time.time())


def _fresh(tmp_path: Path, name: str) -> Layout:
    root = tmp_path / name
    root.mkdir()
    layout = Layout(str(root))
    init_workspace(layout, templates=None)
    return layout


def _search(layout: Layout) -> list[list[tuple[Any, ...]]]:
    """Each query's learning hits, as a person sees them (turns are the transcript's)."""
    out = []
    for words in QUERIES:
        hits = json.loads(wsd(_env(layout), "search", words, "--json").stdout)
        out.append(
            [
                (h["type"], h["snippet"], h["date"], h["ref"], h["superseded_by"] is None)
                for h in hits
                if h["type"] != "turn"
            ]
        )
    return out


def _boot(layout: Layout) -> str:
    return wsd(_env(layout), "boot-context").stdout.replace(layout.root, "WORKSPACE")


def test_a_jsonl_export_imported_into_a_fresh_workspace_is_the_same_memory(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """Export (with --history), import into a fresh workspace: the same learnings (ids,
    dates, sources, supersession), actions (ids, open and closed), md files and their
    revisions (each with its source: issue 45 found every one had become "import"), search
    results and boot context; exporting that workspace again gives the same lines."""
    _curated(layout, standin)
    out = tmp_path / "memory.jsonl"
    said = wsd(_env(layout), "export", str(out), "--history").stdout
    assert said.startswith("exported ") and "revision(s)" in said
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    fresh = _fresh(tmp_path, "fresh")
    wsd(_env(fresh), "import", str(out))
    assert query(fresh.memory_db, LEARNINGS) == query(layout.memory_db, LEARNINGS)
    sources = "SELECT learning_id, transcript_identity, observation_id, cited FROM learning_sources"
    assert sorted(query(fresh.memory_db, sources)) == sorted(query(layout.memory_db, sources))
    assert sorted(query(fresh.memory_db, ACTIONS)) == sorted(query(layout.memory_db, ACTIONS))
    for name in ("user.md", "context.md", "tools.md"):
        assert Path(fresh.md(name)).read_text() == Path(layout.md(name)).read_text(), name
    assert "- My daughter is called Mia" in Path(fresh.md("user.md")).read_text()
    assert _search(fresh) == _search(layout)
    assert _boot(fresh) == _boot(layout)
    again = tmp_path / "again.jsonl"
    wsd(_env(fresh), "export", str(again), "--history")

    def body(path: Path) -> list[str]:
        # Curation in the fresh workspace did not make its actions: their source says import.
        return [x.replace('"source": "import"', '"source": "curator"') for x in
                path.read_text().splitlines()[1:]]  # fmt: skip

    assert body(again) == body(out)
    assert '"kind": "revision"' in out.read_text()
    history = wsd(_env(fresh), "memory", "history", "user.md").stdout
    assert "curator (imported)" in history and " import " not in history
    assert "imported 0 learning(s)" in wsd(_env(fresh), "import", str(out)).stdout
    # A rebuild remakes what this workspace's batches made (none): the import stays whole.
    files = {n: Path(fresh.md(n)).read_text() for n in ("user.md", "context.md", "tools.md")}
    rebuild(make_config(fresh, standin), progress=lambda _line: None)
    assert query(fresh.memory_db, LEARNINGS) == query(layout.memory_db, LEARNINGS)
    assert {n: Path(fresh.md(n)).read_text() for n in files} == files
    assert sorted(query(fresh.memory_db, ACTIONS)) == sorted(query(layout.memory_db, ACTIONS))


def test_an_imported_export_keeps_the_ids_the_agent_saw(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """A learning's `L<n>` and an action's `#n` name the same thing once an export is
    imported (issue 45: a re-import renumbered them, and a `[replaces L5]` dangled): into a
    fresh workspace, every id is kept across the gaps a forget leaves; into a workspace with
    memory of its own, an id it gave already is a new one (the import says how many, and the
    supersession and the action's learning follow it), every other is kept."""
    _curated(layout, standin)
    ids = [r[0] for r in query(layout.memory_db, "SELECT id FROM learnings ORDER BY id")]
    assert Store(layout).learnings.retract(ids[1], time.time())
    import apsw

    conn = apsw.Connection(layout.memory_db)
    conn.execute("UPDATE pending_actions SET source_learning_id = ? WHERE id = 1", (ids[0],))
    conn.execute("DELETE FROM pending_actions WHERE id = 2")  # as a forget of its words does
    conn.close()
    out = tmp_path / "memory.jsonl"
    wsd(_env(layout), "export", str(out))
    fresh = _fresh(tmp_path, "fresh")
    said = wsd(_env(fresh), "import", str(out)).stdout
    assert "new ids" not in said
    assert query(fresh.memory_db, LEARNINGS) == query(layout.memory_db, LEARNINGS)
    assert sorted(query(fresh.memory_db, ACTIONS)) == sorted(query(layout.memory_db, ACTIONS))
    # A workspace that already gave L1 (and #1) to memory of its own.
    other = _fresh(tmp_path, "other")
    own = tmp_path / "own.jsonl"
    own.write_text(json.dumps({"type": "fact", "content": "The other laptop is grey"}) + "\n")
    wsd(_env(other), "import", str(own))
    conn = apsw.Connection(other.memory_db)
    conn.execute(
        "INSERT INTO pending_actions (created_at, updated_at, content, source, dedup_key)"
        " VALUES (1, 1, 'Back up the grey laptop', 'watcher', 'grey')"
    )
    conn.close()
    said = wsd(_env(other), "import", str(out)).stdout
    assert "ids: 2 learning(s) or action(s) given new ids" in said, said
    theirs = {r[0]: r[1:] for r in query(layout.memory_db, LEARNINGS)}
    here = {r[0]: r[1:] for r in query(other.memory_db, LEARNINGS)}
    assert here[1][1] == "The other laptop is grey"
    assert 1 in theirs and all(here[lid][:3] == theirs[lid][:3] for lid in theirs if lid != 1)
    [(new_id,)] = query(other.memory_db, "SELECT id FROM learnings WHERE content = ?",
                        (theirs[1][1],))  # fmt: skip
    assert new_id > max(theirs)
    [(superseded_by,)] = query(other.memory_db, "SELECT superseded_by FROM learnings WHERE id = ?",
                               (new_id,))  # fmt: skip
    assert superseded_by == theirs[1][6]
    [(first,)] = query(layout.memory_db, "SELECT content FROM pending_actions WHERE id = 1")
    assert query(other.memory_db, "SELECT content FROM pending_actions WHERE id = 1") == [
        ("Back up the grey laptop",)
    ]
    [(linked,)] = query(
        other.memory_db,
        "SELECT count(*) FROM pending_actions WHERE source_learning_id = ? AND content = ?",
        (new_id, first),
    )
    assert linked == 1


def test_the_markdown_export_is_claude_codes_layout_and_reads_back(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """MEMORY.md links one file a current learning (frontmatter name, description,
    metadata.type, created, source), the curated files beside it; every file 0600, the
    folder 0700; ``wsd import`` of the folder gives the same current learnings and files."""
    _curated(layout, standin)
    dest = tmp_path / "claude-memory"
    wsd(_env(layout), "export", str(dest), "--format", "markdown")
    assert stat.S_IMODE(dest.stat().st_mode) == 0o700
    files = sorted(p.name for p in dest.iterdir())
    assert all(stat.S_IMODE((dest / f).stat().st_mode) == 0o600 for f in files)
    index = (dest / "MEMORY.md").read_text()
    current = query(
        layout.memory_db, "SELECT type, content FROM learnings WHERE superseded_by IS NULL"
    )
    memories = [f for f in files if f not in ("MEMORY.md", "user.md", "context.md", "tools.md")]
    assert len(memories) == len(current)
    for name in memories:
        assert f"]({name})" in index
        text = (dest / name).read_text()
        front = yaml.safe_load(text.split("---\n")[1])
        assert set(front) == {"name", "description", "metadata", "created", "source"}
        assert front["metadata"]["type"] in ("user", "feedback", "project", "reference")
    assert "user.md" in files and "](user.md)" in index
    fresh = _fresh(tmp_path, "fresh")
    wsd(_env(fresh), "import", str(dest))
    assert sorted(query(fresh.memory_db, "SELECT type, content FROM learnings")) == sorted(current)
    assert Path(fresh.md("user.md")).read_text() == Path(layout.md("user.md")).read_text()


@pytest.mark.parametrize("kind", ["a file", "a link", "a full folder", "no folder"])
def test_an_export_never_writes_over_anything(layout: Layout, tmp_path: Path, kind: str) -> None:
    """A destination that is a file, a link, a folder with something in it, or in a folder
    that does not exist: one line, exit 2, nothing written or changed."""
    out = tmp_path / "out"
    out.mkdir()
    dest = out / "dest"
    if kind == "a file":
        dest.write_text("mine")
    elif kind == "a link":
        dest.symlink_to(out / "elsewhere")
    elif kind == "a full folder":
        dest.mkdir()
        (dest / "mine.md").write_text("mine")
    else:
        dest = out / "nowhere" / "dest"
    before = sorted(str(p) for p in out.rglob("*"))
    for fmt in ("jsonl", "markdown"):
        done = wsd(_env(layout), "export", str(dest), "--format", fmt, check=False)
        assert done.returncode == 2 and "nothing was written" in done.stderr, done.stderr
        assert len(done.stderr.splitlines()) == 1
    assert sorted(str(p) for p in out.rglob("*")) == before
    if kind == "a file":
        assert dest.read_text() == "mine"


def test_an_export_is_a_snapshot_and_curation_goes_on_beside_it(
    layout: Layout, standin: BridgeStandin
) -> None:
    """While an export reads (its snapshot taken), the daemon commits a batch unblocked; the
    export holds the memory as it was when it began, the batch's learning not in it."""
    _curated(layout, standin)
    store = Store(layout)
    rows = store.transfer.snapshot()
    kind, head = next(rows)
    assert kind == "snapshot"
    write_turns(layout, 1, start=50, prompt="I prefer green tea in the afternoon")
    flush(layout)
    worker = make_worker(layout, standin, batch_turns=1)
    started = time.monotonic()
    assert "curated" in drain(worker)
    assert time.monotonic() - started < 10
    exported = [row[2] for kind, row in rows if kind == "learning"]
    assert len(exported) == head[0]
    assert not any("green tea" in c for c in exported)
    assert scalar(layout.memory_db, "SELECT count(*) FROM learnings") > head[0]


def test_an_export_leaves_out_what_was_forgotten_and_waits_for_an_unfinished_forget(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """What a person forgot or retracted is in no export; while an erasure is unfinished (a
    forget killed midway), export refuses (exit 2) rather than carry its words."""
    _curated(layout, standin)
    env = _env(layout)
    wsd(env, "forget", "black", "--yes")
    out = tmp_path / "out.jsonl"
    wsd(env, "export", str(out))
    assert "black" not in out.read_text().lower()
    Store(layout).erasure.journal_open([["report"]], "cli", time.time())
    done = wsd(env, "export", str(tmp_path / "second.jsonl"), check=False)
    assert done.returncode == 2 and "wsd forget is unfinished" in done.stderr
    assert not (tmp_path / "second.jsonl").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".wsd-tmp")] == []


@pytest.mark.parametrize(
    "content",
    [
        'She said: "ship it" # not a comment',
        "C:\\Users\\ada\\notes: a path, a tab\there",
        "Zoë's café — 東京オフィス ✓ [[project-heron]] - - -",
        "yes",
        "- a list? no: a line",
        "key: value\n---\nnot the end of the frontmatter",
    ],
)
def test_a_memory_files_frontmatter_reads_back_exactly(content: str) -> None:
    """Whatever a learning says (quotes, colons, backslashes, non-ASCII, a YAML word, a
    line of dashes), its file's frontmatter reads back with YAML as written, and its body
    is the learning."""
    from wsd.daemon.memory.transfer import markdown

    row = (7, "preference", content, 1790000000.0, None, 1.0, "notes.md:3", None, None, None)
    name, text, line = markdown.memory_file(row, ["abcd1234:9"])
    head, body = text[4:].split("\n---\n", 1)
    front = yaml.safe_load(head)
    assert front["description"] == " ".join(content.split())
    assert front["metadata"] == {"type": "user", "wsd_type": "preference"}
    assert front["created"] == "2026-09-21T14:13:20+00:00"
    assert front["source"] == "wsd learning #7, from turns abcd1234:9, imported from notes.md:3"
    assert body == content.strip() + "\n"
    assert line.endswith(f"]({name})") and name.startswith("preference-0007-")
