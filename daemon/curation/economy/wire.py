"""The economy lane's wire: Message Batches through the Bridge (create, retrieve, results).

Every call goes through the :class:`~wsd.daemon.curation.bridge.client.BridgeClient` the prompt
lane uses: the same anthropic client aimed at the Bridge (its retries off), the same helper
thread abandoned on stop, the same error sorting. ``create`` runs under the one retry layer;
a poll is not retried here, since the next poll is its retry (the economy lane's backoff).

Hostile by default:

* The results are fetched from ``{bridge}/v1/messages/batches/{id}/results`` through the
  client, never from the ``results_url`` the batch names: the real API names an absolute
  ``api.anthropic.com`` URL, and following it (as the SDK's ``results()`` does) would leave the
  Bridge and this machine. A ``results_url`` on another origin is logged, never fetched.
* A Bridge without the endpoints (404, 405, 501, or a 200 that is not a batch object) raises
  :class:`Unsupported`, so the loop uses the prompt lane instead.
* The results file is read as it streams, one line at a time: a line longer than one
  answer of ``max_tokens`` can be is passed over unread, and the file is read no further than
  :data:`MAX_RESULTS_BYTES` (the soak's flooding Bridge had the daemon hold a 10 MB file
  several times over, past its 120 MB).
* Each results line is checked on its own: a line that is not JSON, names no request of the
  batch, repeats one, is cut short or too long is skipped and reported; the requests it leaves
  without a result are fetched again, then handed to the prompt lane (the economy lane decides).
* A message is read as a prompt answer is (:mod:`wsd.daemon.curation.bridge.answer`): its usage
  checked (:func:`usage_of`), its text taken out (:func:`to_reply`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Set
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from wsd.daemon.curation.bridge.answer import (
    MAX_CHARS_PER_TOKEN,
    BadReply,
    Reply,
    Sent,
    Usage,
    to_reply,
    usage_of,
)
from wsd.daemon.curation.bridge.client import BridgeClient
from wsd.daemon.curation.bridge.failure import problem, status_of

#: Statuses that mean "this Bridge has no Message Batches endpoint".
UNSUPPORTED_STATUS = frozenset({404, 405, 501})
#: Batch processing states the API documents.
STATES = frozenset({"in_progress", "canceling", "ended"})
#: Result types the API documents.
RESULT_TYPES = frozenset({"succeeded", "errored", "canceled", "expired"})
#: The most of a results file read (a hostile Bridge must not keep the daemon reading): 100
#: requests of a 4,096-token answer are ~2 MB.
MAX_RESULTS_BYTES = 64 * 1024 * 1024
#: Bytes a results line may take beyond its reply's text (ids, usage, JSON framing).
LINE_FRAMING_BYTES = 64 * 1024
#: Bytes a character of reply text may take in a results line (``\\uXXXX`` escapes).
ESCAPED_CHAR_BYTES = 6


class Unsupported(Exception):
    """The Bridge has no Message Batches endpoint (or answers it with something else)."""


class Gone(Exception):
    """The Bridge says it has no batch by this id."""


@dataclass(frozen=True)
class BatchState:
    """A batch as the Bridge reports it."""

    message_batch_id: str
    status: str
    ended_at: float | None
    results_url: str | None


@dataclass(frozen=True)
class Result:
    """One request's result: a reply (``succeeded``), or why there is none."""

    custom_id: str
    kind: str
    reply: Reply | None = None
    usage: Usage | None = None
    message_id: str = ""
    error: str | None = None


@dataclass
class Results:
    """A batch's results by custom id, and what was wrong with the file."""

    by_id: dict[str, Result] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


