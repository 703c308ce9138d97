"""The operator's settings file (.os/settings.env, issue 30): every malformed line is caught
where the deployed program reads it (``wsd run --settings``: exit 2, one line naming the file,
the line and what is wrong) and ``wsd doctor``, reading it the same way, says the same; what
is well formed reaches the daemon as sh would have read it."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import daemon_env, venv_script, wait_for, wsd
from wsd.daemon.runtime.heartbeat import status_path
from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.schema.layout import Layout

#: (id, file content, the line at fault, what the message says of it)
MALFORMED = [
    ("unterminated", b'# mine\nWSD_DAILY_BUDGET_USD="5\n', 2, "WSD_DAILY_BUDGET_USD: unterminated"),
    (
        "refused-value",
        b"WSD_DAILY_BUDGET_USD=five\n",
        1,
        "WSD_DAILY_BUDGET_USD=five: expected a number from 0 to 1,000,000",
    ),
    ("nan", b"WSD_MODEL=x\nWSD_EROSION=nan\n", 2, "WSD_EROSION=nan: expected a number from 0"),
    ("no-equals", b"WSD_MODEL=claude-haiku-4-5\nbudget 5\n", 2, "not a NAME=value line"),
    ("two-words", b"WSD_MODEL=claude haiku\n", 1, "more than one word"),
    ("expansion", b"WSD_MODEL=$MODEL\n", 1, "an unquoted $, which sh reads as an expansion"),
    ("single-quote", b"WSD_MODEL='claude\n", 1, "unterminated single quote"),
    ("not-utf8", b"WSD_MODEL=caf\xe9\n", 1, "not UTF-8 text (the byte 0xe9 at column 14)"),
    ("nul", b"WSD_MODEL=a\x00b\n", 1, "a NUL byte"),
    ("spaced", b"WSD_MODEL = x\n", 1, "a space around ="),
    ("bad-name", b"WSD-MODEL=x\n", 1, "a name is letters, digits and _"),
    ("continued", b"WSD_MODEL=a\\\n", 1, "a \\ ends the line"),
    ("url", b"ANTHROPIC_BASE_URL=bridge:8080\n", 1, "ANTHROPIC_BASE_URL=bridge:8080: expected an"),
]


def _run(env: dict[str, str], settings: Path) -> tuple[int, str]:
    result = wsd(env, "run", "--settings", str(settings), check=False, timeout=30)
    return result.returncode, result.stderr


def _doctor(env: dict[str, str]) -> list[str]:
    return wsd(env, "doctor", check=False).stdout.splitlines()


def _one_clear_line(text: str) -> None:
    assert text.count("\n") == 1 and text.endswith("\n"), text
    for noise in ("Traceback", "[Errno", "['", "{'", "'None'"):
        assert noise not in text, text


@pytest.mark.parametrize(
    ("content", "line", "said"),
    [case[1:] for case in MALFORMED],
    ids=[case[0] for case in MALFORMED],
)
def test_each_malformed_line_is_named_by_wsd_run_and_by_doctor(
    layout: Layout, content: bytes, line: int, said: str
) -> None:
    """``wsd run --settings`` exits 2 with one line naming the file, the line and the
    problem (nothing of the daemon starts); doctor FAILs the settings check with the same."""
    settings = Path(layout.os_dir) / "settings.env"
    settings.write_bytes(content)
    env = _env(layout)
    code, err = _run(env, settings)
    assert code == 2, err
    _one_clear_line(err)
    assert err.startswith(f"wsd run: {settings} line {line}: ") and said in err, err
    assert not os.path.exists(Path(layout.memory_dir) / "daemon.status.json")
    found = [x for x in _doctor(env) if x.startswith("FAIL settings: ")]
    assert len(found) == 1 and f"{settings} line {line}: " in found[0], found
    assert said in found[0] and "does not start until it is fixed" in found[0], found


def _env(layout: Layout) -> dict[str, str]:
    """A daemon's environment with a Bridge URL nobody answers (it never gets that far)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WSD_", "ANTHROPIC_"))}
    return env | {
        "WSD_WORKSPACE": layout.root,
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "WSD_BRIDGE_TOKEN": "settings-token",
    }


