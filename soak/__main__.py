"""``python -m soak [--minutes M] [--seed S] [--intensity X]``: run the chaos soak, print the
seed, the faults applied and every invariant with its count; exit 1 if one fails."""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TextIO

from soak import faults, invariants
from soak.world import World
from wsd.daemon.standin.message_batches import BATCHES_PATH as BATCHES

#: Daemon settings for the soak: small batches and short waits, so many batches happen.
SETTINGS = {
    "WSD_BATCH_TURNS": "10",
    "WSD_POLL_SECONDS": "0.5",
    "WSD_IDLE_SECONDS": "5",
    "WSD_QUIET_SECONDS": "2",
    "WSD_ORPHAN_SECONDS": "20",
    "WSD_REQUEST_TIMEOUT": "5",
    "WSD_RETRY_ATTEMPTS": "2",
    "WSD_RETRY_SECONDS": "8",
    "WSD_OUTAGE_BACKOFF": "1",
    "WSD_OUTAGE_BACKOFF_MAX": "4",
    "WSD_WAKE_JUMP_SECONDS": "30",
    "WSD_DAILY_BUDGET_USD": "0",
    # The economy lane (the default, said here): Message Batches of at most 40 requests (400
    # turns: one batch out at a time, up to 7 s, must keep up with 8 writers), looked at after
    # 1 s, then 2, 4, 5, 5... s (the stand-in ends one 0-3 s after its create).
    "WSD_CURATION": "economy",
    "WSD_ECONOMY_POLL_SECONDS": "1",
    "WSD_ECONOMY_POLL_MAX_SECONDS": "5",
    "WSD_ECONOMY_MAX_REQUESTS": "40",
    # As deploy/bootstrap.sh installs it: without the [semantic] extra (the dev venv has it;
    # its model alone would take the daemon past the 120 MB the soak holds it to).
    "WSD_SEMANTIC": "false",
}


class Samplers:
    """The daemon's RSS every second (also in ``rss.tsv``: seconds in, pid, MB, to find what
    a peak coincided with in wsd.log); ``wsd status`` (every ~10 s) and ``wsd doctor``
    (every ~30 s) against supervisord while the daemon runs undisturbed."""

    def __init__(self, world: World, scheduler: faults.Scheduler) -> None:
        self.world = world
        self.scheduler = scheduler
        self.rss_max_mb = 0.0
        self.lies: list[str] = []
        self.samples = 0
        self.doctor_samples = 0
        self.stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self) -> None:
        self.stop.set()
        self._thread.join()

    def _run(self) -> None:
        with open(self.world.root / "rss.tsv", "a", encoding="ascii") as trace:
            self._sample(trace)

    def _sample(self, trace: TextIO) -> None:
        last: tuple[str, int | None, float] = ("", None, 0.0)
        doctor_at = began = time.monotonic()
        while not self.stop.wait(1.0):
            state, pid = self.world.daemon()
            if pid:
                rss = _rss_mb(pid)
                self.rss_max_mb = max(self.rss_max_mb, rss)
                trace.write(f"{time.monotonic() - began:.0f}\t{pid}\t{rss:.1f}\n")
                trace.flush()
            now = time.monotonic()
            if now - last[2] < 10:
                continue
            steady = state == "RUNNING" and pid == last[1] and not self.scheduler.busy.is_set()
            if steady:
                status = self.world.status()
                self.samples += 1
                # Still so once it answered: a fault that began meanwhile (delete_memory_db
                # stops the daemon) is no lie (found by the soak, seed 77: 'state: stopped').
                still = self.world.daemon() == (state, pid) and not self.scheduler.busy.is_set()
                if status.get("daemon_running") is not True and still:
                    self.lies.append(f"pid {pid} RUNNING but status says {status}"[:200])
                if now - doctor_at >= 30:
                    doctor_at = now
                    said = self.world.doctor_says("daemon")
                    self.doctor_samples += 1
                    if not said.startswith("ok ") and self.world.daemon() == (state, pid):
                        self.lies.append(f"pid {pid} RUNNING but doctor says {said}"[:200])
            last = (state, pid, now)


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _drain(world: World, deadline: float) -> None:
    """Curate everything: the Bridge healthy (its batches API back, every Message Batch ended
    now and the next ones at once), the daemon running, flush until nothing waits and no
    Message Batch is in flight (each one's result applied, discarded as covered, or its
    turns handed to the prompt lane)."""
    world.spoiler.spoil("ok", 0)
    batches = world.bridge.batches
    batches.enabled = True
    batches.delay = 0.0
    batches.end_all()
    world.wait_running(120)

    def drained() -> bool:
        batches.end_all()
        status = world.status()
        in_flight = (status.get("curation") or {}).get("in_flight")
        spool = Path(world.layout.spool)
        return status.get("backlog") == 0 and in_flight == [] and not spool.exists()

    while time.monotonic() < deadline:
        world.wsd("flush", "--wait", "120", timeout=200)
        if drained():
            time.sleep(3)  # a last spooled event or orphan turn may still be on its way
            if drained():
                return
        time.sleep(2)
    raise RuntimeError(f"the soak did not drain: {world.status()}")


