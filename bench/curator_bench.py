"""Curator cost per batch (issue 3): characters, tokens and dollars of one request, by part."""

from __future__ import annotations

import json
import random
import re
import tempfile
import threading
import time

import apsw

from bench import Row
from bench.procs import OUTPUT_TOKENS, quiet_logs, realistic_reply
from bench.workload_files import make_workspace
from bench.workload_turns import capture_turns, typical_turn
from wsd import schema
from wsd.daemon.curation.bridge import BridgeClient
from wsd.daemon.curation.curator import build_request, render_turn
from wsd.daemon.curation.worker import Worker
from wsd.daemon.memory import files_md
from wsd.daemon.runtime.config import (
    DEFAULT_PRICE_INPUT,
    DEFAULT_PRICE_OUTPUT,
    Config,
)
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.store.ledger import Store
from wsd.schema.transcript import request_flush

# -- 4. curator cost per batch -------------------------------------------------------------------

_PARTS = {
    "user prompts": re.compile(r"^user: (.*)$", re.M),
    "tool inputs": re.compile(r"^tool [^:]*: (.*?)(?: → |$)", re.M),
    "tool outputs": re.compile(r"^tool [^:]*: .*? → (.*)$", re.M),
    "final answers": re.compile(r"^assistant: (.*)$", re.M),
}


CURATED_FILES = ("tools.md", "files.md", "user.md", "context.md")


def curator_cost(batch: int = 25) -> list[Row]:
    """Characters, tokens and dollars of one curator request for 25 typical turns."""
    rng = random.Random(11)
    turns = [typical_turn(rng, f"cost-{i // 8}", i) for i in range(batch)]
    captured = sum(
        len(
            json.dumps(
                {
                    k: v
                    for k, v in e.items()
                    if k in ("prompt", "tool_input", "tool_response", "last_assistant_message")
                }
            )
        )
        for t in turns
        for e in t
    )
    tool_calls = sum(e["hook_event_name"] == "PostToolUse" for t in turns for e in t)
    with (
        tempfile.TemporaryDirectory(prefix="wsd-bench-") as tmp,
        quiet_logs(),
        BridgeStandin(responder=realistic_reply) as standin,
    ):
        layout = make_workspace(tmp)
        capture_turns(layout, turns)
        store = Store(layout)
        from wsd.daemon.memory import files as files_mod

        pending = store.pending_turns(batch)
        rendered = [render_turn(t) for t in pending]
        files = files_mod.read_all(layout)
        system, messages = build_request(files, store.open_actions(), rendered)
        # The same request through the real daemon: a flush makes it curate the 25 turns now.
        config = Config(
            workspace=layout.root,
            bridge_url=standin.url,
            api_key="bench",
            batch_turns=batch,
            watch=False,
        )
        stop = threading.Event()
        worker = Worker(config, store, BridgeClient(config, stop), stop)
        conn = schema.connect(layout.transcript_db, "transcript")
        try:
            request_flush(conn, "bench", time.time())
        finally:
            conn.close()
        worker.run_once()
        sent = [r for r in standin.requests if r.path == "/v1/messages"]
        body_chars = len(sent[0].body.decode()) if sent else 0
        ledger = apsw.Connection(layout.memory_db)
        try:
            row = ledger.execute(
                "SELECT turns, input_tokens, output_tokens, cost_usd FROM batches"
            ).fetchone()
        finally:
            ledger.close()
        same = (
            bool(sent)
            and sent[0].json is not None
            and sent[0].json.get("messages") == messages
            and sent[0].json.get("system") == system
        )
    instructions = len(system[0]["text"])
    memory_block = len(messages[0]["content"][0]["text"])
    batch_block = len(messages[0]["content"][1]["text"])
    turns_text = "\n".join(rendered)
    total = instructions + memory_block + batch_block
    tokens = total / 4
    cost = (tokens * DEFAULT_PRICE_INPUT + OUTPUT_TOKENS * DEFAULT_PRICE_OUTPUT) / 1e6
    cached = ((instructions + memory_block) / 4 * 0.1 + batch_block / 4) * DEFAULT_PRICE_INPUT
    cached_cost = (cached + OUTPUT_TOKENS * DEFAULT_PRICE_OUTPUT) / 1e6
    parts = {
        name: sum(len(g) for m in rx.finditer(turns_text) for g in m.groups() if g)
        for name, rx in _PARTS.items()
    }
    markup = len(turns_text) - sum(parts.values())
    n_turns, in_tok, out_tok, ledger_cost = row if row else (0, 0, 0, 0.0)

    def sent_lines(name: str, text: str) -> str:
        if name != "files.md":
            return str(len(text.splitlines()))
        notes = len(files_md.notes_of(text).splitlines())
        return f"{notes} (+{len(text.splitlines()) - notes} of inventory kept back)"

    def share(chars: int) -> str:
        return f"{100 * chars / total:.0f}% of the request, ~{chars / 4:.0f} tokens"

    return [
        Row(
            "curator: characters per 25-turn batch",
            total,
            "chars",
            "-",
            None,
            f"{batch} turns, {tool_calls} tool calls, {captured:,} chars captured by the hooks",
        ),
        Row(
            "curator: estimated input tokens (chars/4)",
            tokens,
            "tokens",
            "<= ~3,000 for $0.005",
            None,
            f"stand-in's estimate (HTTP body {body_chars:,} bytes / 4): {in_tok} tokens",
        ),
        Row(
            "curator: estimated cost per batch",
            cost,
            "$",
            "<= 0.005",
            cost <= 0.005,
            f"Haiku 4.5 $1/$5 per MTok, {OUTPUT_TOKENS} output tokens, no prompt cache",
        ),
        Row(
            "curator: fixed part, before any turn",
            (
                (instructions + memory_block) / 4 * DEFAULT_PRICE_INPUT
                + OUTPUT_TOKENS * DEFAULT_PRICE_OUTPUT
            )
            / 1e6,
            "$",
            "-",
            None,
            f"instructions + the four files + {OUTPUT_TOKENS} output tokens: what every batch"
            " pays whatever its turns",
        ),
        Row(
            "curator: same, cache hit on instructions+memory",
            cached_cost,
            "$",
            "-",
            None,
            "cache reads at 0.1x; Haiku 4.5 caches only prefixes >= 4,096 tokens, TTL 5 min",
        ),
        Row(
            "curator: cost in the daemon's ledger",
            float(ledger_cost),
            "$",
            "-",
            None,
            f"batch of {n_turns} turns, {in_tok} in / {out_tok} out tokens as the stand-in "
            f"counted them; request identical to build_request: {same}",
        ),
        Row(
            "curator: part: instructions (system)",
            instructions,
            "chars",
            "-",
            None,
            share(instructions),
        ),
        Row(
            "curator: part: memory files",
            memory_block,
            "chars",
            "-",
            None,
            share(memory_block)
            + "; the four curated files (soul.md, os.md never sent): "
            + ", ".join(f"{n} {sent_lines(n, files[n])}" for n in CURATED_FILES)
            + " lines sent",
        ),
        Row(
            "curator: part: turns (+ open actions)",
            batch_block,
            "chars",
            "-",
            None,
            share(batch_block) + f"; {len(turns_text) / batch:.0f} chars per rendered turn",
        ),
        *[
            Row(f"curator: turns: {name}", chars, "chars", "-", None, share(chars))
            for name, chars in parts.items()
        ],
        Row("curator: turns: tags and attributes", markup, "chars", "-", None, share(markup)),
    ]
