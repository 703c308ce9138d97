"""The memory subcommands of ``wsd``: boot-context, search, import, pending, rebuild.

``register(subparsers)`` adds them to the ``wsd`` parser and :data:`HANDLERS` maps each name
to its handler ``(args, env) -> exit code``, the convention of daemon/cli.py.

Exit codes: 0 done (also "no results"); 1 partly done or nothing to act on (bad import lines,
no such open action or turn, a rebuild that could not finish); 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from wsd.daemon.ops import arguments
from wsd.schema.layout import DEFAULT_WORKSPACE, Layout

Handler = Callable[[argparse.Namespace, Mapping[str, str]], int]
#: search_memory's own cap (wsd.daemon.memory.search.core.MAX_LIMIT; a test holds them equal).
SEARCH_MAX_LIMIT = 100


def _layout(args: argparse.Namespace, env: Mapping[str, str]) -> Layout:
    root = getattr(args, "workspace", None) or env.get("WSD_WORKSPACE") or DEFAULT_WORKSPACE
    return Layout(os.path.abspath(root))


def cmd_boot_context(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Print the boot context; ``--hook`` prints the SessionStart hook JSON and never fails."""
    from wsd.daemon.memory.boot import Tools, hook_output, load_memory

    layout = _layout(args, env)
    tools = Tools.mcp(args.tool_prefix) if args.tool_prefix else Tools.shell(layout.root)
    if not args.hook:
        unreadable: list[str] = []
        print(load_memory(layout, tools=tools, unreadable=unreadable))
        return 1 if unreadable else 0  # said on stderr, file by file
    try:
        if sys.stdin is not None and not sys.stdin.isatty():
            sys.stdin.read()  # the hook event; drained so Claude Code's write never blocks
        print(hook_output(layout, tools))
    except Exception as exc:  # a hook must never break the start
        print(f"wsd boot-context: {type(exc).__name__}: {exc}", file=sys.stderr)
    return 0


def no_memory(command: str, layout: Layout) -> bool:
    """Whether memory.db cannot be read yet (said on stderr); read only, creates nothing."""
    from wsd.daemon.store import Store, remedy

    why = Store(layout).maintenance.unready().get("memory")
    if why is not None:
        print(
            f"{command}: memory.db {why}: {remedy('memory', why, layout.memory_dir)}",
            file=sys.stderr,
        )
    return why is not None


