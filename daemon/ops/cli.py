"""``wsd``: the operator's command line. It only parses arguments and wires objects."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, NoReturn

from wsd import schema
from wsd.daemon.ops import cli_memory, cli_revisions
from wsd.daemon.ops.bootstrap import init_workspace
from wsd.daemon.runtime.config import Config, ConfigError
from wsd.schema.layout import DEFAULT_WORKSPACE, Layout


def _config(args: argparse.Namespace, env: Mapping[str, str]) -> Config:
    config = Config.from_env(env)
    root = args.workspace or config.workspace or DEFAULT_WORKSPACE
    return replace(config, workspace=os.path.abspath(root))


def cmd_init(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    layout = Layout(_config(args, env).workspace)
    changes = init_workspace(layout)
    for line in changes:
        print(line)
    print(f"workspace {layout.root} ready" + ("" if changes else " (nothing to change)"))
    return 0


def _worker(
    config: Config,
    stop: threading.Event,
    nudge: threading.Event | None = None,
    on_wake: Any = (),
) -> Any:
    from wsd.daemon.curation.bridge import BridgeClient
    from wsd.daemon.curation.worker import Worker
    from wsd.daemon.store.ledger import Store

    store = Store(Layout(config.workspace))
    return Worker(config, store, BridgeClient(config, stop), stop, nudge=nudge, on_wake=on_wake)


def cmd_run(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from wsd.daemon.runtime import instance, log, signals

    config = _config(args, env)
    config.validate_for_run()
    log.configure(config.log_format, secrets=(config.api_key, config.auth_token))
    stop, nudge = threading.Event(), threading.Event()
    on_signal = [stop.set]  # the worker's request_stop once it exists
    signals.install(lambda: on_signal[0]())
    try:  # held (open) until this process ends: the kernel releases it however we die
        if not instance.hold(Layout(config.workspace), env, stop, log.get_logger()):
            return 0  # stopped while the workspace was not ready yet
    except instance.AlreadyRunning as exc:
        print(f"wsd: {exc}", file=sys.stderr)
        return 3
    from wsd.daemon.workspace.canvas import CanvasTools
    from wsd.daemon.workspace.checks import CheckSettings
    from wsd.daemon.workspace.watcher import WatchSettings, workspace_watcher

    watcher = workspace_watcher(
        Layout(config.workspace),
        stop,
        WatchSettings(
            use_events=config.watch,
            force_polling=config.watch_polling,
            poll_delay_ms=config.watch_poll_ms,
            rescan_seconds=config.rescan_seconds,
            check_seconds=config.check_seconds,
        ),
        CheckSettings(unprocessed_seconds=config.unprocessed_seconds),
        CanvasTools(
            config.canvas_create_tool,
            config.canvas_update_tool,
            config.canvas_close_tool,
            config.canvas_folder,
        ),
        nudge=nudge,
    )
    worker = _worker(config, stop, nudge, on_wake=[watcher.wake])
    worker.status.update(supervised=env.get("SUPERVISOR_PROCESS_NAME") or None)
    on_signal[0] = worker.request_stop
    if stop.is_set():
        worker.request_stop()
    from wsd.daemon.curation.semantic_wiring import wire

    semantic = wire(config, worker)  # None without the [semantic] extra
    watcher.start()
    code = int(worker.run())
    if semantic is not None:
        semantic.stop()
    watcher.join(5)
    return code


def cmd_status(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from wsd.daemon.memory import erosion
    from wsd.daemon.runtime.heartbeat import pid_alive, read_status
    from wsd.daemon.store.ledger import Store
    from wsd.daemon.store.maintenance import Maintenance

    config = _config(args, env)
    layout = Layout(config.workspace)
    store = Store(layout)
    unready = Maintenance(store).unready()
    if unready:  # read-only: say what state the workspace is in, create nothing
        return _status_unready(layout, unready, read_status(layout), args.json)
    now = time.time()
    backlog = store.backlog()
    stats = store.stats()
    beat = read_status(layout)
    alive = False
    if beat and pid_alive(beat.get("pid")):
        alive = beat.get("state") != "stopped"
    report = {
        "workspace": layout.root,
        "daemon_running": alive,
        "state": beat.get("state") if beat else None,
        "heartbeat_age_s": round(now - beat["heartbeat_at"], 1)
        if beat and beat.get("heartbeat_at")
        else None,
        "backlog": backlog.pending,
        "oldest_pending_age_s": round(now - backlog.oldest_ts, 1) if backlog.oldest_ts else None,
        "flush_pending": backlog.flush_upto is not None,
        "last_batch": stats["last_batch"],
        "parked_batches": stats["parked"],
        "batches_done": stats["done"],
        "learnings": stats["learnings"],
        "open_actions": stats["open_actions"],
        "bridge_errors": (beat or {}).get("counters", {}).get("bridge_errors", 0),
        "next_attempt_at": (beat or {}).get("next_attempt_at"),
        "last_error": (beat or {}).get("last_error"),
        "md_write_failed": (beat or {}).get("md_write_failed"),
        "tokens": {
            "input": stats["input_tokens"],
            "output": stats["output_tokens"],
            "cache_read": stats["cache_read_tokens"],
        },
        "cost_usd": round(float(stats["cost_usd"]), 6),
        "spent_today_usd": round(store.spent_since(now // 86400 * 86400), 6),
        "daily_budget_usd": config.daily_budget_usd,
        "budget_paused": (beat or {}).get("budget"),
        "md_removals_waiting": {
            e.file: e.to_json() for e in erosion.waiting_files(store, now, config.erosion)
        }
        or None,
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            print(f"{key:>22}: {value}")
    return 0


def _status_unready(
    layout: Layout, unready: Mapping[str, str], beat: Mapping[str, object] | None, as_json: bool
) -> int:
    """``wsd status`` on a workspace whose databases are not there yet (or were deleted)."""
    report = {
        "workspace": layout.root,
        "databases": {f"{kind}.db": why for kind, why in unready.items()},
        "daemon_state": beat.get("state") if beat else None,
        "what_next": (
            "the daemon creates a missing database on its next start (or `wsd init` now);"
            " a deleted memory.db is re-curated from the transcript by `wsd rebuild`"
        ),
    }
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            print(f"{key:>22}: {value}")
    return 1


def cmd_flush(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from wsd.daemon.runtime.heartbeat import daemon_running
    from wsd.daemon.store.ledger import Store

    layout = Layout(_config(args, env).workspace)
    store = Store(layout)
    store.migrate()
    flush_id = store.request_flush("cli", time.time())
    print(f"flush requested (#{flush_id})")
    # Nobody to wait for: say so now (after a short grace, for a daemon just starting).
    grace = time.monotonic() + min(args.wait, 3.0)
    while args.wait and not daemon_running(layout) and time.monotonic() < grace:
        time.sleep(0.2)
    if args.wait and not daemon_running(layout):
        print(
            f"no daemon is running in {layout.root}: the flush is curated when it starts",
            file=sys.stderr,
        )
        return 1
    deadline = time.monotonic() + args.wait
    while args.wait and time.monotonic() < deadline:
        handled, error = store.flush_outcome(flush_id)
        if handled and error:
            print(f"flush done, but {error}", file=sys.stderr)
            return 1
        if handled:
            print("flush done")
            return 0
        time.sleep(0.2)
    if args.wait:
        print(f"flush not done yet: {_why_waiting(layout)}", file=sys.stderr)
        return 1
    return 0


def _why_waiting(layout: Layout) -> str:
    """What the daemon's heartbeat says it is doing instead of curating (``flush --wait``)."""
    from wsd.daemon.runtime.heartbeat import daemon_running, read_status

    if not daemon_running(layout):
        return f"no daemon is running in {layout.root} (it curates the flush when it starts)"
    beat = read_status(layout) or {}
    state = beat.get("state")
    if state == "backoff":
        return (
            f"the Bridge is failing ({beat.get('last_error') or 'no answer'}); the daemon"
            f" tries again at {_iso(beat.get('next_attempt_at'))}"
        )
    budget = beat.get("budget")
    if state == "budget" or budget:
        b = budget if isinstance(budget, dict) else {}
        return (
            f"the daily budget is spent (${b.get('spent_usd', '?')} of ${b.get('cap_usd', '?')},"
            f" WSD_DAILY_BUDGET_USD); curation resumes at {_iso(b.get('resumes_at'))}"
        )
    if state == "paused":
        return "a wsd rebuild holds the memory; the daemon curates once it ends"
    return f"the daemon is {state or 'starting'}; still working through the backlog"


