"""Workspace paths a person can make (issue 30: `/srv/my work` deployed and never started):
each one deploys with deploy/bootstrap.sh and starts under a real supervisord, or bootstrap
refuses it before making anything, in one line naming the path and why; the commands
bootstrap prints paste into a shell as they are."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import VENV_BIN, bootstrap_sh, fake_venv, wait_for
from wsd.daemon.runtime.heartbeat import pid_alive
from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.schema.layout import Layout

pytestmark = pytest.mark.slow

#: One name for each rule the deploy's files have: a space (supervisord's [include] split
#: there), non-ASCII, both quotes (command= is split like a shell), % and %(...)s (supervisord
#: interpolates every value), ; and # (ini comments), glob characters, a trailing space (ini
#: values are stripped), and what a shell expands (the printed commands).
AWKWARD = [
    "my work",
    "café ü 日本",
    'it\'s "quoted"',
    "50% %(here)s",
    "semi;colon#hash",
    "br[ack]et *?",
    "trailing ",
    "a\\b $x `y`",
]


def _env(bridge: BridgeStandin) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WSD_", "ANTHROPIC_"))}
    return env | {"ANTHROPIC_BASE_URL": bridge.url, "WSD_BRIDGE_TOKEN": "paths-token"}


def _printed(stdout: str) -> list[str]:
    """The commands bootstrap printed for the operator, as printed."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("operator commands"))
    return [line[2:] for line in lines[start + 1 :] if line.startswith("  ")]


