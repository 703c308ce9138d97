"""README snippets a new user copies (issue 21): the by-hand ``.claude/settings.json`` wires
every event the plugin does, and no install line names a distribution that does not exist."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_the_by_hand_settings_hook_every_event_the_plugin_hooks() -> None:
    """Found by a new user: the by-hand settings had no PostToolUseFailure, so failed tool
    calls were lost (the plugin captures them). Both now list the same events."""
    block = re.search(r"```json\n(\{\n  \"hooks\".*?)\n```", README, re.S)
    assert block is not None
    by_hand = set(json.loads(block.group(1))["hooks"])
    plugin = json.loads((REPO / "deploy/claude-plugin/hooks/hooks.json").read_text())
    assert by_hand == set(plugin["hooks"]), by_hand ^ set(plugin["hooks"])


def test_install_lines_name_what_exists() -> None:
    """``pip install 'workspace-daemon[agent]'`` failed (no such distribution on the index the
    README implies); every pip line installs a path (a checkout) or names a published extra."""
    project = re.search(r'^name = "(.+)"', (REPO / "pyproject.toml").read_text(), re.M)
    assert project is not None
    for line in re.findall(r"pip install ([^`\n#]+)", README):
        assert not line.strip().strip("'\"").startswith(project.group(1)), line


def _section(title: str) -> str:
    """The README's text under ``### title`` (up to the next heading of any level)."""
    found = re.search(rf"^### {re.escape(title)}\n(.*?)(?=^#+ )", README, re.S | re.M)
    assert found is not None, title
    return found.group(1)


def _sh_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, re.S)


def _supervisorctl_commands() -> list[str]:
    """Every supervisorctl command the README shows (code blocks and inline code), in order,
    comments dropped and lines joined."""
    found = []
    for match in re.finditer(r"```sh\n(.*?)```|`(supervisorctl [^`]+)`", README, re.S):
        if match.group(2):
            found.append(" ".join(match.group(2).split()))
            continue
        for line in match.group(1).splitlines():
            if line.startswith("supervisorctl "):
                found.append(" ".join(line.split("#", 1)[0].split()))
    return found