def _iso(ts: object) -> str:
    """An epoch time as local ISO 8601 with its offset (``?`` when there is none)."""
    if not isinstance(ts, int | float) or isinstance(ts, bool):
        return "?"
    from datetime import datetime

    return datetime.fromtimestamp(float(ts)).astimezone().isoformat(timespec="seconds")


def cmd_retry(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from wsd.daemon.runtime import log

    config = _config(args, env)
    config.validate_for_run()
    log.configure(config.log_format, stream=sys.stderr, secrets=(config.api_key, config.auth_token))
    worker = _worker(config, threading.Event())
    worker.start()
    done = worker.retry_parked()
    parked = sum(c.parked for c in done)
    print(f"retried parked batches: {len(done) - parked} curated, {parked} parked again")
    return 0


def cmd_bootstrap(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from pathlib import Path

    from wsd.daemon.ops.deploy import ASSETS, DeployError, bootstrap

    layout = Layout(_config(args, env).workspace)
    try:
        changes = bootstrap(
            layout,
            version=args.version,
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
        f"bootstrap of {layout.root} at version {args.version}: "
        + (f"{len(changes)} change(s)" if changes else "nothing to change")
    )
    return 0


def cmd_doctor(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from wsd.daemon.ops.doctor import Doctor

    config = _config(args, env)
    findings = Doctor(
        Layout(config.workspace), config.bridge_url, fix=args.fix, erosion_fraction=config.erosion
    ).run()
    for finding in findings:
        print(finding.line())
    failed = [f for f in findings if f.level == "fail"]
    print(f"{len(failed)} problem(s)" + ("" if args.fix or not failed else "; try --fix"))
    return 1 if failed else 0


def cmd_backup(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from wsd.daemon.ops.backup import backup

    layout = Layout(_config(args, env).workspace)
    dest = os.path.abspath(args.dest)
    manifest = backup(layout, dest)
    print(
        f"backed up {layout.root} to {dest}: databases {manifest['pages']},"
        f" files {manifest['md_files']}"
    )
    for name, why in manifest["skipped"].items():
        print(f"skipped {name}: {why}", file=sys.stderr)
    return 0


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
    sub.add_parser("run", help="run the daemon in the foreground (for supervisord)")
    status = sub.add_parser("status", help="backlog, last batch, errors, heartbeat")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    flush = sub.add_parser("flush", help="ask the daemon to curate everything pending now")
    flush.add_argument(
        "--wait",
        type=cli_revisions.seconds(86400),
        default=0.0,
        metavar="SECONDS",
        help="wait up to SECONDS for the flush to complete",
    )
    sub.add_parser("retry", help="re-run parked (failed) batches")
    cli_memory.register(sub)
    boot = sub.add_parser("bootstrap", help="deploy: layout, databases, templates, supervisord")
    boot.add_argument("--version", required=True, help="the deployed version (.os/VERSION)")
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
    backup = sub.add_parser("backup", help="consistent online copy of databases and md files")
    backup.add_argument("dest", help="destination folder (created 0700)")
    return parser


COMMANDS = {
    "init": cmd_init,
    "run": cmd_run,
    "status": cmd_status,
    "flush": cmd_flush,
    "retry": cmd_retry,
    "bootstrap": cmd_bootstrap,
    "doctor": cmd_doctor,
    "backup": cmd_backup,
    **cli_memory.HANDLERS,
}


#: Commands that make a workspace; every other refuses to run outside one.
CREATING_COMMANDS = frozenset({"init", "bootstrap"})


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Entry point of the ``wsd`` console script."""
    args = build_parser().parse_args(argv)
    env = os.environ if env is None else env
    try:
        if args.command not in CREATING_COMMANDS:
            problem = Layout(_config(args, env).workspace).problem()
            if problem is not None:  # refused, and nothing created (a mistyped path stays so)
                print(f"wsd {args.command}: {problem}", file=sys.stderr)
                hook = args.command == "boot-context" and getattr(args, "hook", False)
                return 0 if hook else 2  # a hook never fails the agent's start
        return COMMANDS[args.command](args, env)
    except (ConfigError, schema.SchemaError) as exc:
        print(f"wsd: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"wsd: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
