"""The agent's side of semantic matching: ask the daemon for the memories nearest in
meaning to a query, over its Unix socket, within a short timeout.

Standard library only: the agent's process never loads the model, numpy or the vectors.
Any failure (no daemon, no extra, a slow answer, a bad reply) is ``None``, and
search_memory then ranks by words alone.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass

from wsd.schema.layout import Layout

SOCKET_NAME = "embed.sock"
#: A query waits this long for the daemon (connect, embed, search, reply) before it gives up
#: and ranks by words alone: the agent never waits on the model.
TIMEOUT = 0.3
#: Longest reply read (a hundred hits are ~3 kB).
MAX_REPLY = 1 << 20
#: A Unix socket path is at most 107 bytes; a longer one is reached through /proc.
_MAX_PATH = 100


def socket_path(layout: Layout) -> str:
    """Where the daemon listens: .os/embed.sock (0600, inside the 0700 .os folder)."""
    return os.path.join(layout.os_dir, SOCKET_NAME)


def address(path: str) -> tuple[str, int | None]:
    """An address for ``path`` that fits a sockaddr, and a folder fd to close after use."""
    if len(path.encode()) <= _MAX_PATH:
        return path, None
    fd = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY)
    return f"/proc/self/fd/{fd}/{os.path.basename(path)}", fd


def read_line(sock: socket.socket, cap: int, deadline: float) -> bytes:
    """Read until a newline ends the data, the peer closes, or ``cap`` bytes are in; past
    ``deadline`` (``time.monotonic()``), however the bytes trickle in, TimeoutError."""
    data = b""
    while not data.endswith(b"\n") and len(data) < cap:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no full line before the deadline")
        sock.settimeout(left)
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


@dataclass(frozen=True)
class Dense:
    """The daemon's answer: (kind ``L``/``T``, id, cosine) nearest first."""

    hits: list[tuple[str, int, float]]
    model: str


def dense(
    layout: Layout,
    query: str,
    type: str | None = None,
    since: float | None = None,
    k: int = 100,
    timeout: float | None = None,
) -> Dense | None:
    """The ``k`` memories nearest to ``query`` in meaning, or None if the daemon cannot say."""
    path = socket_path(layout)
    if not query.strip() or not os.path.exists(path):
        return None
    request = json.dumps({"query": query, "type": type, "since": since, "k": k}) + "\n"
    target, fd = address(path)
    wait = TIMEOUT if timeout is None else timeout
    deadline = time.monotonic() + wait
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(wait)
            sock.connect(target)
            sock.sendall(request.encode("utf-8", "replace"))
            data = read_line(sock, MAX_REPLY, deadline)
        reply = json.loads(data)
        hits = [(str(kind), int(i), float(cos)) for kind, i, cos in reply["hits"]]
        return Dense(hits, str(reply.get("model", "")))
    except (OSError, ValueError, TypeError, KeyError):
        return None
    finally:
        if fd is not None:
            os.close(fd)
