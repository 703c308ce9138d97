"""The hooks under concurrency and hostile input: nothing lost, nothing duplicated, exit 0."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.conftest import venv_script
from wsd import schema
from wsd.schema import spool
from wsd.schema.layout import Layout
from wsd.schema.transcript import close_stale_turns, record

WRITER = r"""
import json, sys
from collections import Counter
from wsd.hooks.capture import Capture, CaptureConfig
workspace, proc, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cap = Capture(CaptureConfig(workspace=workspace))
outcomes = Counter()
session = f"proc-{proc}"
for i in range(count):
    phase = i % 4
    if phase == 0:
        data = {"hook_event_name": "UserPromptSubmit", "session_id": session, "prompt": f"p{i}"}
    elif phase in (1, 2):
        data = {"hook_event_name": "PostToolUse", "session_id": session, "tool_name": "Bash",
                "tool_input": {"command": f"echo {i}"}, "tool_response": f"out {i}"}
    else:
        data = {"hook_event_name": "Stop", "session_id": session,
                "last_assistant_message": f"answer {i}"}
    outcomes[cap.handle(data)] += 1
print(json.dumps(outcomes))
"""


def test_eight_writers_and_a_daemon_like_connection_lose_nothing(layout: Layout) -> None:
    """8 processes x 1,000 hook events beside a reader/writer: all present, none duplicated."""
    procs, per_proc = 8, 1000
    stop = threading.Event()
    errors: list[BaseException] = []

    def daemon_like() -> None:
        conn = schema.connect(layout.transcript_db, "transcript")
        try:
            while not stop.is_set():
                conn.execute("SELECT count(*), max(id) FROM events").fetchall()
                close_stale_turns(conn, quiet_before=0)  # a write transaction, like the daemon
                with schema.write_txn(conn):
                    conn.execute("UPDATE observations SET processed = 1 WHERE processed = 0")
        except BaseException as exc:
            errors.append(exc)
        finally:
            conn.close()

    other = threading.Thread(target=daemon_like)
    other.start()
    children = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, layout.root, str(p), str(per_proc)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for p in range(procs)
    ]
    results = [c.communicate(timeout=300) for c in children]
    stop.set()
    other.join()
    assert errors == []
    totals: dict[str, int] = {}
    for child, (out, err) in zip(children, results, strict=True):
        assert child.returncode == 0, err
        for key, value in json.loads(out).items():
            totals[key] = totals.get(key, 0) + value
    assert set(totals) <= {"written", "spooled"}, totals
    assert sum(totals.values()) == procs * per_proc
    if totals.get("spooled"):
        conn = schema.connect(layout.transcript_db, "transcript")
        taken = spool.take(layout.spool)
        assert taken is not None
        spool.ingest_file(taken, lambda ev: record(conn, ev, via="spool"))
        conn.close()
    conn = apsw.Connection(layout.transcript_db)
    per_session = dict(conn.execute("SELECT session_id, count(*) FROM events GROUP BY 1"))
    assert per_session == {f"proc-{p}": per_proc for p in range(procs)}
    assert conn.execute("SELECT count(DISTINCT uid) FROM events").fetchone() == (procs * per_proc,)
    # A spooled event of a turn already marked processed comes in as an addendum (amends), part
    # of its turn, not a turn; either way no event is left outside an observation.
    turns = dict(
        conn.execute(
            "SELECT session_id, count(*) FROM observations WHERE amends IS NULL GROUP BY 1"
        )
    )
    assert turns == {f"proc-{p}": per_proc // 4 for p in range(procs)}
    assert conn.execute("SELECT count(*) FROM events WHERE observation_id IS NULL").fetchone() == (
        0,
    )
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()


def _payloads(seed: int = 20261121) -> list[tuple[bytes, bool]]:
    """(stdin bytes, is_valid) — at least 1,000 hostile payloads with valid ones mixed in."""
    rng = random.Random(seed)
    events = ["UserPromptSubmit", "PostToolUse", "Stop", "PreCompact", "SessionStart", "SessionEnd"]
    out: list[tuple[bytes, bool]] = []

    def valid(i: int) -> bytes:
        kind = events[i % len(events)]
        data: dict[str, Any] = {"hook_event_name": kind, "session_id": f"fuzz-{i}"}
        if kind == "UserPromptSubmit":
            data["prompt"] = f"valid prompt {i} ünïcødé ✓"
        elif kind == "PostToolUse":
            data |= {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_response": i}
        elif kind == "Stop":
            data["last_assistant_message"] = f"answer {i}"
        return json.dumps(data).encode()

    huge = "A" * (10 * 1024 * 1024)
    for i in range(550):
        kind = i % 11
        if kind == 0:
            out.append((valid(i), True))
        elif kind == 1:  # invalid JSON
            good = valid(i)
            out.append((good[: rng.randrange(1, len(good))], False))
        elif kind == 2:  # empty or whitespace stdin
            out.append((rng.choice([b"", b" ", b"\n\n", b"\t"]), False))
        elif kind == 3:  # missing fields
            out.append(
                (
                    json.dumps(
                        rng.choice(
                            [
                                {},
                                {"session_id": "x"},
                                {"hook_event_name": "Stop"},
                                {"hook_event_name": "PostToolUse"},
                            ]
                        )
                    ).encode(),
                    False,
                )
            )
        elif kind == 4:  # wrong types (the event is still valid: coerced, not lost)
            data = {
                "hook_event_name": rng.choice(events),
                "session_id": f"typed-{i}",
                "prompt": rng.choice([None, 1, [1, 2], {"a": "b"}, True]),
                "tool_name": rng.choice([None, 3, ["x"], "Bash"]),
                "tool_input": rng.choice(["str", 5, None, [[[]]]]),
                "tool_response": rng.choice([None, {"k": [1.5, float("1e308")]}, "x"]),
                "last_assistant_message": rng.choice([None, 7, {"t": 1}]),
            }
            out.append((json.dumps(data).encode(), True))
        elif kind == 5:  # wrong type for the essentials
            out.append(
                (
                    json.dumps(
                        {
                            "hook_event_name": rng.choice([1, None, ["Stop"], "stop"]),
                            "session_id": rng.choice([None, [], {}, ""]),
                        }
                    ).encode(),
                    False,
                )
            )
        elif kind == 6:  # binary junk and invalid UTF-8
            out.append((bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400))), False))
        elif kind == 7:  # deep nesting
            depth = rng.choice([100, 5000, 100_000])
            body = (
                f'{{"hook_event_name": "PostToolUse", "session_id": "deep-{i}", "tool_name": "X",'
            )
            nested = "[" * depth + "]" * depth
            out.append(((body + f'"tool_input": {nested}}}').encode(), depth <= 100))
        elif kind == 8:  # unknown events
            out.append(
                (json.dumps({"hook_event_name": f"Unknown{i}", "session_id": "u"}).encode(), False)
            )
        elif kind == 9:  # invalid UTF-8 inside otherwise valid JSON
            out.append(
                (
                    b'{"hook_event_name": "UserPromptSubmit", "session_id": "bin-%d",'
                    b' "prompt": "caf\xc3\x28 \xff\xfe"}' % i,
                    True,
                )
            )
        else:  # NUL bytes, lone surrogates, control characters
            text = rng.choice(["nul\\u0000inside", "lone \\ud800 surrogate", "\\u001b[31mred"])
            out.append(
                (
                    (
                        f'{{"hook_event_name": "UserPromptSubmit", "session_id": "ctl-{i}",'
                        f' "prompt": "{text}"}}'
                    ).encode(),
                    True,
                )
            )
    for i in range(3):  # a few 10 MB fields
        data = {
            "hook_event_name": "PostToolUse",
            "session_id": f"huge-{i}",
            "tool_name": "Read",
            "tool_input": {"file_path": "big"},
            "tool_response": huge + str(i),
        }
        out.append((json.dumps(data).encode(), True))
    rng.shuffle(out)
    return out


@pytest.mark.slow
def test_hundreds_of_hostile_payloads_never_break_the_hook(
    layout: Layout, hook_env: dict[str, str]
) -> None:
    """Every hostile payload exits 0 with no stdout; the db stays sound; valid ones are kept
    (each a distinct event: one sent twice at once is one event, as from two wirings)."""
    payloads = _payloads()
    assert len(payloads) >= 500  # 50 of each of 11 shapes (1,100 took a fifteenth of make test)
    hook = venv_script("wsd-hook")

    def run(item: tuple[bytes, bool]) -> tuple[int, str, bool]:
        proc = subprocess.run([hook], input=item[0], env=hook_env, capture_output=True, timeout=60)
        return proc.returncode, proc.stdout.decode("utf-8", "replace"), item[1]

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(run, payloads))
    elapsed = time.monotonic() - started
    assert all(code == 0 for code, _, _ in results), [r for r in results if r[0] != 0][:3]
    assert all(out == "" for _, out, _ in results)
    conn = apsw.Connection(layout.transcript_db)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    (events,) = conn.execute("SELECT count(*) FROM events").fetchone()
    # On a loaded machine a hook may find the database busy past its wait and spool the
    # event instead (no daemon runs here to ingest it): kept all the same.
    spooled = sum(
        len(Path(path).read_bytes().splitlines()) for path in spool.to_ingest(layout.spool)
    )
    assert events + spooled == sum(1 for *_, ok in results if ok), f"in {elapsed:.0f}s"
    for (payload,) in conn.execute("SELECT payload FROM events"):
        json.loads(payload)
        assert "\x00" not in payload
        assert len(payload) < 20_000
    conn.close()
