"""Typical agent turns for the benchmarks, as Claude Code's hooks send them, and their capture."""

from __future__ import annotations

import os
import random
import time
from typing import Any

from wsd import schema
from wsd.hooks.capture import Capture, CaptureConfig, build_event
from wsd.schema.layout import Layout
from wsd.schema.transcript import Event, record

# -- typical turns ------------------------------------------------------------------------------

_WORDS = (
    "invoice",
    "supplier",
    "payment",
    "total",
    "amount",
    "due",
    "date",
    "contract",
    "clause",
    "client",
    "project",
    "site",
    "report",
    "month",
    "quarter",
    "balance",
    "account",
    "transfer",
    "reference",
    "page",
    "section",
    "table",
    "scan",
    "schedule",
    "plan",
    "architect",
    "studio",
    "drawing",
    "permit",
    "budget",
    "estimate",
    "deposit",
    "balance",
    "VAT",
    "net",
    "gross",
    "line",
    "item",
    "delivery",
    "order",
    "receipt",
    "statement",
    "bank",
    "ledger",
    "category",
    "expense",
    "revenue",
    "margin",
    "signed",
    "draft",
    "revision",
    "meeting",
    "deadline",
    "approval",
    "the",
    "a",
    "of",
    "to",
    "and",
    "for",
    "with",
    "in",
    "on",
    "by",
    "from",
    "is",
    "was",
    "are",
    "be",
    "this",
    "that",
    "which",
    "will",
    "has",
    "have",
    "not",
    "all",
    "per",
    "each",
    "new",
    "old",
    "final",
)


def _prose(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        n = rng.randint(6, 16)
        words = [rng.choice(_WORDS) for _ in range(n)]
        if rng.random() < 0.4:
            words.insert(rng.randrange(n), f"{rng.randint(10, 99999):,}.{rng.randint(0, 99):02d}")
        sentence = " ".join(words).capitalize() + "."
        out.append(sentence)
        size += len(sentence) + 1
    return " ".join(out)[:chars]


def _code(rng: random.Random, chars: int) -> str:
    lines = ["import csv", "import sys", "from datetime import date", ""]
    while sum(len(x) + 1 for x in lines) < chars:
        name = f"{rng.choice(_WORDS[:40])}_{rng.choice(_WORDS[:40])}"
        lines += [
            f"def {name}(rows, month):",
            f'    """Sum {rng.choice(_WORDS[:40])} lines of one month."""',
            "    total = 0.0",
            "    for row in rows:",
            f"        if row['date'].startswith(month) and row['kind'] == '{rng.choice(_WORDS)}':",
            f"            total += float(row['amount']) * {rng.randint(1, 9)}",
            "    return round(total, 2)",
            "",
        ]
    return "\n".join(lines)[:chars]


def _csv(rng: random.Random, chars: int) -> str:
    lines = ["date,supplier,reference,net,vat,gross"]
    while sum(len(x) + 1 for x in lines) < chars:
        net = rng.randint(20, 9000) + rng.randint(0, 99) / 100
        lines.append(
            f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d},{rng.choice(_WORDS[:30])}"
            f" {rng.choice(('SARL', 'SAS', 'Ltd'))},INV-{rng.randint(1000, 99999)},"
            f"{net:.2f},{net * 0.2:.2f},{net * 1.2:.2f}"
        )
    return "\n".join(lines)[:chars]


