"""What an operator reads while curation waits must say why (issue 21): ``wsd flush --wait``
names the backoff and when the next attempt is, or the budget pause and when it resumes; once
the Bridge recovers, ``wsd status`` no longer shows the outage."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import daemon_env, running_daemon, wait_for, write_turns, wsd
from wsd.daemon.runtime.heartbeat import status_path
from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import BridgeStandin, Fault, Reply
from wsd.schema.layout import Layout


def _status(env: dict[str, str]) -> dict[str, object]:
    return dict(json.loads(wsd(env, "status", "--json").stdout))


def _shell(layout: Layout, env: dict[str, str]) -> dict[str, str]:
    """An operator's shell: none of the daemon's settings, only the workspace."""
    shell = {k: v for k, v in env.items() if not k.startswith(("WSD_", "ANTHROPIC_"))}
    return shell | {"WSD_WORKSPACE": layout.root}


def _doctor(env: dict[str, str]) -> dict[str, dict[str, object]]:
    """``wsd doctor --json``'s findings by check (the last of each)."""
    out = json.loads(wsd(env, "doctor", "--json", check=False).stdout)
    return {f["check"]: f for f in out["findings"]}


@pytest.mark.slow
def test_flush_wait_names_the_backoff_and_status_clears_it_on_recovery(
    layout: Layout, tmp_path: Path
) -> None:
    """Bridge down: flush --wait says the Bridge is failing and when the daemon tries again
    (not "is the daemon running?"); after recovery, last_error and next_attempt_at are gone."""
    down = [True]

    def responder(_body: object) -> Fault | Reply:
        return Fault.server_error() if down[0] else Reply.text("FACT: The Bridge is back")

    with BridgeStandin(responder=responder) as bridge:
        env = daemon_env(layout, bridge, WSD_BATCH_TURNS="1", WSD_RETRY_ATTEMPTS="1")
        with running_daemon(env, tmp_path / "d.log"):
            write_turns(layout, 1)
            wsd(env, "flush")
            assert wait_for(lambda: _status(env)["state"] == "backoff", 20)
            waited = wsd(env, "flush", "--wait", "1", check=False)
            assert waited.returncode == 1
            assert "the Bridge is failing" in waited.stderr, waited.stderr
            assert "tries again at 20" in waited.stderr, waited.stderr
            said = "HTTP 500 from the Bridge (api_error: Internal server error)"
            assert _status(env)["last_error"] == said
            assert said in waited.stderr, waited.stderr
            doctor = _doctor(_shell(layout, env))
            assert doctor["curation"]["level"] == "warn", doctor
            assert "the Bridge has failed" in doctor["curation"]["detail"]
            assert doctor["bridge"]["level"] == "ok"  # the daemon's URL, not this shell's
            down[0] = False
            wsd(env, "flush", "--wait", "90")
            assert wait_for(lambda: _status(env)["last_error"] is None, 15)
            assert _status(env)["next_attempt_at"] is None


def test_flush_wait_names_the_budget_pause(layout: Layout, tmp_path: Path) -> None:
    """Daily cap spent: flush --wait says so, with the cap's setting and when it resumes."""
    usage = {"input_tokens": 1000, "output_tokens": 1000}
    with BridgeStandin(responder=lambda _b: Reply.text("FACT: A fact", usage=usage)) as bridge:
        env = daemon_env(layout, bridge, WSD_BATCH_TURNS="2", WSD_DAILY_BUDGET_USD="0.005")
        with running_daemon(env, tmp_path / "d.log"):
            write_turns(layout, 6)
            wsd(env, "flush", "--wait", "5", check=False)
            assert wait_for(lambda: _status(env)["state"] == "budget", 15)
            waited = wsd(env, "flush", "--wait", "1", check=False)
            doctor = _doctor(_shell(layout, env))
    assert doctor["curation"]["level"] == "warn" and "daily budget" in doctor["curation"]["detail"]
    assert waited.returncode == 1
    assert "daily budget is spent" in waited.stderr and "WSD_DAILY_BUDGET_USD" in waited.stderr
    assert "resumes at 20" in waited.stderr, waited.stderr
    # and how to resume now, not deployed here: the daemon's own environment
    assert "to resume now, set WSD_DAILY_BUDGET_USD in the environment of `wsd run`" in (
        waited.stderr
    ), waited.stderr


