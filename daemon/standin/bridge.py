"""A local stand-in for the Bridge: a real HTTP server speaking the Anthropic Messages API.

Used by the tests and by ``make demo`` in place of the real Bridge proxy. It answers
``POST /v1/messages`` (JSON, or SSE when the request sets ``"stream": true``) and
``POST /v1/messages/count_tokens``, and the Message Batches API under
``/v1/messages/batches`` (``BridgeStandin.batches``: see
daemon/standin/message_batches.py); anything else gets an Anthropic-style 404 error body.

Contracts:

* Each ``/v1/messages`` request consumes the next scripted step (:meth:`BridgeStandin.script`),
  or, when none is queued, asks the ``responder`` (default: a reply whose text is ``NONE``);
  so does each request inside a created Message Batch.
  A step is a :class:`Reply` or a :class:`Fault`.
* A :meth:`Fault.refuse` step takes effect as soon as it reaches the head of the queue (when
  scripted while the queue is empty, or when the step before it is consumed): the listener is
  really closed, so connects get ECONNREFUSED, and reopened on the same port after its seconds.
* Every request received (also those answered with a fault) is recorded byte for byte.
* Every response carries ``Connection: close``, so no client holds a pooled connection that
  would bypass a closed listener, and :meth:`BridgeStandin.stop` has no idle keep-alive
  connections to wait for.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import uuid
from collections import deque
from collections.abc import Iterable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from wsd.daemon.standin.cache import PromptCache
from wsd.daemon.standin.message_batches import BATCHES_PATH, MessageBatches
from wsd.daemon.standin.steps import (
    JSON,
    ConversationScript,
    Fault,
    RecordedRequest,
    Reply,
    Responder,
    Step,
    default_responder,
    estimate_tokens,
)

__all__ = [
    "JSON",
    "BridgeStandin",
    "ConversationScript",
    "Fault",
    "RecordedRequest",
    "Reply",
    "Responder",
    "Step",
    "estimate_tokens",
]

MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"


class _Server(ThreadingHTTPServer):
    # Handler threads must never keep the process alive or make server_close() wait on a hang.
    daemon_threads = True
    block_on_close = False

    def __init__(self, port: int, standin: BridgeStandin) -> None:
        self.standin = standin
        super().__init__(("127.0.0.1", port), _Handler)


class BridgeStandin:
    """The stand-in server. Thread-safe; ``start()``/``stop()`` or use as a context manager.

    ``latency`` (seconds, settable at any time) is slept before answering each
    ``/v1/messages`` and Message Batches request, faults included. Any API key (or none) is
    accepted: tests check what was sent through ``requests``. ``batches`` holds the Message
    Batches (their delay, faults and what they billed).
    """

    def __init__(
        self,
        port: int = 0,
        *,
        responder: Responder | None = None,
        latency: float = 0.0,
    ) -> None:
        self.responder: Responder = responder or default_responder
        self.latency = latency
        self._port = port
        self._lock = threading.Lock()
        self._steps: deque[Step] = deque()
        self._requests: list[RecordedRequest] = []
        self._server: _Server | None = None
        self._running = False
        self._resume_timer: threading.Timer | None = None
        # Set by stop(): wakes every handler sleeping in latency or a hang fault.
        self._stopping = threading.Event()
        #: The prompt cache the Messages API keeps (Message Batch requests share it).
        self.cache = PromptCache()
        self.batches = MessageBatches(
            self._next_step, lambda: self.url, self._stopping, cache=self.cache
        )

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> Self:
        """Bind 127.0.0.1 (an ephemeral port the first time if 0) and serve in a thread."""
        with self._lock:
            self._running = True
            self._stopping.clear()
        self.resume()
        return self

    def stop(self) -> None:
        """Close the listener and drop requests sleeping in latency or a hang; takes <= ~0.1 s."""
        with self._lock:
            self._running = False
            self._stopping.set()
            if self._resume_timer is not None:
                self._resume_timer.cancel()
        self.pause()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port; stays the same across pause()/resume()."""
        return self._port

    @property
    def url(self) -> str:
        """Base URL for ``ANTHROPIC_BASE_URL``."""
        return f"http://127.0.0.1:{self._port}"

    def pause(self) -> None:
        """Close the listening socket: new connections are refused until resume()."""
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.shutdown()  # waits for serve_forever() to leave its select (<= 50 ms)
            server.server_close()

    def resume(self) -> None:
        """Reopen the listener on the same port (no-op when stopped or already listening)."""
        with self._lock:
            if not self._running or self._server is not None:
                return
            # SO_REUSEADDR (HTTPServer's default) lets us rebind past TIME_WAIT connections.
            self._server = server = _Server(self._port, self)
            self._port = server.server_address[1]
        threading.Thread(
            target=server.serve_forever, args=(0.05,), name="bridge-standin", daemon=True
        ).start()

    def refuse_for(self, seconds: float) -> None:
        """pause() now and resume() after ``seconds`` (a later call replaces the timer)."""
        self.pause()
        timer = threading.Timer(seconds, self.resume)
        timer.daemon = True
        with self._lock:
            if self._resume_timer is not None:
                self._resume_timer.cancel()
            self._resume_timer = timer
        timer.start()

    # -- scripting and records -------------------------------------------------------------

    def script(self, *steps: Step) -> None:
        """Queue steps, consumed one per ``/v1/messages`` request in order."""
        with self._lock:
            self._steps.extend(steps)
        self._apply_head_refusal()

    @property
    def pending_steps(self) -> int:
        """Steps queued and not consumed yet."""
        with self._lock:
            return len(self._steps)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def clear_requests(self) -> None:
        """Forget the recorded requests."""
        with self._lock:
            self._requests.clear()

    def _next_step(self, body: JSON) -> Step:
        with self._lock:
            step = self._steps.popleft() if self._steps else None
        if step is None:
            step = self.responder(body)
        # Done before the reply is written, so the client's next connect is already refused.
        self._apply_head_refusal()
        return step

    def _apply_head_refusal(self) -> None:
        with self._lock:
            if not (self._steps and isinstance(head := self._steps[0], Fault)):
                return
            if head.kind != "refuse":
                return
            self._steps.popleft()
        self.refuse_for(head.seconds)

    # -- serving ---------------------------------------------------------------------------

    def _handle(self, h: _Handler) -> None:
        body = h.read_body()
        parsed: JSON | None = None
        try:
            loaded = json.loads(body) if body else None
            parsed = loaded if isinstance(loaded, dict) else None
        except ValueError:
            pass
        path = h.path.split("?", 1)[0]
        record = RecordedRequest(
            h.command, path, h.requestline, tuple(h.headers.items()), body, parsed
        )
        with self._lock:
            self._requests.append(record)

        if h.command in ("GET", "HEAD") and path in ("/", "/api/hello"):  # reachability probes
            h.send_json(200, {"status": "ok", "service": "bridge-standin"})
        elif path == BATCHES_PATH or path.startswith(BATCHES_PATH + "/"):
            self._serve_batches(h, parsed)
        elif h.command != "POST" or path not in (MESSAGES_PATH, COUNT_TOKENS_PATH):
            h.send_error_body(404, "not_found_error", f"Not found: {h.command} {path}")
        elif parsed is None:
            h.send_error_body(400, "invalid_request_error", "Request body is not a JSON object")
        elif path == COUNT_TOKENS_PATH:
            h.send_json(200, {"input_tokens": estimate_tokens(body.decode(errors="replace"))})
        else:
            self._serve_messages(h, parsed, body)

    def _serve_batches(self, h: _Handler, parsed: JSON | None) -> None:
        if self.latency > 0 and self._stopping.wait(self.latency):
            h.abort()  # stop() during the latency: die like a killed server
        else:
            self.batches.serve(h, h.command, h.path, parsed)

    def _serve_messages(self, h: _Handler, parsed: JSON, body: bytes) -> None:
        try:
            step = self._next_step(parsed)
        except Exception as exc:  # a broken responder must show up in the test, not hang it
            h.send_error_body(500, "api_error", f"stand-in responder failed: {exc!r}")
            return
        if self.latency > 0 and self._stopping.wait(self.latency):
            h.abort()  # stop() during the latency: die like a killed server
        elif isinstance(step, Reply):
            self._send_reply(h, step, parsed, body)
        else:
            self._send_fault(h, step)

    def _send_fault(self, h: _Handler, fault: Fault) -> None:
        if fault.kind == "status":
            h.send_error_body(fault.status, fault.error_type, fault.message, fault.headers)
        elif fault.kind == "malformed":
            h.send_raw(200, "application/json", b'{"id": "msg_standin", "type": "mess')
        elif fault.kind == "hang":
            self._stopping.wait(fault.seconds)
            h.abort()
        elif fault.kind == "reset":
            h.abort()
        else:  # "refuse" served by a responder or raced in: refuse from now on, reset this one
            self.refuse_for(fault.seconds)
            h.abort()

    def _send_reply(self, h: _Handler, reply: Reply, request: JSON, body: bytes) -> None:
        message = reply.message(request, body, self.cache)
        if request.get("stream"):
            h.send_sse(_sse_events(message))
        else:
            h.send_json(200, message)