class MessageBatchesClient:
    """Message Batches at the Bridge, through ``bridge``'s client and retry layer."""

    def __init__(self, bridge: BridgeClient) -> None:
        self.bridge = bridge
        self.config = bridge.config

    def create(self, requests: list[dict[str, Any]]) -> str:
        """Create a batch of ``requests`` (``custom_id`` and ``params`` each); its id.
        Raises Unsupported, Outage, BatchRejected or Shutdown."""

        def attempt() -> str:
            try:
                batch = self.bridge.in_thread(
                    lambda c: c.messages.batches.create(requests=requests), "wsd-batch-create"
                )
            except Exception as exc:
                _raise_unsupported(exc)
                raise
            return _state(batch, unsupported=True).message_batch_id

        return self.bridge.retried(attempt, passthrough=(Unsupported,))

    def retrieve(self, message_batch_id: str) -> BatchState:
        """The batch as it stands. Raises Gone (404), Unsupported (an answer that is not a
        batch), Shutdown, or the client's error (the caller polls again later)."""
        try:
            batch = self.bridge.in_thread(
                lambda c: c.messages.batches.retrieve(_safe(message_batch_id)),
                "wsd-batch-poll",
            )
        except Exception as exc:
            if status_of(exc) == 404:
                raise Gone(self.bridge.scrub(problem(exc))) from exc
            raise
        state = _state(batch, unsupported=False)
        if state.message_batch_id != message_batch_id:
            raise BadReply(
                f"asked for batch {message_batch_id}, the Bridge answered {state.message_batch_id}"
            )
        return state

    def results(
        self, message_batch_id: str, expected: Mapping[str, Sent], done: Set[str] = frozenset()
    ) -> Results:
        """The results of an ended batch, by custom id; ``expected`` maps each of its
        custom ids still waiting to what its request sent (the usage check),
        ``done`` names those already applied."""
        path = f"/v1/messages/batches/{_safe(message_batch_id)}/results"
        max_tokens = self.config.max_tokens

        def read(client: Any) -> Results:
            import httpx2  # the anthropic client's HTTP library, loaded with it (not at boot)

            response = client.get(
                path,
                cast_to=httpx2.Response,
                stream=True,
                options={"headers": {"Accept": "application/binary"}},
            )
            try:
                lines = Lines(response.iter_bytes(), line_limit(max_tokens))
                out = parse_results(lines, expected, max_tokens, done)
                if lines.cut:
                    out.problems.append(
                        f"results file over {MAX_RESULTS_BYTES} bytes: read no further"
                    )
                return out
            finally:
                response.close()

        return self.bridge.in_thread(read, "wsd-batch-results")

    def delete(self, message_batch_id: str) -> None:
        """Delete an ended batch and its results at the Bridge (issue 33: its requests held
        words the person asked to forget). Raises Gone if the Bridge no longer has it."""
        self._on_batch("delete", message_batch_id)

    def cancel(self, message_batch_id: str) -> None:
        """Ask the Bridge to stop a batch that has not ended (it ends it, canceled); Gone if
        the Bridge no longer has it."""
        self._on_batch("cancel", message_batch_id)

    def _on_batch(self, verb: str, message_batch_id: str) -> None:
        try:
            self.bridge.in_thread(
                lambda c: getattr(c.messages.batches, verb)(_safe(message_batch_id)),
                f"wsd-batch-{verb}",
            )
        except Exception as exc:
            if status_of(exc) == 404:
                raise Gone(f"no batch {message_batch_id}") from exc
            raise

    def foreign_results_url(self, state: BatchState) -> str | None:
        """The batch's ``results_url`` when it points off the Bridge (never fetched)."""
        url = state.results_url
        if not url or not self.config.bridge_url:
            return None
        mine, theirs = urlsplit(self.config.bridge_url), urlsplit(url)
        if (theirs.scheme, theirs.netloc) == (mine.scheme, mine.netloc):
            return None
        return url[:200]


def line_limit(max_tokens: int) -> int:
    """The longest results line one answer of ``max_tokens`` tokens can make."""
    return max_tokens * MAX_CHARS_PER_TOKEN * ESCAPED_CHAR_BYTES + LINE_FRAMING_BYTES


class Lines:
    """The lines of a streamed file, decoded, holding at most one line of ``limit`` bytes:
    a longer line is drained and yielded as None; reading stops after
    :data:`MAX_RESULTS_BYTES` (``cut`` is then True)."""

    def __init__(self, chunks: Iterable[bytes], limit: int) -> None:
        self.chunks = chunks
        self.limit = limit
        self.cut = False

    def __iter__(self) -> Iterator[str | None]:
        line = bytearray()
        over = False
        total = 0
        for chunk in self.chunks:
            total += len(chunk)
            if total > MAX_RESULTS_BYTES:
                self.cut = True
                return  # what was read of the last line is not a line: the request is missing
            start = 0
            while start <= len(chunk):
                end = chunk.find(b"\n", start)
                piece = chunk[start:] if end < 0 else chunk[start:end]
                if not over:
                    line += piece
                    if len(line) > self.limit:
                        over = True
                        line.clear()
                if end < 0:
                    break
                yield None if over else line.decode("utf-8", "replace")
                line.clear()
                over = False
                start = end + 1
        if over or line:
            yield None if over else line.decode("utf-8", "replace")


def parse_results(
    lines: Iterable[str | None],
    expected: Mapping[str, Sent],
    max_tokens: int,
    done: Set[str] = frozenset(),
) -> Results:
    """Each line of a results file checked on its own (see the module docstring); lines of
    the requests in ``done`` (applied at an earlier read) are passed over without a word.
    A None line is one too long to read (see :class:`Lines`)."""
    out = Results()
    for number, line in enumerate(lines, 1):
        if line is None:
            out.problems.append(f"line {number}: longer than an answer can be, not read")
            continue
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            out.problems.append(f"line {number}: not JSON (cut short or garbled)")
            continue
        custom_id = item.get("custom_id") if isinstance(item, dict) else None
        if isinstance(custom_id, str) and custom_id in done and custom_id not in expected:
            continue
        if not isinstance(custom_id, str) or custom_id not in expected:
            out.problems.append(f"line {number}: names no request of this batch")
            continue
        if custom_id in out.by_id:
            out.problems.append(f"line {number}: a second result for {custom_id}")
            continue
        result = _result(custom_id, item.get("result"), expected[custom_id], max_tokens)
        if result is None:
            out.problems.append(f"line {number}: {custom_id}'s result is not a documented one")
            continue
        out.by_id[custom_id] = result
    return out