def test_status_shows_the_daemons_settings_and_times_as_iso(layout: Layout, tmp_path: Path) -> None:
    """Found by an operator: under a 0.002 cap, ``wsd status`` from a shell without the
    setting showed the shell's default (1.0). Now the daemon reports its settings (never its
    credentials) and status shows them; the readable form prints plain lines, times as ISO
    8601 with ages, and whether semantic matching runs."""
    with BridgeStandin() as bridge:
        env = daemon_env(
            layout,
            bridge,
            WSD_DAILY_BUDGET_USD="0.002",
            WSD_BRIDGE_TOKEN="sk-test-never-shown",
            ANTHROPIC_BASE_URL=bridge.url.replace("://", "://user:hunter2pw@"),
        )
        shell = _shell(layout, env)
        with running_daemon(env, tmp_path / "d.log"):
            write_turns(layout, 1)
            wsd(env, "flush", "--wait", "30")
            status = json.loads(wsd(shell, "status", "--json").stdout)
            readable = wsd(shell, "status").stdout
    assert status["daily_budget_usd"] == 0.002 and status["settings"]["daily_budget_usd"] == 0.002
    assert status["settings_from"].startswith("the daemon")
    heartbeat = Path(status_path(layout)).read_text()
    for secret in ("sk-test-never-shown", "hunter2pw"):
        assert secret not in heartbeat and secret not in readable
    assert isinstance(status["last_batch"]["finished_at"], float)
    assert re.search(
        r"\n +finished_at: 20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d \(\d+ s ago\)\n", readable
    ), readable
    # Plain lines, no Python reprs (a new user saw dicts and None); the semantic half as
    # the daemon runs it, not as the setting wishes.
    assert "{" not in readable and "None" not in readable, readable
    from wsd.daemon.memory.semantic import missing

    shown = "on" if missing() is None else f"off: {missing()}"  # CI runs without the extras too
    assert status["semantic"] == shown and f"\n              semantic: {shown}\n" in readable


def test_doctor_fails_an_outage_past_half_an_hour(layout: Layout) -> None:
    """An outage the retries have ridden for over 30 minutes is a FAIL naming the error, the
    next attempt and the fix (a shorter one is a WARN)."""
    import os
    import time

    now = time.time()
    beat = {"pid": os.getpid(), "state": "backoff", "heartbeat_at": now, "supervised": "wsd"}
    beat |= {"last_error": "HTTP 503 from the Bridge", "next_attempt_at": now + 600}
    env = _shell(layout, dict(os.environ))
    for since, level in ((now - 3600, "fail"), (now - 60, "warn")):
        Path(status_path(layout)).write_text(json.dumps(beat | {"outage_since": since}))
        finding = _doctor(env)["curation"]
        assert finding["level"] == level, finding
        assert "HTTP 503" in str(finding["detail"]) and "WSD_BRIDGE_TOKEN" in str(finding["detail"])


def test_operator_commands_take_the_deployed_settings(layout: Layout, tmp_path: Path) -> None:
    """Found by an operator: ``wsd rebuild`` and ``wsd retry`` exited 2 unless the shell had
    the Bridge URL and token, retry even with nothing parked; with both ANTHROPIC_AUTH_TOKEN
    and WSD_BRIDGE_TOKEN set the SDK refused to start. Now a bare shell's rebuild takes the
    running daemon's settings (one token passed), and retry with nothing parked says so."""
    with BridgeStandin() as bridge:
        env = daemon_env(layout, bridge, ANTHROPIC_AUTH_TOKEN="also-a-token")
        shell = _shell(layout, env)
        retry = wsd(shell, "retry", check=False)
        assert retry.returncode == 0 and "nothing parked" in retry.stdout, retry.stderr
        with running_daemon(env, tmp_path / "d.log"):
            write_turns(layout, 2)
            wsd(env, "flush", "--wait", "30")
            rebuilt = wsd(shell, "rebuild", "--wait", "30", check=False, timeout=120)
            assert rebuilt.returncode == 0, rebuilt.stderr
            assert "rebuilt memory from 2 turn(s)" in rebuilt.stdout
            for secret in ("also-a-token", env["WSD_BRIDGE_TOKEN"]):
                assert secret not in rebuilt.stdout + rebuilt.stderr


