"""Disk full (RLIMIT_FSIZE, SIGXFSZ ignored): hooks spool, the daemon reports and retries,
committed data survives, and everything is caught up once space returns."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw

from tests.conftest import daemon_env, running_daemon, venv_script, wsd
from tests.conftest import query as _q
from tests.conftest import wait_for as _wait
from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.schema.layout import Layout

#: Any write past this offset fails with EFBIG: every WAL append does, small spool lines don't.
LIMIT = 8192


def _limited() -> Callable[[], None]:
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))

    return apply


def _hook(env: dict[str, str], event: dict[str, Any], limited: bool) -> str:
    result = subprocess.run(
        [venv_script("wsd-hook")],
        input=json.dumps(event).encode(),
        env=env,
        capture_output=True,
        preexec_fn=_limited() if limited else None,
        check=True,
    )
    assert result.stdout == b""
    return result.stderr.decode()


def _turn(env: dict[str, str], i: int, limited: bool = False) -> str:
    err = _hook(
        env,
        {"hook_event_name": "UserPromptSubmit", "session_id": "df", "prompt": f"I prefer plan {i}"},
        limited,
    )
    return err + _hook(
        env,
        {"hook_event_name": "Stop", "session_id": "df", "last_assistant_message": f"ok {i}"},
        limited,
    )


def test_disk_full_loses_nothing(layout: Layout, tmp_path: Path) -> None:
    """With writes failing, events spool, the daemon survives, and all is curated after."""
    log = tmp_path / "d.log"
    with BridgeStandin(responder=rule_curator.responder) as bridge:
        env = daemon_env(layout, bridge, WSD_BATCH_TURNS="4", WSD_WATCH="false")
        for i in range(4):
            _turn(env, i)
        with running_daemon(env, log):
            assert _wait(lambda: _q(layout.memory_db, "SELECT count(*) FROM batches") == [(1,)])
        committed = _q(layout.memory_db, "SELECT id, content FROM learnings ORDER BY id")
        assert committed

        # The disk fills up: hooks cannot write the database and must spool.
        errors = "".join(_turn(env, i, limited=True) for i in range(4, 8))
        assert "NOT captured" not in errors
        assert "spooled" in errors
        assert os.path.getsize(layout.spool) > 0

        # The daemon, also out of space, reports the failure and keeps running.
        with running_daemon(env, log, _limited()) as proc:
            # (At start-up it cannot even migrate/checkpoint: it retries in-process, with back-off.)
            reported = ('"pass_failed"', '"start_retry"')
            assert _wait(lambda: any(r in log.read_text() for r in reported), 20)
            time.sleep(1.0)
            assert proc.poll() is None, "the daemon died on a full disk"
        for db in (layout.transcript_db, layout.memory_db):
            assert _q(db, "PRAGMA integrity_check") == [("ok",)]
        assert _q(layout.memory_db, "SELECT id, content FROM learnings ORDER BY id") == committed

        # Space returns: everything is ingested and curated, nothing twice.
        with running_daemon(env, log):
            wsd(env, "flush", "--wait", "30")
    assert _q(layout.transcript_db, "SELECT count(*) FROM observations") == [(8,)]
    assert _q(
        layout.memory_db, "SELECT count(*), count(DISTINCT observation_id) FROM batch_turns"
    ) == [(8, 8)]
    assert not os.path.exists(layout.spool)
    conn = apsw.Connection(layout.memory_db)
    conn.execute("INSERT INTO learnings_fts (learnings_fts) VALUES ('integrity-check')")
    conn.close()
