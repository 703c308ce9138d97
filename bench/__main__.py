"""``python -m bench [NAME ...]``: run the benchmarks and print the table."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict

from bench import (
    Row,
    coverage_bench,
    curator_bench,
    daemon_bench,
    economy_bench,
    forget_bench,
    grounding_bench,
    hooks_bench,
    idle_bench,
    lineage_bench,
    machines_bench,
    mcp_bench,
    memory_bench,
    rebuild_bench,
    render,
    replica_bench,
    retrieval_bench,
    semantic_bench,
    transfer_bench,
    workspace_bench,
)

BENCHMARKS: dict[str, Callable[[], list[Row]]] = {
    "hook_write": hooks_bench.hook_write,
    "hook_process": hooks_bench.hook_process,
    "redaction": hooks_bench.redaction,
    "mcp_start": mcp_bench.mcp_start,
    "drain": daemon_bench.drain,
    "idle": idle_bench.idle,
    "peak": idle_bench.peak,
    "metrics": idle_bench.metrics_cost,
    "flush_latency": daemon_bench.flush_latency,
    "curator_sees": coverage_bench.coverage,
    "curator_cost": curator_bench.curator_cost,
    "precompact": economy_bench.precompact,
    "economy_backlog": economy_bench.economy_backlog,
    "backlog_cache": economy_bench.backlog_cache,
    "rebuild_cache": economy_bench.rebuild_cache,
    "memory_retrieval": retrieval_bench.retrieval,
    "memory_ablation": retrieval_bench.ablation,
    "memory_latency": memory_bench.search_latency,
    "memory_tail": memory_bench.search_tail_latency,
    "memory_boot": memory_bench.boot_context,
    "semantic_latency": semantic_bench.semantic_latency,
    "semantic_memory": semantic_bench.semantic_memory,
    "workspace": workspace_bench.workspace,
    "rebuild": rebuild_bench.rebuild,
    "lineage": lineage_bench.lineage,
    "grounding": grounding_bench.grounding_rows,
    "grounding_cost": grounding_bench.check_cost,
    "forget": forget_bench.forget,
    "transfer": transfer_bench.transfer,
    "replica_loss": replica_bench.loss_window,
    "replica_idle": replica_bench.idle_cost,
    "replica_restore": replica_bench.restore_time,
    "machines_reach": machines_bench.reach,
    "machines_idle": machines_bench.idle_requests,
}


def main() -> int:
    parser = argparse.ArgumentParser(prog="bench")
    parser.add_argument("names", nargs="*", help=f"subset of: {', '.join(BENCHMARKS)}")
    args = parser.parse_args()
    unknown = set(args.names) - set(BENCHMARKS)
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    rows: list[Row] = []
    for name, run in BENCHMARKS.items():
        if args.names and name not in args.names:
            continue
        print(f"running {name} ...", file=sys.stderr, flush=True)
        try:
            measured = run()
        except Exception as exc:  # one broken benchmark must not lose the others' figures
            measured = [Row(name, float("nan"), "", "-", False, f"failed: {exc!r}"[:300])]
        print(render(measured) + "\n", flush=True)  # each part's rows as they are measured
        rows += measured
    print("all figures:\n" + render(rows))
    os.makedirs(".bench", exist_ok=True)
    with open(os.path.join(".bench", "results.json"), "w", encoding="utf-8") as fh:
        json.dump([asdict(r) for r in rows], fh, indent=1)
    return 0 if all(r.ok is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
