"""Capture benchmarks: one in-process hook write, and the whole `wsd-hook` process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import Row, median
from bench.floors import BareInsert, alternated, ratio_row
from wsd.daemon.ops.bootstrap import init_workspace
from wsd.hooks.capture import Capture, CaptureConfig
from wsd.schema.layout import Layout

READER = r"""
import sys, time, apsw
path = sys.argv[1]
while True:  # a daemon-like reader: short read transactions, back to back
    conn = apsw.Connection(path)
    conn.set_busy_timeout(5000)
    conn.execute("SELECT count(*), max(id) FROM events").fetchall()
    conn.execute("SELECT id FROM observations WHERE processed = 0 ORDER BY id LIMIT 25").fetchall()
    conn.close()
    time.sleep(0.005)
"""


def _events(i: int) -> dict[str, object]:
    phase = i % 4
    if phase == 0:
        return {
            "hook_event_name": "UserPromptSubmit",
            "session_id": "bench",
            "prompt": f"Please summarise document {i} and keep dates as DD/MM/YYYY.",
        }
    if phase in (1, 2):
        return {
            "hook_event_name": "PostToolUse",
            "session_id": "bench",
            "tool_name": "Read",
            "tool_input": {"file_path": f"/workspace/documents/doc{i}.md"},
            "tool_response": "Invoice 2026-11-02 total 1,234.50 EUR. " * 12,
        }
    return {
        "hook_event_name": "Stop",
        "session_id": "bench",
        "last_assistant_message": f"Summary of document {i}: three invoices, all paid.",
    }


#: Hook write over a bare WAL insert of the same event (p50, p99), SDK callbacks (hook_write).
#: p50 measured 15.97 to 16.51 over seven runs of this tree (issue 36): 18.5 fails a 20 %
#: regression. p99 measured 11.5 to 18.9 (the 30 slowest of 3,000 writes, against a reader
#: polling): 24 catches a 50 % one, no less without failing on noise.
HOOK_WRITE_TARGETS = (18.5, 24.0)


def hook_write(n: int = 3000) -> list[Row]:
    """p50/p99 of Capture.handle for one event, with a reader process polling the database,
    over a bare autocommit WAL insert of the same event's JSON (timed alternately)."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        layout = Layout(tmp)
        init_workspace(layout)
        bare = BareInsert(tmp)
        reader = subprocess.Popen([sys.executable, "-c", READER, layout.transcript_db])
        try:
            for keep_open, label in (
                (True, "SDK callbacks (kept open while active)"),
                (False, "connection per event"),
            ):
                cap = Capture(CaptureConfig(workspace=tmp), keep_open=keep_open)
                events = [(_events(i), json.dumps(_events(i))) for i in range(n + 200)]
                mine, floor = alternated(
                    events, lambda e, c=cap: c.handle(e[0]), lambda e: bare(e[1]), warm=200
                )
                cap.close()
                gate = keep_open  # what memory_hooks() uses
                for pct, target in zip((50, 99), HOOK_WRITE_TARGETS, strict=True):
                    rows.append(
                        ratio_row(
                            f"hook write p{pct}, {label} / bare WAL insert",
                            mine[200:],
                            floor[200:],
                            target if gate else None,
                            "autocommit INSERT of the event's JSON, WAL, kept open",
                            pct=pct,
                            note="reader running",
                        )
                    )
        finally:
            reader.kill()
            reader.wait()
            bare.close()
    return rows


