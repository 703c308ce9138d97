"""Schema layer: migrations, pragmas, identity, FTS sync, and `wsd init`."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from tests.conftest import venv_script
from wsd import schema
from wsd.daemon.ops.bootstrap import init_workspace
from wsd.schema.layout import Layout


def _schema_snapshot(path: str) -> tuple[int, list[tuple[str, str]]]:
    conn = apsw.Connection(path)
    try:
        rows = conn.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()
        return schema.user_version(conn), [(str(n), str(s)) for n, s in rows]
    finally:
        conn.close()


@pytest.mark.parametrize("kind", schema.KINDS)
def test_migrate_applies_all_and_records_version(tmp_path: Path, kind: schema.Kind) -> None:
    """A fresh database is migrated to the latest version, recorded in user_version."""
    path = str(tmp_path / f"{kind}.db")
    conn = schema.connect(path, kind)
    assert schema.migrate(conn, kind) == (0, schema.latest_version(kind))
    assert schema.user_version(conn) == schema.latest_version(kind) >= 1
    conn.close()


@pytest.mark.parametrize("kind", schema.KINDS)
def test_migrate_twice_changes_nothing(tmp_path: Path, kind: schema.Kind) -> None:
    """Running the migrations a second time leaves schema and version identical."""
    path = str(tmp_path / f"{kind}.db")
    conn = schema.connect(path, kind)
    schema.migrate(conn, kind)
    before = _schema_snapshot(path)
    latest = schema.latest_version(kind)
    assert schema.migrate(conn, kind) == (latest, latest)
    conn.close()
    assert _schema_snapshot(path) == before


@pytest.mark.parametrize("kind", schema.KINDS)
def test_newer_database_is_refused_with_clear_message(tmp_path: Path, kind: schema.Kind) -> None:
    """A database written by newer code is refused, naming the versions and the path."""
    path = str(tmp_path / f"{kind}.db")
    conn = schema.connect(path, kind)
    schema.migrate(conn, kind)
    conn.execute("PRAGMA user_version = 99")
    with pytest.raises(schema.SchemaError, match=r"version 99, newer than this code") as info:
        schema.migrate(conn, kind, path)
    assert path in str(info.value)
    conn.close()


def test_failed_migration_rolls_back_version_and_ddl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A migration that fails half-way leaves neither its DDL nor a new version behind."""
    sql_dir = tmp_path / "sql" / "transcript"
    sql_dir.mkdir(parents=True)
    (sql_dir / "001_ok.sql").write_text("CREATE TABLE a (x INTEGER);")
    (sql_dir / "002_broken.sql").write_text("CREATE TABLE b (x INTEGER); THIS IS NOT SQL;")
    monkeypatch.setattr(schema, "_SQL_DIR", str(tmp_path / "sql"))
    monkeypatch.setattr(schema, "_migrations_cache", {})
    path = str(tmp_path / "t.db")
    conn = schema.connect(path, "transcript")
    with pytest.raises(apsw.SQLError):
        schema.migrate(conn, "transcript")
    assert schema.user_version(conn) == 0
    assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone() == (0,)
    conn.close()