def _doctor_lies(world: World, record: faults.Record) -> list[str]:
    """What ``wsd doctor`` got wrong: the daemon stopped but not reported so, or, once all is
    drained and healthy, any problem reported (a false alarm)."""
    lies = [f"daemon stopped but doctor says {s}" for s in record.doctor_stopped if "FAIL" not in s]
    final = world.wsd("doctor", timeout=60)
    if final.returncode != 0:
        fails = [line for line in final.stdout.splitlines() if line.startswith("FAIL")]
        lies.append(f"drained and healthy but doctor says {fails}"[:300])
    return lies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=10.0, help="how long faults come")
    parser.add_argument("--seed", type=int, default=None, help="replay a schedule (printed)")
    parser.add_argument("--intensity", type=float, default=1.0, help="faults per 4 s, on average")
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--keep", action="store_true", help="keep the soak folder afterwards")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
    print(f"soak seed {seed} ({args.minutes} min, intensity {args.intensity})", flush=True)
    root = Path(tempfile.mkdtemp(prefix=f"wsd-soak-{seed}-"))
    world = World(root, SETTINGS)
    schedule = faults.plan(seed, args.minutes, args.intensity)
    scheduler = faults.Scheduler(world, schedule, seed)
    samplers = Samplers(world, scheduler)
    ok = False
    try:
        world.start()
        writers = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "soak.writers",
                    world.layout.root,
                    str(i),
                    str(seed),
                    str(args.minutes * 60),
                    str(root / f"manifest-{i}.jsonl"),
                ],
                env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent)),
                stderr=open(root / f"writer-{i}.err", "wb"),  # noqa: SIM115 - the child holds it
            )
            for i in range(args.writers)
        ]
        scheduler.start()
        samplers.start()
        for proc in writers:
            proc.wait()
        scheduler.join()
        _drain(world, time.monotonic() + 900)
        samplers.join()
        lies = samplers.lies + _doctor_lies(world, scheduler.record)
        checks = invariants.check_all(world, scheduler.record, root, samplers.rss_max_mb, lies)
        ok = all(c.ok for c in checks)
        _report(seed, scheduler.record, samplers, checks, world)
    finally:
        world.stop()
        if ok and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"soak folder kept: {root}")
    return 0 if ok else 1


def _report(
    seed: int,
    record: faults.Record,
    samplers: Samplers,
    checks: list[invariants.Check],
    world: World,
) -> None:
    events = sum(1 for _ in world.bridge.requests)
    creates = sum(1 for r in world.bridge.requests if r.method == "POST" and r.path == BATCHES)
    print(f"\nseed {seed}: faults applied {sum(record.done.values())}")
    for kind, count in sorted(record.done.items()):
        print(f"  {kind:<22} {count}")
    for why, count in sorted(record.skipped.items()):
        print(f"  (skipped {count}: {why})")
    unconsumed = world.bridge.batches.pending_faults
    if unconsumed:
        print(f"  (batch faults never met by a batch: {unconsumed})")
    for error in record.errors[:5]:
        print(f"  (fault not applied: {error})")
    print(
        f"Bridge requests {events} ({creates} Message Batch creates); status samples"
        f" {samplers.samples}, doctor samples"
        f" {samplers.doctor_samples} running + {len(record.doctor_stopped)} stopped + 1 drained"
    )
    width = max(len(c.name) for c in checks)
    for c in checks:
        print(f"{'ok  ' if c.ok else 'FAIL'} {c.name:<{width}}  {c.detail}")
    print(json.dumps({"seed": seed, "ok": all(c.ok for c in checks)}))


if __name__ == "__main__":
    sys.exit(main())