def test_bare_bootstrap_works_and_says_how_to_reach_the_commands(tmp_path: Path) -> None:
    """Found by an operator: ``wsd bootstrap`` alone failed on a missing --version, and after
    the deploy neither wsd nor supervisorctl was on PATH. Bare, it keeps the deployed version
    (else the package's) and prints the PATH line and the commands, which exist there."""
    import os

    root = tmp_path / "ws"
    root.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WSD_", "ANTHROPIC_"))}
    env["WSD_WORKSPACE"] = str(root)
    first = wsd(env, "bootstrap", "--standalone")
    version = (root / ".os" / "VERSION").read_text().strip()
    assert version and version != "unknown"
    (root / ".os" / "VERSION").write_text("deployed-7\n")
    again = wsd(env, "bootstrap", "--standalone")
    assert (root / ".os" / "VERSION").read_text().strip() == "deployed-7"
    assert "at version deployed-7" in again.stdout
    path = re.search(r'export PATH=(\S+):"\$PATH"', first.stdout)  # shell-quoted
    assert path is not None, first.stdout
    named = next(line for line in first.stdout.splitlines() if "live in" in line)
    for command in ("wsd", "supervisord", "supervisorctl"):
        assert os.access(os.path.join(shlex.split(path.group(1))[0], command), os.X_OK)
        assert re.search(rf"\b{command}\b", named), named
    ctl = f"supervisorctl -c {root}/.os/supervisor/supervisord.conf status wsd"
    assert ctl in first.stdout
    bare = wsd(env, "bootstrap")  # found by a new user: this one said `supervisorctl status wsd`
    assert ctl in bare.stdout, bare.stdout


def _beat(layout: Layout, **fields: object) -> None:
    """A heartbeat as the daemon writes it; this test process plays the daemon's pid."""
    import os
    import time

    beat = {"pid": os.getpid(), "state": "idle", "heartbeat_at": time.time(), "supervised": "wsd"}
    Path(status_path(layout)).write_text(json.dumps(beat | fields))


def _summary(env: dict[str, str]) -> tuple[str, dict[str, str]]:
    """``wsd doctor``'s last line and its FAIL lines by check."""
    out = wsd(env, "doctor", check=False).stdout.splitlines()
    fails = dict(line[5:].split(": ", 1) for line in out if line.startswith("FAIL "))
    return out[-1], fails


def test_doctor_says_try_fix_only_for_what_fix_repairs(layout: Layout) -> None:
    """Found by a new user: "; try --fix" followed any failure, the Bridge's too, which --fix
    cannot repair; it is said only when a failing finding is one --fix repairs."""
    import os

    env = _shell(layout, dict(os.environ)) | {"ANTHROPIC_BASE_URL": "http://127.0.0.1:1"}
    _beat(layout)
    last, fails = _summary(env)
    assert list(fails) == ["bridge"] and last == "1 problem(s)", (last, fails)
    os.chmod(layout.memory_db, 0o644)
    last, fails = _summary(env)
    assert "permissions" in fails and last == "2 problem(s); try --fix", (last, fails)
    doctor = json.loads(wsd(env, "doctor", "--json", check=False).stdout)
    fixable = {f["check"]: f["fixable"] for f in doctor["findings"] if f["level"] == "fail"}
    assert fixable == {"permissions": True, "bridge": False}, fixable


