"""``wsd``: the operator's command line. It only parses arguments and wires objects."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence

import schema
from daemon.bootstrap import init_workspace
from schema.layout import DEFAULT_WORKSPACE, Layout


def _workspace(args: argparse.Namespace, env: Mapping[str, str]) -> Layout:
    return Layout(os.path.abspath(args.workspace or env.get("WSD_WORKSPACE") or DEFAULT_WORKSPACE))


def cmd_init(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    layout = _workspace(args, env)
    changes = init_workspace(layout)
    for line in changes:
        print(line)
    print(f"workspace {layout.root} ready" + ("" if changes else " (nothing to change)"))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="wsd", description="Workspace Daemon operator tool")
    parser.add_argument(
        "--workspace", help=f"workspace root (default: $WSD_WORKSPACE or {DEFAULT_WORKSPACE})"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("init", help="create the .os/ layout and migrate both databases")
    return parser


COMMANDS = {"init": cmd_init}


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Entry point of the ``wsd`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args, os.environ if env is None else env)
    except schema.SchemaError as exc:
        print(f"wsd: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"wsd: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
