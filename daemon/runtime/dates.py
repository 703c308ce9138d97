"""Times as people and the curator read them, and as they may be written: one place.

Stored times are epoch seconds (UTC). Shown, they are UTC; given (``since``, an import's
``created_at``), they may be a number, an ISO date or date-time, or an age like ``7d``.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime


def iso_time(ts: object) -> str:
    """An epoch time as ISO 8601 in UTC, to the second (``?`` if it is not a usable number):
    what ``wsd status``, ``wsd flush`` and ``wsd doctor`` print."""
    if not isinstance(ts, int | float) or isinstance(ts, bool) or not 0 <= ts < 1e11:
        return "?"
    return datetime.fromtimestamp(float(ts), UTC).isoformat(timespec="seconds")


def display_date(ts: object) -> str:
    """A UTC timestamp as ``YYYY-MM-DD HH:MM`` ("" if it is not a usable number)."""
    try:
        return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d %H:%M")  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError, OSError):
        return ""


_RELATIVE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(since: float | str | None, now: float | None = None) -> float | None:
    """``since`` as an epoch: a number, an ISO date or date-time (UTC if naive), or an age
    such as ``"36h"`` or ``"7d"``. Raises ValueError for anything else."""
    if since is None or since == "":
        return None
    if isinstance(since, int | float) and not isinstance(since, bool):
        return float(since)
    if not isinstance(since, str):
        raise ValueError(f"since: expected a timestamp, ISO date or age like 7d, got {since!r}")
    rel = _RELATIVE.match(since)
    if rel:
        age = float(rel.group(1)) * _UNIT[rel.group(2).lower()]
        return (time.time() if now is None else now) - age
    try:
        parsed = datetime.fromisoformat(since.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"since: {since[:40]!r} is not an ISO date/time or an age like 7d"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()