def test_doctor_says_how_to_start_a_stopped_daemon(tmp_path: Path) -> None:
    """Daemon down: doctor says how to start it, as the deploy runs it: a stand-alone
    supervisord (its -c conf; supervisord itself when that is down too), the system's
    supervisorctl, or `wsd run` where nothing is deployed; never "try --fix"."""
    import os

    root = tmp_path / "ws"
    root.mkdir()
    layout = Layout(str(root))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WSD_", "ANTHROPIC_"))}
    env["WSD_WORKSPACE"] = str(root)
    wsd(env, "init")
    last, fails = _summary(env)
    assert f"`wsd --workspace {root} run`" in fails["daemon"] and last == "1 problem(s)"
    _beat(layout, pid=2**22 + 1)  # no such process: the daemon stopped
    wsd(env, "bootstrap")
    last, fails = _summary(env)
    assert "start it: `supervisorctl start wsd`" in fails["daemon"], fails
    assert last == "1 problem(s)", last
    wsd(env, "bootstrap", "--standalone")
    conf = f"{root}/.os/supervisor/supervisord.conf"
    assert f"`supervisord -c {conf}`" in _summary(env)[1]["daemon"]
    Path(root, ".os", "run", "supervisord.pid").write_text(f"{os.getpid()}\n")
    assert f"start it: `supervisorctl -c {conf} start wsd`" in _summary(env)[1]["daemon"]


def test_doctors_budget_hint_names_the_settings_file(tmp_path: Path) -> None:
    """Found by a new user: "raise WSD_DAILY_BUDGET_USD in the deployed settings" named no
    place; a deployed workspace's doctor names .os/settings.env and the restart command."""
    import os

    root = tmp_path / "ws"
    root.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WSD_", "ANTHROPIC_"))}
    env["WSD_WORKSPACE"] = str(root)
    wsd(env, "init")
    budget = {"spent_usd": 0.01, "cap_usd": 0.002, "resumes_at": 1.9e9}
    _beat(Layout(str(root)), state="budget", budget=budget)
    by_hand = _doctor(env)["curation"]["detail"]
    assert "set WSD_DAILY_BUDGET_USD in the environment of `wsd run`" in str(by_hand), by_hand
    wsd(env, "bootstrap", "--standalone")
    deployed = _doctor(env)["curation"]["detail"]
    conf = f"{root}/.os/supervisor/supervisord.conf"
    where = f"set WSD_DAILY_BUDGET_USD in {root}/.os/settings.env and restart the daemon"
    assert f"{where} (`supervisorctl -c {conf} restart wsd`)" in str(deployed), deployed


def test_the_boot_contexts_shell_commands_work_from_the_agents_shell(tmp_path: Path) -> None:
    """Found by a new user: without a memory tool the boot context told the agent to run a
    bare ``wsd search``, refused from its shell (no WSD_WORKSPACE) for any workspace but
    /workspace. The commands it names now carry the workspace and run as written."""
    root = tmp_path / "my workspace"  # not /workspace, and a space to quote
    shell = {k: v for k, v in os.environ.items() if not k.startswith(("WSD_", "ANTHROPIC_"))}
    wsd(shell, "--workspace", str(root), "init")
    notes = tmp_path / "notes.jsonl"
    notes.write_text(json.dumps({"type": "fact", "content": "The boiler is serviced in May."}))
    wsd(shell, "--workspace", str(root), "import", str(notes))
    boot = wsd(shell, "--workspace", str(root), "boot-context").stdout
    search = re.search(r"`([^`]*search \"question\")`", boot)
    complete = re.search(r"`([^`]*pending complete ID)`", boot)
    assert search and complete, boot
    command = shlex.split(search.group(1).replace('"question"', "boiler"))
    found = subprocess.run(command, env=shell, capture_output=True, text=True, timeout=60)
    assert found.returncode == 0, found.stderr
    assert "The boiler is serviced in May." in found.stdout
    resolve = shlex.split(complete.group(1).replace("ID", "A1"))
    missing = subprocess.run(resolve, env=shell, capture_output=True, text=True, timeout=60)
    assert "does not exist" not in missing.stderr and "init" not in missing.stderr, missing.stderr


