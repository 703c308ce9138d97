"""Doctor's proof that capture works end to end: every hook command wired to this workspace
is run as Claude Code runs it (``/bin/sh -c``, the event on stdin) on a probe event, and
the probe is looked for in transcript.db, then removed.

Issue 45: deployed into a workspace path with a space, every ``wsd-hook`` run ended with
status 127 (its ``#!`` line split at the space) while doctor said "0 problem(s)": every turn
lost, no warning anywhere. And with the plugin and ``.claude/settings.json`` both wiring it,
every event came twice, unseen.

Where a command is wired: the plugin ``wsd bootstrap`` rendered (``.os/claude-plugin``), the
workspace's ``.claude/settings.json`` and ``settings.local.json``, and the user's
``~/.claude/settings.json``. With none, this install's own ``wsd-hook`` is run (the SDK's
``settings=`` and callbacks are wired in code, out of doctor's sight).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import subprocess
import sys
from pathlib import Path

from wsd.daemon.ops.doctor.findings import Reporter
from wsd.daemon.runtime.fsio import read_regular

#: A probe's session id starts so (``wsd status`` and curation never see it: it is removed).
PROBE_SESSION = "wsd-doctor-probe-"
#: Claude Code's own limit for a command hook is 60 s; a probe waits this long.
PROBE_TIMEOUT_SECONDS = 20.0
#: A settings file larger than this is not read (it is not one a person wrote).
SETTINGS_LIMIT = 1 << 20
#: What marks a wired command as ours.
HOOK_NAME = "wsd-hook"


def capture(doctor: Reporter) -> None:
    """Run each wired hook command on a probe; FAIL for one that records nothing."""
    wired = wired_hooks(doctor.layout.root, doctor.layout.os_dir, doctor.home)
    commands: dict[str, str] = {}
    for place, _event, command in wired:
        commands.setdefault(command, place)
    if not commands:
        own = Path(sys.executable).parent / HOOK_NAME
        command = f"{shlex.quote(str(own))} --workspace {shlex.quote(doctor.layout.root)}"
        commands[command] = "this install (no settings file or plugin here wires wsd-hook)"
    for command, place in commands.items():
        _probe(doctor, command, place)
    _twice(doctor, wired)


def _probe(doctor: Reporter, command: str, where: str) -> None:
    session = PROBE_SESSION + secrets.token_hex(6)
    event = {"hook_event_name": "SessionStart", "session_id": session, "source": "doctor"}
    env = {**os.environ, "WSD_WORKSPACE": doctor.layout.root}
    try:
        ran = subprocess.run(
            ["/bin/sh", "-c", command],
            input=json.dumps(event),
            capture_output=True,
            text=True,
            errors="replace",
            cwd=doctor.layout.root,
            env=env,
            timeout=PROBE_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        doctor.add(
            "fail",
            "capture",
            f"the hook wired in {where} did not finish in {PROBE_TIMEOUT_SECONDS:.0f}s on a"
            " probe event: Claude Code gives up on it and the turn is lost",
        )
        return
    except OSError as exc:
        doctor.add("fail", "capture", f"the hook wired in {where} cannot be run: {exc.strerror}")
        return
    found = doctor.store.turns.take_probe(session)
    said = next((line for line in ran.stderr.splitlines() if line.strip()), "")
    if found:
        doctor.add("ok", "capture", f"the hook wired in {where} recorded a probe event")
    elif "spooled" in said:
        doctor.add(
            "warn",
            "capture",
            f"the hook wired in {where} spooled its probe (transcript.db did not take it in"
            " time; the daemon ingests the spool): run doctor again when it is idle",
        )
    else:
        why = f"exit status {ran.returncode}" + (f": {said[:200]}" if said else "")
        doctor.add(
            "fail",
            "capture",
            f"the hook wired in {where} recorded nothing ({why}): every event it gets is"
            f" lost; the command: {command[:300]}",
        )


def _twice(doctor: Reporter, wired: list[tuple[str, str, str]]) -> None:
    """Warn when an event reaches wsd-hook from two places: Claude Code runs each, so every
    event comes twice (the hook keeps one; issue 45 found each prompt split in two turns)."""
    places: dict[str, list[str]] = {}
    for place, event, _command in wired:
        places.setdefault(event, []).append(place)
    twice = {e: p for e, p in places.items() if len(p) > 1}
    if not twice:
        return
    where = sorted({p for ps in twice.values() for p in ps})
    loaded = " (if Claude Code loads the plugin)" if "the plugin" in where else ""
    doctor.add(
        "warn",
        "capture",
        f"{', '.join(sorted(twice))} reach wsd-hook from {' and '.join(where)}{loaded}: each"
        " such event runs it twice (the hook keeps one copy); wire it in one place",
    )


def wired_hooks(root: str, os_dir: str, home: str | None) -> list[tuple[str, str, str]]:
    """(where, event, command) of each wsd-hook command wired to this workspace."""
    files = [
        ("the plugin", os.path.join(os_dir, "claude-plugin", "hooks", "hooks.json")),
        (".claude/settings.json", os.path.join(root, ".claude", "settings.json")),
        (".claude/settings.local.json", os.path.join(root, ".claude", "settings.local.json")),
    ]
    if home:
        files.append(("~/.claude/settings.json", os.path.join(home, ".claude", "settings.json")))
    return [
        (name, event, command)
        for name, path in files
        for event, command in _hook_commands(path)
        if HOOK_NAME in command and _for_workspace(command, root)
    ]


def _for_workspace(command: str, root: str) -> bool:
    """Whether a wired command captures into this workspace: it names it with --workspace,
    or names none (it goes where $WSD_WORKSPACE says, which doctor sets to this one)."""
    with contextlib.suppress(ValueError):
        words = shlex.split(command)
        if "--workspace" in words[:-1]:
            named = words[words.index("--workspace") + 1]
            return os.path.realpath(named) == os.path.realpath(root)
    return True


def _hook_commands(path: str) -> list[tuple[str, str]]:
    """(event, command) of every command hook in a Claude Code settings or hooks.json file;
    nothing for one that is missing, not a regular file, too large or not that shape."""
    try:
        data = json.loads(read_regular(path, SETTINGS_LIMIT))
    except (OSError, ValueError, RecursionError):
        return []
    hooks = data.get("hooks") if isinstance(data, dict) else None
    out = []
    for event, groups in hooks.items() if isinstance(hooks, dict) else []:
        for group in groups if isinstance(groups, list) else []:
            entries = group.get("hooks") if isinstance(group, dict) else None
            for hook in entries if isinstance(entries, list) else []:
                command = hook.get("command") if isinstance(hook, dict) else None
                if isinstance(command, str) and hook.get("type", "command") == "command":
                    out.append((str(event), command))
    return out
