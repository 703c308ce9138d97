"""The followers: one ``litestream restore -f`` per database this machine follows
(:func:`.places.followed`), kept running the way :mod:`wsd.daemon.replica.supervisor`
keeps ``litestream replicate``.

A follower writes its copy alone; everything else opens the copy read-only (litestream's
rule for follow mode). Each holds ``COPY.follow.lock`` through an inherited descriptor, so
the lock lives exactly as long as that litestream: a daemon killed with -9 leaves its
followers running (they go on following) and the next daemon finds their locks held and
leaves them be, instead of starting a second writer of the same copy. A follower killed with
-9 resumes where it was (litestream keeps ``COPY-txid`` beside the copy: measured, "resuming
follow mode from crash recovery").

A copy's storage may not be there yet (a satellite that never shipped, home not set up):
litestream then exits, and the follower is started again after a back-off that doubles
from 1 s to :data:`MAX_DELAY`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from wsd.daemon.machines.places import Followed, followed, followed_dir
from wsd.daemon.replica import litestream
from wsd.daemon.runtime.config import Config
from wsd.daemon.runtime.fsio import atomic_write
from wsd.daemon.runtime.instance import flock_holders
from wsd.schema.layout import Layout

FIRST_DELAY = 1.0
#: A copy whose storage is not there yet is looked for this often at most (a satellite that
#: has not shipped for days costs a listing a minute, not one a second).
MAX_DELAY = 60.0
HEALTHY_SECONDS = 60.0
TICK_SECONDS = 0.5
CONFIG = "litestream-follow.yml"
LOG_BYTES = 10 << 20


def lock_path(copy: str) -> str:
    return copy + ".follow.lock"


def pid_path(copy: str) -> str:
    return copy + ".follow.pid"


def config_path(layout: Layout) -> str:
    return os.path.join(layout.os_dir, CONFIG)


def log_path(layout: Layout, name: str) -> str:
    """Each follower's own log (its last error says why it exited)."""
    return os.path.join(layout.os_dir, "logs", f"litestream-follow-{name}.log")


#: What litestream 0.5.17 says when the copy is ahead of the newest snapshot on the storage
#: (measured: a satellite's replica holds its first snapshot and the changes after it; a
#: follower stopped and started again refuses to resume): the copy is made again.
CANNOT_RESUME = "cannot resume follow mode"


