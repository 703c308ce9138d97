"""Every ``wsd`` subcommand and ``wsd-hook`` met with what a person gets wrong (issue 30's
habit): an unknown option, a missing or extra argument, a path inside ``.os/``, a workspace
with a space and non-ASCII letters in its path, a closed stdout, a stopped daemon, a broken
setting, files that are missing, folders, FIFOs, unreadable or binary. Each answer is one
clear line: no traceback, no Python repr, no errno text, and an exit code that means
something (0 done, 1 not done or partly, 2 bad usage or settings, 3 another daemon holds the
workspace).

The subcommands are read from the parser itself, so a new one is met by these tests the day
it is added (a case list below must then say what its valid arguments are: the test that
checks the list is complete fails until it does).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from wsd.daemon.ops.bootstrap import init_workspace
from wsd.daemon.ops.cli import build_parser
from wsd.daemon.runtime.heartbeat import status_path
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.store import Store
from wsd.schema.layout import Layout

from .conftest import drain, flush, import_lines, make_worker, scalar, venv_script, write_turns
from .test_first_contact import unprivileged

#: A failure spelled for Python, not for a person.
NOT_FOR_PEOPLE = re.compile(
    r"Traceback \(most recent|\[Errno \d+\]|<[\w.]+ object at 0x|NoneType|'None'"
    r"|\[(?:'[^']*'|\"[^\"]*\")(?:, |\])|\{'[^']*': |\bSystemError\b|\bKeyError\b"
    r"|\bAttributeError\b|\bTypeError\b|\bUnboundLocalError\b|\bNameError\b"
)
MEANINGFUL = {0, 1, 2, 3}


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every runnable subcommand path (``("memory", "why")``) of ``parser``."""
    found: list[tuple[str, ...]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _leaves(sub, (*path, name)) or [(*path, name)]
    return found


LEAVES = _leaves(build_parser())


@dataclass(frozen=True)
class Valid:
    """A subcommand's arguments when nothing is wrong, and the exit codes that then mean it
    did its job on a fresh workspace (``{dest}`` is a fresh folder outside it, ``{file}`` a
    JSONL file of one learning)."""

    args: tuple[str, ...] = ()
    codes: frozenset[int] = frozenset({0})
    #: Writes to stdout a person may pipe into ``head``.
    prints: bool = True
    #: Started only where it stops by itself (``wsd run`` serves until stopped).
    runs_forever: bool = False
    stdin: str = ""
    required: tuple[str, ...] = field(default=())


VALID: dict[tuple[str, ...], Valid] = {
    ("init",): Valid(),
    ("run",): Valid(runs_forever=True, prints=False),
    ("status",): Valid(),
    ("metrics",): Valid(),
    # No daemon in these workspaces: the request is recorded and that is said, exit 1.
    ("flush",): Valid(codes=frozenset({1})),
    ("retry",): Valid(),
    ("memory", "why"): Valid(("user.md:1",), required=("target",)),
    ("memory", "blame"): Valid(("user.md",), required=("file",)),
    ("memory", "history"): Valid(("user.md",), required=("file",)),
    ("memory", "diff"): Valid(("user.md",), required=("file",)),
    ("memory", "restore"): Valid(("user.md", "1"), required=("file", "REV")),
    ("memory", "conflicts"): Valid(),
    ("mcp",): Valid(prints=False),
    ("forget",): Valid(("L1",), required=("WORDS",)),
    ("boot-context",): Valid(),
    ("search",): Valid(("tea",)),
    ("import",): Valid(("{file}",), required=("PATH",)),
    ("export",): Valid(("-",), required=("DEST",)),
    ("pending",): Valid(),
    # No Bridge: a rebuild cannot start, and says which setting is missing.
    ("rebuild",): Valid(("--wait", "1"), codes=frozenset({2}), prints=False),
    ("bootstrap",): Valid(("--venv", sys.prefix, "--standalone")),
    # Its findings decide: a workspace with no daemon is a problem (1).
    ("doctor",): Valid(codes=frozenset({1})),
    ("backup",): Valid(("{dest}",), required=("dest",)),
    # No WSD_REPLICA_URL in these workspaces: said in one line, nothing touched, exit 1.
    ("restore",): Valid(("--from-replica",), codes=frozenset({1}), required=("--from-replica",)),
}


def test_every_subcommand_has_its_valid_arguments_here() -> None:
    """The cases cover every subcommand the parser has (a new one must be added here)."""
    assert sorted(LEAVES) == sorted(VALID)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WSD_", "ANTHROPIC_"))}
    return env | extra


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Layout]:
    """A workspace with one curated revision of user.md and one learning, in a folder whose
    name has a space and non-ASCII letters (every path a person can make must work), short
    enough that bootstrap's supervisord socket fits (pytest's tmp_path can pass 107 bytes)."""
    short = Path(tempfile.mkdtemp(prefix="wsd", dir="/tmp"))
    try:
        yield _workspace(short, tmp_path)
    finally:
        shutil.rmtree(short, ignore_errors=True)


