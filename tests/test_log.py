"""The daemon's log lines: what a failure logs, and what it never does (a person's words)."""

from __future__ import annotations

import io
import json

import structlog

from wsd.daemon.runtime.log import configure, get_logger


def _fail_holding(words: str) -> None:
    prompt = words  # a frame's local, as the worker's hold a turn's text
    raise OSError(f"disk I/O error ({len(prompt)} characters in hand)")


def test_a_logged_failure_names_the_error_and_never_a_frames_locals() -> None:
    """A JSON log line for a failure carries its type, message and frames but not the
    locals of any frame (issue 45: a full disk logged 80 characters of each local on
    every failed pass, and a local can hold a person's prompt)."""
    out = io.StringIO()
    configure("json", out)
    try:
        _fail_holding("my passport number is in the blue folder")
    except OSError:
        get_logger(component="worker").exception("pass_failed")
    finally:
        structlog.reset_defaults()
    line = json.loads(out.getvalue().splitlines()[-1])
    (exc,) = line["exception"]
    assert (exc["exc_type"], exc["exc_value"]) == (
        "OSError",
        "disk I/O error (40 characters in hand)",
    )
    assert [f["name"] for f in exc["frames"]][-1] == "_fail_holding"
    assert "passport" not in out.getvalue()
    assert all("locals" not in f or not f["locals"] for f in exc["frames"])
