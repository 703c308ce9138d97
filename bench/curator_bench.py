"""Curator cost per batch (issue 3): characters, tokens and dollars of one request, by part;
on the prompt lane (a direct Messages call) and on the economy lane (a Message Batch, billed
at the batch rate: issue 23)."""

from __future__ import annotations

import json
import random
import re
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

import apsw

from bench import Row
from bench.procs import count_rows, quiet_logs
from bench.workload_files import make_workspace
from bench.workload_turns import capture_turns, typical_turn
from wsd import schema
from wsd.daemon.curation.judging.edits import Limits, apply
from wsd.daemon.curation.judging.reply import parse_reply
from wsd.daemon.curation.loop.worker import Worker
from wsd.daemon.curation.request.batch import plan
from wsd.daemon.curation.request.prompt import build_request
from wsd.daemon.curation.request.rendering import ECONOMY_RENDERING, PROMPT_RENDERING
from wsd.daemon.memory.md import files as md_files
from wsd.daemon.memory.md import files_md
from wsd.daemon.memory.md.files import canonical
from wsd.daemon.ops.wiring import build_worker
from wsd.daemon.runtime.config import (
    DEFAULT_BATCH_CHARS,
    DEFAULT_ECONOMY_PRICE_FACTOR,
    DEFAULT_PRICE_INPUT,
    DEFAULT_PRICE_OUTPUT,
    Config,
)
from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import MESSAGES_PATH, BridgeStandin
from wsd.daemon.standin.message_batches import BATCHES_PATH
from wsd.daemon.standin.steps import estimate_tokens
from wsd.daemon.store import Store
from wsd.schema.layout import Layout
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


#: Economy lane settings of the in-process benchmarks: the first look at a Message Batch after
#: 0.05 s, at most 0.2 s between looks (the daemon's defaults are 30 s and 5 min).
POLL_SECONDS, POLL_MAX_SECONDS = 0.05, 0.2


@dataclass(frozen=True)
class SessionCost:
    """What one typical session cost, from the ledger (memory.db ``batches``)."""

    usd: float
    input_tokens: int
    output_tokens: int
    lanes: tuple[str, ...]  # each ledger row's lane
    creates: int  # Message Batches created at the stand-in
    calls: int  # direct Messages calls


def _session_turns(turns: int) -> list[list[dict[str, Any]]]:
    rng = random.Random(23)
    return [typical_turn(rng, "session-1", i) for i in range(turns)]