def _result(custom_id: str, raw: Any, sent: Sent, max_tokens: int) -> Result | None:
    if not isinstance(raw, dict) or raw.get("type") not in RESULT_TYPES:
        return None
    kind = str(raw["type"])
    if kind == "errored":
        error = raw.get("error")
        inner = error.get("error") if isinstance(error, dict) else None
        detail = inner if isinstance(inner, dict) else error if isinstance(error, dict) else {}
        text = f"{detail.get('type', 'error')}: {detail.get('message', '')}"
        return Result(custom_id, kind, error=str(text)[:300])
    if kind != "succeeded":
        return Result(custom_id, kind, error=kind)
    message = _Message(raw.get("message"))
    if not message.ok:  # succeeded, so billed: unreadable, not errored (which is not billed)
        return Result(custom_id, "unreadable", error="succeeded without a readable message")
    usage = usage_of(message, sent, max_tokens)
    try:
        reply = to_reply(message, usage, 1, 0.0, max_tokens)
    except BadReply as exc:
        return Result(custom_id, "unreadable", usage=usage, message_id=message.id, error=str(exc))
    return Result(custom_id, kind, reply=reply, usage=usage, message_id=message.id)


class _Message:
    """A result's message JSON read the way the prompt lane reads an SDK Message: the
    attributes :func:`usage_of` and :func:`to_reply` look at, nothing trusted."""

    def __init__(self, raw: Any) -> None:
        data = raw if isinstance(raw, dict) else {}
        content = data.get("content")
        self.ok = isinstance(content, list)
        self.content = [_Block(b) for b in content] if isinstance(content, list) else []
        self.id = str(data.get("id") or "")[:100]
        self.model = str(data.get("model") or "")[:100]
        stop = data.get("stop_reason")
        self.stop_reason = stop if isinstance(stop, str) else None
        usage = data.get("usage")
        self.usage = _Usage(usage) if isinstance(usage, dict) else None


class _Block:
    def __init__(self, raw: Any) -> None:
        data = raw if isinstance(raw, dict) else {}
        self.type = data.get("type")
        self.text = data.get("text")


class _Usage:
    def __init__(self, raw: dict[str, Any]) -> None:
        self.input_tokens = raw.get("input_tokens")
        self.output_tokens = raw.get("output_tokens")
        self.cache_read_input_tokens = raw.get("cache_read_input_tokens")
        self.cache_creation_input_tokens = raw.get("cache_creation_input_tokens")


def _state(raw: Any, *, unsupported: bool) -> BatchState:
    """A batch object checked; not one is Unsupported (at create: this Bridge does not do
    batches) or BadReply (at a poll: a hiccup, polled again)."""
    fail: type[Exception] = Unsupported if unsupported else BadReply
    if _get(raw, "type") != "message_batch":
        raise fail(f"the Bridge answered something that is not a message batch: {str(raw)[:120]}")
    message_batch_id = _get(raw, "id")
    status = _get(raw, "processing_status")
    usable = isinstance(message_batch_id, str) and 0 < len(message_batch_id) <= 200
    if usable and not all(ch.isalnum() or ch in "_-" for ch in str(message_batch_id)):
        usable = False  # it becomes a path segment: "../" must not reach a URL
    if not usable or status not in STATES:
        raise fail(f"a message batch without a usable id or status: {str(raw)[:120]}")
    url = _get(raw, "results_url")
    ended = _time(_get(raw, "ended_at"))
    return BatchState(
        str(message_batch_id), str(status), ended, url if isinstance(url, str) else None
    )


def _get(raw: Any, name: str) -> Any:
    """A field of the SDK's batch object (lenient: the SDK does not validate answers), or of
    the text or dict it returns when the answer was not one."""
    if isinstance(raw, dict):
        return raw.get(name)
    if isinstance(raw, str | bytes):
        return None
    return getattr(raw, name, None)


def _time(raw: Any) -> float | None:
    if isinstance(raw, datetime):
        return raw.timestamp()
    if not isinstance(raw, str):
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _safe(message_batch_id: str) -> str:
    """A Message Batch id as a path segment: the Bridge's own ids are word characters; anything
    else (a hostile answer naming ``../``) is refused."""
    if not message_batch_id or not all(ch.isalnum() or ch in "_-" for ch in message_batch_id):
        raise BadReply(f"unusable batch id {message_batch_id[:60]!r}")
    return message_batch_id


def _raise_unsupported(exc: BaseException) -> None:
    """A create that fails with 404/405/501, or whose 200 body is not JSON: no batches."""
    if status_of(exc) in UNSUPPORTED_STATUS:
        raise Unsupported(f"the Bridge answered {status_of(exc)} to a Message Batch") from exc
    if isinstance(exc, ValueError) or type(exc).__name__ == "APIResponseValidationError":
        raise Unsupported("the Bridge's answer to a Message Batch is not JSON") from exc
