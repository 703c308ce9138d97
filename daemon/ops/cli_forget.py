"""``wsd forget``: erase what the person asks to forget, everywhere, after a dry run.

``wsd forget WORDS`` (a word or a quoted phrase), ``wsd forget L12`` (a learning: its
statement, wherever it stands). Without ``--yes`` nothing changes: the counts per kind and
the first few of each are printed, so the person sees what would go. See
:mod:`wsd.daemon.memory.forget.erase` for what an erasure reaches and how.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping
from typing import Any


def _what(arg: str) -> str | int:
    """An argparse type: a word, or a learning id (L12, #12, 12) parsed as one, so that a
    wrong id (L0, L1e3, ², a number past SQLite's integers) is a one-line error naming the
    argument, not a search for the word "L1e3"."""
    if not (re.match(r"^[#Ll+-]?\d", arg) or (arg[:1].isdigit() and not arg.isascii())):
        return arg
    from wsd.daemon.ops.cli_revisions import whole

    parsed: int = whole("a learning id (like 12 or L12)", prefixes="#Ll")(arg)
    return parsed


def register(subparsers: Any) -> None:
    """Add ``wsd forget`` to the ``wsd`` parser."""
    forget = subparsers.add_parser(
        "forget",
        help="erase words (or a learning, L12) from every copy of the memory; a dry run first",
        description=(
            "Erase what you ask to forget from the transcript, the learnings, the md files and"
            " every revision of them, the search indexes, the backups wsd backup took, and"
            " every free page. Without --yes: a dry run (nothing changes)."
        ),
    )
    forget.add_argument(
        "what",
        nargs="+",
        type=_what,
        help="the words (a word, or a phrase: quote it) or a learning id (L12)",
    )
    forget.add_argument("--yes", action="store_true", help="erase (without it: a dry run)")
    forget.add_argument(
        "--all-matches",
        action="store_true",
        help="erase even when the words match most of the memory",
    )
    forget.add_argument("--json", action="store_true", help="machine-readable output")
    forget.add_argument(
        "--wait", type=float, default=120.0, help="seconds to wait for the daemon to pause"
    )


def cmd_forget(args: argparse.Namespace, env: Mapping[str, str], layout: Any) -> int:
    """``wsd forget ...`` (see the module)."""
    from wsd.daemon.curation import pause
    from wsd.daemon.memory.forget import erase
    from wsd.daemon.memory.forget.words import BadWords
    from wsd.daemon.store import Store

    store = Store(layout)
    if not store.ready():
        print(f"wsd forget: no memory at {layout.memory_dir} (nothing to forget)", file=sys.stderr)
        return 1
    learning = args.what[0] if len(args.what) == 1 and isinstance(args.what[0], int) else None
    try:
        words = _words(learning, [str(w) for w in args.what], store)
    except LookupError as exc:
        when = None if learning is None else store.learnings.retracted_at(learning)
        if when is not None:  # a second forget: say so, not "no learning"
            from wsd.daemon.runtime.dates import iso_time

            print(f"learning #{learning} was already retracted, at {iso_time(when)}; nothing to do")
            return 0
        print(f"wsd forget: {exc}", file=sys.stderr)
        return 1

    def say(line: str) -> None:
        if not args.json:
            print(line, file=sys.stderr, flush=True)

    try:
        if not args.yes:
            from wsd.daemon.memory.forget.words import Forget

            report = erase.plan(store, Forget.of(words))
        else:
            report = erase.forget(
                store,
                words,
                all_matches=args.all_matches,
                pause=lambda: pause.held(layout, "forget", args.wait, say),
                say=say,
            )
    except (BadWords, erase.ForgetRefused, pause.PauseRefused) as exc:
        print(f"wsd forget: {exc}; nothing was erased", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.as_json(), ensure_ascii=False, indent=1))
    else:
        _print(report, args)
    return 0


def _words(learning: int | None, what: list[str], store: Any) -> list[str]:
    """The phrase to forget: the words as given, or a learning's statement (L12)."""
    if learning is None:
        return [" ".join(what)]
    content = store.learnings.content_of(learning)
    if content is None:
        raise LookupError(f"no learning #{learning} (see `wsd search`)")
    return [content]


def _print(report: Any, args: argparse.Namespace) -> None:
    from wsd.daemon.memory.forget.erase import KIND_NAMES

    counts = report.counts()
    if not counts:
        print("nothing in the memory holds these words")
        return
    head = "erased:" if report.erased else "would erase (a dry run: nothing changed):"
    print(head)
    for name, label in KIND_NAMES.items():
        if name not in counts:
            continue
        print(f"  {counts[name]:>6}  {label}")
        if not report.erased:
            for sample in report.kinds[name].samples:
                print(f"          {sample}")
    if report.needs_all_matches and not report.erased:
        print("these words match most of the memory: to erase anyway, add --yes --all-matches")
    elif not report.erased:
        print("to erase: run the same command with --yes")
