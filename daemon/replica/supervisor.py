"""One litestream child per daemon, kept running the way supervisord keeps the daemon.

The supervisor is a thread of ``wsd run`` (the same code under supervisord and by hand). It
starts ``litestream replicate`` and starts it again when it exits, after a back-off that
doubles from 1 s to a minute (reset once a run has lasted a minute); it stops it while an
erasure holds replication off (:mod:`.hold`), and when the daemon stops.

The child holds ``.os/litestream.lock`` through an inherited descriptor, so the lock lives
exactly as long as the litestream process. A daemon killed with -9 leaves its litestream
running (it goes on shipping); the next daemon finds the lock held and adopts it (stops it
through its pid file when it must) instead of starting a second one. The memory-shedding
re-exec is the same case: the new image adopts the child it had.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from typing import IO, Any

from wsd.daemon.replica import hold, litestream, owed
from wsd.daemon.runtime.config import Config
from wsd.schema.layout import Layout

FIRST_DELAY = 1.0
MAX_DELAY = 60.0
#: A run this long resets the back-off: it was healthy.
HEALTHY_SECONDS = 60.0
TICK_SECONDS = 0.5
#: The log is started afresh (the old one kept as ``.1``) past this size, at a start.
LOG_BYTES = 10 << 20
#: A forced snapshot after an erasure; bounded, so a replica that does not answer cannot
#: hold replication off for ever (the normal run snapshots on its own).
SNAPSHOT_SECONDS = 120.0


class Supervisor:
    """Runs litestream for ``cfg`` until ``stop`` is set (see the module)."""

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
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.delay = FIRST_DELAY
        self.next_start = 0.0
        self.adopted: int | None = None
        self._thread: threading.Thread | None = None

    # -- the thread ------------------------------------------------------------------------

    def start(self) -> None:
        litestream.write_config(self.cfg, self.layout)
        self._thread = threading.Thread(target=self._run, name="replica", daemon=True)
        self._thread.start()

    def close(self, timeout: float = litestream.SHUTDOWN_SYNC_SECONDS + 3.0) -> None:
        """Stop the thread, then litestream (it ships what is left first), within
        ``timeout`` seconds; a litestream still there then is killed."""
        self.stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self._terminate(timeout)

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                self.tick()
            except Exception as exc:  # never the daemon's end: logged, tried again
                self.log.error("replica_failed", error=f"{type(exc).__name__}: {exc}")
                self.next_start = self.monotonic() + self._backoff()
            self.stop.wait(TICK_SECONDS)

    # -- one look --------------------------------------------------------------------------

    def tick(self) -> str:
        """Look once and act; what it did (for the tests): running, held, adopted, waiting,
        started."""
        now = self.monotonic()
        held = hold.held(self.layout)
        self._reap(now, held)
        if held:
            if self.proc is not None or hold.running(self.layout):
                litestream.terminate(self.layout)
            return "held"
        if self.proc is not None:
            return "running"
        if hold.running(self.layout):
            pid = litestream.running_pid(self.layout)
            if pid != self.adopted:
                self.adopted = pid
                self.log.info("replica_adopted", pid=pid)
            return "adopted"
        if now < self.next_start:
            return "waiting"
        # No local state: an erasure purged it (one too quick for a look to see it held), or
        # a restore did. The snapshot-then-purge is owed before a plain start (_snapshot);
        # after an erasure, until the replica shows it written, nothing else is shipped.
        erasure = owed.read(self.layout)
        if self._state_missing() or (erasure is not None and erasure.pending):
            code = self._snapshot()
            if erasure is not None and erasure.pending and not self._written(erasure, code):
                self.next_start = now + self._backoff()
                return "owed"
        self._spawn(now)
        return "started"

    def _written(self, erasure: owed.Owed, code: int | None) -> bool:
        """Whether the replica now shows its newest state of both databases made after the
        erasure (recorded either way: issue 44's forget said so whatever happened)."""
        snapshots = owed.newest_snapshots(self.layout, self.env)
        if code == 0 and owed.written_after(snapshots, erasure.erased_at):
            owed.confirmed(self.layout, time.time())
            self.delay = FIRST_DELAY
            self.log.info("replica_erasure_written", attempts=erasure.attempts + 1)
            return True
        missing = [k for k, at in snapshots.items() if not owed.written_after({k: at}, 0)]
        error = (
            f"litestream's snapshot exited {code}" if code != 0 else "no newer snapshot listed"
        ) + (f"; the replica lists no snapshot of {', '.join(missing)}" if missing else "")
        error += _last_error(litestream.log_path(self.layout))
        after = owed.tried(self.layout, error, time.time())
        self.log.warning(
            "replica_erasure_owed",
            attempts=after.attempts if after else None,
            code=code,
            retry_in=self.delay,
        )
        return False

    def _state_missing(self) -> bool:
        return any(
            not os.path.isdir(litestream.meta_dir(path))
            for path in litestream.databases(self.layout).values()
        )

    def _reap(self, now: float, held: bool = False) -> None:
        if self.adopted is not None:  # our child from before a re-exec: reap it once it ends
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(self.adopted, os.WNOHANG)
        if self.proc is None:
            return
        code = self.proc.poll()
        if code is None:
            return
        ran = now - self.started_at
        self.proc = None
        if self.stop.is_set():
            return
        if held or hold.held(self.layout):  # stopped on purpose, for an erasure
            self.log.info("replica_held", reason="erasure", code=code)
            return
        if ran >= HEALTHY_SECONDS:
            self.delay = FIRST_DELAY
        wait = self._backoff()
        self.next_start = now + wait
        self.log.warning("replica_exited", code=code, ran_seconds=round(ran, 1), restart_in=wait)

    def _backoff(self) -> float:
        wait = self.delay
        self.delay = min(self.delay * 2, MAX_DELAY)
        return wait

    def _log_file(self) -> IO[bytes]:
        path = litestream.log_path(self.layout)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with contextlib.suppress(OSError):
            if os.stat(path).st_size > LOG_BYTES:
                os.replace(path, path + ".1")
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        return os.fdopen(fd, "ab")

    def _argv(self, *extra: str) -> list[str]:
        config = litestream.config_path(self.layout)
        return [litestream.binary(), "replicate", "-config", config, "-no-expand-env", *extra]

    def _snapshot(self) -> int | None:
        """After an erasure: a snapshot of the erased state now, and history past the
        retention dropped (``replicate -once -force-snapshot -enforce-retention``), then
        litestream's local state purged once more.

        Found by the forget test: litestream started with no local state fetches the
        replica's newest change file to know where it stands, and that file (written before
        the erasure) holds the erased words: a copy back on this disk for five minutes. After
        the forced snapshot the newest file on the replica is the erased state, so the
        replicate that follows fetches that one."""

        proc = self._start("-once", "-force-snapshot", "-enforce-retention")
        if proc is None:
            return None  # a litestream started meanwhile: the next look adopts it
        # Named in the pid file too (_start): an erasure that starts meanwhile stops it as it
        # stops a replicate (it waits 20 s at most; a snapshot to S3 can take longer).
        try:
            code = proc.wait(SNAPSHOT_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        hold.purge_local_state(self.layout)
        self.log.info("replica_snapshot", reason="erasure", code=code)
        return code

    def _start(self, *extra: str) -> subprocess.Popen[bytes] | None:
        """``litestream replicate`` (with ``extra``) started holding litestream's lock
        through an inherited descriptor (so an erasure waits for it, and the lock lives as
        long as the process), its pid in the pid file; None, and nothing started, when
        another process holds the lock."""
        lock = os.open(
            litestream.lock_path(self.layout),
            os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
            0o600,
        )
        try:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return None
            with self._log_file() as out:
                proc = subprocess.Popen(
                    self._argv(*extra),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=self.env,
                    pass_fds=(lock,),
                    # Its local copies of changed pages (and a file replica) hold the
                    # person's words: 0600, like the databases.
                    umask=0o077,
                )
        finally:
            os.close(lock)  # the child's copy holds the lock from here on
        self._write_pid(proc.pid)
        return proc

    def _spawn(self, now: float) -> None:
        self.proc = self._start()
        if self.proc is None:
            return  # one started meanwhile: adopted on the next look
        self.started_at = now
        self.adopted = None
        self.log.info(
            "replica_started", pid=self.proc.pid, url=litestream.shown(self.cfg.replica_url)
        )

    def _write_pid(self, pid: int) -> None:
        pid_file = litestream.pid_path(self.layout)
        with open(pid_file + ".tmp", "w", encoding="ascii") as fh:
            fh.write(f"{pid}\n")
        os.replace(pid_file + ".tmp", pid_file)

    def _terminate(self, timeout: float) -> None:
        """Stop litestream (ours, or one adopted) within ``timeout`` seconds."""
        litestream.terminate(self.layout)
        deadline = time.monotonic() + timeout
        while hold.running(self.layout) and time.monotonic() < deadline:
            self._reap(self.monotonic())
            time.sleep(0.05)
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
            self.log.warning("replica_killed", reason="did not stop in time")
        elif hold.running(self.layout):
            pid = litestream.running_pid(self.layout)
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, 9)
        self.proc = None


def _last_error(log_path: str) -> str:
    """litestream's last ``Error:`` or ``level=ERROR`` line of its log, said after "; " (it
    names the target and why: "not a directory", "access denied"); "" when none."""
    try:
        fd = os.open(log_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            fh.seek(max(0, os.fstat(fd).st_size - 8192))
            tail = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    for line in reversed(tail):
        if line.startswith("Error:") or "level=ERROR" in line:
            return "; litestream: " + line.strip()[:300]
    return ""