def test_migration_numbering_gap_is_rejected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration files must be numbered 1..N; a gap is reported by file name."""
    sql_dir = tmp_path / "sql" / "memory"
    sql_dir.mkdir(parents=True)
    (sql_dir / "001_a.sql").write_text("SELECT 1;")
    (sql_dir / "003_c.sql").write_text("SELECT 1;")
    monkeypatch.setattr(schema, "_SQL_DIR", str(tmp_path / "sql"))
    monkeypatch.setattr(schema, "_migrations_cache", {})
    with pytest.raises(schema.SchemaError, match=r"003_c\.sql"):
        schema.migrations("memory")


def test_connect_sets_pragmas(tmp_path: Path) -> None:
    """Both databases use WAL and foreign keys; synchronous is NORMAL/FULL; timeouts apply."""
    t = schema.connect(str(tmp_path / "t.db"), "transcript", busy_timeout_ms=123)
    m = schema.connect(str(tmp_path / "m.db"), "memory")
    for conn in (t, m):
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA foreign_keys").fetchone() == (1,)
    assert t.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
    assert m.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
    assert t.execute("PRAGMA busy_timeout").fetchone() == (123,)
    assert m.execute("PRAGMA busy_timeout").fetchone() == (schema.DAEMON_BUSY_TIMEOUT_MS,)
    t.close()
    m.close()


def test_new_database_files_are_private(tmp_path: Path) -> None:
    """A database created by connect() is mode 0600, and so are its WAL files."""
    path = str(tmp_path / "t.db")
    old = os.umask(0o022)
    try:
        conn = schema.connect(path, "transcript")
        schema.migrate(conn, "transcript")
        for suffix in ("", "-wal", "-shm"):
            assert stat.S_IMODE(os.stat(path + suffix).st_mode) == 0o600, suffix
        conn.close()
    finally:
        os.umask(old)


def test_write_txn_takes_the_write_lock_up_front(tmp_path: Path) -> None:
    """write_txn begins IMMEDIATE: a second writer waits, then fails busy, while it is held."""
    path = str(tmp_path / "t.db")
    a = schema.connect(path, "transcript")
    schema.migrate(a, "transcript")
    b = schema.connect(path, "transcript", busy_timeout_ms=50)
    with schema.write_txn(a), pytest.raises(apsw.BusyError), schema.write_txn(b):
        pass
    with schema.write_txn(b):
        b.execute("INSERT INTO flush_requests (ts, reason) VALUES (1, 'cli')")
    assert a.execute("SELECT count(*) FROM flush_requests").fetchone() == (1,)
    a.close()
    b.close()


def test_transcript_identity_is_a_fresh_uuid(tmp_path: Path) -> None:
    """Each transcript.db gets its own UUID identity, so a recreated file is detectable."""
    ids = []
    for name in ("a.db", "b.db"):
        conn = schema.connect(str(tmp_path / name), "transcript")
        schema.migrate(conn, "transcript")
        ids.append(schema.identity(conn))
        conn.close()
    uuid_re = r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"
    assert all(re.match(uuid_re, i) for i in ids), ids
    assert ids[0] != ids[1]


def test_observation_ids_are_never_reused(tmp_path: Path) -> None:
    """Observation ids come from AUTOINCREMENT: deleting the newest does not free its id."""
    conn = schema.connect(str(tmp_path / "t.db"), "transcript")
    schema.migrate(conn, "transcript")
    conn.execute("INSERT INTO sessions (id, started_at, last_event_at) VALUES ('s', 1, 1)")
    insert = (
        "INSERT INTO observations (timestamp, session_id, sequence_num, closed_by)"
        " VALUES (1, 's', ?, 'stop')"
    )
    conn.execute(insert, (1,))
    first = conn.last_insert_rowid()
    conn.execute("DELETE FROM observations WHERE id = ?", (first,))
    conn.execute(insert, (2,))
    assert conn.last_insert_rowid() > first
    conn.close()


def test_learnings_fts_follows_insert_update_delete(tmp_path: Path) -> None:
    """The learnings FTS index (Porter stemming) tracks inserts, updates and deletes."""
    conn = schema.connect(str(tmp_path / "m.db"), "memory")
    schema.migrate(conn, "memory")

    def hits(query: str) -> list[int]:
        sql = "SELECT rowid FROM learnings_fts WHERE learnings_fts MATCH ? ORDER BY rowid"
        return [r[0] for r in conn.execute(sql, (query,))]

    conn.execute(
        "INSERT INTO learnings (created_at, type, content, content_key)"
        " VALUES (1, 'preference', 'User prefers running the tests nightly', 'k1')"
    )
    lid = conn.last_insert_rowid()
    assert hits("run") == [lid]  # stemming: run ~ running
    conn.execute("UPDATE learnings SET content = 'Dates are DD/MM/YYYY' WHERE id = ?", (lid,))
    assert hits("run") == []
    assert hits("dates") == [lid]
    conn.execute("DELETE FROM learnings WHERE id = ?", (lid,))
    assert hits("dates") == []
    conn.execute("INSERT INTO learnings_fts (learnings_fts) VALUES ('integrity-check')")
    conn.close()


def test_open_pending_actions_are_unique_per_key(tmp_path: Path) -> None:
    """Only one open pending action may exist per de-duplication key; closed ones don't count."""
    conn = schema.connect(str(tmp_path / "m.db"), "memory")
    schema.migrate(conn, "memory")
    sql = (
        "INSERT INTO pending_actions (created_at, updated_at, content, source, dedup_key, status)"
        " VALUES (1, 1, 'x', 'curator', 'k', ?)"
    )
    conn.execute(sql, ("pending",))
    with pytest.raises(apsw.ConstraintError):
        conn.execute(sql, ("pending",))
    conn.execute("UPDATE pending_actions SET status = 'completed'")
    conn.execute(sql, ("pending",))
    conn.close()


