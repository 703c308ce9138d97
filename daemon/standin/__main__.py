"""``python -m wsd.daemon.standin``: the Bridge stand-in as a server of its own.

Prints its URL (use it as ``ANTHROPIC_BASE_URL`` for ``wsd run``), serves until SIGTERM or
SIGINT, then exits 0. ``--curator`` picks who answers the daemon's requests (``--help``).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections import deque
from collections.abc import Sequence
from types import FrameType

from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.standin.steps import JSON, Reply, Responder, Step, default_responder


def _script_responder(path: str) -> Responder:
    """Replies read from ``path``: one reply per block, blocks separated by a line ``---``,
    served in order, then the last one again."""
    with open(path, encoding="utf-8") as fh:
        blocks = [b.strip("\n") for b in fh.read().split("\n---\n")]
    replies = deque(Reply.text(b) for b in blocks if b.strip())
    if not replies:
        raise ValueError(f"{path}: no reply in it")
    last = replies[-1]

    def respond(_body: JSON) -> Step:
        return replies.popleft() if replies else last

    return respond


CURATORS_HELP = """\
which curator answers the daemon's requests:
  rule         (default) a deterministic rule-based curator: preferences, corrections,
               installs, written files and reminders in the turns become learnings,
               actions and line edits of the md files, like a real curator's reply
  none         every request answered NONE: turns are curated with nothing learned
  script FILE  the replies in FILE (blocks separated by a line ---), in order, then the
               last one again"""


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGTERM/SIGINT, then exit 0."""
    parser = argparse.ArgumentParser(
        prog="python -m wsd.daemon.standin",
        description="A local stand-in for the Bridge (the Anthropic Messages API) for the demo"
        " and tests: prints its URL (use it as ANTHROPIC_BASE_URL), serves until SIGTERM.",
        epilog=CURATORS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--port", type=int, default=0, help="0 = pick a free port")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument(
        "--curator",
        nargs="+",
        default=["rule"],
        metavar="KIND",
        help="rule (default), none, or script FILE (see below)",
    )
    args = parser.parse_args(argv)
    kind, *rest = args.curator
    if kind == "rule" and not rest:
        from wsd.daemon.standin import rule_curator

        responder: Responder = rule_curator.responder
    elif kind == "none" and not rest:
        responder = default_responder
    elif kind == "script" and len(rest) == 1:
        try:
            responder = _script_responder(rest[0])
        except (OSError, ValueError) as exc:
            parser.error(f"--curator script: {exc}")
    else:
        parser.error(f"--curator {' '.join(args.curator)}: expected rule, none or script FILE")
    done = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with BridgeStandin(args.port, responder=responder, latency=args.latency) as standin:
        print(standin.url, flush=True)
        while not done.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
