"""Operating for months: sleep/wake, secrets end to end, idempotent bootstrap, doctor, backup."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import apsw
import pytest

from tests.conftest import (
    bootstrap_sh,
    daemon_env,
    fake_venv,
    make_worker,
    running_daemon,
    venv_script,
    write_turns,
    wsd,
)
from tests.conftest import query as _q
from tests.conftest import wait_for as _wait
from tests.secrets_corpus import SECRETS, sensitive_part
from wsd.daemon.ops.bootstrap import init_workspace
from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.store import Store
from wsd.hooks.capture import Capture, CaptureConfig
from wsd.schema.layout import CURATED_FILES, Layout

REPO = Path(__file__).resolve().parent.parent
TOKEN = "ops-sprite-token-3b9f1e"


def _env(layout: Layout, bridge: BridgeStandin, **extra: str) -> dict[str, str]:
    return daemon_env(layout, bridge, TOKEN, **extra)


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except FileNotFoundError:
        return ""


def test_sigstop_sleep_then_wake_picks_everything_up_once(layout: Layout, tmp_path: Path) -> None:
    """SIGSTOP (a frozen VM), turns and files changed meanwhile, SIGCONT: wake logged once by
    the loop and passed to the watcher, every turn curated once, files.md matches the disk."""
    log = tmp_path / "d.log"
    with BridgeStandin(responder=rule_curator.responder) as bridge:
        env = _env(layout, bridge, WSD_BATCH_TURNS="5", WSD_WAKE_JUMP_SECONDS="1")
        with running_daemon(env, log) as proc:
            write_turns(layout, 5, "ops")
            assert _wait(lambda: _q(layout.memory_db, "SELECT count(*) FROM batches") == [(1,)])
            (Path(layout.root) / "documents" / "kept.txt").write_text("kept")
            assert _wait(lambda: "kept.txt" in _read(layout.md("files.md")))
            os.kill(proc.pid, signal.SIGSTOP)
            write_turns(layout, 10, "ops", 5)
            (Path(layout.root) / "documents" / "while-frozen.txt").write_text("new")
            (Path(layout.root) / "documents" / "kept.txt").unlink()
            time.sleep(7)  # frozen far longer than the wake threshold
            os.kill(proc.pid, signal.SIGCONT)
            assert _wait(
                lambda: (
                    _q(layout.memory_db, "SELECT sum(turns) FROM batches WHERE status = 'done'")
                    == [(15,)]
                )
            )
            assert _wait(lambda: "while-frozen.txt" in _read(layout.md("files.md")))
            assert "kept.txt" not in _read(layout.md("files.md"))
        requests = len(bridge.requests)
    events = [json.loads(x) for x in log.read_text().splitlines() if x.startswith("{")]
    assert [e for e in events if e["event"] == "wake"], "the wake was not logged"
    # One detector (the loop's): the watcher hears of the wake from it and reconciles.
    assert [e for e in events if e["event"] == "workspace_rescan" and e["reason"] == "wake"]
    assert _q(
        layout.memory_db, "SELECT count(*), count(DISTINCT observation_id) FROM batch_turns"
    ) == [(15, 15)]
    assert requests == 3  # 15 turns in batches of 5: no call repeated


@pytest.mark.slow
def test_secrets_never_reach_databases_md_files_logs_or_the_bridge(
    layout: Layout, tmp_path: Path
) -> None:
    """Corpus secrets in prompts and tool outputs appear nowhere downstream; nor does the token."""
    log = tmp_path / "d.log"
    with BridgeStandin(responder=rule_curator.responder) as bridge:
        env = _env(layout, bridge, WSD_BATCH_TURNS="10")
        # Captured in process (the Agent SDK's path): the command hook's own redaction is
        # test_redaction_capture's, and 528 hook processes only fed this test.
        capture = Capture(CaptureConfig(workspace=layout.root))
        for i, (_kind, text) in enumerate(SECRETS):
            for event in (
                {
                    "hook_event_name": "UserPromptSubmit",
                    "session_id": "sec",
                    "prompt": f"I prefer keeping this: {text}",
                },
                {
                    "hook_event_name": "PostToolUse",
                    "session_id": "sec",
                    "tool_name": "Bash",
                    "tool_input": {"command": f"pip install tool{i} && echo {text}"},
                    "tool_response": {"stdout": text},
                },
                {
                    "hook_event_name": "Stop",
                    "session_id": "sec",
                    "last_assistant_message": f"Saved {text}",
                },
            ):
                assert capture.handle(event) == "written"
        capture.close()
        with running_daemon(env, log):
            wsd(env, "flush", "--wait", "60")
        sent = b"".join(r.raw for r in bridge.requests)
    assert _q(layout.memory_db, "SELECT count(*) FROM learnings")[0][0] >= len(SECRETS)
    places = {"bridge requests": sent, "daemon log": log.read_bytes()}
    for name in sorted(os.listdir(layout.memory_dir)):
        places[name] = Path(layout.memory_dir, name).read_bytes()
    for place, blob in places.items():
        leaked = [k for k, text in SECRETS if sensitive_part(text).encode() in blob]
        assert leaked == [], f"{place} holds {leaked}"
    assert TOKEN.encode() not in log.read_bytes()
    assert any(name in places for name in CURATED_FILES)


def _snapshot(root: Path) -> dict[str, tuple[int, str]]:
    out = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_dir():
            out[rel] = (stat.S_IMODE(path.stat().st_mode), "dir")
        elif not rel.endswith(("-wal", "-shm")):
            out[rel] = (
                stat.S_IMODE(path.stat().st_mode),
                hashlib.sha256(path.read_bytes()).hexdigest(),
            )
    return out


@pytest.mark.parametrize("existing", [False, True], ids=["empty-folder", "existing-workspace"])
def test_bootstrap_twice_gives_the_same_result_and_touches_no_data(
    tmp_path: Path, existing: bool
) -> None:
    """deploy/bootstrap.sh run twice: same tree, permissions as specified, user data untouched."""
    root = tmp_path / "ws"
    root.mkdir()
    venv = fake_venv(tmp_path)
    if existing:
        (root / "documents").mkdir()
        (root / "documents" / "mine.txt").write_text("user data")
        init_workspace(Layout(str(root)), templates=None)  # a workspace from an older deploy
        write_turns(Layout(str(root)), 3, "ops")
    first = bootstrap_sh(root, venv)
    assert first.returncode == 0, first.stderr
    assert "installed" in first.stdout
    before = _snapshot(root)
    second = bootstrap_sh(root, venv)
    assert second.returncode == 0, second.stderr
    assert "nothing to change" in second.stdout
    assert _snapshot(root) == before
    layout = Layout(str(root))
    assert stat.S_IMODE(os.stat(layout.os_dir).st_mode) == 0o700
    for db in (layout.transcript_db, layout.memory_db):
        assert stat.S_IMODE(os.stat(db).st_mode) == 0o600
    assert Path(layout.version_file).read_text() == "7.0\n"
    for name in ("soul.md", "os.md"):
        text = Path(layout.md(name)).read_text()
        assert len(text.splitlines()) <= 200
    soul = Path(layout.md("soul.md")).read_text()
    for section in ("## Your Daemon", "## Autonomy Rules", "## Tool Guidance", "Canvas"):
        assert section in soul
    assert f"Read any file in {root}/ outside .os/" in soul and "/workspace/" not in soul
    conf = (root / ".os" / "supervisor" / "conf.d" / "wsd.conf").read_text()
    settings = root / ".os" / "settings.env"  # the operator's: made once, then never touched
    command = f"command={venv}/bin/wsd --workspace {root} run --settings {settings}\n"
    assert command in conf and "%(ENV_WSD_BRIDGE_TOKEN)s" in conf
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    settings.write_text("WSD_DAILY_BUDGET_USD=5\n")
    assert "settings.env" not in bootstrap_sh(root, venv).stdout
    assert settings.read_text() == "WSD_DAILY_BUDGET_USD=5\n"
    if existing:
        assert (root / "documents" / "mine.txt").read_text() == "user data"
        assert _q(layout.transcript_db, "SELECT count(*) FROM observations") == [(3,)]


def test_standalone_bootstrap_refuses_a_path_too_long_for_supervisords_socket(
    tmp_path: Path,
) -> None:
    """wsd bootstrap --standalone under a path whose socket cannot bind exits 2 naming the
    path and the limit, and creates nothing (supervisord would start and never listen)."""
    root = tmp_path / ("deep-" * 20) / "ws"
    root.mkdir(parents=True)
    venv = str(Path(sys.executable).parent.parent)
    args = ["--workspace", str(root), "bootstrap", "--version", "1.0", "--standalone"]
    result = wsd(dict(os.environ), *args, "--venv", venv, check=False)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "supervisor.sock" in result.stderr and "107" in result.stderr
    assert list(root.iterdir()) == []


def test_backup_skips_a_link_or_fifo_among_the_md_files(layout: Layout, tmp_path: Path) -> None:
    """A FIFO at user.md and a link out at context.md: wsd backup neither blocks nor copies the
    link's target; it names both as skipped and copies the rest."""
    outside = tmp_path / "outside.txt"
    outside.write_text("not the workspace's")
    Path(layout.md("soul.md")).write_text("# Soul\n")
    os.mkfifo(layout.md("user.md"))
    os.symlink(outside, layout.md("context.md"))
    with BridgeStandin(responder=rule_curator.responder) as bridge:
        env = _env(layout, bridge)
        result = subprocess.run(
            [venv_script("wsd"), "backup", str(tmp_path / "bk")],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 0, result.stderr
    assert "skipped user.md" in result.stderr and "skipped context.md" in result.stderr
    manifest = json.loads((tmp_path / "bk" / "manifest.json").read_text())
    assert sorted(manifest["skipped"]) == ["context.md", "user.md"]
    assert not (tmp_path / "bk" / "user.md").exists()
    assert not (tmp_path / "bk" / "context.md").exists()
    assert "soul.md" in manifest["md_files"] and (tmp_path / "bk" / "soul.md").exists()


def test_doctor_finds_and_fixes_safe_problems(layout: Layout) -> None:
    """doctor fails on loose permissions, a damaged FTS index and a missing md file, warns of a
    hand edit not yet adopted; --fix heals all and adopts the edit (never reverts it)."""
    with BridgeStandin(responder=rule_curator.responder) as bridge:
        worker = make_worker(layout, bridge, batch_turns=3)
        write_turns(layout, 3, "ops")
        worker.run_once()
        env = _env(layout, bridge)
        os.chmod(layout.memory_db, 0o644)
        Path(layout.md("user.md")).unlink()
        Path(layout.md("tools.md")).write_text("# Tools\n- edited by hand\n")
        conn = apsw.Connection(layout.memory_db)
        conn.execute("DELETE FROM learnings_fts_data WHERE id > 1")  # corrupt the index
        conn.close()
        worker.status.update(force=True)
        broken = wsd(env, "doctor", check=False)
        assert broken.returncode == 1
        for needle in (
            "FAIL permissions",
            "FAIL memory.db integrity",
            "FAIL md files: user.md is missing (--fix writes them)",
            "WARN md files: edited by hand: tools.md (",
        ):
            assert needle in broken.stdout, broken.stdout
        assert "['" not in broken.stdout and ": []" not in broken.stdout  # words, not reprs
        fixed = wsd(env, "doctor", "--fix", check=False)
        assert "[fixed]" in fixed.stdout
        assert "WARN md files: adopted tools.md; wrote user.md; removed 0 temp file(s)" in (
            fixed.stdout
        )
        again = wsd(env, "doctor", check=False)
        for needle in (
            "ok   permissions",
            "ok   memory.db integrity",
            "ok   md files",
            "ok   bridge",
        ):
            assert needle in again.stdout, again.stdout
        assert Path(layout.md("tools.md")).read_text() == "# Tools\n- edited by hand\n"
        assert Store(layout).revisions.latest_md()["tools.md"] == "# Tools\n- edited by hand\n"
        assert (
            Path(layout.md("user.md")).read_text() == Store(layout).revisions.latest_md()["user.md"]
        )


def test_doctor_reads_a_wal_that_vanishes_under_it_as_absent(layout: Layout) -> None:
    """SQLite deletes -wal and -shm when the last connection closes: doctor, checking them while
    hooks open and close the databases, reports them (or their absence) and never dies on a
    file gone between two looks (CI: a healthy workspace's report was empty)."""
    from wsd import schema
    from wsd.daemon.ops.doctor import Doctor, databases

    init_workspace(layout)
    stop = threading.Event()

    def churn(path: str, kind: schema.Kind) -> None:
        while not stop.is_set():
            conn = schema.connect(path, kind)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
            conn.close()  # the last connection: the -wal and -shm go with it

    threads = [
        threading.Thread(target=churn, args=(layout.transcript_db, "transcript")),
        threading.Thread(target=churn, args=(layout.memory_db, "memory")),
    ]
    for thread in threads:
        thread.start()
    try:
        for fix in [False, True] * 1500:  # before the fix: ~2% of runs raised
            databases.permissions(Doctor(layout, None, fix=fix))
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    report = Doctor(layout, None).run()
    assert [f.line() for f in report if f.check == "permissions"] == [
        "ok   permissions: .os/ 0700, databases 0600"
    ]


def test_a_check_that_raises_is_one_failure_and_the_report_goes_on(layout: Layout) -> None:
    """A surprise inside one doctor check (here the ledger busy past its timeout) is a FAIL line
    naming that check and the error; every later check still reports."""
    from wsd.daemon.ops.doctor import CHECKS, Doctor

    def busy_ledger(_doctor: object) -> None:  # the fault seam: one check meets a locked database
        raise apsw.BusyError("database is locked")

    checks = [replace(c, run=busy_ledger) if c.name == "processing" else c for c in CHECKS]
    init_workspace(layout)
    lines = [f.line() for f in Doctor(layout, None, checks=checks).run()]
    assert "FAIL processing: could not be checked: BusyError: database is locked" in lines
    later = {line.split(":")[0].split(None, 1)[1] for line in lines}
    assert {"md files", "disk", "daemon", "bridge"} <= later, lines


def test_backup_is_a_consistent_online_copy(layout: Layout, tmp_path: Path) -> None:
    """wsd backup copies both databases (integrity ok, same rows) and the md files while live."""
    with BridgeStandin(responder=rule_curator.responder) as bridge:
        worker = make_worker(layout, bridge, batch_turns=3)
        write_turns(layout, 3, "ops")
        worker.run_once()
        reader = apsw.Connection(layout.transcript_db)  # a live reader during the backup
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM events").fetchall()
        result = wsd(_env(layout, bridge), "backup", str(tmp_path / "bk"), check=False)
        reader.execute("COMMIT")
        reader.close()
    assert result.returncode == 0, result.stderr
    for name, sql in (
        ("transcript.db", "SELECT count(*) FROM observations"),
        ("memory.db", "SELECT count(*) FROM learnings"),
    ):
        copy = str(tmp_path / "bk" / name)
        assert _q(copy, "PRAGMA integrity_check") == [("ok",)]
        assert _q(copy, sql) == _q(str(Path(layout.memory_dir) / name), sql)
    assert (tmp_path / "bk" / "user.md").read_text() == Path(layout.md("user.md")).read_text()
    assert stat.S_IMODE(os.stat(tmp_path / "bk").st_mode) == 0o700
