"""The Message Batches API of the Bridge stand-in, served as ``BridgeStandin.batches``.

As the Anthropic API documents it, under ``/v1/messages/batches``:

* ``POST /v1/messages/batches`` ``{"requests": [{"custom_id", "params"}, ...]}`` -> a
  MessageBatch, ``in_progress``. ``requests`` not a non-empty list, a ``custom_id`` not 1-64 of
  ``[a-zA-Z0-9_-]`` or repeated, ``params`` not an object (or no JSON object at all): 400
  ``invalid_request_error``; nothing is created, no step nor batch fault consumed.
* ``GET .../{id}`` -> the MessageBatch as it stands; once ended: counts, ``ended_at`` and an
  absolute ``results_url`` on the stand-in's origin.
* ``GET .../{id}/results`` -> ``application/binary`` (the SDK's Accept) JSON Lines, one per
  request, in request order. Before the end: 400 ``invalid_request_error`` (the docs say
  nothing; the SDK never asks, it refuses a batch without ``results_url``).
* ``POST .../{id}/cancel`` -> the batch ``canceling``; it ends at once (the next look sees it
  ``ended``, every request ``canceled``, nothing billed). On an ended batch: 400.
* ``GET /v1/messages/batches`` (``limit`` 1-1000, ``after_id``, ``before_id``; newest first);
  ``DELETE .../{id}`` (ended batches only, else 400).
* An unknown id, or another method on these paths: 404 ``not_found_error``.

At creation each request takes the next step as a ``/v1/messages`` request does (the scripted
queue, else the responder): once per request, in request order, a batch's requests in a row.
The results are held until the batch ends:

* :class:`Reply` -> ``succeeded`` with ``Reply.message`` (usage estimated from the params' JSON);
* a ``status`` Fault -> ``errored`` with its error type and message (headers dropped);
* ``Fault.malformed_json`` -> its line is cut mid-object (counted ``errored``);
* ``Fault.hang(s)`` -> the batch cannot end before ``s`` seconds; that request ``expired``;
* ``Fault.reset``, a ``Fault.refuse`` from the responder, a responder that raised -> ``errored``
  ``api_error`` (a queued refuse still closes the listener, as for /v1/messages).

A batch ends ``delay`` seconds after its creation (the value then; 0.0: the first look after the
create sees it ended). Nothing runs in the background: state is worked out whenever anything
looks (a request, ``billed``); :meth:`MessageBatches.end_all` ends every batch now.

When a batch ends each ``succeeded`` request is appended to ``billed`` (:class:`Billed`), even
if its line is then garbled, left out or cut, or the batch lost: the API bills work done, not
work delivered. The usage is the message's; pricing it (at half) is the daemon's business.

Settable at any time, thread-safe: ``delay``, ``enabled`` (False: every batch path answers 404,
a Bridge without the API) and the batch faults queue (:meth:`MessageBatches.script`, consumed
one per created batch; :class:`BatchFault` in steps.py says what each does on the wire).
"""

from __future__ import annotations

import io
import json
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol
from urllib.parse import parse_qs

from wsd.daemon.standin.steps import JSON, BatchFault, BatchFaultKind, Billed, Reply, Step

__all__ = ["BATCHES_PATH", "BatchFault", "Billed", "Exchange", "MessageBatches"]

BATCHES_PATH = "/v1/messages/batches"
FOREIGN_ORIGIN = "https://api.anthropic.com"
RESULTS_TYPE = "application/binary"
_CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_UNSUPPORTED = {
    404: ("not_found_error", f"Not found: POST {BATCHES_PATH}"),
    405: ("invalid_request_error", "Method Not Allowed"),
    501: ("api_error", "Not Implemented"),
}
_HTML = b"<!doctype html><html><head><title>Bridge</title></head><body>Bridge</body></html>\n"


class Exchange(Protocol):
    """What the batches need of one HTTP exchange (the stand-in's request handler)."""

    @property
    def wfile(self) -> io.BufferedIOBase: ...
    def start_response(self, status: int, headers: Iterable[tuple[str, str]]) -> None: ...
    def send_raw(self, status: int, ctype: str, payload: bytes) -> None: ...
    def send_json(self, status: int, obj: JSON) -> None: ...
    def send_error_body(self, status: int, error_type: str, message: str) -> None: ...
    def abort(self) -> None: ...