def _workspace(short: Path, tmp_path: Path) -> Layout:
    root = short / "my wörk ☃"
    root.mkdir()
    layout = Layout(str(root))
    init_workspace(layout, templates=None)
    store = Store(layout)
    store.revisions.add_revision("user.md", "# User\n- likes tea\n", "curator", 1.0)
    Path(layout.md("user.md")).write_text("# User\n- likes tea\n")
    import_lines(store.layout, [b'{"type": "fact", "content": "The person likes green tea"}'])
    (tmp_path / "one.jsonl").write_text('{"type": "fact", "content": "The boiler is a Vaillant"}\n')
    return layout


def _argv(leaf: tuple[str, ...], args: tuple[str, ...], tmp: Path) -> list[str]:
    return [
        a.replace("{dest}", str(tmp / "backup")).replace("{file}", str(tmp / "one.jsonl"))
        for a in (*leaf, *args)
    ]


def _run(
    argv: list[str],
    env: dict[str, str],
    *,
    stdin: str = "",
    stdout: int | None = subprocess.PIPE,
    program: str = "wsd",
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [venv_script(program), *argv],
        env=env,
        input=stdin,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=timeout,
    )


def plain(done: subprocess.CompletedProcess[str], *, failed_in_one_line: bool = True) -> None:
    """The answer is for a person: no Python spelling anywhere, a meaningful exit code, and
    a failure said in exactly one line on stderr (doctor's failures are its report, on
    stdout, one line a finding)."""
    if "doctor" in done.args and done.returncode == 1 and not done.stderr:
        assert done.stdout is None or "problem(s)" in done.stdout.splitlines()[-1]
        failed_in_one_line = False
    for text in (done.stdout or "", done.stderr):
        found = NOT_FOR_PEOPLE.search(text)
        assert found is None, f"{found.group(0)!r} in: {text[-1500:]}"
    assert done.returncode in MEANINGFUL, done.stderr[-1500:]
    if done.returncode != 0 and failed_in_one_line:
        lines = done.stderr.splitlines()
        assert len(lines) == 1, f"exit {done.returncode}, stderr: {done.stderr[-1500:]}"


def _name(leaf: tuple[str, ...]) -> str:
    return " ".join(leaf)


# -- every subcommand ---------------------------------------------------------------------


@pytest.mark.parametrize("leaf", LEAVES, ids=_name)
def test_an_unknown_option_is_one_usage_line(
    ws: Layout, leaf: tuple[str, ...], tmp_path: Path
) -> None:
    """``wsd X ARGS --no-such-option`` is one line naming the option and --help, exit 2."""
    argv = _argv(leaf, VALID[leaf].args, tmp_path)
    done = _run(["--workspace", ws.root, *argv, "--no-such-option"], _env())
    plain(done)
    assert done.returncode == 2
    assert "--no-such-option" in done.stderr and "--help" in done.stderr


@pytest.mark.parametrize("leaf", [leaf for leaf in LEAVES if VALID[leaf].required], ids=_name)
def test_a_missing_argument_is_one_usage_line(ws: Layout, leaf: tuple[str, ...]) -> None:
    """A subcommand run without its argument names what it needs, in one line, exit 2."""
    done = _run(["--workspace", ws.root, *leaf], _env())
    plain(done)
    assert done.returncode == 2
    assert VALID[leaf].required[0] in done.stderr


@pytest.mark.parametrize("leaf", LEAVES, ids=_name)
def test_an_extra_argument_is_one_usage_line(
    ws: Layout, leaf: tuple[str, ...], tmp_path: Path
) -> None:
    """One argument too many is refused in one line, exit 2 (or taken as more words, where
    the subcommand takes words: search, why)."""
    valid = VALID[leaf]
    argv = _argv(leaf, (*valid.args, "surplus"), tmp_path)
    if valid.runs_forever:
        done = _run(["--workspace", ws.root, *argv], _env())
        plain(done)
        assert done.returncode == 2
        return
    done = _run(["--workspace", ws.root, *argv], _env(), stdin=valid.stdin)
    plain(done)
    assert done.returncode in {2, *valid.codes}


@pytest.mark.parametrize("leaf", LEAVES, ids=_name)
def test_a_path_inside_the_workspace_names_it(
    ws: Layout, leaf: tuple[str, ...], tmp_path: Path
) -> None:
    """``--workspace ws/.os/memory``: one line naming the workspace meant, exit 2, nothing
    created (for every subcommand, init and bootstrap included)."""
    inner = os.path.join(ws.root, ".os", "memory")
    before = sorted(os.listdir(inner))
    argv = _argv(leaf, VALID[leaf].args, tmp_path)
    done = _run(["--workspace", inner, *argv], _env())
    plain(done)
    assert done.returncode == 2
    assert f"did you mean `--workspace '{ws.root}'`?" in done.stderr
    assert sorted(os.listdir(inner)) == before


