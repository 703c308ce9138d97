"""Doctor checks of the supervisord program that runs the daemon: the operator's settings file
it starts with, and what supervisord says of a program that is not running (issue 30).

A slip in ``.os/settings.env`` left the program in FATAL while doctor said "not running; start
it", and that command answered "spawn error". Now the settings file is read here as the
deployed program reads it (:mod:`wsd.daemon.runtime.settings_file`), each problem named with
its line; and a daemon that is down is shown with supervisord's state of it and the last line
of its log, where its own words about why are.
"""

from __future__ import annotations

import io
import os
import socket
import stat
import time
import xmlrpc.client
from dataclasses import dataclass

from wsd.daemon.ops import deploy
from wsd.daemon.ops.doctor.findings import Reporter
from wsd.daemon.runtime import settings_file
from wsd.daemon.runtime.heartbeat import State, pid_alive, read_status
from wsd.schema.layout import Layout

#: Problems of the settings file shown one by one (the rest counted).
MAX_SHOWN = 5
#: How long doctor waits for supervisord's answer.
SUPERVISOR_TIMEOUT = 5.0
#: How long doctor waits for a program supervisord is STARTING to be RUNNING or to fail
#: (the deployed program is RUNNING after startsecs=5).
STARTING_WAIT = 7.0
#: How much of the end of the program's log is read for its last line, and shown of it.
LOG_TAIL_BYTES = 8192
LOG_LINE_CHARS = 400


def settings(doctor: Reporter) -> None:
    """The settings file, read as ``wsd run --settings`` reads it: each problem with its line
    (FAIL: the daemon does not start with it), a WSD_* name it does not take (WARN); when the
    file stops the daemon from starting, ``doctor.settings_broken`` says so."""
    path = str(deploy.settings_path(doctor.layout))
    try:
        found, problems = settings_file.examine(path)
    except settings_file.SettingsError as exc:  # the file as a whole: a link, a FIFO, huge
        problems, found = [exc], []
    beat = read_status(doctor.layout) or {}
    if pid_alive(beat.get("pid")) and beat.get("state") != State.STOPPED:  # read before the edit
        then = "the running daemon started before; its next start (a restart, a deploy) fails"
    else:
        then = "the daemon does not start"
    for problem in problems[:MAX_SHOWN]:
        doctor.add("fail", "settings", f"{problem}; {then} until it is fixed")
    if len(problems) > MAX_SHOWN:
        doctor.add("fail", "settings", f"{len(problems) - MAX_SHOWN} more problem(s) in {path}")
    ignored = list(settings_file.ignored(found))
    for setting, why in ignored:
        doctor.add("warn", "settings", f"{path} line {setting.line}: {setting.name} is {why}")
    doctor.settings_broken = bool(problems)
    if problems:
        return
    if not os.path.lexists(path):
        doctor.add("ok", "settings", f"no {path} (the defaults and supervisord's environment)")
    elif not ignored:  # (beside a WARN of a name it does not take, "each one" was untrue)
        doctor.add("ok", "settings", f"{path}: {_settings(len(found))}, each one the daemon takes")


def _settings(count: int) -> str:
    return f"{count} setting" + ("" if count == 1 else "s")


@dataclass(frozen=True)
class Program:
    """What supervisord says of the program wsd."""

    state: str  # supervisord's state name: RUNNING, BACKOFF, FATAL, EXITED, STOPPED...
    description: str
    log: str  # its stdout log file ('' for none)


def program(layout: Layout) -> Program | str:
    """supervisord's view of the program wsd (the workspace's own supervisord when it has one,
    else the system's); a str says why there is none."""
    from supervisor import options  # only here: doctor of a workspace never deployed skips it

    conf = deploy.supervisord_conf(layout)
    client = options.ClientOptions()
    client.stdout = client.stderr = io.StringIO()  # its usage errors are said below instead
    client.exit = _refuse
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(SUPERVISOR_TIMEOUT)  # its transport takes no timeout of its own
    try:
        client.realize(args=["-c", str(conf)] if conf.exists() else [])
        proxy = client.getServerProxy()
        info = proxy.supervisor.getProcessInfo("wsd")
        # STARTING is either a first start or one more try of a program that exits as it
        # starts (BACKOFF, STARTING, BACKOFF...): wait the few seconds it takes to tell.
        settled = time.monotonic() + STARTING_WAIT
        while info.get("statename") == "STARTING" and time.monotonic() < settled:
            time.sleep(0.25)
            info = proxy.supervisor.getProcessInfo("wsd")
    except _Refused:
        return "no supervisord configuration found"
    except xmlrpc.client.Fault as exc:
        if "BAD_NAME" in str(exc.faultString):
            return "supervisord has no program wsd"
        return f"supervisord answered: {exc.faultString}"
    except (OSError, ValueError, xmlrpc.client.Error) as exc:
        return f"supervisord did not answer ({_reason(exc)})"
    finally:
        socket.setdefaulttimeout(previous)
    return Program(
        str(info.get("statename") or "UNKNOWN"),
        str(info.get("description") or info.get("spawnerr") or ""),
        str(info.get("stdout_logfile") or ""),
    )


