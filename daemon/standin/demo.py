"""``make demo``: the whole loop on a throw-away workspace, in about ten seconds.

Starts the stand-in Bridge (rule-based curator) and the real daemon (``wsd
run`` as a child process), replays a realistic agent session through the real
command hook, waits for curation, prints what the agent would now know, and
stops everything cleanly. Nothing leaves localhost; no key is involved.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import BridgeStandin, Reply
from wsd.daemon.store import Store
from wsd.schema.layout import CURATED_FILES, Layout

SESSION = "demo-session-1"


def _session(workspace: Path) -> list[dict[str, Any]]:
    """A short but realistic session: preference, correction, file writes, a tool install."""
    summary = workspace / "artifacts" / "invoice-summary.md"

    def ev(kind: str, **fields: Any) -> dict[str, Any]:
        return {
            "hook_event_name": kind,
            "session_id": SESSION,
            "cwd": str(workspace),
            "transcript_path": "/tmp/demo.jsonl",
            **fields,
        }

    def tool(name: str, inp: dict[str, Any], out: Any) -> dict[str, Any]:
        return ev(
            "PostToolUse",
            tool_name=name,
            tool_input=inp,
            tool_response=out,
            tool_use_id=f"toolu_{name}_{len(str(inp))}",
        )

    return [
        ev("SessionStart", source="startup"),
        ev(
            "UserPromptSubmit",
            prompt="Hi! I prefer dates written as DD/MM/YYYY and short "
            "answers. Can you look at the invoice I uploaded?",
        ),
        tool(
            "Read",
            {"file_path": str(workspace / "documents" / "invoice-0042.txt")},
            "Invoice 0042 - ACME GmbH - 2026-11-02 - total 1,234.50",
        ),
        ev(
            "Stop",
            last_assistant_message="Invoice 0042 from ACME GmbH, dated 02/11/2026, "
            "total 1,234.50 USD.",
        ),
        ev(
            "UserPromptSubmit",
            prompt="No, the currency is EUR, not USD. ACME always bills in euros.",
        ),
        ev("Stop", last_assistant_message="Sorry - total 1,234.50 EUR."),
        ev(
            "UserPromptSubmit",
            prompt="Please install pandas and write a summary of the "
            "invoice to artifacts/invoice-summary.md",
        ),
        tool(
            "Bash",
            {"command": "pip install pandas", "description": "install pandas"},
            {"stdout": "Successfully installed pandas-2.3.1", "exit_code": 0},
        ),
        tool(
            "Write",
            {"file_path": str(summary), "content": "# Invoice 0042\n- 1,234.50 EUR\n"},
            {"type": "create", "filePath": str(summary)},
        ),
        ev("Stop", last_assistant_message="Installed pandas and wrote the summary."),
        ev(
            "UserPromptSubmit",
            prompt="Thanks. Remind me to send the summary to Anna on "
            "Friday. My API key is sk-ant-api03-" + "x" * 40 + " by the way.",
        ),
        ev("Stop", last_assistant_message="Noted - I will remind you on Friday."),
        ev("SessionEnd", reason="exit"),
    ]


def _hook(event: dict[str, Any], env: dict[str, str]) -> None:
    hook = str(Path(sys.executable).parent / "wsd-hook")
    subprocess.run([hook], input=json.dumps(event).encode(), env=env, check=True)


def _banner(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(0, 66 - len(title)))


def run(keep: bool) -> int:
    root = Path(tempfile.mkdtemp(prefix="wsd-demo-"))
    layout = Layout(str(root))
    replies: list[str] = []

    def curator(body: dict[str, Any]) -> Any:
        replies.append(rule_curator.responder_text(body))
        return Reply.text(replies[-1])

    bridge = BridgeStandin(responder=curator).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WSD_", "ANTHROPIC_"))}
    env |= {
        "WSD_WORKSPACE": str(root),
        "ANTHROPIC_BASE_URL": bridge.url,
        "WSD_BRIDGE_TOKEN": "demo-sprite-token",
        "WSD_LOG_FORMAT": "console",
        "WSD_POLL_SECONDS": "0.5",
        # The economy lane (the default) with a stand-in that ends a Message Batch at once:
        # looked at after 1 s here, where a real Bridge's batch takes minutes (30 s by default).
        "WSD_ECONOMY_POLL_SECONDS": "1",
        "PYTHONUNBUFFERED": "1",
    }
    wsd = str(Path(sys.executable).parent / "wsd")
    log_path = root / ".os" / "logs" / "wsd.log"  # where supervisord would put it
    daemon: subprocess.Popen[bytes] | None = None
    try:
        _banner(f"workspace {root}")
        subprocess.run([wsd, "init"], env=env, check=True)
        log_path.parent.mkdir(mode=0o700, exist_ok=True)
        (root / "documents" / "invoice-0042.txt").write_text("Invoice 0042 ACME 1,234.50\n")
        (root / "artifacts" / "invoice-summary.md").write_text("# Invoice 0042\n- 1,234.50 EUR\n")
        with open(log_path, "wb") as log:
            daemon = subprocess.Popen([wsd, "run"], env=env, stdout=log, stderr=subprocess.STDOUT)
        _banner("replaying an agent session through the real wsd-hook")
        for event in _session(root):
            _hook(event, env)
            detail = event.get("prompt") or event.get("tool_name") or ""
            print(f"  {event['hook_event_name']:<17} {str(detail)[:70]}")
        _banner("waiting for the daemon to curate (SessionEnd: a Message Batch, half price)")
        store = Store(layout)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and store.turns.backlog().pending:
            time.sleep(0.2)
        subprocess.run([wsd, "flush", "--wait", "20"], env=env, check=True)
        _banner("what the curator answered: learnings, and line edits of the md files")
        print("\n".join(f"  {line}" for reply in replies for line in reply.splitlines()))
        _show(layout, store, wsd, env)
        return 0
    finally:
        if daemon is not None:
            daemon.send_signal(signal.SIGTERM)
            code = daemon.wait(timeout=15)
            _banner(f"daemon stopped with exit code {code}; its log:")
            print(log_path.read_text()[-3000:])
        bridge.stop()
        batches = sum(1 for r in bridge.requests if r.path == "/v1/messages/batches")
        print(
            f"\nThe Bridge stand-in received {len(bridge.requests)} request(s), {batches}"
            " Message Batch(es) among them."
        )
        if keep:
            print(f"Workspace kept at {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def _show(layout: Layout, store: Store, wsd: str, env: dict[str, str]) -> None:
    _banner("what the agent now knows: memory files")
    for name in CURATED_FILES:
        path = Path(layout.md(name))
        if path.exists():
            print(f"--- {name}\n{path.read_text().rstrip()}")
    _banner("learnings (memory.db)")
    for kind, content in store.learnings.learnings():
        print(f"  {kind:<12} {content}")
    _banner("pending actions (wsd pending: as the boot context and the agent's tool name them)")
    subprocess.run([wsd, "pending"], env=env, check=True)
    _banner('the archive: wsd search "which currency does ACME bill in?"')
    subprocess.run(
        [wsd, "search", "which currency does ACME bill in?", "--limit", "3"], env=env, check=True
    )
    _banner("where a line came from: wsd memory why user.md:3")
    subprocess.run([wsd, "memory", "why", "user.md:3"], env=env, check=False)
    _banner("the boot context a new session starts with (wsd boot-context), abridged")
    boot = subprocess.run(
        [wsd, "boot-context"], env=env, check=True, capture_output=True, text=True
    ).stdout
    lines = boot.splitlines()
    print("\n".join([*lines[:12], "  [...]", *lines[-30:]]) if len(lines) > 45 else boot)
    _banner("wsd status")
    subprocess.run([wsd, "status"], env=env, check=True)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m wsd.daemon.standin.demo", description=__doc__)
    parser.add_argument("--keep", action="store_true", help="keep the workspace afterwards")
    return run(parser.parse_args().keep)


if __name__ == "__main__":
    sys.exit(main())
