"""Retrieval on LoCoMo, side by side: plain FTS5 bm25, the ranking of 33ccf0e (before issue
15), the ranking by words alone, and words + meaning (the [semantic] extra); and the
ablation of each kept heuristic, per development conversation.

``python -m bench memory_retrieval memory_ablation``. The 33ccf0e figures were measured with
that commit's code by this bench's own protocol and are kept in bench/reference/.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

from bench import Row, locomo
from wsd.daemon.memory.search import concepts, rank

REFERENCE = os.path.join(os.path.dirname(__file__), "reference", "locomo-33ccf0e.json")
#: Targets of issue 15 (facts) and issue 4 (turns), for the headline r@10.
TARGETS = {("facts", "words"): 0.63, ("facts", "hybrid"): 0.66, ("turns", "words"): 0.70}


@contextlib.contextmanager
def semantic(spaces: list[locomo.Workspace]) -> Iterator[float | None]:
    """Vectors for every workspace and the daemon's socket on each (its own code); yields
    the embedding rate (memories per second), or None without the extra."""
    from wsd.daemon.memory.semantic import missing

    if missing() is not None:
        yield None
        return
    import structlog

    from wsd.daemon.memory.semantic.embedding import Embedder
    from wsd.daemon.memory.semantic.server import SemanticServer
    from wsd.daemon.store import Store

    servers = []
    started, count = time.perf_counter(), 0
    quiet = structlog.get_logger().bind()
    with mock.patch.object(Embedder, "_progress", lambda self, n: None):
        for ws in spaces:
            count += Embedder(Store(ws.layout), quiet).run_to_end(lambda line: None)
    rate = count / (time.perf_counter() - started)
    try:
        for ws in spaces:
            server = SemanticServer(Store(ws.layout))
            server.start()
            servers.append(server)
        # A loaded machine must not turn the bench into a measure of the timeout.
        with mock.patch("wsd.daemon.memory.semantic.client.TIMEOUT", 10.0):
            yield rate
    finally:
        for server in servers:
            server.stop()


def retrieval() -> list[Row]:
    """recall@5/@10 per mode, conversation and category for the four rankings."""
    if not os.path.exists(locomo.DATA):
        return [Row("locomo retrieval", float("nan"), "", "data missing", None, locomo.DATA)]
    with open(REFERENCE, encoding="utf-8") as fh:
        before: dict[str, dict[str, float]] = json.load(fh)
    with locomo.workspaces() as spaces:
        results = {
            "bm25": locomo.recall(spaces, locomo.plain_bm25),
            "33ccf0e": before,
            "words": locomo.recall(spaces, locomo.lexical),
        }
        with semantic(spaces) as rate:
            if rate is not None:
                results["hybrid"] = locomo.recall(spaces, locomo.hybrid)
    return _rows(results, rate)


def _rows(results: dict[str, dict[str, dict[str, float]]], rate: float | None) -> list[Row]:
    best = "hybrid" if "hybrid" in results else "words"
    rows = []
    for mode in locomo.MODES:
        for key in results["words"][mode]:
            side = " | ".join(
                f"{name} {r[mode].get(key, float('nan')):.3f}" for name, r in results.items()
            )
            rows.append(
                Row(f"locomo {mode} {key}", results[best][mode][key], "recall", "-", None, side)
            )
    for (mode, ranking), target in TARGETS.items():
        if ranking in results:
            value = results[ranking][mode]["r@10"]
            name = "words + meaning" if ranking == "hybrid" else "words only"
            rows.append(
                Row(f"locomo {mode} r@10, {name}", value, "recall", f">= {target}", value >= target)
            )
    for ranking in ("words", "hybrid"):
        if ranking in results:
            worse = [
                f"{mode} {conv}"
                for mode in locomo.MODES
                for conv in locomo.CONVERSATIONS
                if results[ranking][mode][f"r@10 {conv}"] <= results["bm25"][mode][f"r@10 {conv}"]
            ]
            rows.append(
                Row(
                    f"locomo {ranking}: every conversation above plain bm25",
                    4 - len(worse),
                    "of 4",
                    "4",
                    not worse,
                    "r@10, turns and facts, conv-26 and conv-30"
                    + (f"; not: {worse}" if worse else ""),
                )
            )
    if rate is not None:
        rows.append(
            Row(
                "semantic: embedding rate (LoCoMo turns + facts)",
                rate,
                "/s",
                "-",
                None,
                "backfill, one process",
            )
        )
    return rows


# -- ablation ---------------------------------------------------------------------------------


def _without_neighbours() -> Any:
    return mock.patch.object(rank.Ranker, "_spread", lambda self, state: None)


#: Each kept heuristic, switched off alone.
SWITCHES: dict[str, Callable[[], Any]] = {
    "stop list": lambda: mock.patch("wsd.daemon.memory.search.text.STOP_WORDS", frozenset()),
    "coordination": lambda: mock.patch.object(rank, "coordination", lambda covered, ideal: 1.0),
    "prefix variants": lambda: mock.patch.object(
        concepts.ConceptBase, "_variants", lambda self, state: None
    ),
    "relevance feedback": lambda: mock.patch.object(
        rank.Ranker, "_feedback", lambda self, state: {}
    ),
    "neighbour lending": _without_neighbours,
}


def ablation() -> list[Row]:
    """recall change when each kept heuristic is switched off alone, per conversation."""
    if not os.path.exists(locomo.DATA):
        return [Row("locomo ablation", float("nan"), "", "data missing", None, locomo.DATA)]
    rows = []
    with locomo.workspaces() as spaces:
        full = locomo.recall(spaces, locomo.lexical)
        for name, switch in SWITCHES.items():
            with switch():
                off = locomo.recall(spaces, locomo.lexical)
            deltas = {
                (mode, conv): sum(
                    full[mode][f"r@{k} {conv}"] - off[mode][f"r@{k} {conv}"] for k in locomo.KS
                )
                / len(locomo.KS)
                for mode in locomo.MODES
                for conv in locomo.CONVERSATIONS
            }
            per_conv = {
                conv: sum(deltas[(m, conv)] for m in locomo.MODES) / len(locomo.MODES)
                for conv in locomo.CONVERSATIONS
            }
            note = " ".join(
                f"{mode} {conv} r@5 {full[mode][f'r@5 {conv}'] - off[mode][f'r@5 {conv}']:+.3f}"
                f" r@10 {full[mode][f'r@10 {conv}'] - off[mode][f'r@10 {conv}']:+.3f};"
                for mode in locomo.MODES
                for conv in locomo.CONVERSATIONS
            )
            rows.append(
                Row(
                    f"ablation: {name} (gain, worst conversation)",
                    min(per_conv.values()),
                    "recall",
                    "> 0",
                    all(v > 0 for v in per_conv.values()),
                    note,
                )
            )
    return rows