class _Refused(Exception):
    """supervisorctl's option parser gave up (it would have exited)."""


def _refuse(code: object = 0) -> None:
    raise _Refused(code)


def _reason(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__


def last_log_line(path: str) -> str | None:
    """The last non-empty line of the log at ``path``, made printable and cut to a line's
    length; None when there is none (no file, a FIFO, empty)."""
    if not path:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        os.lseek(fd, max(0, size - LOG_TAIL_BYTES), os.SEEK_SET)
        tail = os.read(fd, LOG_TAIL_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    lines = [line for line in tail.decode("utf-8", "replace").splitlines() if line.strip()]
    if not lines:
        return None
    line = "".join(c if c.isprintable() else "?" for c in lines[-1].strip())
    return line if len(line) <= LOG_LINE_CHARS else line[: LOG_LINE_CHARS - 1] + "…"


#: How each state of a program that is not running is said, and whether its log is shown.
STATES = {
    "FATAL": ("supervisord gave up starting it (FATAL: {d})", True),
    "BACKOFF": ("it exits as it starts (BACKOFF: {d})", True),
    # Momentary under the deployed autorestart=true: it ran past startsecs, exited and is
    # started again (a start slower than startsecs on a loaded VM, then a fatal error).
    "EXITED": ("it exits after it starts (EXITED: {d})", True),
    "STOPPED": ("supervisord has it STOPPED", False),
    "STARTING": ("supervisord is starting it (STARTING)", True),
    "RUNNING": ("supervisord reports it RUNNING ({d}) but it writes no heartbeat", True),
}


def not_running(doctor: Reporter, detail: str, *, settings_broken: bool) -> None:
    """The FAIL of a daemon that is not running, with what supervisord says of it and, when
    it failed, the last line of its log; and what to do."""
    layout = doctor.layout
    deployed = (deploy.supervisord_conf(layout).parent / "conf.d" / "wsd.conf").exists()
    conf = deploy.supervisord_conf(layout)
    if not deployed or (conf.exists() and not deploy.supervisord_running(layout)):
        doctor.add("fail", "daemon", f"{detail}; {deploy.start_hint(layout)}")
        return
    found = program(layout)
    if isinstance(found, str):
        doctor.add("fail", "daemon", f"{detail}; {found}; {deploy.start_hint(layout)}")
        return
    words, show_log = STATES.get(found.state, (f"supervisord reports {found.state} ({{d}})", True))
    state = words.format(d=found.description or "no description")
    start = f"start it: `{deploy.supervisorctl(layout)} start wsd`"
    cause = (
        "fix the settings file (above)"
        if settings_broken
        else "see why in its log (below) and fix that"
    )
    if found.state == "BACKOFF":  # `start` answers "already started" while it retries
        then = f"{cause}: supervisord's next try starts it (once it gives up, FATAL: {start})"
    elif found.state == "FATAL":
        then = f"{cause}, then {start}"
    elif found.state == "EXITED":  # autorestart=true: supervisord starts it again itself
        then = f"{cause}: supervisord starts it again by itself"
    elif found.state == "STOPPED":
        then = f"fix the settings file (above), then {start}" if settings_broken else start
    else:
        then = cause
    doctor.add("fail", "daemon", f"{detail}: {state}; {then}")
    line = last_log_line(found.log) if show_log else None
    if line is not None:
        doctor.add("warn", "daemon log", f"the last line of {found.log}: {line}")
    elif show_log and found.log:
        doctor.add("warn", "daemon log", f"{found.log} has nothing to show")