@pytest.mark.parametrize(
    "leaf", [leaf for leaf in LEAVES if not VALID[leaf].runs_forever], ids=_name
)
def test_a_path_with_a_space_and_non_ascii_letters_works(
    ws: Layout, leaf: tuple[str, ...], tmp_path: Path
) -> None:
    """Each subcommand does its job in a workspace named ``my wörk ☃``, by --workspace and
    by $WSD_WORKSPACE alike."""
    valid = VALID[leaf]
    argv = _argv(leaf, valid.args, tmp_path)
    for how, env in (("--workspace", _env()), ("env", _env(WSD_WORKSPACE=ws.root))):
        done = _run(
            (["--workspace", ws.root] if how == "--workspace" else []) + argv,
            env,
            stdin=valid.stdin,
        )
        plain(done)
        assert done.returncode in valid.codes, f"{how}: {done.stderr[-1500:]}"


@pytest.mark.parametrize("leaf", [leaf for leaf in LEAVES if VALID[leaf].prints], ids=_name)
def test_a_closed_stdout_is_not_an_error(ws: Layout, leaf: tuple[str, ...], tmp_path: Path) -> None:
    """``wsd X | head -1`` with the reader gone: the exit code it would have had, and
    nothing on stderr but what it would have said anyway."""
    valid = VALID[leaf]
    argv = ["--workspace", ws.root, *_argv(leaf, valid.args, tmp_path)]
    read, write = os.pipe()
    os.close(read)
    try:
        done = _run(argv, _env(), stdin=valid.stdin, stdout=write)
    finally:
        os.close(write)
    plain(done)
    assert "Broken pipe" not in done.stderr and "BrokenPipe" not in done.stderr
    assert done.returncode in valid.codes


@pytest.mark.parametrize("leaf", LEAVES, ids=_name)
def test_a_broken_setting_is_named_or_not_needed(
    ws: Layout, leaf: tuple[str, ...], tmp_path: Path
) -> None:
    """With ``WSD_DAILY_BUDGET_USD=five`` a subcommand either does its job (it needs no
    budget) or says the setting and its value in one line, exit 2."""
    valid = VALID[leaf]
    argv = ["--workspace", ws.root, *_argv(leaf, valid.args, tmp_path)]
    env = _env(WSD_DAILY_BUDGET_USD="five")
    if valid.runs_forever:  # `wsd run` must refuse to start on it
        done = _run(argv, env)
        plain(done)
        assert done.returncode == 2 and "WSD_DAILY_BUDGET_USD" in done.stderr
        assert "five" in done.stderr
        return
    done = _run(argv, env, stdin=valid.stdin)
    plain(done)
    if done.returncode == 2 and "WSD_DAILY_BUDGET_USD" in done.stderr:
        assert "five" in done.stderr
    else:
        assert done.returncode in valid.codes, done.stderr[-1500:]


@pytest.mark.parametrize("leaf", LEAVES, ids=_name)
def test_no_workspace_at_all_is_one_line(leaf: tuple[str, ...], tmp_path: Path) -> None:
    """A workspace path that does not exist: one line with the fix, exit 2, nothing made
    (init and bootstrap make it: that is their job)."""
    missing = tmp_path / "no such place"
    argv = _argv(leaf, VALID[leaf].args, tmp_path)
    if leaf in (("init",), ("bootstrap",)):
        return  # they create the workspace (tested by test_surface and test_operations)
    done = _run(["--workspace", str(missing), *argv], _env())
    plain(done)
    assert done.returncode == 2
    assert not missing.exists()