def reset_copy(copy: str) -> list[str]:
    """Remove a followed copy and litestream's files beside it (only with no follower
    running): the next follower restores it afresh. The files removed."""
    removed = []
    for suffix in ("", "-wal", "-shm", "-txid"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(copy + suffix)
            removed.append(copy + suffix)
    return removed


def following(copy: str) -> bool:
    """Whether a follower of ``copy`` runs (it holds the copy's lock)."""
    return bool(flock_holders(lock_path(copy)))


def render(cfg: Config, layout: Layout) -> str:
    """litestream's config for the followers: each followed copy as a database whose
    replica is where it is followed from (so ``restore -config F COPY`` finds the storage's
    endpoint and keys as replication does). No credential is in it."""
    options = litestream.storage_options(cfg)
    doc = {
        "logging": {"level": "info", "type": "text", "stderr": True},
        "dbs": [
            {"path": f.path, "replica": {"url": f.url, **options}} for f in followed(cfg, layout)
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


@dataclass(eq=False)
class _Child:
    spec: Followed
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    delay: float = FIRST_DELAY
    next_start: float = 0.0
    exits: int = field(default=0)
    #: Where in its log the running follower's lines begin (an older run's are not its).
    log_from: int = 0


class Followers:
    """Runs one follower per followed database until ``stop`` is set (see the module)."""

    def __init__(
        self,
        cfg: Config,
        layout: Layout,
        stop: threading.Event,
        log: Any,
        env: Mapping[str, str],
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cfg = cfg
        self.layout = layout
        self.stop = stop
        self.log = log
        self.env = litestream.child_env(cfg, env)
        self.monotonic = monotonic
        self.children = [_Child(spec) for spec in followed(cfg, layout)]
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        for child in self.children:
            os.makedirs(os.path.dirname(child.spec.path), mode=0o700, exist_ok=True)
        os.makedirs(followed_dir(self.layout), mode=0o700, exist_ok=True)
        atomic_write(
            config_path(self.layout),
            render(self.cfg, self.layout),
            mode=0o600,
            durable=False,
            root=self.layout.root,
        )
        self._thread = threading.Thread(target=self._run, name="follow", daemon=True)
        self._thread.start()

    def close(self, timeout: float = 5.0) -> None:
        """Stop the thread, then every follower (a copy is consistent at any instant)."""
        self.stop.set()
        if self._thread is not None:
            self._thread.join(5)
        for child in self.children:
            pid = running_pid(child.spec.path)
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for child in self.children:
            if child.proc is not None:
                try:
                    child.proc.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    child.proc.kill()
                    child.proc.wait(5)
                child.proc = None

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                self.tick()
            except Exception as exc:  # never the daemon's end: logged, tried again
                self.log.error("follow_failed", error=f"{type(exc).__name__}: {exc}")
            self.stop.wait(TICK_SECONDS)

    def tick(self) -> list[str]:
        """Look at every follower once and act; what each is (for the tests): running,
        adopted, waiting, started."""
        now = self.monotonic()
        return [self._tick(child, now) for child in self.children]

    def _tick(self, child: _Child, now: float) -> str:
        if child.proc is not None:
            code = child.proc.poll()
            if code is None:
                return "running"
            ran = now - child.started_at
            child.proc = None
            if ran >= HEALTHY_SECONDS:
                child.delay = FIRST_DELAY
            wait, child.delay = child.delay, min(child.delay * 2, MAX_DELAY)
            child.next_start = now + wait
            child.exits += 1
            said = _last_error(log_path(self.layout, child.spec.name), child.log_from)
            if CANNOT_RESUME in said:
                reset_copy(child.spec.path)
                child.next_start = now  # at once: nothing was wrong with the storage
                self.log.info("follow_reset", machine=child.spec.name, reason=CANNOT_RESUME)
                return "waiting"
            self.log.warning(
                "follow_exited",
                machine=child.spec.name,
                code=code,
                ran_seconds=round(ran, 1),
                restart_in=wait,
            )
            return "waiting"
        if following(child.spec.path):
            return "adopted"
        if now < child.next_start:
            return "waiting"
        with contextlib.suppress(OSError):
            child.log_from = os.stat(log_path(self.layout, child.spec.name)).st_size
        child.proc = self._start(child.spec)
        if child.proc is None:
            return "adopted"
        child.started_at = now
        self.log.info("follow_started", machine=child.spec.name, pid=child.proc.pid)
        return "started"

    def _argv(self, spec: Followed) -> list[str]:
        return [
            litestream.binary(),
            "restore",
            "-config",
            config_path(self.layout),
            "-no-expand-env",
            "-f",
            "-follow-interval",
            f"{int(self.cfg.follow_seconds * 1000)}ms",
            spec.path,
        ]

    def _start(self, spec: Followed) -> subprocess.Popen[bytes] | None:
        lock = os.open(
            lock_path(spec.path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600
        )
        try:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return None
            with self._log_file(spec.name) as out:
                proc = subprocess.Popen(
                    self._argv(spec),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=self.env,
                    pass_fds=(lock,),
                    umask=0o077,  # the copy holds the person's words: 0600
                )
        finally:
            os.close(lock)
        atomic_write(
            pid_path(spec.path), f"{proc.pid}\n", mode=0o600, durable=False, root=self.layout.root
        )
        return proc

    def _log_file(self, name: str) -> IO[bytes]:
        path = log_path(self.layout, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with contextlib.suppress(OSError):
            if os.stat(path).st_size > LOG_BYTES:
                os.replace(path, path + ".1")
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        return os.fdopen(fd, "ab")


def running_pid(copy: str) -> int | None:
    """The pid of the follower of ``copy``, if it is alive and is a litestream."""
    return litestream.litestream_pid(pid_path(copy)) if following(copy) else None


def _last_error(path: str, start: int) -> str:
    """The last ``Error:`` line of a follower's log after offset ``start`` ("" when none)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            size = os.fstat(fd).st_size
            fh.seek(max(start if start <= size else 0, size - 4096))
            lines = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    for line in reversed(lines):
        if line.startswith("Error:") or "level=ERROR" in line:
            return line
    return ""
