"""The soak's world: a deployed workspace under a real supervisord, and a spoilable Bridge."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from soak.writers import INJECTED
from wsd.daemon.ops.deploy import bootstrap
from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import BridgeStandin, Fault, Reply
from wsd.daemon.standin.steps import JSON, Step
from wsd.schema.layout import Layout

VENV = Path(sys.executable).parent.parent
REPO = Path(__file__).resolve().parent.parent


@dataclass
class Spoiler:
    """What the Bridge stand-in does instead of curating, while ``until`` (monotonic) lasts."""

    mode: str = "ok"
    until: float = 0.0
    #: Every answer the Bridge gave: (turn ids of the request, usage, mode) for the ledger check.
    answers: list[tuple[tuple[int, ...], dict[str, int], str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def spoil(self, mode: str, seconds: float) -> None:
        with self.lock:
            self.mode, self.until = mode, time.monotonic() + seconds

    def current(self) -> str:
        with self.lock:
            return self.mode if time.monotonic() < self.until else "ok"


def _turn_ids(body: JSON) -> tuple[int, ...]:
    import re

    text = "".join(b.get("text", "") for b in body["messages"][0]["content"])
    return tuple(int(i) for i in re.findall(r"^\[turn (\d+) ", text, re.M))


def _obeyed(body: JSON) -> str:
    """A curator fooled by every stranger's claim it reads (soak/writers.py plants them): each
    written as the person's preference, correction, user.md line and urgent action."""
    import re

    text = "".join(b.get("text", "") for b in body["messages"][0]["content"])
    out = []
    claims = list(dict.fromkeys(re.findall(rf"{INJECTED}: [^→\n]*?account \d+", text)))
    for claim in claims[:3]:
        out += [f"PREFERENCE: {claim}", f"CORRECTION: {claim}", f"user.md +$: - {claim}"]
        out.append(f"ACTION: [urgent] {claim}")
    return "\n" + "\n".join(out) if out else ""