def run_until_settled(worker: Worker, layout: Layout, timeout: float = 120.0) -> None:
    """``run_once`` until no turn is pending and no Message Batch is in flight, sleeping one
    first-poll interval whenever a pass asks for no more (as the loop's wait would)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if worker.run_once().more:
            continue
        if pending_turns(layout) == 0 and batches_in_flight(layout) == 0:
            return
        time.sleep(worker.config.economy_poll_seconds)
    raise RuntimeError(f"the worker did not settle within {timeout:.0f} s")


def pending_turns(layout: Layout) -> int:
    return count_rows(layout.transcript_db, "SELECT count(*) FROM observations WHERE processed = 0")


def batches_in_flight(layout: Layout) -> int:
    return count_rows(
        layout.transcript_db, "SELECT count(*) FROM message_batches WHERE status != 'settled'"
    )


def _session_flush(curation: str, turns: int = 20) -> SessionCost:
    """A typical session of ``turns`` turns curated through the real daemon loop (stand-in
    rule curator; tokens counted by the stand-in from the texts), cost read from the ledger.

    ``prompt``: ``WSD_CURATION=prompt`` and a flush request, one direct call per batch.
    ``economy`` (the default lane): the session ends (SessionEnd through the hook's capture
    path: a ``session_end`` flush, not an urgent one), its batches go as one Message Batch,
    and the worker polls until the result is applied; priced at the batch rate."""
    session = _session_turns(turns)
    with (
        tempfile.TemporaryDirectory(prefix="wsd-bench-") as tmp,
        quiet_logs(),
        BridgeStandin(responder=rule_curator.responder) as standin,
    ):
        layout = make_workspace(tmp)
        if curation == "economy":
            end = {"hook_event_name": "SessionEnd", "session_id": "session-1", "reason": "exit"}
            capture_turns(layout, [*session, [end]])
        else:
            capture_turns(layout, session)
            conn = schema.connect(layout.transcript_db, "transcript")
            try:
                request_flush(conn, "bench", time.time())
            finally:
                conn.close()
        config = Config(
            workspace=layout.root,
            bridge_url=standin.url,
            api_key="bench",
            watch=False,
            curation=curation,
            economy_poll_seconds=POLL_SECONDS,
            economy_poll_max_seconds=POLL_MAX_SECONDS,
        )
        worker = build_worker(config, Store(layout), threading.Event())
        run_until_settled(worker, layout)
        ledger = apsw.Connection(layout.memory_db)
        try:
            rows: list[tuple[str, float, int, int, int]] = [
                (str(r[0]), float(r[1]), int(r[2]), int(r[3]), int(r[4]))
                for r in ledger.execute(
                    "SELECT lane, cost_usd, input_tokens, output_tokens, turns FROM batches"
                )
            ]
        finally:
            ledger.close()
        traffic = http_counts(standin)
    assert sum(r[4] for r in rows) == turns, rows
    return SessionCost(
        usd=sum(r[1] for r in rows),
        input_tokens=sum(r[2] for r in rows),
        output_tokens=sum(r[3] for r in rows),
        lanes=tuple(r[0] for r in rows),
        creates=traffic["creates"],
        calls=traffic["calls"],
    )


def http_counts(standin: BridgeStandin) -> dict[str, int]:
    """Requests the stand-in received, by kind: Messages calls, Message Batch creates,
    retrieves (polls), results reads, anything else."""
    out = dict.fromkeys(("calls", "creates", "retrieves", "results", "other"), 0)
    for r in standin.requests:
        path = r.path.partition("?")[0]
        if r.method == "POST" and path == MESSAGES_PATH:
            out["calls"] += 1
        elif r.method == "POST" and path == BATCHES_PATH:
            out["creates"] += 1
        elif r.method == "GET" and path.startswith(BATCHES_PATH + "/"):
            out["results" if path.endswith("/results") else "retrieves"] += 1
        else:
            out["other"] += 1
    return out


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
        pending = store.turns.pending_turns(batch)
        files = md_files.read_all(layout)
        # Each lane's request as the loop renders it (pipeline.plan: one batch here).
        by_lane = {
            lane: [text for b in plan(pending, DEFAULT_BATCH_CHARS, shown) for text in b.rendered]
            for lane, shown in (("prompt", PROMPT_RENDERING), ("economy", ECONOMY_RENDERING))
        }
        rendered = by_lane["prompt"]
        system, messages = build_request(files, store.actions.open_actions(), rendered)
        _, economy_messages = build_request(files, store.actions.open_actions(), by_lane["economy"])
    instructions = len(system[0]["text"])
    memory_block = len(messages[0]["content"][0]["text"])
    batch_block = len(messages[0]["content"][1]["text"])
    turns_text = "\n".join(rendered)
    total = instructions + memory_block + batch_block
    tokens = total / 4
    edit_reply, full_reply = _reply_forms(memory_block_text(messages), files)
    edit_out, full_out = estimate_tokens(edit_reply), estimate_tokens(full_reply)
    edit_cost, full_cost = _cost(tokens, edit_out), _cost(tokens, full_out)
    factor = DEFAULT_ECONOMY_PRICE_FACTOR
    economy_chars = instructions + sum(len(part["text"]) for part in economy_messages[0]["content"])
    economy_tokens = economy_chars / 4
    economy_cost = factor * _cost(economy_tokens, edit_out)
    prompt_session, economy_session = _session_flush("prompt"), _session_flush("economy")
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
            "curator: cost per 25-turn batch, prompt lane",
            edit_cost,
            "$",
            "-",
            None,
            # Issue 23 changed the price, not the content: the $0.007 (then $0.005) per batch
            # is the economy lane's target (next row); this is the direct call beside it.
            "reference for the economy lane's target (the prompt lane: PreCompact, wsd flush);"
            f" the stand-in's reply: {edit_out} output tokens counted from its text"
            f" ({len(edit_reply.splitlines())} lines); Haiku 4.5 $1/$5 per MTok;"
            f" input ${_cost(tokens, 0):.4f} + output ${_cost(0, edit_out):.4f}",
        ),
        Row(
            "curator: cost per 25-turn batch, economy lane",
            economy_cost,
            "$",
            "-",
            None,
            f"its own rendering (the tools' results shown: {economy_chars:,} chars,"
            f" {economy_tokens:.0f} in) / {edit_out} out tokens at the batch rate"
            f" (x{factor:g}): input ${factor * _cost(economy_tokens, 0):.4f}"
            f" + output ${factor * _cost(0, edit_out):.4f}",
        ),
        Row(
            "curator: same batch, full-file reply, prompt lane",
            full_cost,
            "$",
            "-",
            None,
            f"the same learnings with each changed file written whole: {full_out} output tokens",
        ),
        # Issue 36: the economy lane may spend up to $0.0065 a typical session (on what only
        # the tools' results hold), the prompt lane stays within $0.0099.
        _session_row("prompt", prompt_session, 0.0099),
        _session_row("economy", economy_session, 0.0065),
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


def _session_row(lane: str, cost: SessionCost, target: float) -> Row:
    how = (
        "WSD_CURATION=prompt, a flush request"
        if lane == "prompt"
        else "economy lane: SessionEnd (session_end flush) -> Message Batch, polled until"
        " applied, priced at the batch rate"
    )
    factor = 1.0 if lane == "prompt" else DEFAULT_ECONOMY_PRICE_FACTOR
    split = (
        f"input ${factor * _cost(cost.input_tokens, 0):.4f}"
        f" + output ${factor * _cost(0, cost.output_tokens):.4f}"
    )
    batches = f"{len(cost.lanes)} ledger row(s), lanes {','.join(sorted(set(cost.lanes)))}"
    wire = f"{cost.creates} Message Batch(es) created, {cost.calls} Messages call(s)"
    return Row(
        f"curator: typical 20-turn session, {lane} lane",
        cost.usd,
        "$",
        f"<= {target:g}",
        cost.usd <= target and set(cost.lanes) == {lane},
        f"{how}; through the daemon loop, ledger cost: {cost.input_tokens} in /"
        f" {cost.output_tokens} out tokens ({split}); {batches}; {wire}",
    )


def memory_block_text(messages: list[dict[str, object]]) -> str:
    """The user content of a request as one text (what the rule curator reads)."""
    content = messages[0]["content"]
    assert isinstance(content, list)
    return "\n".join(str(block["text"]) for block in content)