def _sse_events(message: JSON) -> Iterable[JSON]:
    """The Messages API event sequence for a complete message, with content in small deltas."""
    usage = message.get("usage", {})
    start = message | {"content": [], "stop_reason": None, "usage": usage | {"output_tokens": 1}}
    yield {"type": "message_start", "message": start}
    yield {"type": "ping"}
    for i, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            empty, text, kind = block | {"input": {}}, json.dumps(block["input"]), "input_json"
        else:
            empty, text, kind = block | {"text": ""}, block.get("text", ""), "text"
        yield {"type": "content_block_start", "index": i, "content_block": empty}
        # Several deltas, so clients' accumulation (not just a single event) is exercised.
        for piece in _chunks(text, 16):
            delta = {
                "type": f"{kind}_delta",
                "partial_json" if kind == "input_json" else "text": piece,
            }
            yield {"type": "content_block_delta", "index": i, "delta": delta}
        yield {"type": "content_block_stop", "index": i}
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    yield {"type": "message_delta", "delta": stop, "usage": usage}
    yield {"type": "message_stop"}


def _chunks(text: str, size: int) -> Sequence[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # needed for chunked SSE; connections still close per reply
    server: _Server

    def do_POST(self) -> None:
        self.server.standin._handle(self)

    do_GET = do_HEAD = do_PUT = do_DELETE = do_PATCH = do_POST

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the tests inspect `requests`; stderr noise per request helps nobody

    def read_body(self) -> bytes:
        # Both clients that matter (httpx, Bun's fetch) send JSON with a content-length.
        return self.rfile.read(int(self.headers.get("content-length") or 0))

    def start_response(self, status: int, headers: Iterable[tuple[str, str]]) -> None:
        self.close_connection = True
        self.send_response(status)
        self.send_header("request-id", f"req_{uuid.uuid4().hex[:24]}")
        self.send_header("connection", "close")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()

    def send_raw(
        self, status: int, ctype: str, payload: bytes, headers: Iterable[tuple[str, str]] = ()
    ) -> None:
        head = [("content-type", ctype), ("content-length", str(len(payload))), *headers]
        self.start_response(status, head)
        if self.command != "HEAD":
            self.wfile.write(payload)

    def send_json(self, status: int, obj: JSON, headers: Iterable[tuple[str, str]] = ()) -> None:
        self.send_raw(status, "application/json", json.dumps(obj).encode(), headers)

    def send_error_body(
        self, status: int, error_type: str, message: str, headers: Iterable[tuple[str, str]] = ()
    ) -> None:
        body = {"type": "error", "error": {"type": error_type, "message": message}}
        self.send_json(status, body, headers)

    def send_sse(self, events: Iterable[JSON]) -> None:
        ctype = ("content-type", "text/event-stream; charset=utf-8")
        self.start_response(
            200, [ctype, ("cache-control", "no-cache"), ("transfer-encoding", "chunked")]
        )
        for event in events:
            data = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.write(b"0\r\n\r\n")

    def abort(self) -> None:
        """Drop the connection with a TCP RST (SO_LINGER 0), never sending a response."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.rfile.close()  # the makefile() reference would otherwise keep the fd open
            self.connection.close()
        except OSError:
            pass  # already gone: the client gave up first
