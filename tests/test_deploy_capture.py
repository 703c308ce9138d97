"""A real deploy captures: bootstrap.sh into a workspace path with a space and a non-ASCII
letter, the wheel installed (not editable) in its venv, the rendered plugin loaded by the
real Agent SDK's bundled CLI; doctor proves capture with a probe, and says when it is broken
or wired twice (issue 45)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import bootstrap_sh, run_async, sdk_env
from tests.conftest import query as q
from wsd.daemon.standin.bridge import BridgeStandin, ConversationScript, Reply
from wsd.schema.layout import Layout

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace at ".../my ws é" deployed by bootstrap.sh --standalone, its venv holding
    the wheel built from this checkout (the dependencies seen through a .pth: no network)."""
    src = tmp_path_factory.mktemp("src")
    for name in ("schema", "redact", "hooks", "daemon", "deploy", "bin"):
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    wheels = tmp_path_factory.mktemp("wheel")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(src)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = wheels.glob("workspace_daemon-*.whl")
    root = tmp_path_factory.mktemp("deploy") / "my ws é"
    venv = root / ".os" / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_path('purelib'))",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(site, "wsd_test_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run(
        [*pip, "--python", str(venv / "bin" / "python"), "install", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (venv / ".wsd-installed-version").write_text("7.0\n")  # bootstrap.sh: no pip install
    made = bootstrap_sh(root, venv, "--standalone")
    assert made.returncode == 0, made.stdout + made.stderr
    return root


def _wsd(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    wsd = root / ".os" / ".venv" / "bin" / "wsd"
    return subprocess.run(
        [str(wsd), "--workspace", str(root), *args], capture_output=True, text=True, timeout=120
    )


def _session(root: Path, tmp_path: Path, prompt: str, settings: str | None = None) -> None:
    """One turn through the bundled CLI with the deployed plugin (and ``settings``)."""
    sdk = pytest.importorskip("claude_agent_sdk")
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    with BridgeStandin(responder=ConversationScript([Reply.text("Noted.")])) as api:
        options = sdk.ClaudeAgentOptions(
            env=sdk_env(api, tmp_path),
            cwd=str(work),
            setting_sources=[],
            plugins=[{"type": "local", "path": str(root / ".os" / "claude-plugin")}],
            max_turns=1,
            **({"settings": settings} if settings else {}),
        )

        async def session() -> None:
            async for _message in sdk.query(prompt=prompt, options=options):
                pass

        run_async(session())


@pytest.mark.agent_sdk
def test_a_deploy_into_a_path_with_a_space_captures_through_the_real_cli(
    deployed: Path, tmp_path: Path
) -> None:
    """The installed wsd-hook starts from ".../my ws é/.os/.venv" (its #! line would split at
    the space: status 127), the plugin's hooks record the CLI's turn, and doctor's probe
    says capture works."""
    hook = deployed / ".os" / ".venv" / "bin" / "wsd-hook"
    ran = subprocess.run([str(hook), "--help"], capture_output=True, text=True, timeout=30)
    assert ran.returncode == 0 and "usage: wsd-hook" in ran.stdout, ran.stderr
    _session(deployed, tmp_path, "I prefer green tea in the morning.")
    layout = Layout(str(deployed))
    turns = q(layout.transcript_db, "SELECT user_message, agent_response FROM observations")
    assert turns == [("I prefer green tea in the morning.", "Noted.")], turns
    doctor = _wsd(deployed, "doctor")
    assert "ok   capture: the hook wired in the plugin recorded a probe event" in doctor.stdout
    assert q(layout.transcript_db, "SELECT count(*) FROM sessions WHERE id LIKE 'wsd-doctor%'") == [
        (0,)
    ]


def test_doctor_fails_when_the_wired_hook_records_nothing(deployed: Path) -> None:
    """With the hook's #! line as pip wrote it (the interpreter's path, split at its space)
    doctor FAILs capture, naming the exit status and the command, and exits non-zero."""
    hook = deployed / ".os" / ".venv" / "bin" / "wsd-hook"
    mended = hook.read_text()
    python = deployed / ".os" / ".venv" / "bin" / "python"
    try:
        hook.write_text(f"#!{python}\n" + mended.split("\n", 3)[3])
        doctor = _wsd(deployed, "doctor")
    finally:
        hook.write_text(mended)
    line = next(ln for ln in doctor.stdout.splitlines() if "capture" in ln)
    assert line.startswith("FAIL capture: the hook wired in the plugin recorded nothing"), line
    assert "exit status 127" in line and "every event it gets is lost" in line
    assert doctor.returncode != 0


@pytest.mark.agent_sdk
def test_a_hook_wired_twice_records_each_event_once_and_doctor_says_so(
    deployed: Path, tmp_path: Path
) -> None:
    """The plugin and a settings file both wiring wsd-hook (Claude Code runs both on each
    event): one turn with its answer, each event once; doctor warns which events come twice
    once .claude/settings.json wires it too."""
    layout = Layout(str(deployed))
    hooks = json.loads((deployed / ".os" / "claude-plugin" / "hooks" / "hooks.json").read_text())
    settings = json.dumps({"hooks": hooks["hooks"]})
    before = q(layout.transcript_db, "SELECT count(*) FROM observations")[0][0]
    _session(deployed, tmp_path, "My sister lives in Tromsø.", settings=settings)
    turns = q(
        layout.transcript_db,
        "SELECT user_message, agent_response FROM observations WHERE id > ?",
        (before,),
    )
    assert turns == [("My sister lives in Tromsø.", "Noted.")], turns
    kinds = q(
        layout.transcript_db,
        "SELECT kind, count(*) FROM events WHERE observation_id > ? GROUP BY kind",
        (before,),
    )
    assert dict(kinds) == {"UserPromptSubmit": 1, "Stop": 1}, kinds
    claude = deployed / ".claude"
    claude.mkdir(exist_ok=True)
    (claude / "settings.json").write_text(settings)
    try:
        doctor = _wsd(deployed, "doctor")
    finally:
        (claude / "settings.json").unlink()
    warned = [ln for ln in doctor.stdout.splitlines() if ln.startswith("WARN capture")]
    assert len(warned) == 1 and ".claude/settings.json and the plugin" in warned[0], warned
    assert "UserPromptSubmit" in warned[0] and "wire it in one place" in warned[0]