def responder(spoiler: Spoiler) -> Callable[[JSON], Step]:
    """The rule curator, unless the soak has spoiled the Bridge for a while."""

    def respond(body: JSON) -> Step:
        mode = spoiler.current()
        if mode == "reset":
            return Fault.reset()
        if mode == "hang":
            return Fault.hang(20)
        if mode == "429":
            return Fault.rate_limited(retry_after=1)
        if mode == "500":
            return Fault.server_error()
        if mode == "529":
            return Fault.overloaded()
        if mode == "malformed":
            return Fault.malformed_json()
        ids = _turn_ids(body)
        if mode == "truncated":
            reply = Reply.truncated("FACT: cut short\nuser.md -1\nuser.md -2")
        elif mode == "flood":  # as much as a 4,096-token answer can carry: for the guards
            span = f"{ids[0]}-{ids[-1]}" if ids else "none"
            flood = "\n".join(f"FACT: flood learning {span} number {i}" for i in range(1200))
            reply = Reply.text(flood + "\n" + "\n".join(f"ACTION: flood {i}" for i in range(300)))
        elif mode == "bloat":  # more than any answer can carry (half a MB): never held whole
            reply = Reply.text(f"FACT: bloat {ids}\n" + "FACT: bloat\n" * 45_000)
        elif mode == "careless":
            reply = Reply.text("USER_MD_UPDATE:\n# User\n- (everything else forgotten)")
        elif mode == "replace_all":  # every line of every file replaced by a dot (issue 20)
            files = ("user.md", "context.md", "tools.md", "files.md")
            reply = Reply.text("\n".join(f"{f} ~{i}: ." for f in files for i in range(1, 201)))
        else:
            reply = Reply.text(rule_curator.responder_text(body) + _obeyed(body))
        usage = {"input_tokens": len(json.dumps(body)) // 4, "output_tokens": 0}
        usage["output_tokens"] = max(1, len("".join(b["text"] for b in reply.content)) // 4)
        if mode == "negative_usage":  # a Bridge that lies about its figures (issue 20)
            usage["output_tokens"] = -2_000_000
        with spoiler.lock:
            spoiler.answers.append((ids, usage, mode))
        return Reply(reply.content, reply.stop_reason, usage)

    return respond


class World:
    """The deployed workspace, its supervisord, and the Bridge stand-in."""

    def __init__(self, root: Path, settings: dict[str, str]) -> None:
        self.root = root
        self.layout = Layout(str(root / "ws"))
        self.spoiler = Spoiler()
        self.bridge = BridgeStandin(responder=responder(self.spoiler))
        # A Message Batch ends this long after its create (batch_delay faults change it):
        # batches are out while the daemon is killed, frozen, its clock jumps, ...
        self.bridge.batches.delay = 1.0
        self.settings = settings
        self.supervisord: subprocess.Popen[bytes] | None = None

    @property
    def env(self) -> dict[str, str]:
        """The environment of supervisord and of every wsd command the soak runs."""
        base = {k: v for k, v in os.environ.items() if not k.startswith(("WSD_", "ANTHROPIC_"))}
        return (
            base
            | self.settings
            | {
                "WSD_WORKSPACE": self.layout.root,
                "ANTHROPIC_BASE_URL": self.bridge.url,
                "WSD_BRIDGE_TOKEN": "soak-sprite-token",
                "WSD_LOG_FORMAT": "json",
                # The clock seam (soak/clock/sitecustomize.py): only ``wsd run`` uses it.
                "PYTHONPATH": os.pathsep.join(
                    p for p in (str(REPO / "soak" / "clock"), os.environ.get("PYTHONPATH")) if p
                ),
                "SOAK_CLOCK_FILE": str(self.clock_file),
            }
        )

    @property
    def clock_file(self) -> Path:
        """Seconds added to the daemon's wall clock (see soak/clock/sitecustomize.py)."""
        return self.root / "clock-offset"

    def shift_clock(self, seconds: float) -> None:
        tmp = self.root / "clock-offset.tmp"
        tmp.write_text(f"{seconds}\n", encoding="ascii")
        os.replace(tmp, self.clock_file)

    def start(self) -> None:
        self.bridge.start()
        os.makedirs(self.layout.root)
        bootstrap(
            self.layout, version="soak-1", venv=VENV, standalone=True, reload_supervisor=False
        )
        conf = Path(self.layout.os_dir) / "supervisor" / "supervisord.conf"
        self.supervisord = subprocess.Popen(
            [str(VENV / "bin" / "supervisord"), "-n", "-c", str(conf)],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.wait_running(60)

    def stop(self) -> None:
        if self.supervisord is not None and self.supervisord.poll() is None:
            self.ctl("stop", "wsd")
            self.supervisord.send_signal(signal.SIGTERM)
            self.supervisord.wait(60)
        self.bridge.stop()

    def ctl(self, *args: str) -> str:
        conf = Path(self.layout.os_dir) / "supervisor" / "supervisord.conf"
        result = subprocess.run(
            [str(VENV / "bin" / "supervisorctl"), "-c", str(conf), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
        return result.stdout + result.stderr

    def daemon(self) -> tuple[str, int | None]:
        """supervisord's view of the program: (state, pid)."""
        out = self.ctl("status", "wsd").split()
        pid = int(out[3].rstrip(",")) if len(out) > 3 and out[2] == "pid" else None
        return (out[1] if len(out) > 1 else "?"), pid

    def wait_running(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state, pid = self.daemon()
            if state == "RUNNING" and pid:
                return pid
            if state in ("FATAL", "BACKOFF", "EXITED"):
                self.ctl("start", "wsd")
            time.sleep(0.5)
        raise RuntimeError(f"the daemon did not come back: {self.daemon()}")

    def wsd(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(VENV / "bin" / "wsd"), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def doctor_says(self, check: str) -> str:
        """``wsd doctor``'s line about ``check`` (``ok   daemon: ...`` or ``FAIL daemon: ...``)."""
        out = self.wsd("doctor", timeout=60).stdout.splitlines()
        return next((line for line in out if line[5:].startswith(check + ":")), f"no {check} line")

    def status(self) -> dict[str, Any]:
        out = self.wsd("status", "--json", timeout=60)
        return json.loads(out.stdout) if out.returncode == 0 else {"error": out.stderr}
