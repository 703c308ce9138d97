"""``wsd restore --from-replica [--at TIME]``: both databases back from litestream's replica.

The replica's settings are the deployed program's: ``.os/settings.env`` on top of this
shell's environment (as ``wsd run --settings`` reads them), so an operator restores with the
credentials the daemon replicates with, without typing them.

Exit codes: 0 restored; 1 the restore failed or was refused (nothing replaced); 2 bad usage.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from wsd.daemon.ops import cli_status
from wsd.daemon.ops.deploy import start_hint
from wsd.daemon.runtime.config import Config, ConfigError
from wsd.schema.layout import Layout


def register(subparsers: Any) -> None:
    restore = subparsers.add_parser(
        "restore", help="restore both databases from the replica (daemon stopped)"
    )
    restore.add_argument(
        "--from-replica",
        action="store_true",
        required=True,
        help="restore from WSD_REPLICA_URL (litestream); the only source there is",
    )
    restore.add_argument(
        "--at",
        metavar="TIME",
        help="the state as of TIME (ISO 8601, UTC unless it says): within the retention",
    )


def _settings(args: argparse.Namespace, env: Mapping[str, str]) -> Config:
    from wsd.daemon.ops import deploy
    from wsd.daemon.runtime import settings_file

    shell = cli_status.config_of(args, env)
    path = str(deploy.settings_path(Layout(shell.workspace)))
    merged = settings_file.environment(path, env, shell.workspace) if os.path.exists(path) else env
    return replace(Config.from_env(merged), workspace=shell.workspace)


def cmd_restore(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from wsd.daemon.replica import litestream
    from wsd.daemon.replica.restore import RestoreRefused, parse_time, restore
    from wsd.daemon.runtime import settings_file

    try:
        config = _settings(args, env)
        at = parse_time(args.at) if args.at else None
        done = restore(
            config,
            Layout(config.workspace),
            at,
            env,
            say=lambda line: print(line, file=sys.stderr),
        )
    except (RestoreRefused, litestream.Missing, ConfigError, settings_file.SettingsError) as exc:
        print(f"wsd restore: {exc}", file=sys.stderr)
        return 1
    print(
        f"restored transcript.db and memory.db from {litestream.shown(config.replica_url)}"
        + (f" as of {done.at}" if done.at else " (newest)")
        + f": {done.turns} turn(s), {done.pending} to curate (the daemon curates them once)"
    )
    if done.replaced:
        print(f"what was there before is kept in {done.replaced} (a forget reaches it)")
    # A stand-alone deploy's supervisorctl needs its -c (and after a kill -9, supervisord
    # itself must start first): the same words doctor gives (issue 45).
    print(f"{start_hint(Layout(config.workspace))}; wsd doctor checks the result")
    return 0


HANDLERS = {"restore": cmd_restore}
