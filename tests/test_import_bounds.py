"""``wsd import`` of files built to hurt (issue 46, "Import"): each is answered in seconds and
under a fixed memory ceiling with one line naming the file (and the line or row), exit 2, or,
in a folder, is skipped and named while the rest is imported; SQL is never made of a foreign
database's names; nothing is ever written beside an input. Each import here is a real
``wsd import`` process run under ``RLIMIT_AS`` and ``RLIMIT_CPU``."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import resource
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import query, scalar, venv_script
from wsd.daemon.store import ForeignError, Incoming, claude_mem_rows
from wsd.schema.layout import Layout

CLAUDE_MEM = Path(__file__).parent / "data" / "imports" / "claude-mem" / "claude-mem.db"
#: Address space an import runs in here: every import of the fixtures fits in 256 MiB (tried
#: with ``ulimit -v``), so only a blow-up meets this.
MEMORY_CEILING = 512 * 1024 * 1024
#: CPU seconds: an import of a small file costs ~0.5 s; the kernel ends a process past this.
CPU_CEILING = 6
#: Wall-clock seconds before the test gives up on the process (a hang, not CPU).
WALL_CEILING = 30


def _env(layout: Layout) -> dict[str, str]:
    return {"WSD_WORKSPACE": layout.root, "PATH": os.environ["PATH"]}


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CEILING, MEMORY_CEILING))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_CEILING, CPU_CEILING + 1))


def _bounded(layout: Layout, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """``wsd import ARGS`` under the ceilings, and the CPU seconds it (and its workers) took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        done = subprocess.run(
            [venv_script("wsd"), "import", *args], env=_env(layout), capture_output=True,
            text=True, timeout=WALL_CEILING, preexec_fn=_limits,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise AssertionError(
            f"wsd import {' '.join(args)}: still running after {WALL_CEILING} s"
        ) from None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return done, cpu


def _refused(layout: Layout, said: str, *args: str) -> None:
    """The import is refused in one line saying ``said``, exit 2, nothing imported, in time."""
    done, cpu = _bounded(layout, *args)
    assert done.returncode == 2, (done.returncode, done.stderr[-3000:])
    assert said in done.stderr and "nothing was imported" in done.stderr, done.stderr[-3000:]
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    assert cpu < CPU_CEILING
    assert _count(layout) == 0


def _count(layout: Layout) -> int:
    return int(scalar(layout.memory_db, "SELECT count(*) FROM learnings"))


def _contents(layout: Layout) -> list[str]:
    return [c for (c,) in query(layout.memory_db, "SELECT content FROM learnings ORDER BY id")]


# -- YAML frontmatter -----------------------------------------------------------------------

#: Nine references to the list before, nine lists deep: 9**9 (387 million) items once expanded.
ALIAS_BOMB = (
    "---\nname: laughs\na: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
    )
    + "metadata:\n  type: *i\n---\nA body.\n"
)
DEEP_YAML = "---\nname: " + "[" * 20_000 + "]" * 20_000 + "\n---\nA body.\n"


def test_a_yaml_alias_bomb_in_frontmatter_is_refused_at_once(
    layout: Layout, tmp_path: Path
) -> None:
    """A billion laughs in a memory file's frontmatter (51 s and a MemoryError before) is
    refused where its first alias is, in one line naming the file and the line."""
    path = tmp_path / "laughs.md"
    path.write_text(ALIAS_BOMB)
    _refused(layout, "laughs.md: frontmatter uses a YAML alias (*a, line 4)", str(path))


def test_deeply_nested_yaml_frontmatter_is_refused(layout: Layout, tmp_path: Path) -> None:
    """A frontmatter value nested 20,000 lists deep (a RecursionError traceback before) is
    refused at the depth a frontmatter never needs, naming the file and the line."""
    path = tmp_path / "deep.md"
    path.write_text(DEEP_YAML)
    _refused(layout, "deep.md: frontmatter nested deeper than 16 levels (line 2)", str(path))


# -- JSON lines --------------------------------------------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000


def _deep_files(folder: Path) -> dict[str, str]:
    """Our JSON lines and a memory.jsonl, each with a line 2 nested 100,000 deep; what the
    refusal of each says."""
    ours = folder / "ours.jsonl"
    ours.write_text(
        json.dumps({"type": "fact", "content": "The shed key is under the pot"})
        + '\n{"type": "fact", "content": "Deep", "ref": ' + DEEP + "}\n"
    )  # fmt: skip
    theirs = folder / "memory.jsonl"
    theirs.write_text(
        json.dumps({"type": "entity", "name": "Ada", "entityType": "person",
                    "observations": ["Likes figs"]})
        + '\n{"type": "entity", "name": "Bo", "observations": ' + DEEP + "}\n"
    )  # fmt: skip
    said = "2: nested deeper than 32 levels"
    return {"ours.jsonl": f"ours.jsonl:{said}", "memory.jsonl": f"memory.jsonl:{said}"}