def cmd_search(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``wsd search QUERY [--limit N] [--json] [--type T] [--since S]``, or ``wsd search
    --turn T<n> [--json]``: the turn a hit names, as the agent's tool opens it."""
    from wsd.daemon.memory.search.core import format_hits, holds_words, search_memory
    from wsd.daemon.memory.search.turn import format_turn, open_turn
    from wsd.daemon.runtime.config import Config, ConfigError

    try:
        wait: float | None = Config.from_env(env).semantic_timeout
    except ConfigError:
        wait = None  # a bad setting elsewhere must not stop a search
    layout = _layout(args, env)
    if no_memory("wsd search", layout):  # not "nothing matches": there is no memory yet
        return 1
    if args.turn is not None:
        if args.query:
            print("wsd search: give a query or --turn, not both", file=sys.stderr)
            return 2
        found = open_turn(layout, args.turn)
        if found is None:
            print(f"wsd search: no turn {args.turn} in memory", file=sys.stderr)
            return 1
        print(
            json.dumps(found.to_json(), ensure_ascii=False, indent=1)
            if args.json
            else format_turn(found)
        )
        return 0
    if not holds_words(" ".join(args.query)):  # "Nothing matches" would blame the memory
        print(
            'wsd search: give a question or keywords (wsd search "tea"), or --turn T<n>',
            file=sys.stderr,
        )
        return 2
    try:
        hits = search_memory(
            layout,
            " ".join(args.query),
            limit=args.limit,
            type=args.type,
            since=args.since,
            semantic_timeout=wait,
        )
    except ValueError as exc:
        print(f"wsd search: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([h.to_json() for h in hits], ensure_ascii=False, indent=1))
    else:
        print(format_hits(hits))
    return 0


def cmd_import(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``wsd import PATH`` (see ops/cli_transfer.py)."""
    from wsd.daemon.ops import cli_transfer

    return cli_transfer.cmd_import(args, env, _layout(args, env))


def cmd_export(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``wsd export DEST`` (see ops/cli_transfer.py)."""
    from wsd.daemon.ops import cli_transfer

    return cli_transfer.cmd_export(args, env, _layout(args, env))


def cmd_pending(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``wsd pending [list|complete ID|dismiss ID] [--all] [--json]``."""
    from wsd.daemon.store import Store, priority_name

    layout = _layout(args, env)
    if no_memory("wsd pending", layout):
        return 1
    store = Store(layout)
    if args.verb == "list":
        if args.id is not None:
            print("wsd pending: list takes no id", file=sys.stderr)
            return 2
        actions = store.actions.list_actions(include_closed=args.all)
        if args.json:
            print(json.dumps(actions, ensure_ascii=False, indent=1))
        elif not actions:
            print("No pending actions.")
        for action in [] if args.json else actions:
            closed = "" if action["status"] == "pending" else f" ({action['status']})"
            level = priority_name(action["priority"])
            print(f"#{action['id']} [{level}]{closed} {action['content']}")
        return 0
    if args.id is None:
        print(f"wsd pending: {args.verb} needs an action id", file=sys.stderr)
        return 2
    status = "completed" if args.verb == "complete" else "dismissed"
    changed = store.actions.set_action_status(args.id, status, time.time())
    result: dict[str, Any] = {"id": args.id, "status": status, "changed": changed}
    if args.json:
        print(json.dumps(result))
    elif changed:
        print(f"#{args.id} marked {status}")
    else:
        print(f"wsd pending: no open action #{args.id}", file=sys.stderr)
    return 0 if changed else 1


def cmd_rebuild(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``wsd rebuild``: re-curate everything into a fresh memory.db, progress on stderr."""
    from wsd.daemon.curation.rebuild.rebuild import RebuildError, rebuild
    from wsd.daemon.ops.deployed import deployed_env
    from wsd.daemon.runtime.config import Config

    layout = _layout(args, env)
    config = Config.from_env(deployed_env(layout, env))  # the daemon's Bridge and token
    config = replace(config, workspace=str(layout.root))
    config.validate_for_run()
    try:
        report = rebuild(config, wait_seconds=args.wait)
    except RebuildError as exc:
        print(f"wsd rebuild: {exc}", file=sys.stderr)
        return 1
    print(
        f"rebuilt memory from {report.turns} turn(s) in {report.batches} batch(es):"
        f" {report.learnings} learning(s), {report.parked} parked,"
        f" files written: {', '.join(report.files) or 'none'};"
        f" removed: {', '.join(report.removed_files) or 'none'} ({report.seconds:.1f}s)"
        + (
            f"; {report.erased_turns} turn(s) erased (a forget or the transcript retention)"
            " could not be read again"
            if report.erased_turns
            else ""
        )
    )
    return 0


def register(subparsers: Any) -> None:
    """Add the memory subcommands to ``wsd``'s subparsers."""
    from wsd.daemon.ops import cli_revisions

    cli_revisions.register(subparsers)
    subparsers.add_parser(
        "mcp", help="serve search_memory and resolve_action as a stdio MCP server (Claude Code)"
    )
    from wsd.daemon.ops import cli_forget, cli_transfer

    cli_forget.register(subparsers)
    cli_transfer.register(subparsers)
    boot = subparsers.add_parser("boot-context", help="print what a new session starts knowing")
    boot.add_argument(
        "--hook",
        action="store_true",
        help="print Claude Code SessionStart hook JSON (additionalContext)",
    )
    boot.add_argument(
        "--tool-prefix",
        metavar="PREFIX",
        help="name the memory tools as the host does (e.g. mcp__memory__); without it the"
        " context tells the agent to run wsd in a shell, by absolute path",
    )
    search = subparsers.add_parser("search", help="search learnings and past turns")
    search.add_argument("query", nargs="*", help="a question or keywords")
    search.add_argument(
        "--limit",
        type=arguments.whole("a number of results", 1, SEARCH_MAX_LIMIT, prefixes=""),
        default=10,
        help=f"how many results (default 10, at most {SEARCH_MAX_LIMIT})",
    )
    search.add_argument("--type", help="only this learning type, or 'turn'")
    search.add_argument("--since", help="an ISO date/time or an age like 7d")
    search.add_argument(
        "--turn",
        type=turn_ref,
        help="print this turn (as a hit names it, e.g. T88, or N12 for one not indexed yet)"
        " instead of searching",
    )
    search.add_argument("--json", action="store_true", help="machine-readable output")
    pending = subparsers.add_parser("pending", help="list, complete or dismiss pending actions")
    pending.add_argument("verb", nargs="?", default="list", choices=("list", "complete", "dismiss"))
    pending.add_argument(
        "id",
        nargs="?",
        type=arguments.whole("an action id"),
        help="the action id (complete, dismiss)",
    )
    pending.add_argument("--all", action="store_true", help="list closed actions too")
    pending.add_argument("--json", action="store_true", help="machine-readable output")
    rebuild = subparsers.add_parser("rebuild", help="re-curate all turns into a fresh memory")
    arguments.add_wait(
        rebuild, 120.0, "how long to wait for a running daemon to pause (default 120)"
    )


def turn_ref(text: str) -> str:
    """An argparse type: a turn id as a hit names it (``T88``, ``88``; ``N12`` a turn not
    indexed yet), as ``T88`` or ``N12``."""

    number = arguments.whole("a turn id (like 88, T88 or N12)", prefixes="#TtNn")(text)
    return ("N" if text.strip()[:1] in "Nn" else "T") + str(number)


def cmd_forget(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``wsd forget ...`` (see ops/cli_forget.py)."""
    from wsd.daemon.ops import cli_forget

    return cli_forget.cmd_forget(args, env, _layout(args, env))


def cmd_mcp(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``wsd mcp``: the memory tools as a stdio MCP server (Claude Code's plugin starts it)."""
    from wsd.daemon.memory.mcp_server import serve

    return serve(_layout(args, env))


def cmd_memory(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``wsd memory history|diff|restore FILE ...`` (see ops/cli_revisions.py)."""
    from wsd.daemon.ops import cli_revisions

    return cli_revisions.cmd_memory(args, env, _layout(args, env))


HANDLERS: dict[str, Handler] = {
    "boot-context": cmd_boot_context,
    "search": cmd_search,
    "import": cmd_import,
    "export": cmd_export,
    "pending": cmd_pending,
    "rebuild": cmd_rebuild,
    "memory": cmd_memory,
    "mcp": cmd_mcp,
    "forget": cmd_forget,
}
