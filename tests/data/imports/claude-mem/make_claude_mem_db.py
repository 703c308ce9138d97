"""Make claude-mem.db and schema.sql with claude-mem's own code (pinned npm version, run by bun).

Needs node/npm and the npm registry once, to fetch claude-mem, bun and zod into --workdir
(outside the repository). The tests that read these files need neither. See README.md.

    python make_claude_mem_db.py [--workdir /tmp/mk-claude-mem] [--out-dir THIS_FOLDER]
    python make_claude_mem_db.py --check      # only verify the committed files
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

CLAUDE_MEM = "13.25.3"  # npm claude-mem (github thedotmack/claude-mem)
BUN = "1.4.5"  # npm @oven/bun-linux-x64: the bun binary, shipped inside the npm package
ZOD = "4.4.3"  # the one module the worker bundle loads at start; version from its plugin/bun.lock

HERE = Path(__file__).resolve().parent
FTS5_SHADOWS = ("_data", "_idx", "_docsize", "_config", "_content")
VIRTUAL = "CREATE VIRTUAL TABLE"
PRAGMAS = ("page_size", "auto_vacuum")
WANT_COUNTS = {
    "sdk_sessions": 3,
    "observations": 12,
    "session_summaries": 3,
    "user_prompts": 5,
    "tool_uses": 2,
}


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    print("+", " ".join(cmd), file=sys.stderr)
    return subprocess.run(
        cmd, cwd=cwd, env=env, check=True, text=True, stdout=subprocess.PIPE
    ).stdout


def prepare(workdir: Path) -> tuple[Path, Path]:
    """npm-installs bun and zod into workdir and unpacks claude-mem's tarball there."""
    workdir.mkdir(parents=True, exist_ok=True)
    if not (workdir / "package.json").exists():
        (workdir / "package.json").write_text('{"name": "mk-claude-mem", "private": true}\n')
    _run(
        [
            "npm",
            "install",
            "--save-exact",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            f"zod@{ZOD}",
            f"@oven/bun-linux-x64@{BUN}",
        ],
        workdir,
    )
    bun = workdir / "node_modules" / "@oven" / "bun-linux-x64" / "bin" / "bun"
    pkg_root = workdir / f"claude-mem-{CLAUDE_MEM}"
    if not (pkg_root / "package" / "plugin" / "scripts" / "worker-service.cjs").exists():
        tgz = workdir / f"claude-mem-{CLAUDE_MEM}.tgz"
        if not tgz.exists():
            _run(
                ["npm", "pack", f"claude-mem@{CLAUDE_MEM}", "--pack-destination", str(workdir)],
                workdir,
            )
        shutil.rmtree(pkg_root, ignore_errors=True)
        with tarfile.open(tgz) as tf:
            tf.extractall(pkg_root, filter="data")
    pkg = pkg_root / "package"
    version = json.loads((pkg / "package.json").read_text())["version"]
    if version != CLAUDE_MEM:
        raise SystemExit(f"unpacked claude-mem is {version}, expected {CLAUDE_MEM}")
    return bun, pkg


def build(bun: Path, pkg: Path, out: Path, empty: bool) -> None:
    """Runs make_claude_mem_db.cjs under bun, with a throw-away HOME and no bun auto-install."""
    with tempfile.TemporaryDirectory(prefix="claude-mem-home-") as home:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": home,
            "TMPDIR": home,
            "LANG": "C.UTF-8",
        }
        cmd = [
            str(bun),
            "--no-install",
            str(HERE / "make_claude_mem_db.cjs"),
            "--package",
            str(pkg),
            "--out",
            str(out),
        ]
        _run(cmd + (["--empty"] if empty else []), pkg, env)


def _ro(path: Path) -> sqlite3.Connection:
    # immutable=1: claude-mem leaves the file in WAL mode, and a plain read-only open would
    # create -wal/-shm files beside it.
    return sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)


def _journal(path: Path) -> str:
    """The journal mode the file header records (bytes 18-19 are 2 in WAL mode)."""
    with path.open("rb") as f:
        f.seek(18)
        return "wal" if f.read(2) == b"\x02\x02" else "rollback (not wal)"