@pytest.mark.parametrize("name", ["ours.jsonl", "memory.jsonl"])
def test_deeply_nested_json_names_its_line(layout: Layout, tmp_path: Path, name: str) -> None:
    """A line of our format or of the MCP server's nested 100,000 deep (a RecursionError
    traceback and exit 1 before) is one line naming the file and the line, exit 2."""
    said = _deep_files(tmp_path)[name]
    _refused(layout, said, str(tmp_path / name))


def test_deeply_nested_json_on_the_first_line_names_it(layout: Layout, tmp_path: Path) -> None:
    """Nested deep on the very line the format is told by (a traceback before): named too."""
    path = tmp_path / "first.jsonl"
    path.write_text(DEEP + "\n")
    _refused(layout, "first.jsonl:1: nested deeper than 32 levels", str(path))


def test_a_folder_imports_the_rest_beside_files_built_to_hurt(
    layout: Layout, tmp_path: Path
) -> None:
    """A folder holding an alias bomb, deep YAML, frontmatter PyYAML fails on by itself (a
    month 13, a 5,000-digit number), deep JSON of both formats and a JSON-lines file with a
    broken line (each aborted the whole folder before, by traceback or exit 2): each is
    skipped and named with its line, the good file imported, exit 1."""
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "notes.md").write_text("# Notes\n- Tea at four\n")
    (folder / "laughs.md").write_text(ALIAS_BOMB)
    (folder / "deep.md").write_text(DEEP_YAML)
    (folder / "month.md").write_text("---\nname: m\ncreated: 2026-13-45\n---\nA body.\n")
    (folder / "digits.md").write_text("---\nname: d\ncreated: " + "9" * 5000 + "\n---\nA body.\n")
    deep = _deep_files(folder)
    (folder / "broken.jsonl").write_text(
        json.dumps({"type": "fact", "content": "Figs in June"}) + "\n{oops\n"
    )
    done, cpu = _bounded(layout, str(folder))
    assert done.returncode == 1, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and cpu < CPU_CEILING
    skipped = {
        line.split(": skipped ", 1)[1].split(": ", 1)[0]: line for line in done.stderr.splitlines()
    }
    assert set(skipped) == {
        "laughs.md", "deep.md", "month.md", "digits.md", "ours.jsonl", "memory.jsonl",
        "broken.jsonl",
    }, done.stderr  # fmt: skip
    assert "YAML alias (*a, line 4)" in skipped["laughs.md"]
    assert "nested deeper than 16 levels (line 2)" in skipped["deep.md"]
    assert "frontmatter is not YAML (line 3" in skipped["month.md"]
    assert "frontmatter is not YAML (line 3" in skipped["digits.md"]
    for name, said in deep.items():
        assert said in skipped[name]
    assert "broken.jsonl:2: not valid JSON" in skipped["broken.jsonl"]
    assert _contents(layout) == ["Tea at four"]


# -- dates -------------------------------------------------------------------------------------

BAD_TIMES = ["NaN", "Infinity", "-Infinity", "1e300", "-5", "1e11", '"abc"', '"99999d"']


@pytest.mark.parametrize("value", BAD_TIMES)
def test_a_created_at_that_is_no_time_names_its_line(
    layout: Layout, tmp_path: Path, value: str
) -> None:
    """``created_at`` NaN (a database error before), infinite, huge, negative or not a date
    at all (-Infinity and -5 were stored as dates, Infinity and 1e300 as now): one line
    naming the line, exit 2."""
    path = tmp_path / "dates.jsonl"
    good = json.dumps({"type": "fact", "content": "Tea at four", "created_at": 1767225600})
    bad = '{"type": "fact", "content": "Coffee", "created_at": ' + value + "}"
    path.write_text(f"{good}\n{bad}\n")
    _refused(layout, "dates.jsonl:2: created_at ", str(path))


def _claude_mem_copy(tmp_path: Path, name: str = "home") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    db = folder / "claude-mem.db"
    shutil.copy(CLAUDE_MEM, db)
    return db


@pytest.mark.parametrize("epoch", ["9e999", "1e300", "9000000000000000000"])
def test_a_claude_mem_date_that_is_no_time_names_its_row(
    layout: Layout, tmp_path: Path, epoch: str
) -> None:
    """An observation's ``created_at_epoch`` infinite or past any date (stored as the
    import's time before): one line naming the row, exit 2."""
    db = _claude_mem_copy(tmp_path)
    with sqlite3.connect(db) as c:
        c.execute(f"UPDATE observations SET created_at_epoch = {epoch} WHERE id = 4")
    c.close()
    _refused(layout, "claude-mem.db:observations/4: created_at_epoch ", str(db))


