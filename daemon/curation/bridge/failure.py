"""A failed Bridge call in words: what status, doctor, a rebuild's last line and the log say
of it. Both lanes (direct calls and Message Batches) read their failures here."""

from __future__ import annotations


def status_of(exc: BaseException) -> int | None:
    """The HTTP status an SDK error carries, if any."""
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def problem(exc: BaseException) -> str:
    """A failed call in words, one line of at most 300 characters, for status, doctor, a
    rebuild's last line and the log: an HTTP error as ``HTTP 429 from the Bridge
    (rate_limit_error: Number of requests exceeded.)``, anything else as its type and message.
    The SDK's own text for an HTTP error is ``Error code: 429 - {'type': 'error', ...}``, a
    Python repr of the body (the soak's rebuild printed it to the person)."""
    status = status_of(exc)
    if status is None:
        text = f"{type(exc).__name__}: {exc}"
    else:
        said = ": ".join(_error_fields(getattr(exc, "body", None)))
        text = f"HTTP {status} from the Bridge" + (f" ({said})" if said else "")
    return " ".join(text.split())[:300]


def _error_fields(body: object) -> list[str]:
    """The ``error.type`` and ``error.message`` of an error body, where they are strings (the
    body is whatever the Bridge sent)."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return []
    return [v[:200] for v in (error.get("type"), error.get("message")) if isinstance(v, str) and v]
