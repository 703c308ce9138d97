"""The daemon's semantic socket: search_memory sends a query, the daemon answers with the
memories nearest in meaning (see client.py for the other side).

One thread accepts on ``.os/embed.sock`` (0600) and answers each connection in turn: one
JSON line in (``query``, ``type``, ``since``, ``k``), one JSON line out (``hits`` as
[kind, id, cosine], or ``error``). Nothing heavy is imported until the first request: the
model, numpy and the vectors' sign bits load then, and leave with the process when the
daemon re-executes itself after an idle minute.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
from collections.abc import Callable
from typing import Any

from wsd.daemon.memory.semantic import MODEL_ID
from wsd.daemon.memory.semantic.client import address, read_line, socket_path
from wsd.daemon.runtime.log import get_logger
from wsd.daemon.runtime.signals import background
from wsd.daemon.store.base import Databases

#: A client has this long to send its request line.
READ_TIMEOUT = 2.0
MAX_REQUEST = 64 * 1024
MAX_K = 200


class SemanticServer:
    """Listens for search_memory's semantic half while the daemon runs."""

    def __init__(self, store: Databases, on_use: Callable[[], None] = lambda: None) -> None:
        self.store = store
        self.on_use = on_use
        self.path = socket_path(store.layout)
        self.log = get_logger(component="semantic")
        self.sock: socket.socket | None = None
        self._index: Any = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Bind and start the accepting thread (a stale socket file is replaced)."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        target, fd = address(self.path)
        try:
            old = os.umask(0o177)
            try:
                sock.bind(target)
            finally:
                os.umask(old)
        finally:
            if fd is not None:
                os.close(fd)
        sock.listen(8)
        self.sock = sock
        background(self._serve, "semantic", sock)

    def stop(self) -> None:
        """Stop accepting and remove the socket file."""
        sock, self.sock = self.sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)

    def _serve(self, sock: socket.socket) -> None:
        while self.sock is sock:
            try:
                conn, _ = sock.accept()
            except OSError:
                return  # closed by stop()
            with conn:
                try:
                    self._answer(conn)
                except Exception as exc:  # one bad request never stops the service
                    self.log.warning("semantic_failed", error=f"{type(exc).__name__}: {exc}")

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(READ_TIMEOUT)
        data = read_line(conn, MAX_REQUEST)
        try:
            reply = {"model": MODEL_ID, "hits": self.search(json.loads(data))}
        except (ValueError, TypeError, KeyError) as exc:
            reply = {"error": f"bad request: {exc}"}
        conn.sendall(json.dumps(reply).encode() + b"\n")

    def search(self, request: dict[str, Any]) -> list[tuple[str, int, float]]:
        """The nearest memories for one request (loads the model on first use)."""
        query = str(request["query"])[:4000]
        kind = request.get("type")
        since = request.get("since")
        k = max(1, min(int(request.get("k") or 100), MAX_K))
        self.on_use()
        with self._lock:
            if self._index is None:
                from wsd.daemon.memory.semantic.dense import DenseIndex

                self._index = DenseIndex(self.store)
                self.log.info("semantic_loaded", model=MODEL_ID)
        hits: list[tuple[str, int, float]] = self._index.search(
            query,
            None if kind is None else str(kind),
            None if since is None else float(since),
            k,
        )
        return [(kind_, i, round(cos, 5)) for kind_, i, cos in hits]