# -- claude-mem's database ---------------------------------------------------------------------


def _db(path: Path, *statements: str) -> Path:
    conn = sqlite3.connect(path)
    for sql in statements:
        conn.execute(sql)
    conn.commit()
    conn.close()
    return path


def test_a_claude_mem_view_over_an_endless_query_is_refused(layout: Layout, tmp_path: Path) -> None:
    """``observations`` a VIEW over a recursive CTE that never ends (still running at 60 s
    before): refused before a row is read, one line, exit 2."""
    db = _db(
        tmp_path / "claude-mem.db",
        "CREATE VIEW observations AS WITH RECURSIVE n(id) AS (SELECT 1 UNION ALL SELECT id + 1"
        " FROM n) SELECT id, 'p' AS project, 'fact' AS type, 't' AS title,"
        " 1767225600000 AS created_at_epoch FROM n ORDER BY id DESC",
    )
    _refused(layout, "claude-mem.db: observations is a view, not a table", str(db))


def test_sql_in_a_claude_mem_column_name_is_never_run(layout: Layout, tmp_path: Path) -> None:
    """A column whose name holds SQL (it was spliced into the SELECT, and its ATTACH ran:
    only the read-only connection made that fail) is not a column claude-mem writes: it is
    never read, nothing it says is run, and the row imports."""
    target = tmp_path / "attached.db"
    evil = f"x\" FROM observations; ATTACH DATABASE '{target}' AS pwn; --"
    db = _db(
        tmp_path / "claude-mem.db",
        "CREATE TABLE observations (id INTEGER PRIMARY KEY, project TEXT, type TEXT,"
        f' title TEXT, created_at_epoch INTEGER, x TEXT, "{evil.replace(chr(34), chr(34) * 2)}"'
        " TEXT)",
        "INSERT INTO observations (project, type, title, created_at_epoch)"
        " VALUES ('heron', 'decision', 'Deploys go out on Tuesdays', 1767225600000)",
    )
    done, cpu = _bounded(layout, str(db))
    assert done.returncode == 0, done.stderr
    assert "imported 1 learning(s)" in done.stdout and cpu < CPU_CEILING
    assert not target.exists()
    assert _contents(layout) == ["heron: Deploys go out on Tuesdays."]


def test_a_claude_mem_row_too_long_is_refused(layout: Layout, tmp_path: Path) -> None:
    """A value of 8 MiB (a memory is 4,000 characters: this is not one) is refused naming the
    table, without reading it whole into memory."""
    db = _claude_mem_copy(tmp_path)
    with sqlite3.connect(db) as c:
        c.execute("UPDATE observations SET narrative = ? WHERE id = 9", ("x" * (8 << 20),))
    c.close()
    _refused(layout, "claude-mem.db: observations: a row over 4,194,304 bytes (after row 8)",
             str(db))  # fmt: skip


def _wal_without_shm(tmp_path: Path) -> Path:
    """claude-mem.db with a -wal holding a change not yet in the file, and no -shm (as a
    copy of the folder that left out the -shm, or a backup, leaves it)."""
    live = _claude_mem_copy(tmp_path, "live")
    conn = sqlite3.connect(live)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("UPDATE observations SET title = 'Changed in the WAL' WHERE id = 1")
    conn.commit()
    home = tmp_path / "home"
    home.mkdir()
    for suffix in ("", "-wal"):
        shutil.copy(f"{live}{suffix}", home / f"claude-mem.db{suffix}")
    conn.close()
    return home / "claude-mem.db"