@dataclass
class _Line:
    custom_id: str
    result: JSON
    usage: JSON | None = None  # what the Bridge bills, when the request succeeded
    wire: bytes | None = None  # sent instead of the JSON line

    def encoded(self) -> bytes:
        if self.wire is not None:
            return self.wire
        return json.dumps({"custom_id": self.custom_id, "result": self.result}).encode() + b"\n"


@dataclass
class _Batch:
    id: str
    fault: BatchFault | None
    lines: list[_Line]
    due: float  # time.monotonic() at which it ends
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    status: Literal["in_progress", "canceling", "ended"] = "in_progress"
    ended_at: datetime | None = None
    cancel_initiated_at: datetime | None = None
    hung: bool = False

    def is_(self, kind: BatchFaultKind) -> bool:
        return self.fault is not None and self.fault.kind == kind


class MessageBatches:
    """The batches of one stand-in; ``serve`` answers every request under BATCHES_PATH."""

    def __init__(
        self,
        next_step: Callable[[JSON], Step],
        origin: Callable[[], str],
        stopping: threading.Event,
        cache: Any = None,
    ) -> None:
        self.delay = 0.0
        self.enabled = True
        #: The stand-in's prompt cache (cache.py): a batch's requests share it, in order.
        self.cache = cache
        self._next_step = next_step
        self._origin = origin
        self._stopping = stopping
        self._lock = threading.Lock()
        self._create_lock = threading.Lock()  # one batch's requests take consecutive steps
        self._faults: deque[BatchFault] = deque()
        self._batches: dict[str, _Batch] = {}  # in creation order
        self._billed: list[Billed] = []

    def script(self, *faults: BatchFault) -> None:
        """Queue batch faults, consumed one per created batch in order."""
        with self._lock:
            self._faults.extend(faults)

    @property
    def pending_faults(self) -> int:
        """Batch faults queued and not consumed yet."""
        with self._lock:
            return len(self._faults)

    @property
    def billed(self) -> list[Billed]:
        """What the stand-in billed so far (batches due by now ended first), oldest first."""
        with self._lock:
            self._settle()
            return list(self._billed)

    def end_all(self) -> None:
        """End every batch not ended yet, now."""
        now = time.monotonic()
        with self._lock:
            for batch in self._batches.values():
                batch.due = min(batch.due, now)
            self._settle()

    # -- serving ---------------------------------------------------------------------------

    def serve(self, h: Exchange, method: str, target: str, parsed: JSON | None) -> None:
        """Answer one request; ``target`` is the request path with its query."""
        path, _, query = target.partition("?")
        parts = [p for p in path[len(BATCHES_PATH) :].split("/") if p]
        if not self.enabled or (not parts and method not in ("POST", "GET")):
            h.send_error_body(404, "not_found_error", f"Not found: {method} {path}")
            return
        if not parts:
            if method == "POST":
                self._create(h, parsed)
            else:
                self._list(h, query)
            return
        with self._lock:
            self._settle()
            batch = self._batches.get(parts[0])
        # Lower case: a bare "DELETE" reads as SQL to test_architecture's check.
        route = (method.lower(), *parts[1:])
        if batch is None or batch.is_("lost"):
            h.send_error_body(404, "not_found_error", f"No Message Batch with id {parts[0]!r}")
        elif route == ("get",):
            self._retrieve(h, batch)
        elif route == ("get", "results"):
            self._results(h, batch)
        elif route in (("post", "cancel"), ("delete",)):
            self._cancel_or_delete(h, batch, delete=route == ("delete",))
        else:
            h.send_error_body(404, "not_found_error", f"Not found: {method} {path}")

    def _create(self, h: Exchange, parsed: JSON | None) -> None:
        with self._create_lock:
            with self._lock:  # an absent endpoint answers before it could read the body
                absent = bool(self._faults) and self._faults[0].kind == "unsupported"
                problem = "" if absent else _invalid(parsed)
                fault = self._faults.popleft() if self._faults and not problem else None
            if fault is not None and fault.kind == "unsupported":
                _send_unsupported(h, fault.status)
                return
            if problem or parsed is None:
                h.send_error_body(400, "invalid_request_error", problem)
                return
            start = time.monotonic()
            due = start + self.delay
            lines: list[_Line] = []
            for request in parsed["requests"]:
                custom_id, params = request["custom_id"], request["params"]
                if fault is not None and fault.kind == "expired":
                    lines.append(_Line(custom_id, {"type": "expired"}))
                elif fault is not None and fault.kind == "errored":
                    lines.append(_Line(custom_id, _errored("api_error", "Internal server error")))
                else:
                    line, hold = self._answer(custom_id, params)
                    lines.append(line)
                    due = max(due, start + hold)
            batch = _Batch(f"msgbatch_{uuid.uuid4().hex[:24]}", fault, lines, due)
            with self._lock:
                self._batches[batch.id] = batch
                answer = self._describe(batch)
        h.send_json(200, answer)

    def _answer(self, custom_id: str, params: JSON) -> tuple[_Line, float]:
        """The held result of one request, and how long it keeps its batch from ending."""
        try:
            step = self._next_step(params)
        except Exception as exc:  # a broken responder must show up in the results
            failed = _errored("api_error", f"stand-in responder failed: {exc!r}")
            return _Line(custom_id, failed), 0.0
        if isinstance(step, Reply):
            message = step.message(params, json.dumps(params).encode(), self.cache)
            succeeded = {"type": "succeeded", "message": message}
            return _Line(custom_id, succeeded, message["usage"]), 0.0
        if step.kind == "status":
            return _Line(custom_id, _errored(step.error_type, step.message)), 0.0
        if step.kind == "malformed":
            garbled = _errored("api_error", "malformed")
            return _Line(custom_id, garbled, wire=_garbled(custom_id)), 0.0
        if step.kind == "hang":
            return _Line(custom_id, {"type": "expired"}), step.seconds
        return _Line(custom_id, _errored("api_error", "Internal server error")), 0.0

    def _retrieve(self, h: Exchange, batch: _Batch) -> None:
        if not self._hang(h, batch, "retrieve"):
            with self._lock:
                answer = self._describe(batch)
            h.send_json(200, answer)

    def _results(self, h: Exchange, batch: _Batch) -> None:
        if self._hang(h, batch, "results"):
            return
        with self._lock:
            ended, lines = batch.status == "ended", list(batch.lines)
        if not ended:
            message = f"Message Batch {batch.id} has not ended yet: no results to retrieve"
            h.send_error_body(400, "invalid_request_error", message)
            return
        wire = [line.encoded() for line in lines]
        if batch.is_("malformed_line"):
            wire[0] = _garbled(lines[0].custom_id)
        elif batch.is_("missing"):
            del wire[0]
        payload = b"".join(wire)
        if not batch.is_("truncated") or batch.fault is None:
            h.send_raw(200, RESULTS_TYPE, payload)
            return
        cut = len(payload) - len(wire[-1]) // 2  # the middle of the last line, newline gone
        if not batch.fault.drop:
            h.send_raw(200, RESULTS_TYPE, payload[:cut])
            return
        whole = [("content-type", RESULTS_TYPE), ("content-length", str(len(payload)))]
        h.start_response(200, whole)
        h.wfile.write(payload[:cut])
        h.wfile.flush()
        h.abort()

    def _cancel_or_delete(self, h: Exchange, batch: _Batch, *, delete: bool) -> None:
        with self._lock:
            status = batch.status
            if delete and status == "ended":
                del self._batches[batch.id]
            elif not delete and status == "in_progress":
                batch.status, batch.due = "canceling", time.monotonic()
                batch.cancel_initiated_at = datetime.now(UTC)
            answer = self._describe(batch)
        if delete:
            answer = {"id": batch.id, "type": "message_batch_deleted"}
        if delete == (status == "ended"):  # delete an ended batch, cancel one not ended
            h.send_json(200, answer)
        else:
            why = "is still processing: cancel it first" if delete else "has ended"
            h.send_error_body(400, "invalid_request_error", f"Message Batch {batch.id} {why}")

    def _list(self, h: Exchange, query: str) -> None:
        params = {k: v[-1] for k, v in parse_qs(query).items()}
        with self._lock:
            self._settle()
            batches = [b for b in reversed(self._batches.values()) if not b.is_("lost")]
            data = [self._describe(b) for b in batches]
        ids = [b["id"] for b in data]
        limit = params.get("limit", "20")
        cursor = params.get("before_id") or params.get("after_id")
        if not (limit.isdigit() and 1 <= int(limit) <= 1000) or cursor not in (None, *ids):
            problem = "limit must be 1-1000, and a cursor the id of a listed batch"
            h.send_error_body(400, "invalid_request_error", problem)
            return
        n = int(limit)
        if "before_id" in params:
            end = ids.index(params["before_id"])
            data, more = data[max(0, end - n) : end], end > n
        else:
            start = ids.index(params["after_id"]) + 1 if "after_id" in params else 0
            data, more = data[start : start + n], start + n < len(ids)
        first, last = (data[0]["id"], data[-1]["id"]) if data else (None, None)
        h.send_json(200, {"data": data, "has_more": more, "first_id": first, "last_id": last})

    def _hang(self, h: Exchange, batch: _Batch, where: str) -> bool:
        """Play the batch's hang fault on its first ``where`` request; whether it did."""
        with self._lock:
            fault = batch.fault if batch.is_("hang") and not batch.hung else None
            if fault is None or fault.on != where:
                return False
            batch.hung = True
        self._stopping.wait(fault.seconds)
        h.abort()
        return True

    # -- state (under self._lock) ------------------------------------------------------------

    def _settle(self) -> None:
        """End each batch whose time is up; bill its succeeded requests."""
        now = time.monotonic()
        for batch in self._batches.values():
            if batch.status == "ended" or batch.due > now:
                continue
            if batch.status == "canceling":
                batch.lines = [_Line(line.custom_id, {"type": "canceled"}) for line in batch.lines]
            batch.status, batch.ended_at = "ended", datetime.now(UTC)
            self._billed.extend(
                Billed(batch.id, line.custom_id, dict(line.usage))
                for line in batch.lines
                if line.usage is not None
            )

    def _describe(self, batch: _Batch) -> JSON:
        """The MessageBatch object."""
        counts = dict.fromkeys(("processing", "succeeded", "errored", "canceled", "expired"), 0)
        results_url = None
        if batch.status == "ended":
            for line in batch.lines:
                counts[line.result["type"]] += 1
            origin = FOREIGN_ORIGIN if batch.is_("foreign_results_url") else self._origin()
            results_url = f"{origin}{BATCHES_PATH}/{batch.id}/results"
        else:
            counts["processing"] = len(batch.lines)
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": batch.status,
            "request_counts": counts,
            "ended_at": _rfc3339(batch.ended_at),
            "created_at": _rfc3339(batch.created_at),
            "expires_at": _rfc3339(batch.created_at + timedelta(hours=24)),
            "cancel_initiated_at": _rfc3339(batch.cancel_initiated_at),
            "archived_at": None,
            "results_url": results_url,
        }


