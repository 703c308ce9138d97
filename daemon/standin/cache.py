"""The stand-in's prompt cache, modelled on the Messages API's (issue 36).

Each ``cache_control`` breakpoint names a prefix of the request (tools, then system, then the
messages' content blocks, in order). A prefix shorter than the model's minimum
(:func:`wsd.daemon.curation.request.caching.min_cacheable`, configurable here per model) is never
cached. The longest breakpoint prefix seen within the TTL is read
(``cache_read_input_tokens``); every longer eligible breakpoint prefix is written
(``cache_creation_input_tokens``, the tokens past what was read); the rest of the request is
``input_tokens``. A hit refreshes its entry. Message Batch requests share the cache, in the
order the stand-in answers them. Tokens are the stand-in's: four characters of JSON each.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from wsd.daemon.curation.request.caching import min_cacheable

TTL_SECONDS = 300.0
JSON = dict[str, Any]


class PromptCache:
    """Thread-safe; one per stand-in."""

    def __init__(
        self,
        floors: Mapping[str, int] | None = None,
        ttl: float = TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.floors = dict(floors or {})
        self.ttl = ttl
        self.clock = clock
        self._entries: dict[str, float] = {}
        self._lock = threading.Lock()

    def floor(self, model: str) -> int:
        return self.floors.get(model, min_cacheable(model))

    def usage(self, request: JSON, total_tokens: int) -> tuple[int, int, int]:
        """(input, cache creation, cache read) tokens of ``request``, whose whole body counts
        ``total_tokens``; the cache updated as the API's would be."""
        floor = self.floor(str(request.get("model", "")))
        eligible = [(key, n) for key, n in _breakpoints(request) if n >= floor]
        if not eligible:
            return total_tokens, 0, 0
        now = self.clock()
        with self._lock:
            read = 0
            for key, n in reversed(eligible):
                if self._entries.get(key, -1.0) > now:
                    read = n
                    self._entries[key] = now + self.ttl
                    break
            written = 0
            for key, n in eligible:
                if n > read:
                    self._entries[key] = now + self.ttl
                    written = max(written, n - read)
        total = max(total_tokens, read + written)
        return total - read - written, written, read


def _blocks(request: JSON) -> Iterator[JSON]:
    """The request's cacheable parts in prefix order: tools, system blocks, then each
    message's content blocks (a plain string content is one block)."""
    for tool in request.get("tools") or []:
        if isinstance(tool, dict):
            yield tool
    system = request.get("system")
    if isinstance(system, str):
        yield {"type": "text", "text": system}
    elif isinstance(system, list):
        yield from (b for b in system if isinstance(b, dict))
    for message in request.get("messages") or []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, str):
            yield {"type": "text", "text": content, "role": message.get("role")}
        elif isinstance(content, list):
            for block in content:
                if isinstance(block, dict):
                    yield block | {"role": message.get("role")}


def _breakpoints(request: JSON) -> list[tuple[str, int]]:
    """(key, tokens) of the prefix ending at each ``cache_control`` breakpoint."""
    out = []
    digest = hashlib.sha256(str(request.get("model", "")).encode())
    chars = 0
    for block in _blocks(request):
        bare = {k: v for k, v in block.items() if k != "cache_control"}
        text = json.dumps(bare, sort_keys=True, ensure_ascii=False)
        digest.update(text.encode())
        chars += len(text)
        if "cache_control" in block:
            out.append((digest.copy().hexdigest(), max(1, chars // 4)))
    return out