def test_concurrent_migrations_apply_once(tmp_path: Path) -> None:
    """Several processes migrating one fresh database at once all succeed, applying it once."""
    path = str(tmp_path / "t.db")
    code = (
        "import schema, sys; c = schema.connect(sys.argv[1], 'transcript');"
        " print(schema.migrate(c, 'transcript'))"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, path], stdout=subprocess.PIPE, text=True)
        for _ in range(6)
    ]
    outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    latest = schema.latest_version("transcript")
    assert outs.count(f"(0, {latest})") == 1, outs
    conn = apsw.Connection(path)
    assert conn.execute("SELECT count(*) FROM meta WHERE key = 'identity'").fetchone() == (1,)
    conn.close()


def test_memory_db_gets_an_identity_of_its_own_once(tmp_path: Path) -> None:
    """Migration 009: a memory.db from version 8 gets an identity, a second migrate keeps it,
    and a memory.db created anew gets another (what ``wsd rebuild`` compares, issue 30)."""
    old = apsw.Connection(str(tmp_path / "old.db"))
    for step in schema.migrations("memory"):
        if step.version <= 8:
            old.execute(Path(step.path).read_text())
    old.execute("PRAGMA user_version = 8")
    assert schema.identity(old) == ""
    schema.migrate(old, "memory")
    first = schema.identity(old)
    assert re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", first
    )
    schema.migrate(old, "memory")
    assert schema.identity(old) == first
    fresh = schema.connect(str(tmp_path / "fresh.db"), "memory")
    schema.migrate(fresh, "memory")
    assert schema.identity(fresh) not in ("", first)
    old.close()
    fresh.close()


