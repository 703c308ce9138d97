"""``wsd``: the operator's command line. It only parses arguments and wires objects."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NoReturn, TextIO

import apsw

from wsd import schema
from wsd.daemon.ops import arguments, cli_memory, cli_replica, cli_status
from wsd.daemon.ops.bootstrap import init_workspace
from wsd.daemon.ops.cli_memory import no_memory
from wsd.daemon.runtime.config import ConfigError
from wsd.schema.errors import describe
from wsd.schema.layout import DEFAULT_WORKSPACE, Layout

_config = cli_status.config_of  # one reading of --workspace and the shell's settings


def cmd_init(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    layout = Layout(_config(args, env).workspace)
    changes = init_workspace(layout)
    for line in changes:
        print(line)
    print(f"workspace {layout.root} ready" + ("" if changes else " (nothing to change)"))
    return 0


def cmd_run(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from wsd.daemon.runtime import instance, log, signals

    if args.settings is not None:
        _exec_with_settings(args, env)
    config = _config(args, env)
    config.validate_for_run()
    log.configure(config.log_format, secrets=(config.api_key, config.auth_token))
    stop = threading.Event()
    on_signal = [stop.set]  # the worker's request_stop once it exists
    signals.install(lambda: on_signal[0]())
    try:  # held (open) until this process ends: the kernel releases it however we die
        if not instance.hold(Layout(config.workspace), env, stop, log.get_logger()):
            return 0  # stopped while the workspace was not ready yet
    except instance.AlreadyRunning as exc:
        print(f"wsd: {exc}", file=sys.stderr)
        return 3
    from wsd.daemon.ops import wiring
    from wsd.daemon.runtime.config import renamed_in
    from wsd.daemon.store import Store

    daemon = wiring.build_daemon(config, Store(Layout(config.workspace)), stop, env)
    worker = daemon.worker
    for old, new in renamed_in(env):  # still read; the operator's file should say the new
        worker.log.warning("setting_renamed", old=old, new=new)
    worker.status.update(supervised=env.get("SUPERVISOR_PROCESS_NAME") or None)
    on_signal[0] = worker.request_stop
    if stop.is_set():
        worker.request_stop()
    return wiring.serve(daemon)


def _exec_with_settings(args: argparse.Namespace, env: Mapping[str, str]) -> NoReturn:
    """``wsd run --settings FILE`` (the deployed program): read the operator's settings file,
    then become ``wsd run`` with them in its environment. A problem in the file stops it here
    with one line naming the file, the line and what is wrong (raised: exit 2), which
    supervisord keeps in the program's log. The settings are in the environment the process
    starts with, not added to it later, so ``/proc/PID/environ`` holds them (``wsd retry`` and
    ``wsd rebuild`` read the daemon's settings there) and the memory-shedding re-exec keeps
    them without reading the file again."""
    from wsd.daemon.runtime import settings_file

    workspace = os.path.abspath(args.workspace or env.get("WSD_WORKSPACE") or DEFAULT_WORKSPACE)
    merged = settings_file.environment(args.settings, env, workspace)
    # The same command without --settings (which `run` takes unabbreviated only).
    argv, given = [sys.executable], iter(sys.orig_argv[1:])
    for arg in given:
        if arg == "--settings":
            next(given, None)  # its FILE
        elif not arg.startswith("--settings="):
            argv.append(arg)
    os.execve(sys.executable, argv, merged)


def cmd_retry(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from wsd.daemon.ops.deployed import deployed_env
    from wsd.daemon.runtime import log
    from wsd.daemon.store import Store

    layout = Layout(_config(args, env).workspace)
    if no_memory("wsd retry", layout):
        return 1
    if not Store(layout).ledger.stats()["parked"]:  # no Bridge needed to say so
        print("nothing parked: no batch to retry")
        return 0
    config = _config(args, deployed_env(layout, env))  # the daemon's Bridge and token
    config.validate_for_run()
    # Logged as this shell wants it (the daemon's settings said JSON: a new user got raw
    # JSON lines on a terminal).
    shell_format = _config(args, env).log_format
    log.configure(shell_format, stream=sys.stderr, secrets=(config.api_key, config.auth_token))
    from wsd.daemon.ops import wiring

    store = Store(layout)
    store.migrate()
    after = wiring.build_after_commit(config, store, threading.Event())
    after.md.repair()  # the curator sees the files as a daemon's start would leave them
    done = after.retry_parked()
    again = [c for c in done if c.parked]
    print(f"retried parked batches: {len(done) - len(again)} curated, {len(again)} parked again")
    if again:  # not done: say why, and exit 1 (it exited 0 with every batch parked again)
        print(f"still failing: {again[0].record.error}", file=sys.stderr)
        return 1
    return 0


def cmd_bootstrap(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from pathlib import Path

    from wsd.daemon.ops.deploy import (
        ASSETS,
        DeployError,
        bootstrap,
        include_pattern,
        supervisord_conf,
        supervisord_running,
    )
    from wsd.daemon.ops.deploy_paths import shell_word
    from wsd.daemon.runtime.fsio import read_small
    from wsd.daemon.runtime.heartbeat import package_version

    layout = Layout(_config(args, env).workspace)
    # Bare `wsd bootstrap` keeps the deployed version (a new one restarts the daemon).
    version = args.version or (read_small(layout.version_file) or "").strip() or package_version()
    try:
        changes = bootstrap(
            layout,
            version=version,
            templates=Path(args.templates) if args.templates else ASSETS / "templates",
            supervisor=Path(args.supervisor) if args.supervisor else ASSETS / "supervisor",
            plugin=Path(args.plugin) if args.plugin else ASSETS / "claude-plugin",
            venv=Path(args.venv),
            standalone=args.standalone,
        )
    except DeployError as exc:
        print(f"wsd bootstrap: {exc}", file=sys.stderr)
        return 2
    for line in changes:
        print(line)
    print(
        f"bootstrap of {layout.root} at version {version}: "
        + (f"{len(changes)} change(s)" if changes else "nothing to change")
    )
    # The operator's shell has none of these commands on its PATH: say how to reach them,
    # and the stand-alone supervisord's conf whenever one is deployed (with or without
    # --standalone this time: a bare `wsd bootstrap` keeps what is there). Every path is
    # shell-quoted: the lines are pasted as they are (issue 30: a workspace with a space).
    bin_dir = os.path.join(os.path.abspath(args.venv), "bin")
    lines = []
    if ":" in bin_dir:  # PATH cannot hold it: each command named by its path
        wsd, ctl, sup = (shell_word(os.path.join(bin_dir, n)) for n in SUPERVISOR_COMMANDS)
    else:
        wsd, ctl, sup = SUPERVISOR_COMMANDS
        lines.append(f'export PATH={shell_word(bin_dir)}:"$PATH"')
    conf = supervisord_conf(layout)
    if conf.exists():
        ctl = f"{ctl} -c {shell_word(str(conf))}"
        if not supervisord_running(layout):
            lines.append(
                f"{sup} -c {shell_word(str(conf))}   # starts wsd; with ANTHROPIC_BASE_URL and"
                " WSD_BRIDGE_TOKEN in its environment"
            )
    lines += [f"{wsd} --workspace {shell_word(layout.root)} status", f"{ctl} status wsd"]
    print("operator commands (wsd, supervisord and supervisorctl live in the daemon's venv):")
    for line in lines:
        print(f"  {line}")
    if not conf.exists():  # under the system's supervisord: how it finds the program
        print(
            f"the system's supervisord: add {include_pattern(layout)} to the files = of its"
            f" [include], then run `{ctl} update`"
        )
    return 0


def cmd_doctor(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Judged from the daemon's own state: its heartbeat, its ledger and the settings it
    reports (this shell's only where the daemon has reported none)."""
    from wsd.daemon.ops.doctor import Doctor
    from wsd.daemon.replica import position
    from wsd.daemon.runtime.heartbeat import read_status

    config = _config(args, env)
    layout = Layout(config.workspace)
    reported = (read_status(layout) or {}).get("settings")
    deployed = reported if isinstance(reported, dict) else {}
    bridge_url = deployed.get("bridge_url") or config.bridge_url
    erosion = deployed.get("erosion", config.erosion)
    limit = deployed.get("economy_wait_limit_seconds", config.economy_wait_limit_seconds)
    findings = Doctor(
        layout,
        bridge_url if isinstance(bridge_url, str) else None,
        fix=args.fix,
        erosion_fraction=float(erosion) if isinstance(erosion, int | float) else config.erosion,
        curation=str(deployed.get("curation", config.curation)),
        batch_wait_limit=float(limit) if isinstance(limit, int | float) else None,
        replica=position.settings_of(deployed or config.reported()),
        home=env.get("HOME"),
    ).run()
    failed = [f for f in findings if f.level == "fail"]
    if args.json:
        from wsd.daemon.ops.doctor import DOCTOR_SCHEMA

        report = {"schema": DOCTOR_SCHEMA, "problems": len(failed)}
        print(json.dumps(report | {"findings": [f.to_json() for f in findings]}))
        return 1 if failed else 0
    for finding in findings:
        print(finding.line())
    # "try --fix" only when it would repair one of the failures (not a Bridge, not a daemon).
    fixable = not args.fix and any(f.fixable for f in failed)
    print(f"{len(failed)} problem(s)" + ("; try --fix" if fixable else ""))
    return 1 if failed else 0


def cmd_backup(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from wsd.daemon.ops.backup import BackupRefused, backup
    from wsd.daemon.runtime.pause import PauseRefused

    layout = Layout(_config(args, env).workspace)
    dest = os.path.abspath(args.dest)
    try:
        manifest = backup(layout, dest)
    except (BackupRefused, PauseRefused) as exc:
        print(f"wsd backup: {exc}", file=sys.stderr)
        return 2
    databases = ", ".join(f"{kind}.db ({pages} pages)" for kind, pages in manifest["pages"].items())
    files = manifest["md_files"]
    print(
        f"backed up {layout.root} to {dest}: {databases};"
        f" {len(files)} md file(s)" + (f" ({', '.join(files)})" if files else "")
    )
    for name, why in manifest["skipped"].items():
        print(f"skipped {name}: {why}", file=sys.stderr)
    return 0


#: The operator's commands bootstrap's hints name (in this order).
SUPERVISOR_COMMANDS = ("wsd", "supervisorctl", "supervisord")


class Parser(argparse.ArgumentParser):
    """argparse, with a usage error said in one line (exit 2), pointing at ``--help``."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="wsd", description="Workspace Daemon operator tool")
    parser.add_argument(
        "--workspace", help=f"workspace root (default: $WSD_WORKSPACE or {DEFAULT_WORKSPACE})"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("init", help="create the .os/ layout and migrate both databases")
    run = sub.add_parser(
        "run", help="run the daemon in the foreground (for supervisord)", allow_abbrev=False
    )
    run.add_argument(
        "--settings",
        metavar="FILE",
        help="first read NAME=value lines from FILE (.os/settings.env: the deployed program)",
    )
    status = sub.add_parser("status", help="backlog, last batch, errors, heartbeat")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    metrics = sub.add_parser("metrics", help="OpenMetrics text: backlog, batches, spend, sizes")
    metrics.add_argument(
        "--format",
        choices=("openmetrics", "prometheus"),
        default="openmetrics",
        help="openmetrics (default) or the Prometheus text format (node_exporter's textfile)",
    )
    flush = sub.add_parser("flush", help="ask the daemon to curate everything pending now")
    arguments.add_wait(flush, 0.0, "wait up to SECONDS for the flush to complete")
    sub.add_parser("retry", help="re-run parked (failed) batches")
    cli_memory.register(sub)
    boot = sub.add_parser("bootstrap", help="deploy: layout, databases, templates, supervisord")
    boot.add_argument(
        "--version",
        help="the deployed version (.os/VERSION; default: the one there, else the package's)",
    )
    boot.add_argument("--templates", help="folder with soul.md and os.md (default: packaged)")
    boot.add_argument("--supervisor", help="folder with the *.conf.in files (default: packaged)")
    boot.add_argument("--plugin", help="the Claude Code plugin to render (default: packaged)")
    boot.add_argument("--venv", default=sys.prefix, help="the virtual environment to run")
    boot.add_argument(
        "--standalone",
        action="store_true",
        help="also write a supervisord.conf for a Sprite with nothing else",
    )
    doctor = sub.add_parser("doctor", help="check health; non-zero exit on a problem")
    doctor.add_argument("--fix", action="store_true", help="repair what is safe to repair")
    doctor.add_argument("--json", action="store_true", help="machine-readable findings")
    backup = sub.add_parser("backup", help="consistent online copy of databases and md files")
    backup.add_argument("dest", help="destination folder (created 0700)")
    cli_replica.register(sub)
    return parser


COMMANDS = {
    "init": cmd_init,
    "run": cmd_run,
    "status": cli_status.cmd_status,
    "metrics": cli_status.cmd_metrics,
    "flush": cli_status.cmd_flush,
    "retry": cmd_retry,
    "bootstrap": cmd_bootstrap,
    "doctor": cmd_doctor,
    "backup": cmd_backup,
    **cli_memory.HANDLERS,
    **cli_replica.HANDLERS,
}


#: Commands that make a workspace; every other refuses to run outside one.
CREATING_COMMANDS = frozenset({"init", "bootstrap"})


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Entry point of the ``wsd`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.workspace is not None and not args.workspace.strip():
        # `--workspace "$WS"` with WS unset: not the default workspace, unasked for.
        parser.error("--workspace was given an empty path")
    env = os.environ if env is None else env
    # `wsd status | head -1`: the reader has what it wanted. Not an error for a CLI, and not
    # a reason to stop half way: what is left to print goes nowhere, the command finishes
    # and exits as it would have (`wsd flush | true` still says no daemon runs, exit 1).
    stdout, sys.stdout = sys.stdout, PipeSafe(sys.stdout)
    try:
        return _dispatch(args, env)
    except BrokenPipeError:  # written past PipeSafe (a raw buffer): the reader went away
        PipeSafe(stdout).discard()
        return 0
    except KeyboardInterrupt:
        print(f"wsd {args.command}: interrupted", file=sys.stderr)
        return 130
    except (ConfigError, schema.SchemaError) as exc:
        print(f"wsd {args.command}: {describe(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"wsd {args.command}: {describe(exc)}", file=sys.stderr)
        return 1
    except apsw.Error as exc:  # a damaged or locked database: said, never a traceback
        print(
            f"wsd {args.command}: a database could not be used ({describe(exc)});"
            " wsd doctor says which, and what to do",
            file=sys.stderr,
        )
        return 1
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        sys.stdout = stdout


class PipeSafe:
    """A text stream that a reader gone away cannot break: the first write or flush that
    meets a closed pipe points the descriptor at /dev/null (so the interpreter's own last
    flush stays quiet too), and that write and every later one go nowhere."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self.discard()
            return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self.discard()

    def discard(self) -> None:
        """From now on, nothing written reaches the descriptor (it is /dev/null)."""
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _dispatch(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    layout = Layout(_config(args, env).workspace)
    if args.command in CREATING_COMMANDS:
        outer = None if os.path.lexists(layout.os_dir) else layout.enclosing()
        if outer is not None:  # a workspace inside a workspace: its .os/ in the other's space
            print(f"wsd {args.command}: {layout.inside(outer)}", file=sys.stderr)
            return 2
    else:
        problem = layout.problem()
        if problem is not None:  # refused, and nothing created (a mistyped path stays so)
            print(f"wsd {args.command}: {problem}", file=sys.stderr)
            hook = args.command == "boot-context" and getattr(args, "hook", False)
            return 0 if hook else 2  # a hook never fails the agent's start
    return COMMANDS[args.command](args, env)


if __name__ == "__main__":
    sys.exit(main())
