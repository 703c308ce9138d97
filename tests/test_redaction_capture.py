"""Secrets never reach disk: every corpus secret is absent from every byte after capture."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import venv_script
from tests.secrets_corpus import GITLEAKS_SECRETS, ORDINARY_TEXT, SECRETS, sensitive_part
from wsd import schema
from wsd.hooks.capture import Capture, CaptureConfig
from wsd.schema.layout import Layout


def _events(session: str) -> list[dict[str, Any]]:
    """Every secret in a prompt, a nested tool input, a tool output and a final answer."""
    out: list[dict[str, Any]] = []
    for i, (_kind, text) in enumerate(SECRETS):
        plain = ORDINARY_TEXT[i % len(ORDINARY_TEXT)]
        out += [
            {
                "hook_event_name": "UserPromptSubmit",
                "session_id": session,
                "prompt": f"{plain}\n{text}\nthanks",
            },
            {
                "hook_event_name": "PostToolUse",
                "session_id": session,
                "tool_name": "Bash",
                "tool_input": {"command": f"echo '{text}'", "env": {"nested": [text]}},
                "tool_response": {"stdout": f"{plain} {text}", "stderr": ""},
            },
            {
                "hook_event_name": "PostToolUseFailure",
                "session_id": session,
                "tool_name": "Read",
                "tool_input": {"file_path": "/x"},
                "error": text,
            },
            {
                "hook_event_name": "Stop",
                "session_id": session,
                "last_assistant_message": f"I saw {text} in the output.",
            },
        ]
    return out


def _all_bytes(layout: Layout) -> bytes:
    blob = b""
    for name in sorted(os.listdir(layout.memory_dir)):
        blob += Path(layout.memory_dir, name).read_bytes()
    return blob


def _assert_clean(blob: bytes) -> None:
    leaked = [kind for kind, text in SECRETS if sensitive_part(text).encode() in blob]
    assert leaked == []


def test_in_process_capture_stores_no_secret(layout: Layout) -> None:
    """Through the SDK-path capture, no corpus secret is in any file of .os/memory/."""
    cap = Capture(CaptureConfig(workspace=layout.root, max_field_chars=100_000))
    for event in _events("s1"):
        assert cap.handle(event) == "written"
    cap.close()
    blob = _all_bytes(layout)
    _assert_clean(blob)
    assert len(SECRETS) >= 20
    survived = [t for t in ORDINARY_TEXT if json.dumps(t)[1:-1].encode() in blob]
    assert len(survived) >= len(ORDINARY_TEXT) - 2, "ordinary text must survive redaction"
    conn = schema.connect(layout.transcript_db, "transcript")
    markers = conn.execute("SELECT count(*) FROM events WHERE payload LIKE '%[REDACTED:%'")
    assert markers.fetchone()[0] >= len(SECRETS)
    conn.close()


@pytest.mark.slow
def test_command_hook_and_spool_store_no_secret(layout: Layout, hook_env: dict[str, str]) -> None:
    """Through wsd-hook, including events spooled while the database is locked: no secret."""
    hook = venv_script("wsd-hook")
    # Each secret once through the command hook, in each of the four places in turn (all
    # four for every secret: the in-process test above; a process per event and place took a
    # ninth of make test), and of the gitleaks rules' forms (issue 33: they test rules, which
    # the in-process test holds for every form) one in four.
    first = len(SECRETS) - len(GITLEAKS_SECRETS)
    events = [
        e
        for i, e in enumerate(_events("s2"))
        if i % 4 == (i // 4) % 4 and (i // 4 < first or (i // 4 - first) % 4 == 0)
    ]
    blocker = schema.connect(layout.transcript_db, "transcript")
    env = {**hook_env, "WSD_HOOK_TIMEOUT_MS": "10"}
    for i, event in enumerate(events[:60]):
        if i == 30:
            blocker.execute("BEGIN IMMEDIATE")  # the rest of these spool
        subprocess.run([hook], input=json.dumps(event).encode(), env=env, check=True)
    blocker.execute("ROLLBACK")
    blocker.close()
    assert os.path.getsize(layout.spool) > 0
    for event in events[60:]:
        subprocess.run([hook], input=json.dumps(event).encode(), env=hook_env, check=True)
    _assert_clean(_all_bytes(layout))
