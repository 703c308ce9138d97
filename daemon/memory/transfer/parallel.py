"""Parsing a large import on every core, while the store writes what is parsed.

Most of an import's time is the capture hooks' redaction of each text (measured: 100,000
learnings of our JSON lines took 41 s in one process, half of it redaction; the store's
inserts, with their FTS5 indexing, a quarter). The lines (or a database's rows) are cut into
chunks that worker processes parse and redact; the results come back in order, as a stream
the store consumes inside its one transaction, so parsing the next chunks overlaps writing
the last ones. A chunk's :class:`BadInput` (it names the line) reaches the store through
the stream and rolls the whole import back. A small input is parsed here, in this process.

Only :data:`AHEAD` chunks a worker are read ahead of the store, each at most :data:`CHUNK`
items and :data:`CHUNK_BYTES`: memory does not grow with the input (``Executor.map`` read
all of it first: 783 MB resident for a 649 MiB claude-mem database).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TypeVar

from wsd.daemon.store import Incoming, LearningIn

T = TypeVar("T")
#: Items (lines, rows) a chunk holds; fewer than two chunks' worth is parsed in-process.
CHUNK = 2000
#: A chunk's text at most (a line may be 4 MiB: 2,000 of them would be 8 GB). 2,000 of our
#: lines are ~0.6 MB, of claude-mem's longest rows measured ~9 MB.
CHUNK_BYTES = 8 * 1024 * 1024
#: Worker processes at most (each holds the redaction rules' compiled patterns).
MAX_WORKERS = 4
#: Chunks a worker read ahead of the store: one being parsed, one waiting, so no worker
#: waits on the reading while the store writes.
AHEAD = 2


def workers() -> int:
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))


def chunks(items: Iterable[T], weigh: Callable[[T], int], size: int = CHUNK) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` at most, and of :data:`CHUNK_BYTES` by ``weigh``."""
    chunk: list[T] = []
    weight = 0
    for item in items:
        chunk.append(item)
        weight += weigh(item)
        if len(chunk) >= size or weight >= CHUNK_BYTES:
            yield chunk
            chunk = []
            weight = 0
    if chunk:
        yield chunk


def line_bytes(item: tuple[int, str]) -> int:
    """A numbered line's weight in a chunk (its characters)."""
    return len(item[1])


def stream(
    parse: Callable[[list[T]], Incoming], batches: Iterable[list[T]], into: Incoming
) -> Iterator[LearningIn]:
    """The learnings of every batch parsed by ``parse`` (a module-level function: it is
    sent to the workers), in order; the batches' other records are added to ``into`` as
    their batch is reached, so ``into`` is complete once the stream is exhausted."""
    pending = iter(batches)
    first = list(_take(pending, 2))
    n = workers()
    if len(first) < 2 or n < 2:
        for batch in _chain(first, pending):  # as it comes (a tuple read all of it first)
            yield from _merge(parse(batch), into)
        return
    # spawn, not fork: a forked worker inherits every descriptor, the pause file's too (a
    # flock held by the file, not the process), so after a kill -9 of the command its
    # workers still held the daemon off and doctor said the import was running.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        max_workers=n, mp_context=context, initializer=_orphan_guard, initargs=(os.getpid(),)
    ) as pool:
        ahead: deque[Future[Incoming]] = deque()
        try:
            for batch in _chain(first, pending):
                ahead.append(pool.submit(parse, batch))
                if len(ahead) >= AHEAD * n:
                    yield from _merge(ahead.popleft().result(), into)
            while ahead:
                yield from _merge(ahead.popleft().result(), into)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _orphan_guard(parent: int) -> None:
    """A worker's first act: end itself once the command that started it is gone. Found by
    a kill -9 of ``wsd import``: its workers (and their resource tracker) slept on, each
    holding tens of MB, until the machine restarted."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="orphan-guard", daemon=True).start()


def _merge(part: Incoming, into: Incoming) -> Iterator[LearningIn]:
    into.actions.extend(part.actions)
    into.md.update(part.md)
    into.history.extend(part.history)
    yield from part.learnings


def _take(items: Iterator[T], n: int) -> Iterator[T]:
    for _ in range(n):
        try:
            yield next(items)
        except StopIteration:
            return


def _chain(first: list[T], rest: Iterator[T]) -> Iterator[T]:
    yield from first
    yield from rest
