"""What the Bridge stand-in answers: replies and faults to script (also faults of whole Message
Batches), the requests it recorded, what its batches billed, and a responder that serves
scripted turns to an agent loop (the Claude Code CLI).

The server itself is daemon/standin/bridge.py; tests import these names from there too.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

JSON = dict[str, Any]


def estimate_tokens(text: str) -> int:
    """Rough token count (4 characters per token, at least 1), like the curator's budget."""
    return max(1, len(text) // 4)


@dataclass(frozen=True)
class Reply:
    """One assistant message: content blocks in API shape, a stop reason, optional usage.

    ``stop_reason=None`` means "derive it": ``tool_use`` when a tool_use block is present,
    else ``end_turn``. ``usage`` entries override the estimated token counts (any JSON value,
    as a lying Bridge sends; None leaves the figure out, and all of them None the usage).
    """

    content: tuple[JSON, ...] = ()
    stop_reason: str | None = None
    usage: Mapping[str, Any] | None = None

    @classmethod
    def text(cls, text: str, *, usage: Mapping[str, Any] | None = None) -> Reply:
        """A plain text answer ending the turn."""
        return cls(({"type": "text", "text": text},), None, usage)

    @classmethod
    def tool_use(
        cls, name: str, input: JSON, *, text: str | None = None, id: str | None = None
    ) -> Reply:
        """A tool call (optionally preceded by text); the id is unique unless given."""
        block: JSON = {"type": "tool_use", "id": id or f"toolu_{uuid.uuid4().hex[:24]}"}
        block |= {"name": name, "input": input}
        lead: tuple[JSON, ...] = ({"type": "text", "text": text},) if text else ()
        return cls((*lead, block))

    @classmethod
    def truncated(cls, partial_text: str) -> Reply:
        """A reply cut short by the token limit (``stop_reason`` ``max_tokens``)."""
        return cls(({"type": "text", "text": partial_text},), "max_tokens")

    @classmethod
    def empty(cls) -> Reply:
        """A 200 reply with ``content: []`` (the real API does send these)."""
        return cls((), "end_turn")

    @property
    def effective_stop_reason(self) -> str:
        """The stop reason sent on the wire."""
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if any(b["type"] == "tool_use" for b in self.content) else "end_turn"

    def message(self, request: JSON, body: bytes, cache: Any = None) -> JSON:
        """The Messages API answer to ``request``: a fresh id, the request's model, and usage
        estimated from ``body`` (the request's bytes) and the reply's text, the input split
        by ``cache`` (a :class:`~wsd.daemon.standin.cache.PromptCache`) into what it wrote
        and read, then ``usage``."""
        out_text = "".join(
            json.dumps(b["input"]) if b["type"] == "tool_use" else b.get("text", "")
            for b in self.content
        )
        total = estimate_tokens(body.decode(errors="replace"))
        fresh, created, read = cache.usage(request, total) if cache is not None else (total, 0, 0)
        usage = {
            "input_tokens": fresh,
            "output_tokens": estimate_tokens(out_text),
            "cache_creation_input_tokens": created,
            "cache_read_input_tokens": read,
        } | dict(self.usage or {})
        # An override of None leaves the figure out, and with every one left out, the usage.
        usage = {k: v for k, v in usage.items() if v is not None}
        return {
            "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "model": request.get("model", "claude-haiku-4-5"),
            "content": [dict(b) for b in self.content],
            "stop_reason": self.effective_stop_reason,
            "stop_sequence": None,
        } | ({"usage": usage} if usage else {})


FaultKind = Literal["status", "malformed", "reset", "hang", "refuse"]


@dataclass(frozen=True)
class Fault:
    """A failure to inject instead of a reply. Build with the class methods."""

    kind: FaultKind
    status: int = 0
    error_type: str = ""
    message: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    seconds: float = 0.0

    @classmethod
    def http_error(
        cls, status: int, error_type: str, message: str, headers: Mapping[str, str] | None = None
    ) -> Fault:
        """Any HTTP error status with an Anthropic error body."""
        return cls("status", status, error_type, message, tuple((headers or {}).items()))

    @classmethod
    def rate_limited(
        cls, retry_after: float | None = 1, retry_after_ms: int | None = None
    ) -> Fault:
        """429 rate_limit_error with ``retry-after`` (seconds) and/or ``retry-after-ms``."""
        headers = {}
        if retry_after is not None:
            headers["retry-after"] = f"{retry_after:g}"
        if retry_after_ms is not None:
            headers["retry-after-ms"] = str(retry_after_ms)
        return cls.http_error(429, "rate_limit_error", "Number of requests exceeded.", headers)

    @classmethod
    def server_error(cls) -> Fault:
        """500 api_error."""
        return cls.http_error(500, "api_error", "Internal server error")

    @classmethod
    def overloaded(cls) -> Fault:
        """529 overloaded_error."""
        return cls.http_error(529, "overloaded_error", "Overloaded")

    @classmethod
    def bad_request(cls, message: str = "messages: field required") -> Fault:
        """400 invalid_request_error (not transient: a retry gets the same answer)."""
        return cls.http_error(400, "invalid_request_error", message)

    @classmethod
    def malformed_json(cls) -> Fault:
        """200 with ``content-type: application/json`` and a body cut off mid-object."""
        return cls("malformed")

    @classmethod
    def reset(cls) -> Fault:
        """Read the request, then close with SO_LINGER 0: the client sees a TCP RST."""
        return cls("reset")

    @classmethod
    def hang(cls, seconds: float) -> Fault:
        """Read the request, say nothing for ``seconds`` (or until stop()), then close."""
        return cls("hang", seconds=seconds)

    @classmethod
    def refuse(cls, seconds: float) -> Fault:
        """Close the listener for ``seconds`` (connects are refused), then reopen it."""
        return cls("refuse", seconds=seconds)


Step = Reply | Fault
Responder = Callable[[JSON], Step]

BatchFaultKind = Literal[
    "expired", "errored", "unsupported", "truncated", "malformed_line", "missing", "hang",
    "foreign_results_url", "lost",
]  # fmt: skip


@dataclass(frozen=True)
class BatchFault:
    """A failure of one whole Message Batch, consumed by the next batch created (a create the
    stand-in answers 400 consumes none). Build with the class methods."""

    kind: BatchFaultKind
    status: int = 0
    seconds: float = 0.0
    on: Literal["retrieve", "results"] = "results"
    drop: bool = False

    @classmethod
    def expired(cls) -> BatchFault:
        """No step is taken; the batch ends with every request ``expired``."""
        return cls("expired")

    @classmethod
    def errored(cls) -> BatchFault:
        """No step is taken; the batch ends with every request ``errored`` ``api_error``."""
        return cls("errored")

    @classmethod
    def unsupported(cls, status: int = 404) -> BatchFault:
        """The create answers ``status`` and creates nothing (no step taken): 404
        ``not_found_error``, 405 ``invalid_request_error``, 501 ``api_error`` (Anthropic error
        bodies), or 200 with an HTML page as ``text/html``, not the documented JSON."""
        if status not in (200, 404, 405, 501):
            raise ValueError(f"unsupported: status {status} is not 200, 404, 405 or 501")
        return cls("unsupported", status=status)

    @classmethod
    def truncated(cls, *, drop: bool = False) -> BatchFault:
        """The results end in the middle of their last line, framed by the content-length of
        what is sent; ``drop``: the content-length of the whole, then a TCP reset at the cut."""
        return cls("truncated", drop=drop)

    @classmethod
    def malformed_line(cls) -> BatchFault:
        """The first request's results line is cut mid-object (and still ends in a newline)."""
        return cls("malformed_line")

    @classmethod
    def missing(cls) -> BatchFault:
        """The first request's line is left out of the results."""
        return cls("missing")

    @classmethod
    def hang(cls, seconds: float, on: Literal["retrieve", "results"] = "results") -> BatchFault:
        """The batch's first ``on`` request gets nothing for ``seconds`` (stop() cuts it short),
        then a TCP reset; later ones are answered."""
        return cls("hang", seconds=seconds, on=on)

    @classmethod
    def foreign_results_url(cls) -> BatchFault:
        """``results_url`` is on https://api.anthropic.com, off the Bridge (the stand-in still
        serves its own results path)."""
        return cls("foreign_results_url")

    @classmethod
    def lost(cls) -> BatchFault:
        """After the create's answer every path with the batch's id answers 404 and the list
        leaves it out; it is processed (steps taken, ended, billed) all the same."""
        return cls("lost")


@dataclass(frozen=True)
class Billed:
    """One succeeded batch request the stand-in billed, with the usage its message reported."""

    batch_id: str
    custom_id: str
    usage: JSON


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received; ``raw`` rebuilds every byte of it for secret scans."""

    method: str
    path: str
    request_line: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    json: JSON | None
    timestamp: float = field(default_factory=time.time)

    def header(self, name: str) -> str | None:
        """First value of a header, case-insensitively."""
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)

    @property
    def raw(self) -> bytes:
        """Request line, header lines and body, as bytes."""
        head = "".join(f"{k}: {v}\r\n" for k, v in self.headers)
        return f"{self.request_line}\r\n{head}\r\n".encode("latin-1") + self.body


def default_responder(_body: JSON) -> Step:
    return Reply.text("NONE")


RequestKind = Literal["main", "compact", "side"]

# Claude Code (CLI 2.1.329) ends its compaction prompt with this sentence. The compaction
# request reuses the main loop's system prompt and tools (for the prompt cache), so this text
# is the only thing that tells it apart from a main turn.
COMPACT_MARKER = "Do NOT call any tools"


def _last_user_text(body: JSON) -> str:
    messages = body.get("messages") or [{}]
    content = messages[-1].get("content", "")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict))


def _schema_example(schema: Any) -> Any:
    """A minimal instance of a JSON schema: only required properties, placeholder values."""
    if not isinstance(schema, dict):
        return None
    if schema.get("type") == "object":
        props = schema.get("properties") or {}
        return {name: _schema_example(props.get(name)) for name in schema.get("required", [])}
    placeholders = {"string": "stand-in", "array": [], "boolean": False, "integer": 0, "number": 0}
    return placeholders.get(str(schema.get("type")))


class ConversationScript:
    """Responder serving scripted assistant turns to an agent loop (the Claude Code CLI).

    Only *main* requests consume turns, so the CLI's side requests cannot eat one. What the
    bundled CLI sends (all ``POST /v1/messages?beta=true`` with ``stream: true``):

    * main turns: non-empty ``tools`` plus ``thinking`` and ``context_management``;
    * title generation (once per session, unless CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1):
      ``tools: []`` and ``output_config.format`` a JSON schema ``{"title": string}``;
    * compaction (``/compact`` or auto): same system and tools as a main turn, the last user
      message holds the summary instructions (:data:`COMPACT_MARKER`); a reply without
      ``<summary>`` tags makes the CLI ask again.

    Side requests get a harmless answer: a minimal instance of the requested JSON schema, an
    ``<analysis>``/``<summary>`` text for compaction, else ``side_reply``. Once the turns are
    used up, main requests get ``exhausted`` (plain text), which ends the agent loop.
    """

    def __init__(
        self,
        turns: Iterable[Reply],
        *,
        side_reply: Reply | None = None,
        exhausted: Reply | None = None,
    ) -> None:
        self._turns = deque(turns)
        self._side_reply = side_reply or Reply.text("OK")
        self._exhausted = exhausted or Reply.text("(stand-in script exhausted)")
        self._lock = threading.Lock()
        self.served: list[tuple[RequestKind, JSON]] = []

    @staticmethod
    def classify(body: JSON) -> RequestKind:
        """Whether a request body is a main agent turn, a compaction, or another side task."""
        if not body.get("tools"):
            return "side"
        return "compact" if COMPACT_MARKER in _last_user_text(body) else "main"

    @property
    def remaining(self) -> int:
        """Turns not served yet."""
        with self._lock:
            return len(self._turns)

    def bodies(self, kind: RequestKind) -> list[JSON]:
        """The request bodies received so far that were classified as ``kind``."""
        with self._lock:
            return [body for k, body in self.served if k == kind]

    def __call__(self, body: JSON) -> Step:
        kind = self.classify(body)
        with self._lock:
            self.served.append((kind, body))
            if kind == "main":
                return self._turns.popleft() if self._turns else self._exhausted
        if kind == "compact":
            return Reply.text("<analysis>stand-in</analysis>\n<summary>Stand-in summary.</summary>")
        fmt = (body.get("output_config") or {}).get("format") or {}
        if fmt.get("type") == "json_schema":
            return Reply.text(json.dumps(_schema_example(fmt.get("schema"))))
        return self._side_reply
