"""Benchmark helpers: stand-in curator replies, ``wsd run`` processes and /proc readings."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw

from wsd.daemon.runtime import log as wsd_log
from wsd.daemon.runtime.config import Config
from wsd.daemon.standin.bridge import BridgeStandin, Reply
from wsd.schema.layout import Layout

WSD = str(Path(sys.executable).parent / "wsd")
TURN_ID = re.compile(r"^\[turn (\d+) ", re.M)
#: Output tokens assumed for one curator reply (a few learnings and one md update).
OUTPUT_TOKENS = 400

# -- helpers: stand-in replies, daemon processes, /proc ------------------------------------------


def fact_per_turn(body: dict[str, Any]) -> Reply:
    """A cheap curator: one FACT line per turn in the request."""
    text = "".join(b.get("text", "") for b in body["messages"][0]["content"])
    ids = TURN_ID.findall(text)
    return Reply.text("\n".join(f"FACT: Turn {i} was about a task [turn {i}]" for i in ids))


def realistic_reply(body: dict[str, Any]) -> Reply:
    """Learnings, an action and a short context.md update; usage says 400 output tokens."""
    text = "".join(b.get("text", "") for b in body["messages"][0]["content"])
    ids = TURN_ID.findall(text) or ["0"]
    ids = [ids[0], ids[-1]]
    lines = [
        f"PREFERENCE: Marie wants the venv used for every install, not system pip [turn {ids[0]}]",
        f"FACT: Unpaid invoices over 500 EUR are in extractions/invoices.csv [turn {ids[1]}]",
        "TOOL_INSTALL: pandas 2.2 and openpyxl 3.1 installed in /workspace/.venv for XLSX ledgers",
        "CORRECTION: monthly_report.py must tolerate a missing 'vat' column (use 0.0)",
        "ACTION: [normal] Send Paul the by-supplier CSV for the month once Marie approves it",
        "CONTEXT_MD_UPDATE:",
        "# Context",
        "",
        "## Active tasks",
        "- Reconcile October 2026 bank lines against invoices (9 unmatched left).",
        "- Build a chart of monthly expenses by supplier for 2026 (for the accountant).",
        "- Waiting for Marie: password of the encrypted contract-2026-07.pdf.",
        "- Decision: invoices under 50 EUR are grouped as 'small supplies' in reports.",
        "- Reminder: quarterly VAT summary due 15/01/2027.",
        "- monthly_report.py fixed for missing 'vat'; rerun for the last three months.",
        "- Last monthly report: 2026-10 (sent 02/11/2026).",
    ]
    return Reply.text("\n".join(lines), usage={"output_tokens": OUTPUT_TOKENS})


def prompt_config(root: str, url: str, **overrides: Any) -> Config:
    """An in-process worker's settings against the stand-in at ``url``, on the prompt lane,
    the watcher off and the daily cap off (a bench's backlog costs more than $1)."""
    settings: dict[str, Any] = {
        "workspace": root,
        "bridge_url": url,
        "api_key": "bench",
        "watch": False,
        "curation": "prompt",
        "daily_budget_usd": 0.0,
        "request_timeout": 60.0,
    }
    return Config(**(settings | overrides))


def daemon_env(layout: Layout, standin: BridgeStandin, **extra: str) -> dict[str, str]:
    """A ``wsd run`` environment against ``standin``, on the prompt lane: these rows time the
    loop (a flush's latency, a drain, idle cost), which a Message Batch's polls would only
    blur; the economy lane has its own rows (bench/economy_bench.py). ``extra`` on top."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WSD_", "ANTHROPIC_"))}
    env |= {
        "WSD_WORKSPACE": layout.root,
        "ANTHROPIC_BASE_URL": standin.url,
        "WSD_BRIDGE_TOKEN": "bench-dummy-token",
        "WSD_LOG_FORMAT": "json",
        "WSD_CURATION": "prompt",
    }
    return env | extra


@contextmanager
def running_daemon(env: dict[str, str], log_path: str) -> Iterator[subprocess.Popen[bytes]]:
    """``wsd run`` as a child process; SIGTERM (then SIGKILL) on the way out."""
    with open(log_path, "ab") as log:
        proc = subprocess.Popen([WSD, "run"], env=env, stdout=log, stderr=log)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _listening_unix_sockets() -> set[str]:
    """``socket:[inode]`` of every listening Unix socket (the daemon's semantic socket is one:
    an address clients may connect to, not a connection the daemon holds)."""
    found = set()
    try:
        with open("/proc/net/unix", encoding="ascii") as fh:
            next(fh)
            for line in fh:
                fields = line.split()
                if len(fields) >= 7 and int(fields[3], 16) & 0x10000:  # __SO_ACCEPTCON
                    found.add(f"socket:[{fields[6]}]")
    except OSError:
        pass
    return found


def open_fds(pid: int) -> tuple[int, int, list[str]]:
    """(database files, sockets, all targets) among a process's open file descriptors;
    listening Unix sockets are left out (see _listening_unix_sockets)."""
    targets = []
    folder = f"/proc/{pid}/fd"
    listening = _listening_unix_sockets()
    for name in os.listdir(folder):
        try:
            target = os.readlink(os.path.join(folder, name))
        except FileNotFoundError:
            continue  # closed while we looked
        if target not in listening:
            targets.append(target)
    dbs = sum(t.endswith((".db", ".db-wal", ".db-shm")) for t in targets)
    sockets = sum(t.startswith("socket:") for t in targets)
    return dbs, sockets, targets


def wait_for(check: Callable[[], bool], timeout: float, every: float = 0.005) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(every)
    return check()


def count_rows(path: str, sql: str) -> int:
    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    conn.set_busy_timeout(2000)
    try:
        row = conn.execute(sql).fetchone()
        return int(row[0] or 0) if row else 0
    finally:
        conn.close()


@contextmanager
def quiet_logs() -> Iterator[None]:
    """In-process daemon logs rendered as in production (JSON) but sent to /dev/null."""
    import structlog

    saved = structlog.get_config()
    with open(os.devnull, "w", encoding="utf-8") as sink:
        wsd_log.configure("json", stream=sink)
        try:
            yield
        finally:
            structlog.configure(**saved)
