"""Logging: structlog, JSON lines under supervisord, readable console on a terminal.

Two promises live here rather than at every call site: no secret reaches the
log (every string value is passed through the same redaction the hooks use,
and keys that name credentials are dropped), and a failure that repeats does
not flood the log (:class:`ErrorThrottle`).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog

from wsd.redact import redact

#: Event-dict keys whose values are never logged, whatever they hold.
_SECRET_KEYS = frozenset({"token", "api_key", "auth_token", "authorization", "x-api-key"})


class _Scrubber:
    """Processor: drop credential-named keys, redact secret-shaped text and known secrets.

    ``known`` holds literal values (the Bridge token) that must never be
    logged even when they do not look like any secret format, e.g. when the
    Bridge echoes the token back in an error message.
    """

    def __init__(self, known: tuple[str, ...] = ()) -> None:
        self.known = tuple(k for k in known if k and len(k) >= 6)

    def __call__(
        self, _logger: Any, _name: str, event: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        for key in list(event):
            if key.lower() in _SECRET_KEYS:
                event[key] = "[REDACTED]"
                continue
            event[key] = self._clean(event[key], 0)
        return event

    def _clean(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return scrub_text(redact(value), self.known)
        if depth > 4:
            return value
        if isinstance(value, list | tuple):
            return [self._clean(v, depth + 1) for v in value]
        if isinstance(value, dict):
            return {k: self._clean(v, depth + 1) for k, v in value.items()}
        return value


def scrub_text(text: str, known: tuple[str, ...]) -> str:
    """Replace every literal occurrence of a known secret."""
    for secret in known:
        if secret and secret in text:
            text = text.replace(secret, "[REDACTED:token]")
    return text


def configure(
    fmt: str = "auto",
    stream: TextIO | None = None,
    level: int = logging.INFO,
    secrets: tuple[str | None, ...] = (),
) -> None:
    """Configure structlog once for the process (``fmt``: auto, json or console).

    ``secrets`` are literal values (the Bridge token) scrubbed from every line.
    """
    out = stream if stream is not None else sys.stdout
    as_json = fmt == "json" or (fmt == "auto" and not out.isatty())
    renderer: Any
    if as_json:
        renderer = structlog.processors.JSONRenderer(sort_keys=False)
        # Without locals: a frame's locals hold the person's words (a prompt, a reply's
        # lines) and structlog's default dict traceback prints 80 characters of each
        # (issue 45: a full disk logged the worker's locals on every failed pass).
        exc: Any = structlog.processors.ExceptionRenderer(
            structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
        )
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=out.isatty())
        exc = structlog.processors.format_exc_info
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            exc,
            _Scrubber(tuple(s for s in secrets if s)),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(out),
        cache_logger_on_first_use=False,
    )


def get_logger(**bind: Any) -> Any:
    """A bound structlog logger."""
    return structlog.get_logger("wsd").bind(**bind)


class ErrorThrottle:
    """Rate-limits a repeating error and notices recovery.

    ``failed(key, now)`` returns how many occurrences were suppressed since the
    last one logged, or None when this one should be suppressed too; the first
    occurrence and then at most one per ``every`` seconds are logged.
    ``recovered(key)`` returns the failure count once, when a failing key
    succeeds again, so the caller logs a single "recovered" line.
    """

    def __init__(self, every: float = 60.0) -> None:
        self.every = every
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}
        self._failures: dict[str, int] = {}

    def failed(self, key: str, now: float) -> int | None:
        self._failures[key] = self._failures.get(key, 0) + 1
        last = self._last.get(key)
        if last is not None and now - last < self.every:
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return None
        self._last[key] = now
        return self._suppressed.pop(key, 0)

    def recovered(self, key: str) -> int | None:
        failures = self._failures.pop(key, None)
        self._last.pop(key, None)
        self._suppressed.pop(key, None)
        return failures

    def failing(self) -> list[str]:
        return sorted(self._failures)