def _bash(script: str, env: dict[str, str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, check=False, **kwargs
    )


@pytest.mark.slow
def test_the_operator_commands_run_as_written(tmp_path: Path) -> None:
    """A new user's `supervisord -c …` was "command not found" (it lives in the deploy's venv)
    and `supervisorctl restart wsd` refused (no -c): the README's start block and each of its
    supervisorctl commands, run by bash in a bare shell on a deployed workspace, exit 0."""
    from wsd.daemon.ops.deploy import bootstrap, supervisord_conf
    from wsd.daemon.standin.bridge import BridgeStandin
    from wsd.schema.layout import Layout

    root = Path(tempfile.mkdtemp(prefix="wsd", dir="/tmp"))  # short: supervisord's socket
    layout = Layout(str(root))
    (root / ".os").mkdir(mode=0o700)
    (root / ".os" / ".venv").symlink_to(Path(sys.executable).parent.parent)  # the deploy's venv
    bootstrap(layout, version="1.0", venv=root / ".os" / ".venv", standalone=True)
    conf = supervisord_conf(layout)
    assert str(conf).replace(str(root), "/workspace") in README  # the conf the deploy writes
    start = next(b for b in _sh_blocks(_section("Deploy and start")) if "supervisord -c" in b)
    path_line = next(line for line in start.splitlines() if line.startswith("export PATH="))
    commands = list(dict.fromkeys(_supervisorctl_commands()))
    for command in commands:
        if command.split()[-2:-1] != ["update"]:
            assert command.startswith("supervisorctl -c /workspace/.os/supervisor/"), command
    assert {c.split()[-2] for c in commands} >= {"status", "restart", "stop", "start"}, commands
    bare = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    pid = ""
    with BridgeStandin() as bridge:
        script = start.replace("http://bridge:8080", bridge.url).replace("=...", "=readme-tok")
        try:
            started = _bash(script.replace("/workspace", str(root)), bare, timeout=60)
            assert started.returncode == 0, started.stdout + started.stderr
            ctl = f"{path_line}\n{{}}".replace("/workspace", str(root))
            status = ctl.format(commands[0].replace("/workspace", str(root)))
            assert "status wsd" in status
            deadline = time.monotonic() + 40
            while _bash(status, bare, timeout=60).returncode != 0:
                assert time.monotonic() < deadline, _bash(status, bare, timeout=60).stdout
                time.sleep(0.5)
            for command in commands:
                if "update" in command:
                    continue
                done = _bash(ctl.format(command.replace("/workspace", str(root))), bare, timeout=90)
                assert done.returncode == 0, (command, done.stdout + done.stderr)
        finally:
            ctl_bin = root / ".os" / ".venv" / "bin" / "supervisorctl"
            # Read before the shutdown: supervisord removes its pid file as it exits (CI once
            # found it gone already, and the cleanup failed a test that had passed).
            with contextlib.suppress(OSError):
                pid = (root / ".os" / "run" / "supervisord.pid").read_text().strip()
            subprocess.run([str(ctl_bin), "-c", str(conf), "shutdown"], capture_output=True)
            deadline = time.monotonic() + 40
            while pid and Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
                time.sleep(0.2)
            shutil.rmtree(root, ignore_errors=True)


def test_the_hooks_stderr_lines_are_the_readmes(tmp_path: Path) -> None:
    """The README said wsd-hook "prints nothing"; it prints a line on stderr when it spools or
    is pointed outside a workspace: those lines are the README's, stdout stays empty, exit 0."""
    from tests.conftest import venv_script
    from wsd import schema
    from wsd.daemon.ops.bootstrap import init_workspace
    from wsd.schema.layout import Layout

    layout = Layout(str(tmp_path / "ws"))
    os.makedirs(layout.root)
    init_workspace(layout, templates=None)
    env = {k: v for k, v in os.environ.items() if not k.startswith("WSD_")}
    env |= {"WSD_WORKSPACE": layout.root, "WSD_HOOK_TIMEOUT_MS": "10"}
    event = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "hi"})
    blocker = schema.connect(layout.transcript_db, "transcript")
    blocker.execute("BEGIN IMMEDIATE")  # the database does not take the event: it is spooled
    try:
        spooled = subprocess.run(
            [venv_script("wsd-hook")], input=event, env=env, capture_output=True, text=True
        )
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    outside = subprocess.run(
        [venv_script("wsd-hook"), "--workspace", str(tmp_path / "nope")],
        input=event,
        env=env,
        capture_output=True,
        text=True,
    )
    for done, start in ((spooled, "wsd-hook: transcript.db"), (outside, "wsd-hook: event not")):
        said = re.search(rf"`({re.escape(start)}[^`]*)`", README)
        assert said is not None, start
        line = " ".join(said[1].split())  # the README wraps lines inside a code span
        pattern = ".+".join(re.escape(part) for part in re.split(r"<\w+>", line))
        assert done.returncode == 0 and done.stdout == "", done
        assert re.fullmatch(pattern + "\n", done.stderr), (pattern, done.stderr)


def test_the_development_snippet_runs_the_daemon_on_a_fresh_path(tmp_path: Path) -> None:
    """The by-hand daemon snippet exited 2 on a fresh /tmp/ws (no workspace): with its init
    step, run as written (the stand-in's URL put in), the daemon starts and keeps running."""
    from wsd.daemon.standin.bridge import BridgeStandin

    block = next(b for b in _sh_blocks(README) if "wsd.daemon.standin" in b)
    lines = [line for line in block.splitlines() if "wsd.daemon.standin" not in line]
    workspace = tmp_path / "ws"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WSD_", "ANTHROPIC_"))}
    with BridgeStandin() as bridge:
        script = "\n".join(lines).replace("http://127.0.0.1:PORT", bridge.url)
        script = script.replace("/tmp/ws", str(workspace))
        # The venv running these tests (CI's second run is .venv-bare, not the README's .venv).
        script = script.replace(".venv/bin/", f"{Path(sys.executable).parent}/")
        proc = subprocess.Popen(
            ["bash", "-c", script],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        beat = workspace / ".os" / "memory" / "daemon.status.json"
        try:
            deadline = time.monotonic() + 30
            while _state(beat) not in ("running", "idle"):
                assert proc.poll() is None, proc.communicate()[0]
                assert time.monotonic() < deadline, "the daemon did not start"
                time.sleep(0.2)
            assert proc.poll() is None
        finally:
            with contextlib.suppress(ProcessLookupError):  # exited already: the asserts say why
                os.killpg(proc.pid, signal.SIGTERM)
            proc.communicate(timeout=30)


def _state(beat: Path) -> object:
    """The state the daemon's heartbeat file says (None before it wrote one)."""
    try:
        return json.loads(beat.read_text()).get("state")
    except (OSError, ValueError):
        return None