def schema_sql(empty_db: Path) -> str:
    con = _ro(empty_db)
    rows = con.execute("SELECT type, name, sql FROM sqlite_master ORDER BY rowid").fetchall()
    versions = con.execute("SELECT id, version, applied_at FROM schema_versions ORDER BY id")
    versions = versions.fetchall()
    pragmas = {p: con.execute(f"PRAGMA {p}").fetchone()[0] for p in PRAGMAS}
    con.close()
    virtual = {n for t, n, s in rows if t == "table" and s and s.upper().startswith(VIRTUAL)}
    out = [
        f"-- Schema of an EMPTY claude-mem database, made by claude-mem {CLAUDE_MEM}'s own code",
        f"-- (worker DatabaseManager.initialize() under bun {BUN}); see README.md.",
        "-- Statements are sqlite_master.sql verbatim, in sqlite_master order (creation order).",
        "-- Left out (they are made automatically): sqlite_sequence (by AUTOINCREMENT) and the",
        "-- FTS5 shadow tables (by each CREATE VIRTUAL TABLE ... USING fts5).",
        "-- claude-mem's connection settings (not statements here):",
        f"--   PRAGMA journal_mode = WAL (file header of the empty database: {_journal(empty_db)})",
        f"--   PRAGMA auto_vacuum = INCREMENTAL (value {pragmas['auto_vacuum']}; set it before the",
        f"--     first table is made); page_size {pragmas['page_size']}",
        "--   per connection: PRAGMA foreign_keys = ON, synchronous = NORMAL, busy_timeout",
        "-- Replaying this file with sqlite3.executescript gives the same sqlite_master.",
        "",
    ]
    for typ, name, sql in rows:
        if sql is None:
            continue  # automatic indexes (UNIQUE / PRIMARY KEY) have no SQL
        if name == "sqlite_sequence":
            out.append(f"-- (skipped) {sql};")
            continue
        if typ == "table" and any(name == v + s for v in virtual for s in FTS5_SHADOWS):
            out.append(f"-- (shadow, made by fts5) {sql};")
            continue
        out.append(f"{sql};")
    out += [
        "",
        "-- ==================================================================",
        "-- schema_versions rows: the migrations claude-mem recorded as applied",
        "-- (applied_at is the wall-clock time of the run that made the empty database)",
        "-- ==================================================================",
    ]
    for vid, version, applied_at in versions:
        out.append(
            "INSERT INTO schema_versions (id, version, applied_at) "
            f"VALUES ({vid}, {version}, '{applied_at}');"
        )
    return "\n".join(out) + "\n"


def _master(con: sqlite3.Connection) -> set[tuple[str, str, str, str | None]]:
    return set(con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))


def check(db: Path, schema: Path) -> None:
    for sfx in ("-wal", "-shm", "-journal"):
        if Path(str(db) + sfx).exists():
            raise SystemExit(f"{db}{sfx} exists: the database file alone must be complete")
    con = _ro(db)
    replay = sqlite3.connect(":memory:")
    replay.executescript(schema.read_text())
    if _master(con) != _master(replay):
        diff = _master(con) ^ _master(replay)
        raise SystemExit(f"schema.sql does not rebuild {db.name}'s sqlite_master: {diff}")
    got = [r[0] for r in con.execute("SELECT version FROM schema_versions ORDER BY id")]
    want = [r[0] for r in replay.execute("SELECT version FROM schema_versions ORDER BY id")]
    if got != want:
        raise SystemExit(f"schema_versions differ: {got} vs {want}")
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    tables = con.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE '%fts%' ORDER BY name"
    ).fetchall()
    counts = {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for (t,) in tables}
    print(json.dumps(counts, indent=1))
    for t, n in WANT_COUNTS.items():
        if counts[t] != n:
            raise SystemExit(f"{t}: {counts[t]} rows, expected {n}")
    hits = con.execute(
        "SELECT rowid FROM observations_fts WHERE observations_fts MATCH 'collation'"
    ).fetchall()
    if not hits:
        raise SystemExit("observations_fts has no rows: FTS triggers did not run")
    con.close()
    size = db.stat().st_size
    print(f"ok: {db} ({size} bytes, {_journal(db)}) and {schema.name} agree", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--workdir",
        type=Path,
        default=Path("/tmp/mk-claude-mem"),
        help="scratch folder, not in the repo",
    )
    ap.add_argument("--out-dir", type=Path, default=HERE)
    ap.add_argument("--check", action="store_true", help="only check the files in --out-dir")
    a = ap.parse_args(argv)
    db, schema = a.out_dir / "claude-mem.db", a.out_dir / "schema.sql"
    if not a.check:
        bun, pkg = prepare(a.workdir.resolve())
        with tempfile.TemporaryDirectory(prefix="claude-mem-build-") as tmp:
            empty, full = Path(tmp) / "empty.db", Path(tmp) / "claude-mem.db"
            build(bun, pkg, empty, empty=True)
            build(bun, pkg, full, empty=False)
            text = schema_sql(empty)
            a.out_dir.mkdir(parents=True, exist_ok=True)
            schema.write_text(text)
            shutil.copyfile(full, db)
    check(db, schema)
    return 0


if __name__ == "__main__":
    sys.exit(main())
