"""``wsd forget``: erase what the person asks to forget, everywhere, after a dry run.

``wsd forget WORDS`` (a word or a quoted phrase), ``wsd forget L12`` (a learning: its
statement, wherever it stands). Without ``--yes`` nothing changes: the counts per kind and
the first few of each are printed, so the person sees what would go. See
:mod:`wsd.daemon.memory.forget.erase` for what an erasure reaches and how.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Mapping
from typing import Any

from wsd.daemon.ops import arguments


def _what(arg: str) -> str | tuple[str, int, str]:
    """An argparse type: a word, or an id parsed as one: a learning (L12, #12, 12), an
    indexed turn (T88) or a turn not indexed yet (N12), as ``("L", 12)``. A wrong id (L0,
    L1e3, ², a number past SQLite's integers) is a one-line error naming the argument, not a
    search for the word "L1e3"."""
    from wsd.daemon.ops.arguments import whole

    if re.match(r"^[TtNn]\d", arg):
        kind = arg[0].upper()
        return kind, whole(f"a turn id (like {kind}88)", prefixes="TtNn")(arg), arg
    if not (re.match(r"^[#Ll+-]?\d", arg) or (arg[:1].isdigit() and not arg.isascii())):
        return arg
    return "L", whole("a learning id (like 12 or L12)", prefixes="#Ll")(arg), arg


def _time(text: str) -> float:
    """An argparse type: an ISO date or date-time (UTC if no zone is given)."""
    from wsd.daemon.runtime.dates import parse_since

    if not re.match(r"^\d{4}-\d\d-\d\d", text.strip()):
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not an ISO date/time")
    try:
        when = parse_since(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    assert when is not None
    return when


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
        nargs="*",
        metavar="WORDS",
        type=_what,
        help="the words (a word, or a phrase: quote it), a learning (L12) or a turn (T88)",
    )
    forget.add_argument("--session", metavar="ID", help="every turn of this session")
    forget.add_argument(
        "--between",
        nargs=2,
        metavar=("START", "END"),
        type=_time,
        help="every turn between these ISO times (UTC unless a zone is given)",
    )
    forget.add_argument("--yes", action="store_true", help="erase (without it: a dry run)")
    forget.add_argument(
        "--all-matches",
        action="store_true",
        help="erase even when the words match most of the memory",
    )
    forget.add_argument("--json", action="store_true", help="machine-readable output")
    arguments.add_wait(forget, 120.0, "seconds to wait for the daemon to pause (default 120)")


def cmd_forget(args: argparse.Namespace, env: Mapping[str, str], layout: Any) -> int:
    """``wsd forget ...`` (see the module)."""
    from wsd.daemon.memory.forget import erase, hold
    from wsd.daemon.memory.forget.words import BadWords
    from wsd.daemon.runtime import pause
    from wsd.daemon.store import Store

    store = Store(layout)
    if not store.ready():
        print(f"wsd forget: no memory at {layout.memory_dir} (nothing to forget)", file=sys.stderr)
        return 1
    what = list(args.what)
    chosen = sum([bool(what), args.session is not None, args.between is not None])
    if chosen != 1:
        print(
            "wsd forget: name one thing to forget: WORDS (a word or a phrase), an id (L12,"
            " T88), --session ID or --between START END",
            file=sys.stderr,
        )
        return 2
    turns_only = all(isinstance(w, tuple) and w[0] in "TN" for w in what)
    if len(what) > 1 and not turns_only:  # an id among words is a word ("Room 101", "N95")
        what = [w[2] if isinstance(w, tuple) else w for w in what]
    ids = [w for w in what if isinstance(w, tuple)]
    learning = ids[0][1] if len(what) == 1 and ids and ids[0][0] == "L" else None
    scope = None
    try:
        if (ids and learning is None) or args.session is not None or args.between is not None:
            scope = store.erasure.scope(
                index_ids=[n for k, n, _a in ids if k == "T"],
                observation_ids=[n for k, n, _a in ids if k == "N"],
                session=args.session,
                between=args.between,
            )
            if not scope.observations:
                raise LookupError("no turn is there to forget")
            words: list[str] = []
        else:
            words = _words(learning, [w if isinstance(w, str) else w[2] for w in what], store)
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
            from wsd.daemon.memory.forget.words import Everything, Forget

            report = erase.plan(store, Everything() if scope else Forget.of(words), scope)
        else:
            report = erase.forget(
                store,
                words,
                scope=scope,
                all_matches=args.all_matches,
                pause=lambda: hold.erasing(layout, args.wait, say),
                say=say,
            )
    except (BadWords, erase.ForgetRefused, pause.PauseRefused) as exc:
        print(f"wsd forget: {exc}; nothing was erased", file=sys.stderr)
        return 2
    if args.yes and words and report.erased:
        report.carried_home = _carry_home(store, layout, words, say)
    return _answer(report, args, layout, env, say)


def _carry_home(store: Any, layout: Any, words: list[str], say: Any) -> bool | None:
    """On a satellite (SPEC.md section 11): the forget carried home as marks (keyed hashes
    of its stems with home's key, never the words), for home to erase and every machine
    after it; True when recorded, False when this satellite has no copy of home's memory
    to take the key from yet, None on a machine that is no satellite."""
    import time

    from wsd.daemon.memory.forget.words import Forget
    from wsd.daemon.runtime.heartbeat import read_status

    settings = (read_status(layout) or {}).get("settings") or {}
    satellite = os.path.exists(layout.home_copy) or (
        isinstance(settings, dict) and settings.get("role") == "satellite"
    )
    if not satellite:
        return None
    if store.machines.carry_home(layout.home_copy, Forget.of(words).stem_lists(), time.time()):
        say(
            "recorded for home (as marks, never the words): home erases it from the person's"
            " memory, then every machine; `wsd status` shows it waiting until home took it in"
        )
        return True
    say(
        "not carried home yet: this satellite has no copy of home's memory; run the same"
        " wsd forget again once `wsd status` shows one (or on home)"
    )
    return False


def _answer(
    report: Any, args: argparse.Namespace, layout: Any, env: Mapping[str, str], say: Any
) -> int:
    """Print the report (with the replica's state after an erasure); the exit code."""
    replica = None
    if args.yes and report.erased and report.finished_at is not None:
        replica = _replica_reach(layout, env, report.finished_at, args.wait, say)
    if args.json:
        out = report.as_json() | ({"replica": replica} if replica else {})
        print(json.dumps(out, ensure_ascii=False, indent=1))
    else:
        _print(report, args, replica)
    # Erased here, and a copy still holds the words (or could not be reached to check): a
    # script must not read "done" (3, as the README says; 0 only when every copy named was
    # checked).
    unreached = {"backups_unreachable", "exports_unreachable"} & set(report.counts())
    return 3 if report.still or unreached or (replica and not replica["written"]) else 0


def _replica_reach(
    layout: Any, env: Mapping[str, str], erased_at: float, wait: float, say: Any
) -> dict[str, Any] | None:
    """When replication is on (as the daemon reports its settings, else this shell's): the
    replica, whether its newest state was seen written after the erasure (the daemon's
    supervisor writes it and records it: replica/owed.py; looked for up to ``wait``
    seconds, and no longer once a try failed or no daemon runs), and until when its history
    (snapshots kept for the retention) can still hold the words."""
    import time

    from wsd.daemon.replica import litestream, owed
    from wsd.daemon.runtime.config import DEFAULT_REPLICA_RETENTION_HOURS, Config
    from wsd.daemon.runtime.dates import iso_time
    from wsd.daemon.runtime.heartbeat import daemon_running, read_status

    reported = (read_status(layout) or {}).get("settings")
    settings = reported if isinstance(reported, dict) else Config.from_env(env).reported()
    url = settings.get("replica_url")
    if not isinstance(url, str) or not url:
        return None
    hours = settings.get("replica_retention_hours")
    hours = float(hours) if isinstance(hours, int | float) else DEFAULT_REPLICA_RETENTION_HOURS
    say("waiting for the replica's newest state to be written without them ...")
    deadline = time.monotonic() + wait
    while True:
        record = owed.read(layout)
        ours = record is not None and record.erased_at >= erased_at
        written = ours and record is not None and not record.pending
        failed = ours and record is not None and (record.tried_at or 0) >= erased_at
        running = daemon_running(layout)
        if written or failed or not running or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if written:
        why = None
    elif record is not None and record.error and failed:
        why = record.error
    elif not running:
        why = "the daemon is not running (it writes the erased state when it starts)"
    else:
        why = f"not seen written within {wait:g}s (the daemon goes on trying)"
    until = time.time() + hours * 3600
    return {
        "url": litestream.shown(url),
        "written": written,
        "confirmed_at": record.confirmed_at if written and record else None,
        "why_not": why,
        "retention_hours": hours,
        "may_hold_until": round(until, 3),
        "may_hold_until_iso": iso_time(until),
    }


def _words(learning: int | None, what: list[str], store: Any) -> list[str]:
    """The phrase to forget: the words as given, or a learning's statement (L12)."""
    if learning is None:
        return [" ".join(what)]
    content = store.learnings.content_of(learning)
    if content is None:
        raise LookupError(f"no learning #{learning} (see `wsd search`)")
    return [content]


def _print(report: Any, args: argparse.Namespace, replica: dict[str, Any] | None) -> None:
    from wsd.daemon.memory.forget.erase import KIND_NAMES

    counts = report.counts()
    if not counts:
        print("nothing in the memory holds these words")
        return
    head = "would erase (a dry run: nothing changed):"
    if report.erased:
        head = "erased: each copy below was read back without them"
        if not report.verified:
            head = "erased:"
    print(head)
    for name, label in KIND_NAMES.items():
        if name not in counts:
            continue
        print(f"  {counts[name]:>6}  {label}")
        if not report.erased:
            for sample in report.kinds[name].samples:
                print(f"          {sample}")
    for name, n in report.still.items():
        print(f"  STILL HOLDING THEM after the erasure: {n} {KIND_NAMES.get(name, name)}")
    if report.needs_all_matches and not report.erased:
        print("these words match most of the memory: to erase anyway, add --yes --all-matches")
    elif not report.erased:
        print("to erase: run the same command with --yes")
    if replica and replica["written"]:
        print(
            f"the replica ({replica['url']}): its newest state, without them, was seen written"
            f" there; its history can hold them until {replica['may_hold_until_iso']}"
            f" (WSD_REPLICA_RETENTION_HOURS={replica['retention_hours']:g})"
        )
    elif replica:
        print(
            f"the replica ({replica['url']}) STILL HOLDS THEM: its newest state without them"
            f" was not written ({replica['why_not']}). The daemon writes it before it ships"
            " anything else, once the target can be written; `wsd doctor` fails until then"
            " and `wsd restore --from-replica` refuses it"
        )
