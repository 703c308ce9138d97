"""``wsd import`` from what people have today (issue 34): the MCP memory server's
``memory.jsonl`` (made by the real npm server), claude-mem's database (made by claude-mem's own
code), a Claude Code auto-memory folder and plain Markdown; all of a file or none of it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import (
    daemon_env,
    import_lines,
    query,
    running_daemon,
    scalar,
    venv_script,
    wait_for,
    write_turns,
    wsd,
)
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.store import Store
from wsd.schema.layout import Layout

DATA = Path(__file__).parent / "data" / "imports"
MCP = DATA / "mcp-memory" / "memory.jsonl"
CLAUDE_MEM = DATA / "claude-mem" / "claude-mem.db"
ROWS = "SELECT type, content, created_at, ref FROM learnings ORDER BY id"


def _env(layout: Layout) -> dict[str, str]:
    return {"WSD_WORKSPACE": layout.root, "PATH": os.environ["PATH"]}


def _learnings(layout: Layout) -> list[tuple[str, str, float, str]]:
    return [tuple(r) for r in query(layout.memory_db, ROWS)]  # type: ignore[misc]


def _count(layout: Layout) -> int:
    return int(scalar(layout.memory_db, "SELECT count(*) FROM learnings"))


def test_the_mcp_memory_servers_file(layout: Layout) -> None:
    """memory.jsonl as the real server wrote it: each observation a learning naming its
    entity, each relation a fact; a preference told as one; the file's date; its line as
    ref; the fake key redacted; a dry run changes nothing; a second import adds nothing."""
    env = _env(layout)
    lines = [json.loads(x) for x in MCP.read_text().splitlines() if x.strip()]
    expected = sum(len(x["observations"]) for x in lines if x["type"] == "entity") + sum(
        1 for x in lines if x["type"] == "relation"
    )
    dry = wsd(env, "import", str(MCP), "--dry-run").stdout
    assert f"would import {expected} learning(s) from mcp-memory" in dry
    assert _count(layout) == 0
    assert f"imported {expected} learning(s)" in wsd(env, "import", str(MCP)).stdout
    rows = {content: (kind, created, ref) for kind, content, created, ref in _learnings(layout)}
    mtime = MCP.stat().st_mtime
    assert rows["Ada Moreau: allergic to hazelnuts"] == ("fact", mtime, "memory.jsonl:1")
    assert rows["Ada Moreau leads Project Heron"][0] == "fact"
    assert rows["Ada Moreau: prefers answers in bullet points"][0] == "preference"
    assert any(c.startswith("Zoë Łukasiewicz: ") for c in rows)
    assert not any("sk-ant" in c for c in rows)
    assert any("[REDACTED:anthropic_key]" in c for c in rows)
    assert b"sk-ant" not in Path(layout.memory_db).read_bytes()
    again = wsd(env, "import", str(MCP)).stdout
    assert "imported 0 learning(s)" in again and f"{expected} duplicate(s)" in again
    assert _count(layout) == expected
    hits = json.loads(wsd(env, "search", "hazelnuts", "--json").stdout)
    assert hits[0]["snippet"] == "Ada Moreau: allergic to hazelnuts"


def test_claude_mems_database(layout: Layout, tmp_path: Path) -> None:
    """claude-mem.db as claude-mem made it: each observation a learning (its project, title,
    narrative and facts), each session summary a fact; dates kept (milliseconds); bugfix a
    correction, decision a pattern; the row as ref; the key redacted; the database left as
    it was (no -wal or -shm beside it); a second import adds nothing."""
    (tmp_path / "home").mkdir()
    db = tmp_path / "home" / "claude-mem.db"
    shutil.copy(CLAUDE_MEM, db)
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    source = sqlite3.connect(f"file:{CLAUDE_MEM}?mode=ro&immutable=1", uri=True)
    observations = source.execute("SELECT count(*) FROM observations").fetchone()[0]
    summaries = source.execute("SELECT count(*) FROM session_summaries").fetchone()[0]
    seven = source.execute(
        "SELECT created_at_epoch, title FROM observations WHERE id = 7"
    ).fetchone()
    source.close()
    env = _env(layout)
    out = wsd(env, "import", str(db)).stdout
    assert f"imported {observations + summaries} learning(s) from claude-mem" in out
    rows = {ref: (kind, content, created) for kind, content, created, ref in _learnings(layout)}
    kind, content, created = rows["claude-mem.db:observations/7"]
    assert kind == "correction" and content.startswith(f"heron-api: {seven[1]}")
    assert created == seven[0] / 1000
    assert "[REDACTED:anthropic_key]" in content and "sk-ant" not in content
    assert "Facts: " in content
    kinds = {ref: k for ref, (k, _c, _t) in rows.items()}
    assert "pattern" in kinds.values() and "fact" in kinds.values()
    assert rows["claude-mem.db:session_summaries/1"][1].startswith("heron-api: session: asked:")
    assert sorted(p.name for p in db.parent.iterdir()) == ["claude-mem.db"]
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest
    assert "imported 0 learning(s)" in wsd(env, "import", str(db), "--from", "claude-mem").stdout


MEMORY_MD = """# Memory
- [Ada's role](user_role.md) — who Ada is
- [Bullet points](feedback_bullets.md) — how to answer
- [Heron](project_heron.md) — the project
- [Runbook](reference_runbook.md) — where the runbook is
Ada's cat is called Miso.
"""
FILES = {
    "user_role.md": """---
name: user-role
description: >-
  Ada is a data engineer
  who leads Project Heron
metadata:
  type: user
  colour: teal
---
""",
    "feedback_bullets.md": """---
name: bullets
description: "Answer in bullet points"
metadata:
  type: feedback
unknown_key: [1, 2]
---

Answer in bullet points, not prose. See [[project_heron]].
""",
    "project_heron.md": """---
name: heron
description: Heron's deadline
metadata: {type: project}
created: 2026-01-09
---
The Heron deadline is 2026-03-14; the pilot customer depends on it.
""",
    "reference_runbook.md": """---
name: runbook
description: The on-call runbook
type: reference
---
The on-call runbook is in the wiki under Ops/Heron.
""",
    "notes.md": """# Notes

- Prefers tea over coffee
* Lives in Lyon

```sh
make deploy   # not a memory
```
<!-- a comment
over lines -->
1. Stand-up is at 9:30
---
""",
}


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "MEMORY.md").write_text(MEMORY_MD)
    for name, text in FILES.items():
        (folder / name).write_text(text)
    return folder


def test_a_claude_code_auto_memory_folder(layout: Layout, tmp_path: Path) -> None:
    """Each memory file one learning of its type (user a preference, feedback a correction,
    project and reference facts), its description and body, [[links]] kept, its frontmatter
    date, unknown keys ignored; the index's link lines not imported twice, its other lines
    and a plain file's lines facts; a broken file, a link and a picture skipped and said
    (exit 1), the rest imported; again: nothing added."""
    folder = _folder(tmp_path)
    (folder / "broken.md").write_text("---\nname: [unclosed\n---\nbody\n")
    (folder / "bad_type.md").write_text("---\nmetadata:\n  type: diary\n---\nbody\n")
    (folder / "link.md").symlink_to(folder / "notes.md")
    (folder / "photo.png").write_bytes(b"\x89PNG")
    done = wsd(_env(layout), "import", str(folder), check=False)
    assert done.returncode == 1, done.stderr
    skipped = done.stderr
    assert "skipped broken.md: frontmatter is not YAML" in skipped
    assert "skipped bad_type.md" in skipped and "'diary' is not one of" in skipped
    assert "skipped link.md: a link: not followed" in skipped
    assert "skipped photo.png: not a Markdown file" in skipped
    rows = {content: (kind, created, ref) for kind, content, created, ref in _learnings(layout)}
    assert rows["Ada is a data engineer who leads Project Heron"][0] == "preference"
    bullets = "Answer in bullet points, not prose. See [[project_heron]]."
    assert rows[bullets][0] == "correction"
    heron = "Heron's deadline: The Heron deadline is 2026-03-14; the pilot customer depends on it."
    assert rows[heron][:2] == ("fact", 1767916800.0)  # 2026-01-09 UTC
    assert rows["The on-call runbook is in the wiki under Ops/Heron."][0] == "fact"
    assert rows["Ada's cat is called Miso."] == (
        "fact",
        (folder / "MEMORY.md").stat().st_mtime,
        "MEMORY.md:6",
    )
    assert {"Prefers tea over coffee", "Lives in Lyon", "Stand-up is at 9:30"} <= set(rows)
    assert not any("deploy" in c or "comment" in c or "Ada's role" in c for c in rows)
    assert len(rows) == 4 + 1 + 3
    assert "imported 0 learning(s)" in wsd(_env(layout), "import", str(folder), check=False).stdout


def test_one_markdown_file(layout: Layout, tmp_path: Path) -> None:
    """A CLAUDE.md is a fact a line, each naming its file and line."""
    path = tmp_path / "CLAUDE.md"
    path.write_text("# Project rules\n\n- Use two spaces for YAML\n- Never push to main\n")
    wsd(_env(layout), "import", str(path))
    assert [(c, r) for _k, c, _t, r in _learnings(layout)] == [
        ("Use two spaces for YAML", "CLAUDE.md:3"),
        ("Never push to main", "CLAUDE.md:4"),
    ]


def _locked(db: Path) -> subprocess.Popen[str]:
    """A process holding an exclusive lock on ``db`` (a writer mid-transaction)."""
    code = (
        "import sqlite3, sys\n"
        f"c = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
        "c.execute('BEGIN EXCLUSIVE')\n"
        "print('locked', flush=True)\n"
        "sys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "locked\n"
    return proc


def _bad(tmp_path: Path, kind: str) -> tuple[list[str], str]:
    """(the import's arguments, what its one line must say) for one kind of bad input."""
    good = MCP.read_text().splitlines()
    path = tmp_path / "in.jsonl"
    if kind == "broken mcp line":
        path.write_text("\n".join([*good[:3], '{"type":"entity","name":', *good[3:]]))
        return [str(path)], "in.jsonl:4: not valid JSON"
    if kind == "wrong type":
        line = json.dumps({"type": "entity", "name": "X", "observations": "not a list"})
        path.write_text("\n".join([*good[:2], line]))
        return [str(path)], "in.jsonl:3: observations must be a list of strings"
    if kind == "not what --from says":
        path.write_text(json.dumps({"type": "fact", "content": "Tea"}) + "\n")
        return [str(path), "--from", "mcp-memory"], "in.jsonl:1: type 'fact' is neither"
    if kind == "jsonl as claude-mem":
        path.write_text(json.dumps({"type": "fact", "content": "Tea"}) + "\n")
        return [str(path), "--from", "claude-mem"], "in.jsonl: not a SQLite database"
    if kind == "another database":
        db = tmp_path / "other.db"
        other = sqlite3.connect(db)
        other.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY)")
        other.close()
        return [str(db)], "other.db: has no observations table: not a claude-mem database"
    if kind == "a bad claude-mem row":
        db = tmp_path / "claude-mem.db"
        shutil.copy(CLAUDE_MEM, db)
        with sqlite3.connect(db) as c:
            c.execute("UPDATE observations SET facts = '{oops' WHERE id = 5")
        c.close()
        return [str(db)], "claude-mem.db:observations/5: facts is not a JSON list"
    if kind == "huge":
        with path.open("wb") as fh:
            fh.truncate(600 * 1024 * 1024)  # sparse: costs no disk
        return [str(path)], "over the 536,870,912 byte limit"
    if kind == "link":
        path.symlink_to(MCP)
        return [str(path)], "is a link (to"
    if kind == "fifo":
        os.mkfifo(path)
        return [str(path)], "is a FIFO: not read"
    raise AssertionError(kind)


BAD = [
    "broken mcp line",
    "wrong type",
    "not what --from says",
    "jsonl as claude-mem",
    "another database",
    "a bad claude-mem row",
    "huge",
    "link",
    "fifo",
]


@pytest.mark.parametrize("kind", BAD)
def test_bad_input_is_one_line_and_imports_nothing(
    layout: Layout, tmp_path: Path, kind: str
) -> None:
    """A broken line, a wrong type, a file that is not what --from says, a database that is
    not claude-mem's or has a bad row, a huge file, a link, a FIFO: one line naming the file
    (and the line or row), exit 2, nothing imported, never a hang."""
    wsd(_env(layout), "import", str(MCP))  # something there already, that must stay as it is
    before = _learnings(layout)
    args, said = _bad(tmp_path, kind)
    started = time.monotonic()
    done = wsd(_env(layout), "import", *args, check=False, timeout=30)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and "nothing was imported" in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    assert _learnings(layout) == before
    assert time.monotonic() - started < 20


def test_a_locked_database_is_said_and_waited_for_no_longer_than_the_busy_timeout(
    layout: Layout, tmp_path: Path
) -> None:
    """claude-mem's database locked by a writer (a rollback journal, mid-transaction): one
    line saying it is locked, exit 2, nothing imported; once the writer is done, it imports."""
    db = tmp_path / "claude-mem.db"
    shutil.copy(CLAUDE_MEM, db)
    with sqlite3.connect(db) as c:
        c.execute("PRAGMA journal_mode = DELETE")
    c.close()
    writer = _locked(db)
    try:
        done = wsd(_env(layout), "import", str(db), check=False, timeout=30)
    finally:
        writer.communicate("")
    assert done.returncode == 2
    assert "claude-mem.db: is locked by a program writing it" in done.stderr
    assert _count(layout) == 0
    assert "imported 15 learning(s)" in wsd(_env(layout), "import", str(db)).stdout


def test_what_was_forgotten_or_retracted_is_not_imported_again(layout: Layout) -> None:
    """After ``wsd forget hazelnuts`` and a retraction, importing the same file again brings
    neither back (each counted), and the rest is a duplicate."""
    env = _env(layout)
    wsd(env, "import", str(MCP))
    total = _count(layout)
    wsd(env, "forget", "hazelnuts", "--yes")
    [(lid,)] = query(layout.memory_db, "SELECT id FROM learnings WHERE content LIKE '%Lyon%Fri%'")
    assert Store(layout).learnings.retract(lid, time.time())
    out = wsd(env, "import", str(MCP)).stdout
    assert "imported 0 learning(s)" in out
    assert "1 retracted before" in out and "1 holding forgotten words" in out
    assert _count(layout) == total - 2
    assert not any("hazelnut" in c for _k, c, _t, _r in _learnings(layout))


def test_imported_memory_file_lines_are_added_to_a_persons_own_edit(
    layout: Layout, tmp_path: Path
) -> None:
    """An import that carries user.md adds its lines after what the person wrote (their
    edit, not yet adopted, recorded first: never written over); its dry run says so and
    writes nothing; a file that would pass its line limit refuses the whole import."""
    user = Path(layout.md("user.md"))
    user.write_text("# User\n- My daughter is called Mia\n")
    path = tmp_path / "export.jsonl"
    lines = [
        {"kind": "learning", "id": 1, "type": "fact", "content": "Tea at four",
         "created_at": 1700000000.0},
        {"kind": "md", "file": "user.md", "content": "# User\n- Prefers tea over coffee\n"},
    ]  # fmt: skip
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    dry = wsd(_env(layout), "import", str(path), "--dry-run").stdout
    assert "user.md: 1 line(s) added" in dry
    assert user.read_text() == "# User\n- My daughter is called Mia\n"  # a dry run: no file
    assert [r.source for r in Store(layout).revisions.md_history("user.md")][-1:] != ["import"]
    out = wsd(_env(layout), "import", str(path)).stdout
    assert "user.md: 1 line(s) added" in out
    assert user.read_text() == "# User\n- My daughter is called Mia\n- Prefers tea over coffee\n"
    sources = [r.source for r in Store(layout).revisions.md_history("user.md")]
    assert sources[-2:] == ["hand", "import"]
    long = "# User\n" + "".join(f"- Line {i}\n" for i in range(250))
    lines[1]["content"] = long
    lines[0]["content"] = "Coffee at five"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    done = wsd(_env(layout), "import", str(path), check=False)
    assert done.returncode == 2 and "user.md would have" in done.stderr
    assert "over its limit of 200" in done.stderr
    assert "Coffee at five" not in [c for _k, c, _t, _r in _learnings(layout)]
    assert "Line 3" not in user.read_text()


def test_a_large_file_is_parsed_on_every_core_and_still_all_or_nothing(
    layout: Layout, tmp_path: Path
) -> None:
    """Past two chunks the lines are parsed by worker processes while the store writes: a
    bad line in a late chunk still names its line and rolls everything back; whole, every
    line is imported, in the file's order."""
    from wsd.daemon.memory.transfer import parallel

    n = parallel.CHUNK * 2 + 500
    lines = [json.dumps({"type": "fact", "content": f"Note number {i}"}) for i in range(n)]
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join([*lines[: n - 100], "{broken", *lines[n - 100 :]]) + "\n")
    done = wsd(_env(layout), "import", str(path), check=False)
    assert done.returncode == 2 and f"big.jsonl:{n - 99}: not valid JSON" in done.stderr
    assert _count(layout) == 0
    trigger = "SELECT sql FROM sqlite_master WHERE name = 'learnings_ai'"
    indexing = query(layout.memory_db, trigger)
    path.write_text("\n".join(lines) + "\n")
    assert f"imported {n} learning(s)" in wsd(_env(layout), "import", str(path)).stdout
    contents = [c for _k, c, _t, _r in _learnings(layout)]
    assert contents == [f"Note number {i}" for i in range(n)]
    # Indexed in one statement at the end (the trigger dropped meanwhile, then made again):
    # the index is whole, and what comes after is indexed by the trigger as before.
    assert query(layout.memory_db, trigger) == indexing
    query(layout.memory_db, "INSERT INTO learnings_fts (learnings_fts) VALUES ('integrity-check')")
    import_lines(layout, [json.dumps({"type": "fact", "content": "Quince jam"})])
    for words in ("Note number 4321", "Quince jam"):
        hits = json.loads(wsd(_env(layout), "search", words, "--json").stdout)
        assert hits and hits[0]["snippet"] == words


