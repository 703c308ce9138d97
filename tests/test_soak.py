"""A short chaos soak (python -m soak) inside the suite: every promise under combined faults."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent


def test_a_short_soak_keeps_every_invariant() -> None:
    """90 seconds of writers, kills, Bridge faults, a full disk, freezes, a held lock,
    rebuild, backup, doctor --fix, a hand edit, a second daemon and a deleted memory.db, on
    the economy lane with Message Batch faults (errored, a hung results read, truncated
    results), an urgent flush and the batches API gone a while, from a fixed seed: after the
    drain every invariant holds (the soak prints each)."""
    # Not under tmp_path: its depth leaves no room for supervisord's socket path (107 bytes).
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run(
        [sys.executable, "-m", "soak", "--minutes", "1.5", "--seed", "20261181"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    report = result.stdout + result.stderr[-3000:]
    assert result.returncode == 0, report
    assert report.count("\nok   ") >= 14 and "\nFAIL" not in report, report
    assert "kill9" in report and "delete_memory_db" in report, report
    assert "batch:" in report and "batches_absent" in report, report
