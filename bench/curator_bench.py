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
from bench.procs import quiet_logs
from bench.workload_files import make_workspace
from bench.workload_turns import capture_turns, typical_turn
from wsd import schema
from wsd.daemon.curation.curator import build_request, render_turn
from wsd.daemon.curation.reply import parse_reply
from wsd.daemon.memory import files as files_mod
from wsd.daemon.memory import files_md
from wsd.daemon.memory.edits import Limits, apply
from wsd.daemon.memory.files import canonical
from wsd.daemon.ops.wiring import build_worker
from wsd.daemon.runtime.config import (
    DEFAULT_PRICE_INPUT,
    DEFAULT_PRICE_OUTPUT,
    Config,
)
from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.standin.steps import estimate_tokens
from wsd.daemon.store.store import Store
from wsd.schema.transcript import request_flush

# -- 4. curator cost per batch -------------------------------------------------------------------

_PARTS = {
    "user prompts": re.compile(r"^user: (.*)$", re.M),
    "tool inputs": re.compile(r"^tool [^:]*: (.*?)(?: → |$)", re.M),
    "tool outputs": re.compile(r"^tool [^:]*: .*? → (.*)$", re.M),
    "final answers": re.compile(r"^agent: (.*)$", re.M),
}


CURATED_FILES = ("tools.md", "files.md", "user.md", "context.md")


def _reply_forms(request_text: str, files: dict[str, str]) -> tuple[str, str]:
    """The stand-in's edit reply to a request, and the equivalent full-file reply: the same
    learnings and actions, each changed file written out whole (the older contract)."""
    edit_reply = rule_curator.curate(request_text)
    parsed = parse_reply(edit_reply)
    full = [ln for ln in edit_reply.splitlines() if not re.match(r"^[a-z]+\.md [-+~]", ln)]
    for name, edits in parsed.edits.items():
        before = canonical(name, files.get(name, "")).splitlines()
        after = apply(before, before, edits, Limits(999, 999_999, 1.0)).lines
        full += [f"{name[:-3].upper()}_MD_UPDATE:", *after]
    return edit_reply, "\n".join(full)


def _cost(input_tokens: float, output_tokens: float) -> float:
    return (input_tokens * DEFAULT_PRICE_INPUT + output_tokens * DEFAULT_PRICE_OUTPUT) / 1e6


def _session_flush(turns: int = 20) -> tuple[float, int, int]:
    """A typical session of ``turns`` turns curated by one flush through the real daemon loop
    (stand-in rule curator; tokens counted from the texts): (cost, in, out)."""
    rng = random.Random(23)
    session = [typical_turn(rng, "session-1", i) for i in range(turns)]
    with (
        tempfile.TemporaryDirectory(prefix="wsd-bench-") as tmp,
        quiet_logs(),
        BridgeStandin(responder=rule_curator.responder) as standin,
    ):
        layout = make_workspace(tmp)
        capture_turns(layout, session)
        config = Config(workspace=layout.root, bridge_url=standin.url, api_key="bench", watch=False)
        stop = threading.Event()
        worker = build_worker(config, Store(layout), stop)
        conn = schema.connect(layout.transcript_db, "transcript")
        try:
            request_flush(conn, "bench", time.time())
        finally:
            conn.close()
        while worker.run_once().more:
            pass
        ledger = apsw.Connection(layout.memory_db)
        try:
            row = ledger.execute(
                "SELECT sum(cost_usd), sum(input_tokens), sum(output_tokens), sum(turns)"
                " FROM batches"
            ).fetchone()
        finally:
            ledger.close()
    assert row is not None and row[3] == turns, row
    return float(row[0]), int(row[1]), int(row[2])


def curator_cost(batch: int = 25) -> list[Row]:
    """Characters, tokens and dollars of one curator request for 25 typical turns, with the
    stand-in's edit reply and the equivalent full-file reply."""
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
    with tempfile.TemporaryDirectory(prefix="wsd-bench-") as tmp:
        layout = make_workspace(tmp)
        capture_turns(layout, turns)
        store = Store(layout)
        rendered = [render_turn(t) for t in store.pending_turns(batch)]
        files = files_mod.read_all(layout)
        system, messages = build_request(files, store.open_actions(), rendered)
    instructions = len(system[0]["text"])
    memory_block = len(messages[0]["content"][0]["text"])
    batch_block = len(messages[0]["content"][1]["text"])
    turns_text = "\n".join(rendered)
    total = instructions + memory_block + batch_block
    tokens = total / 4
    edit_reply, full_reply = _reply_forms(memory_block_text(messages), files)
    edit_out, full_out = estimate_tokens(edit_reply), estimate_tokens(full_reply)
    edit_cost, full_cost = _cost(tokens, edit_out), _cost(tokens, full_out)
    session_cost, session_in, session_out = _session_flush()
    parts = {
        name: sum(len(g) for m in rx.finditer(turns_text) for g in m.groups() if g)
        for name, rx in _PARTS.items()
    }
    markup = len(turns_text) - sum(parts.values())

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
            "curator: input tokens (chars/4)", tokens, "tokens", "-", None, "as the stand-in counts"
        ),
        Row(
            "curator: cost per 25-turn batch, edit reply",
            edit_cost,
            "$",
            "<= 0.007",
            edit_cost <= 0.007,
            f"the stand-in's reply: {edit_out} output tokens counted from its text"
            f" ({len(edit_reply.splitlines())} lines); Haiku 4.5 $1/$5 per MTok",
        ),
        Row(
            "curator: same batch, full-file reply",
            full_cost,
            "$",
            "-",
            None,
            f"the same learnings with each changed file written whole: {full_out} output tokens",
        ),
        Row(
            "curator: typical 20-turn session, one flush",
            session_cost,
            "$",
            "<= 0.01",
            session_cost <= 0.01,
            f"through the daemon loop, ledger cost: {session_in} in / {session_out} out tokens",
        ),
        Row(
            "curator: fixed part, before any turn",
            (instructions + memory_block) / 4 * DEFAULT_PRICE_INPUT / 1e6,
            "$",
            "-",
            None,
            "instructions + the four files: what every batch pays whatever its turns",
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
            + "; the four curated files, numbered (soul.md, os.md never sent): "
            + ", ".join(f"{n} {sent_lines(n, files[n])}" for n in CURATED_FILES)
            + " lines sent",
        ),
        Row(
            "curator: part: turns (+ related learnings, open actions)",
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
        Row("curator: turns: line prefixes", markup, "chars", "-", None, share(markup)),
    ]


def memory_block_text(messages: list[dict[str, object]]) -> str:
    """The user content of a request as one text (what the rule curator reads)."""
    content = messages[0]["content"]
    assert isinstance(content, list)
    return "\n".join(str(block["text"]) for block in content)
