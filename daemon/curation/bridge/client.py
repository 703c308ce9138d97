"""The curator call through the Bridge: one retry layer, bounded and interruptible.

tenacity owns every retry; the anthropic client's own retries are off so the
two cannot multiply. Failures are sorted into three kinds the worker treats
differently:

* transient (connection, timeout, 408/409/429/5xx/529, a garbled or empty
  reply): retried here with backoff, honouring ``retry-after``; when the
  budget runs out the worker backs off for longer (:class:`Outage`);
* the Bridge refusing us (401/403/404...): no point retrying now, nor blaming
  the batch, so also an :class:`Outage`;
* the request itself rejected (400/413/422...): :class:`BatchRejected`, and
  the worker splits the batch, then parks a single turn that still fails.

The HTTP call runs in a helper thread so that SIGTERM can abandon it at once;
the abandoned batch is simply curated again later.

Every request is booked with a :class:`Meter` (the caller's) as it happens: before it is
sent, and again as soon as an answer arrives, before anything reads it, or when none comes.
The usage an answer reports is checked first, and the answer read, as a Message Batch's
result is (:mod:`wsd.daemon.curation.bridge.answer`).

``anthropic`` is imported on first use, not at start-up: the SDK costs ~0.8 s
and ~60 MB to import, which a daemon that starts, finds nothing to do and
idles should not pay (nor a crash-restart loop under supervisord).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

import tenacity

from wsd.daemon.curation.bridge.answer import (
    BadReply,
    Reply,
    Sent,
    Unanswered,
    Usage,
    to_reply,
    usage_of,
)
from wsd.daemon.curation.bridge.failure import problem, status_of
from wsd.daemon.runtime import signals
from wsd.daemon.runtime.config import Config

if TYPE_CHECKING:
    import anthropic

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 409, 429})
OUTAGE_STATUS = frozenset({401, 403, 404, 405})


class Shutdown(Exception):
    """Stop was requested while calling; nothing was committed."""


class Outage(Exception):
    """The Bridge is unusable for now; ``retry_after`` is its hint in seconds, if any."""

    def __init__(self, message: str, attempts: int, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.retry_after = retry_after


class BatchRejected(Exception):
    """The Bridge rejected this particular request (it may work when split)."""

    def __init__(self, message: str, attempts: int) -> None:
        super().__init__(message)
        self.attempts = attempts


class Meter(Protocol):
    """Books what each request costs as it happens (see :mod:`wsd.daemon.curation.bridge.spend`)."""

    def ask(self, request_chars: int) -> int | None:
        """A request of this size is about to be sent; a ticket for it."""

    def answered(self, ticket: int | None, usage: Usage, message_id: str) -> None:
        """Its answer arrived (not read yet)."""

    def unanswered(self, ticket: int | None, how: Unanswered) -> None:
        """It got no usable answer."""


ClientFactory = Callable[[Config], Any]


def default_client(config: Config) -> anthropic.Anthropic:
    """An anthropic client aimed at the Bridge, with its own retries off."""
    import anthropic

    # One token, by the documented precedence (WSD_BRIDGE_TOKEN, ANTHROPIC_API_KEY, then
    # ANTHROPIC_AUTH_TOKEN): the SDK refuses both ("Pass at most one of api_key=, auth_token=").
    return anthropic.Anthropic(
        base_url=config.bridge_url,
        api_key=config.api_key,
        auth_token=None if config.api_key else config.auth_token,
        max_retries=0,
        timeout=config.request_timeout,
    )


def sdk_loaded() -> bool:
    """Whether the anthropic SDK (~60 MB resident) has been imported in this process."""
    return "anthropic" in sys.modules


def _import_sdk() -> None:
    import anthropic  # noqa: F401 - imported for its side effect: the module cache


def is_transient(exc: BaseException) -> bool:
    """Worth retrying the same request soon."""
    import anthropic  # already loaded: an exception came from a client

    # A garbled 200 body surfaces as a plain ValueError (JSONDecodeError) from
    # the SDK's response parsing: a proxy hiccup, worth another try.
    if isinstance(
        exc,
        anthropic.APIConnectionError | BadReply | anthropic.APIResponseValidationError | ValueError,
    ):
        return True
    status = status_of(exc)
    return status is not None and (status in RETRYABLE_STATUS or status >= 500)


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or ``retry-after``)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            return max(0.0, float(raw) * scale)
        except ValueError:
            continue
    return None


class _TimeBudget(tenacity.stop.stop_base):
    """Stop when the next wait would overrun the time budget, not after it has."""

    def __init__(self, monotonic: Callable[[], float], started: float, seconds: float) -> None:
        self.monotonic = monotonic
        self.started = started
        self.seconds = seconds

    def __call__(self, state: tenacity.RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome else None
        upcoming = (retry_after(exc) if exc else None) or 0.0
        return self.monotonic() - self.started + upcoming > self.seconds


class BridgeClient:
    """Makes one curator call with bounded, interruptible retries."""

    def __init__(
        self,
        config: Config,
        stop: threading.Event,
        factory: ClientFactory = default_client,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.stop = stop
        self._factory = factory
        self._monotonic = monotonic
        self._client: Any = None
        self._warming = False

    def prepare(self) -> None:
        """Import the SDK in the background once work appears, so no call waits ~1 s for it."""
        if self._warming or sdk_loaded():
            return
        self._warming = True
        signals.background(_import_sdk, "wsd-sdk-import")

    def reset(self) -> None:
        """Drop the HTTP client and its pooled connections (idle, wake, after errors)."""
        client, self._client = self._client, None
        if client is not None:
            # Closing a dead pool may fail; it is gone anyway.
            with contextlib.suppress(Exception):
                client.close()

    def scrub(self, text: str) -> str:
        """Error text may echo our credentials back (a proxy quoting the request)."""
        for secret in (self.config.api_key, self.config.auth_token):
            if secret:
                text = text.replace(secret, "[REDACTED:token]")
        return text

    def call(
        self,
        system: list[dict[str, Any]],
        messages: list[dict[str, Any]],
        meter: Meter | None = None,
    ) -> Reply:
        """Send one request; raise Shutdown, Outage or BatchRejected if no reply is had.
        Each attempt is booked with ``meter`` as it happens."""
        started = self._monotonic()
        sent = Sent.of(system, messages)
        tries = [0]

        def attempt() -> Reply:
            tries[0] += 1
            message, usage = self._attempt(system, messages, sent, meter)
            latency_ms = (self._monotonic() - started) * 1000
            return to_reply(message, usage, tries[0], latency_ms, self.config.max_tokens)

        return self.retried(attempt)

    def retried(self, fn: Callable[[], T], passthrough: tuple[type[Exception], ...] = ()) -> T:
        """Run ``fn`` under the one retry layer (transient failures retried with backoff,
        bounded in attempts and time, interruptible by stop); raise Shutdown, Outage or
        BatchRejected when it gives no result (an exception in ``passthrough``: as it is)."""
        started = self._monotonic()
        attempts = [0]

        def sleep(seconds: float) -> None:
            if self.stop.wait(seconds):
                raise Shutdown("stop requested during retry backoff")

        def wait(state: tenacity.RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            hinted = retry_after(exc) if exc else None
            if hinted is not None:
                return hinted
            return float(tenacity.wait_exponential_jitter(initial=1, max=20)(state))

        budget = _TimeBudget(self._monotonic, started, self.config.retry_seconds)

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.config.retry_attempts) | budget,
            wait=wait,
            retry=tenacity.retry_if_exception(is_transient),
            sleep=sleep,
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    attempts[0] += 1
                    return fn()
        except Exception as exc:
            if isinstance(exc, (Shutdown, Outage, BatchRejected, *passthrough)):
                raise
            raise self.classify(exc, attempts[0]) from exc
        raise AssertionError("unreachable: tenacity either returns or raises")

    def classify(self, exc: BaseException, attempts: int) -> Outage | BatchRejected:
        """What a failure that retrying did not cure means for the loop (see the module
        docstring); the pooled client is dropped."""
        self.reset()
        hint = retry_after(exc)
        message = self.scrub(problem(exc))
        status = status_of(exc)
        if is_transient(exc) or status is None or status in OUTAGE_STATUS or status >= 500:
            return Outage(message, attempts, hint)
        if 400 <= status < 500:
            return BatchRejected(message, attempts)
        return Outage(message, attempts, hint)

    def in_thread(self, fn: Callable[[Any], T], name: str = "wsd-curator-call") -> T:
        """``fn(client)`` in a helper thread, abandoned (and its pool closed) on stop:
        raises Shutdown then, else returns what ``fn`` returned or raises what it raised."""
        if self.stop.is_set():
            raise Shutdown("stop requested before the call")
        if self._client is None:
            self._client = self._factory(self.config)
        client = self._client
        box: dict[str, Any] = {}
        done = threading.Event()

        def run() -> None:
            try:
                box["value"] = fn(client)
            except BaseException as exc:
                box["error"] = exc
            finally:
                done.set()

        signals.background(run, name)
        while not done.wait(0.05):
            if self.stop.is_set():
                self.reset()  # closing the pool makes the in-flight request fail fast
                raise Shutdown("stop requested during the curator call")
        if "error" in box:
            raise box["error"]
        return cast(T, box["value"])

    def _attempt(
        self,
        system: list[dict[str, Any]],
        messages: list[dict[str, Any]],
        sent: Sent,
        meter: Meter | None,
    ) -> tuple[Any, Usage]:
        """One HTTP request in a helper thread (:meth:`in_thread`), booked with ``meter``
        before it is sent and when it ends."""
        if self.stop.is_set():
            raise Shutdown("stop requested before the call")
        ticket = meter.ask(sent.chars) if meter is not None else None
        try:
            reply = self.in_thread(
                lambda client: client.messages.create(
                    model=self.config.model,
                    max_tokens=self.config.max_tokens,
                    system=system,
                    messages=messages,
                )
            )
            if not isinstance(getattr(reply, "content", None), list):
                raise BadReply("reply has no content list")
        except BaseException as exc:
            if meter is not None:
                meter.unanswered(ticket, _unanswered(exc))
            raise
        usage = usage_of(reply, sent, self.config.max_tokens)
        if meter is not None:
            meter.answered(ticket, usage, str(getattr(reply, "id", "") or "")[:100])
        return reply, usage


def _unanswered(exc: BaseException) -> Unanswered:
    """How a request that raised ``exc`` ended, for the charges ledger."""
    if isinstance(exc, BadReply | ValueError) or type(exc).__name__ == "APIResponseValidationError":
        return "unreadable"  # a 200 came: billed
    if status_of(exc) is not None:
        return "void"  # an error status: the API bills none
    cause = exc.__cause__ or exc.__context__
    if type(exc).__name__ == "APIConnectionError" and type(cause).__name__ == "ConnectError":
        return "void"  # never reached the Bridge
    return "lost"
