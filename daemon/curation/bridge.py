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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import tenacity

from wsd.daemon.runtime import signals
from wsd.daemon.runtime.config import Config

if TYPE_CHECKING:
    import anthropic

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


class BadReply(Exception):
    """A 200 whose body is not a usable message (garbled JSON, no text)."""


@dataclass(frozen=True)
class Reply:
    text: str
    stop_reason: str | None
    model: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    attempts: int
    latency_ms: float


ClientFactory = Callable[[Config], Any]


def default_client(config: Config) -> anthropic.Anthropic:
    """An anthropic client aimed at the Bridge, with its own retries off."""
    import anthropic

    return anthropic.Anthropic(
        base_url=config.bridge_url,
        api_key=config.api_key,
        auth_token=config.auth_token,
        max_retries=0,
        timeout=config.request_timeout,
    )


def sdk_loaded() -> bool:
    """Whether the anthropic SDK (~60 MB resident) has been imported in this process."""
    return "anthropic" in sys.modules


def _import_sdk() -> None:
    import anthropic  # noqa: F401 - imported for its side effect: the module cache


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


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
    status = _status(exc)
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

    def _scrub(self, text: str) -> str:
        """Error text may echo our credentials back (a proxy quoting the request)."""
        for secret in (self.config.api_key, self.config.auth_token):
            if secret:
                text = text.replace(secret, "[REDACTED:token]")
        return text

    def call(self, system: list[dict[str, Any]], messages: list[dict[str, Any]]) -> Reply:
        """Send one request; raise Shutdown, Outage or BatchRejected if no reply is had."""
        started = self._monotonic()
        attempts = 0

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
                    attempts += 1
                    reply = self._attempt(system, messages)
                    latency = (self._monotonic() - started) * 1000
                    return _reply(reply, attempts, latency)
        except (Shutdown, Outage, BatchRejected):
            raise
        except Exception as exc:
            self.reset()
            hint = retry_after(exc)
            message = self._scrub(f"{type(exc).__name__}: {str(exc)[:300]}")
            if is_transient(exc):
                raise Outage(message, attempts, hint) from exc
            status = _status(exc)
            if status is not None and status in OUTAGE_STATUS:
                raise Outage(message, attempts, hint) from exc
            if status is not None and 400 <= status < 500:
                raise BatchRejected(message, attempts) from exc
            raise Outage(message, attempts, hint) from exc
        raise AssertionError("unreachable: tenacity either returns or raises")

    def _attempt(self, system: list[dict[str, Any]], messages: list[dict[str, Any]]) -> Any:
        """One HTTP request in a helper thread, abandoned (and its pool closed) on stop."""
        if self.stop.is_set():
            raise Shutdown("stop requested before the call")
        if self._client is None:
            self._client = self._factory(self.config)
        client = self._client
        box: dict[str, Any] = {}
        done = threading.Event()

        def run() -> None:
            try:
                box["reply"] = client.messages.create(
                    model=self.config.model,
                    max_tokens=self.config.max_tokens,
                    system=system,
                    messages=messages,
                )
            except BaseException as exc:
                box["error"] = exc
            finally:
                done.set()

        signals.background(run, "wsd-curator-call")
        while not done.wait(0.05):
            if self.stop.is_set():
                self.reset()  # closing the pool makes the in-flight request fail fast
                raise Shutdown("stop requested during the curator call")
        if "error" in box:
            raise box["error"]
        reply = box["reply"]
        if not isinstance(getattr(reply, "content", None), list):
            raise BadReply("reply has no content list")
        return reply


def _reply(message: Any, attempts: int, latency_ms: float) -> Reply:
    texts = [b.text for b in message.content if getattr(b, "type", None) == "text"]
    text = "\n".join(t for t in texts if isinstance(t, str))
    if not text.strip():
        raise BadReply("reply has no text")
    usage = getattr(message, "usage", None)

    def tokens(name: str) -> int:
        value = getattr(usage, name, 0) if usage is not None else 0
        return int(value or 0)

    return Reply(
        text=text,
        stop_reason=getattr(message, "stop_reason", None),
        model=str(getattr(message, "model", "")),
        input_tokens=tokens("input_tokens"),
        output_tokens=tokens("output_tokens"),
        cache_read_tokens=tokens("cache_read_input_tokens"),
        cache_write_tokens=tokens("cache_creation_input_tokens"),
        attempts=attempts,
        latency_ms=latency_ms,
    )