def test_flush_wait_says_when_its_turn_was_parked(layout: Layout, tmp_path: Path) -> None:
    """Found by a new user: a flushed turn the Bridge rejected (400) was parked and
    ``flush --wait`` still said "flush done", exit 0. It now exits 1 naming the parked batch
    and what to do; ``wsd retry`` exits 1 while it stays parked, 0 once curated; a later
    flush with nothing parked is done again."""
    reject = [True]

    def responder(_body: object) -> Fault | Reply:
        return Fault.bad_request("prompt is too long") if reject[0] else Reply.text("FACT: ok")

    with BridgeStandin(responder=responder) as bridge:
        env = daemon_env(layout, bridge, WSD_RETRY_ATTEMPTS="1")
        with running_daemon(env, tmp_path / "d.log"):
            write_turns(layout, 1)
            waited = wsd(env, "flush", "--wait", "60", check=False)
            assert waited.returncode == 1, waited.stdout + waited.stderr
            assert "1 batch(es) parked" in waited.stderr and "wsd retry" in waited.stderr
            assert "prompt is too long" in waited.stderr, waited.stderr
            # Asked again at once: nothing is pending (the turn is parked), but the flush
            # still says its turn was not curated (found by a second new-user run).
            again = wsd(env, "flush", "--wait", "20", check=False)
            assert again.returncode == 1 and "parked in the last 10 min" in again.stderr
            # wsd retry from an operator's terminal: logged as the shell asks (the deployed
            # daemon's JSON came out raw), and exit 1 while the batch is parked again.
            shell = _shell(layout, env) | {"WSD_LOG_FORMAT": "console"}
            retried = wsd(shell, "retry", check=False, timeout=120)
            assert retried.returncode == 1, retried.stdout + retried.stderr
            assert "0 curated, 1 parked again" in retried.stdout
            assert "still failing" in retried.stderr and "prompt is too long" in retried.stderr
            assert not any(line.startswith("{") for line in retried.stderr.splitlines())
            # The retry left the daemon's heartbeat alone (it wrote its own pid there, and
            # once it exited the daemon looked gone to status and the next retry).
            assert _status(env)["daemon_running"] is True
            reject[0] = False
            assert "1 curated, 0 parked again" in wsd(shell, "retry", timeout=120).stdout
            write_turns(layout, 1, start=1)
            assert wsd(env, "flush", "--wait", "60").stdout.strip().endswith("flush done")


def test_wsd_retry_runs_parked_batches_without_a_worker(layout: Layout) -> None:
    """Issue 31: `wsd retry` builds the commit bookkeeping alone (wiring.build_after_commit):
    with Worker unbuildable it still curates a parked batch and marks its turn processed."""
    from tests.conftest import query
    from wsd.daemon.store import BatchRecord, Store

    write_turns(layout, 1)
    store = Store(layout)
    store.migrate()
    [turn] = store.turns.next_turns(10, float("inf"))[0]
    record = BatchRecord.parked([turn], RuntimeError("HTTP 400"), 1, time.time())
    store.ledger.commit_batch(store.transcript_identity(), record, time.time())
    script = (
        "import sys\n"
        "from wsd.daemon.curation.loop import worker\n"
        "def refuse(*a, **k): raise AssertionError('wsd retry built a Worker')\n"
        "worker.Worker.__init__ = refuse\n"
        "from wsd.daemon.ops.cli import main\n"
        "sys.exit(main(['retry']))\n"
    )
    with BridgeStandin(responder=rule_curator.responder) as bridge:
        env = daemon_env(layout, bridge)
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 curated, 0 parked again" in done.stdout
    statuses = query(layout.memory_db, "SELECT status FROM batches ORDER BY id")
    assert statuses == [("retried",), ("done",)]
    assert query(layout.transcript_db, "SELECT processed FROM observations") == [(1,)]
