"""Reading a Messages API answer, the same in both lanes: the direct call
(:mod:`wsd.daemon.curation.bridge.client`) and a Message Batch's result
(:mod:`wsd.daemon.curation.economy.wire`).

:func:`usage_of` checks the usage an answer reports before anything is booked, against what
the daemon knows it sent (:class:`Sent`) and the text that came back: figures that are not
non-negative integers within what the request could cost, or that claim less than the
request and the reply must have cost, are replaced by an estimate. Found by attacks: an
``output_tokens: -2000000`` was booked as -$10, and six $1.50 calls then passed under a $1
cap; a Bridge answering usage 0/0 (or 1/1) booked nothing and a $0.01 cap never paused
(issue 46). :func:`to_reply` takes the text out: :class:`BadReply` when there is
none, or more than ``max_tokens`` tokens can carry. (What the text asks for, the curator's
format, is :mod:`wsd.daemon.curation.judging.reply`.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

#: Characters per token an estimate assumes (what the Bridge's answers average here).
CHARS_PER_TOKEN = 4
#: Input tokens a request may be billed beyond one per byte of its body (the API's framing).
INPUT_SLACK_TOKENS = 4096
#: Input tokens an estimate adds to the characters it counts (system and messages): the body
#: also carries the model and ``max_tokens`` (the stand-in bills its body's bytes: about 8
#: tokens more here) and the API frames each message; over the truth, never under it.
ESTIMATE_FRAMING_TOKENS = 32
#: Characters of a request per token at most: the floor of what a request is billed (the
#: Bridge bills about one token per four characters; five keeps the floor below it, so an
#: honest answer is never taken for a lie).
FLOOR_CHARS_PER_TOKEN = 5
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


@dataclass(frozen=True)
class Sent:
    """What the daemon knows it sent: the request's characters (its system and messages as
    JSON) and how many of them its cache breakpoint covers, the only part the Bridge may bill
    as a cache read or write (0: no breakpoint)."""

    chars: int
    cached: int = 0

    @classmethod
    def of(cls, system: list[dict[str, Any]], messages: list[dict[str, Any]]) -> Sent:
        """The size of a request as :meth:`Bridge.call` sends it."""
        chars = len(json.dumps({"system": system, "messages": messages}, ensure_ascii=False))
        prefix, cached = 0, 0
        blocks = [*system, *(b for m in messages for b in _content(m))]
        for block in blocks:
            prefix += len(json.dumps(block, ensure_ascii=False))
            if isinstance(block, dict) and "cache_control" in block:
                cached = prefix  # everything up to the last breakpoint
        return cls(chars, min(cached, chars))

    @property
    def fresh_floor(self) -> int:
        """Input tokens no cache can serve: the least a request is billed at the full price."""
        return (self.chars - self.cached) // FLOOR_CHARS_PER_TOKEN

    @property
    def floor(self) -> int:
        """Input tokens a request is billed at least, fresh and cached together."""
        return self.chars // FLOOR_CHARS_PER_TOKEN


def _content(message: object) -> list[Any]:
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


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


def usage_of(message: Any, sent: Sent, max_tokens: int) -> Usage:
    """The answer's usage if it is one the request could have cost, else an estimate from
    the sizes (``valid`` False). Every figure a non-negative integer; input at most about one
    token per byte of the request, at least its :attr:`Sent.floor` and, outside the cached
    prefix, its :attr:`Sent.fresh_floor`; cache tokens only within the prefix; output at most
    ``max_tokens`` and at least what the reply's text takes (one token per
    :data:`MAX_CHARS_PER_TOKEN` characters). So the spend booked for an answer is never below
    the daemon's own count of what it sent, whatever the usage says."""
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
    inputs, cache = ints[0] + ints[2] + ints[3], ints[2] + ints[3]
    text = "".join(
        t
        for b in (getattr(message, "content", None) or [])
        if isinstance(t := getattr(b, "text", None), str)
    )
    plausible = (
        min(ints) >= 0
        and sent.floor <= inputs <= sent.chars * 4 + INPUT_SLACK_TOKENS  # UTF-8: 4 bytes a char
        and ints[0] >= sent.fresh_floor
        and cache <= (sent.cached * 4 + INPUT_SLACK_TOKENS if sent.cached else 0)
        and len(text) // MAX_CHARS_PER_TOKEN <= ints[1] <= max_tokens
    )
    if plausible:
        return Usage(ints[0], ints[1], ints[2], ints[3])
    # The estimate takes every input token as fresh, one per four characters: over the floor.
    estimate = min(max_tokens, max(1, len(text) // CHARS_PER_TOKEN))
    raw = ", ".join(f"{n}={v!r}"[:60] for n, v in zip(names, figures, strict=True))
    inputs = sent.chars // CHARS_PER_TOKEN + ESTIMATE_FRAMING_TOKENS
    return Usage(inputs, estimate, valid=False, raw=raw)


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
