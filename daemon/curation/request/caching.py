"""Prompt caching as the Messages API does it, and when a request should ask for it.

A ``cache_control`` breakpoint caches the request's prefix up to it, but only a prefix of at
least the model's minimum: 4,096 tokens for Claude Haiku 4.5 (Anthropic's prompt-caching
documentation; shorter prefixes are processed without caching, and nothing says so but
``cache_creation_input_tokens: 0``). A cache write is billed at 1.25x the input price, a read
at 0.1x; on a Message Batch the batch discount applies on top (spend.py prices them).

The curator's stable prefix (instructions and the four files) is about 3,500 tokens, under
Haiku 4.5's floor: a breakpoint there buys nothing, so :func:`worth_marking` keeps the markers
off until a prefix can reach the floor (issue 36). Where several requests share one prefix (a
backlog's Message Batch, every request built from one snapshot), the curator's request grows
that prefix over the floor with files.md's disk listing (context the curator is otherwise not
sent) when :func:`pays` says the reads make up for the write.
"""

from __future__ import annotations

#: The minimum cacheable prefix, in tokens, per model (a model not listed: the default).
MIN_CACHEABLE_TOKENS = {
    "claude-haiku-4-5": 4096,
    "claude-opus-4-5": 4096,
    "claude-sonnet-4-5": 1024,
    "claude-3-5-haiku": 2048,
}
DEFAULT_MIN_CACHEABLE_TOKENS = 1024
#: What a token is taken to be when the daemon estimates a prefix (characters per token; the
#: stand-in counts four, so does the curator's budget).
CHARS_PER_TOKEN = 4


def min_cacheable(model: str) -> int:
    """The minimum cacheable prefix of ``model`` (a dated name matches its family)."""
    for name, tokens in MIN_CACHEABLE_TOKENS.items():
        if model == name or model.startswith(name + "-"):
            return tokens
    return DEFAULT_MIN_CACHEABLE_TOKENS


def worth_marking(prefix_chars: int, model: str) -> bool:
    """Whether a breakpoint after ``prefix_chars`` characters can ever be a cache hit."""
    return prefix_chars / CHARS_PER_TOKEN >= min_cacheable(model)


#: The price of a cache write and of a read, against plain input.
WRITE, READ = 1.25, 0.1


def pays(requests: int, plain_chars: int, cached_chars: int, written: bool = False) -> bool:
    """Whether ``requests`` requests sharing a prefix of ``cached_chars`` characters, written
    once and read by the others, cost less than each sending its plain ``plain_chars``
    (a discount such as the Message Batch's applies to both alike). ``written``: the prefix
    is in the cache already (the request before wrote it), so every one of them reads it."""
    if written:
        return cached_chars * READ < plain_chars
    if requests < 2:
        return False
    cached = cached_chars * (WRITE + (requests - 1) * READ)
    return cached < requests * plain_chars