def typical_turn(rng: random.Random, session: str, n: int) -> list[dict[str, Any]]:
    """Hook inputs of one realistic turn, as Claude Code sends them (1-4 tool calls).

    A user prompt of 100-300 characters, tool calls among Read/Bash/Write/Grep/Edit with
    structured inputs and outputs of a few hundred to a couple of thousand characters
    (PostToolUse ``tool_response`` shapes of Claude Code), and a final answer of 200-600.
    """
    month = f"2026-{rng.randint(1, 12):02d}"
    doc = f"documents/{rng.choice(('invoices', 'contracts', 'bank'))}/{month}-{n}.pdf"
    base = {"session_id": session, "cwd": "/workspace", "transcript_path": "/tmp/t.jsonl"}

    def tool(name: str, inp: dict[str, Any], out: Any) -> dict[str, Any]:
        return {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": name,
            "tool_input": inp,
            "tool_response": out,
            "tool_use_id": f"toolu_{rng.getrandbits(64):016x}",
        }

    def read(path: str, content: str) -> dict[str, Any]:
        lines = content.count("\n") + 1
        file = {"filePath": f"/workspace/{path}", "content": content, "numLines": lines}
        file |= {"startLine": 1, "totalLines": lines}
        return tool("Read", {"file_path": f"/workspace/{path}"}, {"type": "text", "file": file})

    def bash(command: str, stdout: str, description: str) -> dict[str, Any]:
        out = {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False}
        return tool("Bash", {"command": command, "description": description}, out)

    def write(path: str, content: str) -> dict[str, Any]:
        out = {"type": "create", "filePath": f"/workspace/{path}", "content": content}
        out |= {"structuredPatch": []}
        return tool("Write", {"file_path": f"/workspace/{path}", "content": content}, out)

    def grep(pattern: str, hits: str) -> dict[str, Any]:
        inp = {"pattern": pattern, "path": "/workspace/extractions", "output_mode": "content"}
        out = {"mode": "content", "numFiles": hits.count("\n") + 1, "filenames": []}
        out |= {"content": hits, "numLines": hits.count("\n") + 1}
        return tool("Grep", inp, out)

    def edit(path: str, old: str, new: str, original: str) -> dict[str, Any]:
        inp = {"file_path": f"/workspace/{path}", "old_string": old, "new_string": new}
        out = {"filePath": f"/workspace/{path}", "oldString": old, "newString": new}
        out |= {"originalFile": original, "structuredPatch": [], "userModified": False}
        return tool("Edit", inp, out)

    kind = rng.choice(("summary", "search", "code", "install", "data"))
    if kind == "summary":
        prompt = f"Can you summarise {doc} for me? Focus on amounts, dates and anything unusual."
        calls = [
            bash(
                f"pdftotext -layout {doc} - | head -200",
                _prose(rng, rng.randint(1200, 2400)),
                "Extract the text of the PDF",
            ),
            write(f"artifacts/summaries/{month}-{n}.md", _prose(rng, rng.randint(600, 1400))),
            read(f"extractions/invoices-{month}.csv", _csv(rng, rng.randint(500, 1800))),
            bash(
                f"pdfinfo {doc}",
                "Pages: 3\nEncrypted: no\nPage size: 595 x 842 pts (A4)\n",
                "Check page count",
            ),
        ]
    elif kind == "search":
        prompt = f"Which invoices from {month} are above 500 EUR and not yet paid? List them."
        hits = "\n".join(
            f"invoices-{month}.csv:{i}:{_csv(rng, 90).splitlines()[-1]}"
            for i in range(rng.randint(4, 20))
        )
        calls = [
            grep(f"{month}-[0-9]{{2}},.*,[5-9][0-9]{{2}}\\.", hits),
            read(f"extractions/bank-{month}.csv", _csv(rng, rng.randint(800, 2200))),
            bash(
                f'csvsql --query "select * from invoices where paid = 0" inv-{month}.csv',
                _csv(rng, rng.randint(300, 900)),
                "Unpaid invoices",
            ),
        ]
    elif kind == "code":
        prompt = (
            f"The monthly report script crashes for {month} with a KeyError on 'vat'. "
            "Please fix it and rerun."
        )
        original = _code(rng, rng.randint(1400, 2600))
        calls = [
            read("artifacts/scripts/monthly_report.py", original),
            edit(
                "artifacts/scripts/monthly_report.py", "row['vat']", "row.get('vat', 0.0)", original
            ),
            bash(
                f"python artifacts/scripts/monthly_report.py --month {month}",
                _csv(rng, rng.randint(300, 1200)),
                "Rerun the report",
            ),
            bash(
                "git -C artifacts/scripts commit -am 'report: tolerate missing vat'",
                "[main 4f2a9c1] report: tolerate missing vat\n 1 file changed, 1 insertion(+)",
                "Commit the fix",
            ),
        ]
    elif kind == "install":
        pkg = rng.choice(("pandas openpyxl", "matplotlib", "pdfplumber", "csvkit"))
        prompt = (
            f"I need to read the XLSX ledgers. Please install {pkg} in the venv and check "
            "that it imports. From now on always use the venv, never system pip."
        )
        log_lines = [
            f"Collecting {p}\n  Downloading {p}-2.{rng.randint(0, 9)}.{rng.randint(0, 9)}"
            f"-cp311-cp311-manylinux_2_17_x86_64.whl ({rng.randint(1, 12)}.{rng.randint(0, 9)} MB)"
            for p in [*pkg.split(), "numpy", "python-dateutil", "pytz", "et-xmlfile"]
        ]
        calls = [
            bash(
                f".venv/bin/pip install {pkg}",
                "\n".join(log_lines) + f"\nSuccessfully installed {pkg} numpy-2.1.3 pytz-2024.2",
                "Install",
            ),
            bash(
                f".venv/bin/python -c 'import {pkg.split()[0]}; print(\"ok\")'",
                "ok\n",
                "Check the import",
            ),
            write("artifacts/notes/venv.md", _prose(rng, rng.randint(200, 500))),
        ]
    else:
        prompt = (
            f"Build the expense table for {month} by supplier and save it as CSV for Paul. "
            "Use DD/MM/YYYY dates in the summary please."
        )
        table = _csv(rng, rng.randint(800, 2000))
        calls = [
            bash(
                f"python -m extract_invoices documents/invoices/{month}/ -o /tmp/x.csv",
                _prose(rng, rng.randint(200, 600)),
                "Extract",
            ),
            write(f"artifacts/reports/{month}-by-supplier.csv", table),
            read(f"artifacts/reports/{month}-by-supplier.csv", table),
        ]
    prompt = (prompt + " " + _prose(rng, rng.randint(0, 150))).strip()[:300]
    calls = calls[: rng.randint(1, len(calls))]
    answer = _prose(rng, rng.randint(200, 600))
    return [
        {**base, "hook_event_name": "UserPromptSubmit", "prompt": prompt},
        *calls,
        {**base, "hook_event_name": "Stop", "last_assistant_message": answer},
    ]


def capture_turns(layout: Layout, turns: list[list[dict[str, Any]]]) -> None:
    """Write turns through the real in-process hook path (Capture.handle, hygiene included)."""
    cap = Capture(CaptureConfig(workspace=layout.root), keep_open=True)
    try:
        for events in turns:
            for event in events:
                cap.handle(event)
    finally:
        cap.close()


def record_turns(layout: Layout, templates: list[list[dict[str, Any]]], n: int) -> None:
    """Fast bulk set-up of ``n`` turns: schema.transcript.record on one connection.

    Each template turn goes through hygiene (build_event) once; its copies reuse the sanitised
    payloads with a fresh uid, timestamp and session (100 turns per session).
    """
    config = CaptureConfig(workspace=layout.root)
    clean = [
        [e for e in (build_event(d, config) for d in turn) if e is not None] for turn in templates
    ]
    conn = schema.connect(layout.transcript_db, "transcript")
    try:
        for i in range(n):
            session = f"bench-{i // 100}"
            for event in clean[i % len(clean)]:
                record(
                    conn,
                    Event(
                        os.urandom(16).hex(),
                        time.time(),
                        session,
                        event.kind,
                        event.tool_name,
                        event.payload,
                    ),
                )
    finally:
        conn.close()