# -- what a person hands a command -----------------------------------------------------------


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "a fifo"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    "kind", ["missing", "folder", "fifo", "binary", "empty", "not jsonl", "unreadable"]
)
def test_import_meets_what_a_person_hands_it(ws: Layout, tmp_path: Path, kind: str) -> None:
    """``wsd import X``: a missing file, an empty folder, a FIFO (never waited on), binary
    bytes, an empty file, prose, a file it may not read: one plain line each, nothing
    imported, never a hang."""
    path = tmp_path / f"input {kind}"
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        path = _fifo(tmp_path)
    elif kind == "binary":
        path.write_bytes(os.urandom(4096))
    elif kind == "empty":
        path.write_text("")
    elif kind == "not jsonl":
        path.write_text("My notes\nabout the boiler\n")
    elif kind == "unreadable":
        path.write_text('{"type": "fact", "content": "secret"}\n')
        path.chmod(0)
    cmd = ["--workspace", ws.root, "import", str(path)]
    before = scalar(ws.memory_db, "SELECT count(*) FROM learnings")
    if kind == "unreadable":
        done = subprocess.run(
            unprivileged([venv_script("wsd"), *cmd]),
            env=_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
    else:
        done = _run(cmd, _env(), timeout=30)
    plain(done)
    # Nothing to import is not an error; anything it cannot read is refused whole (exit 2).
    assert done.returncode in ({0} if kind in ("empty", "folder") else {2})
    assert scalar(ws.memory_db, "SELECT count(*) FROM learnings") == before


@pytest.mark.parametrize("kind", ["a file", "fifo", "unwritable"])
def test_backup_meets_a_destination_it_cannot_use(ws: Layout, tmp_path: Path, kind: str) -> None:
    """``wsd backup X`` where X is a file, a FIFO or a folder it may not write: one line."""
    dest = tmp_path / "dest"
    if kind == "a file":
        dest.write_text("not a folder")
    elif kind == "fifo":
        dest = _fifo(tmp_path)
    else:
        dest.mkdir()
        dest.chmod(0o500)
    cmd = [venv_script("wsd"), "--workspace", ws.root, "backup", str(dest / "bk")]
    if kind != "unwritable":
        cmd[-1] = str(dest)
    done = subprocess.run(
        unprivileged(cmd) if kind == "unwritable" else cmd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    plain(done)
    assert done.returncode in (1, 2)


@pytest.mark.parametrize(
    "argv",
    [
        ["memory", "why", "user.md:0"],
        ["memory", "why", "user.md:abc"],
        ["memory", "why", "../../etc/passwd:1"],
        ["memory", "why", "soul.md:1"],
        ["memory", "why", ""],
        ["memory", "blame", "nope.md"],
        ["memory", "history", "../user.md"],
        ["memory", "diff", "user.md", "999"],
        ["memory", "restore", "user.md", "999"],
        ["memory", "restore", "user.md", "-1"],
        ["search", "--turn", "T0"],
        ["search", "--turn", "T99999"],
        ["search", "--limit", "0", "tea"],
        ["search", "--since", "yesterday-ish", "tea"],
        ["search", "--type", "bogus", "tea"],
        ["search", "--turn", "T1", "tea"],
        ["search"],
        ["search", "\x01\x02"],
        ["pending", "complete"],
        ["pending", "complete", "abc"],
        ["pending", "complete", "999"],
        ["pending", "frobnicate"],
        ["forget", "L0"],
        ["forget", "L999"],
        ["forget", "99999999999999999999999"],
        ["flush", "--wait", "-1"],
        ["flush", "--wait", "nan"],
        ["rebuild", "--wait", "abc"],
        ["boot-context", "--tool-prefix", ""],
    ],
    ids=lambda a: " ".join(a) or "none",
)
def test_a_wrong_value_is_one_plain_line(ws: Layout, argv: list[str]) -> None:
    """Values a person gets wrong (a line 0, a file that is not curated, a turn that is not
    there, an action id that is not one): one plain line, exit 1 or 2."""
    done = _run(["--workspace", ws.root, *argv], _env())
    plain(done)
    assert done.returncode in (1, 2) or argv in (
        ["search", "\x01\x02"],
        ["boot-context", "--tool-prefix", ""],
    )


def _takes_wait(leaf: tuple[str, ...]) -> bool:
    """Whether the subcommand ``leaf`` has a ``--wait`` option."""
    parser = build_parser()
    for name in leaf:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[name]
    return any("--wait" in a.option_strings for a in parser._actions)


WAITING = [leaf for leaf in LEAVES if _takes_wait(leaf)]


@pytest.mark.parametrize("value", ["nan", "-5", "inf", "1e9", "soon"])
@pytest.mark.parametrize("leaf", WAITING, ids=_name)
def test_every_wait_is_read_one_way(
    ws: Layout, leaf: tuple[str, ...], value: str, tmp_path: Path
) -> None:
    """Every command's --wait is the same number of seconds from 0 to a day: nan, -5,
    infinity, more than a day or a word is the same one usage line, exit 2 (two of them
    took nan and -5 as a bare float)."""
    assert {("flush",), ("import",), ("forget",), ("rebuild",)} <= set(WAITING)
    argv = [*_argv(leaf, VALID[leaf].args, tmp_path), "--wait", value]
    done = _run(["--workspace", ws.root, *argv], _env())
    plain(done)
    assert done.returncode == 2
    assert "is not a number of seconds from 0 to 86400" in done.stderr


def test_a_stopped_daemon_is_said_by_every_command_that_needs_it(ws: Layout) -> None:
    """A heartbeat left by a daemon that is gone: status says not running, doctor says how
    to start it, flush --wait says nobody will curate it (each one line, no repr)."""
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    beat = Path(status_path(ws))
    pid = int(dead.stdout)  # gone by now
    beat.write_text(json.dumps({"pid": pid, "heartbeat_at": 1.0, "state": "idle", "settings": {}}))
    status = _run(["--workspace", ws.root, "status"], _env())
    plain(status)
    assert re.search(r"daemon_running: no", status.stdout)
    doctor = _run(["--workspace", ws.root, "doctor"], _env())
    plain(doctor)
    assert "FAIL daemon: not running" in doctor.stdout
    flushed = _run(["--workspace", ws.root, "flush", "--wait", "1"], _env())
    plain(flushed)
    assert flushed.returncode == 1 and "no daemon is running" in flushed.stderr


def test_a_killed_daemon_is_not_running_in_status_whatever_its_heartbeat_says(
    ws: Layout,
) -> None:
    """After kill -9 (issue 45): a fresh heartbeat saying "idle" whose pid is a zombie (killed,
    not reaped) or gone makes status say state "not running" (the last state beside it), in
    text and JSON, and doctor not say "ok daemon"."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        os.kill(child.pid, 9)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # killed, not reaped: a zombie
            if Path(f"/proc/{child.pid}/stat").read_bytes().split(b") ")[1][:1] == b"Z":
                break
            time.sleep(0.02)
        beat = {"pid": child.pid, "heartbeat_at": time.time(), "state": "idle", "settings": {}}
        Path(status_path(ws)).write_text(json.dumps(beat))
        status = json.loads(_run(["--workspace", ws.root, "status", "--json"], _env()).stdout)
        assert (status["daemon_running"], status["state"]) == (False, "not running"), status
        assert status["last_state"] == "idle"
        text = _run(["--workspace", ws.root, "status"], _env()).stdout
        assert re.search(r"^ *state: not running$", text, re.M), text
        assert not re.search(r"^ *state: idle$", text, re.M), text
        doctor = _run(["--workspace", ws.root, "doctor"], _env()).stdout
        assert "ok   daemon" not in doctor, doctor
    finally:
        child.wait()


@pytest.mark.parametrize(
    ("why", "kept"),
    [
        ("cannot be read (disk I/O error)", True),
        ("cannot be read (database or disk is full)", True),
        ("cannot be read (database is locked)", True),
        ("cannot be read (unable to open database file)", True),
        ("cannot be read (file is not a database)", False),
    ],
)
def test_a_database_the_machine_keeps_from_being_read_is_never_advised_away(
    why: str, kept: bool, tmp_path: Path
) -> None:
    """The advice for memory.db that cannot be read (issue 45: on a full disk it said "move
    it aside", which loses its revisions): a disk, lock or permission error says to leave it,
    a damaged file keeps the move-aside advice."""
    from wsd.daemon.store import remedy

    said = remedy("memory", why, str(tmp_path))
    assert ("do not move memory.db aside" in said) == kept, said
    assert ("move it aside" in said) == (not kept), said


# -- times a person reads ------------------------------------------------------------------

#: A Unix time in seconds (2017-2033), alone: what a person cannot read.
EPOCH = re.compile(r"(?<![\w.])1[5-9]\d{8}(?:\.\d+)?(?!\w)")
#: What a person reads (machine formats, --json, export and metrics, may say epochs).
FOR_PEOPLE = [
    ["status"],
    ["pending"],
    ["search", "tea"],
    ["search", "--turn", "T1"],
    ["boot-context"],
    ["memory", "why", "user.md:1"],
    ["memory", "blame", "context.md"],
    ["memory", "history", "context.md"],
    ["memory", "diff", "context.md"],
    ["doctor"],
    ["retry"],
]


def test_no_command_a_person_reads_prints_a_raw_epoch(ws: Layout, standin: BridgeStandin) -> None:
    """After turns curated and a forget, no human-facing command prints a time as a bare
    Unix epoch (last_forget.started_at was one, beside an ISO finished_at)."""
    write_turns(ws, 4, prompt="I prefer green tea; remind me to call Maria tomorrow {i}")
    flush(ws)
    drain(make_worker(ws, standin))
    Path(status_path(ws)).unlink()  # this test's own pid: forget would wait for it to pause
    env = _env(WSD_WORKSPACE=ws.root)
    assert _run(["forget", "Maria", "--yes"], env).returncode == 0
    assert EPOCH.search(_run(["status", "--json"], env).stdout)  # the pattern finds them
    for argv in FOR_PEOPLE:
        done = _run(argv, env)
        assert done.returncode in (0, 1), (argv, done.stderr)
        said = [ln for ln in (done.stdout + done.stderr).splitlines() if EPOCH.search(ln)]
        assert not said, (argv, said)


# -- wsd doctor, across misconfigurations -------------------------------------------------

FINDING = re.compile(r"^(ok|WARN|FAIL) +([^:]+): ")


def _misconfigure(ws: Layout, what: str) -> None:
    user_md = Path(ws.md("user.md"))
    settings = Path(ws.os_dir, "settings.env")
    if what == "a typo in settings.env":
        settings.write_text("WSD_DAILY_BUDGT_USD=1\nWSD_POLL_SECONDS=2\n")
    elif what == "a bad value in settings.env":
        settings.write_text("WSD_POLL_SECONDS=soon\n")
    elif what == "user.md a FIFO":
        user_md.unlink()
        os.mkfifo(user_md)
    elif what == "user.md missing":
        user_md.unlink()
    elif what == "user.md a link out":
        user_md.unlink()
        user_md.symlink_to("/etc/hostname")
    elif what == "the spool a FIFO":
        os.mkfifo(ws.spool)
    elif what == "memory.db not a database":
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(ws.memory_db + suffix)
        Path(ws.memory_db).write_bytes(b"not a database at all" * 100)
    elif what == "a dead daemon's heartbeat":
        beat = {"pid": 2**22 + 7, "state": "idle", "updated_at": time.time(), "version": "x"}
        Path(status_path(ws)).write_text(json.dumps(beat))


@pytest.mark.parametrize(
    "what",
    [
        "a typo in settings.env",
        "a bad value in settings.env",
        "user.md a FIFO",
        "user.md missing",
        "user.md a link out",
        "the spool a FIFO",
        "memory.db not a database",
        "a dead daemon's heartbeat",
    ],
)
def test_doctor_says_each_thing_once_and_never_ok_beside_a_problem(ws: Layout, what: str) -> None:
    """Whatever is misconfigured, doctor's report never calls a topic ok and a problem in
    one run (ok settings beside a WARN about a setting), says no finding twice, names the
    misconfiguration, and its exit code follows its FAILs."""
    _misconfigure(ws, what)
    done = _run(["doctor"], _env(WSD_WORKSPACE=ws.root), timeout=90)
    plain(done)
    findings = [m.groups() for m in map(FINDING.match, done.stdout.splitlines()) if m]
    assert findings, done.stdout + done.stderr
    lines = [ln for ln in done.stdout.splitlines() if FINDING.match(ln)]
    assert len(lines) == len(set(lines)), done.stdout
    levels: dict[str, set[str]] = {}
    for level, topic in findings:
        levels.setdefault(topic, set()).add(level)
    mixed = {t: ls for t, ls in levels.items() if "ok" in ls and len(ls) > 1}
    assert not mixed, done.stdout
    assert (done.returncode == 1) == any(level == "FAIL" for level, _ in findings)
    problems = [ln for ln in lines if not ln.startswith("ok")]
    named = {
        "a typo in settings.env": "WSD_DAILY_BUDGT_USD",
        "a bad value in settings.env": "WSD_POLL_SECONDS",
        "user.md a FIFO": "FIFO",
        "user.md missing": "user.md",
        "user.md a link out": "user.md",
        "the spool a FIFO": "spool",
        "memory.db not a database": "memory.db",
        "a dead daemon's heartbeat": "daemon",
    }[what]
    assert any(named in ln for ln in problems), done.stdout
    if what in ("user.md a FIFO", "user.md a link out"):  # one cause, said once
        assert "user.md is missing" not in done.stdout, done.stdout


# -- wsd search and search_memory --------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "",
        "  ",
        "\t\n",
        "?!",
        "...",
        "*",
        '"',
        "tea",
        "TEA?!",
        "green-tea",
        "NEAR(",
        "ü",
        "tea " * 3000,
    ],
    ids=lambda q: repr(q)[:16],
)
def test_wsd_search_and_search_memory_answer_a_query_alike(ws: Layout, query: str) -> None:
    """The person's `wsd search` and the agent's search_memory give one answer to the same
    query: both refuse it (no word in it: not "nothing matches", which blames the memory)
    or both find the same learnings, for blank, punctuation-only, odd and very long ones."""
    from wsd.daemon.memory.agent import run_search

    import_lines(ws, [json.dumps({"type": "fact", "content": c}) for c in FACTS])
    done = _run(["search", query], _env(WSD_WORKSPACE=ws.root))
    plain(done)
    answer = run_search(ws, {"query": query})
    said = str(answer["content"][0]["text"])
    assert (done.returncode == 2) == bool(answer.get("is_error")), (done.stderr, said)
    if done.returncode == 2:
        assert "Nothing in memory matches" not in done.stderr + said
    else:
        assert re.findall(r"\[(L\d+)\]", done.stdout) == re.findall(r"\[(L\d+)\]", said)
    if "tea" in query.lower():
        assert "[L1]" in said
    if not query.strip(string.punctuation + string.whitespace):  # no word to search for
        assert done.returncode == 2 and "give a question or keywords" in done.stderr
        assert "no word" in said or "empty" in said


FACTS = [
    "The person likes green tea in the morning",
    "Invoices over 500 EUR go to Paul",
    "The passport expires in May 2027",
]


def test_search_memory_meets_a_nul_in_its_query(ws: Layout) -> None:
    """A NUL (no argv can carry one to wsd search) in search_memory's query is read as a
    separator: the words around it are searched, nothing breaks."""
    from wsd.daemon.memory.agent import run_search

    import_lines(ws, [json.dumps({"type": "fact", "content": c}) for c in FACTS])
    assert "[L1]" in str(run_search(ws, {"query": "green\x00tea"})["content"][0]["text"])
    refused = run_search(ws, {"query": "\x00"})
    assert refused.get("is_error") and "holds no word" in str(refused["content"][0]["text"])


# -- wsd-hook -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        ([], ""),
        ([], "{"),
        ([], "\ufeff{}"),
        ([], '{"hook_event_name": "Stop"}'),
        (["--workspace"], "{}"),
        (["--workspace", ""], "{}"),
        (["--bogus"], "{}"),
        (["--workspace", "{inside}"], '{"hook_event_name": "Stop", "session_id": "s"}'),
        (["--workspace", "{missing}"], '{"hook_event_name": "Stop", "session_id": "s"}'),
        (["--workspace", "{ws}"], '{"hook_event_name": "Stop", "session_id": "s"}'),
        ([], "[" * 200_000 + "]" * 200_000),
        ([], '{"a":' * 100_000 + "1" + "}" * 100_000),
        (
            ["--workspace", "{ws}"],
            '{"hook_event_name": "PostToolUse", "session_id": "s", "tool_name": "Bash",'
            f' "tool_input": {"[" * 100_000}{"]" * 100_000}, "tool_response": "ok"}}',
        ),
    ],
    ids=lambda v: repr(v)[:40],
)
def test_wsd_hook_meets_what_it_gets_wrong(
    ws: Layout, tmp_path: Path, args: list[str], stdin: str
) -> None:
    """Whatever the arguments and stdin (JSON nested 100,000 deep too), wsd-hook prints
    nothing on stdout, exits 0, and says what is off in plain lines on stderr (a path
    inside a workspace names it)."""
    argv = [
        a.replace("{inside}", ws.os_dir)
        .replace("{missing}", str(tmp_path / "nowhere"))
        .replace("{ws}", ws.root)
        for a in args
    ]
    done = _run(argv, _env(), stdin=stdin, program="wsd-hook")
    plain(done, failed_in_one_line=False)
    assert done.returncode == 0 and done.stdout == ""
    if "{inside}" in args:
        assert f"did you mean `--workspace '{ws.root}'`?" in done.stderr
    if len(stdin) > 100_000:  # nested deeper than a reader can go: said so, in words
        assert done.stderr.splitlines() == [
            "wsd-hook: ignored invalid hook input: input is JSON nested too deeply to read"
        ]
    elif "{ws}" in args:
        assert done.stderr == ""


def test_wsd_hook_with_a_fifo_for_a_spool_and_a_locked_database_never_hangs(
    ws: Layout,
) -> None:
    """A FIFO planted where the spool goes, while transcript.db cannot be written: the hook
    still exits 0 at once and says what happened in plain words."""
    import apsw

    os.mkfifo(ws.spool)
    holder = apsw.Connection(ws.transcript_db)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        done = _run(
            [],
            _env(WSD_WORKSPACE=ws.root),
            stdin='{"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "x"}',
            program="wsd-hook",
            timeout=30,
        )
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    plain(done, failed_in_one_line=False)
    assert done.returncode == 0 and done.stdout == ""


@pytest.mark.parametrize("leaf", LEAVES, ids=_name)
def test_a_damaged_memory_db_is_named_with_what_to_do(
    ws: Layout, leaf: tuple[str, ...], tmp_path: Path
) -> None:
    """memory.db overwritten with random bytes: every subcommand answers in plain lines (it
    was a traceback from forget and flush), and one that needs memory.db says what to do
    (not "the daemon creates it": it cannot open it either)."""
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(ws.memory_db + suffix)
    Path(ws.memory_db).write_bytes(os.urandom(8192))
    valid = VALID[leaf]
    argv = ["--workspace", ws.root, *_argv(leaf, valid.args, tmp_path)]
    env = _env(ANTHROPIC_BASE_URL="http://127.0.0.1:9", WSD_BRIDGE_TOKEN="t")
    done = _run(argv, env, stdin=valid.stdin, timeout=60)
    plain(done, failed_in_one_line=leaf not in (("boot-context",), ("status",)))
    assert "the daemon creates it" not in done.stderr + (done.stdout or "")


def test_an_empty_workspace_path_is_refused_not_taken_for_the_default(tmp_path: Path) -> None:
    """``wsd --workspace "$WS" status`` with WS unset names the empty path, exit 2, rather
    than answering for /workspace."""
    done = _run(["--workspace", "", "status"], _env(), timeout=30)
    plain(done)
    assert done.returncode == 2 and "--workspace was given an empty path" in done.stderr


@pytest.mark.parametrize("what", ["a file", "a FIFO"])
def test_a_workspace_path_that_is_not_a_folder_says_so(tmp_path: Path, what: str) -> None:
    """``--workspace`` naming a file (or a FIFO) says it is not a folder, one line, exit 2."""
    path = tmp_path / "not a folder"
    if what == "a file":
        path.write_text("x")
    else:
        os.mkfifo(path)
    done = _run(["--workspace", str(path), "status"], _env(), timeout=30)
    plain(done)
    assert done.returncode == 2 and f"{path} is not a folder" in done.stderr


@pytest.mark.parametrize("what", ["a folder", "unreadable"])
def test_restore_onto_a_file_it_cannot_replace_says_so(
    ws: Layout, tmp_path: Path, what: str
) -> None:
    """``wsd memory restore`` where user.md cannot be replaced (a folder there, or a file it
    may not read): the revision is recorded, and one plain line says the file waits, exit 1
    (it was a dict repr, or a person's unreadable edit replaced unseen)."""
    path = Path(ws.md("user.md"))
    path.unlink()
    if what == "a folder":
        path.mkdir()
    else:
        path.write_text("# User\n- my own unread line\n")
        path.chmod(0)
    cmd = [venv_script("wsd"), "--workspace", ws.root, "memory", "restore", "user.md", "1"]
    done = subprocess.run(
        unprivileged(cmd) if what == "unreadable" else cmd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    plain(done)
    assert done.returncode == 1
    assert done.stdout == "user.md: revision #1 restored as #2\n"
    assert done.stderr.startswith("wsd memory restore: user.md not written yet (")
    if what == "unreadable":
        assert path.read_text() == "# User\n- my own unread line\n"


# -- a full disk, for real ---------------------------------------------------------------


@contextlib.contextmanager
def _small_disk(folder: Path, size: str = "8m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``folder`` (root only), unmounted afterwards."""
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"a small disk needs mount (root): {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        for _ in range(50):  # a daemon that just exited may still hold it for a moment
            if subprocess.run(["umount", str(folder)], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)


def _fill(disk: Path) -> Path:
    """Write ``disk`` full; returns the file that fills it."""
    fill = disk / "fill"
    fd = os.open(fill, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        with contextlib.suppress(OSError):
            while os.write(fd, b"\0" * 4096):
                pass
    finally:
        os.close(fd)
    return fill


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small disk needs root")
def test_a_full_disk_is_named_and_the_daemon_says_it_fails_then_recovers(
    tmp_path: Path,
) -> None:
    """On a real full disk (a tmpfs) under a running daemon (issue 45): status says the
    daemon is failing (not "idle") and names the free space once, search and doctor say to
    leave the databases be, nothing says "move it aside"; once space is freed the daemon
    recovers by itself (one line in its log), the memory and its revisions are all there."""
    from wsd.daemon.runtime.heartbeat import read_status
    from wsd.daemon.standin import rule_curator
    from wsd.daemon.standin.bridge import BridgeStandin

    from .conftest import daemon_env, running_daemon, wait_for

    with (
        _small_disk(tmp_path / "disk") as disk,
        BridgeStandin(responder=rule_curator.responder) as bridge,
    ):
        layout = _workspace(disk, tmp_path)
        env = daemon_env(layout, bridge, WSD_POLL_SECONDS="0.2")
        log = tmp_path / "daemon.log"
        with running_daemon(env, log):
            assert wait_for(lambda: (read_status(layout) or {}).get("state") == "idle")
            fill = _fill(disk)
            _run(["--workspace", layout.root, "flush"], _env())  # a nudge: a pass now
            assert wait_for(lambda: (read_status(layout) or {}).get("state") == "failing")
            status = _run(["--workspace", layout.root, "status"], _env())
            plain(status, failed_in_one_line=False)
            # A reader that must make a -shm file cannot on a full disk, one that finds the
            # daemon's still can: both are said right, whichever this moment gives.
            if "daemon_state:" in status.stdout:  # the databases could not be read
                assert re.search(r"daemon_state: failing$", status.stdout, re.M), status.stdout
                assert status.stdout.count("MiB free") == 1, status.stdout
            else:
                assert re.search(r"^ *state: failing$", status.stdout, re.M), status.stdout
                assert re.search(r"last_error: .*disk is full", status.stdout), status.stdout
            found = _run(["--workspace", layout.root, "search", "tea"], _env())
            plain(found)
            if found.returncode:
                assert found.returncode == 1 and "do not move memory.db aside" in found.stderr
            else:
                assert "green tea" in found.stdout, found.stdout
            doctor = _run(["--workspace", layout.root, "doctor"], _env())
            plain(doctor)
            assert "FAIL curation: its last pass failed" in doctor.stdout
            assert "FAIL disk: 0 MiB free" in doctor.stdout
            for said in (status.stdout, found.stderr, doctor.stdout):
                assert "move it aside" not in said
            fill.unlink()
            assert wait_for(lambda: (read_status(layout) or {}).get("state") == "idle")
            assert (read_status(layout) or {}).get("last_error") is None
            found = _run(["--workspace", layout.root, "search", "tea"], _env())
            assert found.returncode == 0 and "green tea" in found.stdout, found.stderr
        assert scalar(layout.memory_db, "SELECT count(*) FROM md_revisions") == 1
        lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
        assert any(line["event"] == "pass_recovered" for line in lines)
