"""The semantic socket serves its clients side by side, each within its own deadline: an idle
or trickling client costs only itself, and too many at once are told ``busy`` at once."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.conftest import import_lines
from wsd.daemon.memory import semantic
from wsd.daemon.memory.semantic import client
from wsd.daemon.memory.semantic import server as server_module
from wsd.daemon.memory.semantic.embedding import Embedder
from wsd.daemon.memory.semantic.server import SemanticServer
from wsd.daemon.runtime.log import get_logger
from wsd.daemon.store import Store
from wsd.schema.layout import Layout

NOTES = [
    "My kids love the aquarium downtown, especially the jellyfish tunnel.",
    "The boiler in the basement was serviced by Hansen Heating in March.",
]
QUERY = "where do the children like to go?"


@contextmanager
def _served(layout: Layout) -> Iterator[SemanticServer]:
    """The daemon's socket over two embedded notes, its model already loaded (one query)."""
    reason = semantic.missing()
    if reason is not None:  # the model needs the [semantic] extra
        pytest.skip(reason)
    import_lines(layout, [json.dumps({"type": "fact", "content": n}) for n in NOTES])
    Embedder(Store(layout), get_logger()).run_to_end(lambda _line: None)
    server = SemanticServer(Store(layout))
    server.start()
    try:
        assert client.dense(layout, QUERY, timeout=60) is not None  # the model loads here
        yield server
    finally:
        server.stop()


def _connect(layout: Layout) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.connect(client.address(client.socket_path(layout))[0])
    return sock


def _all_slots_free(served: SemanticServer) -> None:
    """Wait (at most 60 s) until no client thread holds a slot."""
    deadline = time.monotonic() + 60
    while served._slots._value < server_module.MAX_CLIENTS and time.monotonic() < deadline:  # type: ignore[attr-defined]
        time.sleep(0.01)
    assert served._slots._value == server_module.MAX_CLIENTS  # type: ignore[attr-defined]


def _timed_query(layout: Layout) -> tuple[float, client.Dense | None]:
    start = time.monotonic()
    answer = client.dense(layout, QUERY, timeout=10)
    return time.monotonic() - start, answer


def test_an_idle_client_does_not_delay_another_clients_query(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a connection held open that never sends a byte, a second client's query is
    answered (hits, nearest first) in well under the per-client deadline (10 s here, so a
    loaded machine's slow answer is not mistaken for waiting on the idle one)."""
    monkeypatch.setattr(server_module, "READ_TIMEOUT", 10.0)
    with _served(layout):
        idle = _connect(layout)
        try:
            time.sleep(0.1)  # the server has accepted it and is waiting on it
            elapsed, answer = _timed_query(layout)
        finally:
            idle.close()
    assert answer is not None and answer.hits and answer.hits[0][0] == "L"
    print(f"second query with an idle client held: {elapsed * 1000:.1f} ms")
    assert elapsed < server_module.READ_TIMEOUT / 4


def test_a_client_trickling_bytes_is_cut_at_its_deadline(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client sending one byte at a time, each well within the deadline, is closed when its
    deadline (for the whole request line) passes, not held for as long as it keeps trickling."""
    monkeypatch.setattr(server_module, "READ_TIMEOUT", 0.6)
    with _served(layout):
        slow = _connect(layout)
        start = time.monotonic()
        closed_after = None
        try:
            for byte in b'{"query": "where do the children like to go?"}':
                try:
                    slow.sendall(bytes([byte]))
                except OSError:  # the server has closed it
                    closed_after = time.monotonic() - start
                    break
                time.sleep(0.2)
            else:
                pytest.fail("the trickling client was never cut off")
        finally:
            slow.close()
        assert closed_after is not None and closed_after < 0.6 + 1.0
        assert client.dense(layout, QUERY, timeout=10) is not None


def test_clients_past_the_bound_are_told_busy_at_once_and_served_after(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With as many idle clients as the bound holds, one more is answered ``busy`` at once;
    queries are answered again when the idle ones are gone."""
    monkeypatch.setattr(server_module, "MAX_CLIENTS", 3)
    # Idle clients keep their slots for the whole test, however slow a loaded machine is.
    monkeypatch.setattr(server_module, "READ_TIMEOUT", 30.0)
    with _served(layout) as served:
        # The model-loading query's thread gives its slot back just after its client has the
        # answer: an idle client connecting in between was told busy, and the slots never all
        # filled (make test under load, once: two client timeouts, "never all accepted").
        _all_slots_free(served)
        idle = [_connect(layout) for _ in range(3)]
        try:
            # Every slot taken (all three accepted) before the fourth connects: a fixed sleep
            # let the fourth be accepted first on a loaded machine (make test, once).
            deadline = time.monotonic() + 60
            while served._slots._value and time.monotonic() < deadline:  # type: ignore[attr-defined]
                time.sleep(0.01)
            assert not served._slots._value, "the idle clients were never all accepted"  # type: ignore[attr-defined]
            extra = _connect(layout)
            # "At once": the answer comes though this client never sends a query (no timed
            # assert: under parallel test workers a fixed 0.5 s / 5 s bound failed, once).
            assert client.read_line(extra, 4096, time.monotonic() + 60) == b'{"error": "busy"}\n'
            extra.close()
        finally:
            for sock in idle:
                sock.close()
        _all_slots_free(served)  # the idle clients' threads see them go (a fixed 0.1 s, before)
        elapsed, answer = _timed_query(layout)
    assert answer is not None and answer.hits and elapsed < server_module.READ_TIMEOUT / 4
