"""Reading a Messages API answer, the same in both lanes: the direct call
(:mod:`wsd.daemon.curation.bridge.client`) and a Message Batch's result
(:mod:`wsd.daemon.curation.economy.wire`).

:func:`usage_of` checks the usage an answer reports before anything is booked: figures that
are not non-negative integers within what the request could cost are replaced by an estimate
(found by an attack: ``output_tokens: -2000000`` was booked as -$10, and six $1.50 calls then
passed under a $1 cap). :func:`to_reply` takes the text out: :class:`BadReply` when there is
none, or more than ``max_tokens`` tokens can carry. (What the text asks for, the curator's
format, is :mod:`wsd.daemon.curation.judging.reply`.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

#: Characters per token an estimate assumes (what the Bridge's answers average here).
CHARS_PER_TOKEN = 4
#: Input tokens a request may be billed beyond one per byte of its body (the API's framing).
INPUT_SLACK_TOKENS = 4096
#: Characters one output token stands for at most, with room to spare (replies here average
#: ~4). A reply longer than ``max_tokens`` times this cannot come from a model held to
#: ``max_tokens``: the soak's flooding Bridge (260 KB replies, 40 held at once from one
#: Message Batch's results) took the daemon past its 120 MB.
MAX_CHARS_PER_TOKEN = 16


class BadReply(Exception):
    """A 200 whose body is not a usable message (garbled JSON, no text)."""


@dataclass(frozen=True)
class Usage:
    """What an answer says it used, checked: ``valid`` False means the figures here are an
    estimate, and ``raw`` holds what the answer said (for the log)."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    valid: bool = True
    raw: str = ""


#: How a request that got no usable answer ends: ``void`` (the Bridge refused it with an
#: error status, or it never connected: nothing billed), ``lost`` (it may have been answered
#: and billed: a timeout, a reset, a call abandoned at shutdown), ``unreadable`` (a 200 whose
#: body could not be read: billed, its usage unknown).
Unanswered = Literal["void", "lost", "unreadable"]


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
    #: False when the answer's usage was implausible and the tokens here are an estimate.
    usage_valid: bool = True


def usage_of(message: Any, request_chars: int, max_tokens: int) -> Usage:
    """The answer's usage if every figure is a non-negative integer within what the request
    could cost (input: about one token per byte of the request at most; output: at most
    ``max_tokens``); else an estimate from the sizes (``valid`` False)."""
    usage = getattr(message, "usage", None)
    names = (
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    )
    figures = [getattr(usage, name, None) if usage is not None else None for name in names]
    figures = [0 if value is None and i >= 2 else value for i, value in enumerate(figures)]
    ints = [v if type(v) is int else -1 for v in figures]  # bool, float, str: not a count
    inputs = ints[0] + ints[2] + ints[3]
    plausible = (
        min(ints) >= 0
        and inputs <= request_chars * 4 + INPUT_SLACK_TOKENS  # UTF-8: at most 4 bytes a char
        and ints[1] <= max_tokens
    )
    if plausible:
        return Usage(ints[0], ints[1], ints[2], ints[3])
    text = "".join(
        t
        for b in (getattr(message, "content", None) or [])
        if isinstance(t := getattr(b, "text", None), str)
    )
    estimate = min(max_tokens, max(1, len(text) // CHARS_PER_TOKEN))
    raw = ", ".join(f"{n}={v!r}"[:60] for n, v in zip(names, figures, strict=True))
    return Usage(max(1, request_chars // CHARS_PER_TOKEN), estimate, valid=False, raw=raw)


def to_reply(message: Any, usage: Usage, tries: int, latency_ms: float, max_tokens: int) -> Reply:
    """The curator's reply from an answer's message; BadReply when it holds no text, or more
    text than ``max_tokens`` tokens can carry (:data:`MAX_CHARS_PER_TOKEN`)."""
    texts = [b.text for b in message.content if getattr(b, "type", None) == "text"]
    text = "\n".join(t for t in texts if isinstance(t, str))
    if not text.strip():
        raise BadReply("reply has no text")
    if len(text) > max_tokens * MAX_CHARS_PER_TOKEN:
        raise BadReply(f"reply of {len(text)} characters: more than {max_tokens} tokens can hold")
    return Reply(
        text=text,
        stop_reason=getattr(message, "stop_reason", None),
        model=str(getattr(message, "model", "")),
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        attempts=tries,
        latency_ms=latency_ms,
        usage_valid=usage.valid,
    )
