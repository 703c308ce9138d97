"""The economy lane as the person and the operator meet it: a running ``wsd run``, ``wsd flush
--wait`` on the prompt lane, ``wsd status`` listing the Message Batches in flight and the lane,
``wsd doctor`` naming a batch out too long and a Bridge without batches."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.conftest import daemon_env, running_daemon, wait_for, write_turns, wsd
from tests.conftest import query as q
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.schema.layout import Layout

BATCHES = "/v1/messages/batches"


def _economy_env(layout: Layout, standin: BridgeStandin, **extra: str) -> dict[str, str]:
    return daemon_env(
        layout,
        standin,
        WSD_CURATION="economy",
        WSD_BATCH_TURNS="3",
        WSD_IDLE_SECONDS="3600",
        **extra,
    )


def _creates(standin: BridgeStandin) -> int:
    return sum(1 for r in standin.requests if r.method == "POST" and r.path == BATCHES)


def _in_flight(layout: Layout) -> int:
    rows = q(
        layout.transcript_db, "SELECT count(*) FROM message_batches WHERE status = 'in_flight'"
    )
    return int(rows[0][0])


def test_status_and_doctor_show_a_batch_in_flight_and_flush_wait_curates_now(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """While a Message Batch is out, status lists it with its age, doctor says it is fine
    (and fails it past WSD_ECONOMY_WAIT_LIMIT_SECONDS), and ``wsd flush --wait`` curates its
    turns at once by a direct call."""
    standin.batches.delay = 3600
    env = _economy_env(layout, standin)
    with running_daemon(env, tmp_path / "daemon.log"):
        write_turns(layout, 3)
        assert wait_for(lambda: _in_flight(layout) == 1, timeout=60)
        status = json.loads(wsd(env, "status", "--json").stdout)
        curation = status["curation"]
        assert curation["lane"] == "economy" and curation["economy_off"] is None
        [batch] = curation["in_flight"]
        assert batch["message_batch_id"].startswith("msgbatch_") and batch["turns"] == 3
        assert batch["age_s"] >= 0
        readable = wsd(env, "status").stdout
        assert batch["message_batch_id"] in readable and "3 turn(s)" in readable
        doctor = wsd(env, "doctor").stdout
        assert "economy lane: 1 Message Batch(es) in flight" in doctor
        late = wsd(env | {"WSD_ECONOMY_WAIT_LIMIT_SECONDS": "0.001"}, "doctor", check=False)
        # The limit the doctor judges by is the daemon's (its heartbeat), not this shell's.
        assert "has waited" not in late.stdout
        started = time.monotonic()
        flushed = wsd(env, "flush", "--wait", "60")
        assert "flush done" in flushed.stdout, flushed
        assert time.monotonic() - started < 60
    assert _creates(standin) == 1
    lanes = q(layout.memory_db, "SELECT lane FROM batches")
    assert lanes == [("prompt",)]


def test_doctor_fails_a_batch_out_past_the_daemons_limit(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """A Message Batch out longer than the daemon's WSD_ECONOMY_WAIT_LIMIT_SECONDS is a FAIL
    naming it, its turns and the setting."""
    standin.batches.delay = 3600
    env = _economy_env(layout, standin, WSD_ECONOMY_WAIT_LIMIT_SECONDS="1")
    with running_daemon(env, tmp_path / "daemon.log"):
        write_turns(layout, 3)
        assert wait_for(lambda: _in_flight(layout) == 1, timeout=60)
        time.sleep(1.5)
        doctor = wsd(env, "doctor", check=False)
        assert doctor.returncode == 1
        [line] = [ln for ln in doctor.stdout.splitlines() if "has waited" in ln]
        assert "FAIL" in line.upper() and "msgbatch_" in line and "3 turn(s)" in line
        assert "WSD_ECONOMY_WAIT_LIMIT_SECONDS" in line


def test_a_bridge_without_batches_shows_in_status_and_doctor(
    layout: Layout, standin: BridgeStandin, tmp_path: Path
) -> None:
    """A Bridge that answers 404 to Message Batches: the turns are curated by direct calls,
    status and doctor say the economy lane is off, why, and when it is probed again."""
    standin.batches.enabled = False
    env = _economy_env(layout, standin)
    with running_daemon(env, tmp_path / "daemon.log"):
        write_turns(layout, 3)
        assert wait_for(lambda: q(layout.memory_db, "SELECT lane FROM batches") != [], timeout=60)
        assert q(layout.memory_db, "SELECT lane FROM batches") == [("prompt",)]
        status = json.loads(wsd(env, "status", "--json").stdout)
        off = status["curation"]["economy_off"]
        assert "404" in off["reason"] and off["probe_at"] > time.time() + 86_000
        assert "economy off, prompt lane in use" in wsd(env, "status").stdout
        doctor = wsd(env, "doctor", check=False).stdout
        assert "economy lane: off:" in doctor and "daily probe" in doctor
    log = (tmp_path / "daemon.log").read_text()
    assert log.count('"economy_unavailable"') == 1