def test_a_large_import_pauses_the_running_daemon_and_a_small_one_does_not(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """Beside ``wsd run``: an import over 1 MiB holds the daemon off while it writes (its
    batch commit would otherwise wait out its busy timeout and lose a reply paid for), and
    the daemon curates on after it; a small one writes at once, without a pause."""
    from wsd.daemon.memory.transfer import importer

    env = daemon_env(layout, standin, WSD_BATCH_TURNS="1")
    big = tmp_path / "big.jsonl"
    line = '{"type": "fact", "content": "Note %d about the garden shed and its long shelves"}'
    big.write_text("\n".join(line % i for i in range(importer.PAUSE_BYTES // 60)) + "\n")
    assert big.stat().st_size > importer.PAUSE_BYTES
    with running_daemon(env, tmp_path / "wsd.log"):
        write_turns(layout, 1, start=0, prompt="I prefer tabs over spaces.")
        assert wait_for(lambda: scalar(layout.memory_db, "SELECT count(*) FROM batches") == 1)
        small = wsd(env, "import", str(MCP))
        assert "paus" not in small.stderr
        done = wsd(env, "import", str(big))
        assert "daemon paused" in done.stderr and "imported" in done.stdout
        assert not os.path.exists(os.path.join(layout.memory_dir, "rebuild.pause"))
        write_turns(layout, 1, start=1, prompt="I prefer dark mode.")
        assert wait_for(lambda: scalar(layout.memory_db, "SELECT count(*) FROM batches") == 2)


def test_standard_input_is_read_as_it_comes_and_never_copied_to_a_file(
    layout: Layout, tmp_path: Path
) -> None:
    """``wsd import -`` reads our JSON lines from standard input (no copy of them left in a
    temporary file a killed import would leave behind); a bad line is named as ``-:N``."""
    env = _env(layout) | {"TMPDIR": str(tmp_path)}
    good = json.dumps({"type": "fact", "content": "The boiler is serviced in May"})
    done = subprocess.run(
        [venv_script("wsd"), "import", "-"], input=good + "\n", env=env, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and "imported 1 learning(s) from wsd" in done.stdout
    bad = subprocess.run(
        [venv_script("wsd"), "import", "-"], input=good + "\n{oops\n", env=env,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bad.returncode == 2 and "-:2: not valid JSON" in bad.stderr
    assert [p for p in tmp_path.iterdir() if p.name.startswith("wsd")] == []
    assert _count(layout) == 1


def test_a_date_in_the_future_is_taken_as_the_imports_time(layout: Layout, tmp_path: Path) -> None:
    """A learning (or action) dated in 2100 would sit at the top of every boot context until
    then: it is stored as imported now (and found again as stored by a second import); a
    date in the past is kept as it is."""
    path = tmp_path / "dates.jsonl"
    lines = [
        {"type": "fact", "content": "From a clock far ahead", "created_at": 4102444800},
        {"type": "fact", "content": "From last year", "created_at": 1767225600},
        {"kind": "action", "content": "Renew the passport", "priority": 1, "status": "completed",
         "source": "curator", "created_at": 4102444800, "updated_at": 4102444800,
         "dedup_key": "renew passport"},
    ]  # fmt: skip
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    before = time.time()
    wsd(_env(layout), "import", str(path))
    rows = {c: t for _k, c, t, _r in _learnings(layout)}
    assert before <= rows["From a clock far ahead"] <= time.time()
    assert rows["From last year"] == 1767225600.0
    [(created, updated, source)] = query(
        layout.memory_db, "SELECT created_at, updated_at, source FROM pending_actions"
    )
    assert created <= time.time() and updated <= time.time() and source == "import"
    again = wsd(_env(layout), "import", str(path)).stdout  # found again as it was stored
    assert "actions: 0 added, 1 already there" in again and "imported 0 learning(s)" in again


def _children(pid: int) -> list[int]:
    """The processes ``pid`` started (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat_ = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat_.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_an_import_killed_midway_adds_nothing_and_doctor_names_what_it_left(
    layout: Layout, tmp_path: Path
) -> None:
    """kill -9 while a large import writes: not one of its learnings is in memory.db (one
    transaction), ``wsd doctor`` names the pause file it left (``--fix`` removes it), and the
    same import run again adds everything."""
    from wsd.daemon.memory.transfer import importer, parallel

    path = tmp_path / "big.jsonl"
    line = '{"type": "fact", "content": "Entry %d of the long list of garden chores to do"}'
    n = importer.PAUSE_BYTES // 50
    path.write_text("\n".join(line % i for i in range(n)) + "\n")
    pause_file = Path(layout.memory_dir) / "rebuild.pause"
    proc = subprocess.Popen(
        [venv_script("wsd"), "import", str(path)],
        env=_env(layout),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert wait_for(lambda: pause_file.exists() or proc.poll() is not None, every=0.01)
    time.sleep(0.5)  # parsing and writing
    workers = _children(proc.pid)
    assert workers or parallel.workers() < 2  # parsed by workers here (two cores or more)
    proc.kill()
    proc.wait()
    assert _count(layout) == 0
    # Its parse workers end with it (they slept on for ever, holding memory, before).
    assert wait_for(lambda: not any(_alive(p) for p in workers), timeout=10), workers
    doctor = wsd(_env(layout), "doctor", check=False).stdout
    assert "a wsd import died and left rebuild.pause" in doctor
    wsd(_env(layout), "doctor", "--fix", check=False)
    assert not pause_file.exists()
    assert f"imported {n} learning(s)" in wsd(_env(layout), "import", str(path)).stdout


def test_a_folder_of_exports_imports_each_learning_once(layout: Layout, tmp_path: Path) -> None:
    """`wsd import exp` of a folder holding two jsonl exports and a markdown export in `md/`
    (issue 45): exit 0, each learning once (the rest counted duplicates), the exported
    user.md's lines merged into user.md and no index line, no user.md line made a fact."""
    env = _env(layout)
    wsd(env, "import", str(MCP))
    before = sorted(c for _t, c, _d, _r in _learnings(layout))
    Path(layout.md("user.md")).write_text("# User\n- Name: Ana\n- Likes green tea\n")
    exp = tmp_path / "exp"
    exp.mkdir()
    for args in (["exp/a.jsonl"], ["exp/b.jsonl"], ["--format", "markdown", "exp/md"]):
        wsd(env, "export", *[str(tmp_path / a) if a.startswith("exp") else a for a in args])
    fresh = Layout(str(tmp_path / "fresh"))
    wsd({**env, "WSD_WORKSPACE": fresh.root}, "init")
    done = wsd({**env, "WSD_WORKSPACE": fresh.root}, "import", str(exp), check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    after = sorted(c for _t, c, _d, _r in _learnings(fresh))
    assert f"imported {len(before)} learning(s)" in done.stdout, set(after) - set(before)
    assert after == before
    assert "- Likes green tea" in Path(fresh.md("user.md")).read_text()