def hook_process(runs: int = 40) -> list[Row]:
    """Median wall time of a whole `wsd-hook` run vs `python -c pass`, alternated in one loop."""
    python = sys.executable
    hook = str(Path(python).parent / "wsd-hook")
    with tempfile.TemporaryDirectory() as tmp:
        init_workspace(Layout(tmp))
        # As deployed: pip compiles bytecode at install time. A checkout under
        # PYTHONDONTWRITEBYTECODE=1 would recompile every module on every run.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["WSD_WORKSPACE"] = tmp
        payload = json.dumps(_events(1)).encode()
        bare, hooked = [], []
        for _ in range(5):  # warm the page cache (and write the bytecode once)
            subprocess.run([python, "-c", "pass"], env=env, check=True)
            subprocess.run([hook], input=payload, env=env, check=True)
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run([python, "-c", "pass"], env=env, check=True)
            bare.append(time.perf_counter() - started)
            started = time.perf_counter()
            subprocess.run([hook], input=payload, env=env, check=True)
            hooked.append(time.perf_counter() - started)
    ratio = median(hooked) / median(bare)
    secret_ratio = _secret_field_ratio(python, hook, runs // 2)
    return [
        Row("wsd-hook process, median", median(hooked) * 1000, "ms", "-", None, f"n={runs}"),
        Row("python3 -c pass, median", median(bare) * 1000, "ms", "-", None, "same run"),
        Row(
            "wsd-hook / python -c pass",
            ratio,
            "x",
            "<= 2.0",
            ratio <= 2.0,
            "typical event: no secret-shaped text",
        ),
        Row(
            "same, event with secret-shaped text",
            secret_ratio,
            "x",
            "-",
            None,
            "loads re to redact (worst case)",
        ),
    ]


def _secret_field_ratio(python: str, hook: str, runs: int) -> float:
    """The ratio when a field holds secret-shaped text, so the redaction regex must load."""
    with tempfile.TemporaryDirectory() as tmp:
        init_workspace(Layout(tmp))
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["WSD_WORKSPACE"] = tmp
        event = _events(1)
        event["tool_response"] = "export API_KEY=Zx81kQp0Lm2Nb7Vc # from https://example.org"
        payload = json.dumps(event).encode()
        bare, hooked = [], []
        for i in range(runs + 3):
            started = time.perf_counter()
            subprocess.run([python, "-c", "pass"], env=env, check=True)
            b = time.perf_counter() - started
            started = time.perf_counter()
            subprocess.run([hook], input=payload, env=env, check=True)
            if i >= 3:
                bare.append(b)
                hooked.append(time.perf_counter() - started)
    return median(hooked) / median(bare)


def redaction() -> list[Row]:
    """The redaction corpus (tests/secrets_corpus.py) through the hook's hygiene: how many secret
    forms leave no 12-character piece of their secret, how many ordinary lines stay unchanged."""
    from tests.secrets_corpus import ORDINARY_TEXT, SECRETS, SENSITIVE
    from wsd.redact import clean_text

    def leaks(secret: str, out: str) -> bool:
        return any(secret[i : i + 12] in out for i in range(max(1, len(secret) - 11)))

    caught = sum(not leaks(SENSITIVE[t], clean_text(t, 100_000)) for _, t in SECRETS)
    kept = sum(clean_text(t, 100_000) == t for t in ORDINARY_TEXT)
    started = time.perf_counter()
    for _, t in SECRETS:
        clean_text(t, 100_000)
    per_form = (time.perf_counter() - started) * 1000 / len(SECRETS)
    # A typical field: 2,000 characters of ordinary output, no secret (was a timed assert in
    # tests/test_hygiene.py, which failed under parallel test workers: timing is the bench's).
    field = ("\n".join(ORDINARY_TEXT) * 40)[:2000]
    tokens = re.compile(r"\S+")
    per_field, per_scan = alternated([field] * 450, clean_text, tokens.findall, warm=50)
    forms, lines = len(SECRETS), len(ORDINARY_TEXT)
    return [
        Row("redaction: secret forms caught", 100 * caught / forms, "%", "100", caught == forms,
            f"{caught}/{forms} forms, {len({k for k, _ in SECRETS})} kinds"),
        Row("redaction: ordinary lines kept", 100 * kept / lines, "%", "100", kept == lines,
            f"{kept}/{lines} lines unchanged"),
        Row("redaction: clean_text per form", per_form, "ms", "-", None, "warm, compiled"),
        ratio_row("redaction: a 2,000-char ordinary field / one regex scan of it", per_field,
                  per_scan, REDACTION_TARGET, "re.findall(r'\\S+') over the field", pct=50,
                  note="no secret; the target was 2 ms"),
    ]  # fmt: skip


#: Redaction of an ordinary field over one regex scan of it (redaction): 33.6 and 34.1 on
#: this tree (issue 36), so 37 fails a 20 % regression.
REDACTION_TARGET = 37.0
