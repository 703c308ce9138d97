"""What a new user met on a fresh clone (issue 30), each through the real command: invalid
JSON on a hook's stdin, an unreadable user.md, a backup into the workspace, a path inside a
workspace, Python reprs and errno text in messages, a closed pipe, a flush with no daemon,
the hook's --help, the demo's action priority and the semantic extra's install hint."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wsd.daemon.memory import semantic
from wsd.daemon.store import Store
from wsd.schema.layout import Layout

from .conftest import scalar, venv_script, wsd

REPO = Path(__file__).resolve().parent.parent
#: Spellings of a failure that a person should never have to read.
NOT_FOR_PEOPLE = ("Traceback", "[Errno", "SystemError", "NoneType", "'None'", "['", "{'")


def _env(layout: Layout) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WSD_", "ANTHROPIC_"))}
    return env | {"WSD_WORKSPACE": layout.root}


def _hook(env: dict[str, str], stdin: bytes, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [venv_script("wsd-hook"), *args],
        input=stdin,
        env=env,
        capture_output=True,
        timeout=30,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def _plain(text: str) -> None:
    for spelling in NOT_FOR_PEOPLE:
        assert spelling not in text, f"{spelling!r} in {text!r}"


def unprivileged(cmd: list[str]) -> list[str]:
    """``cmd`` run so that file modes bind it: as root, without the capabilities that let
    root read any file (the daemon of a Sprite runs as the person's user)."""
    if os.geteuid() != 0:
        return cmd
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root and setpriv (util-linux) is missing")
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search", *cmd]


# -- wsd-hook ---------------------------------------------------------------------------

INVALID_JSON = [
    b'{"session_id":"x","hook_event_name":"UserPromptSubmit","prompt":"hi"',
    b"{not json",
    b"{",
    b'{"session_id": "x",}',
    b"{'session_id': 'x'}",
    b'["unterminated',
    b'"\\x"',
    b"\xff\xfe{",
    b"nul",
]


@pytest.mark.parametrize("stdin", INVALID_JSON)
def test_invalid_json_on_a_hooks_stdin_is_said_to_be_invalid_json(
    layout: Layout, stdin: bytes
) -> None:
    """Malformed JSON is "ignored invalid hook input: input is not valid JSON (...)", never
    "event NOT captured: SystemError" (the fast parser ran without json.decoder loaded)."""
    done = _hook(_env(layout), stdin)
    assert done.returncode == 0 and done.stdout == ""
    assert done.stderr.startswith("wsd-hook: ignored invalid hook input: input is not valid JSON")
    assert done.stderr.count("\n") == 1
    _plain(done.stderr)


@pytest.mark.parametrize(
    ("stdin", "said"),
    [
        (b"null", "hook input must be a JSON object, got null"),
        (b"[1]", "hook input must be a JSON object, got an array"),
        (b"{}", "no hook_event_name in the hook input"),
        (b'{"hook_event_name": null}', "no hook_event_name in the hook input"),
        (b'{"hook_event_name": 3}', "hook_event_name must be a string, got a number"),
        (b'{"hook_event_name": "Foo\\nBar"}', "unsupported hook_event_name: Foo Bar"),
    ],
)
def test_a_hook_input_of_the_wrong_shape_is_named_in_json_words(
    layout: Layout, stdin: bytes, said: str
) -> None:
    """The hook names what it got as JSON does (null, an array), never Python (NoneType, 'None')."""
    done = _hook(_env(layout), stdin)
    assert done.stderr == f"wsd-hook: ignored invalid hook input: {said}\n"


def test_wsd_hook_help_prints_usage_without_reading_stdin(layout: Layout) -> None:
    """``wsd-hook --help`` prints its usage and exits 0 at once (stdin left unread), not
    "ignored arguments" and "ignored invalid hook input"."""
    proc = subprocess.Popen(
        [venv_script("wsd-hook"), "--help"],
        stdin=subprocess.PIPE,  # never closed: a hook reading it would wait forever
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(layout),
        text=True,
    )
    try:
        code = proc.wait(timeout=20)
        out = proc.stdout.read() if proc.stdout else ""
        err = proc.stderr.read() if proc.stderr else ""
    finally:
        proc.kill()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert code == 0 and err == ""
    assert out.startswith("usage: wsd-hook [--workspace PATH]")


def test_wsd_hook_arguments_are_named_plainly_and_the_event_still_recorded(
    layout: Layout,
) -> None:
    """A stray argument and a --workspace without a path are one plain line each, and the
    event is still captured (in the workspace of $WSD_WORKSPACE)."""
    event = {"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "hello"}
    done = _hook(_env(layout), json.dumps(event).encode(), "extra", "--workspace")
    assert done.stderr.splitlines() == [
        "wsd-hook: --workspace needs a path (--workspace PATH); it was ignored",
        "wsd-hook: ignored arguments: extra (the only option is --workspace PATH)",
    ]
    assert scalar(layout.transcript_db, "SELECT count(*) FROM events") == 1


# -- an unreadable memory file ------------------------------------------------------------


def _unreadable_user_md(layout: Layout) -> Path:
    """user.md with a revision the daemon wrote, then a person's edit on disk, mode 000."""
    Store(layout).revisions.add_revision("user.md", "# User\n- likes tea\n", "curator", 1.0)
    path = Path(layout.md("user.md"))
    path.write_text("# User\n- likes tea\n- my own line, not adopted yet\n")
    path.chmod(0)
    return path


def test_an_unreadable_user_md_is_said_in_the_boot_context_and_on_stderr(
    layout: Layout,
) -> None:
    """``wsd boot-context`` with a user.md it may not read says so in the context (the agent
    tells the person) and on stderr, and exits 1; as a hook it still exits 0 and says so."""
    _unreadable_user_md(layout)
    cmd = unprivileged([venv_script("wsd"), "boot-context"])
    done = subprocess.run(cmd, env=_env(layout), capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "[user.md could not be read (permission denied)" in done.stdout
    assert done.stderr == (
        "wsd: user.md could not be read (permission denied); the boot context says so\n"
    )
    hook = subprocess.run(
        [*cmd, "--hook"], env=_env(layout), capture_output=True, text=True, timeout=60, input=""
    )
    assert hook.returncode == 0
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "user.md could not be read (permission denied)" in context


def test_doctor_says_unreadable_not_missing_and_fix_never_replaces_it(layout: Layout) -> None:
    """doctor names an unreadable user.md "unreadable" (it said "missing"), and --fix leaves
    it as it is: replacing a file it cannot read would lose the person's edit unseen."""
    path = _unreadable_user_md(layout)
    doctor = unprivileged([venv_script("wsd"), "doctor"])
    done = subprocess.run(doctor, env=_env(layout), capture_output=True, text=True, timeout=60)
    lines = [line for line in done.stdout.splitlines() if "md files" in line]
    assert lines == [
        "FAIL md files: user.md is unreadable (permission denied): the agent starts without it"
        " and the daemon does not replace it; make it a file the daemon's user can read and"
        " write"
    ]
    subprocess.run([*doctor, "--fix"], env=_env(layout), capture_output=True, timeout=60)
    assert path.read_text() == "# User\n- likes tea\n- my own line, not adopted yet\n"
    path.chmod(0o600)
    wsd(_env(layout), "doctor", "--fix", check=False)  # readable again: adopted, not reverted
    assert (
        Store(layout).revisions.latest_md()["user.md"].endswith("- my own line, not adopted yet\n")
    )


# -- wsd backup ---------------------------------------------------------------------------


@pytest.mark.parametrize("inside", [".os/memory", "artifacts/bk", "documents"])
def test_backup_into_the_workspace_is_refused_and_writes_nothing(
    layout: Layout, inside: str
) -> None:
    """``wsd backup`` into the workspace (onto the live databases, or into user space where
    files.md would list transcript.db) is refused with one line, exit 2, nothing written."""
    before = sorted(p.name for p in Path(layout.root).rglob("*"))
    done = wsd(_env(layout), "backup", os.path.join(layout.root, inside), check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert "is inside the workspace" in done.stderr and done.stderr.count("\n") == 1
    assert sorted(p.name for p in Path(layout.root).rglob("*")) == before


def test_backup_through_a_link_into_the_workspace_is_refused(
    layout: Layout, tmp_path: Path
) -> None:
    """A destination that reaches the workspace through a symlink is inside it too."""
    (tmp_path / "door").symlink_to(Path(layout.root) / "documents")
    done = wsd(_env(layout), "backup", str(tmp_path / "door" / "bk"), check=False)
    assert done.returncode == 2 and "is inside the workspace" in done.stderr
    assert not (Path(layout.root) / "documents" / "bk").exists()


def test_backup_refuses_a_folder_of_other_files_and_reports_in_words(
    layout: Layout, tmp_path: Path
) -> None:
    """A non-empty folder that is no earlier backup is refused (its user.md would be
    overwritten); a new folder, then the same again, is backed up, said without reprs."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "user.md").write_text("someone else's notes\n")
    refused = wsd(_env(layout), "backup", str(home), check=False)
    assert refused.returncode == 2 and "is not empty" in refused.stderr
    assert (home / "user.md").read_text() == "someone else's notes\n"
    Path(layout.md("user.md")).write_text("# User\n")
    for _ in range(2):
        done = wsd(_env(layout), "backup", str(tmp_path / "bk"))
        assert done.stdout.startswith(f"backed up {layout.root} to {tmp_path / 'bk'}: ")
        assert "transcript.db (" in done.stdout and "1 md file(s) (user.md)" in done.stdout
        _plain(done.stdout)


# -- paths inside a workspace, errors, pipes ---------------------------------------------


@pytest.mark.parametrize("inner", [".os", ".os/memory", "documents", "documents/deep/er"])
def test_a_path_inside_a_workspace_names_the_workspace(layout: Layout, inner: str) -> None:
    """``--workspace ws/.os`` (or a user folder) says "did you mean `--workspace ws`?" for a
    command, and init refuses to make a workspace inside a workspace: nothing created."""
    path = os.path.join(layout.root, inner)
    env = _env(layout)
    done = wsd(env, "--workspace", path, "status", check=False)
    assert done.returncode == 2
    assert done.stderr == (
        f"wsd status: {path} is inside the workspace {layout.root}: did you mean"
        f" `--workspace {layout.root}`?\n"
    )
    init = wsd(env, "--workspace", path, "init", check=False)
    assert init.returncode == 2 and "did you mean" in init.stderr
    assert not os.path.lexists(os.path.join(path, ".os"))


def test_a_hint_to_paste_quotes_a_path_with_a_space(tmp_path: Path) -> None:
    """The "run wsd --workspace PATH init" hint quotes a path a shell would split."""
    path = str(tmp_path / "my work")
    done = wsd({**os.environ, "WSD_WORKSPACE": path}, "status", check=False)
    assert f"`wsd --workspace '{path}' init`" in done.stderr


def test_os_errors_are_said_in_words(layout: Layout, tmp_path: Path) -> None:
    """A missing file and a folder given to ``wsd import --from wsd`` are "PATH: no such
    file or folder" / "PATH is a folder", exit 2: no errno, no repr."""
    env = _env(layout)
    missing = wsd(env, "import", str(tmp_path / "nope.jsonl"), check=False)
    assert missing.returncode == 2
    assert missing.stderr == (
        f"wsd import: {tmp_path / 'nope.jsonl'}: no such file or folder; nothing was imported\n"
    )
    folder = wsd(env, "import", str(tmp_path), "--from", "wsd", check=False)
    assert folder.returncode == 2
    assert folder.stderr == (
        f"wsd import: {tmp_path} is a folder: --from wsd reads a file; nothing was imported\n"
    )


@pytest.mark.parametrize(
    "command", [["status"], ["doctor"], ["boot-context"], ["search", "tea"], ["pending"]]
)
def test_a_closed_pipe_is_not_an_error(layout: Layout, command: list[str]) -> None:
    """``wsd status | head -1``: with stdout's reader gone before it writes, a command exits
    as it would have (doctor's 1 is its finding) and prints nothing on stderr."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone: every write meets EPIPE
    try:
        done = subprocess.run(
            [venv_script("wsd"), *command],
            env=_env(layout),
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write)
    assert done.stderr == ""
    assert done.returncode in ((0, 1) if command == ["doctor"] else (0,))


def test_flush_with_no_daemon_says_it_waits_for_one(layout: Layout) -> None:
    """``wsd flush`` with no daemon running records the request and says who will curate it
    and how to start it, exit 1 (it said only "flush requested", exit 0)."""
    done = wsd(_env(layout), "flush", check=False)
    assert done.returncode == 1
    assert done.stdout.startswith("flush requested (#")
    assert done.stderr.startswith(f"no daemon is running in {layout.root}: the flush is curated")
    assert "start it" in done.stderr


# -- the demo and the semantic hint -------------------------------------------------------


def test_the_demo_runs_and_names_priorities_as_every_other_view(tmp_path: Path) -> None:
    """``make demo`` (its module) exits 0 and shows the pending action as ``[normal]``, as
    the boot context and ``wsd pending`` do (it said ``(priority 2)``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WSD_", "ANTHROPIC_"))}
    done = subprocess.run(
        [sys.executable, "-m", "wsd.daemon.standin.demo"],
        env=env | {"TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "#1 [normal] Send the summary to Anna on Friday" in done.stdout
    assert "(priority" not in done.stdout and "Traceback" not in done.stderr


def test_the_semantic_hint_names_this_environments_pip_and_its_checkout() -> None:
    """The install hint for the semantic extra is a command that works: this environment's
    pip and the checkout it was installed from (the package is not on the index)."""
    command = semantic.install_command()
    assert command.startswith(os.path.join(sys.prefix, "bin", "pip") + " install ")
    assert f"{REPO}[semantic]" in command
    assert "workspace-daemon[semantic]" not in command
