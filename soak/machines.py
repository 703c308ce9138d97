"""``python -m soak.machines [--minutes M] [--seed S]`` (``make soak MACHINES=3``): the chaos
soak of one memory on many machines (issue 47, SPEC.md section 11).

Three machines on one host (home and two satellites: three workspaces, three real daemons,
their litestream replicates and followers, a ``file://`` storage), writers on both
satellites and on home, and faults at random: kill -9 of a daemon, of one of its litestream
processes; the storage cut off for a minute (its folder moved away, and back); a satellite
offline for long (its daemon stopped while its person goes on working: hooks capture
locally); a clock jump on one machine (the soak's clock seam, soak/clock/); a satellite's
transcript.db deleted. A forget is asked on a satellite once the writing stops.

Then, with every machine up and quiet, the invariants: every turn still held by a machine
curated at home exactly once (one ledger row each, across machines); no turn curated twice;
every follower converged (each satellite's copy of home's memory has home's learnings);
the forgotten word on no machine's disk and in no replica's newest state.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import apsw

from wsd.daemon.ops.bootstrap import init_workspace
from wsd.daemon.standin import rule_curator
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.store import remove
from wsd.hooks.capture import Capture, CaptureConfig
from wsd.schema.layout import Layout

REPO = Path(__file__).resolve().parent.parent
WSD = str(Path(sys.executable).with_name("wsd"))
FORGOTTEN = "quokkaberry"
SETTINGS = {
    "WSD_POLL_SECONDS": "0.5",
    "WSD_IDLE_SECONDS": "2",
    "WSD_QUIET_SECONDS": "1",
    "WSD_CURATION": "prompt",
    "WSD_WATCH": "false",
    "WSD_REPLICA_SYNC_SECONDS": "0.5",
    "WSD_FOLLOW_SECONDS": "1",
    "WSD_LOG_FORMAT": "json",
}


def _rows(path: str, sql: str) -> list[tuple[Any, ...]]:
    conn = apsw.Connection(
        f"file:{path}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
    )
    conn.set_busy_timeout(5000)
    try:
        return [tuple(r) for r in conn.execute(sql)]
    finally:
        conn.close()


class Machine:
    def __init__(self, root: Path, name: str, role: str, storage: str, bridge: str, listed: str):
        self.name, self.root = name, root
        root.mkdir(parents=True)
        self.layout = Layout(str(root / "ws"))
        os.makedirs(self.layout.root)
        init_workspace(self.layout, templates=None)
        base = {k: v for k, v in os.environ.items() if not k.startswith(("WSD_", "ANTHROPIC_"))}
        self.env = (
            base
            | SETTINGS
            | {
                "WSD_WORKSPACE": self.layout.root,
                "ANTHROPIC_BASE_URL": bridge,
                "WSD_BRIDGE_TOKEN": "soak-sprite-token",
                "WSD_HOME_URL": storage,
                "WSD_MACHINE": name,
                "WSD_ROLE": role,
                "PYTHONPATH": os.pathsep.join(
                    p for p in (str(REPO / "soak" / "clock"), os.environ.get("PYTHONPATH")) if p
                ),
                "SOAK_CLOCK_FILE": str(root / "clock-offset"),
                **({"WSD_MACHINES": listed} if role == "home" else {}),
            }
        )
        self.proc: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()  # a writer and a fault never touch the files at once

    def start(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            with open(self.root / "wsd.log", "ab") as log:
                self.proc = subprocess.Popen([WSD, "run"], env=self.env, stdout=log, stderr=log)

    def stop(self, kill: bool = False) -> None:
        if self.proc is not None and self.proc.poll() is None:
            if kill:
                self.proc.kill()
            else:
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def litestreams(self) -> list[int]:
        found = []
        for pid in os.listdir("/proc"):
            with contextlib.suppress(OSError):
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                if argv[0].endswith(b"litestream") and any(
                    self.layout.root.encode() in a for a in argv
                ):
                    found.append(int(pid))
        return found

    def shift_clock(self, seconds: float) -> None:
        (self.root / "clock-offset.tmp").write_text(f"{seconds}\n")
        os.replace(self.root / "clock-offset.tmp", self.root / "clock-offset")


def _writer(m: Machine, stop: threading.Event, rng: random.Random, counts: dict[str, int]) -> None:
    i = 0
    while not stop.is_set():
        word = FORGOTTEN if rng.random() < 0.05 else f"option{i}"
        with m.lock:
            cap = Capture(CaptureConfig(workspace=m.layout.root))
            session = f"{m.name}-{i // 5}"
            cap.handle(
                {
                    "hook_event_name": "UserPromptSubmit",
                    "session_id": session,
                    "prompt": f"On {m.name} I prefer {word} for task {i}",
                }
            )
            cap.handle(
                {"hook_event_name": "Stop", "session_id": session, "last_assistant_message": "ok"}
            )
            cap.close()
        counts[m.name] = counts.get(m.name, 0) + 1
        i += 1
        stop.wait(rng.uniform(0.2, 1.5))


def _fault(rng: random.Random, machines: list[Machine], storage: Path, log: list[str]) -> None:
    m = rng.choice(machines)
    kind = rng.choice(
        ["kill_daemon", "kill_litestream", "storage_cut", "offline", "clock", "delete_db"]
    )
    if kind == "delete_db" and m.name == "home":
        kind = "kill_daemon"
    log.append(f"{kind} {m.name}")
    print(f"fault: {kind} {m.name}", flush=True)
    if kind == "kill_daemon":
        m.stop(kill=True)
        m.start()
    elif kind == "kill_litestream":
        pids = m.litestreams()
        if pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(rng.choice(pids), signal.SIGKILL)
    elif kind == "storage_cut":
        # Moved away, and a file where it was: litestream cannot make the folder again (a
        # root process ignores permissions), so every machine's storage is gone for a minute.
        away = storage.with_name("storage-away")
        os.rename(storage, away)
        storage.write_text("cut off\n")
        time.sleep(60)
        storage.unlink()
        os.rename(away, storage)
    elif kind == "offline":
        m.stop()
        time.sleep(rng.uniform(60, 120))
        m.start()
    elif kind == "clock":
        m.shift_clock(rng.choice([3600.0, -300.0, 0.0]))
    elif kind == "delete_db":
        with m.lock:
            m.stop(kill=True)
            for pid in m.litestreams():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            remove(m.layout.transcript_db)
            m.start()


def _holding(folder: Path, word: bytes) -> list[str]:
    found = []
    for path in folder.rglob("*"):
        with contextlib.suppress(OSError):
            if path.is_file() and not path.is_symlink() and word in path.read_bytes():
                found.append(str(path))
    return found


def _invariants(machines: list[Machine], storage: Path, tmp: Path) -> dict[str, Any]:
    home = machines[0]
    memory, transcript = home.layout.memory_db, home.layout.transcript_db
    out: dict[str, Any] = {}
    ledger = _rows(
        memory,
        "SELECT observation_id, count(*) FROM batch_turns WHERE transcript_identity ="
        " (SELECT value FROM state WHERE key = 'transcript_identity') GROUP BY 1",
    )
    out["curated twice"] = sum(1 for _, n in ledger if n > 1)
    curated = {
        str(k) for (k,) in _rows(memory, "SELECT machine || '/' || origin_key FROM machine_turns")
    }
    missing = 0
    for m in machines[1:]:
        keys = _rows(
            m.layout.transcript_db, "SELECT origin_key FROM observations WHERE erased_at IS NULL"
        )
        missing += sum(1 for (k,) in keys if k is None or f"{m.name}/{k}" not in curated)
    out["satellite turns not curated once"] = missing
    dup = _rows(
        transcript,
        "SELECT count(*) FROM (SELECT origin_machine, origin_key FROM observations WHERE"
        " origin_key IS NOT NULL GROUP BY 1, 2 HAVING count(*) > 1)",
    )[0][0]
    out["satellite turns ingested twice"] = dup
    own = _rows(transcript, "SELECT count(*) FROM observations WHERE processed = 0")[0][0]
    out["home turns not curated"] = own
    learnings = _rows(memory, "SELECT count(*) FROM learnings")[0][0]
    out["followers not converged"] = sum(
        1
        for m in machines[1:]
        if not os.path.exists(m.layout.home_copy)
        or _rows(m.layout.home_copy, "SELECT count(*) FROM learnings")[0][0] != learnings
    )
    holding = [p for m in machines for p in _holding(Path(m.layout.os_dir), FORGOTTEN.encode())]
    out["files holding the forgotten word"] = len(holding)
    if holding:
        out["holding"] = holding[:10]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(prog="soak.machines")
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    print(f"seed {seed}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="wsd-soak-machines-"))
    storage = tmp / "storage"
    storage.mkdir()
    faults: list[str] = []
    with BridgeStandin(responder=rule_curator.responder) as bridge:
        machines = [
            Machine(tmp / name, name, role, f"file://{storage}", bridge.url, "lap,vm")
            for name, role in (("home", "home"), ("lap", "satellite"), ("vm", "satellite"))
        ]
        for m in machines:
            m.start()
        stop = threading.Event()
        counts: dict[str, int] = {}
        writers = [
            threading.Thread(target=_writer, args=(m, stop, random.Random(rng.random()), counts))
            for m in machines
        ]
        for w in writers:
            w.start()
        deadline = time.monotonic() + args.minutes * 60
        try:
            while time.monotonic() < deadline:
                time.sleep(rng.uniform(3, 15))
                _fault(rng, machines, storage, faults)
        finally:
            stop.set()
            for w in writers:
                w.join()
        for m in machines:
            m.shift_clock(0.0)
            m.start()
        # The forget, asked on a satellite once the writing stopped (a word said later is new
        # speech), then quiet: everything shipped, curated, followed, erased.
        done = subprocess.run(
            [WSD, "forget", "--yes", FORGOTTEN], env=machines[2].env, capture_output=True, text=True
        )
        print(f"forget: exit {done.returncode}", flush=True)
        result: dict[str, Any] = {}
        settle = time.monotonic() + 300
        while time.monotonic() < settle:
            time.sleep(10)
            with contextlib.suppress(apsw.Error):
                result = _invariants(machines, storage, tmp)
                if not any(v for k, v in result.items() if isinstance(v, int)):
                    break
        for m in machines:
            m.stop()
    failed = [k for k, v in result.items() if isinstance(v, int) and v]
    print(
        json.dumps(
            {"seed": seed, "faults": faults, "turns": counts, "invariants": result}, indent=1
        )
    )
    if not failed:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"kept {tmp} for a look", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