def test_wsd_init_is_idempotent_with_permissions(tmp_path: Path) -> None:
    """`wsd init` creates .os/ (0700), both databases (0600), and a second run changes nothing."""
    root = tmp_path / "fresh"
    env = {**os.environ, "WSD_WORKSPACE": str(root)}
    first = subprocess.run([venv_script("wsd"), "init"], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert "created" in first.stdout
    lay = Layout(str(root))
    assert stat.S_IMODE(os.stat(lay.os_dir).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(lay.memory_dir).st_mode) == 0o700
    for db in (lay.transcript_db, lay.memory_db):
        assert stat.S_IMODE(os.stat(db).st_mode) == 0o600
    snapshot = [_schema_snapshot(lay.transcript_db), _schema_snapshot(lay.memory_db)]
    second = subprocess.run([venv_script("wsd"), "init"], env=env, capture_output=True, text=True)
    assert second.returncode == 0
    assert "nothing to change" in second.stdout
    assert [_schema_snapshot(lay.transcript_db), _schema_snapshot(lay.memory_db)] == snapshot


def test_init_tightens_loose_permissions(tmp_path: Path) -> None:
    """init_workspace repairs a world-readable .os/ and database back to 0700/0600."""
    lay = Layout(str(tmp_path))
    init_workspace(lay)
    os.chmod(lay.os_dir, 0o755)
    os.chmod(lay.memory_db, 0o644)
    changes = init_workspace(lay)
    assert any("chmod 0700" in c for c in changes)
    assert stat.S_IMODE(os.stat(lay.os_dir).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(lay.memory_db).st_mode) == 0o600


def test_wsd_init_refuses_newer_schema(tmp_path: Path) -> None:
    """`wsd init` on a database from newer code exits non-zero with a clear message."""
    lay = Layout(str(tmp_path))
    init_workspace(lay)
    conn = apsw.Connection(lay.memory_db)
    conn.execute("PRAGMA user_version = 42")
    conn.close()
    env = {**os.environ, "WSD_WORKSPACE": str(tmp_path)}
    result = subprocess.run([venv_script("wsd"), "init"], env=env, capture_output=True, text=True)
    assert result.returncode == 2
    assert "schema version 42, newer than this code" in result.stderr


def _at(path: Path, kind: schema.Kind, version: int) -> apsw.Connection:
    """A database of ``kind`` as the migrations up to ``version`` left it."""
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA foreign_keys = ON")
    for step in schema.migrations(kind):
        if step.version <= version:
            conn.execute(Path(step.path).read_text())
    conn.execute(f"PRAGMA user_version = {version:d}")
    return conn


def test_the_renames_of_issue_42_keep_every_row(tmp_path: Path) -> None:
    """Migrations transcript 008 and memory 013 rename (one word for one thing) and lose
    nothing: a Message Batch in flight with its request, its turn in flight and a released
    turn keep their rows and links; a batch's Message Batch id and a file's erosion state
    come through under their new names."""
    t = _at(tmp_path / "t.db", "transcript", 7)
    t.execute(
        "INSERT INTO remote_batches (id, remote_id, transcript_identity, status, created_at,"
        " base_json) VALUES (1, 'msgbatch_1', 'x', 'in_flight', 1.0, '{}')"
    )
    t.execute(
        "INSERT INTO remote_requests (remote_batch_id, custom_id, position, turn_ids,"
        " offered_json, actions_json, request_chars, started_at) VALUES"
        " (1, 't1-1-0', 0, '[1]', '[]', '[]', 10, 1.0)"
    )
    t.execute("INSERT INTO remote_turns VALUES (1, 1, 't1-1-0')")
    t.execute("INSERT INTO prompt_only_turns VALUES (2, 'errored', 1.0)")
    schema.migrate(t, "transcript")
    got = t.execute(
        "SELECT b.message_batch_id, r.custom_id, f.observation_id FROM message_batches b"
        " JOIN message_batch_requests r ON r.message_batch_row = b.id"
        " JOIN in_flight_turns f ON f.message_batch_row = b.id"
    ).fetchall()
    assert got == [("msgbatch_1", "t1-1-0", 1)]
    assert t.execute("SELECT observation_id FROM released_turns").fetchall() == [(2,)]
    t.execute("DELETE FROM message_batches")  # the foreign keys followed the rename
    assert t.execute("SELECT count(*) FROM message_batch_requests").fetchall() == [(0,)]
    m = _at(tmp_path / "m.db", "memory", 12)
    m.execute(
        "INSERT INTO batches (id, transcript_identity, first_observation_id,"
        " last_observation_id, turns, status, started_at, finished_at, lane, remote_id,"
        " custom_id) VALUES (1, 'x', 1, 1, 1, 'done', 1.0, 1.0, 'economy', 'msgbatch_1', 'c')"
    )
    m.execute("INSERT INTO state VALUES ('held:user.md', '{\"revision\": 3}', 1.0)")
    m.execute("INSERT INTO state VALUES ('replica_held', 'x', 1.0)")
    schema.migrate(m, "memory")
    assert m.execute("SELECT message_batch_id FROM batches").fetchall() == [("msgbatch_1",)]
    keys = {k for (k,) in m.execute("SELECT key FROM state")}
    assert {"eroding:user.md", "replica_held"} <= keys and "held:user.md" not in keys
    t.close()
    m.close()