def _listing(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


def test_nothing_is_written_beside_a_database_with_a_wal_and_no_shm(
    layout: Layout, tmp_path: Path
) -> None:
    """A -wal and no -shm beside claude-mem.db (a -shm was made beside it before): the
    folder is as it was, every byte, and the -wal's change is read."""
    db = _wal_without_shm(tmp_path)
    before = _listing(db.parent)
    assert sorted(before) == ["claude-mem.db", "claude-mem.db-wal"]
    done, cpu = _bounded(layout, str(db))
    assert done.returncode == 0, done.stderr
    assert "imported 15 learning(s)" in done.stdout and cpu < CPU_CEILING
    assert _listing(db.parent) == before
    assert any(c.startswith("heron-api: Changed in the WAL.") for c in _contents(layout))


@pytest.mark.parametrize(
    ("suffix", "kind", "said"),
    [
        ("-wal", "fifo", "claude-mem.db-wal is a FIFO: not read"),
        ("-wal", "link", "claude-mem.db-wal is a symlink: not followed"),
        ("-journal", "fifo", "claude-mem.db-journal is a FIFO: not read"),
        ("-shm", "link", "claude-mem.db-shm is a symlink: not followed"),
    ],
)
def test_a_special_file_beside_a_database_is_refused(
    layout: Layout, tmp_path: Path, suffix: str, kind: str, said: str
) -> None:
    """A FIFO or a link where SQLite would look for the -wal, -shm or -journal (SQLite read
    through a FIFO -wal and made a -shm beside it before): refused, naming it, and the
    folder left as it was."""
    db = _claude_mem_copy(tmp_path)
    beside = db.parent / f"claude-mem.db{suffix}"
    if kind == "fifo":
        os.mkfifo(beside)
    else:
        (tmp_path / "elsewhere").write_bytes(b"\0" * 4096)
        beside.symlink_to(tmp_path / "elsewhere")
    names = sorted(p.name for p in db.parent.iterdir())
    _refused(layout, said, str(db))
    assert sorted(p.name for p in db.parent.iterdir()) == names


# -- the reading budget, on a real database ---------------------------------------------------


def _many_rows(path: Path, n: int) -> Path:
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE observations (id INTEGER PRIMARY KEY, project TEXT, type TEXT,"
        " title TEXT, created_at_epoch INTEGER)"
    )
    conn.executemany(
        "INSERT INTO observations (project, type, title, created_at_epoch)"
        " VALUES ('p', 'change', ?, 1767225600000)",
        ((f"Change {i}",) for i in range(n)),
    )
    conn.commit()
    conn.close()
    return path


def _drain(rows: Iterator[object]) -> int:
    return sum(1 for _ in rows)


def test_reading_a_database_stops_at_its_time_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's own work on a foreign database is budgeted (a progress handler counts only
    the time inside SQLite): over it, the read stops with a ForeignError saying so."""
    from wsd.daemon.store import claude_mem

    db = _many_rows(tmp_path / "claude-mem.db", 200_000)
    assert _drain(claude_mem_rows(str(db))) == 200_000
    monkeypatch.setattr(claude_mem, "READ_SECONDS", 0.01)
    monkeypatch.setattr(claude_mem, "READ_SECONDS_PER_GIB", 0.0)
    with pytest.raises(ForeignError, match=r"took over 0\.01 s of SQLite's time to read"):
        _drain(claude_mem_rows(str(db)))


def test_reading_a_database_stops_at_its_row_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More rows than the cap: a ForeignError saying how many, not an import without end."""
    from wsd.daemon.store import claude_mem

    db = _many_rows(tmp_path / "claude-mem.db", 50)
    monkeypatch.setattr(claude_mem, "MAX_ROWS", 40)
    with pytest.raises(ForeignError, match="holds over 40 rows"):
        _drain(claude_mem_rows(str(db)))


# -- memory: a large input is read as the store takes it --------------------------------------


@pytest.mark.parametrize("workers", [1, 2])
def test_a_large_input_is_read_only_a_few_chunks_ahead_of_the_store(
    monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """The parsing (in worker processes, or here on one core) is fed a few chunks ahead of
    what the store has taken, not the whole input first (Executor.map read all of it:
    783 MB resident for a 649 MiB claude-mem database, 235 MB now), and still gives every
    line in order."""
    from wsd.daemon.memory.transfer import parallel, wsd_format

    monkeypatch.setattr(parallel, "workers", lambda: workers)
    total = parallel.CHUNK * 12
    drawn = 0

    def numbered() -> Iterator[tuple[int, str]]:
        nonlocal drawn
        for i in range(total):
            drawn += 1
            yield i + 1, json.dumps({"type": "fact", "content": f"Note {i}"})

    parse = functools.partial(wsd_format.parse_lines, "big.jsonl")
    stream = parallel.stream(parse, parallel.chunks(numbered(), parallel.line_bytes), Incoming())
    assert next(stream).content == "Note 0"
    assert drawn <= (parallel.AHEAD * workers + 2) * parallel.CHUNK < total
    assert [x.content for x in stream] == [f"Note {i}" for i in range(1, total)]


def test_a_chunk_of_long_lines_is_cut_by_its_bytes() -> None:
    """2,000 lines of 4 MiB would be one 8 GB chunk: a chunk ends at CHUNK_BYTES."""
    from wsd.daemon.memory.transfer import parallel

    line = "x" * (1 << 20)
    sizes = [len(c) for c in parallel.chunks(((n, line) for n in range(20)), parallel.line_bytes)]
    assert sizes == [8, 8, 4]
