"""The daemon's semantic socket: search_memory sends a query, the daemon answers with the
memories nearest in meaning (see client.py for the other side).

One thread accepts on ``.os/embed.sock`` (0600) and hands each connection to a thread of its
own (at most :data:`MAX_CLIENTS` at once; one more is told ``busy`` at once, never queued):
one JSON line in (``query``, ``type``, ``since``, ``k``), read within :data:`READ_TIMEOUT`
all told, one JSON line out (``hits`` as [kind, id, cosine], or ``error``). A client that
connects and sends nothing (or a byte now and then) costs only its own thread until its
deadline: found by an attack, when connections were answered in turn and one idle client
made every query wait for the timeout. The model and the vectors are used by one request at
a time (a lock): the search itself takes milliseconds. Nothing heavy is imported until the
first request: the model, numpy and the vectors' sign bits load then, and leave with the
process when the daemon re-executes itself after an idle minute.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from wsd.daemon.memory.semantic import MODEL_ID
from wsd.daemon.memory.semantic.client import address, read_line, socket_path
from wsd.daemon.runtime.log import get_logger
from wsd.daemon.runtime.signals import background
from wsd.daemon.store import Store

#: A client has this long, all told, to send its request line (a byte now and then does not
#: extend it), and as long again to take its answer.
READ_TIMEOUT = 2.0
#: Connections answered at once; one more is answered ``busy`` at once.
MAX_CLIENTS = 16
MAX_REQUEST = 64 * 1024
MAX_K = 200


class SemanticServer:
    """Listens for search_memory's semantic half while the daemon runs."""

    def __init__(self, store: Store, on_use: Callable[[], None] = lambda: None) -> None:
        self.store = store
        self.on_use = on_use
        self.path = socket_path(store.layout)
        self.log = get_logger(component="semantic")
        self.sock: socket.socket | None = None
        self._index: Any = None
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(MAX_CLIENTS)

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
        sock.listen(MAX_CLIENTS)
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
            if not self._slots.acquire(blocking=False):
                with conn, contextlib.suppress(OSError):
                    conn.settimeout(0.1)
                    conn.sendall(b'{"error": "busy"}\n')
                continue
            try:
                background(self._handle, "semantic-client", conn)
            except RuntimeError:  # no thread to be had: this client goes unanswered
                self._slots.release()
                conn.close()

    def _handle(self, conn: socket.socket) -> None:
        """Answer one connection within its own deadline, on its own thread."""
        try:
            with conn:
                self._answer(conn, time.monotonic() + READ_TIMEOUT)
        except TimeoutError:
            self.log.info("semantic_client_timeout", seconds=READ_TIMEOUT)
        except (BrokenPipeError, ConnectionResetError):
            self.log.info("semantic_client_gone")  # it left before its answer
        except Exception as exc:  # one bad request never stops the service
            self.log.warning("semantic_failed", error=f"{type(exc).__name__}: {exc}")
        finally:
            self._slots.release()

    def _answer(self, conn: socket.socket, deadline: float) -> None:
        data = read_line(conn, MAX_REQUEST, deadline)
        if not data:
            return  # connected and left without a word
        try:
            reply = {"model": MODEL_ID, "hits": self.search(json.loads(data))}
        except (ValueError, TypeError, KeyError) as exc:
            reply = {"error": f"bad request: {exc}"}
        conn.settimeout(READ_TIMEOUT)
        conn.sendall(json.dumps(reply).encode() + b"\n")

    def search(self, request: dict[str, Any]) -> list[tuple[str, int, float]]:
        """The nearest memories for one request (loads the model on first use)."""
        query = str(request["query"])[:4000]
        kind = request.get("type")
        since = request.get("since")
        k = max(1, min(int(request.get("k") or 100), MAX_K))
        self.on_use()
        with self._lock:  # one request at a time uses the model and the store
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