def _invalid(parsed: JSON | None) -> str:
    """What is wrong with a create body ('' when nothing)."""
    if parsed is None:
        return "Request body is not a JSON object"
    requests = parsed.get("requests")
    if not isinstance(requests, list) or not requests:
        return "requests: must be a non-empty list"
    seen: set[str] = set()
    for i, request in enumerate(requests):
        if not isinstance(request, dict):
            return f"requests.{i}: must be an object"
        custom_id = request.get("custom_id")
        if not isinstance(custom_id, str) or not _CUSTOM_ID.fullmatch(custom_id):
            return f"requests.{i}.custom_id: must be 1-64 characters of [a-zA-Z0-9_-]"
        if custom_id in seen:
            return f"requests.{i}.custom_id: {custom_id!r} is not unique in this batch"
        seen.add(custom_id)
        if not isinstance(request.get("params"), dict):
            return f"requests.{i}.params: must be an object"
    return ""


def _send_unsupported(h: Exchange, status: int) -> None:
    if status == 200:
        h.send_raw(200, "text/html; charset=utf-8", _HTML)
    else:
        h.send_error_body(status, *_UNSUPPORTED[status])


def _errored(error_type: str, message: str) -> JSON:
    return {
        "type": "errored",
        "error": {"type": "error", "error": {"type": error_type, "message": message}},
    }


def _garbled(custom_id: str) -> bytes:
    """A results line cut off mid-object, newline-terminated."""
    return json.dumps({"custom_id": custom_id}).encode()[:-1] + b', "result": {"type": "succ\n'


def _rfc3339(moment: datetime | None) -> str | None:
    return None if moment is None else moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