@pytest.mark.parametrize("kind", ["fifo", "symlink", "huge", "folder"])
def test_a_settings_file_that_is_not_a_small_regular_file_is_refused_whole(
    layout: Layout, tmp_path: Path, kind: str
) -> None:
    """A FIFO (never blocked on), a link (not followed, even to a good file), a file over
    64 KiB or a folder at .os/settings.env: wsd run exits 2 naming the file and what it is;
    doctor says the same."""
    settings = Path(layout.os_dir) / "settings.env"
    said = {
        "fifo": "is a FIFO, not a regular file",
        "symlink": "is a symlink, not a regular file",
        "huge": "70,000 bytes, more than a settings file holds (65,536 at most)",
        "folder": "is a folder, not a regular file",
    }[kind]
    if kind == "fifo":
        os.mkfifo(settings)
    elif kind == "symlink":
        (tmp_path / "real.env").write_text("WSD_DAILY_BUDGET_USD=5\n")
        settings.symlink_to(tmp_path / "real.env")
    elif kind == "huge":
        settings.write_text("#" * 70_000)
    else:
        settings.mkdir()
    env = _env(layout)
    started = time.monotonic()
    code, err = _run(env, settings)
    assert code == 2 and time.monotonic() - started < 20, err
    _one_clear_line(err)
    assert err.startswith(f"wsd run: {settings}: ") and said in err, err
    problem = err.removeprefix(f"wsd run: {settings}: ").rstrip("\n")
    found = [x for x in _doctor(env) if x.startswith("FAIL settings: ")]
    fix = "; the daemon does not start until it is fixed"
    assert found == [f"FAIL settings: {settings}: {problem}{fix}"], found


def test_well_formed_lines_reach_the_daemon_as_sh_would_read_them(layout: Layout) -> None:
    """export, single and double quotes with escapes, a comment after a value, Windows line
    ends, a byte order mark: the daemon takes each value as sh would have; WSD_WORKSPACE in
    the file does not move it; the settings are in the environment it started with (what wsd
    retry reads); doctor says ok of the file and warns of a name the daemon does not know, and
    of an old name it still reads (logged by the daemon too)."""
    settings = Path(layout.os_dir) / "settings.env"
    settings.write_bytes(
        b"\xef\xbb\xbfexport WSD_DAILY_BUDGET_USD='0.5'   # half a dollar\n"
        b"# the operator's\n"
        b'WSD_MODEL="it\'s a \\"test\\" model"\r\n'
        b"WSD_CANVAS_FOLDER='artifacts/my cards'\n"
        b"WSD_WORKSPACE=/elsewhere\n"
        b"WSD_DAILY_BUDGET=5\n"
        b"WSD_BATCH_PRICE_FACTOR=0.4\n"
    )
    with BridgeStandin(responder=rule_curator.responder) as bridge:
        env = daemon_env(layout, bridge)
        log = Path(layout.root) / "run.log"
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                [venv_script("wsd"), "run", "--settings", str(settings)],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            status = Path(layout.memory_dir) / "daemon.status.json"
            assert wait_for(lambda: status.exists() and "settings" in status.read_text(), 30)
            reported = json.loads(status.read_text())["settings"]
            environ = Path(f"/proc/{proc.pid}/environ").read_bytes().split(b"\0")
        finally:
            proc.terminate()
            assert proc.wait(timeout=15) == 0, log.read_text()
    assert reported["daily_budget_usd"] == 0.5
    assert reported["model"] == 'it\'s a "test" model'
    assert reported["canvas_folder"] == "artifacts/my cards"
    assert reported["workspace"] == layout.root
    assert reported["economy_price_factor"] == 0.4  # its old name, still read, and logged
    assert "setting_renamed" in log.read_text() and "WSD_ECONOMY_PRICE_FACTOR" in log.read_text()
    assert b"WSD_DAILY_BUDGET_USD=0.5" in environ
    assert b"WSD_WORKSPACE=" + layout.root.encode() in environ
    lines = _doctor(_env(layout))
    # Beside a WARN of a name the daemon does not take, no "each one the daemon takes".
    assert not any(x.startswith("ok   settings:") for x in lines), lines
    assert (
        f"WARN settings: {settings} line 7: WSD_BATCH_PRICE_FACTOR is now WSD_ECONOMY_PRICE_FACTOR"
        " (the old name is still read; rename it)" in lines
    ), lines
    assert (
        f"WARN settings: {settings} line 6: WSD_DAILY_BUDGET is not a setting of the daemon"
        " (a typo? README: Settings)" in lines
    ), lines
    moved = f"WARN settings: {settings} line 5: WSD_WORKSPACE is ignored here"
    assert any(x.startswith(moved) for x in lines), lines


def test_doctor_says_a_running_daemons_next_start_fails_on_a_bad_line(layout: Layout) -> None:
    """A slip written while the daemon runs does not stop it now but at its next start (a
    restart, a deploy): doctor's settings line says so, not that the daemon does not start."""
    beat = {"pid": os.getpid(), "state": "idle", "heartbeat_at": time.time(), "supervised": "wsd"}
    Path(status_path(layout)).write_text(json.dumps(beat))
    settings = Path(layout.os_dir) / "settings.env"
    settings.write_text("WSD_DAILY_BUDGET_USD=five\n")
    found = [x for x in _doctor(_env(layout)) if x.startswith("FAIL settings: ")]
    assert found == [
        f"FAIL settings: {settings} line 1: WSD_DAILY_BUDGET_USD=five: expected a number from 0"
        " to 1,000,000 (0 turns it off); the running daemon started before; its next start"
        " (a restart, a deploy) fails until it is fixed"
    ], found