def _paste(env: dict[str, str], *lines: str) -> subprocess.CompletedProcess[str]:
    """The lines pasted into bash, as an operator would."""
    return subprocess.run(
        ["bash", "-c", "\n".join(lines)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _supervised(layout: Layout) -> bool:
    """The daemon of this workspace runs under supervisord (its own heartbeat says so)."""
    with contextlib.suppress(OSError, ValueError):
        beat = json.loads((Path(layout.memory_dir) / "daemon.status.json").read_text())
        return bool(beat.get("supervised") == "wsd" and pid_alive(beat.get("pid")))
    return False


def _stop_supervisord(pidfile: Path) -> None:
    with contextlib.suppress(OSError, ValueError):
        pid = int(pidfile.read_text().strip())
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 40
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def _parents() -> Iterator[list[Path]]:
    """Short temporary folders (a Unix socket path is 107 bytes at most); every supervisord
    started in one is stopped, and the folders removed, at the end."""
    made: list[Path] = []
    try:
        yield made
    finally:
        for parent in made:
            for pidfile in parent.glob("*/.os/run/supervisord.pid"):
                _stop_supervisord(pidfile)
            for pidfile in parent.glob("*.pid"):
                _stop_supervisord(pidfile)
            shutil.rmtree(parent, ignore_errors=True)


def test_awkward_workspace_paths_deploy_start_and_their_printed_commands_paste(
    tmp_path: Path,
) -> None:
    """For each awkward name: bootstrap.sh --standalone deploys it; its printed PATH and
    supervisord lines, pasted into bash, start supervisord, which starts the daemon in that
    workspace (its heartbeat says supervised); the printed `wsd status` and `supervisorctl
    status wsd` lines, pasted, exit 0 (RUNNING)."""
    venv = fake_venv(tmp_path)
    with BridgeStandin(responder=rule_curator.responder) as bridge, _parents() as parents:
        env = _env(bridge)
        deployed = []
        for name in AWKWARD:
            parents.append(Path(tempfile.mkdtemp(prefix="wsd", dir="/tmp")))
            root = parents[-1] / name
            made = bootstrap_sh(root, venv, "--standalone")
            assert made.returncode == 0, f"{name!r}: {made.stderr}"
            path_line, start_line, status_line, ctl_line = _printed(made.stdout)
            assert start_line.startswith("supervisord -c "), made.stdout
            started = _paste(env, path_line, start_line)
            assert started.returncode == 0, f"{name!r}: {started.stderr}"
            deployed.append((name, Layout(str(root)), path_line, status_line, ctl_line))
        for name, layout, path_line, status_line, ctl_line in deployed:
            assert wait_for(lambda at=layout: _supervised(at), 90, 0.3), f"{name!r} never started"
            status = _paste(env, path_line, status_line)
            assert status.returncode == 0, f"{name!r}: {status.stderr}"
            # RUNNING comes startsecs (5 s) after the spawn, maybe after the first heartbeat.
            ctl = _paste(env, path_line, ctl_line)
            assert ctl.returncode == 0 and ctl.stdout.startswith("wsd "), f"{name!r}: {ctl}"
            lines = (path_line, ctl_line)
            running = wait_for(lambda at=lines: "RUNNING" in _paste(env, *at).stdout, 30, 0.5)
            assert running, f"{name!r}: {ctl.stdout}"


def test_under_the_system_supervisord_the_printed_include_finds_the_program(
    tmp_path: Path,
) -> None:
    """Without --standalone, bootstrap prints the [include] files = entry for the system's
    supervisord, written so that a path with [ ], % and ; in it is included as it is (glob
    escaped, % doubled); a supervisord including it starts the daemon."""
    venv = fake_venv(tmp_path)
    with BridgeStandin(responder=rule_curator.responder) as bridge, _parents() as parents:
        parents.append(Path(tempfile.mkdtemp(prefix="wsd", dir="/tmp")))
        root = parents[-1] / "sys[1]50%;x"
        made = bootstrap_sh(root, venv)
        assert made.returncode == 0, made.stderr
        hint = next(x for x in made.stdout.splitlines() if "files = of its [include]" in x)
        pattern = hint.split("add ", 1)[1].split(" to the files = ", 1)[0]
        system = parents[-1] / "system.conf"
        system.write_text(
            f"[unix_http_server]\nfile={parents[-1]}/s.sock\n"
            f"[supervisord]\nlogfile={parents[-1]}/s.log\npidfile={parents[-1]}/s.pid\n"
            "[rpcinterface:supervisor]\n"
            "supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface\n"
            f"[supervisorctl]\nserverurl=unix://{parents[-1]}/s.sock\n"
            f"[include]\nfiles = {pattern}\n"
        )
        env = _env(bridge)
        started = subprocess.run(
            [str(VENV_BIN / "supervisord"), "-c", str(system)], env=env, check=False
        )
        assert started.returncode == 0
        assert wait_for(lambda: _supervised(Layout(str(root))), 90, 0.3), (
            pattern + (parents[-1] / "s.log").read_text()
        )


#: (id, workspace, bootstrap's options, the reason said)
REFUSED = [
    ("newline", "a\nb", ["--standalone"], "holds a newline"),
    ("tab", "a\tb", ["--standalone"], "holds a tab"),
    ("space-semicolon", "a ;b", ["--standalone"], "has a space before a ;"),
    ("space-hash", "a #b", ["--standalone"], "has a space before a #"),
    ("not-utf8", "caf\udce9", ["--standalone"], "is not UTF-8 text"),
    ("space-without-standalone", "my work", [], "has whitespace, at which the system"),
    ("socket-too-long", "deep-" * 20, ["--standalone"], "bytes, longer than the 107"),
]


@pytest.mark.parametrize(
    ("name", "options", "said"),
    [case[1:] for case in REFUSED],
    ids=[case[0] for case in REFUSED],
)
def test_bootstrap_refuses_a_path_it_cannot_deploy_before_making_anything(
    tmp_path: Path, name: str, options: list[str], said: str
) -> None:
    """deploy/bootstrap.sh exits 2 with one line naming the path (pasteable, escapes for
    what cannot be shown) and why, and makes nothing: no workspace folder, no venv."""
    parent = tmp_path / "p"
    parent.mkdir()
    root = str(parent / name)
    venv = tmp_path / "new-venv"  # must not be made either
    result = bootstrap_sh(root, venv, *options)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and said in result.stderr, result.stderr
    assert result.stderr.startswith("wsd bootstrap: "), result.stderr
    assert "Traceback" not in result.stderr and "[Errno" not in result.stderr
    assert list(parent.iterdir()) == [] and not venv.exists()


def test_bootstrap_refuses_a_venv_path_pips_scripts_cannot_start_from(tmp_path: Path) -> None:
    """A venv path with a space and a double quote (pip writes its scripts' /bin/sh
    trampoline with the path in unescaped double quotes): refused up front, naming it."""
    venv = tmp_path / 'my "venv"'
    result = bootstrap_sh(tmp_path / "ws", venv, "--standalone")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("wsd bootstrap: venv path ") and "pip" in result.stderr
    assert not venv.exists() and not (tmp_path / "ws").exists()
