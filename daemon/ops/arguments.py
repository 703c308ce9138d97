"""The argument types every ``wsd`` command checks its numbers with, and its one ``--wait``.

:func:`whole` for ids and counts, within the range their use can hold (an id SQLite can
store: found by an attack, when ``wsd forget 99999999999999999999999`` ended in an
OverflowError traceback), :func:`seconds` for waits, and :func:`add_wait`, the ``--wait
SECONDS`` of ``wsd flush``, ``import``, ``forget`` and ``rebuild`` (it took nan and -5 where
it was a bare float). A bad one is a one-line usage error, exit 2.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

#: The largest id SQLite stores (a signed 64-bit integer): past it a number is no id at all.
MAX_ID = 2**63 - 1


_INTEGER = re.compile(r"[+-]?[0-9]+")


def _shown(text: str) -> str:
    return repr(text if len(text) <= 32 else text[:31] + "…")


def whole(what: str, low: int = 1, high: int = MAX_ID, prefixes: str = "#") -> Callable[[str], int]:
    """An argparse type: ``what`` (e.g. "a learning id") as a whole number from ``low`` to
    ``high``, written in ASCII digits after at most one of ``prefixes`` (``#12``)."""

    def parse(text: str) -> int:
        raw = text.strip()
        if raw[:1] and raw[0] in prefixes:
            raw = raw[1:]
        if not _INTEGER.fullmatch(raw):
            raise argparse.ArgumentTypeError(f"{_shown(text)} is not {what}")
        if len(raw) > 24 or not low <= int(raw) <= high:
            raise argparse.ArgumentTypeError(
                f"{_shown(text)} is out of range: {what} is from {low} to {high}"
            )
        return int(raw)

    parse.__name__ = what
    return parse


def seconds(high: float) -> Callable[[str], float]:
    """An argparse type: a number of seconds from 0 to ``high`` (no nan, no infinity)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and 0 <= value <= high):
            raise argparse.ArgumentTypeError(
                f"{_shown(text)} is not a number of seconds from 0 to {high:g}"
            )
        return value

    parse.__name__ = "seconds"
    return parse


#: The longest ``--wait``: a day.
MAX_WAIT = 86400.0


def add_wait(parser: argparse.ArgumentParser, default: float, help: str) -> None:
    """``--wait SECONDS`` (0 to a day), as every command that waits takes it."""
    parser.add_argument(
        "--wait", type=seconds(MAX_WAIT), default=default, metavar="SECONDS", help=help
    )
