"""Benchmarks: ``make bench`` prints each figure beside its target.

Machines here are shared and noisy, so figures are medians and percentiles of
many runs, and comparisons (hook vs bare interpreter) are measured side by
side in one run, never as absolute timed assertions in the test suite.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass
class Row:
    """One measured figure and the target it is held to."""

    name: str
    value: float
    unit: str
    target: str
    ok: bool | None
    note: str = ""


def percentile(samples: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (pct in 0..100)."""
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    rank = max(0, min(len(ordered) - 1, round(pct / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def median(samples: Sequence[float]) -> float:
    return statistics.median(samples)


def render(rows: Sequence[Row]) -> str:
    """A plain-text table: figure, unit, target, verdict, note."""
    header = ("benchmark", "value", "unit", "target", "ok", "note")
    cells = [
        (
            r.name,
            f"{r.value:.4g}" if isinstance(r.value, float) else str(r.value),
            r.unit,
            r.target,
            "-" if r.ok is None else ("yes" if r.ok else "NO"),
            r.note,
        )
        for r in rows
    ]
    widths = [max(len(str(c[i])) for c in [header, *cells]) for i in range(len(header))]
    line = "  ".join("-" * w for w in widths)
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)), line]
    out += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(out)
